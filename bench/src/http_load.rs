//! A closed-loop HTTP/1.1 load generator, as `wrk -t1 -cC` runs one: C keep-alive
//! connections on one thread of their own, each sending the same request again as soon as the
//! answer has been read whole. It reads only what it must (the status, the length or the
//! chunks), so that on a machine it shares with the server it takes as little CPU as it can.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One request, sent again and again.
#[derive(Clone)]
pub struct Request {
    pub addr: SocketAddr,
    /// The whole request as it goes on the wire.
    pub bytes: Arc<[u8]>,
}

impl Request {
    /// `GET path` with `headers` (name, value) besides `Host`.
    pub fn get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Self {
        let mut text = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n");
        for (name, value) in headers {
            text.push_str(&format!("{name}: {value}\r\n"));
        }
        text.push_str("\r\n");
        Self { addr, bytes: text.into_bytes().into() }
    }
}

/// What one load run measured.
#[derive(Clone, Debug, Serialize)]
pub struct Load {
    /// Answers read whole within the measured window.
    pub answers: u64,
    pub seconds: f64,
    pub per_second: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// Answers by status.
    pub statuses: BTreeMap<u16, u64>,
    /// Body bytes of an answer, on average.
    pub body_bytes: u64,
    /// Connections the server closed, or that failed, and were opened again.
    pub reconnects: u64,
}

/// How long a run goes on.
pub enum Until {
    /// A fixed time after the warm-up.
    Elapsed(Duration),
    /// Until the flag is set (after the warm-up too).
    Flag(Arc<AtomicBool>),
}

/// Runs `connections` connections sending `request` for `warm_up` (not counted), then until
/// `until`, on a thread of their own; returns what the measured part saw.
pub fn run(request: Request, connections: usize, warm_up: Duration, until: Until) -> anyhow::Result<Load> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let thread = std::thread::Builder::new().name("http-load".into()).spawn(move || {
        runtime.block_on(async move {
            let started = Instant::now();
            let measured_from = started + warm_up;
            let stop = Arc::new(AtomicBool::new(false));
            let mut tasks = Vec::with_capacity(connections);
            for _ in 0..connections {
                tasks.push(tokio::spawn(connection(request.clone(), measured_from, stop.clone())));
            }
            let ended = match until {
                Until::Elapsed(length) => {
                    tokio::time::sleep_until((measured_from + length).into()).await;
                    Instant::now()
                }
                Until::Flag(flag) => {
                    tokio::time::sleep_until(measured_from.into()).await;
                    while !flag.load(Ordering::Acquire) {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    Instant::now()
                }
            };
            stop.store(true, Ordering::Release);
            let mut tally = Tally::default();
            for task in tasks {
                tally.add(task.await??);
            }
            Ok::<_, anyhow::Error>(tally.load(ended.saturating_duration_since(measured_from)))
        })
    })?;
    thread.join().map_err(|_| anyhow::anyhow!("the load thread panicked"))?
}

/// What one connection saw in the measured window.
#[derive(Default)]
struct Tally {
    latencies_us: Vec<u32>,
    statuses: BTreeMap<u16, u64>,
    body_bytes: u64,
    reconnects: u64,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        self.latencies_us.extend(other.latencies_us);
        for (status, count) in other.statuses {
            *self.statuses.entry(status).or_default() += count;
        }
        self.body_bytes += other.body_bytes;
        self.reconnects += other.reconnects;
    }

    fn load(mut self, window: Duration) -> Load {
        self.latencies_us.sort_unstable();
        let answers = self.latencies_us.len() as u64;
        let seconds = window.as_secs_f64();
        let at = |fraction: f64| -> f64 {
            if self.latencies_us.is_empty() {
                return 0.0;
            }
            let index = ((self.latencies_us.len() as f64 * fraction).ceil() as usize).clamp(1, self.latencies_us.len());
            f64::from(self.latencies_us[index - 1]) / 1000.0
        };
        Load {
            answers,
            seconds,
            per_second: if seconds > 0.0 { answers as f64 / seconds } else { 0.0 },
            p50_ms: at(0.50),
            p99_ms: at(0.99),
            max_ms: at(1.0),
            statuses: self.statuses,
            body_bytes: self.body_bytes.checked_div(answers).unwrap_or_default(),
            reconnects: self.reconnects,
        }
    }
}

/// One connection's loop: send, read the whole answer, note it (once measuring), again.
async fn connection(request: Request, measured_from: Instant, stop: Arc<AtomicBool>) -> anyhow::Result<Tally> {
    let mut tally = Tally::default();
    let mut buffer = Vec::with_capacity(64 * 1024);
    let mut stream = connect(request.addr).await?;
    while !stop.load(Ordering::Acquire) {
        let sent = Instant::now();
        let answer = match exchange(&mut stream, &request.bytes, &mut buffer).await {
            Ok(answer) => answer,
            Err(_) => {
                tally.reconnects += 1;
                stream = connect(request.addr).await?;
                continue;
            }
        };
        let done = Instant::now();
        if sent >= measured_from && !stop.load(Ordering::Acquire) {
            let micros = u32::try_from(done.duration_since(sent).as_micros()).unwrap_or(u32::MAX);
            tally.latencies_us.push(micros);
            *tally.statuses.entry(answer.status).or_default() += 1;
            tally.body_bytes += answer.body_bytes as u64;
        }
        if answer.close {
            tally.reconnects += 1;
            stream = connect(request.addr).await?;
        }
    }
    Ok(tally)
}

async fn connect(addr: SocketAddr) -> anyhow::Result<TcpStream> {
    let stream = TcpStream::connect(addr).await.with_context(|| format!("connecting to {addr}"))?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// An answer as far as it is read.
struct Answer {
    status: u16,
    body_bytes: usize,
    /// The server said it closes the connection.
    close: bool,
}

/// Sends `request` and reads its answer whole; `buffer` is scratch space kept between calls.
async fn exchange(stream: &mut TcpStream, request: &[u8], buffer: &mut Vec<u8>) -> anyhow::Result<Answer> {
    stream.write_all(request).await?;
    buffer.clear();
    let head_end = loop {
        if let Some(at) = memchr::memmem::find(buffer, b"\r\n\r\n") {
            break at + 4;
        }
        read_more(stream, buffer).await?;
    };
    let head = Head::parse(&buffer[..head_end])?;
    let body_bytes = match head.framing {
        Framing::Length(length) => {
            while buffer.len() < head_end + length {
                read_more(stream, buffer).await?;
            }
            length
        }
        Framing::Chunked => read_chunks(stream, buffer, head_end).await?,
    };
    Ok(Answer { status: head.status, body_bytes, close: head.close })
}

async fn read_more(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> anyhow::Result<()> {
    if buffer.capacity() - buffer.len() < 16 * 1024 {
        buffer.reserve(64 * 1024);
    }
    if stream.read_buf(buffer).await? == 0 {
        bail!("the server closed the connection");
    }
    Ok(())
}

/// Reads a chunked body that starts at `from`; its decoded length.
async fn read_chunks(stream: &mut TcpStream, buffer: &mut Vec<u8>, from: usize) -> anyhow::Result<usize> {
    let mut at = from;
    let mut body = 0;
    loop {
        let line_end = loop {
            if let Some(end) = memchr::memmem::find(&buffer[at..], b"\r\n") {
                break at + end;
            }
            read_more(stream, buffer).await?;
        };
        let size_text = std::str::from_utf8(&buffer[at..line_end])?;
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or_default().trim(), 16)
            .with_context(|| format!("a bad chunk size {size_text:?}"))?;
        // The chunk and its CRLF; the last chunk is followed by an empty trailer line.
        let needed = line_end + 2 + size + 2;
        while buffer.len() < needed {
            read_more(stream, buffer).await?;
        }
        at = needed;
        body += size;
        if size == 0 {
            return Ok(body);
        }
    }
}

/// How an answer's body is delimited.
enum Framing {
    Length(usize),
    Chunked,
}

struct Head {
    status: u16,
    framing: Framing,
    close: bool,
}

impl Head {
    fn parse(head: &[u8]) -> anyhow::Result<Self> {
        let text = std::str::from_utf8(head).context("a head that is not text")?;
        let mut lines = text.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let status = status_line
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .with_context(|| format!("a bad status line {status_line:?}"))?;
        let mut framing = Framing::Length(0);
        let mut close = false;
        for line in lines {
            let Some((name, value)) = line.split_once(':') else { continue };
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                framing = Framing::Length(value.parse().context("a bad content-length")?);
            } else if name.eq_ignore_ascii_case("transfer-encoding") && value.eq_ignore_ascii_case("chunked") {
                framing = Framing::Chunked;
            } else if name.eq_ignore_ascii_case("connection") && value.eq_ignore_ascii_case("close") {
                close = true;
            }
        }
        Ok(Self { status, framing, close })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_gives_the_status_and_how_the_body_ends() {
        let head = Head::parse(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nContent-Length: 42\r\n\r\n")
            .expect("a head");
        assert_eq!(head.status, 200);
        assert!(matches!(head.framing, Framing::Length(42)));
        assert!(!head.close);
        let chunked =
            Head::parse(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n").expect("a head");
        assert!(matches!(chunked.framing, Framing::Chunked));
        assert!(chunked.close);
        let not_modified = Head::parse(b"HTTP/1.1 304 Not Modified\r\netag: W/\"x\"\r\n\r\n").expect("a head");
        assert_eq!(not_modified.status, 304);
        assert!(matches!(not_modified.framing, Framing::Length(0)));
    }

    #[test]
    fn percentiles_are_read_off_the_sorted_latencies() {
        let tally = Tally { latencies_us: (1..=100).rev().map(|ms| ms * 1000).collect(), ..Tally::default() };
        let load = tally.load(Duration::from_secs(2));
        assert_eq!(load.answers, 100);
        assert_eq!(load.per_second, 50.0);
        assert_eq!((load.p50_ms, load.p99_ms, load.max_ms), (50.0, 99.0, 100.0));
    }

    #[tokio::test]
    async fn chunked_and_sized_answers_are_read_whole_one_after_another() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let addr = listener.local_addr().expect("an address");
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.expect("a client");
            let mut scratch = [0u8; 1024];
            let answers: [&[u8]; 2] = [
                b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
                b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\nabc",
            ];
            for answer in answers {
                let _ = socket.read(&mut scratch).await;
                // Written in two pieces, so the reader must wait for the rest.
                let (first, rest) = answer.split_at(answer.len() / 2);
                socket.write_all(first).await.expect("written");
                tokio::time::sleep(Duration::from_millis(10)).await;
                socket.write_all(rest).await.expect("written");
            }
        });
        let request = Request::get(addr, "/", &[]);
        let mut stream = connect(addr).await.expect("connected");
        let mut buffer = Vec::new();
        let chunked = exchange(&mut stream, &request.bytes, &mut buffer).await.expect("an answer");
        assert_eq!((chunked.status, chunked.body_bytes), (200, 11));
        let sized = exchange(&mut stream, &request.bytes, &mut buffer).await.expect("an answer");
        assert_eq!((sized.status, sized.body_bytes), (200, 3));
    }
}
