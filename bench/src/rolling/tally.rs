//! What the watchers and the presses have told during the rolling run, and the waits that take
//! their reports in.

use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedReceiver;

use super::presses::Press;
use crate::watcher::Report as Heard;

/// What the watchers and the presses have told so far.
pub(super) struct Tally {
    /// Per watcher: the highest version it holds, and whether it is connected and joined.
    holds: Vec<i64>,
    connected: Vec<bool>,
    pub(super) reconnects: usize,
    /// `(joined at, ack latency, ack bytes)` of every join.
    pub(super) joins: Vec<(Instant, Duration, usize)>,
    /// The changes' events read so far, in bytes on the wire.
    pub(super) delivered_bytes: usize,
    pub(super) failed: Vec<(Instant, String)>,
    /// Per watcher: refused by the namespace, which socket.io-client never retries (it stopped).
    stranded: Vec<bool>,
    pub(super) heard_again: Vec<Instant>,
    pub(super) presses: Vec<Press>,
}

impl Tally {
    /// Nothing told yet by `watchers` watchers, none of them joined.
    pub(super) fn new(watchers: usize) -> Self {
        Self {
            holds: vec![i64::MIN; watchers],
            connected: vec![false; watchers],
            reconnects: 0,
            joins: Vec::new(),
            delivered_bytes: 0,
            failed: Vec::new(),
            stranded: vec![false; watchers],
            heard_again: Vec::new(),
            presses: Vec::new(),
        }
    }

    fn hear(&mut self, heard: Heard) {
        match heard {
            Heard::Joined { idx, version, at, ack, ack_bytes, .. } => {
                self.holds[idx] = self.holds[idx].max(version);
                self.connected[idx] = true;
                self.joins.push((at, ack, ack_bytes));
            }
            Heard::Failed { reason } => self.failed.push((Instant::now(), reason)),
            Heard::Stranded { idx, reason } => {
                self.connected[idx] = false;
                self.stranded[idx] = true;
                self.failed.push((Instant::now(), reason));
            }
            Heard::Closed { idx, .. } => {
                self.connected[idx] = false;
                self.reconnects += 1;
            }
            Heard::Delivered { idx, version, at, wire, .. } => {
                self.delivered_bytes += wire;
                if version <= self.holds[idx] {
                    self.heard_again.push(at);
                }
                self.holds[idx] = self.holds[idx].max(version);
            }
        }
    }

    pub(super) fn latest_acknowledged(&self) -> Option<i64> {
        self.presses.iter().filter_map(|press| press.version).max()
    }

    pub(super) fn joined(&self) -> usize {
        self.connected.iter().filter(|connected| **connected).count()
    }

    /// Watchers stranded so far: refused by the namespace, they never come back.
    pub(super) fn stranded(&self) -> usize {
        self.stranded.iter().filter(|stranded| **stranded).count()
    }

    /// Watchers that do not hold `version` yet.
    pub(super) fn behind(&self, version: i64) -> usize {
        self.holds.iter().filter(|holds| **holds < version).count()
    }
}

/// Takes in reports for `wait`.
pub(super) async fn drain(reports: &mut UnboundedReceiver<Heard>, tally: &mut Tally, wait: Duration) {
    let until = tokio::time::Instant::now() + wait;
    while let Ok(Some(heard)) = tokio::time::timeout_at(until, reports.recv()).await {
        tally.hear(heard);
    }
}

/// Where the watchers' and the presses' reports come in once the club presses, and the tally
/// of them.
pub(super) struct Inbox {
    reports: UnboundedReceiver<Heard>,
    presses: UnboundedReceiver<Press>,
    pub(super) tally: Tally,
}

impl Inbox {
    pub(super) fn new(reports: UnboundedReceiver<Heard>, presses: UnboundedReceiver<Press>, tally: Tally) -> Self {
        Self { reports, presses, tally }
    }

    /// Takes in the presses answered so far.
    pub(super) fn take_presses(&mut self) {
        while let Ok(press) = self.presses.try_recv() {
            self.tally.presses.push(press);
        }
    }

    /// Takes in the watchers' and the presses' reports for `wait`.
    pub(super) async fn drain_both(&mut self, wait: Duration) {
        self.take_presses();
        drain(&mut self.reports, &mut self.tally, wait).await;
    }

    /// Takes in reports for `length`.
    pub(super) async fn settle(&mut self, length: Duration) {
        self.listen_until(Instant::now() + length).await;
    }

    /// Takes in reports until `until`.
    pub(super) async fn listen_until(&mut self, until: Instant) {
        while Instant::now() < until {
            self.drain_both(Duration::from_millis(50)).await;
        }
    }

    /// Takes in reports until every watcher holds `latest`, or `within` after `ended`: how long
    /// after `ended` they all did, if they did.
    pub(super) async fn until_current(&mut self, ended: Instant, latest: i64, within: Duration) -> Option<Duration> {
        while ended.elapsed() < within {
            if self.tally.holds.iter().all(|holds| *holds >= latest) {
                return Some(ended.elapsed());
            }
            self.drain_both(Duration::from_millis(10)).await;
        }
        None
    }
}
