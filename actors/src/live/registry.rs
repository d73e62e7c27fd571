//! The registry: the one place that finds or starts a tournament's actor, under one
//! supervisor that restarts a failed actor from the database. It also keeps each actor's
//! latest LiveState, so reads never wait for the actor nor touch the database, and it lets
//! go of actors whose tournament ended or that sat idle.
//!
//! With several nodes, a node runs a tournament's actor only while it holds the tournament
//! ([`LiveStore::claim`]); the other nodes keep a follower: the latest state, read again from
//! the database when the owner's note says it moved on, and answer commands with
//! [`LiveError::Elsewhere`] so the server hands them to the owner.
//!
//! Finding a tournament that has no actor yet (a cold start) reads the database in the
//! caller's task, not in the supervisor's: the supervisor only starts actors from games
//! already loaded, so a flood of reads of unknown tournaments cannot hold up the start of a
//! real one. Unknown ids are answered by a version lookup without loading anything, and how
//! many cold starts may wait at once is bounded: callers beyond that are told to come back.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use floor_entities::enums::TournamentStatus;
use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use tokio::sync::{Notify, Semaphore, watch};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;
use uuid::Uuid;

use crate::error::{LiveError, LiveResult, Refusal};
use crate::live::actor::{Outcome, TimeSource, TournamentActor, TournamentMsg, Traced, to_millis};
use crate::live::command::Order;
use crate::live::game::Game;
use crate::live::state::{LiveState, Snapshot};
use crate::live::store::{Broadcaster, LiveStore, Owner};

/// An actor not used for this long is let go, unless its clock runs.
pub const IDLE_AFTER: Duration = Duration::from_secs(10 * 60);
/// How often the supervisor looks for actors to let go; an ended tournament's actor is let
/// go only after this long unused too, so commands already queued to it are answered.
const REAP_EVERY: Duration = Duration::from_secs(60);
/// The longest a caller waits for a live command's answer.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the supervisor waits before trying again to rebuild an actor it could not.
const REBUILD_RETRY: Duration = Duration::from_secs(5);
/// How many cold starts may be under way or waiting at once on a node: more callers are
/// refused at once ([`Refusal::Busy`]) rather than queued without bound. Finding out that a
/// tournament does not exist takes one indexed read, so only a flood fills it.
pub const COLD_START_QUEUE: usize = 256;
/// How many games are loaded from the database at once for cold starts, so that a burst of
/// first reads (a morning of tournaments, a restart) leaves the pool to the running ones.
pub const COLD_LOADS: usize = 16;

/// A tournament this node knows: its actor, or its follower, and its latest LiveState.
#[derive(Clone)]
struct Entry {
    role: Role,
    snapshot: watch::Receiver<Snapshot>,
    last_used: Instant,
}

#[derive(Clone)]
enum Role {
    /// This node runs the tournament.
    Owner(ActorRef<TournamentMsg>),
    /// Another node does (or none, while this one shuts down).
    Follower(Arc<Follower>),
}

impl Entry {
    fn actor(&self) -> Option<&ActorRef<TournamentMsg>> {
        match &self.role {
            Role::Owner(actor) => Some(actor),
            Role::Follower(_) => None,
        }
    }
}

/// What a node keeps of a tournament another node runs: its latest state, read again from
/// the database (by a task of its own, so many notes cost one read at a time) when a note
/// says the tournament moved on.
struct Follower {
    published: Arc<watch::Sender<Snapshot>>,
    wake: Arc<Notify>,
    task: JoinHandle<()>,
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Follower {
    fn start<S: LiveStore>(store: Arc<S>, now: TimeSource, game: &Game) -> (Arc<Self>, watch::Receiver<Snapshot>) {
        let tournament_id = game.tournament_id;
        let (published, snapshot) = watch::channel(Arc::new(LiveState::of(game, to_millis(now()))));
        let published = Arc::new(published);
        let wake = Arc::new(Notify::new());
        let task = tokio::spawn({
            let (published, wake) = (published.clone(), wake.clone());
            async move {
                loop {
                    wake.notified().await;
                    // Boxed: this task waits for the follower's life, and would otherwise keep
                    // room for a whole load of the game while it waits.
                    match Box::pin(store.load(tournament_id)).await {
                        Ok(Some(game)) => {
                            publish_if_newer(&published, Arc::new(LiveState::of(&game, to_millis(now()))))
                        }
                        Ok(None) => {}
                        Err(err) => {
                            tracing::warn!(%tournament_id, error = %err, "could not read a followed tournament")
                        }
                    }
                }
            }
        });
        (Arc::new(Self { published, wake, task }), snapshot)
    }
}

/// Publishes `state` unless the published one is as new: notes and answers may arrive out
/// of order, and a follower never goes back.
fn publish_if_newer(published: &watch::Sender<Snapshot>, state: Snapshot) {
    published.send_if_modified(|current| {
        let newer = state.version > current.version;
        if newer {
            *current = state;
        }
        newer
    });
}

type Entries = Arc<Mutex<HashMap<Uuid, Entry>>>;

fn entries(map: &Entries) -> MutexGuard<'_, HashMap<Uuid, Entry>> {
    locked(map)
}

/// A map behind a lock. A panic while holding it leaves a map that is still consistent
/// (single inserts and removals), so a poisoned lock is taken over.
fn locked<K, V>(map: &Mutex<HashMap<K, V>>) -> MutexGuard<'_, HashMap<K, V>> {
    map.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// How a cold start ended, for every caller that waited for it.
type Opened = Result<Entry, Arc<LiveError>>;

/// Cold starts under way, by tournament: a caller that finds one waits for its outcome
/// instead of starting another (and taking another place in the queue), so a venue's phones
/// joining a tournament this node has not opened yet cost one load, not one each.
type Openings = Arc<Mutex<HashMap<Uuid, watch::Receiver<Option<Opened>>>>>;

/// Takes a cold start off [`Openings`] when its opener is done, or gone.
struct Opening {
    openings: Openings,
    tournament_id: Uuid,
}

impl Drop for Opening {
    fn drop(&mut self) {
        locked(&self.openings).remove(&self.tournament_id);
    }
}

/// Finds or starts the actor of a tournament; cheap to clone.
pub struct Registry<S, B> {
    entries: Entries,
    openings: Openings,
    supervisor: ActorRef<SupervisorMsg>,
    store: Arc<S>,
    now: TimeSource,
    cold_starts: ColdStarts,
    _broadcaster: std::marker::PhantomData<B>,
}

impl<S, B> Clone for Registry<S, B> {
    fn clone(&self) -> Self {
        Self {
            entries: self.entries.clone(),
            openings: self.openings.clone(),
            supervisor: self.supervisor.clone(),
            store: self.store.clone(),
            now: self.now,
            cold_starts: self.cold_starts.clone(),
            _broadcaster: std::marker::PhantomData,
        }
    }
}

/// The bounds of cold starts: places in the queue, and permits to load a game.
#[derive(Clone)]
struct ColdStarts {
    queue: Arc<Semaphore>,
    loads: Arc<Semaphore>,
}

impl<S: LiveStore, B: Broadcaster> Registry<S, B> {
    /// Starts the supervisor.
    pub async fn start(store: Arc<S>, broadcaster: Arc<B>, now: TimeSource) -> anyhow::Result<Self> {
        let entries: Entries = Arc::default();
        let supervisor = LiveSupervisor { store: store.clone(), broadcaster, now, entries: entries.clone() };
        let (supervisor, _) = Actor::spawn(None, supervisor, ())
            .await
            .map_err(|err| anyhow::anyhow!("starting the live supervisor: {err}"))?;
        let cold_starts = ColdStarts {
            queue: Arc::new(Semaphore::new(COLD_START_QUEUE)),
            loads: Arc::new(Semaphore::new(COLD_LOADS)),
        };
        Ok(Self {
            entries,
            openings: Openings::default(),
            supervisor,
            store,
            now,
            cold_starts,
            _broadcaster: std::marker::PhantomData,
        })
    }

    /// The latest LiveState of a tournament, from its actor (started if needed).
    pub async fn snapshot(&self, tournament_id: Uuid) -> LiveResult<Snapshot> {
        let entry = self.entry(tournament_id).await?;
        let snapshot = entry.snapshot.borrow().clone();
        Ok(snapshot)
    }

    /// Runs a live command through the tournament's actor and waits for its answer; when
    /// another node runs the tournament, [`LiveError::Elsewhere`] names it.
    pub async fn command(&self, tournament_id: Uuid, order: impl Into<Order>, by: Uuid) -> LiveResult<Outcome> {
        let order = order.into();
        // An actor that stopped before it took the command (let go, or died just then) is
        // replaced and asked once more. One that took it and died before answering may have
        // written it: asking again could apply it twice, so that is an error to the caller.
        for _ in 0..2 {
            let actor = self.owner_actor(tournament_id).await?;
            let order = order.clone();
            let traced = Traced::waiting(tournament_id, &order);
            match actor.call(|reply| TournamentMsg::Command { order, by, reply, traced }, Some(COMMAND_TIMEOUT)).await {
                Ok(ractor::rpc::CallResult::Success(outcome)) => return outcome,
                Ok(_) => {
                    return Err(LiveError::Internal(anyhow::anyhow!(
                        "the tournament actor stopped or timed out while handling a command; read the live state for its effect"
                    )));
                }
                Err(_) => self.forget(tournament_id, &actor),
            }
        }
        Err(LiveError::Internal(anyhow::anyhow!("the tournament actor could not be reached")))
    }

    /// Tells the tournament's actor that the tournament changed outside it (a cancel, an
    /// edit), and waits until the actor has published it and told the watchers: a read after
    /// the change's answer shows it. Without an actor, one starts from the database and
    /// announces what it loaded. [`LiveError::Elsewhere`] when another node runs it.
    pub async fn reload(&self, tournament_id: Uuid) -> LiveResult<()> {
        let actor = self.owner_actor(tournament_id).await?;
        announce(&actor).await
    }

    /// A state another node answered for a tournament it runs: the follower here shows it at
    /// once, so a read on this node after the answer is current.
    pub fn observe(&self, state: Snapshot) {
        if let Some(Role::Follower(follower)) = entries(&self.entries).get(&state.tournament_id).map(|e| &e.role) {
            publish_if_newer(&follower.published, state);
        }
    }

    /// The tournament's state read again from the database now when another node runs it
    /// (this node may have missed its notes); `None` when this node runs it.
    pub async fn read_again(&self, tournament_id: Uuid) -> LiveResult<Option<Snapshot>> {
        let entry = self.entry(tournament_id).await?;
        let Role::Follower(follower) = &entry.role else { return Ok(None) };
        // The stored version first (one indexed read): the game is loaded only when it moved.
        let held = entry.snapshot.borrow().version;
        if self.store.version(tournament_id).await?.is_some_and(|stored| stored > held)
            && let Some(game) = self.store.load(tournament_id).await?
        {
            publish_if_newer(&follower.published, Arc::new(LiveState::of(&game, to_millis((self.now)()))));
        }
        let latest = entry.snapshot.borrow().clone();
        Ok(Some(latest))
    }

    /// The tournament's picture changed in the database outside any game (a deleted player's
    /// name): if this node holds it, it is read again now, and when its actor runs here the
    /// watchers are told. Returns once what this node serves shows the change; a tournament
    /// this node does not hold is read fresh at its next read anyway.
    pub async fn restate(&self, tournament_id: Uuid) -> LiveResult<()> {
        let Some(entry) = entries(&self.entries).get(&tournament_id).cloned() else { return Ok(()) };
        match &entry.role {
            Role::Owner(actor) => announce(actor).await,
            Role::Follower(follower) => {
                if let Some(game) = self.store.load(tournament_id).await? {
                    publish_if_newer(&follower.published, Arc::new(LiveState::of(&game, to_millis((self.now)()))));
                }
                Ok(())
            }
        }
    }

    /// Another node changed the tournament to `version`: what this node holds of it, if
    /// older, is read again from the database (the change's maker has told the watchers).
    pub fn catch_up(&self, tournament_id: Uuid, version: i64) {
        if let Some(entry) = entries(&self.entries).get(&tournament_id)
            && entry.snapshot.borrow().version < version
        {
            entry.catch_up();
        }
    }

    /// Everything here is read again (after this node could have missed other nodes' notes,
    /// such as when it lost Redis for a while).
    pub fn catch_up_all(&self) {
        for entry in entries(&self.entries).values() {
            entry.catch_up();
        }
    }

    /// Runs these tournaments here unless another node does (the running ones, at boot and
    /// when their owner went away), so their clocks move.
    pub async fn resume(&self, tournament_ids: &[Uuid]) {
        for id in tournament_ids {
            if let Err(err) = self.owner_actor(*id).await
                && !matches!(err, LiveError::Elsewhere { .. })
            {
                tracing::error!(tournament_id = %id, error = %err, "could not resume a live tournament");
            }
        }
    }

    /// The actor of a tournament if one is running here (for operators and tests).
    pub fn actor_of(&self, tournament_id: Uuid) -> Option<ActorRef<TournamentMsg>> {
        entries(&self.entries).get(&tournament_id).and_then(|entry| entry.actor().cloned())
    }

    /// How many tournament actors run here now.
    pub fn actor_count(&self) -> usize {
        entries(&self.entries).values().filter(|entry| entry.actor().is_some()).count()
    }

    /// The tournaments whose actor runs here.
    pub fn owned(&self) -> Vec<Uuid> {
        entries(&self.entries).iter().filter(|(_, entry)| entry.actor().is_some()).map(|(id, _)| *id).collect()
    }

    /// This node no longer holds the tournament (its hold ran out and another node took it):
    /// its actor stops without writing more, and the tournament is followed from now on.
    pub fn let_go(&self, tournament_id: Uuid) {
        let removed = {
            let mut map = entries(&self.entries);
            match map.get(&tournament_id) {
                Some(entry) if entry.actor().is_some() => map.remove(&tournament_id),
                _ => None,
            }
        };
        if let Some(actor) = removed.as_ref().and_then(Entry::actor) {
            tracing::warn!(%tournament_id, "another node took the tournament over; its actor here stops");
            actor.stop(Some("another node holds the tournament".into()));
        }
    }

    /// Hands every tournament this node runs over: each actor finishes the commands it has
    /// taken (within `grace`), then its tournament is released for another node. Commands
    /// arriving meanwhile find no actor here; with the store refusing new claims (a node
    /// shutting down), they are answered [`LiveError::Elsewhere`]. Returns the tournaments.
    pub async fn hand_over(&self, grace: Duration) -> Vec<Uuid> {
        let owned: Vec<(Uuid, ActorRef<TournamentMsg>)> = {
            let mut map = entries(&self.entries);
            let ids: Vec<Uuid> = map.iter().filter(|(_, entry)| entry.actor().is_some()).map(|(id, _)| *id).collect();
            ids.into_iter()
                .filter_map(|id| map.remove(&id).and_then(|entry| entry.actor().cloned()).map(|actor| (id, actor)))
                .collect()
        };
        let mut draining = JoinSet::new();
        for (tournament_id, actor) in owned {
            let store = self.store.clone();
            draining.spawn(async move {
                if actor.drain_and_wait(Some(grace)).await.is_err() {
                    tracing::warn!(%tournament_id, "a tournament actor did not finish its commands in time");
                    actor.stop(Some("handing over".into()));
                }
                store.release(tournament_id).await;
                tournament_id
            });
        }
        draining.join_all().await
    }

    /// Stops the supervisor and with it every actor.
    pub fn shutdown(&self) {
        entries(&self.entries).clear();
        self.supervisor.stop(None);
    }

    /// The actor of a tournament this node runs or may take now; [`LiveError::Elsewhere`]
    /// when another node runs it. A follower asks again, as its owner may have let go.
    async fn owner_actor(&self, tournament_id: Uuid) -> LiveResult<ActorRef<TournamentMsg>> {
        for _ in 0..2 {
            let entry = self.entry(tournament_id).await?;
            let follower = match &entry.role {
                Role::Owner(actor) => return Ok(actor.clone()),
                Role::Follower(follower) => follower.clone(),
            };
            match self.store.claim(tournament_id).await? {
                Owner::Here => {
                    // Taken: the follower gives way to an actor (started by the next cold start).
                    let mut map = entries(&self.entries);
                    if map.get(&tournament_id).is_some_and(|entry| is_same(&entry.role, &follower)) {
                        map.remove(&tournament_id);
                    }
                }
                Owner::Node(url) => return Err(LiveError::Elsewhere { owner: Some(url) }),
                Owner::Nobody => return Err(LiveError::Elsewhere { owner: None }),
            }
        }
        Err(LiveError::Internal(anyhow::anyhow!("the tournament changed hands while a command waited")))
    }

    fn running(&self, tournament_id: Uuid) -> Option<Entry> {
        let mut map = entries(&self.entries);
        let entry = map.get_mut(&tournament_id)?;
        entry.last_used = Instant::now();
        Some(entry.clone())
    }

    async fn entry(&self, tournament_id: Uuid) -> LiveResult<Entry> {
        loop {
            if let Some(entry) = self.running(tournament_id) {
                return Ok(entry);
            }
            let turn = {
                let mut openings = locked(&self.openings);
                match openings.get(&tournament_id) {
                    Some(under_way) => Err(under_way.clone()),
                    None => {
                        let (done, under_way) = watch::channel(None);
                        openings.insert(tournament_id, under_way);
                        Ok(done)
                    }
                }
            };
            match turn {
                Ok(done) => {
                    let opening = Opening { openings: self.openings.clone(), tournament_id };
                    let opened = self.cold_start(tournament_id).await;
                    let _ = done.send(Some(opened.as_ref().map(Clone::clone).map_err(|err| Arc::new(err.again()))));
                    drop(opening);
                    return opened;
                }
                Err(mut under_way) => {
                    let outcome = under_way.wait_for(Option::is_some).await.map(|outcome| outcome.clone());
                    match outcome {
                        Ok(Some(opened)) => return opened.map_err(|err| err.again()),
                        // The opener's caller went away before it was done: open it here.
                        Ok(None) | Err(_) => continue,
                    }
                }
            }
        }
    }

    /// Loads the game and has the supervisor start its actor, within the node's bounds.
    async fn cold_start(&self, tournament_id: Uuid) -> LiveResult<Entry> {
        let Ok(_place) = self.cold_starts.queue.try_acquire() else {
            return Err(LiveError::refused(Refusal::Busy, "too many tournaments are being opened at once; try again"));
        };
        if self.store.version(tournament_id).await?.is_none() {
            return Err(LiveError::not_found("tournament"));
        }
        let _load = self.cold_starts.loads.acquire().await.map_err(|err| LiveError::Internal(err.into()))?;
        // Another caller may have started it while this one waited for its turn.
        if let Some(entry) = self.running(tournament_id) {
            return Ok(entry);
        }
        let game = self.store.load(tournament_id).await?.ok_or_else(|| LiveError::not_found("tournament"))?;
        if self.store.claim(tournament_id).await? != Owner::Here {
            return Ok(self.follow(game));
        }
        let game = Box::new(game);
        match self.supervisor.call(|reply| SupervisorMsg::Adopt { game, reply: Some(reply) }, None).await {
            Ok(ractor::rpc::CallResult::Success(entry)) => entry,
            Ok(_) => Err(LiveError::Internal(anyhow::anyhow!("the live supervisor did not answer"))),
            Err(err) => Err(LiveError::Internal(anyhow::anyhow!("the live supervisor is gone: {err}"))),
        }
    }

    /// Follows a tournament another node runs, from `game` as loaded.
    fn follow(&self, game: Game) -> Entry {
        let mut map = entries(&self.entries);
        if let Some(entry) = map.get(&game.tournament_id) {
            return entry.clone();
        }
        let (follower, snapshot) = Follower::start(self.store.clone(), self.now, &game);
        let entry = Entry { role: Role::Follower(follower), snapshot, last_used: Instant::now() };
        map.insert(game.tournament_id, entry.clone());
        entry
    }

    fn forget(&self, tournament_id: Uuid, actor: &ActorRef<TournamentMsg>) {
        let mut map = entries(&self.entries);
        if map.get(&tournament_id).and_then(Entry::actor).is_some_and(|known| known.get_id() == actor.get_id()) {
            map.remove(&tournament_id);
        }
    }
}

/// Has `actor` read its tournament again and tell the watchers; returns once it has published.
async fn announce(actor: &ActorRef<TournamentMsg>) -> LiveResult<()> {
    match actor.call(|reply| TournamentMsg::Announce { reply: Some(reply) }, Some(COMMAND_TIMEOUT)).await {
        Ok(ractor::rpc::CallResult::Success(())) => Ok(()),
        Ok(_) => Err(LiveError::Internal(anyhow::anyhow!("the tournament actor did not answer"))),
        Err(err) => Err(LiveError::Internal(anyhow::anyhow!("the tournament actor is gone: {err}"))),
    }
}

fn is_same(role: &Role, follower: &Arc<Follower>) -> bool {
    matches!(role, Role::Follower(known) if Arc::ptr_eq(known, follower))
}

impl Entry {
    /// A rebuilt actor tells the watchers what it found.
    fn catch_up_and_announce(&self) {
        if let Some(actor) = self.actor() {
            let _ = actor.cast(TournamentMsg::Announce { reply: None });
        }
    }

    /// Reads the tournament again: the actor by a message, the follower by its task.
    fn catch_up(&self) {
        match &self.role {
            Role::Owner(actor) => {
                let _ = actor.cast(TournamentMsg::CatchUp);
            }
            Role::Follower(follower) => follower.wake.notify_one(),
        }
    }
}

enum SupervisorMsg {
    /// Starts an actor for a game loaded from the database, unless its tournament has one
    /// by now, and answers with the tournament's actor. Without a reply (a rebuild), the new
    /// actor tells the watchers what it found.
    Adopt { game: Box<Game>, reply: Option<RpcReplyPort<LiveResult<Entry>>> },
    /// Lets go of the actors of ended tournaments and of idle ones.
    Reap,
    /// Tries again to rebuild the actor of a running tournament.
    Rebuild { tournament_id: Uuid },
}

struct LiveSupervisor<S, B> {
    store: Arc<S>,
    broadcaster: Arc<B>,
    now: TimeSource,
    entries: Entries,
}

/// Which tournament each child actor runs.
struct SupervisorState {
    children: HashMap<ActorId, Uuid>,
}

impl<S: LiveStore, B: Broadcaster> LiveSupervisor<S, B> {
    /// The tournament's actor: the registered one, or a new one running `game`. No I/O.
    async fn adopt(
        &self,
        myself: &ActorRef<SupervisorMsg>,
        state: &mut SupervisorState,
        game: Game,
    ) -> LiveResult<Entry> {
        let tournament_id = game.tournament_id;
        if let Some(entry) = entries(&self.entries).get(&tournament_id)
            && entry.actor().is_some()
        {
            return Ok(entry.clone());
        }
        let (published, snapshot) = watch::channel(Arc::new(LiveState::of(&game, to_millis((self.now)()))));
        let actor = TournamentActor { store: self.store.clone(), broadcaster: self.broadcaster.clone(), now: self.now };
        let (actor, _) = Actor::spawn_linked(None, actor, (game, published), myself.get_cell())
            .await
            .map_err(|err| LiveError::Internal(anyhow::anyhow!("starting a tournament actor: {err}")))?;
        state.children.insert(actor.get_id(), tournament_id);
        let entry = Entry { role: Role::Owner(actor), snapshot, last_used: Instant::now() };
        entries(&self.entries).insert(tournament_id, entry.clone());
        Ok(entry)
    }

    /// Rebuilds a tournament's actor from the database, loaded in a task of its own so the
    /// supervisor goes on; when the database cannot answer, tries again a little later (so a
    /// running clock gets its actor back) instead of at once.
    fn rebuild(&self, myself: &ActorRef<SupervisorMsg>, tournament_id: Uuid) {
        let (store, myself) = (self.store.clone(), myself.clone());
        tokio::spawn(async move {
            match store.load(tournament_id).await {
                Ok(Some(game)) => {
                    let _ = myself.cast(SupervisorMsg::Adopt { game: Box::new(game), reply: None });
                }
                Ok(None) => tracing::warn!(%tournament_id, "the tournament of a stopped actor is gone"),
                Err(err) => {
                    tracing::error!(%tournament_id, error = %err, "could not rebuild a tournament actor; trying again");
                    if !matches!(err, LiveError::Refused { .. }) {
                        myself.send_after(REBUILD_RETRY, move || SupervisorMsg::Rebuild { tournament_id });
                    }
                }
            }
        });
    }

    /// Ended tournaments need no actor; idle ones get one again on their next read. A
    /// running clock keeps its actor, which moves it on. A tournament whose actor stops is
    /// released for any node; followers go by the same rules.
    fn reap(&self) {
        let mut map = entries(&self.entries);
        let now = Instant::now();
        map.retain(|_, entry| {
            let status = entry.snapshot.borrow().status;
            let keep = match status {
                TournamentStatus::Finished | TournamentStatus::Cancelled => {
                    now.duration_since(entry.last_used) < REAP_EVERY
                }
                TournamentStatus::Running => true,
                TournamentStatus::Registration | TournamentStatus::Announced => {
                    now.duration_since(entry.last_used) < IDLE_AFTER
                }
            };
            if !keep && let Some(actor) = entry.actor() {
                actor.stop(Some("no longer needed".into()));
                let (store, tournament_id) = (self.store.clone(), entry.snapshot.borrow().tournament_id);
                tokio::spawn(async move { store.release(tournament_id).await });
            }
            keep
        });
    }
}

impl<S: LiveStore, B: Broadcaster> Actor for LiveSupervisor<S, B> {
    type Msg = SupervisorMsg;
    type State = SupervisorState;
    type Arguments = ();

    async fn pre_start(&self, myself: ActorRef<Self::Msg>, _: ()) -> Result<Self::State, ActorProcessingErr> {
        myself.send_interval(REAP_EVERY, || SupervisorMsg::Reap);
        Ok(SupervisorState { children: HashMap::new() })
    }

    async fn handle(
        &self,
        myself: ActorRef<Self::Msg>,
        message: Self::Msg,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            SupervisorMsg::Adopt { game, reply: Some(reply) } => {
                let _ = reply.send(self.adopt(&myself, state, *game).await);
            }
            // The old actor may have died between a change and its broadcast: the new one
            // tells the watchers what it found.
            SupervisorMsg::Adopt { game, reply: None } => match self.adopt(&myself, state, *game).await {
                Ok(entry) => entry.catch_up_and_announce(),
                Err(err) => tracing::error!(error = %err, "could not start a rebuilt tournament actor"),
            },
            SupervisorMsg::Reap => self.reap(),
            SupervisorMsg::Rebuild { tournament_id } => self.rebuild(&myself, tournament_id),
        }
        Ok(())
    }

    /// A child that ends while still registered ended by accident (a failure or a kill):
    /// it is rebuilt from the database at once. One let go on purpose is no longer
    /// registered and stays down.
    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<Self::Msg>,
        event: SupervisionEvent,
        state: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        let (cell, failure) = match event {
            SupervisionEvent::ActorFailed(cell, err) => (cell, Some(err.to_string())),
            SupervisionEvent::ActorTerminated(cell, _, reason) => (cell, reason),
            _ => return Ok(()),
        };
        let Some(tournament_id) = state.children.remove(&cell.get_id()) else { return Ok(()) };
        let was_registered = {
            let mut map = entries(&self.entries);
            let registered =
                map.get(&tournament_id).and_then(Entry::actor).is_some_and(|actor| actor.get_id() == cell.get_id());
            if registered {
                map.remove(&tournament_id);
            }
            registered
        };
        if was_registered {
            tracing::warn!(%tournament_id, ?failure, "a tournament actor stopped unexpectedly; rebuilding it");
            self.rebuild(&myself, tournament_id);
        }
        Ok(())
    }
}
