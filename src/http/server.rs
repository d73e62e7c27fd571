//! Serving HTTP (and the Socket.IO transports beside it) on the bound listener, with the
//! timeouts and caps a server facing the internet needs ([`ConnectionSettings`]):
//!
//! - a request's head must arrive within `HTTP_HEADER_TIMEOUT`, and hyper starts that clock
//!   whenever a connection waits for a request, so an idle keep-alive connection closes after
//!   it too (a client that opened connections and sends nothing, or a byte a second, holds
//!   them that long at most);
//! - a request's body must keep up a minimum rate ([`super::paced_body`]);
//! - one peer address holds at most `MAX_CONNECTIONS_PER_ADDRESS` connections and the node
//!   `MAX_CONNECTIONS`, never more than its open-file limit allows; a connection past a cap
//!   gets a `429` or `503` in the contract's error shape and is closed. A connection holds its
//!   slot for its whole life, an upgraded WebSocket included, because the slot travels with
//!   the stream itself ([`Held`]).
//!
//! A trusted proxy (`TRUSTED_PROXIES`) speaks for many clients, so it has no cap per address;
//! the node's cap still holds.
//!
//! Every answer written here rather than by the router, a refusal at the door and hyper's own
//! answer to a request it cannot read (`400`, `414`, `431`), carries the headers of every
//! answer ([`super::headers::every_answer`]).

use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::HeaderMap;
use bytes::Bytes;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use ipnet::IpNet;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::ServiceExt;

use super::paced_body::PacedBody;
use crate::infra::client_address::budget_key;
use crate::infra::config::ConnectionSettings;
use crate::infra::connection_slots::{Slot, Slots};
use crate::infra::error::{ErrorBody, ErrorCode, ErrorObject};
use crate::infra::metrics::Metrics;

/// File descriptors kept for everything that is not a client connection: the database pool,
/// Redis, uploads being written, log files.
const RESERVED_DESCRIPTORS: usize = 512;
/// Refused connections left open at once for their client to read the answer; past these, a
/// refused connection is closed right after its answer (a flood must not hold descriptors
/// through its own refusals).
const REFUSALS_AT_ONCE: usize = 64;
/// How long a connection the server closes (a refused one too) is left open, sending nothing
/// more, for its client to read the last answer.
const LINGER: Duration = Duration::from_secs(2);
/// What a lingering connection may still send before it is closed anyway.
const LINGER_READS_AT_MOST: usize = 1 << 20;

/// The door of this node: who may open one more connection.
pub struct Door {
    per_address: Slots<IpAddr>,
    /// The connections this node may hold at once, one permit each.
    node: Arc<Semaphore>,
    /// The refused connections left open at once to read their answer, one permit each.
    refusing: Arc<Semaphore>,
    trusted_proxies: Arc<[IpNet]>,
    settings: ConnectionSettings,
    /// The headers every answer carries, on the answers written here.
    answer_headers: HeaderMap,
    metrics: Arc<Metrics>,
    too_many_from_address: Bytes,
    node_full: Bytes,
}

impl Door {
    pub fn new(
        settings: &ConnectionSettings,
        trusted_proxies: &[IpNet],
        answer_headers: HeaderMap,
        metrics: Arc<Metrics>,
    ) -> Self {
        let node_cap = node_cap(settings.max_connections, open_file_limit());
        tracing::info!(
            max_connections = node_cap,
            per_address = settings.max_connections_per_address,
            header_timeout_s = settings.header_timeout.as_secs(),
            "connection limits"
        );
        Self {
            per_address: Slots::new(settings.max_connections_per_address),
            node: Arc::new(Semaphore::new(node_cap.min(Semaphore::MAX_PERMITS))),
            refusing: Arc::new(Semaphore::new(REFUSALS_AT_ONCE)),
            trusted_proxies: trusted_proxies.into(),
            settings: settings.clone(),
            metrics,
            too_many_from_address: refusal(
                ErrorCode::RateLimited,
                "too many open connections from this address; close some and try again",
                &answer_headers,
            ),
            node_full: refusal(
                ErrorCode::ServiceUnavailable,
                "this node has no room for more connections now",
                &answer_headers,
            ),
            answer_headers,
        }
    }

    /// The slots of a connection from `peer`, or the refusal it gets.
    fn admit(&self, peer: IpAddr) -> Result<Admitted, (&'static str, &Bytes)> {
        let peer = peer.to_canonical();
        let from_proxy = self.trusted_proxies.iter().any(|network| network.contains(&peer));
        let address = match from_proxy {
            true => None,
            false => Some(
                self.per_address
                    .take(budget_key(peer))
                    .ok_or(("connections_per_address", &self.too_many_from_address))?,
            ),
        };
        let node = self.node.clone().try_acquire_owned().map_err(|_| ("connections", &self.node_full))?;
        Ok(Admitted { _address: address, _node: node })
    }

    /// Answers a refused connection at once (the answer fits the socket's send buffer, so it
    /// is written without waiting), then lingers to let the client read it when few refusals
    /// linger, else closes it at once.
    fn refuse(&self, stream: TcpStream, limit: &'static str, answer: &Bytes) {
        self.metrics.refused(limit);
        let written = stream.try_write(answer).is_ok_and(|sent| sent == answer.len());
        let Ok(slot) = self.refusing.clone().try_acquire_owned() else { return };
        if !written {
            return;
        }
        tokio::spawn(async move {
            let _place = slot;
            let _ = tokio::time::timeout(LINGER, drain_and_close(stream)).await;
        });
    }
}

/// The slots one connection holds, given back when it closes.
struct Admitted {
    _address: Option<Slot<IpAddr>>,
    _node: OwnedSemaphorePermit,
}

/// Serves `router` on `listener` until `shutdown` completes; then accepts nothing more, lets
/// every connection finish its request in flight and returns when all are closed.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    door: Door,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    // HTTP/1.1 alone, WebSocket upgrades included. HTTP/2 without TLS (h2c, prior
    // knowledge) is not served: telling it from HTTP/1.1 means waiting for the client's first
    // bytes with no clock running, and hyper has no header timeout for HTTP/2; no app or
    // browser speaks h2c, and a proxy in front may speak HTTP/2 to its clients.
    // Turns every route into its service once, as `into_make_service` does: a route left
    // as it is would apply its layers again on every request (a new Socket.IO engine each
    // time, which knows no session).
    let router = router.with_state::<()>(());
    let mut http1 = hyper::server::conn::http1::Builder::new();
    http1
        .timer(TokioTimer::new())
        .header_read_timeout(door.settings.header_timeout)
        .keep_alive(true)
        .error_headers(door.answer_headers.clone());
    let connections = TaskTracker::new();
    let stop = CancellationToken::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    wait_after_accept_error(err).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let slots = match door.admit(peer.ip()) {
            Ok(slots) => slots,
            Err((limit, answer)) => {
                door.refuse(stream, limit, answer);
                continue;
            }
        };
        write_at_once(&stream);
        let (header_timeout, min_rate) = (door.settings.header_timeout, door.settings.body_min_rate);
        let service = router.clone().map_request(move |request: axum::http::Request<hyper::body::Incoming>| {
            let mut request = request.map(|body| Body::new(PacedBody::new(body, header_timeout, min_rate)));
            request.extensions_mut().insert(ConnectInfo(peer));
            request
        });
        let io = TokioIo::new(Held::new(stream, slots));
        let connection = http1.serve_connection(io, TowerToHyperService::new(service)).with_upgrades();
        let stop = stop.clone();
        connections.spawn(async move {
            let mut connection = std::pin::pin!(connection);
            let served = tokio::select! {
                served = connection.as_mut() => served,
                () = stop.cancelled() => {
                    // The request in flight is answered; the connection takes no other.
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(err) = served {
                tracing::trace!(error = %err, "a connection ended with an error");
            }
        });
    }
    drop(listener);
    stop.cancel();
    connections.close();
    connections.wait().await;
    Ok(())
}

/// Each write goes out at once, as Node's `ws` sets it: a small event right behind a large
/// state does not wait for the watcher's delayed acknowledgement (Nagle's algorithm).
fn write_at_once(stream: &TcpStream) {
    if let Err(err) = stream.set_nodelay(true) {
        tracing::debug!(error = %err, "could not turn Nagle's algorithm off");
    }
}

/// As hyper's servers did: a refused or reset connection is nothing; anything else (out of
/// file descriptors, most often) is logged and the next accept waits a second, for the node
/// to close some.
async fn wait_after_accept_error(err: io::Error) {
    if matches!(
        err.kind(),
        io::ErrorKind::ConnectionRefused | io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset
    ) {
        return;
    }
    tracing::error!(error = %err, "could not accept a connection");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// Ends the sending side of a connection, then reads and drops what the client sends until it
/// closes (a request arriving after a refusal, the rest of a message too large): closing a
/// socket with unread bytes resets the connection, and a reset can wipe the last answer from
/// the client's buffer before it reads it. The caller bounds it by [`LINGER`].
async fn drain_and_close(mut stream: TcpStream) -> io::Result<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // Shut down already (hyper or the WebSocket did) is as good.
    let _ = stream.shutdown().await;
    let mut sink = [0_u8; 16 * 1024];
    let mut drained = 0;
    while drained < LINGER_READS_AT_MOST {
        match stream.read(&mut sink).await? {
            0 => break,
            read => drained += read,
        }
    }
    Ok(())
}

/// A complete HTTP/1.1 answer in the contract's error shape, with `headers`, closing the
/// connection.
fn refusal(code: ErrorCode, message: &str, headers: &HeaderMap) -> Bytes {
    let body = ErrorBody { error: ErrorObject { code, message: message.to_owned(), details: None } };
    let body = serde_json::to_vec(&body).unwrap_or_else(|_| b"{}".to_vec());
    let status = code.status();
    let mut head = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nretry-after: {}\r\nconnection: close\r\n",
        status.as_str(),
        status.canonical_reason().unwrap_or_default(),
        body.len(),
        REFUSAL_RETRY_AFTER.as_secs(),
    )
    .into_bytes();
    for (name, value) in headers {
        head.extend_from_slice(name.as_str().as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value.as_bytes());
        head.extend_from_slice(b"\r\n");
    }
    head.extend_from_slice(b"\r\n");
    Bytes::from([head, body].concat())
}

/// When a refused client may try again.
const REFUSAL_RETRY_AFTER: Duration = Duration::from_secs(5);

/// The node's cap: the setting, or the open-file limit less what the node needs for itself.
fn node_cap(setting: usize, open_file_limit: Option<usize>) -> usize {
    match open_file_limit {
        Some(limit) => setting.min(limit.saturating_sub(RESERVED_DESCRIPTORS).max(1)),
        None => setting,
    }
}

/// The soft limit of open files of this process, where the system tells it (Linux).
fn open_file_limit() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|line| line.starts_with("Max open files"))?;
    line.trim_start_matches("Max open files").split_whitespace().next()?.parse().ok()
}

/// A client's stream with the slots it holds: given back when the stream is dropped,
/// whether hyper drops it or the WebSocket it was upgraded to. Dropped, it closes as a
/// lingering close: what the server wrote last (a refusal, a WebSocket's close 1009) reaches
/// the client even when the client is still sending.
struct Held {
    /// `None` only once dropped.
    stream: Option<TcpStream>,
    slots: Option<Admitted>,
}

impl Held {
    fn new(stream: TcpStream, slots: Admitted) -> Self {
        Self { stream: Some(stream), slots: Some(slots) }
    }

    fn stream(&mut self) -> io::Result<&mut TcpStream> {
        self.stream.as_mut().ok_or_else(|| io::ErrorKind::NotConnected.into())
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let (Some(stream), slots) = (self.stream.take(), self.slots.take()) else { return };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _places = slots;
                let _ = tokio::time::timeout(LINGER, drain_and_close(stream)).await;
            });
        }
    }
}

impl AsyncRead for Held {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.stream() {
            Ok(stream) => Pin::new(stream).poll_read(cx, buf),
            Err(err) => Poll::Ready(Err(err)),
        }
    }
}

impl AsyncWrite for Held {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.stream() {
            Ok(stream) => Pin::new(stream).poll_write(cx, buf),
            Err(err) => Poll::Ready(Err(err)),
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let stream = match self.stream() {
            Ok(stream) => stream,
            Err(err) => return Poll::Ready(Err(err)),
        };
        #[cfg(target_os = "linux")]
        if let Some(span) = engineioxide::file_frames::find(bufs) {
            return poll_send_file(stream, cx, &span);
        }
        Pin::new(stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.as_ref().is_some_and(AsyncWrite::is_write_vectored)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.stream() {
            Ok(stream) => Pin::new(stream).poll_flush(cx),
            Err(err) => Poll::Ready(Err(err)),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.stream() {
            Ok(stream) => Pin::new(stream).poll_shutdown(cx),
            Err(err) => Poll::Ready(Err(err)),
        }
    }
}

/// Writes `span` of a memory file, as a vectored write of the same bytes would: the kernel
/// sends the file's pages instead of a copy of them (a broadcast's frame, the same for every
/// socket of a room). A partial write says how much went, as `writev` does.
#[cfg(target_os = "linux")]
fn poll_send_file(
    stream: &TcpStream,
    cx: &mut Context<'_>,
    span: &engineioxide::file_frames::FileSpan,
) -> Poll<io::Result<usize>> {
    loop {
        std::task::ready!(stream.poll_write_ready(cx))?;
        let mut offset = span.offset;
        let sent = stream.try_io(tokio::io::Interest::WRITABLE, || {
            rustix::fs::sendfile(stream, span.file(), Some(&mut offset), span.len).map_err(io::Error::from)
        });
        match sent {
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
            sent => return Poll::Ready(sent),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_accepted_connection_writes_at_once() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let address = listener.local_addr().expect("its address");
        let _client = TcpStream::connect(address).await.expect("connected");
        let (stream, _) = listener.accept().await.expect("accepted");
        assert!(!stream.nodelay().expect("read"), "Nagle's algorithm is on by default");
        write_at_once(&stream);
        assert!(stream.nodelay().expect("read"));
    }

    /// A broadcast's frame kept in a memory file goes out whole and in order through a socket
    /// whose reader is behind: `sendfile` sends part of it, waits for room, and the writer goes
    /// on from where it stopped, as after a partial `writev`.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_frame_in_a_memory_file_arrives_whole_past_a_full_socket() {
        use engineioxide::file_frames;
        use tokio::io::AsyncReadExt;
        let head = [0x81_u8, 0x7f, 0, 0, 0, 0, 0, 0x7a, 0x12, 0x00];
        let body: Vec<u8> = (0..8_000_000_u32).map(|i| (i % 251) as u8).collect();
        let payload = file_frames::in_file(&head, &[&body]).expect("a memory file");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let mut client = TcpStream::connect(listener.local_addr().expect("its address")).await.expect("connected");
        let (stream, _) = listener.accept().await.expect("accepted");
        let node = Arc::new(Semaphore::new(1)).try_acquire_owned().expect("a slot");
        let mut held = Held::new(stream, Admitted { _address: None, _node: node });
        let reader = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let mut received = Vec::new();
            client.read_to_end(&mut received).await.expect("read");
            received
        });
        let (mut done, mut writes, mut from_file) = (0, 0, 0);
        while done < head.len() + payload.len() {
            let bufs = if done < head.len() {
                [io::IoSlice::new(&head[done..]), io::IoSlice::new(&payload)]
            } else {
                [io::IoSlice::new(&payload[done - head.len()..]), io::IoSlice::new(&[])]
            };
            from_file += usize::from(file_frames::find(&bufs).is_some());
            writes += 1;
            done +=
                std::future::poll_fn(|cx| Pin::new(&mut held).poll_write_vectored(cx, &bufs)).await.expect("written");
        }
        drop(held);
        let received = reader.await.expect("the reader");
        assert!(received == [&head[..], &body[..]].concat(), "every byte once, in order");
        assert!(writes > 1, "the socket took it in parts");
        assert!(from_file + 1 >= writes, "sent from the file but for a short end: {from_file} of {writes}");
    }

    #[test]
    fn the_node_cap_leaves_descriptors_for_the_node_itself() {
        assert_eq!(node_cap(20_000, Some(1_048_576)), 20_000);
        assert_eq!(node_cap(20_000, Some(10_000)), 9_488);
        assert_eq!(node_cap(20_000, Some(100)), 1, "a tiny limit still serves one");
        assert_eq!(node_cap(20_000, None), 20_000);
    }

    #[test]
    fn this_machine_s_open_file_limit_is_read() {
        if cfg!(target_os = "linux") {
            assert!(open_file_limit().is_some_and(|limit| limit > 0));
        }
    }

    #[test]
    fn a_refusal_is_a_whole_http_answer_in_the_contract_s_shape() {
        let answer = refusal(ErrorCode::RateLimited, "too many", &super::super::headers::every_answer("http://x"));
        let text = String::from_utf8(answer.to_vec()).expect("text");
        let (head, body) = text.split_once("\r\n\r\n").expect("a head and a body");
        assert!(head.starts_with("HTTP/1.1 429 Too Many Requests\r\n"), "{head}");
        assert!(head.contains(&format!("content-length: {}", body.len())));
        assert!(head.contains("connection: close") && head.contains("retry-after: 5"));
        for header in ["x-content-type-options: nosniff", "referrer-policy: no-referrer", "x-frame-options: DENY"] {
            assert!(head.contains(header), "{head}");
        }
        let body: serde_json::Value = serde_json::from_str(body).expect("JSON");
        assert_eq!(body["error"]["code"], "RATE_LIMITED");
    }
}
