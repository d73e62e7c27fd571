//! Socket.IO namespace `/live` on the HTTP port: a signed-in client joins a tournament's
//! room and receives the full LiveState (`state`) after every change, or, in the compact
//! room, what the change changed (`clock` or `patch`). The events go out through the
//! socketioxide adapter (local, or Redis so they reach every node), each made and serialised
//! once per change for the whole room. With several nodes, a node's own sockets hear its
//! changes whatever Redis does, and when Redis comes back after an outage the rooms that
//! moved on meanwhile get their current state once ([`recover_after_outages`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use axum::Router;
use axum::extract::OriginalUri;
use floor_actors::live::{Broadcaster, Snapshot};
use sea_orm::DatabaseConnection;
use serde::Deserialize;
use socketioxide::adapter::{Adapter, Emitter, LocalAdapter};
use socketioxide::extract::{AckSender, SocketRef, State, TryData};
use socketioxide::handler::ConnectHandler;
use socketioxide::{SocketIo, SocketIoBuilder};
use socketioxide_redis::{CustomRedisAdapter, RedisAdapterConfig, RedisAdapterCtr};
use uuid::Uuid;

use super::LiveRegistry;
use super::events::{
    AnnouncementMade, AuthAck, ClientEvent, ConnectRefused, Handshake, JoinAck, LevelStarted, RoomRequest, ServerEvent,
    compact_room, room, tournament_of_room, user_room,
};
use super::known::KnownTournaments;
use super::screen_feed::{ScreenEvent, ScreenFeed};
use super::socket_guards::{self, Session, SessionEnds, SocketGuards};
use crate::auth::sessions::signed_in;
use crate::auth::tokens::JwtKeys;
use crate::bus::{Bus, Change, Link};
use crate::config::ConnectionSettings;
use crate::error::{AppError, ErrorCode};
use crate::metrics::Metrics;
use crate::objects_only::ObjectsOnly;

/// The namespace of the live broadcasts, at the bare origin.
pub const NAMESPACE: &str = "/live";

/// The Socket.IO server, on the adapter the configuration chose.
enum LiveIo {
    /// One node: rooms live in this process.
    Local(SocketIo<LocalAdapter>),
    /// Several nodes: rooms and broadcasts go through Redis pub/sub, on the node's [`Link`].
    Redis(SocketIo<RedisAdapter>),
}

/// The Socket.IO adapter of several nodes: socketioxide-redis's, speaking through the link.
type RedisAdapter = CustomRedisAdapter<Emitter, Link>;

/// Sends each new LiveState to its tournament's room, through the socketioxide adapter (so
/// with Redis it reaches the sockets of every node). The Socket.IO server is built after the
/// registry (its handlers need the registry), so it is handed in once it exists.
pub struct SocketBroadcaster {
    io: OnceLock<LiveIo>,
    /// With several nodes: where the others hear that this one changed a tournament.
    bus: OnceLock<Arc<Bus>>,
    /// With several nodes: the connection to Redis the adapter and the bus speak through.
    link: OnceLock<Link>,
    /// The latest state of each tournament this node sent while the other nodes could not
    /// hear it (Redis was unreachable): sent again when Redis is back.
    behind: Mutex<HashMap<Uuid, Snapshot>>,
    /// The highest version of each tournament another node runs that this node's watchers
    /// are known to have: after an outage, a room here whose tournament moved past it gets the
    /// current state.
    heard: Mutex<HashMap<Uuid, Heard>>,
    /// The last LiveState sent of each live tournament: compact watchers get what the next
    /// change changed since it (`clock` or `patch`).
    last_sent: Mutex<HashMap<Uuid, Snapshot>>,
    /// The version of each tournament another node runs that this node itself sent its own
    /// watchers, reading the database while Redis was unreachable: they need it no more.
    sent_here: Mutex<HashMap<Uuid, i64>>,
    /// Held by the one catch-up running: the poller during an outage and the recovery after
    /// it would otherwise both read a version and both send it.
    catching_up: tokio::sync::Mutex<()>,
    /// How long each broadcast takes.
    metrics: Arc<Metrics>,
    /// The room's small events for this node's venue screens.
    screens: Arc<ScreenFeed>,
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
        let mark = self.link.get().map(Link::mark);
        let sent = match self.io.get() {
            Some(LiveIo::Local(io)) => emit_state(io, &state, &compact).await,
            Some(LiveIo::Redis(io)) => emit_state(io, &state, &compact).await,
            None => return,
        };
        if let Err(err) = sent {
            self.metrics.broadcast_error();
            tracing::warn!(tournament_id = %state.tournament_id, error = %err, "could not broadcast a LiveState");
        }
        // Counted after the send, which it would hold up by a few ms at 10,000 sockets.
        if crate::trace_context::is_sampled() {
            tracing::Span::current().record("sockets", self.room_size(state.tournament_id));
        }
        if let (Some(link), Some(mark)) = (self.link.get(), mark)
            && !link.carried_since(mark)
        {
            self.fell_behind(state, link).await;
        } else if let Some(bus) = self.bus.get() {
            bus.announce(Change::Tournament { tournament_id: state.tournament_id, version: state.version }).await;
        }
        self.metrics.broadcast(started.elapsed());
    }

    /// The state, then `level` to every watcher of the tournament (plain and compact rooms).
    async fn broadcast_began(&self, state: Snapshot) {
        self.broadcast(state.clone()).await;
        self.send_to_rooms(state.tournament_id, &ServerEvent::Level(LevelStarted::of(&state))).await;
    }
}

/// Sends `event` to both rooms of the tournament, plain and compact.
async fn emit_to_rooms<A: Adapter>(
    io: &SocketIo<A>,
    tournament_id: Uuid,
    event: &ServerEvent<'_>,
) -> Result<(), String> {
    let Some(namespace) = io.of(NAMESPACE) else { return Err("the /live namespace is missing".to_owned()) };
    let emits = namespace.to([room(tournament_id), compact_room(tournament_id)]).emit(event.name(), event);
    match tokio::time::timeout(BROADCAST_TIMEOUT, emits).await {
        Ok(sent) => sent.map_err(|err| err.to_string()),
        Err(_) => Err("the broadcast timed out".to_owned()),
    }
}

impl SocketBroadcaster {
    pub fn new(metrics: Arc<Metrics>) -> Self {
        Self {
            io: OnceLock::new(),
            bus: OnceLock::new(),
            link: OnceLock::new(),
            behind: Mutex::default(),
            heard: Mutex::default(),
            last_sent: Mutex::default(),
            sent_here: Mutex::default(),
            catching_up: tokio::sync::Mutex::default(),
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
        match serde_json::to_string(event) {
            Ok(data) => {
                let name = event.name().to_owned();
                self.screens.send(ScreenEvent { tournament_id, name: name.clone(), data: data.as_str().into() });
                if let Some(bus) = self.bus.get() {
                    bus.announce(Change::Screen { tournament_id, event: name, data }).await;
                }
            }
            Err(err) => tracing::warn!(%tournament_id, error = %err, "could not serialise an event for the screens"),
        }
        let sent = match self.io.get() {
            Some(LiveIo::Local(io)) => emit_to_rooms(io, tournament_id, event).await,
            Some(LiveIo::Redis(io)) => emit_to_rooms(io, tournament_id, event).await,
            None => return,
        };
        if let Err(err) = sent {
            tracing::warn!(%tournament_id, event = event.name(), error = %err, "could not send an event to a room");
        }
    }

    /// The sockets of this node in the tournament's rooms, plain and compact.
    fn room_size(&self, tournament_id: Uuid) -> usize {
        let rooms = [room(tournament_id), compact_room(tournament_id)];
        match self.io.get() {
            Some(LiveIo::Local(io)) => io.of(NAMESPACE).map_or(0, |namespace| namespace.to(rooms).sockets().len()),
            Some(LiveIo::Redis(io)) => io.of(NAMESPACE).map_or(0, |namespace| namespace.to(rooms).sockets().len()),
            None => 0,
        }
    }

    /// The `/live` connections of this node now.
    pub fn connected_sockets(&self) -> usize {
        // `sockets()` lists this node's sockets, on either adapter.
        match self.io.get() {
            Some(LiveIo::Local(io)) => io.of(NAMESPACE).map_or(0, |namespace| namespace.sockets().len()),
            Some(LiveIo::Redis(io)) => io.of(NAMESPACE).map_or(0, |namespace| namespace.sockets().len()),
            None => 0,
        }
    }

    /// Closes every live connection of this node: its clients reconnect, through the load
    /// balancer, to a node that stays. The phones of `/live` go [`DRAIN_PER_TICK`] every
    /// [`DRAIN_TICK`] (1,000 a second), so the node that takes them meets a stream, not a
    /// wall: 5,000 phones reconnecting within the second that the apps' backoff spreads them
    /// over kept the other node and the balancer saturated for seconds, every join's ack
    /// waiting its turn. Those not yet closed keep hearing every change meanwhile. Then the
    /// rest (the venue screens' sockets included) close at once, within [`BROADCAST_TIMEOUT`].
    pub async fn close_all(&self) {
        match self.io.get() {
            Some(LiveIo::Local(io)) => drain(io).await,
            Some(LiveIo::Redis(io)) => drain(io).await,
            None => {}
        }
    }

    /// Announces this node's changes on `bus`, which speaks through `link`, from now on
    /// (several nodes).
    pub fn announce_on(&self, bus: Arc<Bus>, link: Link) {
        if self.bus.set(bus).is_err() || self.link.set(link).is_err() {
            tracing::warn!("the live broadcaster already had a bus");
        }
    }

    /// `state` went to this node's sockets but perhaps not to the other nodes': it goes
    /// again when Redis is back (at once, if it already is).
    async fn fell_behind(&self, state: Snapshot, link: &Link) {
        self.metrics.broadcast_error();
        self.keep_behind(state);
        // Redis may have come back since the state was sent, after the recovery looked.
        if link.is_up() {
            self.send_behind().await;
        }
    }

    /// Keeps `state` for the next recovery, unless a newer state of its tournament is kept.
    fn keep_behind(&self, state: Snapshot) {
        let mut behind = locked(&self.behind);
        if behind.get(&state.tournament_id).is_none_or(|kept| kept.version < state.version) {
            behind.insert(state.tournament_id, state);
        }
    }

    /// Tells the other nodes which of this node's states may not have reached their
    /// watchers: each brings its own rooms up to date from the database, where they are behind
    /// (not their watchers that had them, nor this node's own).
    async fn send_behind(&self) {
        let (Some(link), Some(bus)) = (self.link.get(), self.bus.get()) else { return };
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

    /// Another node's note: this node's watchers of the tournament have `version`.
    pub fn heard(&self, tournament_id: Uuid, version: i64) {
        let Some(link) = self.link.get() else { return };
        let outages = link.outages();
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
    async fn catch_up_followed_rooms(&self, live: &LiveRegistry) {
        let Some(watched) = self.watched_here().await else { return };
        locked(&self.heard).retain(|tournament_id, _| watched.contains(tournament_id));
        locked(&self.sent_here).retain(|tournament_id, _| watched.contains(tournament_id));
        for tournament_id in watched {
            self.catch_up_room(live, tournament_id).await;
        }
    }

    /// Another node says a state of the tournament may not have reached this node's watchers
    /// (it sent it while Redis could not carry it): this node's rooms of it, if any, get the
    /// state as stored unless they are known to have it.
    pub async fn catch_up_missed(&self, live: &LiveRegistry, tournament_id: Uuid) {
        if self.watched_here().await.is_some_and(|watched| watched.contains(&tournament_id)) {
            self.catch_up_room(live, tournament_id).await;
        }
    }

    /// The tournaments whose rooms have sockets of this node (several nodes only).
    async fn watched_here(&self) -> Option<std::collections::BTreeSet<Uuid>> {
        let Some(LiveIo::Redis(io)) = self.io.get() else { return None };
        let namespace = io.of(NAMESPACE)?;
        match namespace.local().rooms().await {
            Ok(rooms) => Some(rooms.iter().filter_map(|room| tournament_of_room(room)).collect()),
            Err(err) => {
                tracing::warn!(error = %err, "could not list this node's live rooms");
                None
            }
        }
    }

    /// This node's rooms of a tournament another node runs get its state as stored, when it
    /// moved past what they are known to have.
    async fn catch_up_room(&self, live: &LiveRegistry, tournament_id: Uuid) {
        let (Some(LiveIo::Redis(io)), Some(link)) = (self.io.get(), self.link.get()) else { return };
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

    /// Closes every live connection of `user_id`, on every node: a banned account leaves the
    /// live rooms as it leaves the API (and its handshake is refused from then on).
    pub async fn disconnect_user(&self, user_id: Uuid) {
        let closed = match self.io.get() {
            Some(LiveIo::Local(io)) => disconnect_room(io, user_room(user_id)).await,
            Some(LiveIo::Redis(io)) => disconnect_room(io, user_room(user_id)).await,
            None => return,
        };
        if let Err(err) = closed {
            tracing::warn!(%user_id, error = %err, "could not close the live connections of an account");
        }
    }
}

async fn disconnect_room<A: Adapter>(io: &SocketIo<A>, room: String) -> Result<(), String> {
    let Some(namespace) = io.of(NAMESPACE) else { return Err("the /live namespace is missing".to_owned()) };
    match tokio::time::timeout(BROADCAST_TIMEOUT, namespace.to(room).disconnect()).await {
        Ok(closed) => closed.map_err(|err| err.to_string()),
        Err(_) => Err("closing the connections timed out".to_owned()),
    }
}

/// The longest a broadcast may hold the tournament's actor (a Redis that stopped answering).
const BROADCAST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Sends `state` to the tournament's room, and `compact` (`clock`, `patch`, or the state as
/// well) to its compact room.
async fn emit_state<A: Adapter>(io: &SocketIo<A>, state: &Snapshot, compact: &ServerEvent<'_>) -> Result<(), String> {
    let (Some(watchers), Some(compact_watchers)) = (io.of(NAMESPACE), io.of(NAMESPACE)) else {
        return Err("the /live namespace is missing".to_owned());
    };
    let full = ServerEvent::State(state);
    let emits = async {
        watchers.to(room(state.tournament_id)).emit(full.name(), &full).await?;
        compact_watchers.to(compact_room(state.tournament_id)).emit(compact.name(), compact).await
    };
    match tokio::time::timeout(BROADCAST_TIMEOUT, emits).await {
        Ok(sent) => sent.map_err(|err| err.to_string()),
        Err(_) => Err("the broadcast timed out".to_owned()),
    }
}

/// What the socket handlers need.
#[derive(Clone)]
struct LiveHub {
    live: LiveRegistry,
    jwt: Arc<JwtKeys>,
    /// Reads only (the handshake's account check): the readers, beside the writer.
    reads: DatabaseConnection,
    guards: Arc<SocketGuards>,
    tournaments: Arc<KnownTournaments>,
}

/// What the `/live` namespace is served with, beside the router it joins.
pub struct LiveSetup<'a> {
    pub live: LiveRegistry,
    pub jwt: Arc<JwtKeys>,
    pub reads: DatabaseConnection,
    pub link: Option<Link>,
    pub guards: Arc<SocketGuards>,
    pub tournaments: Arc<KnownTournaments>,
    pub settings: &'a ConnectionSettings,
}

/// Serves Socket.IO with the `/live` namespace beside `router` and hands the server to the
/// broadcaster. With a `link` to Redis the rooms span every node through Redis pub/sub.
pub async fn serve_beside(
    router: Router,
    broadcaster: &SocketBroadcaster,
    setup: LiveSetup<'_>,
) -> anyhow::Result<Router> {
    let LiveSetup { live, jwt, reads, link, guards, tournaments, settings } = setup;
    let hub = LiveHub { live, jwt, reads, guards: guards.clone(), tournaments };
    let (router, io) = match link {
        None => {
            let (layer, io) = builder(hub, settings).build_layer();
            io.ns(NAMESPACE, on_connect::<LocalAdapter>.with(authenticate::<LocalAdapter>));
            (router.layer(layer), LiveIo::Local(io))
        }
        Some(link) => {
            let adapter = RedisAdapterCtr::new_with_driver(link, RedisAdapterConfig::default());
            let (layer, io) = builder(hub, settings).with_adapter::<RedisAdapter>(adapter).build_layer();
            io.ns(NAMESPACE, on_connect::<RedisAdapter>.with(authenticate::<RedisAdapter>))
                .await
                .map_err(|err| anyhow::anyhow!("subscribing the /live namespace in Redis: {err}"))?;
            (router.layer(layer), LiveIo::Redis(io))
        }
    };
    match &io {
        LiveIo::Local(io) => close_expired_sessions(io.clone(), guards),
        LiveIo::Redis(io) => close_expired_sessions(io.clone(), guards),
    }
    if broadcaster.io.set(io).is_err() {
        tracing::warn!("the live broadcaster already had a Socket.IO server");
    }
    // Outermost, so that it runs before socketioxide sees the request.
    let deflate = settings.live_deflate;
    Ok(router.layer(axum::middleware::map_request(move |request| detach_head(request, deflate))))
}

/// Every [`socket_guards::EXPIRY_SWEEP`], the sockets of this node whose token ran out hear
/// `expired` and are closed; for as long as the runtime runs.
fn close_expired_sessions<A: Adapter>(io: SocketIo<A>, guards: Arc<SocketGuards>) {
    tokio::spawn(async move {
        let mut sweeps = tokio::time::interval(socket_guards::EXPIRY_SWEEP);
        sweeps.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            sweeps.tick().await;
            let Some(namespace) = io.of(NAMESPACE) else { continue };
            socket_guards::close_expired(namespace.sockets(), &guards.metrics).await;
        }
    });
}

/// The largest message of a client on every transport, in bytes: what the Engine.IO
/// handshake advertises as `maxPayload` and long-polling holds to (`413`). A WebSocket frame
/// or message past it closes the connection (1009) before it is buffered whole. A client
/// sends `join`s, `auth` and pongs of a few hundred bytes.
const MAX_PAYLOAD: usize = 100_000;

/// The Socket.IO server's settings, on either adapter.
fn builder(hub: LiveHub, settings: &ConnectionSettings) -> SocketIoBuilder {
    SocketIo::builder()
        .with_state(hub)
        .ws_read_buffer_size(WS_READ_BUFFER)
        .max_payload(MAX_PAYLOAD as u64)
        .ws_max_message_size(MAX_PAYLOAD)
        .ws_max_frame_size(MAX_PAYLOAD)
        .connect_timeout(settings.live_connect_timeout)
}

/// What a WebSocket connection reads into at a time. Clients send pongs and joins of a few
/// dozen bytes (a longer frame grows the buffer for itself); engineioxide's default of 4 KiB,
/// touched whole on the first read, was a sixth of every idle connection's memory.
const WS_READ_BUFFER: usize = 512;

/// Gives a request its own copy of its URI and headers. hyper parses them as slices of the
/// connection's read buffer (16 KiB), and engineioxide keeps a connection's request head for
/// the connection's life: without the copy, every live connection holds that whole buffer. The
/// router has already put a clone of the URI in the extensions (`OriginalUri`), so that one is
/// replaced too (a heap profile of 2,000 connections showed 16 KiB each held through it). The
/// copy is a few hundred bytes; requests of the API pass through untouched. Without `deflate`
/// (`LIVE_DEFLATE=false`) the copy leaves out the client's `Sec-WebSocket-Extensions`.
async fn detach_head(mut request: axum::extract::Request, deflate: bool) -> axum::extract::Request {
    if !request.uri().path().starts_with(ENGINE_IO_PATH) {
        return request;
    }
    let headers = request.headers().iter().filter_map(|(name, value)| {
        // `LIVE_DEFLATE=false`: no offer of permessage-deflate reaches the handshake.
        if !deflate && name == axum::http::header::SEC_WEBSOCKET_EXTENSIONS {
            return None;
        }
        // Names outside the standard set are slices of the buffer too.
        let name = axum::http::HeaderName::from_bytes(name.as_str().as_bytes()).ok()?;
        let value = axum::http::HeaderValue::from_bytes(value.as_bytes()).ok()?;
        Some((name, value))
    });
    *request.headers_mut() = headers.collect();
    if let Some(uri) = detached(request.uri()) {
        *request.uri_mut() = uri;
    }
    if let Some(OriginalUri(original)) = request.extensions_mut().get_mut::<OriginalUri>()
        && let Some(uri) = detached(original)
    {
        *original = uri;
    }
    request
}

/// A URI that owns its text.
fn detached(uri: &axum::http::Uri) -> Option<axum::http::Uri> {
    axum::http::Uri::try_from(uri.to_string()).ok()
}

/// Where Socket.IO (Engine.IO) requests arrive.
pub const ENGINE_IO_PATH: &str = "/socket.io";

/// Makes up for what Redis lost each time it comes back, for as long as the runtime runs:
/// the states this node sent while the other nodes could not hear them go again, and this
/// node's rooms of tournaments other nodes run get the state they missed.
pub fn recover_after_outages(broadcaster: Arc<SocketBroadcaster>, live: LiveRegistry, link: &Link) {
    let mut recoveries = link.recoveries();
    let (after, during) = (broadcaster.clone(), live.clone());
    tokio::spawn(async move {
        while recoveries.changed().await.is_ok() {
            after.send_behind().await;
            after.catch_up_followed_rooms(&live).await;
        }
    });
    let link = link.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(FOLLOW_WHILE_DOWN).await;
            if !link.is_up() {
                broadcaster.catch_up_followed_rooms(&during).await;
            }
        }
    });
}

/// Closes the sockets of `/live` on this node a few at a time, then everything.
async fn drain<A: Adapter>(io: &SocketIo<A>) {
    let sockets = io.of(NAMESPACE).map(|namespace| namespace.local().sockets()).unwrap_or_default();
    let started = tokio::time::Instant::now();
    for (n, batch) in sockets.chunks(DRAIN_PER_TICK).enumerate() {
        let due = started + DRAIN_TICK * u32::try_from(n).unwrap_or(u32::MAX);
        tokio::time::sleep_until(due).await;
        for socket in batch {
            // Its transport's close is only begun here: the next batch does not wait on it.
            let socket = socket.clone();
            tokio::spawn(async move { socket.close_underlying_transport().await });
        }
    }
    if !sockets.is_empty() {
        tracing::info!(sockets = sockets.len(), took = ?started.elapsed(), "the live connections were closed a few at a time");
    }
    if tokio::time::timeout(BROADCAST_TIMEOUT, io.close()).await.is_err() {
        tracing::warn!("closing the live connections timed out");
    }
}

/// A leaving node closes its live connections [`DRAIN_PER_TICK`] every [`DRAIN_TICK`].
const DRAIN_TICK: std::time::Duration = std::time::Duration::from_millis(50);
const DRAIN_PER_TICK: usize = 50;

/// How often, while Redis is unreachable, a node reads the version of each tournament another
/// node runs that its own watchers watch, and sends them the state when it moved: one indexed
/// read a second per such tournament, a load of the game and a send to this node's room per
/// change. Nothing when Redis answers.
const FOLLOW_WHILE_DOWN: std::time::Duration = std::time::Duration::from_secs(1);

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
fn locked<K, V>(map: &Mutex<HashMap<K, V>>) -> std::sync::MutexGuard<'_, HashMap<K, V>> {
    map.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Admits a socket whose `auth.token` is a valid access token of an active account, as an
/// HTTP request would be admitted, within the caps of sockets per account and per address;
/// puts it in its account's room, notes when its token runs out, and gives every client event
/// its handler. All of it happens here, before socketioxide sends the namespace's connect
/// packet: the connect handler runs later, in a task of its own, and a client that emits
/// `join` the moment it is connected could otherwise reach a socket with no `join` handler
/// yet, and never get its ack.
async fn authenticate<A: Adapter>(
    socket: SocketRef<A>,
    TryData(handshake): TryData<Handshake>,
    State(hub): State<LiveHub>,
) -> Result<(), ConnectRefused> {
    let handshake = handshake.map_err(|_| ConnectRefused::Unauthorized)?;
    let (user_id, ends) = hub.account_of(&handshake.token).await.map_err(|_| ConnectRefused::Unauthorized)?;
    hub.guards.admit(&socket, user_id, ends)?;
    socket.on_disconnect(gone::<A>);
    socket.join(user_room(user_id));
    for event in ClientEvent::ALL {
        match event {
            ClientEvent::Join => socket.on(event.name(), join),
            ClientEvent::Leave => socket.on(event.name(), leave),
            ClientEvent::Auth => socket.on(event.name(), renew),
        }
    }
    Ok(())
}

impl LiveHub {
    /// The active account an access token signs in, and when the token runs out.
    async fn account_of(&self, token: &str) -> Result<(Uuid, SessionEnds), AppError> {
        match signed_in(&self.reads, &self.jwt, token).await {
            Ok((user, claims)) => Ok((user.id, SessionEnds(claims.exp))),
            Err(AppError::Internal(cause)) => {
                tracing::warn!(error = ?cause, "could not read the account of a live connection");
                Err(AppError::Internal(cause))
            }
            Err(refused) => Err(refused),
        }
    }
}

/// A socket that disconnected gives its places back at once.
async fn gone<A: Adapter>(socket: SocketRef<A>) {
    if let Some(session) = Session::of(&socket) {
        session.release();
    }
}

/// Everything a connection needs is set up by [`authenticate`], before the client hears it is
/// connected; socketioxide still wants a connect handler.
async fn on_connect<A: Adapter>(_: SocketRef<A>) {}

/// Joins the tournament's room and acks the current LiveState. The socket joins before the
/// state is read, so a change in between reaches it as a `state` event; clients keep the
/// highest `version`. An id that names no tournament is answered before any actor starts, and
/// a socket joining faster than its pace is refused.
async fn join<A: Adapter>(
    socket: SocketRef<A>,
    TryData(payload): TryData<serde_json::Value>,
    ack: AckSender<A>,
    State(hub): State<LiveHub>,
) {
    if !Session::of(&socket).is_some_and(|session| session.may_join()) {
        hub.guards.metrics.refused("live_joins");
        let _ = ack.send(&JoinAck::refused(ErrorCode::RateLimited, "too many joins; slow down"));
        return;
    }
    let sent = match payload.ok().and_then(RoomRequest::read) {
        None => ack.send(&refusal(AppError::invalid_field("tournamentId", "send {tournamentId: <uuid>}"))),
        Some(RoomRequest { tournament_id, compact }) => match hub.tournaments.exists(tournament_id).await {
            Ok(false) => ack.send(&refusal(AppError::not_found("tournament"))),
            Err(err) => ack.send(&refusal(err.into())),
            Ok(true) => {
                let watchers = if compact { compact_room(tournament_id) } else { room(tournament_id) };
                socket.join(watchers.clone());
                match hub.live.snapshot(tournament_id).await {
                    Ok(state) => ack.send(&JoinAck::joined(&state)),
                    Err(err) => {
                        socket.leave(watchers);
                        ack.send(&refusal(err.into()))
                    }
                }
            }
        },
    };
    // A client that asked for no ack simply gets none.
    let _ = sent;
}

/// Moves the socket's end to that of a fresh access token of the same account.
async fn renew<A: Adapter>(
    socket: SocketRef<A>,
    TryData(payload): TryData<serde_json::Value>,
    ack: AckSender<A>,
    State(hub): State<LiveHub>,
) {
    let token = payload.ok().and_then(|payload| Handshake::deserialize(ObjectsOnly(payload)).ok());
    let answer = match token {
        None => AuthAck::refused(ErrorCode::ValidationError, "send {token: <access token>}"),
        Some(Handshake { token }) => match hub.account_of(&token).await {
            Ok((user_id, ends)) if Session::of(&socket).is_some_and(|session| session.renew(user_id, ends)) => {
                match chrono::DateTime::from_timestamp(ends.0, 0) {
                    Some(expires_at) => AuthAck::renewed(expires_at),
                    None => AuthAck::refused(ErrorCode::Unauthorized, "the token's end is not a time"),
                }
            }
            Ok(_) => AuthAck::refused(ErrorCode::Forbidden, "the token is of another account"),
            Err(err) => {
                let (code, message, _) = err.into_public();
                AuthAck::refused(code, message)
            }
        },
    };
    let _ = ack.send(&answer);
}

/// The ack of a join that failed, told as an HTTP answer would tell it: an unexpected failure
/// is logged and not described, and a database out of reach is `SERVICE_UNAVAILABLE`.
fn refusal(err: AppError) -> JoinAck<'static> {
    let (code, message, _) = err.into_public();
    JoinAck::refused(code, message)
}

async fn leave<A: Adapter>(socket: SocketRef<A>, TryData(payload): TryData<serde_json::Value>) {
    if let Some(RoomRequest { tournament_id, .. }) = payload.ok().and_then(RoomRequest::read) {
        socket.leave(room(tournament_id));
        socket.leave(compact_room(tournament_id));
    }
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
