//! Accounts: finding one by phone, and the ban check every sign-in path shares. Creating one
//! is [`crate::players::signup`].

use floor_entities::enums::UserStatus;
use floor_entities::users;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};

use crate::domain::Phone;
use crate::error::{AppError, AppResult, ErrorCode};

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
