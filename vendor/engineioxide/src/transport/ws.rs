//! The ws transport module is responsible for handling websocket connections
//! The only public function is [`new_req`] which is used to upgrade a http request to a websocket connection
//!
//! Other functions are used internally to handle the websocket connection through tasks and channels
//! and to handle upgrade from polling to ws

use std::sync::Arc;

use futures_util::{
    SinkExt, StreamExt, TryStreamExt,
    stream::{SplitSink, SplitStream},
};
use http::{HeaderValue, Request, Response, StatusCode, request::Parts};
use smallvec::smallvec;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_tungstenite::{
    WebSocketStream,
    tungstenite::{
        self, Message,
        handshake::derive_accept_key,
        protocol::{Role, WebSocketConfig},
    },
};
use tokio_util::future::FutureExt as _;

use engineioxide_core::{Packet, ProtocolVersion, Sid, Str, TransportType};

use crate::{
    DisconnectReason, Socket, body::ResponseBody, config::EngineIoConfig, engine::EngineIo,
    errors::Error, handler::EngineIoHandler, socket::InternalRx, transport::{deflate, frames, outlet},
    transport::make_open_packet,
};

/// Create a response for websocket upgrade
fn ws_response<B>(ws_key: &HeaderValue, deflate: bool) -> Response<ResponseBody<B>> {
    let derived = derive_accept_key(ws_key.as_bytes());
    let sec = derived.parse::<HeaderValue>().unwrap();
    let mut response = Response::builder();
    // PATCH (floor): permessage-deflate, compressed once per message (transport/deflate.rs).
    if deflate {
        response = response.header(
            http::header::SEC_WEBSOCKET_EXTENSIONS,
            HeaderValue::from_static(tungstenite::deflate::RESPONSE),
        );
    }
    response
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header(http::header::UPGRADE, HeaderValue::from_static("websocket"))
        .header(
            http::header::CONNECTION,
            HeaderValue::from_static("Upgrade"),
        )
        .header(http::header::SEC_WEBSOCKET_ACCEPT, sec)
        .body(ResponseBody::empty_response())
        .unwrap() // we are only using constants
}

/// Upgrade a websocket request to create a websocket connection.
///
/// If a sid is provided in the query it means that is is upgraded from an existing HTTP polling request.
/// In this case the http polling request is closed and the SID is kept for the websocket
pub fn new_req<R: Send + 'static, B, H: EngineIoHandler>(
    engine: Arc<EngineIo<H>>,
    protocol: ProtocolVersion,
    sid: Option<Sid>,
    req: Request<R>,
) -> Result<Response<ResponseBody<B>>, Error> {
    let (mut parts, body) = req.into_parts();
    let req = Request::from_parts(parts.clone(), body);
    // PATCH (floor): the answer and the connection agree on the extension through `parts`.
    let deflate = deflate::accepts(&parts.headers);
    if deflate {
        parts.extensions.insert(deflate::Negotiated);
    }

    let ws_key = parts
        .headers
        .get("Sec-WebSocket-Key")
        .ok_or(Error::InvalidWebSocketKey)?
        .clone();

    // PATCH (floor): the request and its parts wait on the heap, not in the task's future,
    // which lives as long as the connection.
    let pending = Box::new((req, parts));
    tokio::spawn(async move {
        let (req, parts) = *pending;
        let conn = hyper::upgrade::on(req)
            .await
            .map(hyper_util::rt::TokioIo::new);

        let res = match conn {
            Ok(conn) => on_init(engine.clone(), conn, protocol, sid, parts).await,
            Err(_e) => {
                #[cfg(feature = "tracing")]
                tracing::debug!("ws upgrade error: {}", _e);
                return;
            }
        };

        match res {
            Ok(_) => {
                #[cfg(feature = "tracing")]
                tracing::debug!(?sid, "ws closed")
            }
            Err(Error::MultipleWebsocketRequests) => {}
            Err(_e) => {
                #[cfg(feature = "tracing")]
                tracing::debug!(?sid, "ws closed with error: {_e}");
                if let Some(sid) = sid {
                    engine.close_session(sid, DisconnectReason::TransportError);
                }
            }
        }
    });

    Ok(ws_response(&ws_key, deflate))
}

/// Handle a websocket connection upgrade
///
/// Sends an open packet if it is not an upgrade from a polling request
///
/// Read packets from the websocket and handle them, it will block until the connection is closed
///
/// PATCH (floor): the set-up ([`open`]) runs in a future of its own on the heap, freed once
/// the connection is open, so the task that then reads the connection for its whole life
/// keeps only what reading needs (136 bytes, where the set-up inline made it 1,680).
pub fn on_init<H: EngineIoHandler, S>(
    engine: Arc<EngineIo<H>>,
    conn: S,
    protocol: ProtocolVersion,
    sid: Option<Sid>,
    req_data: Parts,
) -> impl Future<Output = Result<(), Error>>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    // A session upgraded from polling has its heartbeat's task already.
    let beats = sid.is_none();
    let opening = Box::pin(open::<H, S>(engine.clone(), conn, protocol, sid, req_data));
    async move {
        let (socket, tx, rx, framing) = opening.await?;
        read::<H, S>(engine, socket, tx, rx, framing, beats).await
    }
}

/// PATCH (floor): the first part of what was `on_init`: the WebSocket's handshake, up to the
/// stream split in its two halves.
#[cfg_attr(
    feature = "tracing",
    tracing::instrument(level = "trace", name = "init_websocket", skip(engine, conn, req_data))
)]
#[allow(clippy::type_complexity)]
async fn open<H: EngineIoHandler, S>(
    engine: Arc<EngineIo<H>>,
    conn: S,
    protocol: ProtocolVersion,
    sid: Option<Sid>,
    req_data: Parts,
) -> Result<
    (
        Arc<Socket<H::Data>>,
        SplitSink<WebSocketStream<S>, Message>,
        SplitStream<WebSocketStream<S>>,
        frames::Framing,
    ),
    Error,
>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    // PATCH (floor): set by `new_req` when its answer accepted permessage-deflate.
    let deflate = req_data.extensions.get::<deflate::Negotiated>().is_some();
    let framing = frames::Framing { shared: engine.frames.clone(), deflate };
    let ws_config = WebSocketConfig::default()
        .permessage_deflate(deflate)
        .read_buffer_size(engine.config.ws_read_buffer_size)
        .max_message_size(Some(engine.config.ws_max_message_size))
        .max_frame_size(Some(engine.config.ws_max_frame_size));

    let ws_init = move || WebSocketStream::from_raw_socket(conn, Role::Server, Some(ws_config));
    let (socket, ws) = if let Some(sid) = sid {
        match engine.get_socket(sid) {
            None => return Err(Error::UnknownSessionID(sid)),
            Some(socket) if socket.is_ws() => return Err(Error::MultipleWebsocketRequests),
            Some(socket) => {
                let mut ws = ws_init().await;

                let upgrade_fut = upgrade_handshake::<H, S>(&socket, &mut ws);
                match tokio::time::timeout(engine.config.upgrade_timeout, upgrade_fut)
                    .with_cancellation_token(&socket.cancellation_token)
                    .await
                {
                    Some(Ok(res)) => res?,
                    Some(Err(_)) => {
                        #[cfg(feature = "tracing")]
                        tracing::debug!(?sid, "ws upgrade timed out, closing session");
                        engine.close_session(socket.id, DisconnectReason::TransportError);
                        return Err(Error::Upgrade);
                    }
                    None => {
                        #[cfg(feature = "tracing")]
                        tracing::debug!(?sid, "socket is being closed");
                        return Err(Error::Upgrade);
                    }
                }
                (socket, ws)
            }
        }
    } else {
        let socket = engine.create_session(protocol, TransportType::Websocket, past_handshake(req_data), false);

        #[cfg(feature = "tracing")]
        tracing::debug!("new websocket connection");

        let mut ws = ws_init().await;
        init_handshake(socket.id, &mut ws, &engine.config).await?;
        // PATCH (floor): the heartbeat runs in the reading task (`read`), not a task of its own.
        (socket, ws)
    };
    let (tx, rx) = ws.split();
    Ok((socket, tx, rx, framing))
}

/// PATCH (floor): the rest of what was `on_init`: the writer's task, then reading, beside the
/// heartbeat if `beats`.
async fn read<H: EngineIoHandler, S>(
    engine: Arc<EngineIo<H>>,
    socket: Arc<Socket<H::Data>>,
    tx: SplitSink<WebSocketStream<S>, Message>,
    rx: SplitStream<WebSocketStream<S>>,
    framing: frames::Framing,
    beats: bool,
) -> Result<(), Error>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    // Pipe between websocket and internal socket channel.
    tokio::spawn(forward_to_socket::<H, S>(socket.clone(), tx, framing));

    // A heartbeat that fails closes the session, which cancels the reading.
    let heartbeat = async {
        if beats {
            socket.beat(engine.config.ping_interval, engine.config.ping_timeout).await;
        }
        std::future::pending::<()>().await
    };
    let reading = forward_to_handler(&engine, rx, &socket).with_cancellation_token(&socket.cancellation_token);

    // pipe between internal socket channel and websocket
    let read = tokio::select! {
        read = reading => read,
        () = heartbeat => None,
    };
    match read {
        Some(Err(ref e)) => {
            let reason =
                Option::<DisconnectReason>::from(e).unwrap_or(DisconnectReason::TransportError);

            #[cfg(feature = "tracing")]
            tracing::debug!("error when handling packet: {:?}", e);
            engine.close_session(socket.id, reason);
        }
        Some(Ok(())) => {
            #[cfg(feature = "tracing")]
            tracing::debug!(sid = %socket.id, "ws transport was closed");
            engine.close_session(socket.id, DisconnectReason::TransportClose);
        }
        None => {
            #[cfg(feature = "tracing")]
            tracing::debug!(sid = %socket.id, "socket is closing");
        }
    }
    Ok(())
}

/// Forwards all packets received from a websocket to a EngineIo [`Socket`]
async fn forward_to_handler<H: EngineIoHandler, S>(
    engine: &Arc<EngineIo<H>>,
    mut rx: SplitStream<WebSocketStream<S>>,
    socket: &Arc<Socket<H::Data>>,
) -> Result<(), Error>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    while let Some(msg) = rx.try_next().await? {
        match msg {
            Message::Text(msg) => match Packet::parse(socket.protocol, ws_bytes_to_str(msg))? {
                Packet::Close => {
                    #[cfg(feature = "tracing")]
                    tracing::debug!("[sid={}] closing session", socket.id);
                    engine.close_session(socket.id, DisconnectReason::TransportClose);
                    break;
                }
                Packet::Pong | Packet::Ping => {
                    // PATCH (floor): one notice waits at most, as one pong did in the channel before.
                    socket.heartbeat.notify_one();
                    Ok::<(), Error>(())
                }
                Packet::Message(msg) => {
                    engine.handler.on_message(msg, socket.clone());
                    Ok(())
                }
                p => return Err(Error::BadPacket(p)),
            },
            Message::Binary(mut data) => {
                if socket.protocol == ProtocolVersion::V3 && !data.is_empty() {
                    // The first byte is the message type, which we don't need.
                    data = data.split_off(1);
                }
                engine.handler.on_binary(data, socket.clone());
                Ok(())
            }
            Message::Close(_) => {
                #[cfg(feature = "tracing")]
                tracing::debug!("websocket closed, closing session");
                engine.close_session(socket.id, DisconnectReason::TransportClose);
                break;
            }
            _ => {
                #[cfg(feature = "tracing")]
                tracing::debug!(sid = ?socket.id, "unexpected ws message");
                Ok(())
            }
        }?
    }
    Ok(())
}

/// Forwards all packets waiting to be sent to the websocket
///
/// The websocket stream is flushed only when the internal channel is drained
async fn forward_to_socket<H: EngineIoHandler, S>(
    socket: Arc<Socket<H::Data>>,
    tx: SplitSink<WebSocketStream<S>, Message>,
    framing: frames::Framing,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    // A polling request that was in progress during the upgrade may still hold the lock.
    let lock = socket.internal_rx.lock();
    let Some(mut internal_rx) = lock
        .with_cancellation_token(&socket.cancellation_token)
        .await
    else {
        #[cfg(feature = "tracing")]
        tracing::debug!(sid = %socket.id, "session closed before starting the ws writer");
        return;
    };
    let InternalRx { buffered_rx, .. } = &mut *internal_rx;

    // PATCH (floor): the writing half is shared with the senders, who write a message at once
    // when nothing is before it (transport/outlet.rs); this task writes the rest.
    let outlet = Arc::new(outlet::WsOutlet::new(tx, framing.clone()));
    let _ = socket.outlet.set(outlet.clone());

    // map a packet to a websocket message
    // It is declared as a macro rather than a closure to avoid ownership issues
    // PATCH (floor): the message is made first and fed at one await, not one per kind of
    // packet: each await point took its own room in the task's future (1,336 bytes).
    macro_rules! map_fn {
            ($item:ident) => {
                let message = match $item {
                    Packet::Binary(bin) | Packet::BinaryV3(bin) => {
                        if socket.protocol == ProtocolVersion::V3 {
                            // v3 protocol requires packet type as the first byte.
                            // This requires a new buffer. This is OK as it is only for the V3 protocol.
                            let mut buff = Vec::with_capacity(bin.len() + 1);
                            buff.push(0x04);
                            buff.extend(bin);
                            Some(Message::Binary(buff.into()))
                        } else {
                            Some(Message::Binary(bin))
                        }
                    }
                    // A Noop Packet maybe sent by the server to upgrade from a polling connection
                    // In the case that the packet was not poll in time it will remain in the buffer and therefore
                    // it should be discarded here
                    Packet::Noop => None,
                    // PATCH (floor): a large message's frame is made once for every socket
                    // (transport/frames.rs), compressed where that was negotiated; the wait
                    // for a compression under way is boxed, so the writer's future stays
                    // small for the many sockets that never wait.
                    Packet::Message(msg) if msg.len() >= frames::THRESHOLD => {
                        let frame = match framing.frame_of(&msg) {
                            frames::Framed::Ready(frame) => frame,
                            frames::Framed::Wait(wait) => Box::pin(wait).await,
                        };
                        Some(Message::Frame(frame))
                    }
                    _ => {
                        let packet: String = $item.try_into().unwrap();
                        Some(Message::Text(packet.into()))
                    }
                };
                if let Some(message) = message {
                    outlet.feed(message).await;
                }
            };
        }

    // PATCH (floor): the session's cancellation is awaited by one future for the writer's life,
    // not one made (and registered with the token) at each turn of the loop.
    let cancelled = socket.cancellation_token.cancelled();
    tokio::pin!(cancelled);

    // Forward buffered packets until the channel is closed or the session is cancelled.
    loop {
        tokio::select! {
            biased;
            items = outlet.take(buffered_rx) => {
                match items {
                    Some(packets) => {
                        for item in *packets {
                            map_fn!(item);
                        }
                        while let Ok(packets) = buffered_rx.try_recv() {
                            for item in *packets {
                                map_fn!(item);
                            }
                        }
                    }
                    None => break
                }
            }
            _ = &mut cancelled => break,
            () = socket.volatile_ready.notified() => {
                outlet.own();
                if let Some(packets) = socket.take_volatile() {
                    #[cfg(feature = "tracing")]
                    tracing::debug!(sid = ?socket.id, "ws volatile flush: {} packets", packets.len());
                    for item in *packets {
                        map_fn!(item);
                    }
                }
            },
        }

        #[cfg(feature = "tracing")]
        tracing::trace!(sid = %socket.id, "ws flush");
        outlet.flush().await;
    }

    #[cfg(feature = "tracing")]
    tracing::trace!(sid = %socket.id, "ws closing flush");

    outlet.close().await;
}
/// PATCH (floor): the request head a WebSocket session keeps for its life, without the
/// handshake's own headers (`Upgrade`, `Connection`, `Sec-WebSocket-*`), which mean nothing once
/// the connection is a WebSocket, in a map of the size of what is left: some 500 bytes less for
/// every connection.
fn past_handshake(mut parts: Parts) -> Parts {
    use http::header::{
        CONNECTION, HeaderMap, SEC_WEBSOCKET_EXTENSIONS, SEC_WEBSOCKET_KEY, SEC_WEBSOCKET_VERSION,
        UPGRADE,
    };
    const HANDSHAKE: [http::HeaderName; 5] = [
        UPGRADE,
        CONNECTION,
        SEC_WEBSOCKET_KEY,
        SEC_WEBSOCKET_VERSION,
        SEC_WEBSOCKET_EXTENSIONS,
    ];
    let kept = parts.headers.keys_len() - HANDSHAKE.iter().filter(|name| parts.headers.contains_key(*name)).count();
    let mut headers = HeaderMap::with_capacity(kept);
    let mut name = None;
    for (next, value) in std::mem::take(&mut parts.headers) {
        // A name comes with its first value only.
        if next.is_some() {
            name = next;
        }
        if let Some(name) = name.as_ref().filter(|name| !HANDSHAKE.contains(name)) {
            headers.append(name.clone(), value);
        }
    }
    parts.headers = headers;
    parts
}

/// Send a Engine.IO [`OpenPacket`] to initiate a websocket connection
async fn init_handshake<S>(
    sid: Sid,
    ws: &mut WebSocketStream<S>,
    config: &EngineIoConfig,
) -> Result<(), Error>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let packet = Packet::Open(Box::new(make_open_packet(TransportType::Websocket, sid, config)));
    let packet: String = packet.into();
    ws.send(Message::Text(packet.into())).await?;
    Ok(())
}

/// Upgrade a session from a polling request to a websocket request.
///
/// Before upgrading the session the server should send a NOOP packet to any pending polling request.
///
/// ## Handshake :
/// ```text
/// CLIENT                                                 SERVER
///│                                                      │
///│   GET /engine.io/?EIO=4&transport=websocket&sid=...  │
///│ ───────────────────────────────────────────────────► │
///│  ◄─────────────────────────────────────────────────┘ │
///│            HTTP 101 (WebSocket handshake)            │
///│                                                      │
///│            -----  WebSocket frames -----             │
///│  ─────────────────────────────────────────────────►  │
///│                         2probe                       │ (ping packet)
///│  ◄─────────────────────────────────────────────────  │
///│                         3probe                       │ (pong packet)
///│  ─────────────────────────────────────────────────►  │
///│                         5                            │ (upgrade packet)
///│                                                      │
///│            -----  WebSocket frames -----             │
/// ```
#[cfg_attr(
    feature = "tracing",
    tracing::instrument(level = "trace", skip(socket, ws))
)]
async fn upgrade_handshake<H: EngineIoHandler, S>(
    socket: &Arc<Socket<H::Data>>,
    ws: &mut WebSocketStream<S>,
) -> Result<(), Error>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    #[cfg(feature = "tracing")]
    tracing::debug!("starting websocket connection upgrade");

    // The socket is upgrading, from now on all polling
    // request will return a `Packet::Noop`
    socket.start_upgrade();

    // We send a last Noop request to close a potential waiting polling request.
    socket
        .internal_tx
        .send(Box::new(smallvec![Packet::Noop]))
        .await
        .map_err(|_| Error::Upgrade)?;

    // wait for any current polling connection to finish by waiting for the socket to be unlocked
    // All other polling connection will be immediately closed with a NOOP packet.
    let _lock = socket.internal_rx.lock().await;

    // Fetch the next packet from the ws stream, it should be a PingUpgrade packet
    let msg = match ws.next().await {
        Some(Ok(Message::Text(d))) => d,
        _ => Err(Error::Upgrade)?,
    };
    match Packet::parse(socket.protocol, ws_bytes_to_str(msg))? {
        Packet::PingUpgrade => {
            #[cfg(feature = "tracing")]
            tracing::debug!("received first ping upgrade");
            // Respond with a PongUpgrade packet
            ws.send(Message::Text(String::from(Packet::PongUpgrade).into()))
                .await?;
        }
        p => Err(Error::BadPacket(p))?,
    };

    // Fetch the next packet from the ws stream, it should be an Upgrade packet
    let msg = match ws.next().await {
        Some(Ok(Message::Text(d))) => d,
        Some(Ok(Message::Close(_))) => {
            #[cfg(feature = "tracing")]
            tracing::debug!("ws stream closed before upgrade");
            Err(Error::Upgrade)?
        }
        _ => {
            #[cfg(feature = "tracing")]
            tracing::debug!("unexpected ws message before upgrade");
            Err(Error::Upgrade)?
        }
    };
    match Packet::parse(socket.protocol, ws_bytes_to_str(msg))? {
        Packet::Upgrade => {
            #[cfg(feature = "tracing")]
            tracing::debug!("ws upgraded successfully")
        }
        p => Err(Error::BadPacket(p))?,
    };

    socket.upgrade_to_websocket();
    Ok(())
}

fn ws_bytes_to_str(bytes: tungstenite::Utf8Bytes) -> Str {
    // SAFETY: the bytes are guaranteed to be valid UTF-8 by the tungstenite parser
    unsafe { Str::from_bytes_unchecked(bytes.into()) }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use bytes::Bytes;
    use futures_util::StreamExt;
    use http::Request;
    use tokio::io::DuplexStream;

    use super::*;

    const TIMEOUT: Duration = Duration::from_secs(1);

    #[derive(Debug)]
    struct StubHandler;
    impl EngineIoHandler for StubHandler {
        type Data = ();
        fn on_connect(self: Arc<Self>, _: Arc<Socket<()>>) {}
        fn on_disconnect(&self, _: Arc<Socket<()>>, _: DisconnectReason) {}
        fn on_message(self: &Arc<Self>, _: Str, _: Arc<Socket<()>>) {}
        fn on_binary(self: &Arc<Self>, _: Bytes, _: Arc<Socket<()>>) {}
    }

    fn socket() -> Arc<Socket<()>> {
        Arc::new(Socket::new(
            ProtocolVersion::V4,
            TransportType::Websocket,
            &EngineIoConfig::default(),
            Request::<()>::default().into_parts().0,
            Box::new(|_, _| ()),
            false,
        ))
    }

    #[test]
    fn a_session_keeps_the_request_head_but_the_handshake() {
        let request = Request::get("/socket.io/?EIO=4&transport=websocket")
            .header("host", "floor.example")
            .header("upgrade", "websocket")
            .header("connection", "Upgrade")
            .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
            .header("sec-websocket-version", "13")
            .header("sec-websocket-extensions", "permessage-deflate")
            .header("x-forwarded-for", "203.0.113.7")
            .header("x-forwarded-for", "198.51.100.1")
            .header("user-agent", "okhttp/4.12.0")
            .body(())
            .unwrap();
        let parts = past_handshake(request.into_parts().0);
        let kept: Vec<(&str, &str)> = parts
            .headers
            .iter()
            .map(|(name, value)| (name.as_str(), value.to_str().unwrap()))
            .collect();
        assert_eq!(
            kept,
            [
                ("host", "floor.example"),
                ("x-forwarded-for", "203.0.113.7"),
                ("x-forwarded-for", "198.51.100.1"),
                ("user-agent", "okhttp/4.12.0"),
            ]
        );
        assert_eq!(parts.uri, "/socket.io/?EIO=4&transport=websocket");
    }

    async fn ws_pair() -> (WebSocketStream<DuplexStream>, WebSocketStream<DuplexStream>) {
        let (server, client) = tokio::io::duplex(1024);
        (
            WebSocketStream::from_raw_socket(server, Role::Server, None).await,
            WebSocketStream::from_raw_socket(client, Role::Client, None).await,
        )
    }

    /// A polling request can still hold the lock at the end of an upgrade.
    #[tokio::test]
    async fn writer_waits_for_the_lock_of_a_polling_request() {
        let socket = socket();
        let (server, mut client) = ws_pair().await;
        let (tx, _rx) = server.split();

        let polling = socket.internal_rx.lock().await;
        let writer = tokio::spawn(forward_to_socket::<StubHandler, _>(socket.clone(), tx, plain()));
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!writer.is_finished(), "the writer should wait for the lock");

        drop(polling);
        socket.emit(Str::from("hello")).unwrap();
        let msg = tokio::time::timeout(TIMEOUT, client.next())
            .await
            .expect("the writer should send the packet")
            .unwrap()
            .unwrap();
        assert_eq!(msg, Message::text("4hello"));
    }

    /// PATCH (floor): how a socket that negotiated nothing frames its large messages.
    fn plain() -> frames::Framing {
        frames::Framing { shared: Default::default(), deflate: false }
    }

    /// PATCH (floor): a large message shared with other sockets (a broadcast) goes out as the
    /// frame made once for all of them, `4<message>` whole, in order with the others.
    #[tokio::test]
    async fn a_shared_large_message_reaches_a_plain_socket_whole_and_in_order() {
        let socket = socket();
        let (server, mut client) = ws_pair().await;
        let (tx, _rx) = server.split();
        let _writer = tokio::spawn(forward_to_socket::<StubHandler, _>(socket.clone(), tx, plain()));

        let large = Str::from(format!("2[\"state\",\"{}\"]", "x".repeat(70_000)));
        let held_by_another_socket = large.clone();
        socket.emit(Str::from("before")).unwrap();
        socket.emit(large).unwrap();
        socket.emit(Str::from("after")).unwrap();
        let mut heard = Vec::new();
        for _ in 0..3 {
            let msg = tokio::time::timeout(TIMEOUT, client.next()).await.expect("a message").unwrap().unwrap();
            heard.push(msg);
        }
        assert_eq!(heard[0], Message::text("4before"));
        assert_eq!(heard[1], Message::text(format!("4{held_by_another_socket}")));
        assert_eq!(heard[2], Message::text("4after"));
    }

    /// PATCH (floor): waits until the writer shares the connection's writing half.
    async fn outlet_of(socket: &Arc<Socket<()>>) {
        let shared = async {
            while socket.outlet.get().is_none() {
                tokio::task::yield_now().await;
            }
        };
        tokio::time::timeout(TIMEOUT, shared).await.expect("the writer shares its outlet");
    }

    async fn next_text(client: &mut WebSocketStream<DuplexStream>) -> String {
        let msg = tokio::time::timeout(TIMEOUT, client.next()).await.expect("a message").unwrap().unwrap();
        msg.into_text().expect("text").to_string()
    }

    /// PATCH (floor): a message with nothing before it is written by its sender, not queued
    /// for the writer's task.
    #[tokio::test(flavor = "current_thread")]
    async fn a_message_with_nothing_before_it_is_written_by_its_sender() {
        let socket = socket();
        let (server, mut client) = ws_pair().await;
        let (tx, _rx) = server.split();
        let _writer = tokio::spawn(forward_to_socket::<StubHandler, _>(socket.clone(), tx, plain()));
        outlet_of(&socket).await;

        socket.reserve().unwrap().emit(Str::from("now"));
        // On this one thread the writer's task has not run since: nothing waits in the channel.
        assert_eq!(socket.internal_tx.capacity(), socket.internal_tx.max_capacity());
        assert_eq!(next_text(&mut client).await, "4now");
    }

    /// PATCH (floor): a message queued for the writer's task is not overtaken by a later one.
    #[tokio::test(flavor = "current_thread")]
    async fn a_message_queued_before_is_not_overtaken() {
        let socket = socket();
        let (server, mut client) = ws_pair().await;
        let (tx, _rx) = server.split();
        let _writer = tokio::spawn(forward_to_socket::<StubHandler, _>(socket.clone(), tx, plain()));
        outlet_of(&socket).await;

        socket.emit(Str::from("first")).unwrap();
        socket.reserve().unwrap().emit(Str::from("second"));
        assert_eq!(socket.internal_tx.capacity() + 2, socket.internal_tx.max_capacity(), "both queued");
        assert_eq!(next_text(&mut client).await, "4first");
        assert_eq!(next_text(&mut client).await, "4second");
    }

    /// PATCH (floor): what the connection does not take of a direct write (the pipe holds 1,024
    /// bytes) is written by the writer's task, and every message after it follows in order.
    #[tokio::test]
    async fn what_a_direct_write_leaves_is_written_before_the_messages_after_it() {
        let socket = socket();
        let (server, mut client) = ws_pair().await;
        let (tx, _rx) = server.split();
        let _writer = tokio::spawn(forward_to_socket::<StubHandler, _>(socket.clone(), tx, plain()));
        outlet_of(&socket).await;

        let message = |i: usize| format!("{i:03}{}", "x".repeat(5_000 + i));
        let reader = tokio::spawn(async move {
            let mut heard = Vec::new();
            for _ in 0..200 {
                heard.push(next_text(&mut client).await);
            }
            heard
        });
        for i in 0..200 {
            loop {
                match socket.reserve() {
                    Ok(permit) => break permit.emit(Str::from(message(i))),
                    Err(_) => tokio::time::sleep(Duration::from_millis(1)).await,
                }
            }
        }
        let heard = reader.await.expect("the reader");
        for (i, text) in heard.iter().enumerate() {
            assert!(*text == format!("4{}", message(i)), "message {i} whole and in its place");
        }
    }

    #[tokio::test]
    async fn writer_waiting_for_the_lock_stops_with_the_session() {
        let socket = socket();
        let (server, _client) = ws_pair().await;
        let (tx, _rx) = server.split();

        let _polling = socket.internal_rx.lock().await;
        let writer = tokio::spawn(forward_to_socket::<StubHandler, _>(socket.clone(), tx, plain()));
        tokio::time::sleep(Duration::from_millis(20)).await;

        socket.cancellation_token.cancel();
        tokio::time::timeout(TIMEOUT, writer)
            .await
            .expect("the writer should stop")
            .unwrap();
    }
}
