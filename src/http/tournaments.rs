//! Tournaments before the live engine takes over: creating (by a club, or by the platform for
//! any club), the card, editing while registration is open, cancelling, the club's list, the
//! public agenda and search.

use std::collections::{BTreeMap, HashMap};

use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use floor_entities::enums::{TournamentStatus, TournamentType};
use floor_entities::{blind_templates, locations, organizers, registrations, tournament_translations, tournaments};
use sea_orm::sea_query::Query as SqlQuery;
use sea_orm::{ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect, Set};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::{
    Admin, Json, MaybeAuthUser, OrganizerAccess, Path, Query, TournamentAccess, club, double_option, perm,
};
use super::registrations::{RegistrationView, registration_view};
use super::validate::{Problems, optional_text, url};
use super::views::{ItemList, Localized};
use crate::app::AppState;
use crate::db::find_where_in;
use crate::error::{AppError, AppResult, ErrorBody, ErrorCode};
use crate::registrations::fill_free_seats;
use crate::seasons::ensure_season;
use crate::tournaments::{SeatCounts, lock, seat_counts, taken_seats};
use crate::{audit, db};

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

/// Title and subtitle in one locale.
#[derive(Clone, Serialize, Deserialize, ToSchema)]
pub struct TournamentText {
    /// 1 to 200 characters.
    pub title: String,
    /// Up to 300 characters.
    pub subtitle: Option<String>,
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
    pub capacity: i32,
    /// Free text, up to 2000 characters.
    pub prizes: Option<String>,
    pub chat_link: Option<String>,
    pub banner_url: Option<String>,
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
    pub capacity: Option<i32>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub prizes: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub chat_link: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub banner_url: Option<Option<String>>,
    pub translations: Option<Localized<TournamentText>>,
}

#[derive(Deserialize, IntoParams)]
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

fn check_texts(
    problems: &mut Problems,
    texts: &Localized<TournamentText>,
    required: bool,
) -> BTreeMap<&'static str, TournamentText> {
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
pub(super) struct Presentation {
    /// `None` leaves the field, `Some(None)` clears it.
    prizes: Option<Option<String>>,
    banner_url: Option<Option<String>>,
    texts: BTreeMap<&'static str, TournamentText>,
}

pub(super) fn check_presentation(
    problems: &mut Problems,
    prizes: Option<Option<String>>,
    banner_url: Option<Option<String>>,
    translations: Option<Localized<TournamentText>>,
) -> Presentation {
    Presentation {
        prizes: prizes.map(|p| optional_text(problems, "prizes", p, 0, 2000).filter(|p| !p.is_empty())),
        banner_url: banner_url.map(|link| link.map(|link| url(problems, "bannerUrl", &link))),
        texts: translations.map(|texts| check_texts(problems, &texts, false)).unwrap_or_default(),
    }
}

impl Presentation {
    /// Sets the given fields on `active`; the texts are left for [`write_texts`].
    pub(super) fn apply(self, active: &mut tournaments::ActiveModel) -> BTreeMap<&'static str, TournamentText> {
        if let Some(prizes) = self.prizes {
            active.prizes = Set(prizes);
        }
        if let Some(banner_url) = self.banner_url {
            active.banner_url = Set(banner_url);
        }
        self.texts
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

pub(super) async fn write_texts(
    conn: &impl ConnectionTrait,
    tournament_id: Uuid,
    texts: BTreeMap<&'static str, TournamentText>,
) -> AppResult<()> {
    for (locale, text) in texts {
        tournament_translations::Entity::delete_many()
            .filter(tournament_translations::Column::TournamentId.eq(tournament_id))
            .filter(tournament_translations::Column::Locale.eq(locale))
            .exec(conn)
            .await?;
        tournament_translations::ActiveModel {
            tournament_id: Set(tournament_id),
            locale: Set(locale.to_owned()),
            title: Set(text.title),
            subtitle: Set(text.subtitle),
        }
        .insert(conn)
        .await?;
    }
    Ok(())
}

/// Creates a tournament of `organizer_id` in `registration`, open at once.
async fn create_tournament(
    app: &AppState,
    organizer_id: Uuid,
    actor: Uuid,
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
    let now = Utc::now();
    if body.starts_at <= now {
        problems.add("startsAt", "must be in the future");
    }
    if !CAPACITY_RANGE.contains(&body.capacity) {
        problems.add("capacity", "must be 2 to 10000 seats");
    }
    let prizes = optional_text(&mut problems, "prizes", body.prizes, 0, 2000).filter(|p| !p.is_empty());
    let chat_link = body.chat_link.map(|link| url(&mut problems, "chatLink", &link));
    let banner_url = body.banner_url.map(|link| url(&mut problems, "bannerUrl", &link));
    let texts = check_texts(&mut problems, &body.translations, true);
    problems.into_result()?;

    let tx = db::begin_write(&app.db).await?;
    let season = ensure_season(&tx, body.starts_at.date_naive()).await?;
    let tournament = tournaments::ActiveModel {
        id: Set(Uuid::now_v7()),
        organizer_id: Set(organizer_id),
        location_id: Set(body.location_id),
        season_id: Set(season.id),
        blind_template_id: Set(body.blind_template_id),
        tournament_type: Set(body.tournament_type),
        starts_at: Set(body.starts_at),
        capacity: Set(body.capacity),
        status: Set(TournamentStatus::Registration),
        prizes: Set(prizes),
        chat_link: Set(chat_link),
        banner_url: Set(banner_url),
        entry_fee: Set(0),
        payment_status: Set("not_required".to_owned()),
        clock_levels: Set(None),
        current_level_idx: Set(0),
        level_started_at: Set(None),
        paused_at: Set(None),
        chips_in_play: Set(0),
        live_version: Set(0),
        started_at: Set(None),
        finished_at: Set(None),
        cancelled_at: Set(None),
        created_by_user_id: Set(Some(actor)),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&tx)
    .await?;
    write_texts(&tx, tournament.id, texts).await?;
    audit::record(
        &tx,
        Some(actor),
        "tournament.create",
        ("tournament", tournament.id.to_string()),
        json!({"organizerId": organizer_id}),
    )
    .await?;
    let view = tournament_view(&tx, tournament).await?;
    tx.commit().await?;
    Ok((StatusCode::CREATED, Json(view)))
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
        .all(&app.db)
        .await?;
    Ok(Json(ItemList::new(tournament_views(&app.db, models).await?)))
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
#[utoipa::path(get, path = "/tournaments/{id}", tag = "tournaments",
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
) -> AppResult<Json<TournamentDetailView>> {
    let model =
        tournaments::Entity::find_by_id(id).one(&app.db).await?.ok_or_else(|| AppError::not_found("tournament"))?;
    let my_registration = match caller {
        Some(user) => match registrations::Entity::find()
            .filter(registrations::Column::TournamentId.eq(id))
            .filter(registrations::Column::UserId.eq(user.id()))
            .one(&app.db)
            .await?
        {
            Some(row) => Some(registration_view(&app.db, row).await?),
            None => None,
        },
        None => None,
    };
    Ok(Json(TournamentDetailView { tournament: tournament_view(&app.db, model).await?, my_registration }))
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
    let now = Utc::now();
    if body.starts_at.is_some_and(|starts_at| starts_at <= now) {
        problems.add("startsAt", "must be in the future");
    }
    if body.capacity.is_some_and(|capacity| !CAPACITY_RANGE.contains(&capacity)) {
        problems.add("capacity", "must be 2 to 10000 seats");
    }
    let chat_link = body.chat_link.map(|link| link.map(|link| url(&mut problems, "chatLink", &link)));
    let presentation = check_presentation(&mut problems, body.prizes, body.banner_url, body.translations);

    let tx = db::begin_write(&app.db).await?;
    let tournament = lock(&tx, access.tournament.id).await?;
    if tournament.status != TournamentStatus::Registration {
        return Err(AppError::new(
            ErrorCode::InvalidStatus,
            "a tournament can be edited only while registration is open",
        ));
    }
    if let Some(capacity) = body.capacity {
        let taken = taken_seats(&tx, tournament.id).await?;
        if i64::from(capacity) < taken {
            problems.add("capacity", format!("must not be below the {taken} seats already taken"));
        }
    }
    problems.into_result()?;

    let mut active: tournaments::ActiveModel = tournament.clone().into();
    if let Some(id) = body.location_id {
        active.location_id = Set(id);
    }
    if let Some(id) = body.blind_template_id.filter(|id| *id != tournament.blind_template_id) {
        active.blind_template_id = Set(id);
        // The pre-start LiveState shows the structure: a new one is a new version of it.
        active.live_version = Set(tournament.live_version + 1);
    }
    if let Some(kind) = body.tournament_type {
        active.tournament_type = Set(kind);
    }
    if let Some(starts_at) = body.starts_at {
        active.starts_at = Set(starts_at);
        active.season_id = Set(ensure_season(&tx, starts_at.date_naive()).await?.id);
    }
    if let Some(capacity) = body.capacity {
        active.capacity = Set(capacity);
    }
    if let Some(chat_link) = chat_link {
        active.chat_link = Set(chat_link);
    }
    let texts = presentation.apply(&mut active);
    active.updated_at = Set(now);
    let updated = active.update(&tx).await?;
    write_texts(&tx, updated.id, texts).await?;
    // A larger capacity frees seats: the queue moves up at once.
    let promoted = fill_free_seats(&tx, &updated, None).await?;
    audit::record(&tx, Some(access.user.id()), "tournament.update", ("tournament", updated.id.to_string()), json!({}))
        .await?;
    let view = tournament_view(&tx, updated.clone()).await?;
    tx.commit().await?;
    crate::registrations::announce_promotions(&app, updated.id, promoted);
    if updated.live_version != tournament.live_version {
        app.live.reload(view.id).await;
    }
    Ok(Json(view))
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
    let tx = db::begin_write(&app.db).await?;
    let tournament = lock(&tx, access.tournament.id).await?;
    if !matches!(tournament.status, TournamentStatus::Registration | TournamentStatus::Running) {
        return Err(AppError::new(
            ErrorCode::InvalidStatus,
            "only a tournament in registration or running can be cancelled",
        ));
    }
    let now = Utc::now();
    let before = tournament.status;
    let live_version = tournament.live_version;
    let mut active: tournaments::ActiveModel = tournament.into();
    active.status = Set(TournamentStatus::Cancelled);
    active.cancelled_at = Set(Some(now));
    active.updated_at = Set(now);
    // A change of the live picture: the actor's next guarded write finds it stale.
    active.live_version = Set(live_version + 1);
    let cancelled = active.update(&tx).await?;
    crate::registrations::cancel_all(&tx, cancelled.id, now).await?;
    audit::record(
        &tx,
        Some(access.user.id()),
        "tournament.cancel",
        ("tournament", cancelled.id.to_string()),
        json!({"from": before}),
    )
    .await?;
    let view = tournament_view(&tx, cancelled).await?;
    tx.commit().await?;
    app.live.reload(view.id).await;
    Ok(Json(view))
}

/// The agenda: upcoming and running tournaments by start time, at most 50.
#[utoipa::path(get, path = "/tournaments", tag = "tournaments", params(AgendaFilter),
    responses(
        (status = 200, body = ItemList<TournamentView>),
        (status = 400, description = "VALIDATION_ERROR: a bad filter", body = ErrorBody),
    ))]
async fn list_agenda(
    State(app): State<AppState>,
    Query(filter): Query<AgendaFilter>,
) -> AppResult<Json<ItemList<TournamentView>>> {
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
    let models = query.limit(AGENDA_LIMIT).all(&app.db).await?;
    Ok(Json(ItemList::new(tournament_views(&app.db, models).await?)))
}
