//! Real clients on `/live` against the running server, and what each agrees on the WebSocket
//! (issue 30): the official socket.io-client on Node (`ws` offers permessage-deflate), headless
//! Chromium's own WebSocket speaking Engine.IO and Socket.IO by hand, and python-socketio (its
//! websocket-client offers no extension). Each joins a running tournament whose LiveState is
//! several KiB and hears a press; where the extension was agreed, the bytes on the wire are
//! measured against the message's. Outside CI a machine without Node's packages, Chromium or
//! python-socketio skips that client; in CI that is a failure.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::task::JoinHandle;

use crate::helpers::{Backend, TestApp, on_both_databases, spawn_app, spawn_app_with};
use crate::live::{Ready, ready, staff, version};
use crate::screen::{chromium, eval};

on_both_databases!(
    socket_io_client_on_node_gets_large_states_deflated_without_context_takeover,
    socket_io_client_on_node_gets_plain_frames_when_live_deflate_is_off,
    python_socketio_offering_no_extension_gets_plain_frames,
);

/// How long a test waits for something a client or the server should do.
const PATIENCE: Duration = Duration::from_secs(15);

/// What the server answers to an acceptable offer, exactly.
const AGREED: &str = "permessage-deflate; server_no_context_takeover; client_no_context_takeover";

/// Players in each test's tournament: enough for a LiveState of several KiB (six tables).
const PLAYERS: u32 = 48;

/// A LiveState this large or larger is "well over" the 1 KiB from which messages are deflated.
const LARGE: u64 = 4 * 1024;

const CONTRACT_TOOLS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/contract");

/// Outside CI a missing client skips its test; in CI it fails.
fn missing(what: &str) -> Option<PathBuf> {
    assert!(std::env::var_os("CI").is_none(), "{what} must be installed in CI");
    eprintln!("skipping: {what} is missing and CI is not set");
    None
}

/// `tests/contract/live-client.mjs`, once `node` runs and socket.io-client is installed.
fn node_client() -> Option<PathBuf> {
    let tools = Path::new(CONTRACT_TOOLS);
    let node = std::process::Command::new("node").arg("--version").output().is_ok_and(|out| out.status.success());
    if !node {
        return missing("node");
    }
    if !tools.join("node_modules/socket.io-client").is_dir() {
        return missing("tests/contract/node_modules (npm ci --prefix tests/contract)");
    }
    Some(tools.join("live-client.mjs"))
}

/// `tests/contract/live-client.py`, once python3 imports python-socketio and websocket-client.
fn python_client() -> Option<PathBuf> {
    let imports = std::process::Command::new("python3")
        .args(["-c", "import socketio, websocket"])
        .output()
        .is_ok_and(|out| out.status.success());
    if !imports {
        return missing("python-socketio with websocket-client (pip, as in .ci/run)");
    }
    Some(Path::new(CONTRACT_TOOLS).join("live-client.py"))
}

/// A client program that prints a JSON line per event and ends when its input closes.
struct ClientProcess {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
    /// Held open: closing it tells the client to leave.
    input: Option<ChildStdin>,
}

impl ClientProcess {
    /// Runs `program script <base> <token> <tournament id>`.
    fn spawn(program: &str, script: &Path, app: &TestApp, token: &str, day: &Ready) -> Self {
        let mut child = Command::new(program)
            .arg(script)
            .args([app.base.as_str(), token, &day.id.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|err| panic!("{program} runs {}: {err}", script.display()));
        let lines = BufReader::new(child.stdout.take().expect("the client's output is piped")).lines();
        let input = child.stdin.take();
        Self { child, lines, input }
    }

    /// The next line the client prints, as JSON; fails with what it said if it ended first.
    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(PATIENCE, self.lines.next_line())
            .await
            .expect("the client prints its next event within 15 s")
            .expect("the client's output reads");
        let Some(line) = line else { self.ended().await };
        serde_json::from_str(&line).unwrap_or_else(|err| panic!("the client prints JSON lines ({err}): {line}"))
    }

    /// Fails the test with the client's exit and what it wrote to stderr.
    async fn ended(&mut self) -> ! {
        let mut said = String::new();
        if let Some(mut stderr) = self.child.stderr.take() {
            let _ = stderr.read_to_string(&mut said).await;
        }
        let status = self.child.wait().await.map(|status| status.to_string()).unwrap_or_default();
        panic!("the client ended early ({status}):\n{said}");
    }

    /// Closes the client's input and waits for it to leave cleanly.
    async fn finish(mut self) {
        drop(self.input.take());
        let status = tokio::time::timeout(PATIENCE, self.child.wait())
            .await
            .expect("the client leaves within 15 s of its input closing")
            .expect("the client's exit");
        assert!(status.success(), "the client leaves cleanly: {status}");
    }
}

/// The next `state` a client prints, after its `joined` line.
async fn next_state(client: &mut ClientProcess) -> Value {
    let line = client.next().await;
    assert_eq!(line["event"], "state", "a state, nothing else, follows the press: {line}");
    line
}

/// A running tournament of [`PLAYERS`] and a client joined to it: the client's `joined` line,
/// checked to carry the running state's version.
async fn joined_through(
    program: &str,
    script: &Path,
    app: &TestApp,
    owner_phone: &str,
    prefix: u32,
) -> (Ready, ClientProcess, Value) {
    let day = ready(app, owner_phone, prefix, PLAYERS).await;
    let started = day.start(app).await;
    let mut client = ClientProcess::spawn(program, script, app, &day.players[0].access_token, &day);
    let joined = client.next().await;
    assert_eq!(joined["event"], "joined", "the join is acked first: {joined}");
    assert_eq!(joined["ok"], true, "{joined}");
    assert_eq!(joined["version"], started["version"], "the ack carries the running state: {joined}");
    (day, client, joined)
}

/// Presses pause, then resume; each press's state as the client heard it, checked to carry
/// the version the press answered with.
async fn pause_and_resume(app: &TestApp, day: &Ready, client: &mut ClientProcess) -> Vec<Value> {
    let mut heard = Vec::new();
    for press in ["pause", "resume"] {
        let answer = staff(app, &day.club, &day.path(press), json!({})).await.assert_ok().clone();
        let state = next_state(client).await;
        assert_eq!(state["version"], answer["version"], "the {press} reaches the client: {state}");
        heard.push(state);
    }
    assert!(version(&heard[1]) > version(&heard[0]), "versions go up: {heard:?}");
    heard
}

/// A `state` line's decoded size and bytes on the wire.
fn sizes(state: &Value) -> (u64, u64) {
    let decoded = state["decoded"].as_u64().expect("the decoded size");
    let wire = state["wire"].as_u64().expect("the bytes on the wire");
    (decoded, wire)
}

async fn socket_io_client_on_node_gets_large_states_deflated_without_context_takeover(backend: Backend) {
    let Some(script) = node_client() else { return };
    let Some(app) = spawn_app(backend).await else { return };
    let (day, mut client, joined) = joined_through("node", &script, &app, "+79993100001", 310).await;
    assert_eq!(joined["extensions"], "permessage-deflate", "ws agreed the extension: {joined}");
    let params = &joined["params"];
    assert_eq!(params["server_no_context_takeover"], true, "as the server answered: {joined}");
    assert_eq!(params["client_no_context_takeover"], true, "as the server answered: {joined}");

    for state in pause_and_resume(&app, &day, &mut client).await {
        let (decoded, wire) = sizes(&state);
        eprintln!("socket.io-client, deflate: a state of {decoded} bytes in {wire} bytes on the wire");
        assert!(decoded >= LARGE, "the state is well over 1 KiB: {state}");
        assert!(wire < decoded / 2, "the state came deflated: {state}");
    }
    client.finish().await;
}

async fn socket_io_client_on_node_gets_plain_frames_when_live_deflate_is_off(backend: Backend) {
    let Some(script) = node_client() else { return };
    let Some(app) = spawn_app_with(backend, &[("LIVE_DEFLATE", "false")]).await else { return };
    let (day, mut client, joined) = joined_through("node", &script, &app, "+79993110001", 311).await;
    assert_eq!(joined["extensions"], "", "nothing was agreed: {joined}");
    assert_eq!(joined["params"], Value::Null, "{joined}");

    assert_came_plain("socket.io-client, LIVE_DEFLATE=false", pause_and_resume(&app, &day, &mut client).await);
    client.finish().await;
}

async fn python_socketio_offering_no_extension_gets_plain_frames(backend: Backend) {
    let Some(script) = python_client() else { return };
    let Some(app) = spawn_app(backend).await else { return };
    let (day, mut client, joined) = joined_through("python3", &script, &app, "+79993130001", 313).await;
    assert_eq!(joined["extensions"], "", "websocket-client offers nothing, so nothing is agreed: {joined}");

    // websocket-client refuses a frame with RSV1 set: the states arriving at all says they came
    // plain, and the bytes say so too.
    assert_came_plain("python-socketio", pause_and_resume(&app, &day, &mut client).await);
    client.finish().await;
}

/// Each state, well over 1 KiB, took at least its own size on the wire: it came uncompressed.
fn assert_came_plain(client: &str, states: Vec<Value>) {
    for state in states {
        let (decoded, wire) = sizes(&state);
        eprintln!("{client}: a state of {decoded} bytes in {wire} bytes on the wire");
        assert!(decoded >= LARGE, "the state is well over 1 KiB: {state}");
        assert!(wire >= decoded, "the state came plain: {state}");
    }
}

/// A TCP relay between the browser and the server that counts the bytes the server sends.
struct CountingRelay {
    /// `host:port` to give the browser.
    address: String,
    /// Bytes from the server to the browser so far, over every relayed connection.
    received: Arc<AtomicU64>,
    task: JoinHandle<()>,
}

impl CountingRelay {
    async fn to(server: &str) -> Self {
        let target = server.trim_start_matches("http://").to_owned();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port for the relay");
        let address = listener.local_addr().expect("the relay's address").to_string();
        let received = Arc::new(AtomicU64::new(0));
        let counter = received.clone();
        let task = tokio::spawn(async move {
            let mut relays = tokio::task::JoinSet::new();
            while let Ok((inbound, _)) = listener.accept().await {
                let (target, counter) = (target.clone(), counter.clone());
                relays.spawn(async move {
                    let Ok(outbound) = TcpStream::connect(&target).await else { return };
                    let (mut from_browser, mut to_browser) = inbound.into_split();
                    let (mut from_server, mut to_server) = outbound.into_split();
                    let upstream = tokio::spawn(async move {
                        let _ = tokio::io::copy(&mut from_browser, &mut to_server).await;
                        let _ = to_server.shutdown().await;
                    });
                    let mut buffer = vec![0; 64 * 1024];
                    while let Ok(read) = from_server.read(&mut buffer).await {
                        if read == 0 || to_browser.write_all(&buffer[..read]).await.is_err() {
                            break;
                        }
                        counter.fetch_add(read as u64, Ordering::SeqCst);
                    }
                    upstream.abort();
                });
            }
        });
        Self { address, received, task }
    }

    fn received(&self) -> u64 {
        self.received.load(Ordering::SeqCst)
    }
}

impl Drop for CountingRelay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A page that speaks Engine.IO v4 and Socket.IO v5 by hand over the browser's own WebSocket:
/// it connects to `/live` with `token`, joins `tournament_id`, answers pings, and keeps in
/// `window.live` the extensions agreed, the join's ack and each state with its message's size.
fn socket_page(address: &str, token: &str, tournament_id: &str) -> String {
    let url = format!("ws://{address}/socket.io/?EIO=4&transport=websocket");
    let config = json!({"url": url, "token": token, "tournamentId": tournament_id});
    let script = r#"
const live = { extensions: null, ack: null, states: [], other: [], closed: null };
window.live = live;
const ws = new WebSocket(config.url);
ws.onopen = () => { live.extensions = ws.extensions; };
ws.onmessage = ({ data }) => {
  const bytes = new TextEncoder().encode(data).length;
  if (data === "2") {
    ws.send("3");
  } else if (data.startsWith("0{")) {
    ws.send("40/live," + JSON.stringify({ token: config.token }));
  } else if (data.startsWith("40/live,")) {
    ws.send("42/live,1" + JSON.stringify(["join", { tournamentId: config.tournamentId }]));
  } else if (data.startsWith("43/live,1[")) {
    live.ack = JSON.parse(data.slice("43/live,1".length))[0];
  } else if (data.startsWith("42/live,[")) {
    const [name, payload] = JSON.parse(data.slice("42/live,".length));
    if (name === "state") live.states.push({ bytes, state: payload });
    else live.other.push(data);
  } else {
    live.other.push(data);
  }
};
ws.onclose = ({ code }) => { live.closed = code; };
"#;
    format!(
        "<!doctype html><meta charset=\"utf-8\"><title>live</title><script>const config = {config};{script}</script>"
    )
}

/// Serves one page at every path of a port of its own, so that the test page comes from
/// `http://127.0.0.1` as an app's page would come from its site (opened from a `data:` URL,
/// the page's socket to this machine failed at once with 1006 in Debian's Chromium).
struct PageServer {
    origin: String,
    task: JoinHandle<()>,
}

impl PageServer {
    async fn serving(html: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port for the page");
        let origin = format!("http://{}", listener.local_addr().expect("the page's address"));
        let answer = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{html}",
            html.len()
        );
        let task = tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let answer = answer.clone();
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buffer = [0; 1024];
                    while !head.windows(4).any(|end| end == b"\r\n\r\n") {
                        match stream.read(&mut buffer).await {
                            Ok(0) | Err(_) => return,
                            Ok(read) => head.extend_from_slice(&buffer[..read]),
                        }
                    }
                    let _ = stream.write_all(answer.as_bytes()).await;
                    let _ = stream.shutdown().await;
                });
            }
        });
        Self { origin, task }
    }
}

impl Drop for PageServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A LiveState without its `serverTime`, which an HTTP answer stamps at its own sending.
fn timeless(state: &Value) -> Value {
    let mut state = state.clone();
    if let Some(fields) = state.as_object_mut() {
        fields.remove("serverTime");
    }
    state
}

/// Waits up to 15 s for `expression` on `page` to be neither null nor false; its value.
async fn until(page: &chromiumoxide::Page, expression: &str, what: &str) -> Value {
    let since = Instant::now();
    loop {
        let value = eval(page, expression).await;
        if !value.is_null() && value != Value::Bool(false) {
            return value;
        }
        let live = eval(page, "JSON.stringify(window.live)").await;
        assert!(since.elapsed() < PATIENCE, "{what} within 15 s; the page holds {live}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chromiums_own_websocket_agrees_deflate_without_context_takeover_and_reads_the_states() {
    let Some(browser) = chromium().await else { return };
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let day = ready(&app, "+79993120001", 312, PLAYERS).await;
    let started = day.start(&app).await;
    let relay = CountingRelay::to(&app.base).await;

    let html = socket_page(&relay.address, &day.players[0].access_token, &day.id.to_string());
    let server = PageServer::serving(html).await;
    let page = browser.browser.new_page(server.origin.as_str()).await.expect("the test page opens");
    let ack = until(&page, "window.live && window.live.ack", "the join's ack").await;
    let extensions = eval(&page, "window.live.extensions").await;
    assert_eq!(extensions, AGREED, "Chromium agreed the extension as the server answered it");
    assert_eq!(ack["ok"], true, "{ack}");
    assert_eq!(timeless(&ack["state"]), timeless(&started), "the ack's state, parsed, is the running state");

    let before = relay.received();
    let paused = staff(&app, &day.club, &day.path("pause"), json!({})).await.assert_ok().clone();
    let heard = until(
        &page,
        &format!("window.live.states.find(({{ state }}) => state.version === {})", version(&paused)),
        "the paused state",
    )
    .await;
    let wire = relay.received() - before;
    assert_eq!(timeless(&heard["state"]), timeless(&paused), "the state arrived whole, as the press answered it");
    let bytes = heard["bytes"].as_u64().expect("the message's size");
    eprintln!("Chromium: a state message of {bytes} bytes in {wire} bytes on the wire");
    assert!(bytes >= LARGE, "the state is well over 1 KiB: {bytes}");
    assert!(wire < bytes / 2, "the state came deflated: {wire} bytes on the wire for a message of {bytes}");
    let other = eval(&page, "window.live.other").await;
    assert_eq!(other, json!([]), "nothing else came: {other}");
    assert_eq!(eval(&page, "window.live.closed").await, Value::Null, "the socket stays open");
}
