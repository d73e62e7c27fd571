//! What a node is to a tournament it knows: the owner, holding its actor, or a follower of
//! the node that runs it, whose latest state it reads again when a note says it moved on.

use std::sync::Arc;

use ractor::ActorRef;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

use crate::live::actor::{TimeSource, TournamentMsg, to_millis};
use crate::live::ports::LiveStore;
use crate::live::state::{LiveState, Snapshot};

/// Whether this node runs the tournament.
#[derive(Clone)]
pub(super) enum Role {
    /// This node runs the tournament.
    Owner(ActorRef<TournamentMsg>),
    /// Another node does (or none, while this one shuts down).
    Follower(Arc<Follower>),
}

/// What a node keeps of a tournament another node runs: its latest state, read again from
/// the database (by a task of its own, so many notes cost one read at a time) when a note
/// says the tournament moved on.
pub(super) struct Follower {
    pub(super) published: Arc<watch::Sender<Snapshot>>,
    pub(super) wake: Arc<Notify>,
    task: JoinHandle<()>,
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Follower {
    /// Follows the tournament from `first`, its state as this node knows it now.
    pub(super) fn start<S: LiveStore>(
        store: Arc<S>,
        now: TimeSource,
        first: Snapshot,
    ) -> (Arc<Self>, watch::Receiver<Snapshot>) {
        let tournament_id = first.tournament_id;
        let (published, snapshot) = watch::channel(first);
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
pub(super) fn publish_if_newer(published: &watch::Sender<Snapshot>, state: Snapshot) {
    published.send_if_modified(|current| {
        let newer = state.version > current.version;
        if newer {
            *current = state;
        }
        newer
    });
}
