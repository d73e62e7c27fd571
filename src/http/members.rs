//! A club's staff: the owner lists members, adds an owner or td by phone (creating the
//! account when missing), and removes members, never the last owner.

use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use floor_entities::enums::{MemberRole, TournamentStatus};
use floor_entities::{organizer_members, tournament_dealers, tournaments, users};
use sea_orm::sea_query::Query as SqlQuery;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, DatabaseTransaction, EntityTrait, ModelTrait, QueryFilter, QueryOrder, Set,
};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::{Json, OrganizerAccess, Path, club};
use super::validate::Problems;
use super::views::ItemList;
use crate::domain::audit;
use crate::domain::clubs::{count_game_dealt, find_membership, insert_membership, lock_members, owner_count};
use crate::domain::players::signup::find_or_create_account;
use crate::http::state::AppState;
use crate::infra::db;
use crate::infra::error::{AppError, AppResult, ErrorBody, ErrorCode};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_members, add_member)).routes(routes!(remove_member))
}

/// A member of a club, with the person's contact.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberView {
    /// The membership's id: `{memberId}` of `DELETE /organizers/{id}/members/{memberId}`.
    pub id: Uuid,
    pub user_id: Uuid,
    pub phone: String,
    pub name: Option<String>,
    pub nickname: Option<String>,
    pub role: MemberRole,
    pub created_at: DateTime<Utc>,
}

impl MemberView {
    fn new(member: organizer_members::Model, user: users::Model) -> Self {
        Self {
            id: member.id,
            user_id: user.id,
            phone: user.phone,
            name: user.name,
            nickname: user.nickname,
            role: member.role,
            created_at: member.created_at,
        }
    }
}

/// The roles an owner hands out directly; dealers join through a dealer invite.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum StaffRole {
    Owner,
    Td,
}

impl From<StaffRole> for MemberRole {
    fn from(role: StaffRole) -> Self {
        match role {
            StaffRole::Owner => MemberRole::Owner,
            StaffRole::Td => MemberRole::Td,
        }
    }
}

/// A person to add to the club's staff, or a member whose role to change.
#[derive(Deserialize, ToSchema)]
pub struct NewMember {
    /// The account is created when no user has this phone yet.
    #[schema(pattern = "^[ ()\\t\u{a0}-]*\\+[ ()\\t\u{a0}-]*[1-9]([ ()\\t\u{a0}-]*[0-9]){0,14}[ ()\\t\u{a0}-]*$")]
    pub phone: String,
    /// `owner` or `td`; `dealer` is refused (dealers join through a dealer invite).
    pub role: StaffRole,
}

/// Every member of the club (owners, tds and dealers), in the order they joined.
#[utoipa::path(get, path = "/organizers/{id}/members", tag = "clubs", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The club")),
    responses(
        (status = 200, body = ItemList<MemberView>),
        (status = 400, description = "VALIDATION_ERROR: the id is not a UUID", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs club:owner", body = ErrorBody),
        (status = 404, description = "NOT_FOUND: no such club", body = ErrorBody),
    ))]
async fn list_members(
    State(app): State<AppState>,
    access: OrganizerAccess<club::Owner>,
) -> AppResult<Json<ItemList<MemberView>>> {
    let members = organizer_members::Entity::find()
        .filter(organizer_members::Column::OrganizerId.eq(access.organizer.id))
        .find_also_related(users::Entity)
        .order_by_asc(organizer_members::Column::CreatedAt)
        .order_by_asc(organizer_members::Column::Id)
        .all(&app.reads)
        .await?;
    let items =
        members.into_iter().filter_map(|(member, user)| user.map(|user| MemberView::new(member, user))).collect();
    Ok(Json(ItemList::new(items)))
}

/// Adds the person with this phone to the club as `owner` or `td`, creating the account when
/// missing (`201`). When the person is already a member, their role is set to `role`
/// instead (`200`): this is how an owner promotes a td, or a dealer becomes staff. The last
/// owner cannot be demoted (`409 INVALID_STATUS`).
#[utoipa::path(post, path = "/organizers/{id}/members", tag = "clubs", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The club")), request_body = NewMember,
    responses(
        (status = 201, description = "added", body = MemberView),
        (status = 200, description = "already a member: the role is now `role`", body = MemberView),
        (status = 400, description = "VALIDATION_ERROR: bad phone, or a role other than owner or td", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs club:owner", body = ErrorBody),
        (status = 404, description = "NOT_FOUND: no such club", body = ErrorBody),
        (status = 409, description = "INVALID_STATUS: the club's last owner cannot be demoted", body = ErrorBody),
    ))]
async fn add_member(
    State(app): State<AppState>,
    access: OrganizerAccess<club::Owner>,
    Json(body): Json<NewMember>,
) -> AppResult<(StatusCode, Json<MemberView>)> {
    let mut problems = Problems::default();
    let phone = problems.phone("phone", &body.phone);
    problems.into_result()?;
    let phone = phone.ok_or_else(|| AppError::invalid_field("phone", "is not a phone"))?;
    let role = MemberRole::from(body.role);
    let organizer_id = access.organizer.id;

    let tx = db::begin_write(&app.db).await?;
    let user = find_or_create_account(&tx, &phone).await?;
    lock_members(&tx, organizer_id).await?;
    let (status, member) = match find_membership(&tx, organizer_id, user.id).await? {
        None => {
            let member = insert_membership(&tx, organizer_id, user.id, role).await?;
            audit::record(
                &tx,
                Some(access.user.id()),
                "member.add",
                ("organizer_member", member.id.to_string()),
                json!({"organizerId": organizer_id, "userId": user.id, "role": role}),
            )
            .await?;
            (StatusCode::CREATED, member)
        }
        Some(member) if member.role == role => (StatusCode::OK, member),
        Some(member) => {
            if member.role == MemberRole::Owner && owner_count(&tx, organizer_id).await? <= 1 {
                return Err(AppError::new(ErrorCode::InvalidStatus, "the club's last owner cannot be demoted"));
            }
            let before = member.role;
            let mut active: organizer_members::ActiveModel = member.into();
            active.role = Set(role);
            let member = active.update(&tx).await?;
            audit::record(
                &tx,
                Some(access.user.id()),
                "member.role_change",
                ("organizer_member", member.id.to_string()),
                json!({"organizerId": organizer_id, "userId": user.id, "from": before, "to": role}),
            )
            .await?;
            (StatusCode::OK, member)
        }
    };
    tx.commit().await?;
    Ok((status, Json(MemberView::new(member, user))))
}

/// Removes a member from the club. The last owner cannot be removed (`409 INVALID_STATUS`);
/// owner removals are serialised per club, so two concurrent removals of the last two owners
/// cannot both succeed. A dealer leaves the line-ups of the club's tournaments still to be
/// played.
#[utoipa::path(delete, path = "/organizers/{id}/members/{memberId}", tag = "clubs", security(("bearer" = [])),
    params(
        ("id" = Uuid, Path, description = "The club"),
        ("memberId" = Uuid, Path, description = "The membership's id, as the member list gives it"),
    ),
    responses(
        (status = 204, description = "removed"),
        (status = 400, description = "VALIDATION_ERROR: an id is not a UUID", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs club:owner", body = ErrorBody),
        (status = 404, description = "NOT_FOUND: no such club, or no such member in it", body = ErrorBody),
        (status = 409, description = "INVALID_STATUS: the club's last owner cannot be removed", body = ErrorBody),
    ))]
async fn remove_member(
    State(app): State<AppState>,
    access: OrganizerAccess<club::Owner>,
    Path(ids): Path<(Uuid, Uuid)>,
) -> AppResult<StatusCode> {
    let (_, member_id) = ids;
    let organizer_id = access.organizer.id;
    let tx = db::begin_write(&app.db).await?;
    lock_members(&tx, organizer_id).await?;
    let member = organizer_members::Entity::find_by_id(member_id)
        .filter(organizer_members::Column::OrganizerId.eq(organizer_id))
        .one(&tx)
        .await?
        .ok_or_else(|| AppError::not_found("member"))?;
    if member.role == MemberRole::Owner && owner_count(&tx, organizer_id).await? <= 1 {
        return Err(AppError::new(ErrorCode::InvalidStatus, "the club's last owner cannot be removed"));
    }
    let withdrawn =
        if member.role == MemberRole::Dealer { withdraw_from_open_tournaments(&tx, &member).await? } else { 0 };
    let details =
        json!({"organizerId": organizer_id, "userId": member.user_id, "role": member.role, "withdrawnFrom": withdrawn});
    member.delete(&tx).await?;
    audit::record(&tx, Some(access.user.id()), "member.remove", ("organizer_member", member_id.to_string()), details)
        .await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Takes a dealer leaving the club off the line-ups of the club's tournaments still to be
/// played (their history in finished ones stays), and off their `gamesDealt`. Returns how many
/// assignments were withdrawn. Runs under the club's staff lock, which an assignment also takes.
async fn withdraw_from_open_tournaments(tx: &DatabaseTransaction, member: &organizer_members::Model) -> AppResult<u64> {
    let open_tournaments = SqlQuery::select()
        .column(tournaments::Column::Id)
        .from(tournaments::Entity)
        .and_where(tournaments::Column::OrganizerId.eq(member.organizer_id))
        .and_where(tournaments::Column::Status.is_in([
            TournamentStatus::Announced,
            TournamentStatus::Registration,
            TournamentStatus::Running,
        ]))
        .to_owned();
    let withdrawn = tournament_dealers::Entity::delete_many()
        .filter(tournament_dealers::Column::DealerUserId.eq(member.user_id))
        .filter(tournament_dealers::Column::TournamentId.in_subquery(open_tournaments))
        .exec(tx)
        .await?
        .rows_affected;
    if withdrawn > 0 {
        count_game_dealt(tx, member.user_id, -i32::try_from(withdrawn).unwrap_or(i32::MAX)).await?;
    }
    Ok(withdrawn)
}
