//! Deleting an account, as its owner asks (`POST /me/delete`, or the page `/account/delete`
//! without the app). A fresh code for the owner's phone allows it, so a stolen token alone
//! cannot erase a person. In one transaction: the person's sessions, devices, calendar feed,
//! follows, dealer profile and invitations, club memberships, notifications, consent records
//! and strikes go; places in tournaments not yet started are given back (no strike; the queue
//! moves up as on any cancellation); the phone, names, nickname, avatar and city are erased.
//! What others rely on stays: results and eliminations of played tournaments keep their
//! places under [`DELETED_PLAYER`], and nobody else's rating changes. The row itself stays,
//! status `deleted`, for those results to point at; it never signs in again, and the same
//! phone later signs up as a new person.

use std::collections::{BTreeSet, HashSet};

use chrono::{DateTime, Utc};
use floor_entities::enums::{MemberRole, RegistrationStatus, TournamentStatus, UserStatus};
use floor_entities::{
    audit_log, calendar_links, consent_changes, dealer_invites, dealer_profiles, follows, guest_players, notifications,
    organizer_members, organizers, player_profiles, push_tokens, refresh_tokens, registrations, strikes, table_seats,
    tournament_dealers, tournaments, users,
};
use sea_orm::sea_query::{LockType, Query};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, Condition, ConnectionTrait, DatabaseConnection, DatabaseTransaction, EntityTrait,
    PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, Set,
};
use serde_json::json;
use uuid::Uuid;

use crate::domain::accounts::{DELETED_PHONE_PREFIX, ensure_not_banned};
use crate::domain::auth::otp::spend_code;
use crate::domain::erasures::Erasures;
use crate::domain::notifications::{Journaled, Notifier};
use crate::domain::tournaments::lifecycle::advance_live_versions;
use crate::domain::tournaments::lock;
use crate::domain::tournaments::registrations::{LIVE, fill_free_seats};
use crate::domain::{audit, clubs, erasures};
use crate::infra::db;
use crate::infra::error::{AppError, AppResult, ErrorCode};
use crate::values::Phone;

/// Tournament statuses in which a place is still to be played or playing.
const NOT_OVER: [TournamentStatus; 3] =
    [TournamentStatus::Announced, TournamentStatus::Registration, TournamentStatus::Running];

/// The name a deleted account's places are shown under, in results and eliminations.
pub const DELETED_PLAYER: &str = "Удалённый игрок";

/// The page at the bare origin where a person asks for the deletion without the app: the
/// address the store listings give.
pub const PAGE_ROUTE: &str = "/account/delete";

/// Where the owner asked for the deletion, for the audit log.
#[derive(Clone, Copy, Debug)]
pub enum Asked {
    /// `POST /me/delete`, signed in.
    InTheApp,
    /// The page `/account/delete`, with the phone and its code only.
    OnTheWeb,
}

impl Asked {
    fn as_str(self) -> &'static str {
        match self {
            Self::InTheApp => "app",
            Self::OnTheWeb => "web",
        }
    }
}

/// What is left to do once the deletion has committed.
#[must_use]
pub struct Deleted {
    pub user_id: Uuid,
    /// The notices of players the queue moved up into freed seats, to push.
    pub promoted: Vec<Journaled>,
    /// The avatar addresses the account (and any merged into it) had: uploaded files
    /// (`/files/<key>`) are removed.
    pub avatar_urls: Vec<String>,
    /// The tournaments whose live picture named the person, each at the version that no longer
    /// does: every node holding one reads it again and tells its watchers.
    pub restated: Vec<(Uuid, i64)>,
}

/// Spends `code` for `phone` and deletes the account registered with it. A wrong or spent
/// code is `INVALID_OTP` and its attempt counts; with the right code, `USER_BANNED` (a banned
/// account), `SOLE_OWNER` (the only owner of a club) and `PLAYING_NOW` (seated in a running
/// tournament and not eliminated) refuse, and then nothing changes, the code included. `NOT_FOUND` when
/// no account has the phone (the web page's case: the app's caller always has one).
///
/// Locks, in the order every writer takes them (`docs/concurrency.md`): the phone (spending
/// the code), the account's row, the staff lock of each club it belongs to, then each
/// tournament it holds a place in or sat at, by id. Every check is made once those are held,
/// so a demotion, a removal or a tournament's start cannot slip in between a check and the
/// change it allows.
pub async fn delete_account(
    db: &DatabaseConnection,
    counted: &Erasures,
    notifier: &Notifier,
    phone: &Phone,
    code: &str,
    asked: Asked,
) -> AppResult<Deleted> {
    let tx = spend_code(db::begin_write(db).await?, phone, code).await?;
    // Held to the end. Every write on the account's behalf takes the row first
    // (`accounts::hold_account`), so none slips in beside the deletion; a row that merely names
    // the account (a strike at a tournament's start) takes the foreign key's share lock, which
    // this does not block, so such a transaction never waits on the deletion in a circle.
    let user = users::Entity::find()
        .filter(users::Column::Phone.eq(phone.as_str()))
        .lock(LockType::NoKeyUpdate)
        .one(&tx)
        .await?
        .ok_or_else(|| AppError::not_found("account"))?;
    ensure_not_banned(&user)?;
    // Accounts merged into this one were the same person's: they go with it.
    let duplicates = merged_into(&tx, user.id).await?;
    let people: Vec<Uuid> = std::iter::once(user.id).chain(duplicates.iter().map(|duplicate| duplicate.id)).collect();
    ensure_clubs_keep_an_owner(&tx, user.id).await?;
    let shown_at = lock_tournaments(&tx, &people).await?;
    ensure_not_playing(&tx, user.id).await?;
    let now = Utc::now();
    let (promoted, places_given_back) = give_back_places(&tx, notifier, user.id, now).await?;
    let mut avatar_urls = Vec::new();
    for person in std::iter::once(user.clone()).chain(duplicates.iter().cloned()) {
        avatar_urls.extend(person.avatar_url.clone());
        erase_person(&tx, person, now).await?;
    }
    // Every picture of a game that showed the person shows «Удалённый игрок» now, as a new
    // version: a client holding the old one (its `ETag`) gets the new one, not `304`.
    let restated = advance_live_versions(&tx, &shown_at, now).await?;
    // And every kept answer naming people (a leaderboard) is built again before it is served
    // anywhere, whatever reaches the other nodes.
    erasures::record(&tx).await?;
    audit::record(
        &tx,
        Some(user.id),
        "user.delete",
        ("user", user.id.to_string()),
        json!({"asked": asked.as_str(), "placesGivenBack": places_given_back,
            "mergedAccounts": duplicates.iter().map(|duplicate| duplicate.id).collect::<Vec<_>>()}),
    )
    .await?;
    let committed = tx.commit().await;
    counted.erased_here();
    committed?;
    Ok(Deleted { user_id: user.id, promoted, avatar_urls, restated })
}

/// Every account merged into `main`, directly or through another merged one.
async fn merged_into(tx: &DatabaseTransaction, main: Uuid) -> AppResult<Vec<users::Model>> {
    let mut seen = HashSet::from([main]);
    let mut found: Vec<users::Model> = Vec::new();
    let mut mains = vec![main];
    while !mains.is_empty() {
        let merged = users::Entity::find()
            .filter(users::Column::MergedIntoUserId.is_in(mains))
            .filter(users::Column::Status.ne(UserStatus::Deleted))
            .all(tx)
            .await?;
        // Each account once, even were merges ever to form a loop.
        let new: Vec<users::Model> = merged.into_iter().filter(|account| seen.insert(account.id)).collect();
        mains = new.iter().map(|account| account.id).collect();
        found.extend(new);
    }
    Ok(found)
}

/// Removes what concerned the person of `account` alone and erases them from what stays.
async fn erase_person(tx: &DatabaseTransaction, account: users::Model, now: DateTime<Utc>) -> AppResult<()> {
    erase_phone_from_invitations(tx, &account).await?;
    keep_ban_past_deletion(tx, &account, now).await?;
    remove_what_is_only_theirs(tx, &account).await?;
    anonymise_guests(tx, account.id).await?;
    anonymise(tx, account, now).await
}

/// A registration ban running on the account stays with its phone until it ends: deleting the
/// account and signing up again does not lift it.
async fn keep_ban_past_deletion(tx: &DatabaseTransaction, account: &users::Model, now: DateTime<Utc>) -> AppResult<()> {
    let ban_until = player_profiles::Entity::find_by_id(account.id).one(tx).await?.and_then(|p| p.ban_until);
    crate::domain::strikes::keep_ban_for_phone(tx, &account.phone, ban_until, now).await
}

/// Refuses the deletion of the only owner of a club (`SOLE_OWNER`: a club must never be left
/// without one). Takes the staff lock of every club the account belongs to, in id order, as
/// every change of a club's staff does, and counts the other owners under it: two co-owners
/// deleting their accounts at once, or a deletion beside a demotion, cannot both see "another
/// owner remains".
async fn ensure_clubs_keep_an_owner(tx: &DatabaseTransaction, user_id: Uuid) -> AppResult<()> {
    let clubs: Vec<Uuid> = organizer_members::Entity::find()
        .select_only()
        .column(organizer_members::Column::OrganizerId)
        .filter(organizer_members::Column::UserId.eq(user_id))
        .order_by_asc(organizer_members::Column::OrganizerId)
        .into_tuple()
        .all(tx)
        .await?;
    for club in &clubs {
        clubs::lock_members(tx, *club).await?;
    }
    for club in clubs {
        // Read under the lock: the role may have changed since the list was read.
        let owner = clubs::find_membership(tx, club, user_id).await?.is_some_and(|m| m.role == MemberRole::Owner);
        if owner && clubs::owner_count(tx, club).await? <= 1 {
            let name = organizers::Entity::find_by_id(club).one(tx).await?.map(|club| club.name).unwrap_or_default();
            return Err(AppError::new(
                ErrorCode::SoleOwner,
                format!("you are the only owner of the club «{name}»: make someone else its owner first"),
            ));
        }
    }
    Ok(())
}

/// Locks, in id order, every tournament where one of `people` holds a live place and that is
/// not over (its place is given back, or it plays now), and every one whose live picture shows
/// them (they sat at its tables). Returns the latter: their pictures change.
async fn lock_tournaments(tx: &DatabaseTransaction, people: &[Uuid]) -> AppResult<Vec<Uuid>> {
    let placed: Vec<Uuid> = registrations::Entity::find()
        .select_only()
        .column(registrations::Column::TournamentId)
        .inner_join(tournaments::Entity)
        .filter(registrations::Column::UserId.is_in(people.iter().copied()))
        .filter(registrations::Column::Status.is_in(LIVE))
        .filter(tournaments::Column::Status.is_in(NOT_OVER))
        .into_tuple()
        .all(tx)
        .await?;
    let shown_at = tournaments_showing(tx, people).await?;
    let all: BTreeSet<Uuid> = placed.into_iter().chain(shown_at.iter().copied()).collect();
    for chunk in all.into_iter().collect::<Vec<_>>().chunks(db::IDS_PER_STATEMENT) {
        tournaments::Entity::find()
            .filter(tournaments::Column::Id.is_in(chunk.iter().copied()))
            .order_by_asc(tournaments::Column::Id)
            .lock_exclusive()
            .all(tx)
            .await?;
    }
    Ok(shown_at)
}

/// The tournaments whose live picture names one of `people`: those where a place of theirs,
/// or of a walk-in record they took over, was seated.
async fn tournaments_showing(tx: &DatabaseTransaction, people: &[Uuid]) -> AppResult<Vec<Uuid>> {
    let guests = Query::select()
        .column(guest_players::Column::Id)
        .from(guest_players::Entity)
        .and_where(guest_players::Column::ClaimedByUserId.is_in(people.iter().copied()))
        .to_owned();
    let theirs = Condition::any()
        .add(registrations::Column::UserId.is_in(people.iter().copied()))
        .add(registrations::Column::GuestId.in_subquery(guests));
    Ok(table_seats::Entity::find()
        .select_only()
        .column(table_seats::Column::TournamentId)
        .distinct()
        .inner_join(registrations::Entity)
        .filter(theirs)
        .into_tuple()
        .all(tx)
        .await?)
}

/// Refuses the deletion of a player still in a running tournament (`PLAYING_NOW`): seated at
/// its start (checked in) and not eliminated, a seat at a table is theirs until they are out.
/// A player already out has played: the deletion goes on as after the game, their place kept
/// under [`DELETED_PLAYER`]. Asked once the tournaments are locked, so neither a start nor an
/// undone elimination can seat them between the check and the deletion.
async fn ensure_not_playing(tx: &DatabaseTransaction, user_id: Uuid) -> AppResult<()> {
    let playing = registrations::Entity::find()
        .inner_join(tournaments::Entity)
        .filter(registrations::Column::UserId.eq(user_id))
        .filter(registrations::Column::Status.eq(RegistrationStatus::CheckedIn))
        .filter(registrations::Column::EliminatedAt.is_null())
        .filter(tournaments::Column::Status.eq(TournamentStatus::Running))
        .count(tx)
        .await?;
    if playing > 0 {
        return Err(AppError::new(
            ErrorCode::PlayingNow,
            "you are playing in a running tournament: delete the account after it ends",
        ));
    }
    Ok(())
}

/// Cancels every live place of `user_id` in tournaments not yet started, with no strike, and
/// moves each queue up as a cancellation does. The tournaments are locked already
/// ([`lock_tournaments`]), so what is read here stands. Returns the promotions' notices and
/// how many places went back.
async fn give_back_places(
    tx: &DatabaseTransaction,
    notifier: &Notifier,
    user_id: Uuid,
    now: DateTime<Utc>,
) -> AppResult<(Vec<Journaled>, usize)> {
    let places = registrations::Entity::find()
        .inner_join(tournaments::Entity)
        .filter(registrations::Column::UserId.eq(user_id))
        .filter(registrations::Column::Status.is_in(LIVE))
        .filter(tournaments::Column::Status.is_in([TournamentStatus::Announced, TournamentStatus::Registration]))
        .order_by_asc(registrations::Column::TournamentId)
        .all(tx)
        .await?;
    let mut promoted = Vec::new();
    let given_back = places.len();
    for place in places {
        let tournament = lock(tx, place.tournament_id).await?;
        let mut active: registrations::ActiveModel = place.into();
        active.status = Set(RegistrationStatus::Cancelled);
        active.cancelled_at = Set(Some(now));
        active.updated_at = Set(now);
        active.update(tx).await?;
        promoted.extend(fill_free_seats(tx, notifier, &tournament, None).await?);
    }
    Ok((promoted, given_back))
}

/// Deletes the rows that concern the person alone: sessions, devices, the calendar feed,
/// follows both ways, the dealer profile, invitations to their phone or claimed by them,
/// dealer assignments to tournaments not yet over, club memberships, notifications, consent
/// records and strikes.
async fn remove_what_is_only_theirs(tx: &DatabaseTransaction, user: &users::Model) -> AppResult<()> {
    let id = user.id;
    refresh_tokens::Entity::delete_many().filter(refresh_tokens::Column::UserId.eq(id)).exec(tx).await?;
    push_tokens::Entity::delete_many().filter(push_tokens::Column::UserId.eq(id)).exec(tx).await?;
    calendar_links::Entity::delete_many().filter(calendar_links::Column::UserId.eq(id)).exec(tx).await?;
    follows::Entity::delete_many()
        .filter(Condition::any().add(follows::Column::FollowerId.eq(id)).add(follows::Column::FolloweeId.eq(id)))
        .exec(tx)
        .await?;
    dealer_profiles::Entity::delete_many().filter(dealer_profiles::Column::UserId.eq(id)).exec(tx).await?;
    dealer_invites::Entity::delete_many().filter(invited(user)).exec(tx).await?;
    let not_over = Query::select()
        .column(tournaments::Column::Id)
        .from(tournaments::Entity)
        .and_where(tournaments::Column::Status.is_in(NOT_OVER))
        .to_owned();
    tournament_dealers::Entity::delete_many()
        .filter(tournament_dealers::Column::DealerUserId.eq(id))
        .filter(tournament_dealers::Column::TournamentId.in_subquery(not_over))
        .exec(tx)
        .await?;
    organizer_members::Entity::delete_many().filter(organizer_members::Column::UserId.eq(id)).exec(tx).await?;
    notifications::Entity::delete_many().filter(notifications::Column::UserId.eq(id)).exec(tx).await?;
    consent_changes::Entity::delete_many().filter(consent_changes::Column::UserId.eq(id)).exec(tx).await?;
    strikes::Entity::delete_many().filter(strikes::Column::UserId.eq(id)).exec(tx).await?;
    Ok(())
}

/// The one kind of audit record that names a phone is an invitation's (`dealer_invite.create`,
/// whose target is the invitation): the records of the invitations to the person's phone, or
/// claimed by them, lose their phone; the records stay. Found by their target, through its
/// index, before the invitations themselves go.
async fn erase_phone_from_invitations(tx: &DatabaseTransaction, account: &users::Model) -> AppResult<()> {
    let invitations: Vec<Uuid> = dealer_invites::Entity::find()
        .select_only()
        .column(dealer_invites::Column::Id)
        .filter(invited(account))
        .into_tuple()
        .all(tx)
        .await?;
    let targets: Vec<String> = invitations.iter().map(Uuid::to_string).collect();
    for chunk in targets.chunks(db::IDS_PER_STATEMENT) {
        let naming = audit_log::Entity::find()
            .filter(audit_log::Column::TargetType.eq(audit::DEALER_INVITE))
            .filter(audit_log::Column::TargetId.is_in(chunk.iter().cloned()))
            .all(tx)
            .await?;
        for record in naming {
            let details = audit::without_phones(record.details.clone());
            let mut active: audit_log::ActiveModel = record.into();
            active.details = Set(details);
            active.update(tx).await?;
        }
    }
    Ok(())
}

/// The invitations to the account's phone, or claimed by it.
fn invited(account: &users::Model) -> Condition {
    Condition::any()
        .add(dealer_invites::Column::Phone.eq(account.phone.as_str()))
        .add(dealer_invites::Column::ClaimedByUserId.eq(account.id))
}

/// The walk-in records this account took over keep their places under the neutral name; the
/// phone they were written down with is erased.
async fn anonymise_guests(tx: &DatabaseTransaction, user_id: Uuid) -> AppResult<()> {
    let guests =
        guest_players::Entity::find().filter(guest_players::Column::ClaimedByUserId.eq(user_id)).all(tx).await?;
    for guest in guests {
        let placeholder = format!("{DELETED_PHONE_PREFIX}{}", guest.id);
        let mut active: guest_players::ActiveModel = guest.into();
        active.phone = Set(placeholder);
        active.name = Set(DELETED_PLAYER.to_owned());
        active.update(tx).await?;
    }
    Ok(())
}

/// Erases the account's person and marks it deleted. Its phone column, unique and required,
/// takes a placeholder that no phone can equal, so the phone is free to sign up afresh.
async fn anonymise(conn: &impl ConnectionTrait, user: users::Model, now: DateTime<Utc>) -> AppResult<()> {
    let placeholder = format!("{DELETED_PHONE_PREFIX}{}", user.id);
    let mut active: users::ActiveModel = user.into();
    active.phone = Set(placeholder);
    active.name = Set(Some(DELETED_PLAYER.to_owned()));
    active.nickname = Set(None);
    active.avatar_url = Set(None);
    active.city_slug = Set(None);
    active.consent_accepted_at = Set(None);
    active.consent_version = Set(None);
    active.admin_role = Set(None);
    active.status = Set(UserStatus::Deleted);
    active.deleted_at = Set(Some(now));
    active.updated_at = Set(now);
    active.update(conn).await?;
    Ok(())
}
