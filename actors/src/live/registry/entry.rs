//! What a node holds of a tournament it knows: its actor when the node runs it, or a
//! follower of the node that does, with the latest LiveState either way.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use ractor::ActorRef;
use tokio::sync::watch;
use tokio::time::Instant;
use uuid::Uuid;

use super::fresh::{Checks, checks, served};
use super::role::Role;
use crate::error::LiveResult;
use crate::live::actor::{TimeSource, TournamentMsg};
use crate::live::ports::LiveStore;
use crate::live::state::Snapshot;

/// A tournament this node knows: its actor, or its follower, and its latest LiveState.
#[derive(Clone)]
pub(super) struct Entry {
    pub(super) role: Role,
    pub(super) snapshot: watch::Receiver<Snapshot>,
    pub(super) last_used: Instant,
    /// What a read holds the state against before it is served; `None` on a node alone,
    /// whose state is current by construction ([`LiveStore::shared`]).
    checks: Option<Checks>,
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
        let checks = store.shared().then(|| checks(store.clone(), now, tournament_id, role.clone(), snapshot.clone()));
        Self { role, snapshot, last_used: Instant::now(), checks }
    }

    /// The state to serve: the latest held, once held against the stored version, and never
    /// older than `seen`, the version the client has seen.
    pub(super) async fn current(&self, seen: Option<i64>) -> LiveResult<Snapshot> {
        match &self.checks {
            Some(checks) => served(checks, &self.snapshot, seen, || self.catch_up()).await,
            None => Ok(self.snapshot.borrow().clone()),
        }
    }

    pub(super) fn actor(&self) -> Option<&ActorRef<TournamentMsg>> {
        match &self.role {
            Role::Owner(actor) => Some(actor),
            Role::Follower(_) => None,
        }
    }
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
