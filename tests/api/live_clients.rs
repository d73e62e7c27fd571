//! Real clients on `/live` against the running server, and what each agrees on the WebSocket
//! (issue 30): the official socket.io-client on Node (`ws` offers permessage-deflate). It joins
//! a running tournament whose LiveState is several KiB and hears two presses; the bytes on the
//! wire are measured against the message's. Outside CI a machine without Node's packages skips;
//! in CI that is a failure.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::helpers::{Backend, TestApp, on_both_databases, spawn_app, spawn_app_with};
use crate::live::{Ready, ready, staff, version};

on_both_databases!(
    socket_io_client_on_node_gets_large_states_deflated_without_context_takeover,
    socket_io_client_on_node_gets_plain_frames_when_live_deflate_is_off,
);

/// How long a test waits for something a client or the server should do.
const PATIENCE: Duration = Duration::from_secs(15);

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

    for state in pause_and_resume(&app, &day, &mut client).await {
        let (decoded, wire) = sizes(&state);
        eprintln!("socket.io-client, LIVE_DEFLATE=false: a state of {decoded} bytes in {wire} bytes on the wire");
        assert!(decoded >= LARGE, "the state is well over 1 KiB: {state}");
        assert!(wire >= decoded, "the state came plain: {state}");
    }
    client.finish().await;
}
