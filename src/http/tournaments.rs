//! Tournaments before the live engine takes over: creating (by a club, or by the platform for
//! any club), the card, editing while registration is open, cancelling, the club's list, the
//! public agenda and search.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use floor_entities::enums::{RegistrationStatus, TournamentStatus, TournamentType};
use floor_entities::{blind_templates, locations, organizers, registrations, tournament_translations, tournaments};
use sea_orm::sea_query::Query as SqlQuery;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::cached;
use super::extract::{
    Admin, Json, MaybeAuthUser, OrganizerAccess, Path, Query, TournamentAccess, club, double_option, perm,
};
use super::registrations::{RegistrationView, registration_view};
use super::validate::{Problems, optional_multiline_text, optional_text, url};
use super::views::{ItemList, Localized};
use crate::app::AppState;
use crate::db::find_where_in;
use crate::error::{AppError, AppResult, ErrorBody};
use crate::read_cache::Answer;
use crate::tournaments::lifecycle::{self, Presentation, Texts, TournamentChanges, TournamentDraft};
use crate::tournaments::{SeatCounts, TournamentText, seat_counts};
use crate::tournaments::{screen_path, share_path};

/// The agenda never returns more than this many tournaments.
pub const AGENDA_LIMIT: u64 = 50;
/// Seats a tournament may offer.
pub const CAPACITY_RANGE: std::ops::RangeInclusive<i32> = 2..=10_000;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_club_tournaments, create_club_tournament))
        .routes(routes!(create_tournament_for_club))
        .routes(routes!(get_tournament, update_tournament))
        .routes(routes!(cancel_tournament))
        .routes(routes!(list_agenda))
}

/// A tournament card. There is no money flow: `entryFee` is always 0 and `paymentStatus`
/// always `not_required`.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TournamentView {
    pub id: Uuid,
    pub organizer_id: Uuid,
    pub location_id: Uuid,
    pub season_id: Uuid,
    pub blind_template_id: Uuid,
    #[serde(rename = "type")]
    pub tournament_type: TournamentType,
    pub starts_at: DateTime<Utc>,
    pub capacity: i32,
    pub status: TournamentStatus,
    pub prizes: Option<String>,
    pub chat_link: Option<String>,
    pub banner_url: Option<String>,
    pub entry_fee: i32,
    pub payment_status: String,
    pub translations: Localized<TournamentText>,
    /// Seats taken: `registered` + `checked_in`.
    pub registered_count: i64,
    pub waitlist_count: i64,
    /// The club's name and the venue's name and city, so a card needs no further request.
    pub organizer_name: String,
    pub location_name: String,
    pub city_slug: String,
}

/// A card with the caller's own registration, for the player app's register button.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TournamentDetailView {
    #[serde(flatten)]
    pub tournament: TournamentView,
    /// The live clock for the venue's screen (a public page): for a link or a QR code.
    pub screen_url: String,
    /// The public page of the tournament, the link the apps share.
    pub share_url: String,
    /// The signed-in caller's registration here; null when anonymous or not registered.
    pub my_registration: Option<RegistrationView>,
}

/// The cards of `models`, in their order, with texts and counts read in two queries.
pub async fn tournament_views(
    conn: &impl ConnectionTrait,
    models: Vec<tournaments::Model>,
) -> AppResult<Vec<TournamentView>> {
    let ids: Vec<Uuid> = models.iter().map(|t| t.id).collect();
    let mut texts: HashMap<Uuid, Localized<TournamentText>> = HashMap::new();
    for row in
        find_where_in::<tournament_translations::Entity, _>(conn, tournament_translations::Column::TournamentId, &ids)
            .await?
    {
        let text = TournamentText { title: row.title, subtitle: row.subtitle };
        texts.entry(row.tournament_id).or_default().set(&row.locale, text);
    }
    let counts = seat_counts(conn, &ids).await?;
    let club_ids: Vec<Uuid> = models.iter().map(|t| t.organizer_id).collect();
    let clubs: HashMap<Uuid, String> = find_where_in::<organizers::Entity, _>(conn, organizers::Column::Id, &club_ids)
        .await?
        .into_iter()
        .map(|club| (club.id, club.name))
        .collect();
    let venue_ids: Vec<Uuid> = models.iter().map(|t| t.location_id).collect();
    let venues: HashMap<Uuid, locations::Model> =
        find_where_in::<locations::Entity, _>(conn, locations::Column::Id, &venue_ids)
            .await?
            .into_iter()
            .map(|venue| (venue.id, venue))
            .collect();
    Ok(models
        .into_iter()
        .map(|t| {
            let SeatCounts { taken, waitlist } = counts.get(&t.id).copied().unwrap_or_default();
            TournamentView {
                translations: texts.remove(&t.id).unwrap_or_default(),
                registered_count: taken,
                waitlist_count: waitlist,
                organizer_name: clubs.get(&t.organizer_id).cloned().unwrap_or_default(),
                location_name: venues.get(&t.location_id).map(|v| v.name.clone()).unwrap_or_default(),
                city_slug: venues.get(&t.location_id).map(|v| v.city_slug.clone()).unwrap_or_default(),
                id: t.id,
                organizer_id: t.organizer_id,
                location_id: t.location_id,
                season_id: t.season_id,
                blind_template_id: t.blind_template_id,
                tournament_type: t.tournament_type,
                starts_at: t.starts_at,
                capacity: t.capacity,
                status: t.status,
                prizes: t.prizes,
                chat_link: t.chat_link,
                banner_url: t.banner_url,
                entry_fee: 0,
                payment_status: t.payment_status,
            }
        })
        .collect())
}

pub async fn tournament_view(conn: &impl ConnectionTrait, model: tournaments::Model) -> AppResult<TournamentView> {
    tournament_views(conn, vec![model])
        .await?
        .pop()
        .ok_or_else(|| AppError::Internal(anyhow::anyhow!("a view of one tournament came back empty")))
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

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query, rename_all = "camelCase")]
pub struct AgendaFilter {
    /// Only tournaments at venues in this city (a slug).
    pub city: Option<String>,
    pub organizer_id: Option<Uuid>,
    /// Starting at or after this time.
    pub from: Option<DateTime<Utc>>,
    /// Starting at or before this time.
    pub to: Option<DateTime<Utc>>,
    /// One status instead of the default `registration` and `running`.
    pub status: Option<TournamentStatus>,
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
    let card = async {
        let model = tournaments::Entity::find_by_id(id)
            .one(&app.kept_reads)
            .await?
            .ok_or_else(|| AppError::not_found("tournament"))?;
        Answer::json(&TournamentDetailView {
            screen_url: format!("{}{}", app.config.public_url, screen_path(model.id)),
            share_url: format!("{}{}", app.config.public_url, share_path(model.id)),
            tournament: tournament_view(&app.kept_reads, model).await?,
            my_registration: None,
        })
    };
    let Some(user) = caller else { return cached::answer(&app, &headers, key, card).await };
    let card = app.read_cache.get_or_build(key, card).await?;
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

// The contract's shape of what `list_agenda` writes: the kept cards, with `myStatus` set in
// each by `with_my_statuses`.
/// A card of the agenda. Read with a token it also carries the caller's `myStatus`.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct AgendaCard {
    #[serde(flatten)]
    tournament: TournamentView,
    /// Only when the agenda is read with a token: the caller's registration status in this
    /// tournament (any status, `cancelled` included), null when the caller has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    my_status: Option<Option<RegistrationStatus>>,
}

/// The agenda: upcoming and running tournaments by start time, at most 50. With a token,
/// each card carries the caller's `myStatus` (or null).
#[utoipa::path(get, path = "/tournaments", tag = "tournaments", params(AgendaFilter), security((), ("bearer" = [])),
    responses(
        (status = 200, body = ItemList<AgendaCard>),
        (status = 400, description = "VALIDATION_ERROR: a bad filter", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED: a token was sent but is invalid", body = ErrorBody),
    ))]
async fn list_agenda(
    State(app): State<AppState>,
    MaybeAuthUser(caller): MaybeAuthUser,
    Query(filter): Query<AgendaFilter>,
    headers: HeaderMap,
) -> AppResult<Response> {
    // The cards everyone gets are kept; a signed-in caller's statuses are read each time.
    let key = format!("GET /tournaments {filter:?}");
    let cards = async {
        let models = agenda_query(filter).all(&app.kept_reads).await?;
        Answer::json(&ItemList::new(tournament_views(&app.kept_reads, models).await?))
    };
    let Some(user) = caller else { return cached::answer(&app, &headers, key, cards).await };
    let cards = app.read_cache.get_or_build(key, cards).await?;
    let body = with_my_statuses(&app.reads, &cards.body, user.id()).await?;
    Ok(([(CONTENT_TYPE, HeaderValue::from_static("application/json"))], body).into_response())
}

/// The kept agenda `cards` (JSON) with `myStatus` of `user_id` in each card.
async fn with_my_statuses(conn: &impl ConnectionTrait, cards: &[u8], user_id: Uuid) -> AppResult<Vec<u8>> {
    let internal = |err: serde_json::Error| AppError::Internal(err.into());
    let mut list: serde_json::Value = serde_json::from_slice(cards).map_err(internal)?;
    let Some(items) = list.get_mut("items").and_then(serde_json::Value::as_array_mut) else {
        return Err(AppError::Internal(anyhow::anyhow!("a kept agenda has no items")));
    };
    let ids: Vec<Uuid> = items.iter().filter_map(|card| card["id"].as_str()?.parse().ok()).collect();
    // At most the agenda's 50 ids: one statement.
    let mine: HashMap<Uuid, RegistrationStatus> = registrations::Entity::find()
        .select_only()
        .column(registrations::Column::TournamentId)
        .column(registrations::Column::Status)
        .filter(registrations::Column::UserId.eq(user_id))
        .filter(registrations::Column::TournamentId.is_in(ids))
        .into_tuple()
        .all(conn)
        .await?
        .into_iter()
        .collect();
    for card in items.iter_mut() {
        let status = card["id"].as_str().and_then(|id| id.parse::<Uuid>().ok()).and_then(|id| mine.get(&id));
        card["myStatus"] = serde_json::to_value(status).map_err(internal)?;
    }
    serde_json::to_vec(&list).map_err(internal)
}

/// The agenda's tournaments for `filter`, by start time, at most [`AGENDA_LIMIT`].
fn agenda_query(filter: AgendaFilter) -> sea_orm::Select<tournaments::Entity> {
    let mut query =
        tournaments::Entity::find().order_by_asc(tournaments::Column::StartsAt).order_by_asc(tournaments::Column::Id);
    query = match filter.status {
        Some(status) => query.filter(tournaments::Column::Status.eq(status)),
        None => {
            query.filter(tournaments::Column::Status.is_in([TournamentStatus::Registration, TournamentStatus::Running]))
        }
    };
    if let Some(city) = filter.city {
        query = query.filter(
            tournaments::Column::LocationId.in_subquery(
                SqlQuery::select()
                    .column(locations::Column::Id)
                    .from(locations::Entity)
                    .and_where(locations::Column::CitySlug.eq(city))
                    .to_owned(),
            ),
        );
    }
    if let Some(organizer_id) = filter.organizer_id {
        query = query.filter(tournaments::Column::OrganizerId.eq(organizer_id));
    }
    if let Some(from) = filter.from {
        query = query.filter(tournaments::Column::StartsAt.gte(from));
    }
    if let Some(to) = filter.to {
        query = query.filter(tournaments::Column::StartsAt.lte(to));
    }
    query.limit(AGENDA_LIMIT)
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
