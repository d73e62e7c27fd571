//! Tournaments before the live engine takes over: creating (by a club, or by the platform for
//! any club), the card, editing while registration is open, cancelling, the club's list, the
//! public agenda and search.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use floor_entities::enums::TournamentType;
use floor_entities::{blind_templates, locations, organizers, registrations, tournaments};
use sea_orm::{ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder};
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::cached;
use super::extract::{Admin, Json, MaybeAuthUser, OrganizerAccess, Path, TournamentAccess, club, double_option, perm};
use super::registrations::registration_view;
use super::validate::{Problems, optional_multiline_text, optional_text, url};
use super::views::{ItemList, Localized};
use crate::domain::tournaments::TournamentText;
use crate::domain::tournaments::lifecycle::{self, Presentation, Texts, TournamentChanges, TournamentDraft};
use crate::domain::tournaments::{screen_path, share_path};
use crate::http::read_cache::{Answer, Renewal, Shows};
use crate::http::state::AppState;
use crate::infra::error::{AppError, AppResult, ErrorBody};

mod agenda;
mod cards;

pub use self::cards::{TournamentDetailView, TournamentView, tournament_view, tournament_views};

/// Seats a tournament may offer.
pub const CAPACITY_RANGE: std::ops::RangeInclusive<i32> = 2..=10_000;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_club_tournaments, create_club_tournament))
        .routes(routes!(create_tournament_for_club))
        .routes(routes!(get_tournament, update_tournament))
        .routes(routes!(cancel_tournament))
        .merge(agenda::router())
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewTournament {
    /// A venue of this club.
    pub location_id: Uuid,
    /// A template of this club or a platform template.
    pub blind_template_id: Uuid,
    #[serde(rename = "type")]
    pub tournament_type: TournamentType,
    /// In the future. The season is the calendar quarter holding it.
    pub starts_at: DateTime<Utc>,
    /// 2 to 10000 seats.
    #[schema(minimum = 2, maximum = 10000)]
    pub capacity: i32,
    /// Free text, up to 2000 characters.
    #[schema(
        max_length = 2000,
        pattern = "^[\\t\\n\\v\\f\\r ]*([^\\x00-\\x20\\x7F][^\\x00-\\x08\\x0B\\x0C\\x0E-\\x1F\\x7F]*)?[\\t\\n\\v\\f\\r ]*$"
    )]
    pub prizes: Option<String>,
    #[schema(max_length = 2048, pattern = "^(https?://[!-.0-Z^-~][!-Z^-~]*|/files/[0-9a-f-]{1,64}\\.(png|jpg|webp))$")]
    pub chat_link: Option<String>,
    #[schema(max_length = 2048, pattern = "^(https?://[!-.0-Z^-~][!-Z^-~]*|/files/[0-9a-f-]{1,64}\\.(png|jpg|webp))$")]
    pub banner_url: Option<String>,
    #[schema(schema_with = crate::http::views::some_locale::<TournamentText>)]
    pub translations: Localized<TournamentText>,
}

/// Fields to change while registration is open; an absent field stays, `null` clears an
/// optional one. Given locales of `translations` replace those texts; others stay.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TournamentUpdate {
    pub location_id: Option<Uuid>,
    pub blind_template_id: Option<Uuid>,
    #[serde(rename = "type")]
    pub tournament_type: Option<TournamentType>,
    pub starts_at: Option<DateTime<Utc>>,
    /// Not below the seats already taken; a larger capacity promotes from the waitlist.
    #[schema(minimum = 2, maximum = 10000)]
    pub capacity: Option<i32>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>, max_length = 2000, pattern = "^[\\t\\n\\v\\f\\r ]*([^\\x00-\\x20\\x7F][^\\x00-\\x08\\x0B\\x0C\\x0E-\\x1F\\x7F]*)?[\\t\\n\\v\\f\\r ]*$")]
    pub prizes: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>, max_length = 2048, pattern = "^(https?://[!-.0-Z^-~][!-Z^-~]*|/files/[0-9a-f-]{1,64}\\.(png|jpg|webp))$")]
    pub chat_link: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>, max_length = 2048, pattern = "^(https?://[!-.0-Z^-~][!-Z^-~]*|/files/[0-9a-f-]{1,64}\\.(png|jpg|webp))$")]
    pub banner_url: Option<Option<String>>,
    pub translations: Option<Localized<TournamentText>>,
}

fn check_texts(problems: &mut Problems, texts: &Localized<TournamentText>, required: bool) -> Texts {
    let by_locale = texts.clone().present();
    if required && by_locale.is_empty() {
        problems.add("translations", "needs a title in ru or en");
    }
    by_locale
        .into_iter()
        .map(|(locale, text)| {
            let title = problems.text(&format!("translations.{locale}.title"), &text.title, 1, 200);
            let subtitle = optional_text(problems, &format!("translations.{locale}.subtitle"), text.subtitle, 0, 300)
                .filter(|s| !s.is_empty());
            (locale, TournamentText { title, subtitle })
        })
        .collect()
}

/// The presentation fields of an edit (prizes, banner, texts), checked: allowed to the club
/// while registration is open and to the platform's content admins at any time.
pub(super) fn check_presentation(
    problems: &mut Problems,
    prizes: Option<Option<String>>,
    banner_url: Option<Option<String>>,
    translations: Option<Localized<TournamentText>>,
) -> Presentation {
    Presentation {
        prizes: prizes.map(|p| optional_multiline_text(problems, "prizes", p, 0, 2000).filter(|p| !p.is_empty())),
        banner_url: banner_url.map(|link| link.map(|link| url(problems, "bannerUrl", &link))),
        texts: translations.map(|texts| check_texts(problems, &texts, false)).unwrap_or_default(),
    }
}

/// Checks that the venue and the template may be used by `organizer_id`.
async fn check_venue_and_template(
    conn: &impl ConnectionTrait,
    problems: &mut Problems,
    organizer_id: Uuid,
    location_id: Option<Uuid>,
    template_id: Option<Uuid>,
) -> AppResult<()> {
    if let Some(id) = location_id {
        let venue = locations::Entity::find_by_id(id).one(conn).await?;
        if venue.is_none_or(|venue| venue.organizer_id != organizer_id) {
            problems.add("locationId", "is not a venue of this club");
        }
    }
    if let Some(id) = template_id {
        let template = blind_templates::Entity::find_by_id(id).one(conn).await?;
        if template.is_none_or(|t| t.organizer_id.is_some_and(|owner| owner != organizer_id)) {
            problems.add("blindTemplateId", "is neither this club's nor a platform template");
        }
    }
    Ok(())
}

/// Checks a new tournament of `organizer_id` and creates it, open for registration at once.
async fn create_tournament(
    app: &AppState,
    organizer_id: Uuid,
    by: Uuid,
    body: NewTournament,
) -> AppResult<(StatusCode, Json<TournamentView>)> {
    let mut problems = Problems::default();
    check_venue_and_template(
        &app.db,
        &mut problems,
        organizer_id,
        Some(body.location_id),
        Some(body.blind_template_id),
    )
    .await?;
    if body.starts_at <= Utc::now() {
        problems.add("startsAt", "must be in the future");
    }
    if !CAPACITY_RANGE.contains(&body.capacity) {
        problems.add("capacity", "must be 2 to 10000 seats");
    }
    let draft = TournamentDraft {
        location_id: body.location_id,
        blind_template_id: body.blind_template_id,
        tournament_type: body.tournament_type,
        starts_at: body.starts_at,
        capacity: body.capacity,
        prizes: optional_multiline_text(&mut problems, "prizes", body.prizes, 0, 2000).filter(|p| !p.is_empty()),
        chat_link: body.chat_link.map(|link| url(&mut problems, "chatLink", &link)),
        banner_url: body.banner_url.map(|link| url(&mut problems, "bannerUrl", &link)),
        texts: check_texts(&mut problems, &body.translations, true),
    };
    problems.into_result()?;
    let tournament = lifecycle::create(&app.db, organizer_id, by, draft).await?;
    Ok((StatusCode::CREATED, Json(tournament_view(&app.db, tournament).await?)))
}

/// The club's tournaments, latest start first.
#[utoipa::path(get, path = "/organizers/{id}/tournaments", tag = "tournaments", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "organizer")),
    responses(
        (status = 200, body = ItemList<TournamentView>),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: club owner or td only", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
    ))]
async fn list_club_tournaments(
    State(app): State<AppState>,
    access: OrganizerAccess<club::Staff>,
) -> AppResult<Json<ItemList<TournamentView>>> {
    let models = tournaments::Entity::find()
        .filter(tournaments::Column::OrganizerId.eq(access.organizer.id))
        .order_by_desc(tournaments::Column::StartsAt)
        .all(&app.reads)
        .await?;
    Ok(Json(ItemList::new(tournament_views(&app.reads, models).await?)))
}

/// Creates a tournament of the club, open for registration at once.
#[utoipa::path(post, path = "/organizers/{id}/tournaments", tag = "tournaments", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "organizer")), request_body = NewTournament,
    responses(
        (status = 201, body = TournamentView),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: club owner or td only", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
    ))]
async fn create_club_tournament(
    State(app): State<AppState>,
    access: OrganizerAccess<club::Staff>,
    Json(body): Json<NewTournament>,
) -> AppResult<(StatusCode, Json<TournamentView>)> {
    create_tournament(&app, access.organizer.id, access.user.id(), body).await
}

/// Creates a tournament for any club, as the platform.
#[utoipa::path(post, path = "/admin/organizers/{id}/tournaments", tag = "tournaments", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "organizer")), request_body = NewTournament,
    responses(
        (status = 201, body = TournamentView),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs tournaments.manage", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
    ))]
async fn create_tournament_for_club(
    State(app): State<AppState>,
    admin: Admin<perm::TournamentsManage>,
    Path(id): Path<Uuid>,
    Json(body): Json<NewTournament>,
) -> AppResult<(StatusCode, Json<TournamentView>)> {
    let organizer =
        organizers::Entity::find_by_id(id).one(&app.db).await?.ok_or_else(|| AppError::not_found("organizer"))?;
    create_tournament(&app, organizer.id, admin.user.id(), body).await
}

/// A tournament card, for everyone.
#[utoipa::path(get, path = "/tournaments/{id}", tag = "tournaments", security((), ("bearer" = [])),
    params(("id" = Uuid, Path)),
    responses(
        (status = 200, body = TournamentDetailView),
        (status = 400, description = "VALIDATION_ERROR: not a UUID", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED: a token was sent but is invalid", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
    ))]
async fn get_tournament(
    State(app): State<AppState>,
    MaybeAuthUser(caller): MaybeAuthUser,
    Path(id): Path<Uuid>,
    headers: HeaderMap,
) -> AppResult<Response> {
    // The card everyone gets is kept; a signed-in caller's own registration is read each time.
    let key = format!("GET /tournaments/{id}");
    let card = card_for_everyone(app.kept_reads.clone(), app.config.public_url.clone(), id);
    let Some(user) = caller else { return cached::renewed_answer(&app, &headers, key, card).await };
    let card = app.read_cache.get_or_renew(key, card).await?;
    let mine = match registrations::Entity::find()
        .filter(registrations::Column::TournamentId.eq(id))
        .filter(registrations::Column::UserId.eq(user.id()))
        .one(&app.reads)
        .await?
    {
        Some(row) => serde_json::to_vec(&registration_view(&app.reads, row).await?)
            .map_err(|err| AppError::Internal(err.into()))?,
        None => b"null".to_vec(),
    };
    let body = with_my_registration(&card.body, &mine)
        .ok_or_else(|| AppError::Internal(anyhow::anyhow!("a kept tournament card does not end in myRegistration")))?;
    Ok(([(CONTENT_TYPE, HeaderValue::from_static("application/json"))], body).into_response())
}

/// The card of tournament `id` as everyone gets it (`myRegistration` null), built again by
/// its registration desk's commits.
fn card_for_everyone(kept_reads: DatabaseConnection, public_url: String, id: Uuid) -> Renewal {
    Renewal::new(Shows::Tournament(id), move || {
        let (kept_reads, public_url) = (kept_reads.clone(), public_url.clone());
        Box::pin(async move {
            let model = tournaments::Entity::find_by_id(id)
                .one(&kept_reads)
                .await?
                .ok_or_else(|| AppError::not_found("tournament"))?;
            Answer::json(&TournamentDetailView {
                screen_url: format!("{public_url}{}", screen_path(model.id)),
                share_url: format!("{public_url}{}", share_path(model.id)),
                tournament: tournament_view(&kept_reads, model).await?,
                my_registration: None,
            })
        })
    })
}

/// The JSON of a card kept for everyone (`{…,"myRegistration":null}`) with `mine` (JSON)
/// in place of its `null`: byte for byte what serialising the detail with it gives, since
/// `myRegistration` is the detail's last field.
fn with_my_registration(anonymous: &[u8], mine: &[u8]) -> Option<Bytes> {
    const NOBODY: &[u8] = b"\"myRegistration\":null}";
    anonymous.ends_with(NOBODY).then(|| {
        let head = &anonymous[..anonymous.len() - b"null}".len()];
        let mut body = Vec::with_capacity(head.len() + mine.len() + 1);
        body.extend_from_slice(head);
        body.extend_from_slice(mine);
        body.push(b'}');
        Bytes::from(body)
    })
}

/// Edits a tournament while registration is open.
#[utoipa::path(patch, path = "/tournaments/{id}", tag = "tournaments", security(("bearer" = [])),
    params(("id" = Uuid, Path)), request_body = TournamentUpdate,
    responses(
        (status = 200, body = TournamentView),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: club owner, td or tournaments.manage", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
        (status = 409, description = "INVALID_STATUS: registration is no longer open", body = ErrorBody),
    ))]
async fn update_tournament(
    State(app): State<AppState>,
    access: TournamentAccess<club::StaffOrTournamentsManage>,
    Json(body): Json<TournamentUpdate>,
) -> AppResult<Json<TournamentView>> {
    let organizer_id = access.tournament.organizer_id;
    let mut problems = Problems::default();
    check_venue_and_template(&app.db, &mut problems, organizer_id, body.location_id, body.blind_template_id).await?;
    if body.starts_at.is_some_and(|starts_at| starts_at <= Utc::now()) {
        problems.add("startsAt", "must be in the future");
    }
    if body.capacity.is_some_and(|capacity| !CAPACITY_RANGE.contains(&capacity)) {
        problems.add("capacity", "must be 2 to 10000 seats");
    }
    let changes = TournamentChanges {
        location_id: body.location_id,
        blind_template_id: body.blind_template_id,
        tournament_type: body.tournament_type,
        starts_at: body.starts_at,
        capacity: body.capacity,
        chat_link: body.chat_link.map(|link| link.map(|link| url(&mut problems, "chatLink", &link))),
        presentation: check_presentation(&mut problems, body.prizes, body.banner_url, body.translations),
    };
    problems.into_result()?;
    let updated =
        lifecycle::update(&app.db, &app.notifier, &app.live, access.tournament.id, access.user.id(), changes).await?;
    Ok(Json(tournament_view(&app.db, updated).await?))
}

/// Cancels a tournament in `registration` or `running`: every live registration is
/// cancelled, and nobody gets a strike.
#[utoipa::path(post, path = "/tournaments/{id}/cancel", tag = "tournaments", security(("bearer" = [])),
    params(("id" = Uuid, Path)),
    responses(
        (status = 200, body = TournamentView),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: club owner, td or tournaments.manage", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
        (status = 409, description = "INVALID_STATUS: already finished or cancelled", body = ErrorBody),
    ))]
async fn cancel_tournament(
    State(app): State<AppState>,
    access: TournamentAccess<club::StaffOrTournamentsManage>,
) -> AppResult<Json<TournamentView>> {
    let cancelled =
        lifecycle::cancel(&app.db, &app.notifier, &app.live, access.tournament.id, access.user.id()).await?;
    Ok(Json(tournament_view(&app.db, cancelled).await?))
}

#[cfg(test)]
mod tests {
    use serde::Serialize;

    use super::with_my_registration;

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Card {
        id: u32,
        title: String,
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Mine {
        status: &'static str,
    }

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Detail {
        #[serde(flatten)]
        card: Card,
        my_registration: Option<Mine>,
    }

    fn detail(mine: Option<Mine>) -> Vec<u8> {
        let card = Card { id: 7, title: "Турнир \"null}\"".to_owned() };
        serde_json::to_vec(&Detail { card, my_registration: mine }).expect("json")
    }

    #[test]
    fn a_callers_registration_goes_where_the_kept_card_has_null() {
        let anonymous = detail(None);
        let mine = serde_json::to_vec(&Mine { status: "registered" }).expect("json");
        let spliced = with_my_registration(&anonymous, &mine).expect("a kept card");
        assert_eq!(spliced.as_ref(), detail(Some(Mine { status: "registered" })).as_slice());
        assert_eq!(with_my_registration(&anonymous, b"null").expect("a kept card").as_ref(), anonymous.as_slice());
    }

    #[test]
    fn a_body_of_another_shape_is_not_spliced() {
        assert!(with_my_registration(b"{\"id\":7}", b"null").is_none());
    }
}
