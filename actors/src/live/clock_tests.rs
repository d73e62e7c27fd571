//! The actor's own clock under tokio's paused time: segments run out by themselves, a pause
//! holds them, a level press restarts the wait, and a rebuilt actor catches up.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use floor_entities::enums::TournamentStatus;
use tokio::sync::mpsc;
use uuid::Uuid;

use crate::error::{LiveError, LiveResult, Refusal};
use crate::live::{
    Answer, Broadcaster, Change, Command, First, Game, KeyRecord, Keys, LiveStore, Made, Order, Persisted, Player,
    Recorded, Registry, Seat, Settled, Snapshot, Timed,
};
use crate::rules::clock::{Clock, Direction};
use crate::rules::structure::Segment;

thread_local! {
    /// The paused runtime's starting instant; each test runs on its own thread.
    static START: Cell<Option<tokio::time::Instant>> = const { Cell::new(None) };
}

pub(super) fn epoch() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-22T18:00:00Z").map(|t| t.with_timezone(&Utc)).unwrap_or_default()
}

/// Wall time that follows tokio's (paused) clock.
pub(super) fn paused_now() -> DateTime<Utc> {
    let start = START.with(|start| {
        let value = start.get().unwrap_or_else(tokio::time::Instant::now);
        start.set(Some(value));
        value
    });
    epoch() + TimeDelta::from_std(start.elapsed()).unwrap_or_default()
}

pub(super) fn minutes(n: i64) -> TimeDelta {
    TimeDelta::minutes(n)
}

/// A kept key: the tournament, the command and what it came to.
pub(super) type KeptKey = (Uuid, Command, Recorded);

/// Games kept in memory, written with the same version guard as the database, and the keys
/// of commands kept with them.
#[derive(Default)]
pub(super) struct MemoryStore {
    pub(super) games: Mutex<HashMap<Uuid, Game>>,
    /// Per account and key: the tournament, the command and what it came to.
    pub(super) keys: Mutex<HashMap<(Uuid, String), KeptKey>>,
    /// How many of the next writes fail, as a database that is briefly away.
    pub(super) failing_writes: AtomicUsize,
    /// How many of the next writes commit and then fail, as a commit whose answer is lost.
    pub(super) lost_commits: AtomicUsize,
}

fn poisoned<T>(_: T) -> LiveError {
    LiveError::Internal(anyhow::anyhow!("poisoned"))
}

fn take_one(count: &AtomicUsize) -> bool {
    count.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok()
}

impl MemoryStore {
    /// Keeps `keys` for `tournament_id`, unless one is kept already (nothing is kept then).
    fn keep_keys(&self, tournament_id: Uuid, keys: Keys<'_>) -> LiveResult<bool> {
        let mut kept = self.keys.lock().map_err(poisoned)?;
        if keys.records.iter().any(|record| kept.contains_key(&(keys.by, record.key.clone()))) {
            return Ok(false);
        }
        for record in keys.records {
            let value = (tournament_id, record.command.clone(), record.recorded.clone());
            kept.insert((keys.by, record.key.clone()), value);
        }
        Ok(true)
    }
}

impl LiveStore for MemoryStore {
    async fn load(&self, tournament_id: Uuid) -> LiveResult<Option<Game>> {
        Ok(self
            .games
            .lock()
            .map_err(|_| LiveError::Internal(anyhow::anyhow!("poisoned")))?
            .get(&tournament_id)
            .cloned())
    }

    async fn version(&self, tournament_id: Uuid) -> LiveResult<Option<i64>> {
        Ok(self.load(tournament_id).await?.map(|game| game.version))
    }

    async fn persist(&self, game: &Game, changes: &[(Change, Option<Made>)], keys: Keys<'_>) -> LiveResult<Persisted> {
        if take_one(&self.failing_writes) {
            return Err(LiveError::Internal(anyhow::anyhow!("the database is away")));
        }
        let mut games = self.games.lock().map_err(poisoned)?;
        let Some(stored) = games.get_mut(&game.tournament_id) else { return Ok(Persisted::Stale) };
        if stored.version != game.version || stored.status != TournamentStatus::Running {
            return Ok(Persisted::Stale);
        }
        if !self.keep_keys(game.tournament_id, keys)? {
            return Ok(Persisted::KeyTaken);
        }
        stored.apply_all(changes);
        if take_one(&self.lost_commits) {
            return Err(LiveError::Internal(anyhow::anyhow!("the connection was lost during the commit")));
        }
        Ok(Persisted::Written)
    }

    async fn recorded(&self, tournament_id: Uuid, by: Uuid, queue: &[Timed]) -> LiveResult<Vec<Option<First>>> {
        let kept = self.keys.lock().map_err(poisoned)?;
        Ok(queue
            .iter()
            .map(|timed| {
                let (tournament, command, recorded) = kept.get(&(by, timed.key.clone()?))?;
                Some(if *tournament == tournament_id && *command == timed.command {
                    First::Same(recorded.clone())
                } else {
                    First::Other
                })
            })
            .collect())
    }

    async fn keep(&self, tournament_id: Uuid, keys: Keys<'_>) -> LiveResult<Persisted> {
        Ok(if self.keep_keys(tournament_id, keys)? { Persisted::Written } else { Persisted::KeyTaken })
    }

    async fn settle(&self, game: &Game, changes: i64) -> LiveResult<Settled> {
        let stored = self.version(game.tournament_id).await?;
        match stored {
            Some(version) if version == game.version + changes => Ok(Settled::Committed),
            Some(version) if version == game.version => Ok(Settled::RolledBack),
            _ => Err(LiveError::Internal(anyhow::anyhow!("moved on by another writer"))),
        }
    }

    async fn start(&self, _: Uuid, _: Uuid, _: DateTime<Utc>, _: Option<&KeyRecord>) -> LiveResult<()> {
        Err(LiveError::Internal(anyhow::anyhow!("the memory store keeps running games only")))
    }

    async fn confirm(&self, _: Uuid, _: Uuid, _: DateTime<Utc>, _: Option<&KeyRecord>) -> LiveResult<()> {
        Err(LiveError::Internal(anyhow::anyhow!("the memory store keeps running games only")))
    }
}

/// Hands every broadcast to the test.
pub(super) struct ChannelBroadcaster(mpsc::UnboundedSender<Snapshot>);

impl Broadcaster for ChannelBroadcaster {
    async fn broadcast(&self, state: Snapshot) {
        let _ = self.0.send(state);
    }
}

/// 20-minute level, 15-minute break, 20-minute level.
pub(super) fn structure() -> Vec<Segment> {
    vec![
        Segment::Level { duration_min: 20, small_blind: 100, big_blind: 200, ante: None, note: None },
        Segment::Break { duration_min: 15, note: None },
        Segment::Level { duration_min: 20, small_blind: 200, big_blind: 400, ante: None, note: None },
    ]
}

pub(super) fn running_game(level_started_at: DateTime<Utc>) -> Game {
    let player = |n: u128, seat_no| Player {
        registration_id: Uuid::from_u128(n),
        name: format!("Player {n}"),
        seat: Seat { table_no: 1, seat_no },
        eliminated_at: None,
        created_at: epoch(),
    };
    Game {
        tournament_id: Uuid::from_u128(7),
        status: TournamentStatus::Running,
        version: 1,
        clock: Some(Clock { current_level_idx: 0, level_started_at, paused_at: None }),
        levels: structure(),
        chips_in_play: 40_000,
        players: vec![player(1, 1), player(2, 2)],
        last_command_at: None,
    }
}

pub(super) async fn live(
    game: Game,
) -> (Registry<MemoryStore, ChannelBroadcaster>, mpsc::UnboundedReceiver<Snapshot>, Uuid) {
    let (registry, broadcasts, id, _) = live_on(Arc::default(), game).await;
    (registry, broadcasts, id)
}

pub(super) async fn live_on(
    store: Arc<MemoryStore>,
    game: Game,
) -> (Registry<MemoryStore, ChannelBroadcaster>, mpsc::UnboundedReceiver<Snapshot>, Uuid, Arc<MemoryStore>) {
    let id = game.tournament_id;
    store.games.lock().expect("a fresh lock").insert(id, game);
    let (sender, broadcasts) = mpsc::unbounded_channel();
    let registry =
        Registry::start(store.clone(), Arc::new(ChannelBroadcaster(sender)), paused_now).await.expect("a registry");
    // The first read starts the tournament's actor.
    registry.snapshot(id).await.expect("the game loads");
    (registry, broadcasts, id, store)
}

/// The next broadcast, letting paused time run on to the next timer if need be.
/// An answer's version when applied, or its refusal.
pub(super) fn version_or_refusal(answer: &Answer) -> Result<i64, Option<Refusal>> {
    match &answer.recorded {
        Recorded::Applied { version, .. } => version.ok_or(None),
        Recorded::Refused { refusal, .. } => Err(Some(*refusal)),
        Recorded::Invalid { .. } => Err(None),
    }
}

pub(super) async fn next_broadcast(broadcasts: &mut mpsc::UnboundedReceiver<Snapshot>) -> Snapshot {
    broadcasts.recv().await.expect("a broadcast")
}

/// Whether a broadcast arrives within `wait` of paused time.
pub(super) async fn silent_for(broadcasts: &mut mpsc::UnboundedReceiver<Snapshot>, wait: Duration) -> bool {
    tokio::time::timeout(wait, broadcasts.recv()).await.is_err()
}

#[tokio::test(start_paused = true)]
async fn a_segment_that_runs_out_moves_the_clock_by_itself() {
    let start = paused_now();
    let (registry, mut broadcasts, id) = live(running_game(start)).await;
    assert_eq!(registry.snapshot(id).await.expect("a state").clock.current_level_idx, 0);

    let after_level = next_broadcast(&mut broadcasts).await;
    assert_eq!(after_level.clock.current_level_idx, 1);
    assert_eq!(
        after_level.clock.level_started_at,
        Some(start + minutes(20)),
        "the break starts exactly at the level's end"
    );
    assert_eq!(after_level.version, 2);
    assert_eq!(paused_now(), start + minutes(20), "no earlier and no later");

    let after_break = next_broadcast(&mut broadcasts).await;
    assert_eq!(after_break.clock.current_level_idx, 2);
    assert_eq!(after_break.clock.level_started_at, Some(start + minutes(35)));
    assert!(silent_for(&mut broadcasts, Duration::from_secs(24 * 3600)).await, "the last segment simply runs on");
    assert_eq!(registry.snapshot(id).await.expect("a state").clock.current_level_idx, 2);
}

#[tokio::test(start_paused = true)]
async fn a_paused_clock_waits_and_resumes_where_it_stopped() {
    let start = paused_now();
    let (registry, mut broadcasts, id) = live(running_game(start)).await;
    tokio::time::advance(Duration::from_secs(5 * 60)).await;
    let by = Uuid::from_u128(99);
    let paused = registry.command(id, Command::Pause, by).await.expect("paused").state;
    assert_eq!(paused.clock.paused_at, Some(start + minutes(5)));
    next_broadcast(&mut broadcasts).await;
    assert!(silent_for(&mut broadcasts, Duration::from_secs(3600)).await, "a paused clock does not move");

    let resumed = registry.command(id, Command::Resume, by).await.expect("resumed").state;
    assert_eq!(resumed.clock.level_started_at, Some(start + minutes(60)), "the hour paused does not count");
    next_broadcast(&mut broadcasts).await;
    let moved = next_broadcast(&mut broadcasts).await;
    assert_eq!(moved.clock.current_level_idx, 1);
    assert_eq!(paused_now(), start + minutes(80), "15 minutes of the level were left");
}

#[tokio::test(start_paused = true)]
async fn a_level_press_restarts_the_wait_for_the_new_segment() {
    let start = paused_now();
    let (registry, mut broadcasts, id) = live(running_game(start)).await;
    tokio::time::advance(Duration::from_secs(10 * 60)).await;
    let stepped =
        registry.command(id, Command::Level(Direction::Next), Uuid::from_u128(99)).await.expect("stepped").state;
    assert_eq!(stepped.clock.current_level_idx, 1);
    assert_eq!(stepped.clock.level_started_at, Some(start + minutes(10)));
    next_broadcast(&mut broadcasts).await;
    let moved = next_broadcast(&mut broadcasts).await;
    assert_eq!(moved.clock.current_level_idx, 2);
    assert_eq!(paused_now(), start + minutes(25), "the break's own 15 minutes, from the press");
}

#[tokio::test(start_paused = true)]
async fn an_actor_started_after_downtime_catches_up_at_once() {
    let start = paused_now() - minutes(45);
    let (registry, mut broadcasts, id) = live(running_game(start)).await;
    let state = registry.snapshot(id).await.expect("a state");
    let caught_up = if state.clock.current_level_idx == 2 { state } else { next_broadcast(&mut broadcasts).await };
    assert_eq!(caught_up.clock.current_level_idx, 2, "45 minutes cover the level and the break");
    assert_eq!(caught_up.clock.level_started_at, Some(start + minutes(35)));
    assert_eq!(caught_up.version, 2, "one change for the whole catch-up");
}

#[tokio::test(start_paused = true)]
async fn a_failed_clock_write_is_tried_again_and_a_press_first_moves_the_clock_on() {
    let start = paused_now();
    let (registry, mut broadcasts, id, store) = live_on(Arc::default(), running_game(start)).await;
    let actor = registry.actor_of(id).expect("an actor").get_id();
    store.failing_writes.store(1, Ordering::SeqCst);
    // The level runs out at 20:00 and that write fails; the actor will try again at 20:05.
    tokio::time::sleep(Duration::from_secs(20 * 60 + 2)).await;
    assert_eq!(registry.snapshot(id).await.expect("a state").clock.current_level_idx, 0, "nothing was written");
    // A press at 20:02 first moves the clock past the level that ran out, then steps.
    let stepped =
        registry.command(id, Command::Level(Direction::Next), Uuid::from_u128(99)).await.expect("stepped").state;
    assert_eq!(stepped.clock.current_level_idx, 2, "the press acts on the break that began at 20:00");
    assert_eq!(stepped.clock.level_started_at, Some(start + minutes(20) + TimeDelta::seconds(2)));
    assert_eq!(stepped.version, 3, "one change for the catch-up, one for the press");
    let heard = next_broadcast(&mut broadcasts).await;
    assert_eq!((heard.clock.current_level_idx, heard.version), (2, 3), "both written at once, one broadcast");
    assert_eq!(
        registry.actor_of(id).map(|actor| actor.get_id()),
        Some(actor),
        "a failed write does not cost the actor"
    );
}

#[tokio::test(start_paused = true)]
async fn the_clock_moves_on_once_the_store_is_back() {
    let start = paused_now();
    let (registry, mut broadcasts, id, store) = live_on(Arc::default(), running_game(start)).await;
    store.failing_writes.store(3, Ordering::SeqCst);
    let moved = next_broadcast(&mut broadcasts).await;
    assert_eq!(moved.clock.current_level_idx, 1);
    assert_eq!(paused_now(), start + minutes(20) + TimeDelta::seconds(15), "three failures, five seconds apart");
    assert_eq!(moved.clock.level_started_at, Some(start + minutes(20)), "the break still began when the level ended");
    assert_eq!(registry.snapshot(id).await.expect("a state").version, 2);
}

#[tokio::test(start_paused = true)]
async fn the_registry_lets_go_of_ended_and_idle_tournaments_but_keeps_running_ones() {
    let store: Arc<MemoryStore> = Arc::default();
    let mut finished = running_game(paused_now());
    finished.status = TournamentStatus::Finished;
    finished.tournament_id = Uuid::from_u128(8);
    let mut waiting = running_game(paused_now());
    waiting.status = TournamentStatus::Registration;
    waiting.clock = None;
    waiting.tournament_id = Uuid::from_u128(9);
    for game in [finished.clone(), waiting.clone()] {
        store.games.lock().expect("a lock").insert(game.tournament_id, game);
    }
    let (registry, _broadcasts, running, _) = live_on(store, running_game(paused_now())).await;
    for id in [finished.tournament_id, waiting.tournament_id] {
        registry.snapshot(id).await.expect("the game loads");
    }
    tokio::time::sleep(Duration::from_secs(3 * 60)).await;
    assert!(registry.actor_of(finished.tournament_id).is_none(), "an ended tournament needs no actor");
    assert!(registry.actor_of(waiting.tournament_id).is_some(), "not idle long enough yet");
    tokio::time::sleep(Duration::from_secs(10 * 60)).await;
    assert!(registry.actor_of(waiting.tournament_id).is_none(), "idle for ten minutes");
    assert!(registry.actor_of(running).is_some(), "a running clock keeps its actor");
    // A tournament let go comes back on its next read.
    assert_eq!(registry.snapshot(finished.tournament_id).await.expect("reloaded").status, TournamentStatus::Finished);
}

#[tokio::test(start_paused = true)]
async fn a_queue_made_offline_is_one_turn_one_write_and_one_broadcast() {
    let start = paused_now();
    let game = Game { last_command_at: Some(start), ..running_game(start) };
    let (registry, mut broadcasts, id) = live(game).await;
    tokio::time::sleep(Duration::from_secs(30 * 60)).await;
    assert_eq!(next_broadcast(&mut broadcasts).await.clock.current_level_idx, 1, "the break began at 20:00");
    let at = |minute: i64| Some(start + minutes(minute));
    let queue = vec![
        Timed::at(Command::Pause, at(5)),
        Timed::at(Command::Resume, at(8)),
        Timed::at(Command::Level(Direction::Next), at(10)),
        Timed::at(Command::Eliminate(Uuid::from_u128(1)), at(12)),
        Timed::at(Command::Pause, at(11)),
        Timed::at(Command::Level(Direction::Prev), at(13)),
    ];
    let outcome = registry.command(id, Order::Queue(queue), Uuid::from_u128(99)).await.expect("replayed");
    let answers: Vec<Result<i64, Option<Refusal>>> = outcome.answers.iter().map(version_or_refusal).collect();
    let conflict = Err(Some(Refusal::ConflictingChange));
    // Version 2 began the break; each change of the queue takes the next version.
    assert_eq!(answers, vec![Ok(3), Ok(4), Ok(5), Ok(6), conflict, Ok(7)], "each answered on its own");
    // Paused 5 to 8: the level would have run to 23; stepped on at 10 to the break, back at 13
    // to the first level, which runs from there (to 33; it is 30 now).
    let state = outcome.state;
    assert_eq!(state.version, 7);
    assert_eq!(state.clock.current_level_idx, 0, "the level running since 20:00 was taken back");
    assert_eq!(state.clock.level_started_at, Some(start + minutes(13)));
    assert_eq!(state.eliminations.first().map(|e| e.eliminated_at), Some(start + minutes(12)));
    let heard = next_broadcast(&mut broadcasts).await;
    assert_eq!(heard.version, 7);
    assert!(silent_for(&mut broadcasts, Duration::from_secs(60)).await, "one broadcast for the whole queue");
}
