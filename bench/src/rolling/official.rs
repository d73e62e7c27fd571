//! The official socket.io-client 4.x watchers of the rolling run, beside the benchmark's own:
//! `tests/contract/drain-watchers.mjs`, a share of them in each of a few Node processes, half
//! starting on long-polling, each with socket.io-client's own reconnection. The benchmark's
//! watchers emulate how socket.io-client meets each refusal; these are the client itself, so
//! the run says what a phone does, not what we think it does.
//!
//! A phone runs one client on a processor of its own; one Node process runs a share of them on
//! one thread, and its reconnection burst (a thousand handshakes at once) held that thread for
//! seconds, which the run counted against the server. Each process reports how long its event
//! loop was held (`lagMaxMs`), so the figure shows how much of a delay was the rig's.

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
    /// Node processes the watchers are spread over.
    pub(super) processes: usize,
    pub(super) compact: bool,
}

/// The Node processes of the official watchers, asked for a report a line at a time; killed
/// when dropped.
pub(super) struct Official {
    processes: Vec<Process>,
}

/// One Node process running a share of the watchers.
struct Process {
    _child: Child,
    input: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

/// One report of the official watchers (see the script's head), of every process together.
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Heard {
    pub(super) joined: usize,
    pub(super) stranded: usize,
    versions: Vec<Option<i64>>,
    /// `connect_error` messages, each time.
    pub(super) errors: BTreeMap<String, usize>,
    /// The longest a process's event loop was held since the report before, in ms.
    pub(super) lag_max_ms: f64,
    /// The longest from a watcher's disconnect to its next join's ack since the report before,
    /// in ms.
    pub(super) rejoin_max_ms: Option<f64>,
}

impl Heard {
    /// Adds `other`'s watchers to these, and its longest waits.
    fn merge(&mut self, other: Heard) {
        self.joined += other.joined;
        self.stranded += other.stranded;
        self.keep_longest(&other);
        self.versions.extend(other.versions);
        for (message, count) in other.errors {
            *self.errors.entry(message).or_default() += count;
        }
    }

    /// Keeps the longer of each wait, these and `other`'s.
    fn keep_longest(&mut self, other: &Heard) {
        self.lag_max_ms = self.lag_max_ms.max(other.lag_max_ms);
        self.rejoin_max_ms = match (self.rejoin_max_ms, other.rejoin_max_ms) {
            (Some(these), Some(other)) => Some(these.max(other)),
            (these, other) => these.or(other),
        };
    }

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
        let processes = crowd.processes.clamp(1, crowd.watchers.max(1));
        let mut official = Self { processes: Vec::with_capacity(processes) };
        for n in 0..processes {
            // The first processes take one more each when the share does not divide.
            let share = crowd.watchers / processes + usize::from(n < crowd.watchers % processes);
            official.processes.push(Process::start(crowd, share)?);
        }
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

    /// What the watchers have now, every process asked at once.
    pub(super) async fn report(&mut self) -> anyhow::Result<Heard> {
        let reports = futures_util::future::try_join_all(self.processes.iter_mut().map(Process::report)).await?;
        let mut heard = Heard::default();
        for report in reports {
            heard.merge(report);
        }
        Ok(heard)
    }

    /// Reports until every watcher holds `latest`, or `within` after `ended`: how long after
    /// `ended` they all did (if they did), and the last report with the longest waits of all
    /// since the report before this call.
    pub(super) async fn until_current(
        &mut self,
        ended: Instant,
        latest: i64,
        within: Duration,
    ) -> anyhow::Result<(Option<Duration>, Heard)> {
        let mut longest = Heard::default();
        loop {
            let mut heard = self.report().await?;
            heard.keep_longest(&longest);
            if heard.behind(latest) == 0 {
                return Ok((Some(ended.elapsed()), heard));
            }
            if ended.elapsed() > within {
                return Ok((None, heard));
            }
            longest = heard;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Process {
    /// Starts `watchers` of `crowd` in a Node process of their own.
    fn start(crowd: &Crowd<'_>, watchers: usize) -> anyhow::Result<Self> {
        let mut child = Command::new("node")
            .arg(crowd.script)
            .args([crowd.origin, crowd.token, crowd.tournament_id, &watchers.to_string(), FIRST_RECONNECT_MS])
            .args(["no", if crowd.compact { "compact" } else { "full" }])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .context("starting node (the official watchers need node and `npm ci --prefix tests/contract`)")?;
        let lines = BufReader::new(child.stdout.take().context("node's output")?).lines();
        let input = child.stdin.take().context("node's input")?;
        Ok(Self { _child: child, input, lines })
    }

    async fn report(&mut self) -> anyhow::Result<Heard> {
        self.input.write_all(b"report\n").await.context("the official watchers read their input")?;
        let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
            .await
            .context("the official watchers report within 10 s")??
            .context("the official watchers stopped")?;
        serde_json::from_str(&line).context("the official watchers' report")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn heard(line: &str) -> Heard {
        serde_json::from_str(line).expect("a report as the script prints it")
    }

    #[test]
    fn the_processes_reports_add_up_and_keep_the_longest_waits() {
        let mut together = Heard::default();
        together.merge(heard(
            r#"{"watchers": 2, "joined": 2, "stranded": 0, "versions": [7, 6], "errors": {"xhr poll error": 1},
                "disconnects": {}, "failedJoins": {}, "lagMaxMs": 40.5, "rejoinMaxMs": null}"#,
        ));
        together.merge(heard(
            r#"{"watchers": 2, "joined": 1, "stranded": 1, "versions": [null, 7], "errors": {"xhr poll error": 2,
                "Invalid namespace": 1}, "disconnects": {}, "failedJoins": {}, "lagMaxMs": 12.0, "rejoinMaxMs": 1800.0}"#,
        ));
        assert_eq!((together.joined, together.stranded), (3, 1));
        assert_eq!(together.behind(7), 2, "the watcher at 6 and the one that heard nothing");
        assert_eq!(together.errors.get("xhr poll error"), Some(&3));
        assert_eq!(together.invalid_namespace(), 1);
        assert_eq!((together.lag_max_ms, together.rejoin_max_ms), (40.5, Some(1800.0)));
    }

    #[test]
    fn a_wait_kept_from_an_earlier_report_is_not_lost_to_a_later_one() {
        let mut later = heard(
            r#"{"joined": 1, "stranded": 0, "versions": [1], "errors": {}, "lagMaxMs": 3.0, "rejoinMaxMs": null}"#,
        );
        let earlier = heard(
            r#"{"joined": 1, "stranded": 0, "versions": [1], "errors": {}, "lagMaxMs": 900.0, "rejoinMaxMs": 2500.0}"#,
        );
        later.keep_longest(&earlier);
        assert_eq!((later.lag_max_ms, later.rejoin_max_ms), (900.0, Some(2500.0)));
    }
}
