//! What a node holds of a tournament it knows: its actor when the node runs it, or a
//! follower of the node that does, with the latest LiveState either way.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use ractor::ActorRef;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use uuid::Uuid;

use super::fresh::{Checks, checks, served};
use crate::error::LiveResult;
use crate::live::actor::{TimeSource, TournamentMsg, to_millis};
use crate::live::state::{LiveState, Snapshot};
use crate::live::store::LiveStore;

/// A tournament this node knows: its actor, or its follower, and its latest LiveState.
#[derive(Clone)]
pub(super) struct Entry {
    pub(super) role: Role,
    pub(super) snapshot: watch::Receiver<Snapshot>,
    pub(super) last_used: Instant,
    /// What a read holds the state against before it is served.
    checks: Checks,
}

#[derive(Clone)]
pub(super) enum Role {
    /// This node runs the tournament.
    Owner(ActorRef<TournamentMsg>),
    /// Another node does (or none, while this one shuts down).
    Follower(Arc<Follower>),
}

impl Entry {
    /// What `role` keeps of `tournament_id`, its latest state in `snapshot`.
    pub(super) fn new<S: LiveStore>(
        store: &Arc<S>,
        now: TimeSource,
        tournament_id: Uuid,
        role: Role,
        snapshot: watch::Receiver<Snapshot>,
    ) -> Self {
        let checks = checks(store.clone(), now, tournament_id, role.clone(), snapshot.clone());
        Self { role, snapshot, last_used: Instant::now(), checks }
    }

    /// The state to serve: the latest held, once held against the stored version.
    pub(super) async fn current(&self) -> LiveResult<Snapshot> {
        served(&self.checks, &self.snapshot).await
    }

    pub(super) fn actor(&self) -> Option<&ActorRef<TournamentMsg>> {
        match &self.role {
            Role::Owner(actor) => Some(actor),
            Role::Follower(_) => None,
        }
    }
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

pub(super) type Entries = Arc<Mutex<HashMap<Uuid, Entry>>>;

pub(super) fn entries(map: &Entries) -> MutexGuard<'_, HashMap<Uuid, Entry>> {
    locked(map)
}

/// A map behind a lock. A panic while holding it leaves a map that is still consistent
/// (single inserts and removals), so a poisoned lock is taken over.
pub(super) fn locked<K, V>(map: &Mutex<HashMap<K, V>>) -> MutexGuard<'_, HashMap<K, V>> {
    map.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Entry {
    /// A rebuilt actor tells the watchers what it found.
    pub(super) fn catch_up_and_announce(&self) {
        if let Some(actor) = self.actor() {
            let _ = actor.cast(TournamentMsg::Announce { reply: None });
        }
    }

    /// Reads the tournament again: the actor by a message, the follower by its task.
    pub(super) fn catch_up(&self) {
        match &self.role {
            Role::Owner(actor) => {
                let _ = actor.cast(TournamentMsg::CatchUp);
            }
            Role::Follower(follower) => follower.wake.notify_one(),
        }
    }
}
