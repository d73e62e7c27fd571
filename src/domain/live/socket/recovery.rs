//! Making up for what Redis did not carry between nodes. The states this node sent while the
//! other nodes could not hear them go again when Redis is back, and this node's rooms of
//! tournaments other nodes run get the state they missed: after an outage, and every
//! [`FOLLOW_WHILE_DOWN`] during one.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

use floor_actors::error::LiveResult;
use floor_actors::live::Snapshot;
use socketioxide::SocketIo;
use uuid::Uuid;

use super::server::{BROADCAST_TIMEOUT, NAMESPACE, RedisAdapter};
use crate::domain::live::events::{ServerEvent, compact_room, room, tournament_of_room};
use crate::infra::bus::{Bus, Change, Link};

/// How often, while Redis is unreachable, a node reads the version of each tournament another
/// node runs that its own watchers watch, and sends them the state when it moved: one indexed
/// read a second per such tournament, a load of the game and a send to this node's room per
/// change. Nothing when Redis answers.
pub(super) const FOLLOW_WHILE_DOWN: std::time::Duration = std::time::Duration::from_secs(1);

/// Where a catch-up reads a tournament's state as stored: the registry of actors
/// ([`super::LiveRegistry`]), whose type names the broadcaster this recovery belongs to.
pub trait StoredStates: Send + Sync {
    /// The tournament's state read again from the database when another node runs it;
    /// `None` when this node runs it (its sockets heard every change).
    fn read_again(&self, tournament_id: Uuid) -> impl Future<Output = LiveResult<Option<Snapshot>>> + Send;
}

/// What the broadcaster keeps to make up for an outage of Redis.
#[derive(Default)]
pub(super) struct Recovery {
    /// The latest state of each tournament this node sent while the other nodes could not
    /// hear it (Redis was unreachable): sent again when Redis is back.
    behind: Mutex<HashMap<Uuid, Snapshot>>,
    /// The highest version of each tournament another node runs that this node's watchers
    /// are known to have: after an outage, a room here whose tournament moved past it gets the
    /// current state.
    heard: Mutex<HashMap<Uuid, Heard>>,
    /// The version of each tournament another node runs that this node itself sent its own
    /// watchers, reading the database while Redis was unreachable: they need it no more.
    sent_here: Mutex<HashMap<Uuid, i64>>,
    /// Held by the one catch-up running: the poller during an outage and the recovery after
    /// it would otherwise both read a version and both send it.
    catching_up: tokio::sync::Mutex<()>,
}

impl Recovery {
    /// Keeps `state` for the next recovery, unless a newer state of its tournament is kept.
    pub(super) fn keep_behind(&self, state: Snapshot) {
        let mut behind = locked(&self.behind);
        if behind.get(&state.tournament_id).is_none_or(|kept| kept.version < state.version) {
            behind.insert(state.tournament_id, state);
        }
    }

    /// Tells the other nodes which of this node's states may not have reached their
    /// watchers: each brings its own rooms up to date from the database, where they are behind
    /// (not their watchers that had them, nor this node's own).
    pub(super) async fn send_behind(&self, link: &Link, bus: &Bus) {
        let states: Vec<Snapshot> = std::mem::take(&mut *locked(&self.behind)).into_values().collect();
        for state in states {
            let mark = link.mark();
            bus.announce(Change::Missed { tournament_id: state.tournament_id, version: state.version }).await;
            if !link.carried_since(mark) {
                // Lost again: it waits for the next recovery.
                self.keep_behind(state);
            }
        }
    }

    /// Another node's note, heard during the link's `outages`: this node's watchers of the
    /// tournament have `version`.
    pub(super) fn heard(&self, tournament_id: Uuid, version: i64, outages: u64) {
        let mut heard = locked(&self.heard);
        let known = heard.entry(tournament_id).or_insert(Heard { version, outages });
        if version >= known.version {
            *known = Heard { version, outages };
        }
    }

    /// Each room on this node of a tournament another node runs gets the tournament's state
    /// as stored, when it moved past what the room is known to have: after an outage of Redis,
    /// and every [`FOLLOW_WHILE_DOWN`] during one, when nothing else tells this node of the
    /// other nodes' changes.
    pub(super) async fn catch_up_followed_rooms(
        &self,
        io: &SocketIo<RedisAdapter>,
        link: &Link,
        live: &impl StoredStates,
    ) {
        let Some(watched) = watched_here(io).await else { return };
        locked(&self.heard).retain(|tournament_id, _| watched.contains(tournament_id));
        locked(&self.sent_here).retain(|tournament_id, _| watched.contains(tournament_id));
        for tournament_id in watched {
            self.catch_up_room(io, link, live, tournament_id).await;
        }
    }

    /// Another node says a state of the tournament may not have reached this node's watchers
    /// (it sent it while Redis could not carry it): this node's rooms of it, if any, get the
    /// state as stored unless they are known to have it.
    pub(super) async fn catch_up_missed(
        &self,
        io: &SocketIo<RedisAdapter>,
        link: &Link,
        live: &impl StoredStates,
        tournament_id: Uuid,
    ) {
        if watched_here(io).await.is_some_and(|watched| watched.contains(&tournament_id)) {
            self.catch_up_room(io, link, live, tournament_id).await;
        }
    }

    /// This node's rooms of a tournament another node runs get its state as stored, when it
    /// moved past what they are known to have.
    async fn catch_up_room(
        &self,
        io: &SocketIo<RedisAdapter>,
        link: &Link,
        live: &impl StoredStates,
        tournament_id: Uuid,
    ) {
        let Some(namespace) = io.of(NAMESPACE) else { return };
        let _one_at_a_time = self.catching_up.lock().await;
        let outages = link.outages();
        let state = match live.read_again(tournament_id).await {
            // This node runs it: its sockets heard every change.
            Ok(None) => return,
            Ok(Some(state)) => state,
            Err(err) => {
                tracing::warn!(%tournament_id, error = %err, "could not read a watched tournament again");
                return;
            }
        };
        let known = locked(&self.heard).get(&tournament_id).copied();
        let sent_here = locked(&self.sent_here).get(&tournament_id).copied();
        if known.is_some_and(|known| known.vouches_for(state.version, outages))
            || sent_here.is_some_and(|sent| sent >= state.version)
        {
            return;
        }
        let event = ServerEvent::State(&state);
        let emits = namespace.local().to([room(tournament_id), compact_room(tournament_id)]).emit(event.name(), &event);
        match tokio::time::timeout(BROADCAST_TIMEOUT, emits).await {
            Ok(Ok(())) => {
                locked(&self.sent_here).insert(tournament_id, state.version);
            }
            Ok(Err(err)) => tracing::warn!(%tournament_id, error = %err, "could not send a room its state again"),
            Err(_) => tracing::warn!(%tournament_id, "sending a room its state again timed out"),
        }
    }
}

/// The tournaments whose rooms have sockets of this node.
async fn watched_here(io: &SocketIo<RedisAdapter>) -> Option<BTreeSet<Uuid>> {
    let namespace = io.of(NAMESPACE)?;
    match namespace.local().rooms().await {
        Ok(rooms) => Some(rooms.iter().filter_map(|room| tournament_of_room(room)).collect()),
        Err(err) => {
            tracing::warn!(error = %err, "could not list this node's live rooms");
            None
        }
    }
}

/// A version this node's watchers of a tournament another node runs are known to have: its
/// note came on the same connection as the state, after it, while this node listened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Heard {
    version: i64,
    /// The link's outages when the note came.
    outages: u64,
}

impl Heard {
    /// Whether the watchers surely have `version`, after the link's outage number `outages`
    /// ended. A note heard since that outage began proves nothing: this node may have
    /// subscribed again between the owner's state and its note.
    fn vouches_for(self, version: i64, outages: u64) -> bool {
        self.version >= version && self.outages < outages
    }
}

/// A map behind a lock; a panic while holding it leaves single inserts and removals, still
/// consistent, so a poisoned lock is taken over.
pub(super) fn locked<K, V>(map: &Mutex<HashMap<K, V>>) -> std::sync::MutexGuard<'_, HashMap<K, V>> {
    map.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_vouches_for_a_version_only_when_heard_before_the_outage() {
        let before = Heard { version: 7, outages: 2 };
        assert!(before.vouches_for(7, 3), "heard before outage 3 began");
        assert!(before.vouches_for(6, 3));
        assert!(!before.vouches_for(8, 3), "the tournament moved on since");
        let during = Heard { version: 7, outages: 3 };
        assert!(!during.vouches_for(7, 3), "heard after outage 3 began: its state may be lost");
    }
}
