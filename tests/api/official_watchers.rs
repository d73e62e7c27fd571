//! Watchers on the official socket.io-client 4.x, as the apps connect:
//! `tests/contract/drain-watchers.mjs`, many in one Node process, asked for a report a line at
//! a time. For the tests that take nodes away under phones (`drain`, `rolling`): a client of
//! our own would only say what we think socket.io-client does.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::live::Ready;

const CONTRACT_TOOLS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/contract");

/// `tests/contract/drain-watchers.mjs`, once `node` runs and socket.io-client is installed;
/// outside CI a machine without them skips (in CI it fails).
pub(crate) fn watchers_script() -> Option<PathBuf> {
    let tools = Path::new(CONTRACT_TOOLS);
    let node = std::process::Command::new("node").arg("--version").output().is_ok_and(|out| out.status.success());
    let installed = tools.join("node_modules/socket.io-client").is_dir();
    if node && installed {
        return Some(tools.join("drain-watchers.mjs"));
    }
    assert!(std::env::var_os("CI").is_none(), "node and tests/contract/node_modules must be installed in CI");
    eprintln!("skipping: node or tests/contract/node_modules (npm ci --prefix tests/contract) is missing");
    None
}

/// How the watchers connect.
pub(crate) struct Crowd {
    pub watchers: usize,
    /// The first reconnection's delay in ms (socket.io-client's default 1000), randomized by
    /// half either way, doubling up to five times it.
    pub first_reconnect_ms: u64,
    /// The WebSockets offer permessage-deflate, as socket.io-client does by default; without
    /// it the one Node process spares inflating every state for every watcher.
    pub deflate: bool,
}

/// The Node process of the watchers, asked for a report a line at a time; killed when dropped.
pub(crate) struct Watchers {
    _child: Child,
    input: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Watchers {
    /// Starts `crowd` watching `game` through `origin`, as the club's owner.
    pub fn spawn(script: &Path, origin: &str, game: &Ready, crowd: &Crowd) -> Self {
        let mut child = Command::new("node")
            .arg(script)
            .args([
                origin,
                &game.club.owner.access_token,
                &game.id.to_string(),
                &crowd.watchers.to_string(),
                &crowd.first_reconnect_ms.to_string(),
                if crowd.deflate { "yes" } else { "no" },
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs the watchers");
        let lines = BufReader::new(child.stdout.take().expect("piped")).lines();
        let input = child.stdin.take().expect("piped");
        Self { _child: child, input, lines }
    }

    /// What the watchers have now.
    pub async fn report(&mut self) -> Report {
        self.input.write_all(b"report\n").await.expect("the watchers read their input");
        let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
            .await
            .expect("the watchers report within 10 s")
            .expect("their output reads")
            .expect("the watchers are still running");
        let value: Value = serde_json::from_str(&line).expect("a JSON report");
        Report { value }
    }

    /// Reports every 100 ms until `done` holds of one, or `patience` runs out: the last report.
    pub async fn until(&mut self, patience: Duration, done: impl Fn(&Report) -> bool) -> Report {
        let since = Instant::now();
        loop {
            let report = self.report().await;
            if done(&report) || since.elapsed() > patience {
                return report;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// One report of the watchers.
pub(crate) struct Report {
    value: Value,
}

impl Report {
    pub fn joined(&self) -> u64 {
        self.value["joined"].as_u64().unwrap_or_default()
    }

    /// The watchers socket.io-client gave up on: refused by the namespace, or disconnected
    /// from it by the server, neither of which it retries.
    pub fn stranded(&self) -> u64 {
        self.value["stranded"].as_u64().unwrap_or_default()
    }

    /// The watchers whose last version is below `version`.
    pub fn behind(&self, version: i64) -> usize {
        let versions = self.value["versions"].as_array().map(Vec::as_slice).unwrap_or_default();
        versions.iter().filter(|seen| seen.as_i64().is_none_or(|seen| seen < version)).count()
    }

    /// The watchers refused with "Invalid namespace", each time.
    pub fn invalid_namespace(&self) -> u64 {
        self.value["errors"]["Invalid namespace"].as_u64().unwrap_or_default()
    }

    /// What the watchers heard: the versions they hold, lowest and highest, and the rest.
    pub fn summary(&self) -> Value {
        let versions = self.value["versions"].as_array().map(Vec::as_slice).unwrap_or_default();
        let held = versions.iter().map(|seen| seen.as_i64().unwrap_or(i64::MIN));
        json!({
            "versions": [held.clone().min(), held.max()],
            "joined": self.value["joined"],
            "stranded": self.value["stranded"],
            "errors": self.value["errors"],
            "disconnects": self.value["disconnects"],
            "failedJoins": self.value["failedJoins"],
        })
    }
}
