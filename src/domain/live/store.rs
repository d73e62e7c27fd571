//! The tournament actors' store: the live game read from and written to the database
//! through sea-orm, one transaction per change, each guarded by the tournament's
//! `live_version` so a change decided on a stale game is never written.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use floor_actors::error::{LiveError, LiveResult, Refusal};
use floor_actors::live::{
    Change, First, Game, KeyRecord, Keys, LiveStore, Made, Owner, Persisted, Player, Seat, Settled, Timed,
};
use floor_actors::rules::clock::Clock;
use floor_actors::rules::structure::Segment;
use floor_entities::enums::TournamentStatus;
use floor_entities::{blind_templates, registrations, table_seats, tournaments};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use serde_json::json;
use tokio::time::Instant;
use tracing::Instrument as _;
use uuid::Uuid;

use super::command_keys;
use super::leases::Leases;
use super::player_rows::RowChanges;
use crate::domain::audit;
use crate::domain::notifications::{Journaled, Notifier};
use crate::domain::tournaments::lifecycle::{self, advance_live_version_by};
use crate::domain::tournaments::{UNNAMED_PLAYER, display_title, notices, player_names, results};
use crate::infra::db::{self, find_where_in};
use crate::infra::error::{AppError, AppResult, UNREACHABLE};

/// The database behind every tournament actor.
#[derive(Clone)]
pub struct SeaOrmStore {
    pub db: DatabaseConnection,
    /// Where the stored version is read (every read of a kept LiveState asks it): on a SQLite
    /// file read-only connections, so the check never waits for a write transaction.
    pub reads: DatabaseConnection,
    pub notifier: Notifier,
    /// With several nodes: which tournaments this node runs. One node alone runs them all.
    pub leases: Option<Arc<Leases>>,
    /// Turns calls away at once for a moment after one found the database out of reach.
    pub breaker: Arc<Breaker>,
}

/// How long the store turns its calls away after one found the database out of reach.
const BREAK_FOR: Duration = Duration::from_secs(1);

/// A breaker over the store's calls. An actor takes its commands one at a time, and a call to
/// a database out of reach may wait before it fails (until the pool's lookout notices the
/// outage, or a statement under way gives up): commands queued behind it would each wait in
/// turn, and a tournament's presses pile up. When a call finds the database out of reach
/// (refused `Unavailable`), every call that begins within [`BREAK_FOR`] of that answer fails
/// at once the same way (the command is refused `503`, nothing done). Past that, calls go to
/// the database again, every one of them (there is no single trial call), so the store comes
/// back within a second or so of the database; the next one that finds it out of reach opens
/// the breaker again.
#[derive(Default)]
pub struct Breaker {
    /// The end of the latest break: a call that begins before it is turned away. `None` until
    /// a call first finds the database out of reach; after that it stays the end of the last
    /// break (in the past once it is over), moved on by the next call that finds it out of reach.
    open_until: Mutex<Option<Instant>>,
}

impl Breaker {
    fn until(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.open_until.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs `call` unless the breaker is open, and opens it when the call finds the database
    /// out of reach.
    pub async fn guard<T>(&self, call: impl Future<Output = LiveResult<T>>) -> LiveResult<T> {
        if self.until().is_some_and(|until| Instant::now() < until) {
            return Err(LiveError::refused(Refusal::Unavailable, UNREACHABLE));
        }
        let result = call.await;
        if let Err(LiveError::Refused { refusal: Refusal::Unavailable, .. }) = &result {
            *self.until() = Some(Instant::now() + BREAK_FOR);
        }
        result
    }
}

impl LiveStore for SeaOrmStore {
    async fn claim(&self, tournament_id: Uuid) -> LiveResult<Owner> {
        match &self.leases {
            Some(leases) => {
                self.breaker.guard(async { leases.claim(tournament_id).await.map_err(AppError::into_live) }).await
            }
            None => Ok(Owner::Here),
        }
    }

    async fn release(&self, tournament_id: Uuid) {
        if let Some(leases) = &self.leases
            && let Err(err) = leases.release(tournament_id).await
        {
            tracing::warn!(%tournament_id, error = %err, "could not release a tournament; its lease runs out by itself");
        }
    }

    /// Several nodes hold leases; one alone has none.
    fn shared(&self) -> bool {
        self.leases.is_some()
    }

    async fn load(&self, tournament_id: Uuid) -> LiveResult<Option<Game>> {
        self.breaker.guard(async { load_game(&self.db, tournament_id).await.map_err(AppError::into_live) }).await
    }

    async fn version(&self, tournament_id: Uuid) -> LiveResult<Option<i64>> {
        self.breaker
            .guard(async {
                tournaments::Entity::find_by_id(tournament_id)
                    .select_only()
                    .column(tournaments::Column::LiveVersion)
                    .into_tuple()
                    .one(&self.reads)
                    .await
                    .map_err(|err| AppError::from(err).into_live())
            })
            .await
    }

    async fn persist(&self, game: &Game, changes: &[(Change, Option<Made>)], keys: Keys<'_>) -> LiveResult<Persisted> {
        let name = match changes {
            [(change, _)] => change.audit_action(),
            _ => "tournament.replay",
        };
        let span = transaction_span(game.tournament_id, name, Some(game.version + changes.len() as i64));
        self.breaker.guard(persist_changes(self, game, changes, keys)).instrument(span).await
    }

    async fn recorded(&self, tournament_id: Uuid, by: Uuid, queue: &[Timed]) -> LiveResult<Vec<Option<First>>> {
        let read = command_keys::recorded(&self.db, tournament_id, by, queue, Utc::now());
        self.breaker.guard(async { read.await.map_err(AppError::into_live) }).await
    }

    async fn keep(&self, tournament_id: Uuid, keys: Keys<'_>) -> LiveResult<Persisted> {
        let span = transaction_span(tournament_id, "idempotency.keep", None);
        self.breaker.guard(keep_keys(self, tournament_id, keys)).instrument(span).await
    }

    async fn settle(&self, game: &Game, changes: i64) -> LiveResult<Settled> {
        settle(&self.db, game, changes).await.map_err(AppError::into_live)
    }

    async fn start(
        &self,
        tournament_id: Uuid,
        by: Uuid,
        now: DateTime<Utc>,
        key: Option<&KeyRecord>,
    ) -> LiveResult<()> {
        let span = transaction_span(tournament_id, "tournament.start", None);
        let start = async {
            let tx = self.open(tournament_id).await?;
            let told =
                lifecycle::start(&tx, &self.notifier, tournament_id, by, now).await.map_err(AppError::into_live)?;
            self.commit_with_key(tx, tournament_id, by, key).await?;
            self.notifier.push_in_background(&self.db, told);
            Ok(())
        };
        self.breaker.guard(start).instrument(span).await
    }

    async fn confirm(
        &self,
        tournament_id: Uuid,
        by: Uuid,
        now: DateTime<Utc>,
        key: Option<&KeyRecord>,
    ) -> LiveResult<()> {
        let span = transaction_span(tournament_id, "results.confirm", None);
        let confirm = async {
            let tx = self.open(tournament_id).await?;
            let told = results::confirm_results(&tx, &self.notifier, tournament_id, by, now)
                .await
                .map_err(AppError::into_live)?;
            self.commit_with_key(tx, tournament_id, by, key).await?;
            self.notifier.push_in_background(&self.db, told);
            Ok(())
        };
        self.breaker.guard(confirm).instrument(span).await
    }
}

impl SeaOrmStore {
    /// A write transaction on `tournament_id`, with several nodes only while this node holds it.
    async fn open(&self, tournament_id: Uuid) -> LiveResult<sea_orm::DatabaseTransaction> {
        let tx = db::begin_write(&self.db).await.map_err(|err| AppError::from(err).into_live())?;
        if let Some(leases) = &self.leases {
            let fence = tracing::info_span!("live.lease_fence", %tournament_id);
            if !leases.fence(&tx, tournament_id).instrument(fence).await.map_err(AppError::into_live)? {
                return Err(LiveError::Elsewhere { owner: None });
            }
        }
        Ok(tx)
    }

    /// Keeps a gate's `key` in `tx` and commits. A key kept meanwhile for another command
    /// refuses the whole gate; a commit that goes unanswered leaves its outcome unknown, which
    /// the key resolves when the command is sent again.
    async fn commit_with_key(
        &self,
        tx: sea_orm::DatabaseTransaction,
        tournament_id: Uuid,
        by: Uuid,
        key: Option<&KeyRecord>,
    ) -> LiveResult<()> {
        let records = key.map(std::slice::from_ref).unwrap_or_default();
        if !command_keys::keep(&tx, tournament_id, Keys { by, records }, Utc::now())
            .await
            .map_err(AppError::into_live)?
        {
            return Err(floor_actors::live::keys::key_reused());
        }
        tx.commit().await.map_err(|err| LiveError::Internal(unknown_commit(err)))
    }
}

/// A commit whose connection failed: whether it took is not known from here.
fn unknown_commit(err: sea_orm::DbErr) -> anyhow::Error {
    anyhow::anyhow!("committing a live change failed, so its outcome is unknown: {err}")
}

/// Keeps the keys of commands that changed nothing, in a transaction of their own, while this
/// node holds the tournament.
async fn keep_keys(store: &SeaOrmStore, tournament_id: Uuid, keys: Keys<'_>) -> LiveResult<Persisted> {
    let tx = store.open(tournament_id).await?;
    if !command_keys::keep(&tx, tournament_id, keys, Utc::now()).await.map_err(AppError::into_live)? {
        return Ok(Persisted::KeyTaken);
    }
    tx.commit().await.map_err(|err| LiveError::Internal(unknown_commit(err)))?;
    Ok(Persisted::Written)
}

/// Whether the write of `game` moved on by `changes`, whose commit went unanswered, took: read
/// under the tournament's row lock, which the write held until it ended, so it can no longer
/// be under way. Only this node's actor writes the game while it holds the tournament.
async fn settle(db: &DatabaseConnection, game: &Game, changes: i64) -> AppResult<Settled> {
    let tx = db::begin_write(db).await?;
    let stored = crate::domain::tournaments::lock(&tx, game.tournament_id).await?.live_version;
    if stored == game.version + changes {
        Ok(Settled::Committed)
    } else if stored == game.version {
        Ok(Settled::RolledBack)
    } else {
        Err(AppError::Internal(anyhow::anyhow!(
            "the tournament is at version {stored}, neither before ({}) nor after the change",
            game.version
        )))
    }
}

/// The span of a live change's transaction (its statements are sea-orm's spans inside it),
/// with the version it writes when known before it commits.
fn transaction_span(tournament_id: Uuid, change: &str, version: Option<i64>) -> tracing::Span {
    tracing::info_span!("live.transaction", %tournament_id, change, version)
}

/// The game as stored. Before start the clock's levels are the template's.
pub async fn load_game(conn: &impl ConnectionTrait, tournament_id: Uuid) -> AppResult<Option<Game>> {
    let Some(tournament) = tournaments::Entity::find_by_id(tournament_id).one(conn).await? else { return Ok(None) };
    let levels_json = match tournament.clock_levels.clone() {
        Some(levels) => levels,
        None => blind_templates::Entity::find_by_id(tournament.blind_template_id)
            .one(conn)
            .await?
            .map_or(serde_json::Value::Array(Vec::new()), |template| template.levels),
    };
    let levels: Vec<Segment> = serde_json::from_value(levels_json).map_err(|err| {
        AppError::Internal(anyhow::anyhow!("tournament {tournament_id} has unreadable levels: {err}"))
    })?;
    let seats = table_seats::Entity::find()
        .filter(table_seats::Column::TournamentId.eq(tournament_id))
        .order_by_asc(table_seats::Column::TableNo)
        .order_by_asc(table_seats::Column::SeatNo)
        .all(conn)
        .await?;
    let registration_ids: Vec<Uuid> = seats.iter().map(|seat| seat.registration_id).collect();
    let registrations: HashMap<Uuid, registrations::Model> =
        find_where_in::<registrations::Entity, _>(conn, registrations::Column::Id, &registration_ids)
            .await?
            .into_iter()
            .map(|registration| (registration.id, registration))
            .collect();
    let names = player_names(conn, registrations.values()).await?;
    let players = seats
        .iter()
        .filter_map(|seat| {
            let registration = registrations.get(&seat.registration_id)?;
            Some(Player {
                registration_id: registration.id,
                name: names.get(&registration.id).cloned().unwrap_or_else(|| UNNAMED_PLAYER.to_owned()),
                seat: Seat { table_no: seat.table_no, seat_no: seat.seat_no },
                eliminated_at: registration.eliminated_at,
                created_at: registration.created_at,
            })
        })
        .collect();
    let clock = tournament.level_started_at.map(|level_started_at| Clock {
        current_level_idx: usize::try_from(tournament.current_level_idx).unwrap_or_default(),
        level_started_at,
        paused_at: tournament.paused_at,
    });
    Ok(Some(Game {
        tournament_id,
        status: tournament.status,
        version: tournament.live_version,
        clock,
        levels,
        chips_in_play: tournament.chips_in_play,
        players,
        last_command_at: tournament.last_command_at,
    }))
}

/// Writes changes of a running game in one transaction, if the stored version is still the
/// game's (the version check is what makes a stale decision harmless) and, with several
/// nodes, if this node still holds the tournament. The players they move are told where to go
/// once it has committed.
async fn persist_changes(
    store: &SeaOrmStore,
    game: &Game,
    changes: &[(Change, Option<Made>)],
    keys: Keys<'_>,
) -> LiveResult<Persisted> {
    let tx = store.open(game.tournament_id).await?;
    let (persisted, told) =
        write_changes(tx, &store.notifier, game, changes, keys).await.map_err(AppError::into_live)?;
    store.notifier.push_in_background(&store.db, told);
    Ok(persisted)
}

/// [`persist_changes`] inside its transaction: what was written, and the seat notices it
/// journaled. The tournament's row moves on once, by the count of changes, with the clock and
/// the latest command's moment as the last of them leaves them; the players' rows are written
/// as the last change leaves them too, in a few statements however long the run; the commands'
/// keys are kept with what they came to.
async fn write_changes(
    tx: sea_orm::DatabaseTransaction,
    notifier: &Notifier,
    game: &Game,
    changes: &[(Change, Option<Made>)],
    keys: Keys<'_>,
) -> AppResult<(Persisted, Vec<Journaled>)> {
    let now = Utc::now();
    // Each change's record and the players it moves, as of the game just before it.
    let mut after = game.clone();
    let mut records = Vec::with_capacity(changes.len());
    let mut moves = Vec::new();
    for (change, made) in changes {
        records.push(audit_entry(change, *made));
        let version = after.version + 1;
        moves.extend(change.moves(&after).into_iter().map(|(id, from, to)| (version, id, from, to)));
        after.apply(change);
        if let Some(made) = made {
            after.record(*made);
        }
    }
    let mut columns = tournaments::Entity::update_many();
    if after.clock != game.clock
        && let Some(clock) = after.clock
    {
        columns = columns
            .col_expr(
                tournaments::Column::CurrentLevelIdx,
                Expr::value(i32::try_from(clock.current_level_idx).unwrap_or(i32::MAX)),
            )
            .col_expr(tournaments::Column::LevelStartedAt, Expr::value(clock.level_started_at))
            .col_expr(tournaments::Column::PausedAt, Expr::value(clock.paused_at));
    }
    if after.last_command_at != game.last_command_at {
        columns = columns.col_expr(tournaments::Column::LastCommandAt, Expr::value(after.last_command_at));
    }
    let decided_on = (game.version, TournamentStatus::Running);
    let count = i64::try_from(changes.len()).unwrap_or(i64::MAX);
    if !advance_live_version_by(&tx, game.tournament_id, decided_on, count, columns, now).await? {
        return Ok((Persisted::Stale, Vec::new()));
    }
    RowChanges::between(game, &after).write(&tx, now).await?;
    let told = tell_moved(&tx, notifier, game.tournament_id, &moves).await?;
    let records = audit::rows(("tournament", game.tournament_id.to_string()), records);
    db::insert_in_chunks_of(&tx, records, audit::ROWS_PER_INSERT).await?;
    if !command_keys::keep(&tx, game.tournament_id, keys, now).await? {
        return Ok((Persisted::KeyTaken, Vec::new()));
    }
    // A connection lost during the commit leaves its outcome unknown: not a `503` (which says
    // nothing was done, so try again) but a failure the actor looks at ([`settle`]).
    tx.commit().await.map_err(|err| AppError::Internal(unknown_commit(err)))?;
    Ok((Persisted::Written, told))
}

/// A change's audit record: who made it, what it did, and when it happened when its sender
/// said (the record's own time is its arrival).
fn audit_entry(change: &Change, made: Option<Made>) -> audit::Entry {
    let seat_of = |registration_id: &Uuid, seat: &Seat| json!({"registrationId": registration_id, "tableNo": seat.table_no, "seatNo": seat.seat_no});
    let mut details = match change {
        Change::Clock { clock, .. } => json!({
            "currentLevelIdx": clock.current_level_idx,
            "levelStartedAt": clock.level_started_at,
            "pausedAt": clock.paused_at,
        }),
        Change::Eliminate { registration_id, eliminated_at, place } => {
            json!({"registrationId": registration_id, "place": place, "eliminatedAt": eliminated_at})
        }
        Change::Undo { registration_id, seat } | Change::Reseat { registration_id, seat } => {
            seat_of(registration_id, seat)
        }
        Change::Reorder { stamps } => {
            json!({"registrationIds": stamps.iter().map(|(id, _)| id).collect::<Vec<_>>()})
        }
        Change::ReseatBatch { moves } => {
            json!({"moves": moves.iter().map(|(id, seat)| seat_of(id, seat)).collect::<Vec<_>>()})
        }
    };
    if let Some(made) = made.filter(|made| made.stated)
        && let Some(details) = details.as_object_mut()
    {
        details.insert("occurredAt".to_owned(), json!(made.at));
    }
    audit::Entry { actor: made.map(|made| made.by), action: change.audit_action(), details }
}

/// Tells each player with an account whom the changes move where to go now (`seat.moved`,
/// with the version of the change that moved them), journaled in the changes' transaction.
async fn tell_moved(
    tx: &sea_orm::DatabaseTransaction,
    notifier: &Notifier,
    tournament_id: Uuid,
    moves: &[(i64, Uuid, Seat, Seat)],
) -> AppResult<Vec<Journaled>> {
    if moves.is_empty() {
        return Ok(Vec::new());
    }
    let moved: Vec<Uuid> = moves.iter().map(|(_, registration_id, ..)| *registration_id).collect();
    let accounts: HashMap<Uuid, Uuid> = notices::accounts_of(tx, &moved).await?.into_iter().collect();
    let title = display_title(tx, tournament_id).await?;
    let mut told = Vec::new();
    for &(version, registration_id, from, to) in moves {
        if let Some(&user_id) = accounts.get(&registration_id) {
            let notice = notices::seat_moved(tournament_id, &title, (user_id, registration_id), (from, to), version);
            told.push(notifier.journal(tx, notice).await?);
        }
    }
    Ok(told)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    fn is_unavailable<T>(result: &LiveResult<T>) -> bool {
        matches!(result, Err(LiveError::Refused { refusal: Refusal::Unavailable, .. }))
    }

    #[tokio::test(start_paused = true)]
    async fn after_a_call_finds_the_database_down_the_next_ones_are_turned_away_at_once_for_a_moment() {
        let breaker = Breaker::default();
        let calls = AtomicUsize::new(0);
        let call = |answer: LiveResult<()>| {
            let calls = &calls;
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                answer
            }
        };

        // A refusal of the rules, or a failure of another kind, leaves it closed.
        assert!(breaker.guard(call(Err(LiveError::not_running()))).await.is_err());
        assert!(breaker.guard(call(Ok(()))).await.is_ok());
        assert_eq!(calls.load(Ordering::SeqCst), 2);

        let down = breaker.guard(call(Err(LiveError::refused(Refusal::Unavailable, UNREACHABLE)))).await;
        assert!(is_unavailable(&down));
        // Turned away without a call, so a queue of commands is answered at once.
        let turned_away = breaker.guard(call(Ok(()))).await;
        assert!(is_unavailable(&turned_away), "{turned_away:?}");
        tokio::time::advance(BREAK_FOR - Duration::from_millis(10)).await;
        assert!(is_unavailable(&breaker.guard(call(Ok(()))).await));
        assert_eq!(calls.load(Ordering::SeqCst), 3, "nothing reached the database while it was open");

        // Then the next call tries the database again, and the store is back.
        tokio::time::advance(Duration::from_millis(10)).await;
        assert!(breaker.guard(call(Ok(()))).await.is_ok());
        assert!(breaker.guard(call(Ok(()))).await.is_ok());
        assert_eq!(calls.load(Ordering::SeqCst), 5);
    }
}
