//! The Socket.IO server on whichever adapter the configuration chose, where it is reached,
//! and what is sent and closed through it. The two adapters part in one place, [`on_server!`]: everything else is
//! written once, generic over the adapter.

use floor_actors::live::Snapshot;
use socketioxide::SocketIo;
use socketioxide::adapter::{Adapter, Emitter, LocalAdapter};
use socketioxide_redis::CustomRedisAdapter;
use uuid::Uuid;

use crate::domain::live::events::{ServerEvent, compact_room, room};
use crate::infra::bus::Link;

/// The namespace of the live broadcasts, at the bare origin.
pub const NAMESPACE: &str = "/live";

/// Where Socket.IO (Engine.IO) requests arrive.
pub const ENGINE_IO_PATH: &str = "/socket.io";

/// The Socket.IO server, on the adapter the configuration chose.
pub(super) enum LiveIo {
    /// One node: rooms live in this process.
    Local(SocketIo<LocalAdapter>),
    /// Several nodes: rooms and broadcasts go through Redis pub/sub, on the node's [`Link`].
    Redis(SocketIo<RedisAdapter>),
}

/// The Socket.IO adapter of several nodes: socketioxide-redis's, speaking through the link.
pub(super) type RedisAdapter = CustomRedisAdapter<Emitter, Link>;

/// Evaluates `$body` with `$server` bound to the [`SocketIo`] inside the [`LiveIo`] `$io`,
/// whichever its adapter. The two arms are the same text, typed apart: `SocketIo<A>` has no
/// form that forgets `A`, so a macro rather than a function writes them.
macro_rules! on_server {
    ($io:expr, $server:ident => $body:expr) => {
        match $io {
            $crate::domain::live::socket::server::LiveIo::Local($server) => $body,
            $crate::domain::live::socket::server::LiveIo::Redis($server) => $body,
        }
    };
}
pub(super) use on_server;

/// The longest a broadcast may hold the tournament's actor (a Redis that stopped answering).
pub(super) const BROADCAST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// A leaving node closes its live connections [`DRAIN_PER_TICK`] every [`DRAIN_TICK`].
pub(super) const DRAIN_TICK: std::time::Duration = std::time::Duration::from_millis(50);
pub(super) const DRAIN_PER_TICK: usize = 50;

/// Sends `state` to the tournament's room, and `compact` (`clock`, `patch`, or the state as
/// well) to its compact room.
pub(super) async fn emit_state<A: Adapter>(
    io: &SocketIo<A>,
    state: &Snapshot,
    compact: &ServerEvent<'_>,
) -> Result<(), String> {
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

/// Sends `event` to both rooms of the tournament, plain and compact.
pub(super) async fn emit_to_rooms<A: Adapter>(
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

/// The sockets of this node in the tournament's rooms, plain and compact.
pub(super) fn room_size<A: Adapter>(io: &SocketIo<A>, tournament_id: Uuid) -> usize {
    let rooms = [room(tournament_id), compact_room(tournament_id)];
    io.of(NAMESPACE).map_or(0, |namespace| namespace.to(rooms).sockets().len())
}

/// The `/live` connections of this node now.
pub(super) fn connected_sockets<A: Adapter>(io: &SocketIo<A>) -> usize {
    // `sockets()` lists this node's sockets, on either adapter.
    io.of(NAMESPACE).map_or(0, |namespace| namespace.sockets().len())
}

/// Closes the sockets in `room`, on every node.
pub(super) async fn disconnect_room<A: Adapter>(io: &SocketIo<A>, room: String) -> Result<(), String> {
    let Some(namespace) = io.of(NAMESPACE) else { return Err("the /live namespace is missing".to_owned()) };
    match tokio::time::timeout(BROADCAST_TIMEOUT, namespace.to(room).disconnect()).await {
        Ok(closed) => closed.map_err(|err| err.to_string()),
        Err(_) => Err("closing the connections timed out".to_owned()),
    }
}

/// Closes the sockets of `/live` on this node a few at a time, then every socket left, in
/// every namespace; then keeps closing any socket that connects still, until the process ends.
///
/// The namespaces stay: `SocketIo::close` would take them away first, and a client whose
/// Engine.IO session opened before the drain (its `CONNECT` still on its way) would be answered
/// "Invalid namespace", which socket.io-client never retries. New sessions are refused at the
/// door meanwhile ([`super::leaving`]), so the sockets that connect late are few.
pub(super) async fn drain<A: Adapter>(io: &SocketIo<A>) {
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
    // The sockets of every namespace still here (those of the batches until their close ends,
    // those that connected since), their transports closed together.
    if tokio::time::timeout(BROADCAST_TIMEOUT, close_every_socket(io)).await.is_err() {
        tracing::warn!("closing the live connections timed out");
    }
    let io = io.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(DRAIN_TICK).await;
            close_every_socket(&io).await;
        }
    });
}

/// Closes the transport of every socket of this node, in every namespace, and waits for them
/// to close; the namespaces stay.
async fn close_every_socket<A: Adapter>(io: &SocketIo<A>) {
    let sockets = io.nsps().into_iter().flat_map(|namespace| namespace.local().sockets());
    futures_util::future::join_all(sockets.map(|socket| async move { socket.close_underlying_transport().await }))
        .await;
}
