//! The supervisor of a node's tournament actors: it starts them from loaded games, rebuilds
//! one that failed from the database, and lets go of those no longer needed.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use floor_entities::enums::TournamentStatus;
use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, RpcReplyPort, SupervisionEvent};
use tokio::sync::watch;
use tokio::time::Instant;
use uuid::Uuid;

use crate::error::{LiveError, LiveResult};
use crate::live::actor::{TimeSource, TournamentActor, to_millis};
use crate::live::game::Game;
use crate::live::ports::{Broadcaster, LiveStore};
use crate::live::state::LiveState;

use super::entry::{Entries, Entry, entries};
use super::role::Role;

/// An actor not used for this long is let go, unless its clock runs.
pub const IDLE_AFTER: Duration = Duration::from_secs(10 * 60);
/// How often the supervisor looks for actors to let go; an ended tournament's actor is let
/// go only after this long unused too, so commands already queued to it are answered.
const REAP_EVERY: Duration = Duration::from_secs(60);
/// How long the supervisor waits before trying again to rebuild an actor it could not.
const REBUILD_RETRY: Duration = Duration::from_secs(5);

/// What the supervisor is asked to do.
pub(super) enum SupervisorMsg {
    /// Starts an actor for a game loaded from the database, unless its tournament has one
    /// by now, and answers with the tournament's actor. Without a reply (a rebuild), the new
    /// actor tells the watchers what it found.
    Adopt { game: Box<Game>, reply: Option<RpcReplyPort<LiveResult<Entry>>> },
    /// Lets go of the actors of ended tournaments and of idle ones.
    Reap,
    /// Tries again to rebuild the actor of a running tournament.
    Rebuild { tournament_id: Uuid },
}

pub(super) struct LiveSupervisor<S, B> {
    pub(super) store: Arc<S>,
    pub(super) broadcaster: Arc<B>,
    pub(super) now: TimeSource,
    pub(super) entries: Entries,
}

/// Which tournament each child actor runs.
pub(super) struct SupervisorState {
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
        let loaded = Arc::new(LiveState::of(&game, to_millis((self.now)())));
        self.broadcaster.adopted(&loaded);
        let (published, snapshot) = watch::channel(loaded);
        let actor = TournamentActor { store: self.store.clone(), broadcaster: self.broadcaster.clone(), now: self.now };
        let (actor, _) = Actor::spawn_linked(None, actor, (game, published), myself.get_cell())
            .await
            .map_err(|err| LiveError::Internal(anyhow::anyhow!("starting a tournament actor: {err}")))?;
        state.children.insert(actor.get_id(), tournament_id);
        let entry = Entry::new(&self.store, self.now, tournament_id, Role::Owner(actor), snapshot);
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
