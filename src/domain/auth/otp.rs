//! One-time codes: issuing one under the per-phone limit, and spending one for the change it
//! allows (a sign-in, a deletion). Each step's check and write run in one transaction under a
//! per-phone lock, so parallel requests can neither exceed the limit nor spend more attempts
//! than allowed.

use anyhow::anyhow;
use chrono::{Duration, Utc};
use floor_entities::otp_codes;
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, DatabaseConnection, DatabaseTransaction, EntityTrait, PaginatorTrait, QueryFilter,
    QueryOrder, Set,
};
use uuid::Uuid;

use super::tokens::sha256_hex;
use crate::domain::accounts::{ensure_not_banned, find_user};

use super::SignIn;
use crate::infra::db;
use crate::infra::error::{AppError, AppResult, ErrorCode};
use crate::values::Phone;

/// How long a code lives.
pub const CODE_TTL: Duration = Duration::minutes(5);
/// At most this many codes per phone within [`REQUEST_WINDOW`].
pub const MAX_REQUESTS_PER_WINDOW: u64 = 3;
pub const REQUEST_WINDOW: Duration = Duration::minutes(10);
/// Verification attempts a code allows; past them it is dead.
pub const MAX_ATTEMPTS: i32 = 5;

/// A code on its way to the player.
#[derive(Debug)]
pub struct CodeSent {
    /// The channel that took it.
    pub channel: &'static str,
    pub expires_in_sec: i64,
}

/// Issues a code for `phone` and hands it to the first delivery channel that takes it. A
/// number that is not a mobile (see [`Phone::receives_codes`]) is refused before anything is
/// stored or sent: a cheap filter against SMS pumping.
pub async fn request_code(db: &DatabaseConnection, sign_in: &SignIn, phone: &Phone) -> AppResult<CodeSent> {
    if !phone.receives_codes() {
        return Err(AppError::invalid_field(
            "phone",
            format!("is {}: sign-in codes go only to mobile numbers", phone.kind_in_words()),
        ));
    }
    if let Some(user) = find_user(db, phone).await? {
        ensure_not_banned(&user)?;
    }
    let code = six_digit_code();

    let tx = db::begin_write(db).await?;
    db::lock_key(&tx, &Phone::lock_key(phone.as_str())).await?;
    let now = Utc::now();
    forget_old_codes(&tx, now).await?;
    let recent = otp_codes::Entity::find()
        .filter(otp_codes::Column::Phone.eq(phone.as_str()))
        .filter(otp_codes::Column::CreatedAt.gt(now - REQUEST_WINDOW))
        .count(&tx)
        .await?;
    if recent >= MAX_REQUESTS_PER_WINDOW {
        return Err(AppError::new(
            ErrorCode::OtpRateLimited,
            "at most 3 codes per phone in 10 minutes; try again later",
        ));
    }
    let row = otp_codes::ActiveModel {
        id: Set(Uuid::now_v7()),
        phone: Set(phone.to_string()),
        code_hash: Set(sha256_hex(&code)),
        expires_at: Set(now + CODE_TTL),
        attempts: Set(0),
        consumed_at: Set(None),
        created_at: Set(now),
    }
    .insert(&tx)
    .await?;
    tx.commit().await?;

    // Delivery talks to the outside world, so it runs after the lock is released.
    match sign_in.codes.deliver(phone.as_str(), &code).await {
        Ok(channel) => Ok(CodeSent { channel, expires_in_sec: CODE_TTL.num_seconds() }),
        Err(failed) => {
            // Nothing reached the player: the code must not count against the limit.
            otp_codes::Entity::delete_by_id(row.id).exec(db).await?;
            Err(AppError::Internal(anyhow!(failed).context("no channel delivered the sign-in code")))
        }
    }
}

/// Spends one attempt of the phone's latest live code, under the phone's lock in `tx`. When
/// `code` matches, the code is used up and `tx` comes back for the caller's change (a sign-in,
/// a deletion), which commits with it. When it does not, the spent attempt is committed on its
/// own, since it must stick although the request fails, and the answer is `INVALID_OTP`.
pub async fn spend_code(tx: DatabaseTransaction, phone: &Phone, code: &str) -> AppResult<DatabaseTransaction> {
    db::lock_key(&tx, &Phone::lock_key(phone.as_str())).await?;
    let now = Utc::now();
    forget_old_codes(&tx, now).await?;
    let invalid = || AppError::new(ErrorCode::InvalidOtp, "the code is wrong, expired or used up");

    let Some(live) = otp_codes::Entity::find()
        .filter(otp_codes::Column::Phone.eq(phone.as_str()))
        .filter(otp_codes::Column::ConsumedAt.is_null())
        .filter(otp_codes::Column::ExpiresAt.gt(now))
        .order_by_desc(otp_codes::Column::CreatedAt)
        .one(&tx)
        .await?
    else {
        return Err(invalid());
    };
    if live.attempts >= MAX_ATTEMPTS {
        return Err(invalid());
    }
    let matches = live.code_hash == sha256_hex(code);
    let mut attempt = otp_codes::Entity::update_many()
        .col_expr(otp_codes::Column::Attempts, Expr::col(otp_codes::Column::Attempts).add(1))
        .filter(otp_codes::Column::Id.eq(live.id));
    if matches {
        attempt = attempt.col_expr(otp_codes::Column::ConsumedAt, Expr::value(Some(now)));
    }
    attempt.exec(&tx).await?;
    if !matches {
        tx.commit().await?;
        return Err(invalid());
    }
    Ok(tx)
}

/// Deletes every phone's codes made [`REQUEST_WINDOW`] ago or earlier: dead by then (a code
/// lives [`CODE_TTL`]) and no longer counted by the limit, so they would only keep a phone
/// number. Run at every code request and every check of a live code; it needs no lock, since
/// nothing reads those rows any more.
async fn forget_old_codes(tx: &DatabaseTransaction, now: chrono::DateTime<Utc>) -> AppResult<()> {
    otp_codes::Entity::delete_many().filter(otp_codes::Column::CreatedAt.lte(now - REQUEST_WINDOW)).exec(tx).await?;
    Ok(())
}

/// A code as typed: six digits, surrounding blanks ignored.
pub fn parse_code(code: &str) -> AppResult<&str> {
    let code = code.trim();
    if code.len() != 6 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return Err(AppError::invalid_field("code", "must be six digits"));
    }
    Ok(code)
}

/// Six decimal digits from the thread's cryptographic generator, leading zeros kept.
fn six_digit_code() -> String {
    format!("{:06}", rand::random_range(0..1_000_000u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_six_digits() {
        for _ in 0..1000 {
            let code = six_digit_code();
            assert_eq!(code.len(), 6);
            assert!(code.bytes().all(|b| b.is_ascii_digit()));
        }
    }

    #[test]
    fn the_limits_are_the_specs() {
        assert_eq!(CODE_TTL, Duration::minutes(5));
        assert_eq!(MAX_REQUESTS_PER_WINDOW, 3);
        assert!(CODE_TTL < REQUEST_WINDOW, "a code is dead before it is forgotten");
        assert_eq!(REQUEST_WINDOW, Duration::minutes(10));
        assert_eq!(MAX_ATTEMPTS, 5);
    }
}
