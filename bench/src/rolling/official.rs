//! The official socket.io-client 4.x watchers of the rolling run, beside the benchmark's own:
//! `tests/contract/drain-watchers.mjs` in one Node process, half of them starting on
//! long-polling, each with socket.io-client's own reconnection. The benchmark's watchers
//! emulate how socket.io-client meets each refusal; these are the client itself, so the run
//! says what a phone does, not what we think it does.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde::Deserialize;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// socket.io-client's default first reconnection delay, as the apps keep it.
const FIRST_RECONNECT_MS: &str = "1000";

/// Where the official watchers connect, and how many.
pub(super) struct Crowd<'a> {
    pub(super) script: &'a Path,
    pub(super) origin: &'a str,
    pub(super) token: &'a str,
    pub(super) tournament_id: &'a str,
    pub(super) watchers: usize,
    pub(super) compact: bool,
}

/// The Node process of the official watchers, asked for a report a line at a time; killed
/// when dropped.
pub(super) struct Official {
    _child: Child,
    input: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

/// One report of the official watchers (see the script's head).
#[derive(Deserialize)]
pub(super) struct Heard {
    pub(super) joined: usize,
    pub(super) stranded: usize,
    versions: Vec<Option<i64>>,
    /// `connect_error` messages, each time.
    pub(super) errors: BTreeMap<String, usize>,
}

impl Heard {
    /// The watchers refused "Invalid namespace", each time.
    pub(super) fn invalid_namespace(&self) -> usize {
        self.errors.get("Invalid namespace").copied().unwrap_or_default()
    }

    /// The watchers whose last version is below `version`.
    pub(super) fn behind(&self, version: i64) -> usize {
        self.versions.iter().filter(|seen| seen.is_none_or(|seen| seen < version)).count()
    }
}

impl Official {
    /// Starts the watchers of `crowd` (WebSockets without permessage-deflate, as the
    /// benchmark's own), and waits until every one has joined, `within` at most.
    pub(super) async fn start(crowd: &Crowd<'_>, within: Duration) -> anyhow::Result<Self> {
        let mut child = Command::new("node")
            .arg(crowd.script)
            .args([crowd.origin, crowd.token, crowd.tournament_id, &crowd.watchers.to_string(), FIRST_RECONNECT_MS])
            .args(["no", if crowd.compact { "compact" } else { "full" }])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .context("starting node (the official watchers need node and `npm ci --prefix tests/contract`)")?;
        let lines = BufReader::new(child.stdout.take().context("node's output")?).lines();
        let input = child.stdin.take().context("node's input")?;
        let mut official = Self { _child: child, input, lines };
        let since = Instant::now();
        loop {
            let heard = official.report().await?;
            if heard.joined == crowd.watchers {
                return Ok(official);
            }
            if since.elapsed() > within {
                bail!(
                    "{} of {} official watchers joined within {within:?}: {:?}",
                    heard.joined,
                    crowd.watchers,
                    heard.errors
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// What the watchers have now.
    pub(super) async fn report(&mut self) -> anyhow::Result<Heard> {
        self.input.write_all(b"report\n").await.context("the official watchers read their input")?;
        let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
            .await
            .context("the official watchers report within 10 s")??
            .context("the official watchers stopped")?;
        serde_json::from_str(&line).context("the official watchers' report")
    }

    /// Reports until every watcher holds `latest`, or `within` after `ended`: how long after
    /// `ended` they all did (if they did), and the last report.
    pub(super) async fn until_current(
        &mut self,
        ended: Instant,
        latest: i64,
        within: Duration,
    ) -> anyhow::Result<(Option<Duration>, Heard)> {
        loop {
            let heard = self.report().await?;
            if heard.behind(latest) == 0 {
                return Ok((Some(ended.elapsed()), heard));
            }
            if ended.elapsed() > within {
                return Ok((None, heard));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
