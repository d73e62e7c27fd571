//! A small TCP proxy of the tests' own between Floor and PostgreSQL or Redis, the network's
//! gray failures on demand: every byte from the server held back a while (latency), or the
//! connections kept open and nothing passed either way (a blackhole, as a partition or a
//! dropped route looks to both ends until TCP gives up: minutes). What a blackhole held passes
//! on when it is lifted, as TCP's retransmissions deliver it after a partition heals.

use std::sync::Arc;
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

/// A proxy listening on a free port of 127.0.0.1 in front of `upstream`; it stops when dropped.
pub(crate) struct FaultProxy {
    pub port: u16,
    fault: Arc<watch::Sender<Fault>>,
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
        let upstream = upstream.to_owned();
        let shared = fault.clone();
        let accepting = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                tokio::spawn(carry(client, upstream.clone(), shared.subscribe()));
            }
        });
        Self { port, fault, accepting }
    }

    /// `url` with its port replaced by the proxy's: `postgres://u@127.0.0.1:5432/db` becomes
    /// `postgres://u@127.0.0.1:<port>/db`.
    pub fn in_front_of(&self, url: &str, upstream_port: u16) -> String {
        url.replace(&format!(":{upstream_port}"), &format!(":{}", self.port))
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
async fn carry(client: TcpStream, upstream: String, mut fault: watch::Receiver<Fault>) {
    if fault.wait_for(|fault| *fault != Fault::Blackhole).await.is_err() {
        return;
    }
    let Ok(server) = TcpStream::connect(&upstream).await else { return };
    client.set_nodelay(true).ok();
    server.set_nodelay(true).ok();
    let (client_reads, client_writes) = client.into_split();
    let (server_reads, server_writes) = server.into_split();
    let out = tokio::spawn(pass(client_reads, server_writes, fault.clone(), false));
    pass(server_reads, client_writes, fault, true).await;
    out.abort();
}

/// Passes bytes from `from` to `to` as `fault` lets it: `delayed` is the server's direction,
/// the one a latency holds back.
async fn pass(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    fault: watch::Receiver<Fault>,
    delayed: bool,
) {
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
        if fault.wait_for(|fault| *fault != Fault::Blackhole).await.is_err() || to.write_all(&chunk).await.is_err() {
            break;
        }
    }
    reading.abort();
    to.shutdown().await.ok();
}
