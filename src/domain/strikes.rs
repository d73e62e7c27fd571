//! Strikes and the registration ban as stored: issuing a strike and forgiving one, each
//! recomputing the ban under a row lock on the player's profile (the arithmetic is the pure
//! `rules::strikes`), and the ban that outlives a deleted account for its phone.

use chrono::{DateTime, Utc};
use floor_actors::rules::strikes::SanctionRules;
use floor_entities::enums::StrikeReason;
use floor_entities::{phone_bans, player_profiles, rating_config, strikes};
use sea_orm::sea_query::OnConflict;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseTransaction, EntityTrait, QueryFilter, QuerySelect, Set,
};
use uuid::Uuid;

use crate::domain::auth::tokens::sha256_hex;
use crate::infra::error::{AppError, AppResult, ErrorCode};

/// The spec's defaults, for a database whose configuration row was lost.
const DEFAULT_RULES: SanctionRules = SanctionRules { strikes_to_ban: 2, strike_window_days: 30, ban_days: 14 };

/// The platform's current sanction settings.
pub async fn sanction_rules(conn: &impl ConnectionTrait) -> AppResult<SanctionRules> {
    Ok(rating_config::Entity::find().one(conn).await?.map_or(DEFAULT_RULES, |config| SanctionRules {
        strikes_to_ban: u32::try_from(config.strikes_to_ban).unwrap_or(DEFAULT_RULES.strikes_to_ban),
        strike_window_days: i64::from(config.strike_window_days),
        ban_days: i64::from(config.ban_days),
    }))
}

/// Locks the player's profile for the rest of `tx`, so strikes and ban change one at a time.
async fn lock_profile(tx: &DatabaseTransaction, user_id: Uuid) -> AppResult<player_profiles::Model> {
    player_profiles::Entity::find_by_id(user_id)
        .lock_exclusive()
        .one(tx)
        .await?
        .ok_or_else(|| AppError::Internal(anyhow::anyhow!("user {user_id} has no player profile")))
}

/// The creation times of the player's unforgiven strikes.
async fn unforgiven_strike_times(tx: &DatabaseTransaction, user_id: Uuid) -> AppResult<Vec<DateTime<Utc>>> {
    Ok(strikes::Entity::find()
        .select_only()
        .column(strikes::Column::CreatedAt)
        .filter(strikes::Column::UserId.eq(user_id))
        .filter(strikes::Column::ForgivenAt.is_null())
        .into_tuple()
        .all(tx)
        .await?)
}

async fn set_ban(
    tx: &DatabaseTransaction,
    profile: player_profiles::Model,
    ban: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> AppResult<()> {
    if profile.ban_until != ban {
        let mut active: player_profiles::ActiveModel = profile.into();
        active.ban_until = Set(ban);
        active.updated_at = Set(now);
        active.update(tx).await?;
    }
    Ok(())
}

/// Issues a strike for `registration_id` and bans the player when the threshold is reached.
/// A no-show strike is issued at most once per registration (the unique partial index);
/// a late cancellation earns one each time, since a re-registration reuses the row.
pub async fn issue(
    tx: &DatabaseTransaction,
    user_id: Uuid,
    tournament_id: Uuid,
    registration_id: Uuid,
    reason: StrikeReason,
    now: DateTime<Utc>,
) -> AppResult<()> {
    let rules = sanction_rules(tx).await?;
    let profile = lock_profile(tx, user_id).await?;
    let strike = strikes::ActiveModel {
        id: Set(Uuid::now_v7()),
        user_id: Set(user_id),
        tournament_id: Set(tournament_id),
        registration_id: Set(registration_id),
        reason: Set(reason),
        created_at: Set(now),
        forgiven_at: Set(None),
        forgiven_by_user_id: Set(None),
    };
    strikes::Entity::insert(strike)
        .on_conflict(OnConflict::new().do_nothing().to_owned())
        .exec_without_returning(tx)
        .await?;
    let times = unforgiven_strike_times(tx, user_id).await?;
    let ban = rules.ban_after_strike(&times, now, profile.ban_until);
    set_ban(tx, profile, ban, now).await
}

/// Forgives a strike and recomputes the ban: lifted when the active strikes fall below the
/// threshold. A strike already forgiven is `INVALID_STATUS`.
pub async fn forgive(
    tx: &DatabaseTransaction,
    strike: strikes::Model,
    by: Uuid,
    now: DateTime<Utc>,
) -> AppResult<strikes::Model> {
    let rules = sanction_rules(tx).await?;
    let profile = lock_profile(tx, strike.user_id).await?;
    // Read again under the lock: a concurrent forgive may have just stamped it.
    let strike = strikes::Entity::find_by_id(strike.id).one(tx).await?.ok_or_else(|| AppError::not_found("strike"))?;
    if strike.forgiven_at.is_some() {
        return Err(AppError::new(ErrorCode::InvalidStatus, "this strike is already forgiven"));
    }
    let mut active: strikes::ActiveModel = strike.into();
    active.forgiven_at = Set(Some(now));
    active.forgiven_by_user_id = Set(Some(by));
    let forgiven = active.update(tx).await?;
    let times = unforgiven_strike_times(tx, forgiven.user_id).await?;
    let ban = rules.ban_after_forgiving(&times, now, profile.ban_until);
    set_ban(tx, profile, ban, now).await?;
    Ok(forgiven)
}

/// Recomputes a player's ban after another account's strikes joined theirs (a merge): the
/// ban the joined history earns, replayed in time order, but never shorter than the ban
/// already running here or `inherited` (the other account's).
pub async fn recompute_ban(
    tx: &DatabaseTransaction,
    user_id: Uuid,
    inherited: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> AppResult<()> {
    let rules = sanction_rules(tx).await?;
    let profile = lock_profile(tx, user_id).await?;
    let times = unforgiven_strike_times(tx, user_id).await?;
    let running = [profile.ban_until, inherited, rules.ban_from_history(&times, now)]
        .into_iter()
        .flatten()
        .filter(|until| *until > now)
        .max();
    let ban = running.or(profile.ban_until);
    set_ban(tx, profile, ban, now).await
}

/// Keeps a registration ban of an account being deleted for its `phone` until `ban_until`:
/// an account that signs up with the phone meanwhile starts under it, so deleting an account
/// and signing up again does not lift a ban. Only the phone's SHA-256 is kept, and bans that
/// have ended go now. The caller holds the phone's lock (spending its code).
pub async fn keep_ban_for_phone(
    conn: &impl ConnectionTrait,
    phone: &str,
    ban_until: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> AppResult<()> {
    phone_bans::Entity::delete_many().filter(phone_bans::Column::BanUntil.lte(now)).exec(conn).await?;
    let Some(ban_until) = ban_until.filter(|until| *until > now) else { return Ok(()) };
    let phone_hash = sha256_hex(phone);
    // A ban kept from an earlier deletion of the same phone may run longer.
    let kept = phone_bans::Entity::find_by_id(phone_hash.clone()).one(conn).await?.map(|ban| ban.ban_until);
    let ban = phone_bans::ActiveModel {
        phone_hash: Set(phone_hash),
        ban_until: Set(kept.max(Some(ban_until)).unwrap_or(ban_until)),
    };
    phone_bans::Entity::insert(ban)
        .on_conflict(
            OnConflict::column(phone_bans::Column::PhoneHash).update_column(phone_bans::Column::BanUntil).to_owned(),
        )
        .exec_without_returning(conn)
        .await?;
    Ok(())
}

/// The ban kept for `phone` from a deleted account, while it runs.
pub async fn ban_kept_for_phone(
    conn: &impl ConnectionTrait,
    phone: &str,
    now: DateTime<Utc>,
) -> AppResult<Option<DateTime<Utc>>> {
    let kept = phone_bans::Entity::find_by_id(sha256_hex(phone)).one(conn).await?;
    Ok(kept.map(|ban| ban.ban_until).filter(|until| *until > now))
}
