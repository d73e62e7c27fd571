//! Accounts: finding one by phone, and the ban check every sign-in path shares. Creating one
//! is `players::signup`, deleting one `players::deletion`.

use floor_entities::enums::UserStatus;
use floor_entities::users;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};

use crate::domain::Phone;
use crate::error::{AppError, AppResult, ErrorCode};

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
