//! Sessions: the token pair a sign-in starts, refresh-token rotation with reuse detection,
//! and the one way from an access token to the account behind it. Every refresh token
//! belongs to a family (one sign-in); presenting a spent token revokes the whole family, as
//! the OAuth 2.0 security practice advises, since either the holder or a thief has a copy.

use chrono::{DateTime, Utc};
use floor_entities::enums::UserStatus;
use floor_entities::{refresh_tokens, users};
use sea_orm::sea_query::Expr;
use sea_orm::{ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter, Set};
use uuid::Uuid;

use super::tokens::{Claims, JwtKeys, REFRESH_TOKEN_TTL, new_refresh_token, sha256_hex};
use crate::domain::accounts::{ensure_not_banned, hold_account};
use crate::infra::db;
use crate::infra::error::{AppError, AppResult, ErrorCode};

/// What a client keeps after sign-in or refresh.
#[derive(Debug)]
pub struct TokenPair {
    pub access_token: String,
    pub refresh_token: String,
}

/// The account behind an access token: the token must be valid and unexpired, its account
/// must exist, not deleted, and must not be banned. The account is read fresh each time, so a role change
/// or a ban takes effect at once. HTTP requests and Socket.IO handshakes both come here.
pub async fn signed_in_user(db: &DatabaseConnection, jwt: &JwtKeys, token: &str) -> AppResult<users::Model> {
    signed_in(db, jwt, token).await.map(|(user, _)| user)
}

/// [`signed_in_user`] with the token's claims (a live socket ends at their `exp`).
pub async fn signed_in(db: &DatabaseConnection, jwt: &JwtKeys, token: &str) -> AppResult<(users::Model, Claims)> {
    let claims = verified(jwt, token)?;
    let user = users::Entity::find_by_id(claims.sub)
        .one(db)
        .await?
        .filter(|user| user.status != UserStatus::Deleted)
        .ok_or_else(|| AppError::unauthorized("the account of this token no longer exists"))?;
    ensure_not_banned(&user)?;
    Ok((user, claims))
}

/// The claims of a valid, unexpired access token; its account is not read.
pub fn verified(jwt: &JwtKeys, token: &str) -> AppResult<Claims> {
    jwt.verify(token).ok_or_else(|| AppError::unauthorized("the access token is invalid or expired"))
}

/// Starts a new session family for `user` inside the caller's transaction.
pub async fn start(
    jwt: &JwtKeys,
    conn: &impl ConnectionTrait,
    user: &users::Model,
    now: DateTime<Utc>,
) -> AppResult<TokenPair> {
    issue_pair(jwt, conn, user, Uuid::now_v7(), now).await
}

/// Exchanges a live refresh token for a new pair; the presented token is spent.
pub async fn refresh(db: &DatabaseConnection, jwt: &JwtKeys, presented: &str) -> AppResult<TokenPair> {
    let invalid = || AppError::new(ErrorCode::InvalidRefreshToken, "the refresh token is not valid");
    let tx = db::begin_write(db).await?;
    let now = Utc::now();
    let Some(token) = refresh_tokens::Entity::find()
        .filter(refresh_tokens::Column::TokenHash.eq(sha256_hex(presented)))
        .one(&tx)
        .await?
    else {
        return Err(invalid());
    };
    if token.revoked_at.is_some() {
        revoke_family(&tx, token.family_id, now).await?;
        tx.commit().await?;
        tracing::warn!(family = %token.family_id, "a spent refresh token was presented; the session is revoked");
        return Err(invalid());
    }
    if token.expires_at <= now {
        return Err(invalid());
    }
    // The account before the token: a deletion holds it from its start, so a rotation beside
    // it either commits first (and the deletion removes the new token) or finds it deleted.
    let user = match hold_account(&tx, token.user_id).await {
        Ok(user) => user,
        Err(_) => return Err(invalid()),
    };
    // The guarded update is the gate: of two concurrent uses exactly one flips the row.
    let spent = refresh_tokens::Entity::update_many()
        .col_expr(refresh_tokens::Column::RevokedAt, Expr::value(Some(now)))
        .filter(refresh_tokens::Column::Id.eq(token.id))
        .filter(refresh_tokens::Column::RevokedAt.is_null())
        .exec(&tx)
        .await?;
    if spent.rows_affected == 0 {
        revoke_family(&tx, token.family_id, now).await?;
        tx.commit().await?;
        return Err(invalid());
    }
    ensure_not_banned(&user)?;
    let pair = issue_pair(jwt, &tx, &user, token.family_id, now).await?;
    tx.commit().await?;
    Ok(pair)
}

async fn issue_pair(
    jwt: &JwtKeys,
    conn: &impl ConnectionTrait,
    user: &users::Model,
    family_id: Uuid,
    now: DateTime<Utc>,
) -> AppResult<TokenPair> {
    let refresh_token = new_refresh_token();
    refresh_tokens::ActiveModel {
        id: Set(Uuid::now_v7()),
        user_id: Set(user.id),
        family_id: Set(family_id),
        token_hash: Set(sha256_hex(&refresh_token)),
        expires_at: Set(now + REFRESH_TOKEN_TTL),
        revoked_at: Set(None),
        created_at: Set(now),
    }
    .insert(conn)
    .await?;
    let (access_token, _) = jwt.issue(user.id, user.admin_role.is_some(), now)?;
    Ok(TokenPair { access_token, refresh_token })
}

async fn revoke_family(conn: &impl ConnectionTrait, family_id: Uuid, now: DateTime<Utc>) -> AppResult<()> {
    refresh_tokens::Entity::update_many()
        .col_expr(refresh_tokens::Column::RevokedAt, Expr::value(Some(now)))
        .filter(refresh_tokens::Column::FamilyId.eq(family_id))
        .filter(refresh_tokens::Column::RevokedAt.is_null())
        .exec(conn)
        .await?;
    Ok(())
}
