//! The registry: the one place that finds or starts a tournament's actor, under one
//! supervisor that restarts a failed actor from the database. It also keeps each actor's
//! latest LiveState, so reads never wait for the actor nor touch the database, and it lets
//! go of actors whose tournament ended or that sat idle.
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
use tokio::sync::{Semaphore, watch};
use tokio::time::Instant;
use uuid::Uuid;

use crate::error::{LiveError, LiveResult, Refusal};
use crate::live::actor::{Command, Outcome, TimeSource, TournamentActor, TournamentMsg, to_millis};
use crate::live::game::Game;
use crate::live::state::{LiveState, Snapshot};
use crate::live::store::{Broadcaster, LiveStore};

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

/// A running actor and its latest LiveState.
#[derive(Clone)]
struct Entry {
    actor: ActorRef<TournamentMsg>,
    snapshot: watch::Receiver<Snapshot>,
    last_used: Instant,
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

    /// Runs a live command through the tournament's actor and waits for its answer.
    pub async fn command(&self, tournament_id: Uuid, command: Command, by: Uuid) -> LiveResult<Outcome> {
        // An actor that stopped before it took the command (let go, or died just then) is
        // replaced and asked once more. One that took it and died before answering may have
        // written it: asking again could apply it twice, so that is an error to the caller.
        for _ in 0..2 {
            let entry = self.entry(tournament_id).await?;
            let command = command.clone();
            match entry.actor.call(|reply| TournamentMsg::Command { command, by, reply }, Some(COMMAND_TIMEOUT)).await {
                Ok(ractor::rpc::CallResult::Success(outcome)) => return outcome,
                Ok(_) => {
                    return Err(LiveError::Internal(anyhow::anyhow!(
                        "the tournament actor stopped or timed out while handling a command; read the live state for its effect"
                    )));
                }
                Err(_) => self.forget(tournament_id, &entry.actor),
            }
        }
        Err(LiveError::Internal(anyhow::anyhow!("the tournament actor could not be reached")))
    }

    /// Tells the tournament's actor that this node changed the tournament outside it (a
    /// cancel, an edit), and waits until the actor has published it and told the watchers:
    /// a read after the change's answer shows it. Without an actor, one starts from the
    /// database and announces what it loaded.
    pub async fn reload(&self, tournament_id: Uuid) {
        let announced = match self.entry(tournament_id).await {
            Ok(entry) => entry
                .actor
                .call(|reply| TournamentMsg::Announce { reply: Some(reply) }, Some(COMMAND_TIMEOUT))
                .await
                .map_err(|err| err.to_string())
                .and_then(|answer| match answer {
                    ractor::rpc::CallResult::Success(()) => Ok(()),
                    _ => Err("no answer".to_owned()),
                }),
            Err(err) => Err(err.to_string()),
        };
        if let Err(err) = announced {
            tracing::warn!(%tournament_id, error = %err, "could not tell the tournament actor of a change");
        }
    }

    /// Another node changed the tournament to `version`: the actor here, if it has an older
    /// one, reads the change from the database (its maker has told the watchers).
    pub fn catch_up(&self, tournament_id: Uuid, version: i64) {
        if let Some(entry) = entries(&self.entries).get(&tournament_id)
            && entry.snapshot.borrow().version < version
        {
            let _ = entry.actor.cast(TournamentMsg::CatchUp);
        }
    }

    /// Every actor here reads its tournament again (after this node could have missed other
    /// nodes' notes, such as when it lost Redis for a while).
    pub fn catch_up_all(&self) {
        for entry in entries(&self.entries).values() {
            let _ = entry.actor.cast(TournamentMsg::CatchUp);
        }
    }

    /// Starts actors for these tournaments (the running ones, at boot), so their clocks move.
    pub async fn resume(&self, tournament_ids: &[Uuid]) {
        for id in tournament_ids {
            if let Err(err) = self.entry(*id).await {
                tracing::error!(tournament_id = %id, error = %err, "could not resume a live tournament");
            }
        }
    }

    /// The actor of a tournament if one is running (for operators and tests).
    pub fn actor_of(&self, tournament_id: Uuid) -> Option<ActorRef<TournamentMsg>> {
        entries(&self.entries).get(&tournament_id).map(|entry| entry.actor.clone())
    }

    /// How many tournament actors run here now.
    pub fn actor_count(&self) -> usize {
        entries(&self.entries).len()
    }

    /// Stops the supervisor and with it every actor.
    pub fn shutdown(&self) {
        entries(&self.entries).clear();
        self.supervisor.stop(None);
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
        let game = Box::new(game);
        match self.supervisor.call(|reply| SupervisorMsg::Adopt { game, reply: Some(reply) }, None).await {
            Ok(ractor::rpc::CallResult::Success(entry)) => entry,
            Ok(_) => Err(LiveError::Internal(anyhow::anyhow!("the live supervisor did not answer"))),
            Err(err) => Err(LiveError::Internal(anyhow::anyhow!("the live supervisor is gone: {err}"))),
        }
    }

    fn forget(&self, tournament_id: Uuid, actor: &ActorRef<TournamentMsg>) {
        let mut map = entries(&self.entries);
        if map.get(&tournament_id).is_some_and(|entry| entry.actor.get_id() == actor.get_id()) {
            map.remove(&tournament_id);
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
        if let Some(entry) = entries(&self.entries).get(&tournament_id) {
            return Ok(entry.clone());
        }
        let (published, snapshot) = watch::channel(Arc::new(LiveState::of(&game, to_millis((self.now)()))));
        let actor = TournamentActor { store: self.store.clone(), broadcaster: self.broadcaster.clone(), now: self.now };
        let (actor, _) = Actor::spawn_linked(None, actor, (game, published), myself.get_cell())
            .await
            .map_err(|err| LiveError::Internal(anyhow::anyhow!("starting a tournament actor: {err}")))?;
        state.children.insert(actor.get_id(), tournament_id);
        let entry = Entry { actor, snapshot, last_used: Instant::now() };
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
    /// running clock keeps its actor, which moves it on.
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
            if !keep {
                entry.actor.stop(Some("no longer needed".into()));
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
                Ok(entry) => {
                    let _ = entry.actor.cast(TournamentMsg::Announce { reply: None });
                }
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
            let registered = map.get(&tournament_id).is_some_and(|entry| entry.actor.get_id() == cell.get_id());
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
