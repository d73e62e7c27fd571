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

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use floor_entities::enums::{MemberRole, RegistrationStatus, TournamentStatus, UserStatus};
use floor_entities::{
    audit_log, calendar_links, consent_changes, dealer_invites, dealer_profiles, follows, guest_players, notifications,
    organizer_members, organizers, push_tokens, refresh_tokens, registrations, strikes, tournament_dealers,
    tournaments, users,
};
use sea_orm::sea_query::{Alias, Expr, ExprTrait, Func, Query};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, Condition, ConnectionTrait, DatabaseConnection, DatabaseTransaction, EntityTrait,
    PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, Set,
};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::accounts::DELETED_PHONE_PREFIX;
use crate::auth::otp::spend_code;
use crate::domain::Phone;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::notifications::{Journaled, Notifier};
use crate::tournaments::lock;
use crate::tournaments::registrations::{LIVE, fill_free_seats};
use crate::{audit, db};

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
}

/// Spends `code` for `phone` and deletes the account registered with it. A wrong or spent
/// code is `INVALID_OTP` and its attempt counts; with the right code, `SOLE_OWNER` (the only
/// owner of a club) and `PLAYING_NOW` (checked in to a running tournament) refuse, and then
/// nothing changes, the code included. `NOT_FOUND` when no account has the phone (the web
/// page's case: the app's caller always has one).
pub async fn delete_account(
    db: &DatabaseConnection,
    notifier: &Notifier,
    phone: &Phone,
    code: &str,
    asked: Asked,
) -> AppResult<Deleted> {
    let tx = spend_code(db::begin_write(db).await?, phone, code).await?;
    // Held to the end, before any tournament: a registration takes the row first as well
    // (`tournaments::registrations::register`), so none slips in beside the deletion.
    let user = users::Entity::find()
        .filter(users::Column::Phone.eq(phone.as_str()))
        .lock_exclusive()
        .one(&tx)
        .await?
        .ok_or_else(|| AppError::not_found("account"))?;
    ensure_may_delete(&tx, &user).await?;
    let now = Utc::now();
    let (promoted, places_given_back) = give_back_places(&tx, notifier, user.id, now).await?;
    // Accounts merged into this one were the same person's: they go with it.
    let duplicates = merged_into(&tx, user.id).await?;
    let mut avatar_urls = Vec::new();
    for person in std::iter::once(user.clone()).chain(duplicates.iter().cloned()) {
        avatar_urls.extend(person.avatar_url.clone());
        erase_person(&tx, person, now).await?;
    }
    audit::record(
        &tx,
        Some(user.id),
        "user.delete",
        ("user", user.id.to_string()),
        json!({"asked": asked.as_str(), "placesGivenBack": places_given_back,
            "mergedAccounts": duplicates.iter().map(|duplicate| duplicate.id).collect::<Vec<_>>()}),
    )
    .await?;
    tx.commit().await?;
    Ok(Deleted { user_id: user.id, promoted, avatar_urls })
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
    remove_what_is_only_theirs(tx, &account).await?;
    erase_from_audit_details(tx, &account.phone).await?;
    anonymise_guests(tx, account.id).await?;
    anonymise(tx, account, now).await
}

/// Refuses the deletion of the only owner of a club (`SOLE_OWNER`: a club must never be left
/// without one) and of a player checked in to a running tournament (`PLAYING_NOW`: the
/// table and the clock name them until it ends, out or not).
async fn ensure_may_delete(tx: &DatabaseTransaction, user: &users::Model) -> AppResult<()> {
    let owned: Vec<Uuid> = organizer_members::Entity::find()
        .select_only()
        .column(organizer_members::Column::OrganizerId)
        .filter(organizer_members::Column::UserId.eq(user.id))
        .filter(organizer_members::Column::Role.eq(MemberRole::Owner))
        .into_tuple()
        .all(tx)
        .await?;
    for club in owned {
        let owners = organizer_members::Entity::find()
            .filter(organizer_members::Column::OrganizerId.eq(club))
            .filter(organizer_members::Column::Role.eq(MemberRole::Owner))
            .count(tx)
            .await?;
        if owners <= 1 {
            let name = organizers::Entity::find_by_id(club).one(tx).await?.map(|club| club.name).unwrap_or_default();
            return Err(AppError::new(
                ErrorCode::SoleOwner,
                format!("you are the only owner of the club «{name}»: make someone else its owner first"),
            ));
        }
    }
    let playing = registrations::Entity::find()
        .inner_join(tournaments::Entity)
        .filter(registrations::Column::UserId.eq(user.id))
        .filter(registrations::Column::Status.eq(RegistrationStatus::CheckedIn))
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
/// moves each queue up as a cancellation does. Tournaments are locked in id order, as every
/// writer that takes two does. Returns the promotions' notices and how many places went back.
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
    dealer_invites::Entity::delete_many()
        .filter(
            Condition::any()
                .add(dealer_invites::Column::Phone.eq(user.phone.as_str()))
                .add(dealer_invites::Column::ClaimedByUserId.eq(id)),
        )
        .exec(tx)
        .await?;
    let not_over = Query::select()
        .column(tournaments::Column::Id)
        .from(tournaments::Entity)
        .and_where(tournaments::Column::Status.is_in([
            TournamentStatus::Announced,
            TournamentStatus::Registration,
            TournamentStatus::Running,
        ]))
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

/// Audit records name a phone where the phone was the target (a dealer invitation): the
/// erased phone goes from their details, the record stays.
async fn erase_from_audit_details(tx: &DatabaseTransaction, phone: &str) -> AppResult<()> {
    let naming = audit_log::Entity::find()
        .filter(
            Expr::expr(Func::cast_as(Expr::col(audit_log::Column::Details), Alias::new("TEXT")))
                .like(format!("%{phone}%")),
        )
        .all(tx)
        .await?;
    for record in naming {
        let details = without_string(record.details.clone(), phone);
        let mut active: audit_log::ActiveModel = record.into();
        active.details = Set(details);
        active.update(tx).await?;
    }
    Ok(())
}

/// `value` with every string equal to `erased` replaced by `null`.
fn without_string(value: Value, erased: &str) -> Value {
    match value {
        Value::String(text) if text == erased => Value::Null,
        Value::Array(items) => Value::Array(items.into_iter().map(|item| without_string(item, erased)).collect()),
        Value::Object(fields) => {
            Value::Object(fields.into_iter().map(|(key, item)| (key, without_string(item, erased))).collect())
        }
        other => other,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_erased_phone_leaves_the_details_wherever_it_stands() {
        let details = json!({"phone": "+79990001122", "others": ["+79990001122", "+79990003344"], "n": 1,
            "nested": {"to": "+79990001122"}});
        assert_eq!(
            without_string(details, "+79990001122"),
            json!({"phone": null, "others": [null, "+79990003344"], "n": 1, "nested": {"to": null}})
        );
    }
}
