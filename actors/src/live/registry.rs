//! The registry: the one place that finds or starts a tournament's actor, under one
//! supervisor that restarts a failed actor from the database. It also keeps each actor's
//! latest LiveState, so reads never wait for the actor nor load the game, and it lets go of
//! actors whose tournament ended or that sat idle.
//!
//! With several nodes, a node runs a tournament's actor only while it holds the tournament
//! ([`LiveStore::claim`]); the other nodes keep a follower: the latest state, read again from
//! the database when the owner's note says it moved on, and answer commands with
//! [`LiveError::Elsewhere`] so the server hands them to the owner.
//!
//! A read is served from memory once the tournament's stored version says what is held is
//! current ([`fresh`]): whatever a note between nodes missed, no read goes back.
//!
//! Finding a tournament that has no actor yet (a cold start) reads the database in the
//! caller's task, not in the supervisor's: the supervisor only starts actors from games
//! already loaded, so a flood of reads of unknown tournaments cannot hold up the start of a
//! real one. Unknown ids are answered by a version lookup without loading anything, and how
//! many cold starts may wait at once is bounded: callers beyond that are told to come back.

mod entry;
mod fresh;
mod nodes;
mod opening;
mod role;
mod supervisor;

use std::sync::Arc;
use std::time::Duration;

use ractor::{Actor, ActorRef};
use tokio::sync::Semaphore;
use uuid::Uuid;

use crate::error::{LiveError, LiveResult};
use crate::live::actor::{Outcome, TimeSource, TournamentMsg, Traced};
use crate::live::command::Order;
use crate::live::ports::{Broadcaster, LiveStore};
use crate::live::state::Snapshot;

use self::entry::{Entries, Entry, entries};
pub use self::fresh::CHECK_WITHIN;
pub use self::opening::{COLD_LOADS, COLD_START_QUEUE};
use self::opening::{ColdStarts, Openings};
pub use self::supervisor::IDLE_AFTER;
use self::supervisor::{LiveSupervisor, SupervisorMsg};

/// The longest a caller waits for a live command's answer.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

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

    /// The latest LiveState of a tournament, from its actor or follower here (started if
    /// needed), never older than the version stored when the call began ([`fresh`]).
    pub async fn snapshot(&self, tournament_id: Uuid) -> LiveResult<Snapshot> {
        self.snapshot_since(tournament_id, None).await
    }

    /// [`Self::snapshot`] for a client that has seen version `seen`: never older than it, or
    /// refused as unavailable while this node cannot catch up with it ([`fresh`]).
    pub async fn snapshot_since(&self, tournament_id: Uuid, seen: Option<i64>) -> LiveResult<Snapshot> {
        self.entry(tournament_id).await?.current(seen).await
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

    /// Stops the supervisor and with it every actor.
    pub fn shutdown(&self) {
        entries(&self.entries).clear();
        self.supervisor.stop(None);
    }

    pub(super) fn forget(&self, tournament_id: Uuid, actor: &ActorRef<TournamentMsg>) {
        let mut map = entries(&self.entries);
        if map.get(&tournament_id).and_then(Entry::actor).is_some_and(|known| known.get_id() == actor.get_id()) {
            map.remove(&tournament_id);
        }
    }
}

/// Has `actor` read its tournament again and tell the watchers; returns once it has published.
pub(super) async fn announce(actor: &ActorRef<TournamentMsg>) -> LiveResult<()> {
    match actor.call(|reply| TournamentMsg::Announce { reply: Some(reply) }, Some(COMMAND_TIMEOUT)).await {
        Ok(ractor::rpc::CallResult::Success(())) => Ok(()),
        Ok(_) => Err(LiveError::Internal(anyhow::anyhow!("the tournament actor did not answer"))),
        Err(err) => Err(LiveError::Internal(anyhow::anyhow!("the tournament actor is gone: {err}"))),
    }
}
