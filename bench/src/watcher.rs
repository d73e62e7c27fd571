//! One watcher: connects to `/live` over WebSocket or long-polling, joins the tournament's
//! room, then reports every `state` (or `clock`) it reads with the instant it had it whole.
//! It looks only at a packet's first bytes (see [`crate::engineio`]) and reports through an
//! unbounded channel, so a round costs the benchmark little CPU beside the server.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::OwnedSemaphorePermit;
use tokio::sync::mpsc::UnboundedSender;
use tokio::time::timeout;

use crate::engineio::{self, ENGINE_IO_PATH, JOIN_ACK_ID, PONG, Packet};
use crate::polling::PollConn;
use crate::ws::WsConn;

/// How the watchers reach Engine.IO.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    #[value(name = "websocket")]
    WebSocket,
    Polling,
}

impl Transport {
    pub const fn name(self) -> &'static str {
        match self {
            Self::WebSocket => "websocket",
            Self::Polling => "polling",
        }
    }
}

/// Everything a watcher needs to connect and join.
pub struct Target {
    pub addr: SocketAddr,
    /// `http://host:port`, for long-polling.
    pub base: String,
    pub transport: Transport,
    /// The shared HTTP client of long-polling.
    pub http: reqwest::Client,
    pub token: String,
    pub tournament_id: String,
    pub compact: bool,
    /// Offer permessage-deflate (WebSocket only).
    pub deflate: bool,
}

/// What watchers tell the benchmark.
#[derive(Debug)]
pub enum Report {
    /// The join's ack (of watcher `idx`) said ok, carrying this LiveState version;
    /// `deflate`: the connection negotiated permessage-deflate.
    /// `ack_bytes`: the ack's packet.
    Joined { idx: usize, version: i64, at: Instant, deflate: bool, ack: Duration, ack_bytes: usize },
    /// The watcher never joined; `reason` is short and stable, so failures group by it.
    Failed { reason: String },
    /// A `state`, `patch` or (`clock` true) `clock` update of this version was read whole, `wire`
    /// bytes of it on the connection (the WebSocket message's payload, or the polling packet).
    Delivered { idx: usize, version: i64, clock: bool, at: Instant, wire: usize },
    /// A joined watcher's connection ended before the benchmark closed it.
    Closed { idx: usize, reason: String },
    /// Watcher `idx` was refused by the namespace (`connect_error`), which socket.io-client
    /// never retries: it stays dark, as an app does until the player restarts it.
    Stranded { idx: usize, reason: String },
}

/// Up to the connect of `/live`: TCP, upgrade or first poll, Engine.IO open, Socket.IO connect.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(15);
/// A join whose ack has not come this long after it was sent is lost.
const JOIN_TIMEOUT: Duration = Duration::from_secs(15);

/// Connects, joins (holding `permit` until then, which bounds the handshakes in flight), and
/// reports until the connection ends or the task is aborted.
pub async fn watch(idx: usize, target: Arc<Target>, permit: OwnedSemaphorePermit, reports: UnboundedSender<Report>) {
    let joined = join(&target, None).await;
    let at = Instant::now();
    drop(permit);
    let link = match joined {
        Ok((link, acked)) => {
            let (version, ack) = (acked.version, acked.took);
            let _ =
                reports.send(Report::Joined { idx, version, at, deflate: link.deflate(), ack, ack_bytes: acked.bytes });
            link
        }
        Err(reason) => {
            let _ = reports.send(Report::Failed { reason });
            return;
        }
    };
    let (reason, _) = follow(idx, link, &reports).await;
    let _ = reports.send(Report::Closed { idx, reason });
}

/// Reports every change a joined watcher reads, answering the server's pings, until the
/// connection ends: why it ended, and the highest version read (`None`: none).
pub async fn follow(idx: usize, mut link: Link, reports: &UnboundedSender<Report>) -> (String, Option<i64>) {
    let mut highest = None;
    let reason = loop {
        let action = match link.next_packet().await {
            Ok(Some(packet)) => Action::of(engineio::parse(packet), packet.len()),
            Ok(None) => break "closed by the server".to_owned(),
            Err(err) => break cause("read", &err),
        };
        match action {
            Action::Pong => {
                if let Err(err) = link.send(PONG).await {
                    break cause("pong", &err);
                }
            }
            Action::Deliver { version, clock, read } => {
                highest = highest.max(Some(version));
                let wire = link.last_wire().unwrap_or(read);
                let _ = reports.send(Report::Delivered { idx, version, clock, at: Instant::now(), wire });
            }
            Action::Unreadable => break "a state without a version".to_owned(),
            Action::Stop(reason) => break reason.to_owned(),
            Action::Nothing => {}
        }
    };
    (reason, highest)
}

/// What a joined watcher does about one packet (owned, so the packet's borrow ends first).
enum Action {
    Pong,
    /// `read`: the bytes of the packet as read (over WebSocket, only its head).
    Deliver {
        version: i64,
        clock: bool,
        read: usize,
    },
    Unreadable,
    Stop(&'static str),
    Nothing,
}

impl Action {
    fn of(packet: Packet<'_>, read: usize) -> Self {
        match packet {
            Packet::Ping => Self::Pong,
            // A compact watcher hears `clock` for a press of the clock, `patch` for other changes.
            Packet::Event { name: name @ (b"state" | b"clock" | b"patch"), args } => match engineio::live_version(args)
            {
                Some(version) => Self::Deliver { version, clock: name == b"clock", read },
                None => Self::Unreadable,
            },
            Packet::Disconnected => Self::Stop(SERVER_DISCONNECT),
            Packet::Close => Self::Stop("Engine.IO close from the server"),
            _ => Self::Nothing,
        }
    }
}

/// A join's ack as a watcher read it.
pub struct Acked {
    /// The LiveState version it carried (a `patch`'s `version`).
    pub version: i64,
    /// From the join's sending to the ack's arrival.
    pub took: Duration,
    /// The ack's size on the wire (over long-polling, its packet's), in bytes.
    pub bytes: usize,
}

/// Connects and joins, saying the version it `held` when it holds one; the ack, or why not.
pub async fn join(target: &Target, held: Option<i64>) -> Result<(Link, Acked), String> {
    let mut link = match timeout(HANDSHAKE_TIMEOUT, connect(target)).await {
        Ok(connected) => connected?,
        Err(_) => return Err("connect: timeout".to_owned()),
    };
    let join = engineio::join(&target.tournament_id, target.compact, held);
    link.send(join.as_bytes()).await.map_err(|err| cause("join", &err))?;
    let sent = Instant::now();
    let ack = async {
        loop {
            match link.next_packet().await.map_err(|err| cause("join", &err))? {
                None => return Err("join: closed".to_owned()),
                Some(packet) => match engineio::parse(packet) {
                    // No change happens while watchers join: a `state` before the ack is ignored.
                    Packet::Ping => link.send(PONG).await.map_err(|err| cause("join", &err))?,
                    Packet::Ack { id: JOIN_ACK_ID, args } if engineio::ack_is_ok(args) => {
                        let version = engineio::live_version(args).ok_or("join: an ack without a version")?;
                        let read = packet.len();
                        return Ok((version, read));
                    }
                    Packet::Ack { id: JOIN_ACK_ID, args } => {
                        return Err(format!("join: refused {}", engineio::ack_error_code(args).unwrap_or("?")));
                    }
                    Packet::Disconnected => return Err(format!("join: {SERVER_DISCONNECT}")),
                    Packet::Close => return Err("join: Engine.IO close from the server".to_owned()),
                    _ => {}
                },
            }
        }
    };
    match timeout(JOIN_TIMEOUT, ack).await {
        Ok(acked) => {
            let (version, read) = acked?;
            let bytes = link.last_wire().unwrap_or(read);
            Ok((link, Acked { version, took: sent.elapsed(), bytes }))
        }
        Err(_) => Err("join: timeout".to_owned()),
    }
}

/// Opens the transport and connects the `/live` namespace.
async fn connect(target: &Target) -> Result<Link, String> {
    let mut link = match target.transport {
        Transport::WebSocket => {
            let path = format!("{ENGINE_IO_PATH}?EIO=4&transport=websocket");
            let mut conn =
                WsConn::connect(target.addr, &path, target.deflate).await.map_err(|err| cause("websocket", &err))?;
            // Over WebSocket the open packet is the first message.
            match conn.next_message().await.map_err(|err| cause("open", &err))? {
                Some(packet) if matches!(engineio::parse(packet), Packet::Open(_)) => Link::Ws(conn),
                _ => return Err("open: no open packet".to_owned()),
            }
        }
        Transport::Polling => {
            Link::Polling(PollConn::open(&target.http, &target.base).await.map_err(|err| cause("polling", &err))?)
        }
    };
    link.send(engineio::connect(&target.token).as_bytes()).await.map_err(|err| cause("connect", &err))?;
    loop {
        match link.next_packet().await.map_err(|err| cause("connect", &err))? {
            None => return Err("connect: closed".to_owned()),
            Some(packet) => match engineio::parse(packet) {
                Packet::Connected => return Ok(link),
                Packet::ConnectError(json) => {
                    return Err(format!("connect_error: {}", engineio::connect_error_message(json).unwrap_or("?")));
                }
                Packet::Ping => link.send(PONG).await.map_err(|err| cause("connect", &err))?,
                _ => {}
            },
        }
    }
}

/// Why a watcher's namespace was closed by the server (a Socket.IO `DISCONNECT` packet):
/// socket.io-client's `io server disconnect`.
const SERVER_DISCONNECT: &str = "disconnected from /live by the server";

/// Whether a failure to join, or the end of a joined watcher (as [`join`] and [`follow`] tell
/// them), is one socket.io-client 4.x never retries: the namespace's refusal (`connect_error`)
/// or its disconnect by the server (`io server disconnect`). A transport's failure or close, an
/// HTTP error on the handshake and an Engine.IO close it retries with its backoff.
pub fn is_given_up(reason: &str) -> bool {
    reason.starts_with("connect_error:") || reason.ends_with(SERVER_DISCONNECT)
}

/// A short, stable description of a failure at `step`, so that failures group: an I/O
/// error by its kind, anything else by its innermost message (outer ones name URLs).
fn cause(step: &str, err: &anyhow::Error) -> String {
    let io = err.chain().find_map(|cause| cause.downcast_ref::<std::io::Error>());
    match io {
        // EMFILE: the benchmark's own open-files limit.
        Some(io) if io.raw_os_error() == Some(24) => format!("{step}: too many open files (raise `ulimit -n`)"),
        Some(io) => format!("{step}: {:?}", io.kind()),
        None => format!("{step}: {}", err.root_cause()),
    }
}

/// The transport under the Socket.IO packets.
pub enum Link {
    Ws(WsConn),
    Polling(PollConn),
}

impl Link {
    async fn send(&mut self, packet: &[u8]) -> anyhow::Result<()> {
        match self {
            Self::Ws(conn) => conn.send_text(packet).await,
            Self::Polling(conn) => conn.send(packet).await,
        }
    }

    /// Whether the connection negotiated permessage-deflate.
    pub fn deflate(&self) -> bool {
        matches!(self, Self::Ws(conn) if conn.deflate)
    }

    /// Over WebSocket, the size on the wire of the last message read.
    fn last_wire(&self) -> Option<usize> {
        match self {
            Self::Ws(conn) => Some(conn.last_wire),
            Self::Polling(_) => None,
        }
    }

    /// The next Engine.IO packet (over WebSocket only its first bytes), `None` at the end.
    async fn next_packet(&mut self) -> anyhow::Result<Option<&[u8]>> {
        match self {
            Self::Ws(conn) => conn.next_message().await,
            Self::Polling(conn) => conn.next_packet().await,
        }
    }
}
