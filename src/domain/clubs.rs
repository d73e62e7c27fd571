//! Club membership as data: who holds which role in a club, the lock that serialises every
//! change of a club's staff, and the dealer profile a dealer membership brings along.

use chrono::Utc;
use floor_entities::enums::MemberRole;
use floor_entities::{dealer_profiles, organizer_members, organizers};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseTransaction, EntityTrait, PaginatorTrait, QueryFilter,
    QueryOrder, Set,
};
use uuid::Uuid;

use crate::infra::db;
use crate::infra::error::AppResult;

/// Takes the lock of a club's staff. Every transaction that adds, removes or re-roles a
/// member of the club takes it first, so two concurrent removals of the last two owners
/// cannot both see "another owner remains".
pub async fn lock_members(tx: &DatabaseTransaction, organizer_id: Uuid) -> AppResult<()> {
    db::lock_key(tx, &format!("club-members:{organizer_id}")).await?;
    Ok(())
}

/// The membership of `user_id` in `organizer_id`, if any.
pub async fn find_membership(
    conn: &impl ConnectionTrait,
    organizer_id: Uuid,
    user_id: Uuid,
) -> AppResult<Option<organizer_members::Model>> {
    Ok(organizer_members::Entity::find()
        .filter(organizer_members::Column::OrganizerId.eq(organizer_id))
        .filter(organizer_members::Column::UserId.eq(user_id))
        .one(conn)
        .await?)
}

/// Every membership of `user_id` with its club, oldest first.
pub async fn memberships_of(
    conn: &impl ConnectionTrait,
    user_id: Uuid,
) -> AppResult<Vec<(organizer_members::Model, organizers::Model)>> {
    let rows = organizer_members::Entity::find()
        .filter(organizer_members::Column::UserId.eq(user_id))
        .find_also_related(organizers::Entity)
        .order_by_asc(organizer_members::Column::CreatedAt)
        .all(conn)
        .await?;
    Ok(rows.into_iter().filter_map(|(member, organizer)| organizer.map(|organizer| (member, organizer))).collect())
}

/// How many owners the club has.
pub async fn owner_count(conn: &impl ConnectionTrait, organizer_id: Uuid) -> AppResult<u64> {
    Ok(organizer_members::Entity::find()
        .filter(organizer_members::Column::OrganizerId.eq(organizer_id))
        .filter(organizer_members::Column::Role.eq(MemberRole::Owner))
        .count(conn)
        .await?)
}

/// Adds `user_id` to the club with `role`. The caller holds [`lock_members`] and has
/// checked there is no membership yet.
pub async fn insert_membership(
    conn: &impl ConnectionTrait,
    organizer_id: Uuid,
    user_id: Uuid,
    role: MemberRole,
) -> AppResult<organizer_members::Model> {
    Ok(organizer_members::ActiveModel {
        id: Set(Uuid::now_v7()),
        organizer_id: Set(organizer_id),
        user_id: Set(user_id),
        role: Set(role),
        created_at: Set(Utc::now()),
    }
    .insert(conn)
    .await?)
}

/// Whether the user deals in at least one club: what the dealer catalogue and
/// `PATCH /dealers/me` go by.
pub async fn is_dealer(conn: &impl ConnectionTrait, user_id: Uuid) -> AppResult<bool> {
    let memberships = organizer_members::Entity::find()
        .filter(organizer_members::Column::UserId.eq(user_id))
        .filter(organizer_members::Column::Role.eq(MemberRole::Dealer))
        .count(conn)
        .await?;
    Ok(memberships > 0)
}

/// Creates the user's empty dealer profile unless one exists; safe against a concurrent
/// creation (the insert does nothing on a conflict).
pub async fn ensure_dealer_profile(conn: &impl ConnectionTrait, user_id: Uuid) -> AppResult<()> {
    dealer_profiles::Entity::insert(dealer_profiles::ActiveModel {
        user_id: Set(user_id),
        photo_url: Set(None),
        bio: Set(None),
        experience_years: Set(None),
        games_dealt: Set(0),
        updated_at: Set(Utc::now()),
    })
    .on_conflict_do_nothing()
    .exec_without_returning(conn)
    .await?;
    Ok(())
}

/// Adds `delta` (+1 on an assignment, -1 when it is withdrawn) to the dealer's `gamesDealt`.
pub async fn count_game_dealt(conn: &impl ConnectionTrait, user_id: Uuid, delta: i32) -> AppResult<()> {
    dealer_profiles::Entity::update_many()
        .col_expr(dealer_profiles::Column::GamesDealt, Expr::col(dealer_profiles::Column::GamesDealt).add(delta))
        .col_expr(dealer_profiles::Column::UpdatedAt, Expr::value(Utc::now()))
        .filter(dealer_profiles::Column::UserId.eq(user_id))
        .exec(conn)
        .await?;
    Ok(())
}
