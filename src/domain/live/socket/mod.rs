//! Socket.IO namespace `/live` on the HTTP port: a signed-in client joins a tournament's
//! room and receives the full LiveState (`state`) after every change, or, in the compact
//! room, what the change changed (`clock` or `patch`). The events go out through the
//! socketioxide adapter (local, or Redis so they reach every node), each made and serialised
//! once per change for the whole room ([`SocketBroadcaster`]). With several nodes, a node's
//! own sockets hear its changes whatever Redis does, and when Redis comes back after an outage
//! the rooms that moved on meanwhile get their current state once ([`recover_after_outages`]).
//!
//! Here the server is built and served, and the recovery is kept running; the broadcaster,
//! the recovery's bookkeeping, the registry of actors the sockets read, the handlers and the
//! request-head copying each have a file.

mod broadcaster;
mod handlers;
mod head;
mod join_acks;
mod leaving;
mod recovery;
mod registry;
mod server;

use std::sync::Arc;

use axum::Router;
use sea_orm::DatabaseConnection;
use socketioxide::adapter::{Adapter, LocalAdapter};
use socketioxide::handler::ConnectHandler;
use socketioxide::{SocketIo, SocketIoBuilder};
use socketioxide_redis::{RedisAdapterConfig, RedisAdapterCtr};
use tokio_util::sync::CancellationToken;
use tower::ServiceBuilder;

use self::broadcaster::Served;
pub use self::broadcaster::SocketBroadcaster;
use self::handlers::{LiveHub, authenticate, on_connect};
use self::join_acks::JoinAcks;
use self::recovery::FOLLOW_WHILE_DOWN;
pub use self::registry::LiveRegistry;
pub use self::server::{ENGINE_IO_PATH, NAMESPACE};
use self::server::{LiveIo, RedisAdapter, on_server};
use super::known::KnownTournaments;
use super::socket_guards::{self, SocketGuards};
use crate::domain::auth::tokens::JwtKeys;
use crate::infra::bus::{Bus, Link};
use crate::infra::config::ConnectionSettings;

/// The largest message of a client on every transport, in bytes: what the Engine.IO
/// handshake advertises as `maxPayload` and long-polling holds to (`413`). A WebSocket frame
/// or message past it closes the connection (1009) before it is buffered whole. A client
/// sends `join`s, `auth` and pongs of a few hundred bytes.
const MAX_PAYLOAD: usize = 100_000;

/// What a WebSocket connection reads into at a time. Clients send pongs and joins of a few
/// dozen bytes (a longer frame grows the buffer for itself); engineioxide's default of 4 KiB,
/// touched whole on the first read, was a sixth of every idle connection's memory.
const WS_READ_BUFFER: usize = 512;

/// What the `/live` namespace is served with, beside the router it joins.
pub struct LiveSetup<'a> {
    pub live: LiveRegistry,
    pub jwt: Arc<JwtKeys>,
    pub reads: DatabaseConnection,
    /// With several nodes: where the broadcaster tells the others of this node's changes.
    pub bus: Option<Arc<Bus>>,
    pub guards: Arc<SocketGuards>,
    pub tournaments: Arc<KnownTournaments>,
    pub settings: &'a ConnectionSettings,
    /// Cancelled when this node's graceful shutdown begins: from then on it opens no new
    /// Engine.IO session ([`leaving`]).
    pub leaving: CancellationToken,
}

/// Serves Socket.IO with the `/live` namespace beside `router` and hands the server, and the
/// bus, to the broadcaster. When the broadcaster has a link to Redis the rooms span every node
/// through Redis pub/sub.
pub async fn serve_beside(
    router: Router,
    broadcaster: &SocketBroadcaster,
    setup: LiveSetup<'_>,
) -> anyhow::Result<Router> {
    let LiveSetup { live, jwt, reads, bus, guards, tournaments, settings, leaving } = setup;
    let join_acks = Arc::new(JoinAcks::new(settings.live_join_acks_bytes, settings.live_deflate));
    let hub = LiveHub { live, jwt, reads, guards: guards.clone(), tournaments, acks: join_acks.clone() };
    // Outermost, so that they run before socketioxide sees the request: a leaving node's
    // refusal first. One stack, one layer: each `Router::layer` is one more boxed service that
    // every request clones whole.
    let deflate = settings.live_deflate;
    let before_socket_io = ServiceBuilder::new()
        .layer(axum::middleware::from_fn(move |request, next| {
            leaving::refuse_new_sessions(leaving.clone(), request, next)
        }))
        .layer(axum::middleware::map_request(move |request| head::detach_head(request, deflate)));
    let (router, io) = match broadcaster.link.clone() {
        None => {
            let (layer, io) = builder(hub, settings).build_layer();
            io.ns(NAMESPACE, on_connect::<LocalAdapter>.with(authenticate::<LocalAdapter>));
            (router.layer(before_socket_io.layer(layer)), LiveIo::Local(io))
        }
        Some(link) => {
            let adapter = RedisAdapterCtr::new_with_driver(link, RedisAdapterConfig::default());
            let (layer, io) = builder(hub, settings).with_adapter::<RedisAdapter>(adapter).build_layer();
            io.ns(NAMESPACE, on_connect::<RedisAdapter>.with(authenticate::<RedisAdapter>))
                .await
                .map_err(|err| anyhow::anyhow!("subscribing the /live namespace in Redis: {err}"))?;
            (router.layer(before_socket_io.layer(layer)), LiveIo::Redis(io))
        }
    };
    on_server!(&io, io => close_expired_sessions(io.clone(), guards));
    if broadcaster.served.set(Served { io, bus, join_acks }).is_err() {
        tracing::warn!("the live broadcaster already had a Socket.IO server");
    }
    Ok(router)
}

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
            if !link.carries() {
                broadcaster.catch_up_followed_rooms(&during).await;
            }
        }
    });
}
