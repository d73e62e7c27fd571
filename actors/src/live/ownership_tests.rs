//! One owner per tournament: a node runs a tournament's actor only when the store says it
//! holds it; otherwise it follows the tournament (reads stay current, commands name the
//! owner), takes it when its owner let go, and hands its own over at shutdown.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use floor_entities::enums::TournamentStatus;
use uuid::Uuid;

use crate::error::{LiveError, LiveResult, Refusal};
use crate::live::{
    Broadcaster, Change, Command, Game, KeyRecord, Keys, LiveState, LiveStore, Made, Owner, Persisted, Player,
    Registry, Seat, Snapshot,
};
use crate::rules::clock::Clock;
use crate::rules::structure::Segment;

const ID: Uuid = Uuid::from_u128(7);
const OTHER_NODE: &str = "http://10.0.0.2:8080";

/// One running game in memory, written with the version guard; who holds it is set by the
/// test, and the releases are recorded.
struct SharedStore {
    game: Mutex<Game>,
    owner: Mutex<Owner>,
    released: Mutex<Vec<Uuid>>,
    /// Every load waits for a read of it: a test holding it for writing holds the loads.
    loads_open: tokio::sync::RwLock<()>,
    loads: std::sync::atomic::AtomicUsize,
    /// Every read of the stored version waits for a read of it, as `loads_open` for loads.
    versions_open: tokio::sync::RwLock<()>,
    /// Every write spends a permit first: a test that takes them all holds the writes, and lets
    /// them through one at a time.
    writes_open: tokio::sync::Semaphore,
}

/// The permits of [`SharedStore::writes_open`].
const WRITES: u32 = 1000;

impl SharedStore {
    fn new(owner: Owner) -> Arc<Self> {
        let player = |n: u128, seat_no| Player {
            registration_id: Uuid::from_u128(n),
            name: format!("Player {n}"),
            seat: Seat { table_no: 1, seat_no },
            eliminated_at: None,
            created_at: Utc::now(),
        };
        let game = Game {
            tournament_id: ID,
            status: TournamentStatus::Running,
            version: 1,
            clock: Some(Clock { current_level_idx: 0, level_started_at: Utc::now(), paused_at: None }),
            levels: vec![Segment::Level { duration_min: 60, small_blind: 100, big_blind: 200, ante: None, note: None }],
            chips_in_play: 20_000,
            players: vec![player(1, 1), player(2, 2)],
            last_command_at: None,
        };
        Arc::new(Self {
            game: Mutex::new(game),
            owner: Mutex::new(owner),
            released: Mutex::default(),
            loads_open: tokio::sync::RwLock::new(()),
            loads: std::sync::atomic::AtomicUsize::new(0),
            versions_open: tokio::sync::RwLock::new(()),
            writes_open: tokio::sync::Semaphore::new(WRITES as usize),
        })
    }

    fn set_owner(&self, owner: Owner) {
        *self.owner.lock().expect("a lock") = owner;
    }

    /// Another node changes the game (a pause), as the database would show it.
    fn changed_elsewhere(&self) -> i64 {
        let mut game = self.game.lock().expect("a lock");
        let pause = game.pause(Utc::now()).expect("a pause").expect("a change");
        game.apply(&pause);
        game.version
    }
}

impl LiveStore for SharedStore {
    async fn claim(&self, _: Uuid) -> LiveResult<Owner> {
        Ok(self.owner.lock().expect("a lock").clone())
    }

    async fn release(&self, tournament_id: Uuid) {
        self.released.lock().expect("a lock").push(tournament_id);
    }

    async fn load(&self, _: Uuid) -> LiveResult<Option<Game>> {
        let _open = self.loads_open.read().await;
        self.loads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(Some(self.game.lock().expect("a lock").clone()))
    }

    async fn version(&self, _: Uuid) -> LiveResult<Option<i64>> {
        let _open = self.versions_open.read().await;
        Ok(Some(self.game.lock().expect("a lock").version))
    }

    async fn persist(&self, game: &Game, changes: &[(Change, Option<Made>)], _: Keys<'_>) -> LiveResult<Persisted> {
        // Spent, not given back: each permit a test adds lets one write through.
        self.writes_open.acquire().await.map_err(|err| LiveError::Internal(err.into()))?.forget();
        let mut stored = self.game.lock().expect("a lock");
        if stored.version != game.version {
            return Ok(Persisted::Stale);
        }
        stored.apply_all(changes);
        Ok(Persisted::Written)
    }

    async fn start(&self, _: Uuid, _: Uuid, _: DateTime<Utc>, _: Option<&KeyRecord>) -> LiveResult<()> {
        Err(LiveError::Internal(anyhow::anyhow!("not in these tests")))
    }

    async fn confirm(&self, _: Uuid, _: Uuid, _: DateTime<Utc>, _: Option<&KeyRecord>) -> LiveResult<()> {
        Err(LiveError::Internal(anyhow::anyhow!("not in these tests")))
    }
}

struct Silent;

impl Broadcaster for Silent {
    async fn broadcast(&self, _: Snapshot) {}
}

async fn node(store: &Arc<SharedStore>) -> Registry<SharedStore, Silent> {
    Registry::start(store.clone(), Arc::new(Silent), Utc::now).await.expect("a registry")
}

/// Waits (up to a second) for the node to show `version`.
async fn shows(registry: &Registry<SharedStore, Silent>, version: i64) -> bool {
    for _ in 0..100 {
        if registry.snapshot(ID).await.expect("a state").version == version {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

fn elsewhere(result: LiveResult<impl std::fmt::Debug>) -> Option<String> {
    match result {
        Err(LiveError::Elsewhere { owner }) => owner,
        other => panic!("expected the owner to be named, got {other:?}"),
    }
}

#[tokio::test]
async fn a_tournament_another_node_runs_is_followed_and_its_commands_name_that_node() {
    let store = SharedStore::new(Owner::Node(OTHER_NODE.to_owned()));
    let registry = node(&store).await;
    assert_eq!(registry.snapshot(ID).await.expect("a state").version, 1, "reads are served here");
    assert_eq!(registry.actor_count(), 0, "no actor here");
    assert_eq!(elsewhere(registry.command(ID, Command::Pause, Uuid::nil()).await).as_deref(), Some(OTHER_NODE));
    assert_eq!(store.game.lock().expect("a lock").version, 1, "nothing written here");

    let version = store.changed_elsewhere();
    registry.catch_up(ID, version);
    assert!(shows(&registry, version).await, "a note from the owner refreshes the follower");
    assert_eq!(registry.actor_count(), 0);
}

#[tokio::test]
async fn an_answer_from_the_owner_shows_at_once_and_an_older_one_never_goes_back() {
    let store = SharedStore::new(Owner::Node(OTHER_NODE.to_owned()));
    let registry = node(&store).await;
    let first = registry.snapshot(ID).await.expect("a state");
    let newer = Arc::new(LiveState { version: 5, ..(*first).clone() });
    registry.observe(newer);
    assert_eq!(registry.snapshot(ID).await.expect("a state").version, 5);
    registry.observe(Arc::new(LiveState { version: 3, ..(*first).clone() }));
    assert_eq!(registry.snapshot(ID).await.expect("a state").version, 5, "a late answer is older");
}

#[tokio::test]
async fn a_follower_takes_the_tournament_once_its_owner_let_go() {
    let store = SharedStore::new(Owner::Node(OTHER_NODE.to_owned()));
    let registry = node(&store).await;
    registry.snapshot(ID).await.expect("a state");
    store.set_owner(Owner::Here);
    let outcome = registry.command(ID, Command::Pause, Uuid::nil()).await.expect("run here now");
    assert_eq!(outcome.state.version, 2);
    assert_eq!(registry.actor_count(), 1);
    assert_eq!(registry.owned(), [ID]);
}

#[tokio::test]
async fn a_hand_over_finishes_the_actors_releases_them_and_takes_nothing_new() {
    let store = SharedStore::new(Owner::Here);
    let registry = node(&store).await;
    registry.command(ID, Command::Pause, Uuid::nil()).await.expect("run here");
    assert_eq!(registry.actor_count(), 1);
    store.set_owner(Owner::Nobody);
    assert_eq!(registry.hand_over(Duration::from_secs(5)).await, [ID]);
    assert_eq!(*store.released.lock().expect("a lock"), [ID]);
    assert_eq!(registry.actor_count(), 0);
    assert_eq!(elsewhere(registry.command(ID, Command::Resume, Uuid::nil()).await), None, "no node runs it yet");
    assert_eq!(registry.snapshot(ID).await.expect("reads go on").version, 2);
}

#[tokio::test]
async fn a_node_that_lost_its_hold_stops_its_actor_and_follows() {
    let store = SharedStore::new(Owner::Here);
    let registry = node(&store).await;
    registry.snapshot(ID).await.expect("a state");
    assert_eq!(registry.actor_count(), 1);
    store.set_owner(Owner::Node(OTHER_NODE.to_owned()));
    registry.let_go(ID);
    assert_eq!(registry.actor_count(), 0);
    assert_eq!(elsewhere(registry.command(ID, Command::Pause, Uuid::nil()).await).as_deref(), Some(OTHER_NODE));
}

#[tokio::test]
async fn a_tournament_whose_hold_ran_out_is_read_from_memory() {
    let store = SharedStore::new(Owner::Here);
    let registry = node(&store).await;
    registry.command(ID, Command::Pause, Uuid::nil()).await.expect("run here");
    store.set_owner(Owner::Node(OTHER_NODE.to_owned()));
    let loads = store.loads.load(std::sync::atomic::Ordering::SeqCst);
    registry.let_go(ID);
    let _held = store.loads_open.write().await;
    let read = tokio::time::timeout(Duration::from_millis(500), registry.snapshot(ID)).await;
    assert_eq!(read.expect("no load to wait for").expect("a state").version, 2, "the state the actor left");
    assert_eq!(store.loads.load(std::sync::atomic::Ordering::SeqCst), loads, "nothing loaded again");
    assert_eq!(registry.actor_count(), 0);
}

#[tokio::test]
async fn a_handed_over_tournament_is_read_from_memory_until_the_node_closes() {
    let store = SharedStore::new(Owner::Here);
    let registry = node(&store).await;
    registry.command(ID, Command::Pause, Uuid::nil()).await.expect("run here");
    store.set_owner(Owner::Nobody);
    let loads = store.loads.load(std::sync::atomic::Ordering::SeqCst);
    registry.hand_over(Duration::from_secs(5)).await;
    let _held = store.loads_open.write().await;
    let read = tokio::time::timeout(Duration::from_millis(500), registry.snapshot(ID)).await;
    assert_eq!(read.expect("no load to wait for").expect("a state").version, 2, "the state the actor left");
    assert_eq!(store.loads.load(std::sync::atomic::Ordering::SeqCst), loads, "nothing loaded again");
}

#[tokio::test]
async fn reads_keep_the_followers_state_while_a_take_over_loads_the_game() {
    let store = SharedStore::new(Owner::Node(OTHER_NODE.to_owned()));
    let registry = Arc::new(node(&store).await);
    assert_eq!(registry.snapshot(ID).await.expect("a state").version, 1);
    store.set_owner(Owner::Here);
    let held = store.loads_open.write().await;
    let taking = tokio::spawn({
        let registry = registry.clone();
        async move { registry.command(ID, Command::Pause, Uuid::nil()).await.map(|outcome| outcome.state.version) }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let read = tokio::time::timeout(Duration::from_millis(500), registry.snapshot(ID)).await;
    assert_eq!(read.expect("not waiting for the load").expect("a state").version, 1, "the follower's state");
    assert_eq!(registry.actor_count(), 0, "the actor waits for its load");
    drop(held);
    assert_eq!(taking.await.expect("the command ran").expect("run here now"), 2);
    assert_eq!(registry.actor_count(), 1);
    assert_eq!(registry.snapshot(ID).await.expect("a state").version, 2);
}

#[tokio::test]
async fn a_read_while_the_leaving_actor_finishes_its_commands_never_goes_back() {
    let store = SharedStore::new(Owner::Here);
    let registry = Arc::new(node(&store).await);
    registry.command(ID, Command::Pause, Uuid::nil()).await.expect("run here");
    // Two commands wait in the actor's mailbox, their writes held, when the node begins to leave.
    let open = u32::try_from(store.writes_open.available_permits()).expect("a few permits");
    store.writes_open.acquire_many(open).await.expect("the permits").forget();
    let command = |command: Command| {
        let registry = registry.clone();
        tokio::spawn(async move { registry.command(ID, command, Uuid::nil()).await.map(|done| done.state.version) })
    };
    let resume = command(Command::Resume);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let pause = command(Command::Pause);
    tokio::time::sleep(Duration::from_millis(20)).await;
    store.set_owner(Owner::Nobody);
    let handing = tokio::spawn({
        let registry = registry.clone();
        async move { registry.hand_over(Duration::from_secs(5)).await }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;

    store.writes_open.add_permits(1);
    assert_eq!(resume.await.expect("joined").expect("answered"), 3);
    assert!(!handing.is_finished(), "the actor still finishes the pause");
    assert_eq!(
        registry.snapshot(ID).await.expect("a state").version,
        3,
        "what the actor answered, not the state before"
    );
    store.writes_open.add_permits(1);
    assert_eq!(pause.await.expect("joined").expect("answered"), 4);
    assert_eq!(handing.await.expect("joined"), [ID]);
    assert_eq!(registry.snapshot(ID).await.expect("a state").version, 4);
}

#[tokio::test]
async fn a_follower_that_cannot_load_a_newer_stored_version_refuses_rather_than_go_back() {
    let store = SharedStore::new(Owner::Node(OTHER_NODE.to_owned()));
    let registry = node(&store).await;
    assert_eq!(registry.snapshot(ID).await.expect("a state").version, 1);
    let stored = store.changed_elsewhere();
    // The stored version is read at once; the state itself does not come.
    let held = store.loads_open.write().await;
    match registry.snapshot(ID).await {
        Err(LiveError::Refused { refusal: Refusal::Unavailable, .. }) => {}
        other => panic!("version {stored} is stored: expected a refusal, got {other:?}"),
    }
    drop(held);
    assert!(shows(&registry, stored).await, "caught up once the load comes");
}

#[tokio::test]
async fn while_the_stored_version_cannot_be_read_a_client_is_never_served_older_than_it_has_seen() {
    let store = SharedStore::new(Owner::Node(OTHER_NODE.to_owned()));
    let registry = node(&store).await;
    assert_eq!(registry.snapshot(ID).await.expect("a state").version, 1);
    let seen = store.changed_elsewhere();
    let versions = store.versions_open.write().await;
    let loads = store.loads_open.write().await;

    let asked = std::time::Instant::now();
    match registry.snapshot_since(ID, Some(seen)).await {
        Err(LiveError::Refused { refusal: Refusal::Unavailable, .. }) => {}
        other => panic!("the client has seen {seen}: expected a refusal, got {other:?}"),
    }
    assert!(asked.elapsed() < Duration::from_millis(1500), "refused in {:?}", asked.elapsed());
    let unsaid = registry.snapshot(ID).await.expect("what is held");
    assert_eq!(unsaid.version, 1, "a client that says nothing is served what the node holds");
    assert_eq!(registry.snapshot_since(ID, Some(1)).await.expect("as new as seen").version, 1);

    // The follower's own read of the game (asked for by the refused read) brings it up.
    drop(loads);
    assert_eq!(registry.snapshot_since(ID, Some(seen)).await.expect("caught up").version, seen);
    drop(versions);
}
