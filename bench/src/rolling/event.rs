//! One event of the rolling run (a node restarted, Redis killed), run while the reports keep
//! coming, and its figures: how soon every watcher was current after it, the reconnect burst,
//! the presses answered meanwhile, the ERROR lines.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::cluster::Cluster;
use super::official::Official;
use super::tally::{Inbox, Tally};
use super::{counted, restarted};
use crate::report::{ms, percentile};

/// How long Redis stays dead.
const REDIS_OUTAGE: Duration = Duration::from_secs(5);
/// How long after an event's end the watchers have to be current before the run says who
/// was not.
const CURRENT_WITHIN: Duration = Duration::from_secs(30);
/// The joins counted as the event's reconnect burst: from its start to this long after its end.
const BURST_AFTER: Duration = Duration::from_secs(5);

/// One event's figures.
#[derive(Serialize)]
pub struct Event {
    pub name: &'static str,
    /// From its start (the SIGTERM, the kill) to its end (the node ready again, Redis
    /// listening again).
    pub length_s: f64,
    /// From its end until every watcher held the latest version acknowledged by then; `None`:
    /// not within 30 s.
    pub every_watcher_current_after_s: Option<f64>,
    /// Watchers without that version 30 s after the end (0 when all were current).
    pub behind: usize,
    /// Watchers refused by the namespace (`connect_error`) from the event's start to the
    /// burst's end: socket.io-client does not retry that, so they stay dark for the run.
    pub stranded: usize,
    pub reconnects: usize,
    pub joins_in_burst: usize,
    pub join_ack_p50_ms: Option<f64>,
    pub join_ack_p99_ms: Option<f64>,
    pub join_ack_max_ms: Option<f64>,
    /// The acks of those joins together, in bytes.
    pub join_ack_bytes: usize,
    /// The changes' events (`state`, `clock`, `patch`) the watchers read from the event's
    /// start to the burst's end, in bytes on the wire: a state sent whole to every watcher
    /// shows here as 650 MB at 10,000 watchers.
    pub delivered_bytes: usize,
    /// Failed connects or joins (a retry follows each).
    pub failed_joins: BTreeMap<String, usize>,
    /// The presses answered during the event and its settling, by status (`0`: no answer),
    /// and the slowest answer.
    pub presses: BTreeMap<u16, usize>,
    pub press_max_ms: Option<f64>,
    pub error_lines: Vec<String>,
    /// Deliveries of a version the watcher had already.
    pub heard_again: usize,
    /// The official socket.io-client watchers' figures, when the run has some.
    pub official: Option<OfficialFigures>,
}

/// What the official socket.io-client watchers went through in one event.
#[derive(Serialize)]
pub struct OfficialFigures {
    /// From the event's end until every one held the latest version acknowledged by then;
    /// `None`: not within 30 s.
    pub every_watcher_current_after_s: Option<f64>,
    pub behind: usize,
    /// Given up by socket.io-client during the event (a namespace's refusal or disconnect).
    pub stranded: usize,
    /// `connect_error` "Invalid namespace", each time.
    pub invalid_namespace: usize,
    /// Every `connect_error` message (the handshakes it retries among them), each time.
    pub connect_errors: BTreeMap<String, usize>,
    /// The longest from a watcher's disconnect to its next join's ack, in ms.
    pub rejoin_max_ms: Option<f64>,
    /// The longest a Node process running them held its event loop, in ms: a delay the rig
    /// added to every watcher in it, which phones each on their own processor do not have.
    pub client_lag_max_ms: f64,
}

impl OfficialFigures {
    fn passed(&self) -> bool {
        self.behind == 0
            && self.stranded == 0
            && self.invalid_namespace == 0
            && self.every_watcher_current_after_s.is_some_and(|s| s <= 3.0)
    }
}

impl Event {
    /// Whether the run may call this event a success.
    pub fn passed(&self) -> bool {
        // Losing Redis is an error to tell; a node's orderly restart is not. A watcher may hear
        // the version its join's ack carried once more (a change between joining the room and
        // reading the state); after Redis is back, nobody hears a state again.
        let orderly = restarted(self.name).is_none() || self.error_lines.is_empty();
        let fresh = restarted(self.name).is_some() || self.heard_again == 0;
        self.behind == 0
            && self.stranded == 0
            && self.every_watcher_current_after_s.is_some_and(|s| s <= 3.0)
            && orderly
            && fresh
            && self.official.as_ref().is_none_or(OfficialFigures::passed)
    }
}

/// Where the tally and the nodes' logs stood when an event started: its figures are what came
/// after.
struct Marks {
    log_from: Vec<usize>,
    reconnects: usize,
    joins: usize,
    delivered_bytes: usize,
    failed: usize,
    stranded: usize,
    heard_again: usize,
    presses: usize,
}

impl Marks {
    fn take(cluster: &Cluster<'_>, tally: &Tally) -> Self {
        Self {
            log_from: cluster.log_lens(),
            reconnects: tally.reconnects,
            joins: tally.joins.len(),
            delivered_bytes: tally.delivered_bytes,
            failed: tally.failed.len(),
            stranded: tally.stranded(),
            heard_again: tally.heard_again.len(),
            presses: tally.presses.len(),
        }
    }
}

/// Runs the event `name` while the reports keep coming in, then takes them in until every
/// watcher is current (or [`CURRENT_WITHIN`] has passed), the official ones too, and the
/// reconnect burst is over: the event's figures. `first_version`: the state's version before
/// any press.
pub(super) async fn measure(
    name: &'static str,
    cluster: &mut Cluster<'_>,
    inbox: &mut Inbox,
    mut official: Option<&mut Official>,
    first_version: i64,
) -> anyhow::Result<Event> {
    let marks = Marks::take(cluster, &inbox.tally);
    let official_before = match official.as_deref_mut() {
        Some(official) => Some(official.report().await?),
        None => None,
    };
    let start = Instant::now();
    let mut error_lines = while_listening(inbox, run(name, cluster, &marks.log_from)).await?;
    let ended = Instant::now();
    let latest = inbox.tally.latest_acknowledged().unwrap_or(first_version);
    // Both kinds of watchers are watched at once, so neither's figure waits on the other's.
    let official_current = async {
        match official {
            Some(official) => Some(official.until_current(ended, latest, CURRENT_WITHIN).await),
            None => None,
        }
    };
    let (current_after, official_current) =
        tokio::join!(inbox.until_current(ended, latest, CURRENT_WITHIN), official_current);
    let behind = inbox.tally.behind(latest);
    let official = match (official_current.transpose()?, official_before) {
        (Some((after, heard)), Some(before)) => {
            let mut connect_errors = heard.errors.clone();
            for (message, count) in &before.errors {
                connect_errors.entry(message.clone()).and_modify(|now| *now -= count);
            }
            connect_errors.retain(|_, count| *count > 0);
            Some(OfficialFigures {
                every_watcher_current_after_s: after.map(|after| after.as_secs_f64()),
                behind: heard.behind(latest),
                stranded: heard.stranded - before.stranded,
                invalid_namespace: heard.invalid_namespace() - before.invalid_namespace(),
                connect_errors,
                rejoin_max_ms: heard.rejoin_max_ms,
                client_lag_max_ms: heard.lag_max_ms,
            })
        }
        _ => None,
    };
    inbox.listen_until(ended + BURST_AFTER).await;
    error_lines.extend(cluster.errors_since(&marks.log_from, restarted(name)));
    let tally = &inbox.tally;
    let joins = &tally.joins[marks.joins..];
    let mut acks: Vec<f64> = joins.iter().map(|(_, ack, _)| ms(*ack)).collect();
    acks.sort_by(f64::total_cmp);
    let ack_bytes = joins.iter().map(|(_, _, bytes)| *bytes).sum();
    let pressed = &tally.presses[marks.presses..];
    Ok(Event {
        name,
        length_s: (ended - start).as_secs_f64(),
        every_watcher_current_after_s: current_after.map(|after| after.as_secs_f64()),
        behind,
        stranded: tally.stranded() - marks.stranded,
        reconnects: tally.reconnects - marks.reconnects,
        joins_in_burst: acks.len(),
        join_ack_p50_ms: percentile(&acks, 50.0),
        join_ack_p99_ms: percentile(&acks, 99.0),
        join_ack_max_ms: acks.last().copied(),
        join_ack_bytes: ack_bytes,
        delivered_bytes: tally.delivered_bytes - marks.delivered_bytes,
        failed_joins: counted(tally.failed[marks.failed..].iter().map(|(_, reason)| reason.clone())),
        presses: counted(pressed.iter().map(|press| press.status)),
        press_max_ms: pressed.iter().map(|press| ms(press.took)).max_by(f64::total_cmp),
        error_lines,
        heard_again: tally.heard_again.len() - marks.heard_again,
        official,
    })
}

/// The event itself: the ERROR lines and an unsuccessful exit of a node it stopped.
async fn run(name: &str, cluster: &mut Cluster<'_>, log_from: &[usize]) -> anyhow::Result<Vec<String>> {
    match restarted(name) {
        Some(node) => cluster.restart_node(node, log_from[node]).await,
        None => {
            cluster.kill_redis_for(REDIS_OUTAGE).await?;
            Ok(Vec::new())
        }
    }
}

/// Awaits `work` while taking in the watchers' and presses' reports: they keep coming while
/// the event runs.
async fn while_listening<T>(inbox: &mut Inbox, work: impl Future<Output = anyhow::Result<T>>) -> anyhow::Result<T> {
    let mut work = std::pin::pin!(work);
    loop {
        tokio::select! {
            done = &mut work => return done,
            () = inbox.drain_both(Duration::from_millis(50)) => {}
        }
    }
}
