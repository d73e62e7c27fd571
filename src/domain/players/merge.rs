//! Merging a duplicate account into the main one, in the caller's transaction: what the
//! person did under the duplicate moves to the main account wherever it cannot collide with
//! what the main account already has, both profiles are rebuilt from their results, and the
//! duplicate is left banned (with its phone and its sessions revoked) so it cannot sign in
//! again.

use std::collections::{BTreeSet, HashMap, HashSet};

use chrono::{DateTime, Utc};
use floor_entities::enums::{MemberRole, RegistrationStatus, TournamentStatus, UserStatus};
use floor_entities::{
    dealer_profiles, follows, guest_players, notifications, organizer_members, player_profiles, refresh_tokens,
    registrations, results, strikes, tournament_dealers, tournaments, users,
};
use sea_orm::sea_query::{Expr, ExprTrait, OnConflict, Query};
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, DatabaseTransaction, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder,
    QuerySelect, Set,
};
use serde::Serialize;
use uuid::Uuid;

use crate::domain::auth::permissions::{Permission, has_permission};
use crate::domain::notifications::{Journaled, Notifier};
use crate::domain::players::devices;
use crate::domain::tournaments::registrations::{LIVE, fill_free_seats};
use crate::domain::{clubs, rating, strikes as strike_rows};
use crate::infra::db::{IDS_PER_STATEMENT, find_where_in};
use crate::infra::error::{AppError, AppResult, ErrorCode};

/// What moved from the duplicate to the main account (and what stayed behind), for the
/// audit record.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MergeReport {
    pub registrations_moved: u64,
    /// In tournaments where the main account has its own registration.
    pub registrations_kept: u64,
    /// Of those kept, the live ones of tournaments still open for registration: cancelled
    /// (no strike), their seats given to the queue.
    pub registrations_cancelled: u64,
    pub results_moved: u64,
    /// In tournaments where the main account has its own result.
    pub results_kept: u64,
    pub strikes_moved: u64,
    /// Follow rows carried over, either direction; self-follows and duplicates dropped.
    pub follows_moved: u64,
    /// Devices carried over; a token both accounts held keeps the main account's row.
    pub push_tokens_moved: u64,
    /// The duplicate's sessions are revoked, never handed to the main account: whoever holds
    /// the duplicate's refresh token must not get into the main account without a code.
    pub refresh_tokens_revoked: u64,
    pub notifications_moved: u64,
    /// Clubs the main account joined with the duplicate's role.
    pub memberships_moved: u64,
    /// Clubs where both were staff: the main account keeps the stronger role.
    pub memberships_joined: u64,
    pub dealer_assignments_moved: u64,
    pub dealer_profile_moved: bool,
    pub guests_moved: u64,
}

/// What a merge did: the report for the audit record, and the promotions to the seats it
/// freed, journaled and to be pushed once the transaction has committed.
#[derive(Clone, Debug, Default)]
pub struct Merged {
    pub report: MergeReport,
    pub promotions: Vec<Journaled>,
}

/// Reads and locks both accounts' rows for the rest of `tx`, in id order (two merges of the
/// same pair, either way round, never wait on each other crosswise). `NOT_FOUND` for either
/// missing one. Returns (main, duplicate).
pub async fn lock_accounts(
    tx: &DatabaseTransaction,
    main: Uuid,
    duplicate: Uuid,
) -> AppResult<(users::Model, users::Model)> {
    let rows = users::Entity::find()
        .filter(users::Column::Id.is_in([main, duplicate]))
        .order_by_asc(users::Column::Id)
        .lock_exclusive()
        .all(tx)
        .await?;
    let find = |id: Uuid| rows.iter().find(|user| user.id == id).cloned();
    let main = find(main).ok_or_else(|| AppError::not_found("user"))?;
    let duplicate = find(duplicate).ok_or_else(|| AppError::not_found("duplicate user"))?;
    Ok((main, duplicate))
}

/// Refuses (`INVALID_STATUS`) a merge into or of a banned account: a merged duplicate is
/// banned, so merging it again (or merging the main account back into it) is refused. A
/// deleted account is neither merged nor merged into: its owner asked for its person to be
/// erased, not moved.
pub fn ensure_mergeable(main: &users::Model, duplicate: &users::Model) -> AppResult<()> {
    if main.status == UserStatus::Deleted {
        return Err(AppError::new(ErrorCode::InvalidStatus, "the main account was deleted by its owner"));
    }
    if duplicate.status == UserStatus::Deleted {
        return Err(AppError::new(ErrorCode::InvalidStatus, "the duplicate was deleted by its owner"));
    }
    if main.status == UserStatus::Banned {
        return Err(AppError::new(ErrorCode::InvalidStatus, "the main account is banned"));
    }
    if duplicate.status == UserStatus::Banned {
        return Err(AppError::new(ErrorCode::InvalidStatus, "the duplicate is banned (already merged?)"));
    }
    Ok(())
}

/// Refuses a merge that `caller` may not make, with both accounts locked: a merge into the
/// caller's own account (`INVALID_STATUS`: it would hand the caller whatever the duplicate
/// held), and, unless the caller may manage organizers, a merge that would move the
/// duplicate's club staff roles (owner, td) to the main account (`FORBIDDEN`).
pub async fn ensure_may_merge(
    tx: &DatabaseTransaction,
    caller: &users::Model,
    main: &users::Model,
    duplicate: &users::Model,
) -> AppResult<()> {
    if main.id == caller.id {
        return Err(AppError::new(ErrorCode::InvalidStatus, "you cannot merge an account into your own"));
    }
    if has_permission(caller.admin_role, Permission::OrganizersManage) {
        return Ok(());
    }
    let staff = organizer_members::Entity::find()
        .filter(organizer_members::Column::UserId.eq(duplicate.id))
        .filter(organizer_members::Column::Role.is_in([MemberRole::Owner, MemberRole::Td]))
        .count(tx)
        .await?;
    if staff > 0 {
        return Err(AppError::new(
            ErrorCode::Forbidden,
            "the duplicate is club staff: moving its owner or td roles needs organizers.manage",
        ));
    }
    Ok(())
}

/// Merges `duplicate` into `main` inside `tx`. The caller has checked that they differ and
/// holds both rows ([`lock_accounts`]).
///
/// The duplicate is banned first, for good (it remembers `main`), guarded by its status (`INVALID_STATUS` when it is no
/// longer active). Then the locks, in the order every writer uses
/// (`rating::lock_participants`): the tournaments the duplicate played or works in, in id
/// order; then the staff of its clubs; then both profiles. So no registration, confirmation
/// or strike of those tournaments runs halfway through the merge.
pub async fn merge_accounts(
    tx: &DatabaseTransaction,
    notifier: &Notifier,
    main: Uuid,
    duplicate: Uuid,
    now: DateTime<Utc>,
) -> AppResult<Merged> {
    let banned = users::Entity::update_many()
        .col_expr(users::Column::Status, Expr::value(UserStatus::Banned))
        .col_expr(users::Column::MergedIntoUserId, Expr::value(Some(main)))
        .col_expr(users::Column::UpdatedAt, Expr::value(now))
        .filter(users::Column::Id.eq(duplicate))
        .filter(users::Column::Status.eq(UserStatus::Active))
        .exec(tx)
        .await?;
    if banned.rows_affected == 0 {
        return Err(AppError::new(ErrorCode::InvalidStatus, "the duplicate is no longer active"));
    }
    let tournaments = lock_tournaments(tx, tournaments_of(tx, duplicate).await?).await?;
    let memberships =
        organizer_members::Entity::find().filter(organizer_members::Column::UserId.eq(duplicate)).all(tx).await?;
    for organizer_id in memberships.iter().map(|member| member.organizer_id).collect::<BTreeSet<_>>() {
        clubs::lock_members(tx, organizer_id).await?;
    }
    rating::lock_profiles(tx, &[main, duplicate]).await?;
    let inherited_ban =
        player_profiles::Entity::find_by_id(duplicate).one(tx).await?.and_then(|profile| profile.ban_until);

    let mut report = MergeReport::default();
    let (moved, staying) = move_registrations(tx, main, duplicate, now).await?;
    (report.registrations_moved, report.registrations_kept) = (moved, staying.len() as u64);
    let (cancelled, promotions) = cancel_kept_registrations(tx, notifier, &staying, &tournaments, now).await?;
    report.registrations_cancelled = cancelled;
    (report.results_moved, report.results_kept) = move_results(tx, main, duplicate).await?;
    report.strikes_moved = reassign::<strikes::Entity, _>(tx, strikes::Column::UserId, duplicate, main).await?;
    report.follows_moved = move_follows(tx, main, duplicate).await?;
    report.push_tokens_moved = devices::move_to(tx, main, duplicate).await?;
    report.refresh_tokens_revoked = refresh_tokens::Entity::update_many()
        .col_expr(refresh_tokens::Column::RevokedAt, Expr::value(Some(now)))
        .filter(refresh_tokens::Column::UserId.eq(duplicate))
        .filter(refresh_tokens::Column::RevokedAt.is_null())
        .exec(tx)
        .await?
        .rows_affected;
    report.notifications_moved = move_notifications(tx, main, duplicate).await?;
    (report.memberships_moved, report.memberships_joined) = move_memberships(tx, main, memberships).await?;
    // The profile moves before an empty one is made for a main account that deals now: made
    // first, it would keep the duplicate's own (with its bio) from moving.
    (report.dealer_assignments_moved, report.dealer_profile_moved) = move_dealing(tx, main, duplicate).await?;
    if clubs::is_dealer(tx, main).await? {
        clubs::ensure_dealer_profile(tx, main).await?;
    }
    report.guests_moved =
        reassign::<guest_players::Entity, _>(tx, guest_players::Column::ClaimedByUserId, duplicate, main).await?;

    rating::rebuild_profiles(tx, &[main, duplicate]).await?;
    strike_rows::recompute_ban(tx, main, inherited_ban, now).await?;
    Ok(Merged { report, promotions })
}

/// Locks the tournaments `ids` for the rest of `tx` (`FOR UPDATE` on PostgreSQL; SQLite's
/// `IMMEDIATE` transaction already excludes other writers), in id order and
/// `IDS_PER_STATEMENT` at a time, as `tournaments::lock` would one by one.
async fn lock_tournaments(
    tx: &DatabaseTransaction,
    ids: BTreeSet<Uuid>,
) -> AppResult<HashMap<Uuid, tournaments::Model>> {
    let ids: Vec<Uuid> = ids.into_iter().collect();
    let mut locked = HashMap::with_capacity(ids.len());
    for chunk in ids.chunks(IDS_PER_STATEMENT) {
        let rows = tournaments::Entity::find()
            .filter(tournaments::Column::Id.is_in(chunk.iter().copied()))
            .order_by_asc(tournaments::Column::Id)
            .lock_exclusive()
            .all(tx)
            .await?;
        locked.extend(rows.into_iter().map(|tournament| (tournament.id, tournament)));
    }
    Ok(locked)
}

/// Every tournament the account has a registration, a result or a dealer assignment in,
/// in id order (the order tournament locks are taken in).
async fn tournaments_of(conn: &impl ConnectionTrait, user_id: Uuid) -> AppResult<BTreeSet<Uuid>> {
    let registered: Vec<Uuid> = registrations::Entity::find()
        .select_only()
        .column(registrations::Column::TournamentId)
        .filter(registrations::Column::UserId.eq(user_id))
        .into_tuple()
        .all(conn)
        .await?;
    let played: Vec<Uuid> = results::Entity::find()
        .select_only()
        .column(results::Column::TournamentId)
        .filter(results::Column::UserId.eq(user_id))
        .into_tuple()
        .all(conn)
        .await?;
    let dealt: Vec<Uuid> = tournament_dealers::Entity::find()
        .select_only()
        .column(tournament_dealers::Column::TournamentId)
        .filter(tournament_dealers::Column::DealerUserId.eq(user_id))
        .into_tuple()
        .all(conn)
        .await?;
    Ok(registered.into_iter().chain(played).chain(dealt).collect())
}

/// Sets `column` from `from` to `to` on every row of `E`; returns how many rows moved.
async fn reassign<E, C>(conn: &impl ConnectionTrait, column: C, from: Uuid, to: Uuid) -> AppResult<u64>
where
    E: EntityTrait,
    C: ColumnTrait,
{
    let moved = E::update_many().col_expr(column, Expr::value(to)).filter(column.eq(from)).exec(conn).await?;
    Ok(moved.rows_affected)
}

/// The `(row id, tournament)` pairs of `E` that belong to `user_id` through `user_column`.
async fn rows_by_tournament<E, C>(
    conn: &impl ConnectionTrait,
    id: C,
    tournament: C,
    user_column: C,
    user_id: Uuid,
) -> AppResult<Vec<(Uuid, Uuid)>>
where
    E: EntityTrait,
    C: ColumnTrait,
{
    Ok(E::find()
        .select_only()
        .column(id)
        .column(tournament)
        .filter(user_column.eq(user_id))
        .into_tuple()
        .all(conn)
        .await?)
}

/// Splits the duplicate's rows (id, tournament) into those whose tournament the main
/// account has no row in (to move) and the rest (to keep).
fn split_by_tournament(duplicate_rows: Vec<(Uuid, Uuid)>, main_rows: &[(Uuid, Uuid)]) -> (Vec<Uuid>, Vec<Uuid>) {
    let taken: HashSet<Uuid> = main_rows.iter().map(|(_, tournament)| *tournament).collect();
    let (moving, staying): (Vec<_>, Vec<_>) =
        duplicate_rows.into_iter().partition(|(_, tournament)| !taken.contains(tournament));
    (moving.into_iter().map(|(id, _)| id).collect(), staying.into_iter().map(|(id, _)| id).collect())
}

/// Registrations move except where the main account is registered in the same tournament
/// (one registration per account and tournament): those stay with the duplicate. Returns
/// (moved, ids of those staying).
async fn move_registrations(
    tx: &DatabaseTransaction,
    main: Uuid,
    duplicate: Uuid,
    now: DateTime<Utc>,
) -> AppResult<(u64, Vec<Uuid>)> {
    use registrations::Column as R;
    let main_rows = rows_by_tournament::<registrations::Entity, _>(tx, R::Id, R::TournamentId, R::UserId, main).await?;
    let duplicate_rows =
        rows_by_tournament::<registrations::Entity, _>(tx, R::Id, R::TournamentId, R::UserId, duplicate).await?;
    let (moving, staying) = split_by_tournament(duplicate_rows, &main_rows);
    for chunk in moving.chunks(IDS_PER_STATEMENT) {
        registrations::Entity::update_many()
            .col_expr(R::UserId, Expr::value(Some(main)))
            .col_expr(R::UpdatedAt, Expr::value(now))
            .filter(R::Id.is_in(chunk.iter().copied()))
            .exec(tx)
            .await?;
    }
    Ok((moving.len() as u64, staying))
}

/// The registrations that stayed with the duplicate must not stay live: in a tournament still
/// open for registration, a `registered`, `checked_in` or `waitlist` one is cancelled (no
/// strike: the player did not leave, the account did) and its seat goes to the queue exactly
/// as a cancellation's does. Rows of running or finished tournaments stay as history.
/// `tournaments` holds the locked tournaments. Returns (cancelled, the promotions journaled).
async fn cancel_kept_registrations(
    tx: &DatabaseTransaction,
    notifier: &Notifier,
    staying: &[Uuid],
    tournaments: &HashMap<Uuid, tournaments::Model>,
    now: DateTime<Utc>,
) -> AppResult<(u64, Vec<Journaled>)> {
    let open = |row: &registrations::Model| {
        LIVE.contains(&row.status)
            && tournaments.get(&row.tournament_id).is_some_and(|t| t.status == TournamentStatus::Registration)
    };
    let live: Vec<registrations::Model> =
        find_where_in::<registrations::Entity, _>(tx, registrations::Column::Id, staying)
            .await?
            .into_iter()
            .filter(open)
            .collect();
    let ids: Vec<Uuid> = live.iter().map(|row| row.id).collect();
    for chunk in ids.chunks(IDS_PER_STATEMENT) {
        registrations::Entity::update_many()
            .col_expr(registrations::Column::Status, Expr::value(RegistrationStatus::Cancelled))
            .col_expr(registrations::Column::CancelledAt, Expr::value(Some(now)))
            .col_expr(registrations::Column::UpdatedAt, Expr::value(now))
            .filter(registrations::Column::Id.is_in(chunk.iter().copied()))
            .exec(tx)
            .await?;
    }
    let mut promotions = Vec::new();
    for tournament_id in live.iter().map(|row| row.tournament_id).collect::<BTreeSet<_>>() {
        let Some(tournament) = tournaments.get(&tournament_id) else { continue };
        promotions.extend(fill_free_seats(tx, notifier, tournament, None).await?);
    }
    Ok((ids.len() as u64, promotions))
}

/// Results move for the tournaments where the main account has none; where both played,
/// the duplicate keeps its own (a person cannot take two places in one rating).
async fn move_results(tx: &DatabaseTransaction, main: Uuid, duplicate: Uuid) -> AppResult<(u64, u64)> {
    use results::Column as R;
    let main_rows = rows_by_tournament::<results::Entity, _>(tx, R::Id, R::TournamentId, R::UserId, main).await?;
    let duplicate_rows =
        rows_by_tournament::<results::Entity, _>(tx, R::Id, R::TournamentId, R::UserId, duplicate).await?;
    let (moving, staying) = split_by_tournament(duplicate_rows, &main_rows);
    for chunk in moving.chunks(IDS_PER_STATEMENT) {
        results::Entity::update_many()
            .col_expr(R::UserId, Expr::value(Some(main)))
            .filter(R::Id.is_in(chunk.iter().copied()))
            .exec(tx)
            .await?;
    }
    Ok((moving.len() as u64, staying.len() as u64))
}

/// Follows in both directions move to the main account, keeping their dates; a follow
/// between the two accounts (it would become a self-follow) and one the main account
/// already has are dropped. Carried over `IDS_PER_STATEMENT` rows per statement.
async fn move_follows(tx: &DatabaseTransaction, main: Uuid, duplicate: Uuid) -> AppResult<u64> {
    let involving =
        Condition::any().add(follows::Column::FollowerId.eq(duplicate)).add(follows::Column::FolloweeId.eq(duplicate));
    let rows = follows::Entity::find().filter(involving.clone()).all(tx).await?;
    let swap = |id: Uuid| if id == duplicate { main } else { id };
    let mut seen = HashSet::new();
    let carried: Vec<follows::ActiveModel> = rows
        .into_iter()
        .map(|row| (swap(row.follower_id), swap(row.followee_id), row.created_at))
        .filter(|(follower, followee, _)| follower != followee && seen.insert((*follower, *followee)))
        .map(|(follower, followee, created_at)| follows::ActiveModel {
            follower_id: Set(follower),
            followee_id: Set(followee),
            created_at: Set(created_at),
        })
        .collect();
    let mut moved = 0;
    for chunk in carried.chunks(IDS_PER_STATEMENT) {
        moved += follows::Entity::insert_many(chunk.to_vec())
            .on_conflict(
                OnConflict::columns([follows::Column::FollowerId, follows::Column::FolloweeId]).do_nothing().to_owned(),
            )
            .exec_without_returning(tx)
            .await?;
    }
    follows::Entity::delete_many().filter(involving).exec(tx).await?;
    Ok(moved)
}

/// The notification journal moves, except rows whose dedup key the main account already
/// holds (the same reminder reached both accounts): those stay behind.
async fn move_notifications(tx: &DatabaseTransaction, main: Uuid, duplicate: Uuid) -> AppResult<u64> {
    use notifications::Column as N;
    let main_keys = Query::select()
        .column(N::DedupKey)
        .from(notifications::Entity)
        .and_where(Expr::col(N::UserId).eq(main))
        .and_where(Expr::col(N::DedupKey).is_not_null())
        .to_owned();
    let moved = notifications::Entity::update_many()
        .col_expr(N::UserId, Expr::value(main))
        .filter(N::UserId.eq(duplicate))
        .filter(Condition::any().add(N::DedupKey.is_null()).add(N::DedupKey.not_in_subquery(main_keys)))
        .exec(tx)
        .await?;
    Ok(moved.rows_affected)
}

/// How much a club role can do, to pick the stronger of two.
fn role_rank(role: MemberRole) -> u8 {
    match role {
        MemberRole::Dealer => 0,
        MemberRole::Td => 1,
        MemberRole::Owner => 2,
    }
}

/// The duplicate's club memberships move to the main account. Where both are staff of one
/// club, the main account keeps its membership with the stronger of the two roles and the
/// duplicate's goes: a banned account must not stay on a club's staff (and count as its
/// owner). Returns (moved, joined).
async fn move_memberships(
    tx: &DatabaseTransaction,
    main: Uuid,
    duplicates: Vec<organizer_members::Model>,
) -> AppResult<(u64, u64)> {
    let mains: HashMap<Uuid, organizer_members::Model> = organizer_members::Entity::find()
        .filter(organizer_members::Column::UserId.eq(main))
        .all(tx)
        .await?
        .into_iter()
        .map(|member| (member.organizer_id, member))
        .collect();
    let (mut moved, mut joined) = (0, 0);
    for member in duplicates {
        match mains.get(&member.organizer_id) {
            None => {
                organizer_members::Entity::update_many()
                    .col_expr(organizer_members::Column::UserId, Expr::value(main))
                    .filter(organizer_members::Column::Id.eq(member.id))
                    .exec(tx)
                    .await?;
                moved += 1;
            }
            Some(kept) => {
                if role_rank(member.role) > role_rank(kept.role) {
                    organizer_members::Entity::update_many()
                        .col_expr(organizer_members::Column::Role, Expr::value(member.role))
                        .filter(organizer_members::Column::Id.eq(kept.id))
                        .exec(tx)
                        .await?;
                }
                organizer_members::Entity::delete_by_id(member.id).exec(tx).await?;
                joined += 1;
            }
        }
    }
    Ok((moved, joined))
}

/// Dealer assignments move except in tournaments the main account deals too. The dealer
/// profile moves whole when the main account has none; otherwise the main account keeps
/// its own and `gamesDealt` follows the assignments that moved. Returns (assignments
/// moved, profile moved).
async fn move_dealing(tx: &DatabaseTransaction, main: Uuid, duplicate: Uuid) -> AppResult<(u64, bool)> {
    use tournament_dealers::Column as D;
    let main_has_profile = dealer_profiles::Entity::find_by_id(main).one(tx).await?.is_some();
    let profile_moved = !main_has_profile
        && reassign::<dealer_profiles::Entity, _>(tx, dealer_profiles::Column::UserId, duplicate, main).await? > 0;
    let main_rows =
        rows_by_tournament::<tournament_dealers::Entity, _>(tx, D::Id, D::TournamentId, D::DealerUserId, main).await?;
    let duplicate_rows =
        rows_by_tournament::<tournament_dealers::Entity, _>(tx, D::Id, D::TournamentId, D::DealerUserId, duplicate)
            .await?;
    let (moving, _) = split_by_tournament(duplicate_rows, &main_rows);
    for chunk in moving.chunks(IDS_PER_STATEMENT) {
        tournament_dealers::Entity::update_many()
            .col_expr(D::DealerUserId, Expr::value(main))
            .filter(D::Id.is_in(chunk.iter().copied()))
            .exec(tx)
            .await?;
    }
    let moved = i32::try_from(moving.len()).unwrap_or(i32::MAX);
    if main_has_profile && moved > 0 {
        clubs::count_game_dealt(tx, main, moved).await?;
        clubs::count_game_dealt(tx, duplicate, -moved).await?;
    }
    Ok((moving.len() as u64, profile_moved))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_move_only_to_tournaments_the_main_account_is_not_in() {
        let (t1, t2, t3) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        let (a, b, c, m) = (Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7(), Uuid::now_v7());
        let (moving, staying) = split_by_tournament(vec![(a, t1), (b, t2), (c, t3)], &[(m, t2)]);
        assert_eq!(moving, [a, c]);
        assert_eq!(staying, [b]);
    }

    #[test]
    fn the_stronger_club_role_wins() {
        assert!(role_rank(MemberRole::Owner) > role_rank(MemberRole::Td));
        assert!(role_rank(MemberRole::Td) > role_rank(MemberRole::Dealer));
    }
}
