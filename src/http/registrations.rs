//! Registration and the club's door: register and cancel (the player), check-in, cancel
//! check-in and walk-in (the club), the club's list with phones.

use axum::Extension;
use axum::extract::State;
use chrono::{DateTime, Utc};
use floor_entities::enums::{RegistrationSource, RegistrationStatus};
use floor_entities::{guest_players, registrations, users};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::cached::ReadsRenewed;
use super::extract::{AuthUser, Json, Path, TokenCaller, TournamentAccess, club};
use super::validate::Problems;
use super::views::ItemList;
use crate::domain::accounts::{shown_phone, usable_account};
use crate::domain::tournaments;
use crate::domain::tournaments::desk::Change;
use crate::domain::tournaments::registrations::waitlist_positions;
use crate::http::state::AppState;
use crate::infra::db::find_where_in;
use crate::infra::error::{AppError, AppResult, ErrorBody};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(register_player))
        .routes(routes!(cancel_registration))
        .routes(routes!(check_in_player))
        .routes(routes!(cancel_check_in))
        .routes(routes!(walk_in_player))
        .routes(routes!(list_registrations))
}

/// A registration. `waitlistPosition` (1 = next) is set while on the waitlist.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationView {
    pub id: Uuid,
    pub tournament_id: Uuid,
    pub user_id: Option<Uuid>,
    pub guest_id: Option<Uuid>,
    pub status: RegistrationStatus,
    pub source: RegistrationSource,
    pub created_at: DateTime<Utc>,
    pub seated_from_waitlist: bool,
    pub eliminated_at: Option<DateTime<Utc>>,
    pub waitlist_position: Option<i64>,
}

impl RegistrationView {
    fn new(row: registrations::Model, waitlist_position: Option<i64>) -> Self {
        Self {
            id: row.id,
            tournament_id: row.tournament_id,
            user_id: row.user_id,
            guest_id: row.guest_id,
            status: row.status,
            source: row.source,
            created_at: row.created_at,
            seated_from_waitlist: row.seated_from_waitlist,
            eliminated_at: row.eliminated_at,
            waitlist_position,
        }
    }
}

/// One row of the club's list: the registration and who it is, with the phone.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClubRegistrationView {
    #[serde(flatten)]
    pub registration: RegistrationView,
    pub name: Option<String>,
    pub nickname: Option<String>,
    pub avatar_url: Option<String>,
    pub phone: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegistrationRef {
    pub registration_id: Uuid,
}

#[derive(Deserialize, ToSchema)]
pub struct WalkIn {
    /// E.164; an account with this phone gets the registration, else a guest.
    #[schema(pattern = "^[ ()\\t\u{a0}-]*\\+[ ()\\t\u{a0}-]*[1-9]([ ()\\t\u{a0}-]*[0-9]){0,14}[ ()\\t\u{a0}-]*$")]
    pub phone: String,
    /// The guest's name (1 to 80 characters); kept for a guest seen before.
    #[schema(
        max_length = 80,
        pattern = "^[\\t\\n\\v\\f\\r ]*[^\\x00-\\x20\\x7F][^\\x00-\\x1F\\x7F]*[\\t\\n\\v\\f\\r ]*$"
    )]
    pub name: String,
}

/// The registration with its place in the queue, read after the change.
pub async fn registration_view(conn: &impl ConnectionTrait, row: registrations::Model) -> AppResult<RegistrationView> {
    let position = if row.status == RegistrationStatus::Waitlist {
        waitlist_positions(conn, row.tournament_id).await?.get(&row.id).copied()
    } else {
        None
    };
    Ok(RegistrationView::new(row, position))
}

/// Registers the caller: a seat while any is free, else the waitlist.
#[utoipa::path(post, path = "/tournaments/{id}/register", tag = "registration", security(("bearer" = [])),
    params(("id" = Uuid, Path)),
    responses(
        (status = 200, body = RegistrationView, description = "status `registered` or `waitlist`"),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "REGISTRATION_BANNED", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
        (status = 409, description = "REGISTRATION_CLOSED, ALREADY_REGISTERED", body = ErrorBody),
    ))]
async fn register_player(
    State(app): State<AppState>,
    caller: TokenCaller,
    Path(id): Path<Uuid>,
) -> AppResult<Decision> {
    // The desk holds and checks the caller's account with its group's.
    decide(&app, id, Change::Register { user_id: caller.user_id }).await
}

/// A change decided at the tournament's desk, answered with the registration as it now is.
/// The desk has built the cached reads again for its group: the answer says so, so the API's
/// middleware does not drop them for each change.
type Decision = (Extension<ReadsRenewed>, Json<RegistrationView>);

/// The one way a request reaches a desk. An unknown id is answered `404` before any desk
/// starts for it (ids are remembered, so a rush reads its tournament's once): random ids
/// would otherwise each start a desk that lives its idle time for nothing. A registering
/// caller's deleted or banned account is still refused first, as the desk refuses it.
async fn decide(app: &AppState, tournament_id: Uuid, change: Change) -> AppResult<Decision> {
    if !app.known_tournaments.exists(tournament_id).await? {
        if let Change::Register { user_id } = change {
            usable_account(&app.reads, user_id).await?;
        }
        return Err(AppError::not_found("tournament"));
    }
    let decided = app.desks.decide(tournament_id, change).await?;
    Ok((Extension(ReadsRenewed), Json(RegistrationView::new(decided.registration, decided.waitlist_position))))
}

/// Cancels the caller's registration; after the deadline, from a seat, it costs a strike.
#[utoipa::path(post, path = "/tournaments/{id}/cancel-registration", tag = "registration", security(("bearer" = [])),
    params(("id" = Uuid, Path)),
    responses(
        (status = 200, body = RegistrationView),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 404, description = "NOT_FOUND: no registration", body = ErrorBody),
        (status = 409, description = "REGISTRATION_CLOSED, INVALID_STATUS (checked in or not active)", body = ErrorBody),
    ))]
async fn cancel_registration(State(app): State<AppState>, user: AuthUser, Path(id): Path<Uuid>) -> AppResult<Decision> {
    decide(&app, id, Change::Cancel { user_id: user.id() }).await
}

/// Marks an arrived player; only from `registered`, only while registration is open.
#[utoipa::path(post, path = "/tournaments/{id}/check-in", tag = "registration", security(("bearer" = [])),
    params(("id" = Uuid, Path)), request_body = RegistrationRef,
    responses(
        (status = 200, body = RegistrationView),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: club owner or td only", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
        (status = 409, description = "REGISTRATION_CLOSED, INVALID_STATUS", body = ErrorBody),
    ))]
async fn check_in_player(
    State(app): State<AppState>,
    access: TournamentAccess<club::Staff>,
    Json(body): Json<RegistrationRef>,
) -> AppResult<Decision> {
    decide(&app, access.tournament.id, Change::CheckIn { registration_id: body.registration_id }).await
}

/// Removes the arrival mark: back to the waitlist for a player promoted from it; a walk-in
/// (let in at the door) is cancelled, so it can never become a no-show; anyone else goes back
/// to `registered`.
#[utoipa::path(post, path = "/tournaments/{id}/cancel-check-in", tag = "registration", security(("bearer" = [])),
    params(("id" = Uuid, Path)), request_body = RegistrationRef,
    responses(
        (status = 200, body = RegistrationView),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: club owner or td only", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
        (status = 409, description = "REGISTRATION_CLOSED, INVALID_STATUS", body = ErrorBody),
    ))]
async fn cancel_check_in(
    State(app): State<AppState>,
    access: TournamentAccess<club::Staff>,
    Json(body): Json<RegistrationRef>,
) -> AppResult<Decision> {
    decide(&app, access.tournament.id, Change::CancelCheckIn { registration_id: body.registration_id }).await
}

/// Lets in a person at the door by phone: their account, or a guest. Capacity is not
/// checked; a repeat returns the same registration.
#[utoipa::path(post, path = "/tournaments/{id}/walk-in", tag = "registration", security(("bearer" = [])),
    params(("id" = Uuid, Path)), request_body = WalkIn,
    responses(
        (status = 200, body = RegistrationView, description = "the person's registration, `checked_in` (made or found)"),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: club owner or td only", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
        (status = 409, description = "REGISTRATION_CLOSED: finished or cancelled", body = ErrorBody),
    ))]
async fn walk_in_player(
    State(app): State<AppState>,
    access: TournamentAccess<club::Staff>,
    Json(body): Json<WalkIn>,
) -> AppResult<Json<RegistrationView>> {
    let mut problems = Problems::default();
    let phone = problems.phone("phone", &body.phone);
    let name = problems.text("name", &body.name, 1, 80);
    problems.into_result()?;
    let phone = phone.ok_or_else(|| AppError::invalid_field("phone", "is not a phone"))?;
    let registration = tournaments::registrations::walk_in(&app.db, access.tournament.id, &phone, &name).await?;
    Ok(Json(registration_view(&app.db, registration).await?))
}

/// Every registration of the tournament in queue order, with names and phones.
#[utoipa::path(get, path = "/tournaments/{id}/registrations", tag = "registration", security(("bearer" = [])),
    params(("id" = Uuid, Path)),
    responses(
        (status = 200, body = ItemList<ClubRegistrationView>),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: club owner or td only", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
    ))]
async fn list_registrations(
    State(app): State<AppState>,
    access: TournamentAccess<club::Staff>,
) -> AppResult<Json<ItemList<ClubRegistrationView>>> {
    Ok(Json(ItemList::new(club_roster(&app.reads, access.tournament.id).await?)))
}

/// Every registration of the tournament in queue order, with names and phones: what the
/// club's list, its export and its sign-in sheet show.
pub async fn club_roster(conn: &impl ConnectionTrait, id: Uuid) -> AppResult<Vec<ClubRegistrationView>> {
    let rows = registrations::Entity::find()
        .filter(registrations::Column::TournamentId.eq(id))
        .order_by_asc(registrations::Column::CreatedAt)
        .order_by_asc(registrations::Column::Id)
        .all(conn)
        .await?;
    let user_ids: Vec<Uuid> = rows.iter().filter_map(|row| row.user_id).collect();
    let guest_ids: Vec<Uuid> = rows.iter().filter_map(|row| row.guest_id).collect();
    let people: std::collections::HashMap<Uuid, users::Model> =
        find_where_in::<users::Entity, _>(conn, users::Column::Id, &user_ids)
            .await?
            .into_iter()
            .map(|user| (user.id, user))
            .collect();
    let guests: std::collections::HashMap<Uuid, guest_players::Model> =
        find_where_in::<guest_players::Entity, _>(conn, guest_players::Column::Id, &guest_ids)
            .await?
            .into_iter()
            .map(|guest| (guest.id, guest))
            .collect();
    let positions = waitlist_positions(conn, id).await?;
    Ok(rows
        .into_iter()
        .map(|row| {
            let (name, nickname, avatar_url, phone) =
                match (row.user_id.and_then(|u| people.get(&u)), row.guest_id.and_then(|g| guests.get(&g))) {
                    (Some(user), _) => {
                        let phone = shown_phone(&user.phone).unwrap_or_default().to_owned();
                        (user.name.clone(), user.nickname.clone(), user.avatar_url.clone(), phone)
                    }
                    (None, Some(guest)) => {
                        (Some(guest.name.clone()), None, None, shown_phone(&guest.phone).unwrap_or_default().to_owned())
                    }
                    (None, None) => (None, None, None, String::new()),
                };
            let position = positions.get(&row.id).copied();
            ClubRegistrationView {
                registration: RegistrationView::new(row, position),
                name,
                nickname,
                avatar_url,
                phone,
            }
        })
        .collect())
}
