//! Sign-in and sign-up: a spent code signs its phone in, and the first time makes the account,
//! with its empty player profile, which takes over what that phone did as a guest: the guests
//! seated under it, their registrations (so one person never holds two places in a
//! tournament) and their results.

use chrono::Utc;
use floor_entities::enums::{AdminRole, UserStatus};
use floor_entities::{guest_players, player_profiles, rating_config, users};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, DatabaseTransaction, EntityTrait, QueryFilter,
    QuerySelect, Set,
};
use uuid::Uuid;

use crate::domain::accounts::{ensure_not_banned, find_user};
use crate::domain::auth::SignIn;
use crate::domain::auth::otp::spend_code;
use crate::domain::auth::sessions::{self, TokenPair};
use crate::domain::seed::DEFAULT_SKILL_INITIAL;
use crate::domain::tournaments::registrations::claim_guest_registrations;
use crate::domain::tournaments::results::claim_guest_results;
use crate::infra::db;
use crate::infra::error::AppResult;
use crate::values::Phone;

/// A successful sign-in.
#[derive(Debug)]
pub struct SignedIn {
    pub tokens: TokenPair,
    pub user: users::Model,
    pub is_new_user: bool,
}

/// Spends `code` for `phone` and signs the person in, creating the account on first sign-in.
/// A phone of `PLATFORM_ADMIN_PHONES` gets `super_admin` each time; a banned account is
/// refused after its attempt is spent.
pub async fn sign_in(db: &DatabaseConnection, sign_in: &SignIn, phone: &Phone, code: &str) -> AppResult<SignedIn> {
    let tx = spend_code(db::begin_write(db).await?, phone, code).await?;
    let now = Utc::now();
    let (mut user, is_new_user) = match find_user(&tx, phone).await? {
        Some(user) => (user, false),
        None => (create_account(&tx, phone).await?, true),
    };
    let platform_admin = sign_in.platform_admin_phones.contains(phone);
    if platform_admin && user.admin_role != Some(AdminRole::SuperAdmin) {
        let mut active: users::ActiveModel = user.into();
        active.admin_role = Set(Some(AdminRole::SuperAdmin));
        active.updated_at = Set(now);
        user = active.update(&tx).await?;
    }
    if let Err(banned) = ensure_not_banned(&user) {
        tx.commit().await?;
        return Err(banned);
    }
    let tokens = sessions::start(&sign_in.jwt, &tx, &user, now).await?;
    tx.commit().await?;
    Ok(SignedIn { tokens, user, is_new_user })
}

/// The account with `phone`, created (with its profile) when missing. Takes the phone's
/// lock, so two concurrent callers get the same account instead of a unique-key failure.
pub async fn find_or_create_account(tx: &DatabaseTransaction, phone: &Phone) -> AppResult<users::Model> {
    db::lock_key(tx, &Phone::lock_key(phone.as_str())).await?;
    match find_user(tx, phone).await? {
        Some(user) => Ok(user),
        None => create_account(tx, phone).await,
    }
}

/// Creates a user with an empty player profile (under the registration ban a deleted account
/// of the same phone left running); the guests seated with this phone become its, with their
/// places (the same registration rows) and their results.
pub async fn create_account(conn: &impl ConnectionTrait, phone: &Phone) -> AppResult<users::Model> {
    let now = Utc::now();
    let user = users::ActiveModel {
        id: Set(Uuid::now_v7()),
        phone: Set(phone.to_string()),
        name: Set(None),
        nickname: Set(None),
        avatar_url: Set(None),
        city_slug: Set(None),
        consent_accepted_at: Set(None),
        consent_version: Set(None),
        admin_role: Set(None),
        status: Set(UserStatus::Active),
        merged_into_user_id: Set(None),
        deleted_at: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(conn)
    .await?;
    let skill_initial =
        rating_config::Entity::find().one(conn).await?.map_or(DEFAULT_SKILL_INITIAL, |config| config.skill_initial);
    player_profiles::ActiveModel {
        user_id: Set(user.id),
        xp: Set(0),
        level: Set(1),
        skill: Set(skill_initial),
        games_played: Set(0),
        wins: Set(0),
        // A ban the phone's previous, deleted account was under runs on.
        ban_until: Set(crate::domain::strikes::ban_kept_for_phone(conn, phone.as_str(), now).await?),
        updated_at: Set(now),
    }
    .insert(conn)
    .await?;
    let guests: Vec<Uuid> = guest_players::Entity::find()
        .select_only()
        .column(guest_players::Column::Id)
        .filter(guest_players::Column::Phone.eq(phone.as_str()))
        .filter(guest_players::Column::ClaimedByUserId.is_null())
        .into_tuple()
        .all(conn)
        .await?;
    if !guests.is_empty() {
        guest_players::Entity::update_many()
            .col_expr(guest_players::Column::ClaimedByUserId, Expr::value(Some(user.id)))
            .filter(guest_players::Column::Id.is_in(guests.iter().copied()))
            .exec(conn)
            .await?;
        claim_guest_registrations(conn, user.id, &guests).await?;
        claim_guest_results(conn, user.id, &guests).await?;
    }
    Ok(user)
}
