//! Accounts: finding one by phone, the ban check every sign-in path shares, and the locks that
//! keep a write off an account being deleted. Creating one is `players::signup`, deleting one
//! `players::deletion`.
//!
//! A deletion holds the account's row (`FOR NO KEY UPDATE`) from its start to its commit. A
//! write on the account's behalf (its profile, its sessions, its devices, its place in a
//! tournament) takes the same row first ([`lock_account`] for the row itself, [`hold_account`]
//! for rows that name it) and is refused once the account is deleted: it either commits before
//! the deletion, which then erases what it wrote, or finds the account gone. Neither lock
//! conflicts with the key-share lock a foreign key takes, so a transaction that merely inserts a
//! row naming the account (a strike at a tournament's start) never waits on a deletion. The
//! order every transaction takes its locks in is written down in `docs/concurrency.md`.

use floor_entities::enums::UserStatus;
use floor_entities::users;
use sea_orm::sea_query::LockType;
use sea_orm::{ColumnTrait, ConnectionTrait, DatabaseTransaction, EntityTrait, QueryFilter, QuerySelect};
use uuid::Uuid;

use crate::infra::error::{AppError, AppResult, ErrorCode};
use crate::values::Phone;

/// The start of what a deleted account's (or its walk-in records') phone column holds: a
/// placeholder no phone equals, since the column is unique and required.
pub const DELETED_PHONE_PREFIX: &str = "deleted:";

/// The phone kept in a phone column, as staff may see it; `None` for a deleted person's
/// placeholder.
pub fn shown_phone(stored: &str) -> Option<&str> {
    (!stored.starts_with(DELETED_PHONE_PREFIX)).then_some(stored)
}

/// Refuses a banned account with `USER_BANNED`.
pub fn ensure_not_banned(user: &users::Model) -> AppResult<()> {
    if user.status == UserStatus::Banned {
        return Err(AppError::new(ErrorCode::UserBanned, "this account is banned"));
    }
    Ok(())
}

/// The account registered with `phone`, if any.
pub async fn find_user(conn: &impl ConnectionTrait, phone: &Phone) -> AppResult<Option<users::Model>> {
    Ok(users::Entity::find().filter(users::Column::Phone.eq(phone.as_str())).one(conn).await?)
}

/// Locks the account's row for a change of the row itself (its profile, its consent) and
/// returns it as it stands now; `401 UNAUTHORIZED` once it is deleted. Conflicts with a
/// deletion and with another change of the row, not with rows that merely name it.
pub async fn lock_account(tx: &DatabaseTransaction, user_id: Uuid) -> AppResult<users::Model> {
    let account = users::Entity::find_by_id(user_id).lock(LockType::NoKeyUpdate).one(tx).await?;
    not_deleted(account)
}

/// Holds the account's row (shared) for a write that names it (a session, a device, a place),
/// so a deletion cannot run beside it; `401 UNAUTHORIZED` once it is deleted.
pub async fn hold_account(tx: &DatabaseTransaction, user_id: Uuid) -> AppResult<users::Model> {
    let account = users::Entity::find_by_id(user_id).lock_shared().one(tx).await?;
    not_deleted(account)
}

/// The account as a request may act for it, read without a lock: `401 UNAUTHORIZED` once it
/// is deleted, `403 USER_BANNED` while it is banned, as every route refuses one.
pub async fn usable_account(conn: &impl ConnectionTrait, user_id: Uuid) -> AppResult<users::Model> {
    let account = not_deleted(users::Entity::find_by_id(user_id).one(conn).await?)?;
    ensure_not_banned(&account)?;
    Ok(account)
}

fn not_deleted(account: Option<users::Model>) -> AppResult<users::Model> {
    account.filter(|account| account.status != UserStatus::Deleted).ok_or_else(account_gone)
}

/// The refusal of a change on behalf of an account deleted meanwhile.
pub fn account_gone() -> AppError {
    AppError::unauthorized("the account of this token no longer exists")
}
