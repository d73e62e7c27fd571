//! Cold starts stay out of the supervisor: reads of tournaments that do not exist neither hold
//! up the start of a real one nor queue without bound.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use floor_entities::enums::TournamentStatus;
use tokio::sync::Semaphore;
use uuid::Uuid;

use crate::error::{LiveError, LiveResult, Refusal};
use crate::live::registry::COLD_START_QUEUE;
use crate::live::{Broadcaster, Change, Game, KeyRecord, Keys, LiveStore, Made, Persisted, Registry, Snapshot};

const KNOWN: Uuid = Uuid::from_u128(7);

/// One tournament, in registration; every lookup of another id waits at a gate, as a
/// database slowed by a flood would.
struct GatedStore {
    gate: Semaphore,
    lookups_of_unknown: AtomicUsize,
    /// Games of the real tournament loaded (each takes a while, as a database read does).
    loads_of_known: AtomicUsize,
}

impl GatedStore {
    fn closed() -> Arc<Self> {
        Arc::new(Self {
            gate: Semaphore::new(0),
            lookups_of_unknown: AtomicUsize::new(0),
            loads_of_known: AtomicUsize::new(0),
        })
    }

    fn open(&self) {
        self.gate.add_permits(Semaphore::MAX_PERMITS / 2);
    }

    async fn find(&self, tournament_id: Uuid) -> LiveResult<Option<Game>> {
        if tournament_id != KNOWN {
            self.lookups_of_unknown.fetch_add(1, Ordering::SeqCst);
            let _pass = self.gate.acquire().await.map_err(|err| LiveError::Internal(err.into()))?;
            return Ok(None);
        }
        Ok(Some(Game {
            tournament_id,
            status: TournamentStatus::Registration,
            version: 1,
            clock: None,
            levels: Vec::new(),
            chips_in_play: 0,
            players: Vec::new(),
            last_command_at: None,
        }))
    }
}

impl LiveStore for GatedStore {
    async fn load(&self, tournament_id: Uuid) -> LiveResult<Option<Game>> {
        if tournament_id == KNOWN {
            self.loads_of_known.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.find(tournament_id).await
    }

    async fn version(&self, tournament_id: Uuid) -> LiveResult<Option<i64>> {
        Ok(self.find(tournament_id).await?.map(|game| game.version))
    }

    async fn persist(&self, _: &Game, _: &[(Change, Option<Made>)], _: Keys<'_>) -> LiveResult<Persisted> {
        Ok(Persisted::Stale)
    }

    async fn start(&self, _: Uuid, _: Uuid, _: DateTime<Utc>, _: Option<&KeyRecord>) -> LiveResult<()> {
        Err(LiveError::Internal(anyhow::anyhow!("not in these tests")))
    }

    async fn confirm(&self, _: Uuid, _: Uuid, _: DateTime<Utc>, _: Option<&KeyRecord>) -> LiveResult<()> {
        Err(LiveError::Internal(anyhow::anyhow!("not in these tests")))
    }
}

struct Nobody;

impl Broadcaster for Nobody {
    async fn broadcast(&self, _: Snapshot) {}
}

async fn registry(store: &Arc<GatedStore>) -> Registry<GatedStore, Nobody> {
    Registry::start(store.clone(), Arc::new(Nobody), Utc::now).await.expect("a registry")
}

/// Starts `count` reads of unknown tournaments and lets them reach the gate.
async fn flood(
    registry: &Registry<GatedStore, Nobody>,
    store: &GatedStore,
    count: usize,
) -> Vec<tokio::task::JoinHandle<LiveResult<Snapshot>>> {
    let reads: Vec<_> = (0..count)
        .map(|n| {
            let registry = registry.clone();
            tokio::spawn(async move { registry.snapshot(Uuid::from_u128(1_000 + n as u128)).await })
        })
        .collect();
    // Bounded, so that reads held up elsewhere (as behind one supervisor) fail the test.
    for _ in 0..100_000 {
        if store.lookups_of_unknown.load(Ordering::SeqCst) >= count {
            break;
        }
        tokio::task::yield_now().await;
    }
    reads
}

fn refusal(read: &LiveResult<Snapshot>) -> Option<Refusal> {
    match read {
        Err(LiveError::Refused { refusal, .. }) => Some(*refusal),
        _ => None,
    }
}

#[tokio::test(start_paused = true)]
async fn reads_of_unknown_tournaments_do_not_hold_up_a_real_one() {
    let store = GatedStore::closed();
    let registry = registry(&store).await;
    let stuck = flood(&registry, &store, 100).await;

    // Paused time moves on only when every task waits: a read stuck behind the flood would
    // let the whole minute pass.
    let known = tokio::time::timeout(Duration::from_secs(60), registry.snapshot(KNOWN)).await;
    let known = known.expect("the real tournament opens while the flood waits").expect("its state");
    assert_eq!(known.status, TournamentStatus::Registration);
    assert!(registry.actor_of(KNOWN).is_some());

    store.open();
    for read in stuck {
        let read = read.await.expect("the read ends");
        assert_eq!(refusal(&read), Some(Refusal::NotFound));
    }
    assert!(registry.actor_of(Uuid::from_u128(1_000)).is_none(), "no actor for what does not exist");
}

#[tokio::test(start_paused = true)]
async fn a_caller_beyond_the_bound_is_told_to_come_back_and_the_bound_frees_up() {
    let store = GatedStore::closed();
    let registry = registry(&store).await;
    let stuck = flood(&registry, &store, COLD_START_QUEUE).await;

    let beyond = registry.snapshot(Uuid::from_u128(1)).await;
    assert_eq!(refusal(&beyond), Some(Refusal::Busy), "refused at once, not queued");
    let running = registry.snapshot(KNOWN).await;
    assert_eq!(refusal(&running), Some(Refusal::Busy), "a cold start waits its turn too");

    store.open();
    for read in stuck {
        assert_eq!(refusal(&read.await.expect("the read ends")), Some(Refusal::NotFound));
    }
    assert!(registry.snapshot(KNOWN).await.is_ok(), "the places are free again");
    assert_eq!(refusal(&registry.snapshot(Uuid::from_u128(2)).await), Some(Refusal::NotFound));

    // A tournament with an actor is read without a place in the queue, even while it is full.
    let store = GatedStore::closed();
    let registry = self::registry(&store).await;
    registry.snapshot(KNOWN).await.expect("the real tournament opens");
    let stuck = flood(&registry, &store, COLD_START_QUEUE).await;
    assert!(registry.snapshot(KNOWN).await.is_ok());
    store.open();
    for read in stuck {
        assert_eq!(refusal(&read.await.expect("the read ends")), Some(Refusal::NotFound));
    }
}

#[tokio::test(start_paused = true)]
async fn a_crowd_opening_one_tournament_shares_one_cold_start() {
    let store = GatedStore::closed();
    let registry = registry(&store).await;
    // Twice the queue: a venue's phones joining at once a tournament this node has not opened.
    let crowd: Vec<_> = (0..COLD_START_QUEUE * 2)
        .map(|_| {
            let registry = registry.clone();
            tokio::spawn(async move { registry.snapshot(KNOWN).await })
        })
        .collect();
    for read in crowd {
        let read = read.await.expect("the read ends");
        assert!(read.is_ok(), "every caller gets the state, none is told to come back: {:?}", refusal(&read));
    }
    assert_eq!(store.loads_of_known.load(Ordering::SeqCst), 1, "one load for the whole crowd");
}

#[tokio::test(start_paused = true)]
async fn a_crowd_waiting_for_a_tournament_that_does_not_exist_hears_so_from_one_lookup() {
    let store = GatedStore::closed();
    let registry = registry(&store).await;
    let crowd: Vec<_> = (0..50)
        .map(|_| {
            let registry = registry.clone();
            tokio::spawn(async move { registry.snapshot(Uuid::from_u128(99)).await })
        })
        .collect();
    for _ in 0..10_000 {
        if store.lookups_of_unknown.load(Ordering::SeqCst) >= 1 {
            break;
        }
        tokio::task::yield_now().await;
    }
    store.open();
    for read in crowd {
        assert_eq!(refusal(&read.await.expect("the read ends")), Some(Refusal::NotFound));
    }
    assert_eq!(store.lookups_of_unknown.load(Ordering::SeqCst), 1, "the others waited for the first");
}
