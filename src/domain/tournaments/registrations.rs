//! Who takes part: every transition of the spec's registration table. A player's and the
//! club's changes while registration is open are decided at the tournament's desk
//! ([`super::desk`]), in a write transaction holding the tournament's lock, so seat counts and
//! writes never interleave (capacity is never exceeded; two simultaneous registrations give
//! one row); the functions here run inside it. A walk-in takes the same lock on its own. The
//! notices a transition owes (a promotion from the waitlist, a followee's registration) are
//! journaled in its transaction and pushed after it commits.

use std::collections::HashMap;

use chrono::{DateTime, Duration, SubsecRound, Utc};
use floor_entities::enums::{RegistrationSource, RegistrationStatus, StrikeReason, TournamentStatus};
use floor_entities::{follows, guest_players, organizers, registrations, table_seats, tournaments, users};
use sea_orm::sea_query::{Expr, Func};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, DatabaseTransaction, EntityTrait, QueryFilter,
    QueryOrder, QuerySelect, Set,
};
use serde_json::json;
use uuid::Uuid;

use super::{UNNAMED_PLAYER, display_title, lock, taken_seats};
use crate::domain::accounts::find_user;
use crate::domain::notifications::{Journaled, Notice, NoticeKind, Notifier, PushMessage};
use crate::domain::strikes;
use crate::infra::db;
use crate::infra::db::{IDS_PER_STATEMENT, padded};
use crate::infra::error::{AppError, AppResult, ErrorCode};
use crate::values::Phone;

/// Statuses that hold a place in the tournament (a seat or a place in the queue).
pub const LIVE: [RegistrationStatus; 3] =
    [RegistrationStatus::Registered, RegistrationStatus::Waitlist, RegistrationStatus::CheckedIn];

/// Whether cancelling at `now` is after the club's cancel deadline.
pub fn is_late_cancellation(now: DateTime<Utc>, starts_at: DateTime<Utc>, deadline_hours: i32) -> bool {
    now >= starts_at - Duration::hours(i64::from(deadline_hours))
}

/// The `createdAt` of registrations decided one after another under the tournament's lock:
/// each after the one before, and the first after `latest`, the latest the tournament held
/// when the lock was taken, whichever node's clock stamped it; by the microsecond, as the
/// databases keep it. The waitlist is ordered by `createdAt`, so a node whose clock runs
/// behind another's never queues a later decision before an earlier one, and the place a
/// player is told is the place they hold.
#[derive(Clone, Copy, Debug)]
pub struct Stamps {
    last: Option<DateTime<Utc>>,
}

impl Stamps {
    /// Stamps that follow `latest` (none: the tournament has no registration yet).
    pub fn after(latest: Option<DateTime<Utc>>) -> Self {
        Self { last: latest }
    }

    /// The stamp of a decision made at `now` by this node's clock: `now` unless that is not
    /// after the last stamp, else a microsecond after it.
    pub fn next(&mut self, now: DateTime<Utc>) -> DateTime<Utc> {
        let now = now.trunc_subsecs(6);
        let stamp = match self.last {
            Some(last) => now.max(last + Duration::microseconds(1)),
            None => now,
        };
        self.last = Some(stamp);
        stamp
    }
}

/// The latest `createdAt` of the tournament's registrations, whatever their status.
pub async fn latest_created_at(conn: &impl ConnectionTrait, tournament_id: Uuid) -> AppResult<Option<DateTime<Utc>>> {
    let latest: Option<Option<DateTime<Utc>>> = registrations::Entity::find()
        .select_only()
        .column_as(Expr::from(Func::max(Expr::col(registrations::Column::CreatedAt))), "latest")
        .filter(registrations::Column::TournamentId.eq(tournament_id))
        .into_tuple()
        .one(conn)
        .await?;
    Ok(latest.flatten())
}

pub fn closed() -> AppError {
    AppError::new(ErrorCode::RegistrationClosed, "the tournament is not open for registration")
}

fn wrong_status(what: &str) -> AppError {
    AppError::new(ErrorCode::InvalidStatus, what.to_owned())
}

/// Moves the first of the queue (by `createdAt`, then id) into free seats until none is left,
/// passing over `except` (a player who has just given their seat back). Runs only while
/// registration is open (after start the roster is fixed). Each promoted player with an
/// account is told a seat is theirs (`waitlist.promoted`): journaled in `tx`, and returned to
/// be pushed once `tx` has committed.
pub async fn fill_free_seats(
    tx: &DatabaseTransaction,
    notifier: &Notifier,
    tournament: &tournaments::Model,
    except: Option<Uuid>,
) -> AppResult<Option<Journaled>> {
    if tournament.status != TournamentStatus::Registration {
        return Ok(None);
    }
    let free = i64::from(tournament.capacity) - taken_seats(tx, tournament.id).await?;
    let Ok(free) = u64::try_from(free) else { return Ok(None) };
    if free == 0 {
        return Ok(None);
    }
    let queue = registrations::Entity::find()
        .filter(registrations::Column::TournamentId.eq(tournament.id))
        .filter(registrations::Column::Status.eq(RegistrationStatus::Waitlist))
        .filter(registrations::Column::Id.ne(except.unwrap_or_else(Uuid::nil)))
        .order_by_asc(registrations::Column::CreatedAt)
        .order_by_asc(registrations::Column::Id)
        .limit(free)
        .all(tx)
        .await?;
    let now = Utc::now();
    let mut recipients = Vec::with_capacity(queue.len());
    for row in queue {
        let mut active: registrations::ActiveModel = row.into();
        active.status = Set(RegistrationStatus::Registered);
        active.seated_from_waitlist = Set(true);
        active.updated_at = Set(now);
        recipients.extend(active.update(tx).await?.user_id);
    }
    if recipients.is_empty() {
        return Ok(None);
    }
    let title = display_title(tx, tournament.id).await?;
    let notice = Notice {
        kind: NoticeKind::WaitlistPromoted,
        recipients,
        payload: json!({"tournamentId": tournament.id, "title": title}),
        push: Some(PushMessage {
            title: "Место освободилось".to_owned(),
            body: format!("Вы перешли из листа ожидания в основной список турнира «{title}»."),
        }),
        dedup_key: None,
    };
    Ok(Some(notifier.journal(tx, notice).await?))
}

/// The followers of each of `user_ids` (oldest follow first): whom to tell when those
/// players register. Players no one follows are left out.
pub async fn followers_of_each(conn: &impl ConnectionTrait, user_ids: &[Uuid]) -> AppResult<HashMap<Uuid, Vec<Uuid>>> {
    let mut followers: HashMap<Uuid, Vec<Uuid>> = HashMap::new();
    for chunk in user_ids.chunks(IDS_PER_STATEMENT) {
        let pairs: Vec<(Uuid, Uuid)> = follows::Entity::find()
            .select_only()
            .column(follows::Column::FolloweeId)
            .column(follows::Column::FollowerId)
            .filter(follows::Column::FolloweeId.is_in(padded(chunk)))
            .order_by_asc(follows::Column::CreatedAt)
            .order_by_asc(follows::Column::FollowerId)
            .into_tuple()
            .all(conn)
            .await?;
        for (followee, follower) in pairs {
            followers.entry(followee).or_default().push(follower);
        }
    }
    Ok(followers)
}

/// Tells `recipients`, the player's followers, that they registered (`followee.registered`
/// in the tournament titled `title`): journaled in `tx`, returned to be pushed once `tx` has
/// committed.
pub async fn tell_followers(
    tx: &DatabaseTransaction,
    notifier: &Notifier,
    tournament_id: Uuid,
    title: &str,
    player: &users::Model,
    recipients: Vec<Uuid>,
) -> AppResult<Journaled> {
    let shown_name =
        player.nickname.clone().or_else(|| player.name.clone()).unwrap_or_else(|| UNNAMED_PLAYER.to_owned());
    let notice = Notice {
        kind: NoticeKind::FolloweeRegistered,
        recipients,
        payload: json!({"tournamentId": tournament_id, "userId": player.id, "title": title}),
        push: Some(PushMessage {
            title: "Новая регистрация".to_owned(),
            body: format!("{shown_name} идёт на турнир «{title}»."),
        }),
        dedup_key: None,
    };
    notifier.journal(tx, notice).await
}

/// A cancelled registration of the same player taken up again: it goes to the end of the
/// queue as if new (`created_at` is the new decision's).
pub fn reregistration(
    row: registrations::Model,
    status: RegistrationStatus,
    now: DateTime<Utc>,
) -> registrations::ActiveModel {
    let mut active: registrations::ActiveModel = row.into();
    active.status = Set(status);
    active.source = Set(RegistrationSource::App);
    active.seated_from_waitlist = Set(false);
    active.checked_in_at = Set(None);
    active.cancelled_at = Set(None);
    active.eliminated_at = Set(None);
    active.created_at = Set(now);
    active.updated_at = Set(now);
    active
}

pub fn already_registered() -> AppError {
    AppError::new(ErrorCode::AlreadyRegistered, "you are already registered")
}

pub fn new_registration(
    tournament_id: Uuid,
    user_id: Option<Uuid>,
    guest_id: Option<Uuid>,
    status: RegistrationStatus,
    source: RegistrationSource,
    now: DateTime<Utc>,
) -> registrations::ActiveModel {
    let checked_in = status == RegistrationStatus::CheckedIn;
    registrations::ActiveModel {
        id: Set(Uuid::now_v7()),
        tournament_id: Set(tournament_id),
        user_id: Set(user_id),
        guest_id: Set(guest_id),
        status: Set(status),
        source: Set(source),
        seated_from_waitlist: Set(false),
        eliminated_at: Set(None),
        checked_in_at: Set(checked_in.then_some(now)),
        cancelled_at: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
    }
}

/// `cancel-registration` by the player: from a seat after the deadline it costs a strike;
/// from the waitlist never. A freed seat goes to the first of the queue.
pub async fn cancel(
    tx: &DatabaseTransaction,
    notifier: &Notifier,
    tournament: &tournaments::Model,
    user_id: Uuid,
    now: DateTime<Utc>,
) -> AppResult<(registrations::Model, Option<Journaled>)> {
    let row = registrations::Entity::find()
        .filter(registrations::Column::TournamentId.eq(tournament.id))
        .filter(registrations::Column::UserId.eq(user_id))
        .one(tx)
        .await?
        .ok_or_else(|| AppError::not_found("registration"))?;
    match row.status {
        RegistrationStatus::Registered => {
            let deadline_hours = organizers::Entity::find_by_id(tournament.organizer_id)
                .one(tx)
                .await?
                .ok_or_else(|| AppError::Internal(anyhow::anyhow!("tournament {} has no club", tournament.id)))?
                .cancel_deadline_hours;
            if is_late_cancellation(now, tournament.starts_at, deadline_hours) {
                strikes::issue(tx, user_id, tournament.id, row.id, StrikeReason::LateCancel, now).await?;
            }
        }
        RegistrationStatus::Waitlist => {}
        RegistrationStatus::CheckedIn => {
            return Err(wrong_status("you are checked in: ask the tournament director to cancel the check-in first"));
        }
        RegistrationStatus::Cancelled | RegistrationStatus::NoShow => {
            return Err(wrong_status("this registration is not active"));
        }
    }
    let mut active: registrations::ActiveModel = row.into();
    active.status = Set(RegistrationStatus::Cancelled);
    active.cancelled_at = Set(Some(now));
    active.updated_at = Set(now);
    let registration = active.update(tx).await?;
    let promoted = fill_free_seats(tx, notifier, tournament, None).await?;
    Ok((registration, promoted))
}

/// The registration `registration_id` of the locked tournament, for the club's operations;
/// `INVALID_STATUS` with `refusal` unless it is in `expected`.
async fn club_row(
    tx: &DatabaseTransaction,
    tournament: &tournaments::Model,
    registration_id: Uuid,
    expected: RegistrationStatus,
    refusal: &str,
) -> AppResult<registrations::Model> {
    let row = registrations::Entity::find_by_id(registration_id)
        .one(tx)
        .await?
        .filter(|row| row.tournament_id == tournament.id)
        .ok_or_else(|| AppError::not_found("registration"))?;
    if row.status != expected {
        return Err(wrong_status(refusal));
    }
    Ok(row)
}

/// `check-in` by the club: only from `registered`, only while registration is open.
pub async fn check_in(
    tx: &DatabaseTransaction,
    tournament: &tournaments::Model,
    registration_id: Uuid,
    now: DateTime<Utc>,
) -> AppResult<registrations::Model> {
    let row = club_row(
        tx,
        tournament,
        registration_id,
        RegistrationStatus::Registered,
        "only a registered player can be checked in",
    )
    .await?;
    let mut active: registrations::ActiveModel = row.into();
    active.status = Set(RegistrationStatus::CheckedIn);
    active.checked_in_at = Set(Some(now));
    active.updated_at = Set(now);
    Ok(active.update(tx).await?)
}

/// `cancel-check-in` by the club: a player who came from the waitlist returns to it (keeping
/// their place at its head) and the seat they give back goes to the next in the queue; a
/// person the club let in at the door (a walk-in) is cancelled, since they never asked for a
/// place the club could now hold against them as a no-show; anyone else returns to
/// `registered`.
pub async fn cancel_check_in(
    tx: &DatabaseTransaction,
    notifier: &Notifier,
    tournament: &tournaments::Model,
    registration_id: Uuid,
    now: DateTime<Utc>,
) -> AppResult<(registrations::Model, Option<Journaled>)> {
    let refusal = "only a checked-in player can have the check-in cancelled";
    let row = club_row(tx, tournament, registration_id, RegistrationStatus::CheckedIn, refusal).await?;
    let back_to = match (row.seated_from_waitlist, row.source) {
        (true, _) => RegistrationStatus::Waitlist,
        (false, RegistrationSource::WalkIn) => RegistrationStatus::Cancelled,
        (false, RegistrationSource::App) => RegistrationStatus::Registered,
    };
    let mut active: registrations::ActiveModel = row.into();
    active.status = Set(back_to);
    active.seated_from_waitlist = Set(false);
    active.checked_in_at = Set(None);
    if back_to == RegistrationStatus::Cancelled {
        active.cancelled_at = Set(Some(now));
    }
    active.updated_at = Set(now);
    let registration = active.update(tx).await?;
    let promoted = fill_free_seats(tx, notifier, tournament, Some(registration.id)).await?;
    Ok((registration, promoted))
}

/// `walk-in` by the club: the person is at the door. An account with the phone gets the
/// registration, else a guest does (made once per phone). Capacity is not checked. The
/// registration ends `checked_in`; a repeat (or a race) returns the same row.
///
/// Locks in the order every transaction takes them (`docs/concurrency.md`): the phone, then
/// the tournament. The deletion of the phone's account takes the phone first too, so the
/// person is let in wholly before it (and the place given back by it) or wholly after it (as
/// a guest, the phone being nobody's then), never waiting on it in a circle.
pub async fn walk_in(
    db: &DatabaseConnection,
    tournament_id: Uuid,
    phone: &Phone,
    name: &str,
) -> AppResult<registrations::Model> {
    let tx = db::begin_write(db).await?;
    db::lock_key(&tx, &Phone::lock_key(phone.as_str())).await?;
    let tournament = lock(&tx, tournament_id).await?;
    // Taken under the lock, after every registration before it, so the queue's order is the
    // order the lock was granted in whatever this node's clock says.
    let now = Stamps::after(latest_created_at(&tx, tournament.id).await?).next(Utc::now());
    if !matches!(tournament.status, TournamentStatus::Registration | TournamentStatus::Running) {
        return Err(closed());
    }
    let (user_id, guest_id) = match find_user(&tx, phone).await? {
        Some(user) => (Some(user.id), None),
        None => (None, Some(find_or_create_guest(&tx, phone, name, now).await?)),
    };
    let existing = registrations::Entity::find()
        .filter(registrations::Column::TournamentId.eq(tournament.id))
        .filter(match (user_id, guest_id) {
            (Some(user_id), _) => registrations::Column::UserId.eq(user_id),
            (None, guest_id) => registrations::Column::GuestId.eq(guest_id),
        })
        .one(&tx)
        .await?;
    let registration = match existing {
        Some(row) if row.status == RegistrationStatus::CheckedIn => row,
        Some(row) => {
            let was = row.status;
            let mut active: registrations::ActiveModel = row.into();
            active.status = Set(RegistrationStatus::CheckedIn);
            active.checked_in_at = Set(Some(now));
            active.cancelled_at = Set(None);
            active.updated_at = Set(now);
            match was {
                // Let in past a full house: cancelling the check-in returns them to the queue.
                RegistrationStatus::Waitlist => active.seated_from_waitlist = Set(true),
                RegistrationStatus::Cancelled => {
                    active.source = Set(RegistrationSource::WalkIn);
                    active.seated_from_waitlist = Set(false);
                    active.created_at = Set(now);
                }
                _ => {}
            }
            active.update(&tx).await?
        }
        None => {
            new_registration(
                tournament.id,
                user_id,
                guest_id,
                RegistrationStatus::CheckedIn,
                RegistrationSource::WalkIn,
                now,
            )
            .insert(&tx)
            .await?
        }
    };
    tx.commit().await?;
    Ok(registration)
}

/// A new account takes over the places its phone held as a guest: every registration of
/// `guest_ids` becomes the account's (the same row, keeping the guest as its trace). So the
/// account registering again is `ALREADY_REGISTERED`, a walk-in of its phone finds that row,
/// and the unique key of one registration per account and tournament covers it. The account
/// is new, so it holds no registration these could clash with.
pub async fn claim_guest_registrations(
    conn: &impl ConnectionTrait,
    user_id: Uuid,
    guest_ids: &[Uuid],
) -> AppResult<u64> {
    let mut claimed = 0;
    for chunk in guest_ids.chunks(IDS_PER_STATEMENT) {
        claimed += registrations::Entity::update_many()
            .col_expr(registrations::Column::UserId, Expr::value(Some(user_id)))
            .col_expr(registrations::Column::UpdatedAt, Expr::value(Utc::now()))
            .filter(registrations::Column::GuestId.is_in(chunk.iter().copied()))
            .filter(registrations::Column::UserId.is_null())
            .exec(conn)
            .await?
            .rows_affected;
    }
    Ok(claimed)
}

/// The guest seated under `phone`, made with `name` on first sight.
async fn find_or_create_guest(
    tx: &DatabaseTransaction,
    phone: &Phone,
    name: &str,
    now: DateTime<Utc>,
) -> AppResult<Uuid> {
    if let Some(guest) =
        guest_players::Entity::find().filter(guest_players::Column::Phone.eq(phone.as_str())).one(tx).await?
    {
        return Ok(guest.id);
    }
    let guest = guest_players::ActiveModel {
        id: Set(Uuid::now_v7()),
        phone: Set(phone.to_string()),
        name: Set(name.to_owned()),
        claimed_by_user_id: Set(None),
        created_at: Set(now),
    }
    .insert(tx)
    .await?;
    Ok(guest.id)
}

/// 1-based places in the waitlist of `tournament_id`, by registration id.
pub async fn waitlist_positions(conn: &impl ConnectionTrait, tournament_id: Uuid) -> AppResult<HashMap<Uuid, i64>> {
    let queue: Vec<Uuid> = registrations::Entity::find()
        .select_only()
        .column(registrations::Column::Id)
        .filter(registrations::Column::TournamentId.eq(tournament_id))
        .filter(registrations::Column::Status.eq(RegistrationStatus::Waitlist))
        .order_by_asc(registrations::Column::CreatedAt)
        .order_by_asc(registrations::Column::Id)
        .into_tuple()
        .all(conn)
        .await?;
    Ok(queue.into_iter().zip(1..).collect())
}

/// What a cancelled tournament requires: every live registration cancelled (no strikes) and
/// every seat freed.
pub async fn cancel_all(tx: &DatabaseTransaction, tournament_id: Uuid, now: DateTime<Utc>) -> AppResult<()> {
    registrations::Entity::update_many()
        .col_expr(registrations::Column::Status, Expr::value(RegistrationStatus::Cancelled))
        .col_expr(registrations::Column::CancelledAt, Expr::value(now))
        .col_expr(registrations::Column::UpdatedAt, Expr::value(now))
        .filter(registrations::Column::TournamentId.eq(tournament_id))
        .filter(registrations::Column::Status.is_in(LIVE))
        .exec(tx)
        .await?;
    table_seats::Entity::update_many()
        .col_expr(table_seats::Column::Active, Expr::value(false))
        .filter(table_seats::Column::TournamentId.eq(tournament_id))
        .exec(tx)
        .await?;
    Ok(())
}

/// The most registrations [`upcoming_of`] lists.
pub const UPCOMING_LIMIT: u64 = 100;

/// The account's live registrations in tournaments still to be played or running, each with
/// its tournament, by start (then id): what "my tournaments" shows.
pub async fn upcoming_of(
    conn: &impl ConnectionTrait,
    user_id: Uuid,
) -> AppResult<Vec<(registrations::Model, tournaments::Model)>> {
    let rows = registrations::Entity::find()
        .find_also_related(tournaments::Entity)
        .filter(registrations::Column::UserId.eq(user_id))
        .filter(registrations::Column::Status.is_in(LIVE))
        .filter(tournaments::Column::Status.is_in([TournamentStatus::Registration, TournamentStatus::Running]))
        .order_by_asc(tournaments::Column::StartsAt)
        .order_by_asc(tournaments::Column::Id)
        .limit(UPCOMING_LIMIT)
        .all(conn)
        .await?;
    Ok(rows.into_iter().filter_map(|(registration, tournament)| Some((registration, tournament?))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text).map(|t| t.with_timezone(&Utc)).expect("a time")
    }

    #[test]
    fn stamps_follow_the_wall_clock_by_the_microsecond() {
        let now = at("2026-11-28T12:00:00.123456789Z");
        let mut stamps = Stamps::after(Some(at("2026-11-28T11:00:00Z")));
        assert_eq!(stamps.next(now), at("2026-11-28T12:00:00.123456Z"), "as the databases keep it");
        assert_eq!(Stamps::after(None).next(now), at("2026-11-28T12:00:00.123456Z"), "the first of a tournament");
    }

    #[test]
    fn a_clock_behind_stamps_after_what_a_clock_ahead_stamped() {
        // Node A's clock runs 5 ms ahead of node B's: A decides first, B after it.
        let true_time = at("2026-11-28T12:00:00Z");
        let skew = Duration::milliseconds(5);
        let mut on_a = Stamps::after(None);
        let decided_on_a: Vec<_> = (0..3).map(|n| on_a.next(true_time + skew + Duration::microseconds(n))).collect();
        let latest = decided_on_a.iter().max().copied();
        let mut on_b = Stamps::after(latest);
        let decided_on_b: Vec<_> =
            (0..3).map(|n| on_b.next(true_time + Duration::milliseconds(1) + Duration::microseconds(n))).collect();
        let queue: Vec<_> = decided_on_a.iter().chain(&decided_on_b).collect();
        assert!(queue.windows(2).all(|pair| pair[0] < pair[1]), "the queue is the order of the decisions: {queue:?}");
        assert_eq!(decided_on_b[0], decided_on_a[2] + Duration::microseconds(1));
    }

    #[test]
    fn stamps_strictly_increase_however_fast_the_decisions_come() {
        let now = at("2026-11-28T12:00:00Z");
        let mut stamps = Stamps::after(Some(now + Duration::seconds(1)));
        let times: Vec<DateTime<Utc>> = (0..1000).map(|_| stamps.next(now)).collect();
        assert!(times.windows(2).all(|pair| pair[0] < pair[1]), "each after the one before, even ahead of the clock");
        assert!(times.iter().all(|time| time.timestamp_subsec_nanos() % 1000 == 0), "whole microseconds");
    }

    #[test]
    fn cancelling_before_the_deadline_is_not_late() {
        let starts = at("2026-11-22T18:00:00Z");
        assert!(!is_late_cancellation(at("2026-11-22T14:59:59Z"), starts, 3));
        assert!(is_late_cancellation(at("2026-11-22T15:00:00Z"), starts, 3));
        assert!(is_late_cancellation(at("2026-11-22T17:00:00Z"), starts, 3));
    }

    #[test]
    fn a_zero_hour_deadline_is_the_start_itself() {
        let starts = at("2026-11-22T18:00:00Z");
        assert!(!is_late_cancellation(at("2026-11-22T17:59:59Z"), starts, 0));
        assert!(is_late_cancellation(starts, starts, 0));
    }

    #[test]
    fn a_long_deadline_reaches_back_days() {
        let starts = at("2026-11-22T18:00:00Z");
        assert!(is_late_cancellation(at("2026-11-21T18:00:00Z"), starts, 24));
        assert!(!is_late_cancellation(at("2026-11-21T17:00:00Z"), starts, 24));
    }
}
