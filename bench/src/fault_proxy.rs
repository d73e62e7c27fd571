//! A small TCP proxy of the tests' own between Floor and PostgreSQL or Redis, the network's
//! gray failures on demand: every byte from the server held back a while (latency), or the
//! connections kept open and nothing passed either way (a blackhole, as a partition or a
//! dropped route looks to both ends until TCP gives up: minutes). What a blackhole held passes
//! on when it is lifted, as TCP's retransmissions deliver it after a partition heals. In front
//! of PostgreSQL it also cuts one transaction's connection at its `COMMIT`, before the server
//! hears it or after, so the client never learns which.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// What the proxy does to the traffic now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// Nothing: bytes pass as they come.
    None,
    /// Each byte from the server passes this long after it came.
    Latency(Duration),
    /// Nothing passes, either way; new connections are accepted and left waiting.
    Blackhole,
}

/// Where a cut at `COMMIT` falls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// The `COMMIT` never reaches the server, which rolls the transaction back when it finds
    /// the connection closed.
    BeforeCommit,
    /// The server gets the `COMMIT` and commits; its answer never reaches the client.
    AfterCommit,
    /// As [`Cut::AfterCommit`], and from then on nothing passes (a blackhole), so the client
    /// cannot ask the server what happened either.
    AfterCommitThenBlackhole,
}

/// A cut waiting for its transaction: the first whose messages carry one of `named`.
struct ArmedCut {
    named: Vec<Vec<u8>>,
    cut: Cut,
}

/// What the client-to-server direction of every connection watches for a cut at `COMMIT`.
#[derive(Clone, Default)]
struct Commits {
    armed: Arc<Mutex<Option<ArmedCut>>>,
    cuts: Arc<AtomicUsize>,
}

/// The statements that end a transaction, as sqlx sends them (a simple query each).
const COMMIT: &[u8] = b"COMMIT\x00";
const ROLLBACK: &[u8] = b"ROLLBACK\x00";

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|window| window == needle)
}

/// A proxy listening on a free port of 127.0.0.1 in front of `upstream`; it stops when dropped.
pub struct FaultProxy {
    pub port: u16,
    fault: Arc<watch::Sender<Fault>>,
    commits: Commits,
    accepting: tokio::task::JoinHandle<()>,
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

impl FaultProxy {
    /// A proxy to `upstream` (`host:port`), passing everything as it comes.
    pub async fn start(upstream: &str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
        let port = listener.local_addr().expect("its address").port();
        let fault = Arc::new(watch::Sender::new(Fault::None));
        let commits = Commits::default();
        let upstream = upstream.to_owned();
        let (shared, watched) = (fault.clone(), commits.clone());
        let accepting = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(carry(client, upstream.clone(), shared.clone(), watched.clone()));
            }
        });
        Self { port, fault, commits, accepting }
    }

    /// Cuts, once, the connection of the next transaction whose messages carry `id` (a value
    /// it binds, in binary or as text), at its `COMMIT`, where `cut` says. Both ends see the
    /// connection closed.
    pub fn cut_at_commit(&self, id: uuid::Uuid, cut: Cut) {
        let named = vec![id.as_bytes().to_vec(), id.to_string().into_bytes()];
        *self.commits.armed.lock().expect("the cut") = Some(ArmedCut { named, cut });
    }

    /// Lifts a cut armed and not made yet.
    pub fn disarm(&self) {
        self.commits.armed.lock().expect("the cut").take();
    }

    /// How many connections were cut at a `COMMIT` so far.
    pub fn cuts(&self) -> usize {
        self.commits.cuts.load(Ordering::SeqCst)
    }

    /// `url` with its port replaced by the proxy's: `postgres://u@127.0.0.1:5432/db` becomes
    /// `postgres://u@127.0.0.1:<port>/db`.
    pub fn in_front_of(&self, url: &str, upstream_port: u16) -> String {
        url.replace(&format!(":{upstream_port}"), &format!(":{}", self.port))
    }

    /// [`FaultProxy::in_front_of`] for a PostgreSQL URL, in plain text (`sslmode=disable`): over
    /// TLS, which sqlx tries first, the proxy sees no `COMMIT` and no id, and cuts nothing.
    pub fn in_front_of_postgres(&self, url: &str, upstream_port: u16) -> String {
        let proxied = self.in_front_of(url, upstream_port);
        let joint = if proxied.contains('?') { '&' } else { '?' };
        format!("{proxied}{joint}sslmode=disable")
    }

    /// Holds back every byte from the server `delay` from now on.
    pub fn delay(&self, delay: Duration) {
        self.fault.send_replace(Fault::Latency(delay));
    }

    /// Lets nothing through, either way, from now on.
    pub fn blackhole(&self) {
        self.fault.send_replace(Fault::Blackhole);
    }

    /// Lets everything through again, what was held first.
    pub fn heal(&self) {
        self.fault.send_replace(Fault::None);
    }
}

/// Carries one client's connection to `upstream` and back until either end closes it. A
/// connection that comes during a blackhole reaches the server only when it is lifted.
async fn carry(client: TcpStream, upstream: String, faults: Arc<watch::Sender<Fault>>, commits: Commits) {
    let mut fault = faults.subscribe();
    if fault.wait_for(|fault| *fault != Fault::Blackhole).await.is_err() {
        return;
    }
    let Ok(server) = TcpStream::connect(&upstream).await else { return };
    client.set_nodelay(true).ok();
    server.set_nodelay(true).ok();
    let (client_reads, client_writes) = client.into_split();
    let (server_reads, server_writes) = server.into_split();
    let severed = Arc::new(AtomicBool::new(false));
    let watch = Watch { commits, faults, severed: severed.clone(), named: false };
    let out = tokio::spawn(pass(client_reads, server_writes, fault.clone(), Some(watch), severed.clone()));
    pass(server_reads, client_writes, fault, None, severed).await;
    out.abort();
}

/// The watch of one connection's messages to the server for an armed cut at `COMMIT`.
struct Watch {
    commits: Commits,
    faults: Arc<watch::Sender<Fault>>,
    /// Set by a cut: nothing more passes either way.
    severed: Arc<AtomicBool>,
    /// Whether the transaction under way has carried the armed cut's bytes.
    named: bool,
}

impl Watch {
    /// The cut to make before or after passing `chunk` on, if it is the armed one's `COMMIT`.
    fn cut_at(&mut self, chunk: &[u8]) -> Option<Cut> {
        let mut armed = self.commits.armed.lock().expect("the cut");
        let Some(waiting) = armed.as_ref() else {
            self.named = false;
            return None;
        };
        self.named |= waiting.named.iter().any(|named| contains(chunk, named));
        let ends = contains(chunk, COMMIT);
        if !ends {
            if contains(chunk, ROLLBACK) {
                self.named = false;
            }
            return None;
        }
        let cut = self.named.then(|| armed.take()).flatten().map(|waiting| waiting.cut);
        self.named = false;
        if cut.is_some() {
            self.severed.store(true, Ordering::SeqCst);
            self.commits.cuts.fetch_add(1, Ordering::SeqCst);
        }
        cut
    }
}

/// Passes bytes from `from` to `to` as `fault` lets it: the server's direction (no `watch`)
/// is the one a latency holds back; the client's is watched for a cut at `COMMIT`. Once the
/// connection is `severed` nothing more passes.
async fn pass(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    fault: watch::Receiver<Fault>,
    mut watch: Option<Watch>,
    severed: Arc<AtomicBool>,
) {
    let delayed = watch.is_none();
    // The reader stamps each chunk with when it may pass; the writer waits for then, and for
    // any blackhole to be lifted, so chunks keep their order and a latency costs no throughput.
    let (chunks, mut queued) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let reading = {
        let fault = fault.clone();
        tokio::spawn(async move {
            let mut buffer = vec![0u8; 16 * 1024];
            loop {
                let read = match from.read(&mut buffer).await {
                    Ok(0) | Err(_) => return,
                    Ok(read) => read,
                };
                let hold = match *fault.borrow() {
                    Fault::Latency(delay) if delayed => delay,
                    _ => Duration::ZERO,
                };
                if chunks.send((Instant::now() + hold, buffer[..read].to_vec())).is_err() {
                    return;
                }
            }
        })
    };
    let mut fault = fault;
    while let Some((due, chunk)) = queued.recv().await {
        tokio::time::sleep_until(due).await;
        if severed.load(Ordering::SeqCst) || fault.wait_for(|fault| *fault != Fault::Blackhole).await.is_err() {
            break;
        }
        match watch.as_mut().and_then(|watch| watch.cut_at(&chunk).map(|cut| (cut, &watch.faults))) {
            Some((Cut::BeforeCommit, _)) => break,
            Some((after, faults)) => {
                to.write_all(&chunk).await.ok();
                if after == Cut::AfterCommitThenBlackhole {
                    faults.send_replace(Fault::Blackhole);
                }
                break;
            }
            None => {}
        }
        if severed.load(Ordering::SeqCst) || to.write_all(&chunk).await.is_err() {
            break;
        }
    }
    reading.abort();
    to.shutdown().await.ok();
}
