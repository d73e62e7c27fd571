//! The broadcaster: each new LiveState, and each small event of a tournament's room, goes
//! to its watchers through the socketioxide adapter, serialised once per change for the whole
//! room.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use floor_actors::live::{Broadcaster, Snapshot};
use floor_entities::enums::TournamentStatus;
use uuid::Uuid;

use socketioxide::SocketIo;

use super::join_acks::JoinAcks;
use super::recovery::{Recovery, StoredStates, locked};
use super::server::{self, LiveIo, RedisAdapter, on_server};
use crate::domain::live::events::{AnnouncementMade, LevelStarted, ServerEvent, user_room};
use crate::domain::live::screen_feed::{ScreenEvent, ScreenFeed};
use crate::infra::bus::{Bus, Change, Link};
use crate::infra::metrics::Metrics;

/// Sends each new LiveState to its tournament's room, through the socketioxide adapter (so
/// with Redis it reaches the sockets of every node).
pub struct SocketBroadcaster {
    /// The Socket.IO server and, with several nodes, the bus: set once, when Socket.IO is
    /// served ([`serve_beside`](super::serve_beside)). Both exist only after this
    /// broadcaster: the server's handlers and the bus's hearer reach the registry of actors,
    /// which is built around it. Until then nothing goes to the rooms or to the other nodes
    /// (this node's venue screens still hear).
    pub(super) served: OnceLock<Served>,
    /// With several nodes: the connection to Redis the adapter and the bus speak through.
    pub(super) link: Option<Link>,
    /// The last LiveState sent of each live tournament: compact watchers get what the next
    /// change changed since it (`clock` or `patch`).
    last_sent: Mutex<HashMap<Uuid, Snapshot>>,
    /// What makes up for the changes Redis did not carry.
    recovery: Recovery,
    /// How long each broadcast takes.
    metrics: Arc<Metrics>,
    /// The room's small events for this node's venue screens.
    screens: Arc<ScreenFeed>,
}

/// What the broadcaster sends through, once Socket.IO is served.
pub(super) struct Served {
    /// The Socket.IO server.
    pub(super) io: LiveIo,
    /// With several nodes: where the others hear that this one changed a tournament.
    pub(super) bus: Option<Arc<Bus>>,
    /// What joins are acked with: the states broadcast here are kept to patch from.
    pub(super) join_acks: Arc<JoinAcks>,
}

impl Broadcaster for SocketBroadcaster {
    async fn broadcast(&self, state: Snapshot) {
        let started = std::time::Instant::now();
        let previous = {
            let mut last_sent = locked(&self.last_sent);
            if state.status.is_over() {
                last_sent.remove(&state.tournament_id)
            } else {
                last_sent.insert(state.tournament_id, state.clone())
            }
        };
        // Once per change, whoever listens.
        let compact = ServerEvent::compact(previous.as_deref(), &state);
        let mark = self.link.as_ref().map(Link::mark);
        let Some(served) = self.served.get() else { return };
        served.join_acks.broadcast(&state).await;
        let sent = on_server!(&served.io, io => server::emit_state(io, &state, &compact).await);
        if let Err(err) = sent {
            self.metrics.broadcast_error();
            tracing::warn!(tournament_id = %state.tournament_id, error = %err, "could not broadcast a LiveState");
        }
        // Counted after the send, which it would hold up by a few ms at 10,000 sockets.
        if crate::infra::trace_context::is_sampled() {
            tracing::Span::current().record("sockets", self.room_size(state.tournament_id));
        }
        if let (Some(link), Some(mark)) = (&self.link, mark)
            && !link.carried_since(mark)
        {
            self.fell_behind(state, link).await;
        } else if let Some(bus) = &served.bus {
            bus.announce(Change::Tournament { tournament_id: state.tournament_id, version: state.version }).await;
        }
        self.metrics.broadcast(started.elapsed());
    }

    /// The state, then `level` to every watcher of the tournament (plain and compact rooms).
    async fn broadcast_began(&self, state: Snapshot) {
        self.broadcast(state.clone()).await;
        self.send_to_rooms(state.tournament_id, &ServerEvent::Level(LevelStarted::of(&state))).await;
    }

    /// A running tournament taken over here: its watchers hold what the node before sent
    /// last, the state as loaded, so the first change from here goes to the compact room as
    /// `clock` or `patch`, not as the state whole to every phone at once. (If the node before
    /// died between a change and its broadcast, a watcher holds an older version, finds that
    /// the patch does not follow it and joins again, as the contract says.)
    fn adopted(&self, state: &Snapshot) {
        if state.status != TournamentStatus::Running {
            return;
        }
        let mut last_sent = locked(&self.last_sent);
        let known = last_sent.get(&state.tournament_id).is_some_and(|sent| sent.version >= state.version);
        if !known {
            last_sent.insert(state.tournament_id, state.clone());
        }
    }
}

impl SocketBroadcaster {
    /// A broadcaster with nothing to send to yet; `link` when this node is one of several.
    pub fn new(metrics: Arc<Metrics>, link: Option<Link>) -> Self {
        Self {
            served: OnceLock::new(),
            link,
            last_sent: Mutex::default(),
            recovery: Recovery::default(),
            metrics,
            screens: Arc::new(ScreenFeed::default()),
        }
    }

    /// The room's small events for this node's venue screens.
    pub fn screens(&self) -> &Arc<ScreenFeed> {
        &self.screens
    }

    /// Sends the club's announcement to every watcher of the tournament (plain and compact),
    /// on every node. A lost one is logged: the push and the venue screen still carry it.
    pub async fn announce(&self, announcement: AnnouncementMade) {
        let tournament_id = announcement.tournament_id;
        self.send_to_rooms(tournament_id, &ServerEvent::Announcement(announcement)).await;
    }

    /// Sends `event` to both rooms of the tournament on every node, and to the venue screens
    /// listening on every node; a failure is logged.
    async fn send_to_rooms(&self, tournament_id: Uuid, event: &ServerEvent<'_>) {
        let served = self.served.get();
        match serde_json::to_string(event) {
            Ok(data) => {
                let name = event.name().to_owned();
                self.screens.send(ScreenEvent { tournament_id, name: name.clone(), data: data.as_str().into() });
                if let Some(bus) = served.and_then(|served| served.bus.as_ref()) {
                    bus.announce(Change::Screen { tournament_id, event: name, data }).await;
                }
            }
            Err(err) => tracing::warn!(%tournament_id, error = %err, "could not serialise an event for the screens"),
        }
        let Some(served) = served else { return };
        let sent = on_server!(&served.io, io => server::emit_to_rooms(io, tournament_id, event).await);
        if let Err(err) = sent {
            tracing::warn!(%tournament_id, event = event.name(), error = %err, "could not send an event to a room");
        }
    }

    /// The sockets of this node in the tournament's rooms, plain and compact.
    fn room_size(&self, tournament_id: Uuid) -> usize {
        self.served.get().map_or(0, |served| on_server!(&served.io, io => server::room_size(io, tournament_id)))
    }

    /// The `/live` connections of this node now.
    pub fn connected_sockets(&self) -> usize {
        self.served.get().map_or(0, |served| on_server!(&served.io, io => server::connected_sockets(io)))
    }

    /// Closes every live connection of this node: its clients reconnect, through the load
    /// balancer, to a node that stays (this node opens no new session meanwhile:
    /// [`super::leaving`]). The phones of `/live` go
    /// [`DRAIN_PER_TICK`](server::DRAIN_PER_TICK) every [`DRAIN_TICK`](server::DRAIN_TICK)
    /// (1,000 a second), so the node that takes them meets a stream, not a wall: 5,000 phones
    /// reconnecting within the second that the apps' backoff spreads them over kept the other
    /// node and the balancer saturated for seconds, every join's ack waiting its turn. Those
    /// not yet closed keep hearing every change meanwhile. Then the rest (the venue screens'
    /// sockets included) close at once, within
    /// [`BROADCAST_TIMEOUT`](server::BROADCAST_TIMEOUT); a socket that connects after (its
    /// session opened before the shutdown) is closed within a [`DRAIN_TICK`](server::DRAIN_TICK)
    /// until the process ends. The namespace stays to the end: a client is never told
    /// "Invalid namespace", which socket.io-client does not retry.
    pub async fn close_all(&self) {
        if let Some(served) = self.served.get() {
            on_server!(&served.io, io => server::drain(io).await);
        }
    }

    /// Closes every live connection of `user_id`, on every node: a banned account leaves the
    /// live rooms as it leaves the API (and its handshake is refused from then on).
    pub async fn disconnect_user(&self, user_id: Uuid) {
        let Some(served) = self.served.get() else { return };
        let closed = on_server!(&served.io, io => server::disconnect_room(io, user_room(user_id)).await);
        if let Err(err) = closed {
            tracing::warn!(%user_id, error = %err, "could not close the live connections of an account");
        }
    }
}

/// Where the broadcaster meets the [`Recovery`]: what Redis did not carry goes again, through
/// the server and the bus it was handed.
impl SocketBroadcaster {
    /// `state` went to this node's sockets but perhaps not to the other nodes': it goes
    /// again when Redis is back (at once, if it already is).
    async fn fell_behind(&self, state: Snapshot, link: &Link) {
        self.metrics.broadcast_error();
        self.recovery.keep_behind(state);
        // Redis may have come back (or a doubt cleared) since the state was sent, after the
        // recovery looked.
        if link.carries() {
            self.send_behind().await;
        }
    }

    /// Tells the other nodes which of this node's states may not have reached their watchers.
    pub(super) async fn send_behind(&self) {
        let Some(bus) = self.served.get().and_then(|served| served.bus.as_ref()) else { return };
        let Some(link) = &self.link else { return };
        self.recovery.send_behind(link, bus).await;
    }

    /// Another node's note: this node's watchers of the tournament have `version`.
    pub fn heard(&self, tournament_id: Uuid, version: i64) {
        if let Some(link) = &self.link {
            self.recovery.heard(tournament_id, version, link.outages());
        }
    }

    /// Brings this node's rooms of tournaments other nodes run up to date, where they are
    /// behind (see [`Recovery::catch_up_followed_rooms`]).
    pub(super) async fn catch_up_followed_rooms(&self, live: &impl StoredStates) {
        if let Some((io, link)) = self.across_nodes() {
            self.recovery.catch_up_followed_rooms(io, link, live).await;
        }
    }

    /// Another node says a state of the tournament may not have reached this node's watchers
    /// (it sent it while Redis could not carry it): this node's rooms of it, if any, get the
    /// state as stored unless they are known to have it.
    pub async fn catch_up_missed(&self, live: &impl StoredStates, tournament_id: Uuid) {
        if let Some((io, link)) = self.across_nodes() {
            self.recovery.catch_up_missed(io, link, live, tournament_id).await;
        }
    }

    /// The server on Redis and the link it speaks through: with several nodes, once served.
    fn across_nodes(&self) -> Option<(&SocketIo<RedisAdapter>, &Link)> {
        let LiveIo::Redis(io) = &self.served.get()?.io else { return None };
        Some((io, self.link.as_ref()?))
    }
}
