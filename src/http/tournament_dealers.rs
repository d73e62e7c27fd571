//! Dealers of a tournament: the owner assigns the club's dealers to a tournament, each
//! optionally to a table; owner and td see the line-up.

use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use floor_entities::enums::MemberRole;
use floor_entities::{dealer_profiles, tournament_dealers, tournaments, users};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseTransaction, EntityTrait, ModelTrait, QueryFilter,
    QueryOrder, Set,
};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::{Json, Path, TournamentAccess, club, double_option};
use super::validate::Problems;
use super::views::ItemList;
use crate::domain::audit;
use crate::domain::clubs::{count_game_dealt, ensure_dealer_profile, find_membership, lock_members};
use crate::http::state::AppState;
use crate::infra::db;
use crate::infra::db::find_where_in;
use crate::infra::error::{AppError, AppResult, ErrorBody, ErrorCode, OnUniqueViolation};

/// The table numbers an assignment may name.
const TABLE_NO: std::ops::RangeInclusive<i32> = 1..=100;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_tournament_dealers, assign_dealer))
        .routes(routes!(update_dealer_assignment, unassign_dealer))
}

/// A dealer assigned to a tournament.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TournamentDealerView {
    pub id: Uuid,
    pub tournament_id: Uuid,
    pub dealer_user_id: Uuid,
    pub name: Option<String>,
    pub nickname: Option<String>,
    pub photo_url: Option<String>,
    /// The table to deal at; `null` until set.
    pub table_no: Option<i32>,
    pub created_at: DateTime<Utc>,
}

impl TournamentDealerView {
    fn new(
        assignment: tournament_dealers::Model,
        user: Option<users::Model>,
        profile: Option<dealer_profiles::Model>,
    ) -> Self {
        Self {
            id: assignment.id,
            tournament_id: assignment.tournament_id,
            dealer_user_id: assignment.dealer_user_id,
            name: user.as_ref().and_then(|u| u.name.clone()),
            nickname: user.and_then(|u| u.nickname),
            photo_url: profile.and_then(|p| p.photo_url),
            table_no: assignment.table_no,
            created_at: assignment.created_at,
        }
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewDealerAssignment {
    /// A dealer of the tournament's club.
    pub dealer_user_id: Uuid,
    /// 1 to 100; may be set later.
    #[schema(minimum = 1, maximum = 100)]
    pub table_no: Option<i32>,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DealerAssignmentUpdate {
    /// 1 to 100; `null` clears it, absent leaves it.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<i32>, minimum = 1, maximum = 100)]
    pub table_no: Option<Option<i32>>,
}

/// The tournament's dealers, in the order they were assigned.
#[utoipa::path(get, path = "/tournaments/{id}/dealers", tag = "dealers", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The tournament")),
    responses(
        (status = 200, body = ItemList<TournamentDealerView>),
        (status = 400, description = "VALIDATION_ERROR: the id is not a UUID", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs club:owner or club:td", body = ErrorBody),
        (status = 404, description = "NOT_FOUND: no such tournament", body = ErrorBody),
    ))]
async fn list_tournament_dealers(
    State(app): State<AppState>,
    access: TournamentAccess<club::Staff>,
) -> AppResult<Json<ItemList<TournamentDealerView>>> {
    let assignments = tournament_dealers::Entity::find()
        .filter(tournament_dealers::Column::TournamentId.eq(access.tournament.id))
        .find_also_related(users::Entity)
        .order_by_asc(tournament_dealers::Column::CreatedAt)
        .order_by_asc(tournament_dealers::Column::Id)
        .all(&app.reads)
        .await?;
    let user_ids: Vec<Uuid> = assignments.iter().map(|(assignment, _)| assignment.dealer_user_id).collect();
    let mut profiles: std::collections::HashMap<Uuid, dealer_profiles::Model> =
        find_where_in::<dealer_profiles::Entity, _>(&app.reads, dealer_profiles::Column::UserId, &user_ids)
            .await?
            .into_iter()
            .map(|profile| (profile.user_id, profile))
            .collect();
    let items = assignments
        .into_iter()
        .map(|(assignment, user)| {
            let profile = profiles.remove(&assignment.dealer_user_id);
            TournamentDealerView::new(assignment, user, profile)
        })
        .collect();
    Ok(Json(ItemList::new(items)))
}

/// Assigns a dealer of the club to the tournament, which counts towards the dealer's
/// `gamesDealt`. Only while the tournament is in `registration` or `running`.
#[utoipa::path(post, path = "/tournaments/{id}/dealers", tag = "dealers", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The tournament")), request_body = NewDealerAssignment,
    responses(
        (status = 201, body = TournamentDealerView),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs club:owner", body = ErrorBody),
        (status = 404, description = "NOT_FOUND: no such tournament, or the user is not a dealer of its club", body = ErrorBody),
        (status = 409, description = "INVALID_STATUS: already assigned, or the tournament is finished or cancelled", body = ErrorBody),
    ))]
async fn assign_dealer(
    State(app): State<AppState>,
    access: TournamentAccess<club::Owner>,
    Json(body): Json<NewDealerAssignment>,
) -> AppResult<(StatusCode, Json<TournamentDealerView>)> {
    let mut problems = Problems::default();
    check_table_no(&mut problems, body.table_no);
    problems.into_result()?;
    let (tx, tournament) = begin_while_open(&app, access.tournament.id).await?;
    // Under the staff lock, a dealer being removed from the club cannot be assigned meanwhile.
    lock_members(&tx, tournament.organizer_id).await?;
    let is_club_dealer = find_membership(&tx, tournament.organizer_id, body.dealer_user_id)
        .await?
        .is_some_and(|member| member.role == MemberRole::Dealer);
    if !is_club_dealer {
        return Err(AppError::not_found("dealer of this club"));
    }
    let assignment = tournament_dealers::ActiveModel {
        id: Set(Uuid::now_v7()),
        tournament_id: Set(tournament.id),
        dealer_user_id: Set(body.dealer_user_id),
        table_no: Set(body.table_no),
        created_at: Set(Utc::now()),
    }
    .insert(&tx)
    .await
    .on_unique_violation(ErrorCode::InvalidStatus, "this dealer is already assigned to the tournament")?;
    ensure_dealer_profile(&tx, body.dealer_user_id).await?;
    count_game_dealt(&tx, body.dealer_user_id, 1).await?;
    audit::record(
        &tx,
        Some(access.user.id()),
        "tournament.dealer_assign",
        ("tournament", tournament.id.to_string()),
        json!({"dealerUserId": body.dealer_user_id, "tableNo": body.table_no}),
    )
    .await?;
    let view = assignment_view(&tx, assignment).await?;
    tx.commit().await?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// Sets or clears the table of an assigned dealer.
#[utoipa::path(patch, path = "/tournaments/{id}/dealers/{dealerUserId}", tag = "dealers", security(("bearer" = [])),
    params(
        ("id" = Uuid, Path, description = "The tournament"),
        ("dealerUserId" = Uuid, Path, description = "The assigned dealer's user id"),
    ),
    request_body = DealerAssignmentUpdate,
    responses(
        (status = 200, body = TournamentDealerView),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs club:owner", body = ErrorBody),
        (status = 404, description = "NOT_FOUND: no such tournament, or this dealer is not assigned to it", body = ErrorBody),
        (status = 409, description = "INVALID_STATUS: the tournament is finished or cancelled", body = ErrorBody),
    ))]
async fn update_dealer_assignment(
    State(app): State<AppState>,
    access: TournamentAccess<club::Owner>,
    Path(ids): Path<(Uuid, Uuid)>,
    Json(body): Json<DealerAssignmentUpdate>,
) -> AppResult<Json<TournamentDealerView>> {
    let (_, dealer_user_id) = ids;
    let mut problems = Problems::default();
    if let Some(table_no) = body.table_no {
        check_table_no(&mut problems, table_no);
    }
    problems.into_result()?;
    let (tx, _) = begin_while_open(&app, access.tournament.id).await?;
    let mut assignment = find_assignment(&tx, access.tournament.id, dealer_user_id).await?;
    if let Some(table_no) = body.table_no {
        let mut active: tournament_dealers::ActiveModel = assignment.into();
        active.table_no = Set(table_no);
        assignment = active.update(&tx).await?;
        audit::record(
            &tx,
            Some(access.user.id()),
            "tournament.dealer_table",
            ("tournament", access.tournament.id.to_string()),
            json!({"dealerUserId": dealer_user_id, "tableNo": table_no}),
        )
        .await?;
    }
    let view = assignment_view(&tx, assignment).await?;
    tx.commit().await?;
    Ok(Json(view))
}

/// Withdraws a dealer from the tournament (and from their `gamesDealt`).
#[utoipa::path(delete, path = "/tournaments/{id}/dealers/{dealerUserId}", tag = "dealers", security(("bearer" = [])),
    params(
        ("id" = Uuid, Path, description = "The tournament"),
        ("dealerUserId" = Uuid, Path, description = "The assigned dealer's user id"),
    ),
    responses(
        (status = 204, description = "withdrawn"),
        (status = 400, description = "VALIDATION_ERROR: an id is not a UUID", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs club:owner", body = ErrorBody),
        (status = 404, description = "NOT_FOUND: no such tournament, or this dealer is not assigned to it", body = ErrorBody),
        (status = 409, description = "INVALID_STATUS: the tournament is finished or cancelled", body = ErrorBody),
    ))]
async fn unassign_dealer(
    State(app): State<AppState>,
    access: TournamentAccess<club::Owner>,
    Path(ids): Path<(Uuid, Uuid)>,
) -> AppResult<StatusCode> {
    let (_, dealer_user_id) = ids;
    let (tx, _) = begin_while_open(&app, access.tournament.id).await?;
    let assignment = find_assignment(&tx, access.tournament.id, dealer_user_id).await?;
    assignment.delete(&tx).await?;
    count_game_dealt(&tx, dealer_user_id, -1).await?;
    audit::record(
        &tx,
        Some(access.user.id()),
        "tournament.dealer_unassign",
        ("tournament", access.tournament.id.to_string()),
        json!({"dealerUserId": dealer_user_id}),
    )
    .await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// One assignment with the dealer's name and photo.
async fn assignment_view(
    conn: &impl ConnectionTrait,
    assignment: tournament_dealers::Model,
) -> AppResult<TournamentDealerView> {
    let user = users::Entity::find_by_id(assignment.dealer_user_id).one(conn).await?;
    let profile = dealer_profiles::Entity::find_by_id(assignment.dealer_user_id).one(conn).await?;
    Ok(TournamentDealerView::new(assignment, user, profile))
}

async fn find_assignment(
    conn: &impl ConnectionTrait,
    tournament_id: Uuid,
    dealer_user_id: Uuid,
) -> AppResult<tournament_dealers::Model> {
    tournament_dealers::Entity::find()
        .filter(tournament_dealers::Column::TournamentId.eq(tournament_id))
        .filter(tournament_dealers::Column::DealerUserId.eq(dealer_user_id))
        .one(conn)
        .await?
        .ok_or_else(|| AppError::not_found("dealer assignment"))
}

/// Opens a write transaction holding the tournament's lock, so line-up changes are serialised
/// with each other and with a cancellation. The line-up of a finished or cancelled tournament
/// is history: it no longer changes.
async fn begin_while_open(app: &AppState, tournament_id: Uuid) -> AppResult<(DatabaseTransaction, tournaments::Model)> {
    let tx = db::begin_write(&app.db).await?;
    let tournament = crate::domain::tournaments::lock(&tx, tournament_id).await?;
    if tournament.status.is_over() {
        return Err(AppError::new(ErrorCode::InvalidStatus, "the tournament is over: its dealers no longer change"));
    }
    Ok((tx, tournament))
}

fn check_table_no(problems: &mut Problems, table_no: Option<i32>) {
    if let Some(table_no) = table_no
        && !TABLE_NO.contains(&table_no)
    {
        problems.add("tableNo", format!("must be {} to {}", TABLE_NO.start(), TABLE_NO.end()));
    }
}
