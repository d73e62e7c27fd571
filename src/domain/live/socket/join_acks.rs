//! What a `join` is acked with, made once for every socket that joins while a state is
//! current rather than once per socket: the LiveState as JSON, or, for a client that says the
//! version it holds, the `patch` from that version to the current one. In a reconnect burst
//! thousands of sockets join within a second, nearly all holding a state a press or two old:
//! each used to get the 65 KB state serialised for it alone. Each answer writes the moment it
//! is sent as `serverTime` ([`Stamped`], [`JoinPatch`]): an app corrects its clock by it.
//!
//! A node keeps, for each tournament joined on it lately, the states it saw in the last
//! [`KEPT_FOR`] (those its joins read and those it broadcast), at most [`MOST_STATES`], and
//! what it made of them. A tournament nobody joins keeps nothing here. All of it lives in one
//! cache weighed in bytes, at most the node's `LIVE_JOIN_ACKS_BYTES`: past it the least
//! recently used entries go (a join then gets its ack made again, or the state whole instead
//! of a patch). What a join needs is made once however many sockets ask at once (the cache's
//! loading is single-flight per tournament, version and version held), on the blocking pool,
//! and under no lock: the other joins wait without holding a worker.
//!
//! Where sockets may negotiate permessage-deflate, a state's text after its `serverTime` (all
//! of it but a few dozen bytes) is also kept compressed in engineioxide
//! ([`engineioxide::compressed_parts`]) while its entry lives: each such ack is then compressed
//! around it in microseconds, on its socket's task, instead of 65 KB at a time on the blocking
//! pool (10,000 joins took 6.3 s instead of 2.3 s plain, and left 1.7 KiB more per connection
//! in the heap).

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use engineioxide::compressed_parts::{self, KeptPart};
use floor_actors::live::{LiveState, Snapshot};
use moka::future::Cache;
use moka::ops::compute::Op;
use moka::policy::EvictionPolicy;
use uuid::Uuid;

use crate::domain::live::events::{JoinAck, JoinPatch};
use crate::domain::live::json::Stamped;

/// How long a state seen is kept to patch from: longer than an app's reconnect takes.
const KEPT_FOR: Duration = Duration::from_secs(60);

/// The most states kept of one tournament.
const MOST_STATES: usize = 16;

/// What nobody joined for this long is forgotten here.
const IDLE_FOR: Duration = Duration::from_secs(120);

/// What an entry costs beyond its JSON: the key, the cache's own bookkeeping.
const ENTRY_BYTES: usize = 256;

/// The acks of this node's joins.
pub struct JoinAcks {
    kept: Cache<Key, Kept>,
    /// Keep each state's tail compressed: sockets may negotiate permessage-deflate.
    compressed: bool,
}

/// What the cache keeps an entry under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Key {
    /// The states of a tournament seen lately.
    Seen(Uuid),
    /// What was made for a join that read `version`, from a client holding `from` (`None`:
    /// the state whole).
    Made { tournament_id: Uuid, version: i64, from: Option<i64> },
}

/// An entry of the cache.
#[derive(Clone)]
enum Kept {
    Seen(Arc<Seen>),
    State(Arc<AckState>),
    /// `None`: the patch would outweigh the state.
    Patch(Option<Arc<JoinPatch>>),
}

/// What a join is acked with.
pub enum Made {
    /// The state whole.
    State(Arc<AckState>),
    /// The patch from the version the client holds.
    Patch(Arc<JoinPatch>),
}

impl Made {
    /// The ack, as of `now`: the moment it is sent.
    pub fn ack(&self, now: DateTime<Utc>) -> JoinAck<'_> {
        match self {
            Self::State(state) => JoinAck::joined(state.stamped.at(now)),
            Self::Patch(patch) => JoinAck::patched(patch.at(now)),
        }
    }
}

/// A state's JSON for the acks.
pub struct AckState {
    stamped: Stamped,
    /// While this lives, an ack that holds the state compresses around its tail's one
    /// compression.
    compressed_tail: Option<KeptPart>,
}

impl AckState {
    /// `state`'s JSON, its tail kept compressed if `compressed`.
    fn of(state: &LiveState, compressed: bool) -> Result<Self, Unmade> {
        let stamped = Stamped::of(state)?;
        let compressed_tail =
            if compressed { compressed_parts::keep(stamped.tail()?.into()).map_err(Unmade::Compressed)? } else { None };
        Ok(Self { stamped, compressed_tail })
    }

    fn bytes(&self) -> usize {
        self.stamped.bytes() + self.compressed_tail.as_ref().map_or(0, KeptPart::bytes)
    }
}

/// One tournament's recent states, oldest first. Never changed: a new state makes a new one,
/// weighed again.
struct Seen {
    states: Vec<(Instant, Snapshot)>,
    /// What one state of the tournament is taken to weigh (its JSON's length, estimated from
    /// the newest a join read; a broadcast state is taken to weigh the same).
    each: usize,
}

/// Why an ack could not be made.
#[derive(Debug, thiserror::Error)]
pub enum Unmade {
    #[error("serialising a join's ack: {0}")]
    Json(#[from] serde_json::Error),
    #[error("compressing a join's ack: {0}")]
    Compressed(std::io::Error),
    #[error("making a join's ack stopped: {0}")]
    Stopped(#[from] tokio::task::JoinError),
}

impl JoinAcks {
    /// Acks that keep at most `bytes` of states and JSON on this node, and each state's tail
    /// compressed if `compressed` (sockets may negotiate permessage-deflate).
    pub fn new(bytes: u64, compressed: bool) -> Self {
        let kept = Cache::builder()
            .max_capacity(bytes)
            .weigher(|_: &Key, kept: &Kept| u32::try_from(kept.weight()).unwrap_or(u32::MAX))
            .eviction_policy(EvictionPolicy::lru())
            .time_to_idle(IDLE_FOR)
            .build();
        Self { kept, compressed }
    }

    /// The ack of a join that read `current`, from a client holding `held` (if it said).
    pub async fn made(&self, current: &Snapshot, held: Option<i64>) -> Result<Made, Arc<Unmade>> {
        let seen = self.see(current).await;
        if let Some(held) = held
            && let Some(before) = seen.state(held)
            && let Some(patch) = self.patch(before, current).await?
        {
            return Ok(Made::Patch(patch));
        }
        self.state(current).await.map(Made::State)
    }

    /// A state this node broadcast: kept to patch from if the tournament was joined here
    /// lately. No serialisation and no estimate here: the broadcast waits on this.
    pub async fn broadcast(&self, state: &Snapshot) {
        let key = Key::Seen(state.tournament_id);
        if !self.kept.contains_key(&key) {
            return;
        }
        let now = Instant::now();
        self.kept
            .entry(key)
            .and_compute_with(|entry| {
                let op = match entry.map(|entry| entry.into_value()) {
                    Some(Kept::Seen(seen)) => match seen.with(state, now, seen.each) {
                        Some(next) => Op::Put(Kept::Seen(Arc::new(next))),
                        None => Op::Nop,
                    },
                    _ => Op::Nop,
                };
                std::future::ready(op)
            })
            .await;
    }

    /// The states of `current`'s tournament kept, `current` among them unless a newer one is.
    async fn see(&self, current: &Snapshot) -> Arc<Seen> {
        let key = Key::Seen(current.tournament_id);
        if let Some(Kept::Seen(seen)) = self.kept.get(&key).await
            && seen.newest().is_some_and(|newest| newest.version >= current.version)
        {
            return seen;
        }
        let (now, each) = (Instant::now(), estimated_len(current));
        let computed = self
            .kept
            .entry(key)
            .and_compute_with(|entry| {
                let op = match entry.map(|entry| entry.into_value()) {
                    Some(Kept::Seen(seen)) => match seen.with(current, now, each) {
                        Some(next) => Op::Put(Kept::Seen(Arc::new(next))),
                        None => Op::Nop,
                    },
                    _ => Op::Put(Kept::Seen(Arc::new(Seen::first(current, now, each)))),
                };
                std::future::ready(op)
            })
            .await;
        match computed.into_entry().map(|entry| entry.into_value()) {
            Some(Kept::Seen(seen)) => seen,
            _ => Arc::new(Seen::first(current, now, each)),
        }
    }

    /// The JSON of `current` whole, made once.
    async fn state(&self, current: &Snapshot) -> Result<Arc<AckState>, Arc<Unmade>> {
        let key = Key::Made { tournament_id: current.tournament_id, version: current.version, from: None };
        let (state, compressed) = (current.clone(), self.compressed);
        let make = async move {
            let made = tokio::task::spawn_blocking(move || AckState::of(&state, compressed)).await??;
            Ok(Kept::State(Arc::new(made)))
        };
        match self.kept.try_get_with(key, make).await? {
            Kept::State(made) => Ok(made),
            // Another kind under this key cannot be: make it again rather than fail the join.
            Kept::Seen(_) | Kept::Patch(_) => AckState::of(current, self.compressed).map(Arc::new).map_err(Arc::new),
        }
    }

    /// The patch from `before` to `current`, made once; `None` when it would outweigh the state.
    async fn patch(&self, before: &Snapshot, current: &Snapshot) -> Result<Option<Arc<JoinPatch>>, Arc<Unmade>> {
        let key =
            Key::Made { tournament_id: current.tournament_id, version: current.version, from: Some(before.version) };
        let (from, to) = (before.clone(), current.clone());
        let make = async move {
            let patch = tokio::task::spawn_blocking(move || JoinPatch::across(&from, &to)).await??;
            Ok(Kept::Patch(patch.map(Arc::new)))
        };
        match self.kept.try_get_with(key, make).await? {
            Kept::Patch(patch) => Ok(patch),
            Kept::Seen(_) | Kept::State(_) => Ok(None),
        }
    }
}

impl Kept {
    /// What the entry holds, in bytes of JSON (a state not yet serialised by its estimate).
    fn weight(&self) -> usize {
        ENTRY_BYTES
            + match self {
                Self::Seen(seen) => seen.states.len() * seen.each,
                Self::State(made) => made.bytes(),
                Self::Patch(patch) => patch.as_ref().map_or(0, |patch| patch.bytes()),
            }
    }
}

impl Seen {
    fn first(state: &Snapshot, now: Instant, each: usize) -> Self {
        Self { states: vec![(now, state.clone())], each }
    }

    /// These states with `state` kept too, when it is newer than every state kept, and
    /// without those seen more than [`KEPT_FOR`] ago (but the newest) or past
    /// [`MOST_STATES`]; `None` when `state` is not newer.
    fn with(&self, state: &Snapshot, now: Instant, each: usize) -> Option<Self> {
        if self.newest().is_some_and(|newest| newest.version >= state.version) {
            return None;
        }
        let recent = self.states.iter().filter(|(seen, _)| now.saturating_duration_since(*seen) <= KEPT_FOR);
        let mut states: Vec<_> = recent.cloned().chain([(now, state.clone())]).collect();
        let over = states.len().saturating_sub(MOST_STATES);
        states.drain(..over);
        Some(Self { states, each })
    }

    fn newest(&self) -> Option<&Snapshot> {
        self.states.last().map(|(_, state)| state)
    }

    /// The state of `version`, if kept.
    fn state(&self, version: i64) -> Option<&Snapshot> {
        self.states.iter().map(|(_, state)| state).find(|state| state.version == version)
    }
}

/// About the length of `state`'s JSON, without serialising it: what its tables, seats,
/// eliminations and levels take, each by the length of its fixed parts and its names.
fn estimated_len(state: &LiveState) -> usize {
    /// `{"seatNo":3,"registrationId":"<uuid>","name":""},`
    const SEAT: usize = 80;
    /// `{"registrationId":"<uuid>","name":"","place":123,"eliminatedAt":"<RFC 3339, ns>"},`
    const ELIMINATION: usize = 130;
    /// `{"tableNo":1,"seats":[]},`
    const TABLE: usize = 25;
    /// One level or break of the clock.
    const LEVEL: usize = 100;
    /// The rest: the id, the times, the counts.
    const REST: usize = 400;
    let seats: usize = state.tables.iter().flat_map(|table| &table.seats).map(|seat| SEAT + seat.name.len()).sum();
    let eliminations: usize = state.eliminations.iter().map(|out| ELIMINATION + out.name.len()).sum();
    REST + state.clock.levels.len() * LEVEL + state.tables.len() * TABLE + seats + eliminations
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Large enough for anything these tests keep.
    const PLENTY: u64 = 64 << 20;

    fn state(version: i64, paused: bool) -> Snapshot {
        let mut state = crate::domain::live::events::tests::state(version);
        state.clock.paused_at = paused.then(chrono::Utc::now);
        Arc::new(state)
    }

    fn patch_of(made: &Made) -> Option<serde_json::Value> {
        match made {
            Made::Patch(patch) => Some(serde_json::to_value(patch.at(Utc::now())).expect("json")),
            Made::State(_) => None,
        }
    }

    #[tokio::test]
    async fn a_join_holding_a_kept_version_gets_the_patch_and_any_other_the_state() {
        let acks = JoinAcks::new(PLENTY, false);
        let (first, second) = (state(1, false), state(2, true));
        assert!(patch_of(&acks.made(&first, None).await.expect("made")).is_none(), "no version said: the state");
        acks.broadcast(&second).await;
        let patch = patch_of(&acks.made(&second, Some(1)).await.expect("made")).expect("a patch from 1");
        assert_eq!((patch["fromVersion"].as_i64(), patch["version"].as_i64()), (Some(1), Some(2)));
        let current = patch_of(&acks.made(&second, Some(2)).await.expect("made")).expect("a patch from 2");
        let paths: Vec<_> = current["ops"].as_array().expect("ops").iter().map(|op| op["path"].clone()).collect();
        assert_eq!(paths, ["/serverTime"], "only the time to change for a client that is current");
        for unknown in [0, 3] {
            assert!(patch_of(&acks.made(&second, Some(unknown)).await.expect("made")).is_none(), "{unknown}");
        }
    }

    #[tokio::test]
    async fn what_a_join_is_acked_with_is_made_once_per_state() {
        let acks = JoinAcks::new(PLENTY, false);
        let (first, second) = (state(1, false), state(2, true));
        acks.made(&first, None).await.expect("made");
        acks.broadcast(&second).await;
        let state_of = |made: Made| match made {
            Made::State(state) => state,
            Made::Patch(_) => panic!("the state whole"),
        };
        let patch_of = |made: Made| match made {
            Made::Patch(patch) => patch,
            Made::State(_) => panic!("a patch"),
        };
        let a = state_of(acks.made(&second, None).await.expect("made"));
        let b = state_of(acks.made(&second, None).await.expect("made"));
        assert!(Arc::ptr_eq(&a, &b), "the state's JSON is shared");
        let c = patch_of(acks.made(&second, Some(1)).await.expect("made"));
        let d = patch_of(acks.made(&second, Some(1)).await.expect("made"));
        assert!(Arc::ptr_eq(&c, &d), "the patch is shared");
        acks.made(&first, None).await.expect("an older state read late");
        let e = state_of(acks.made(&second, None).await.expect("made"));
        assert!(Arc::ptr_eq(&a, &e), "an older state does not replace the newest");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn many_joins_at_once_share_one_making() {
        let acks = Arc::new(JoinAcks::new(PLENTY, false));
        let current = state(1, false);
        let joins: Vec<_> = (0..64)
            .map(|_| {
                let (acks, current) = (acks.clone(), current.clone());
                tokio::spawn(async move { acks.made(&current, None).await.expect("made") })
            })
            .collect();
        let mut made = Vec::new();
        for join in joins {
            match join.await.expect("joined") {
                Made::State(state) => made.push(state),
                Made::Patch(_) => panic!("the state whole"),
            }
        }
        assert!(made.windows(2).all(|pair| Arc::ptr_eq(&pair[0], &pair[1])), "one JSON for all of them");
    }

    #[tokio::test]
    async fn a_broadcast_of_a_tournament_nobody_joined_keeps_nothing() {
        let acks = JoinAcks::new(PLENTY, false);
        acks.broadcast(&state(1, false)).await;
        acks.made(&state(2, true), None).await.expect("made");
        assert!(patch_of(&acks.made(&state(2, true), Some(1)).await.expect("made")).is_none(), "1 was never kept");
    }

    #[test]
    fn at_most_the_newest_states_are_kept() {
        let now = Instant::now();
        let mut seen = Seen::first(&state(1, false), now, 1);
        for version in 2..=40 {
            seen = seen.with(&state(version, version % 2 == 0), now, 1).expect("newer");
        }
        assert_eq!(seen.states.len(), MOST_STATES);
        let oldest = 40 - i64::try_from(MOST_STATES).expect("a few") + 1;
        assert_eq!(seen.states.first().map(|(_, kept)| kept.version), Some(oldest));
        assert!(seen.state(20).is_none(), "let go of");
        assert!(seen.state(39).is_some());
        assert!(seen.with(&state(40, true), now, 1).is_none(), "not newer");
        let later = seen.with(&state(41, false), now + KEPT_FOR + Duration::from_secs(1), 1).expect("newer");
        assert_eq!(later.states.iter().map(|(_, kept)| kept.version).collect::<Vec<_>>(), [41], "the old ones let go");
    }

    /// A LiveState of `players` seated at tables of ten, each with a name of 30 bytes.
    fn big(tournament_id: Uuid, players: usize) -> Snapshot {
        use floor_actors::live::state::{SeatView, TableView};
        let mut state = crate::domain::live::events::tests::state(1);
        state.tournament_id = tournament_id;
        state.tables = (0..players.div_ceil(10))
            .map(|table| TableView {
                table_no: i32::try_from(table).expect("a few") + 1,
                seats: (0..10)
                    .map(|seat| SeatView {
                        seat_no: seat + 1,
                        registration_id: Uuid::now_v7(),
                        name: format!("Player {table:04} at seat {seat:02} .."),
                    })
                    .collect(),
            })
            .collect();
        Arc::new(state)
    }

    #[test]
    fn a_state_is_estimated_at_about_the_length_of_its_json() {
        let state = big(Uuid::now_v7(), 500);
        let (estimated, actual) = (estimated_len(&state), serde_json::to_vec(&*state).expect("json").len());
        assert!(actual * 9 / 10 <= estimated && estimated <= actual * 11 / 10, "{estimated} for {actual}");
    }

    /// A node joined on tournament after tournament (finished ones, say, which nobody else
    /// reads) keeps no more than its budget: the least recently used go first.
    #[tokio::test]
    async fn what_is_kept_stays_within_the_bytes_allowed_the_oldest_going_first() {
        const BUDGET: u64 = 1 << 20;
        let acks = JoinAcks::new(BUDGET, false);
        let ids: Vec<Uuid> = (0..40).map(|_| Uuid::now_v7()).collect();
        let mut one = 0;
        for id in &ids {
            let state = big(*id, 500);
            acks.made(&state, None).await.expect("made");
            one = estimated_len(&state) + serde_json::to_vec(&*state).expect("json").len();
        }
        acks.kept.run_pending_tasks().await;
        assert!(one * 40 > 3 * usize::try_from(BUDGET).expect("fits"), "40 joins of {one} bytes outweigh it");
        assert!(acks.kept.weighted_size() <= BUDGET, "{} bytes kept", acks.kept.weighted_size());
        let kept = |id: &Uuid| acks.kept.contains_key(&Key::Seen(*id));
        assert!(!kept(&ids[0]), "the first joined went");
        assert!(kept(&ids[39]), "the last joined stays");
    }
}
