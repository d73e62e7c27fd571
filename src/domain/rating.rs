//! The rating as stored: writing a tournament's results (at confirmation and at a recount)
//! and rebuilding players' profiles by replaying their results in chronological order. The
//! arithmetic is the pure `rules::rating` and `rules::places`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use floor_actors::rules::places::{Finisher, finishing_order};
use floor_actors::rules::rating::{PlayedResult, RatingConfig, level_for_xp, rebuild_profile, season_points};
use floor_entities::{guest_players, player_profiles, rating_config, registrations, results, table_seats, tournaments};
use sea_orm::sea_query::{Expr, Func};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseTransaction, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, Set,
};
use uuid::Uuid;

use crate::infra::db::{self, find_where_in};
use crate::infra::error::{AppError, AppResult};
use crate::values::Phone;

/// The platform's current rating settings (the spec's defaults if the row was lost).
pub async fn rating_config(conn: &impl ConnectionTrait) -> AppResult<RatingConfig> {
    Ok(rating_config::Entity::find().one(conn).await?.map_or_else(RatingConfig::default, |row| config_of(&row)))
}

/// The rating settings of the settings row.
pub fn config_of(row: &rating_config::Model) -> RatingConfig {
    RatingConfig {
        points_base: row.points_base,
        min_points: row.min_points,
        xp_level_base: row.xp_level_base,
        xp_level_exponent: row.xp_level_exponent,
        skill_alpha: row.skill_alpha,
        skill_initial: row.skill_initial,
    }
}

/// A participant with an account and what the tournament gave them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Award {
    pub user_id: Uuid,
    pub place: i32,
    pub season_points: i32,
}

/// Who played a tournament, read under the locks of [`lock_participants`].
pub struct Participants {
    /// The registrations of the players seated at start.
    players: Vec<registrations::Model>,
    /// The account that claimed each guest among them, for those claimed.
    claimed_by: HashMap<Uuid, Uuid>,
}

/// Takes, before a tournament's results are written (confirmation, recount), every lock the
/// writing will need, in the one order all writers use: tournament (held by the caller),
/// then phones, then profiles; and reads who played.
/// - The phone of each guest who played: a guest signing up right now claims under that
///   lock, so the sign-up either comes first (and its claim is read here) or waits and then
///   finds these results.
/// - The profile of everyone who has or will have a result here (`also`: the holders of
///   results about to be replaced), so a rebuild never waits on a row another writer holds.
pub async fn lock_participants(
    tx: &DatabaseTransaction,
    tournament_id: Uuid,
    also: &[Uuid],
) -> AppResult<Participants> {
    let seated: Vec<Uuid> = table_seats::Entity::find()
        .select_only()
        .column(table_seats::Column::RegistrationId)
        .filter(table_seats::Column::TournamentId.eq(tournament_id))
        .into_tuple()
        .all(tx)
        .await?;
    let players = find_where_in::<registrations::Entity, _>(tx, registrations::Column::Id, &seated).await?;
    let guest_ids: Vec<Uuid> = players.iter().filter_map(|player| player.guest_id).collect();
    let guests = find_where_in::<guest_players::Entity, _>(tx, guest_players::Column::Id, &guest_ids).await?;
    let mut phones: Vec<&str> = guests.iter().map(|guest| guest.phone.as_str()).collect();
    phones.sort_unstable();
    for phone in phones {
        db::lock_key(tx, &Phone::lock_key(phone)).await?;
    }
    // Claims read again, now that no sign-up can be halfway through one.
    let claimed_by: HashMap<Uuid, Uuid> =
        find_where_in::<guest_players::Entity, _>(tx, guest_players::Column::Id, &guest_ids)
            .await?
            .into_iter()
            .filter_map(|guest| Some((guest.id, guest.claimed_by_user_id?)))
            .collect();
    let users: Vec<Uuid> = players
        .iter()
        .filter_map(|player| player.user_id)
        .chain(claimed_by.values().copied())
        .chain(also.iter().copied())
        .collect();
    lock_profiles(tx, &users).await?;
    Ok(Participants { players, claimed_by })
}

/// Locks the player profiles of `user_ids` for the rest of the transaction, in id order, so
/// two writers of overlapping players never wait on each other crosswise.
pub async fn lock_profiles(conn: &impl ConnectionTrait, user_ids: &[Uuid]) -> AppResult<()> {
    let users: Vec<Uuid> = user_ids.iter().copied().collect::<BTreeSet<_>>().into_iter().collect();
    for chunk in users.chunks(crate::infra::db::IDS_PER_STATEMENT) {
        player_profiles::Entity::find()
            .filter(player_profiles::Column::UserId.is_in(chunk.iter().copied()))
            .order_by_asc(player_profiles::Column::UserId)
            .lock_exclusive()
            .all(conn)
            .await?;
    }
    Ok(())
}

/// Where a result row comes from: when it was first awarded, and the skill its player had
/// before it. A recount keeps both, so the row stays in its place in the player's history
/// and a history that starts with it keeps starting from the same skill.
#[derive(Clone, Copy, Debug)]
pub struct RowOrigin {
    pub created_at: DateTime<Utc>,
    /// `None` for a new row: the profile rebuild fills it in.
    pub skill_before: Option<f64>,
}

/// Writes the results of a tournament whose game is over: every player seated at start gets
/// a place (the one still in first, then by latest elimination), season points and xp by
/// the current configuration. A guest's result counts for the account that claimed the
/// guest, if any; an unclaimed guest gets a place and no rating. `created_at` gives each
/// row's origin (a recount keeps the original one). Returns what each account got.
pub async fn write_results(
    conn: &DatabaseTransaction,
    tournament_id: Uuid,
    participants: &Participants,
    origin: impl Fn(Uuid) -> RowOrigin,
) -> AppResult<Vec<Award>> {
    let Participants { players, claimed_by } = participants;
    let finishers: Vec<Finisher<Uuid>> = players
        .iter()
        .map(|player| Finisher {
            player: player.id,
            eliminated_at: player.eliminated_at,
            created_at: player.created_at,
        })
        .collect();
    let by_id: HashMap<Uuid, &registrations::Model> = players.iter().map(|player| (player.id, player)).collect();
    let config = rating_config(conn).await?;
    let field_size =
        i32::try_from(players.len()).map_err(|_| AppError::Internal(anyhow::anyhow!("too many players")))?;
    let mut awards = Vec::new();
    let mut rows = Vec::with_capacity(players.len());
    for (place, registration_id) in finishing_order(&finishers) {
        let Some(player) = by_id.get(&registration_id) else { continue };
        let user_id = player.user_id.or_else(|| player.guest_id.and_then(|guest| claimed_by.get(&guest).copied()));
        let points = match user_id {
            Some(user_id) => {
                let season_points =
                    season_points(&config, field_size, place).map_err(|err| AppError::Internal(err.into()))?;
                awards.push(Award { user_id, place, season_points });
                season_points
            }
            None => 0,
        };
        rows.push(results::ActiveModel {
            id: Set(Uuid::now_v7()),
            tournament_id: Set(tournament_id),
            registration_id: Set(registration_id),
            user_id: Set(user_id),
            guest_id: Set(player.guest_id),
            place: Set(place),
            season_points: Set(points),
            xp: Set(points),
            skill_before: Set(origin(registration_id).skill_before),
            skill_after: Set(None),
            created_at: Set(origin(registration_id).created_at),
            skill_alpha: Set(config.skill_alpha),
        });
    }
    db::insert_chunked(conn, rows).await?;
    Ok(awards)
}

/// Rebuilds each player's profile from scratch by replaying their results in chronological
/// order (the results' `createdAt`, then the tournament's start, then id): xp, level,
/// skill, games and wins, and each result's skill before and after. Never patches.
pub async fn rebuild_profiles(conn: &impl ConnectionTrait, user_ids: &[Uuid]) -> AppResult<()> {
    let now = Utc::now();
    // Two rebuilds of one player (two confirmations, a recount) take turns: each reads the
    // history only once it holds the profile, so neither overwrites the other's result.
    // The settings are read under the profiles' locks too: a settings change that relevels
    // every profile then either waits for this rebuild or is already visible to it.
    lock_profiles(conn, user_ids).await?;
    let config = rating_config(conn).await?;
    for user_id in user_ids.iter().copied().collect::<BTreeSet<_>>() {
        let history: Vec<(results::Model, Option<tournaments::Model>)> = results::Entity::find()
            .find_also_related(tournaments::Entity)
            .filter(results::Column::UserId.eq(user_id))
            .order_by_asc(results::Column::CreatedAt)
            .order_by_asc(tournaments::Column::StartsAt)
            .order_by_asc(results::Column::Id)
            .all(conn)
            .await?;
        let tournament_ids: Vec<Uuid> = history.iter().map(|(result, _)| result.tournament_id).collect();
        let sizes = field_sizes(conn, &tournament_ids).await?;
        let played: Vec<PlayedResult> = history
            .iter()
            .map(|(result, _)| PlayedResult {
                field_size: sizes.get(&result.tournament_id).copied().unwrap_or(1),
                place: result.place,
                xp: result.xp,
                skill_alpha: result.skill_alpha,
            })
            .collect();
        // A history starts from the skill it started with, not from today's `skillInitial`:
        // a change of the settings applies to new players only.
        let started_with = history.first().and_then(|(result, _)| result.skill_before);
        let replay = RatingConfig { skill_initial: started_with.unwrap_or(config.skill_initial), ..config };
        let rebuilt = rebuild_profile(&replay, &played);
        for ((result, _), (before, after)) in history.into_iter().zip(rebuilt.skills.iter().copied()) {
            if result.skill_before != Some(before) || result.skill_after != Some(after) {
                let mut active: results::ActiveModel = result.into();
                active.skill_before = Set(Some(before));
                active.skill_after = Set(Some(after));
                active.update(conn).await?;
            }
        }
        player_profiles::Entity::update_many()
            .col_expr(player_profiles::Column::Xp, Expr::value(rebuilt.xp))
            .col_expr(player_profiles::Column::Level, Expr::value(rebuilt.level))
            .col_expr(player_profiles::Column::Skill, Expr::value(rebuilt.skill))
            .col_expr(player_profiles::Column::GamesPlayed, Expr::value(rebuilt.games_played))
            .col_expr(player_profiles::Column::Wins, Expr::value(rebuilt.wins))
            .col_expr(player_profiles::Column::UpdatedAt, Expr::value(now))
            .filter(player_profiles::Column::UserId.eq(user_id))
            .exec(conn)
            .await?;
    }
    Ok(())
}

/// Puts every player at the level their xp reaches under `config`, after the level settings
/// changed. The level is a function of xp, not an award: it follows the thresholds at once
/// for everyone, while points and skill already awarded stay as they are. The profiles are
/// locked in id order, as every rebuild locks them, so this waits for rebuilds under way
/// and they wait for it, without crossing.
pub async fn relevel_profiles(conn: &impl ConnectionTrait, config: &RatingConfig) -> AppResult<u64> {
    let profiles: Vec<(Uuid, i64, i32)> = player_profiles::Entity::find()
        .select_only()
        .column(player_profiles::Column::UserId)
        .column(player_profiles::Column::Xp)
        .column(player_profiles::Column::Level)
        .order_by_asc(player_profiles::Column::UserId)
        .lock_exclusive()
        .into_tuple()
        .all(conn)
        .await?;
    let mut moves: BTreeMap<i32, Vec<Uuid>> = BTreeMap::new();
    for (user_id, xp, level) in profiles {
        let reached = level_for_xp(config, xp);
        if reached != level {
            moves.entry(reached).or_default().push(user_id);
        }
    }
    let mut moved = 0;
    for (level, user_ids) in moves {
        for chunk in user_ids.chunks(crate::infra::db::IDS_PER_STATEMENT) {
            moved += player_profiles::Entity::update_many()
                .col_expr(player_profiles::Column::Level, Expr::value(level))
                .col_expr(player_profiles::Column::UpdatedAt, Expr::value(Utc::now()))
                .filter(player_profiles::Column::UserId.is_in(chunk.iter().copied()))
                .exec(conn)
                .await?
                .rows_affected;
        }
    }
    Ok(moved)
}

/// The field size of each tournament: how many players got a place.
pub async fn field_sizes(conn: &impl ConnectionTrait, tournament_ids: &[Uuid]) -> AppResult<HashMap<Uuid, i32>> {
    let mut sizes = HashMap::new();
    for chunk in tournament_ids.chunks(crate::infra::db::IDS_PER_STATEMENT) {
        let rows: Vec<(Uuid, i64)> = results::Entity::find()
            .select_only()
            .column(results::Column::TournamentId)
            .column_as(Expr::from(Func::count(Expr::col(results::Column::Id))), "n")
            .filter(results::Column::TournamentId.is_in(chunk.iter().copied()))
            .group_by(results::Column::TournamentId)
            .into_tuple()
            .all(conn)
            .await?;
        sizes.extend(rows.into_iter().map(|(id, n)| (id, i32::try_from(n).unwrap_or(i32::MAX))));
    }
    Ok(sizes)
}
