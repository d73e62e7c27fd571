//! The watchers of the rolling run: connected through HAProxy, each reconnecting and joining
//! again as the apps do.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::bail;
use tokio::sync::Semaphore;
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};
use tokio::task::JoinSet;

use super::tally::{Tally, drain};
use super::{Settings, counted};
use crate::watcher::{self, Report as Heard, Target};

/// How long the watchers have to join at first.
const JOINS_WITHIN: Duration = Duration::from_secs(120);

/// The watchers, every one joined.
pub(super) struct Watchers {
    /// Their tasks, aborted at the end of the run.
    pub(super) tasks: JoinSet<()>,
    /// Where they report.
    pub(super) reports: UnboundedReceiver<Heard>,
    /// From the first connection attempt until every one had joined.
    pub(super) connect_wall: Duration,
}

/// Starts `count` watchers, spread over `targets` (one per balancer), `settings.ramp`
/// handshakes at a time, and takes in their reports until every one has joined; an error if
/// some did not within 2 minutes.
pub(super) async fn connect(
    settings: &Settings,
    count: usize,
    targets: Vec<Arc<Target>>,
    tally: &mut Tally,
) -> anyhow::Result<Watchers> {
    let (reports_tx, mut reports) = mpsc::unbounded_channel();
    let ramp = Arc::new(Semaphore::new(settings.ramp));
    let mut tasks = JoinSet::new();
    let started = Instant::now();
    for idx in 0..count {
        let permit = ramp.clone().acquire_owned().await?;
        let target = targets[idx % targets.len()].clone();
        tasks.spawn(keep_watching(idx, target, permit, reports_tx.clone()));
    }
    drop(reports_tx);
    let joined_by = Instant::now() + JOINS_WITHIN;
    while tally.joined() < count && Instant::now() < joined_by {
        drain(&mut reports, tally, Duration::from_millis(100)).await;
    }
    let connect_wall = started.elapsed();
    eprintln!("rolling: {} watchers joined in {:.1} s", tally.joined(), connect_wall.as_secs_f64());
    if tally.joined() < count {
        let reasons: BTreeMap<&str, usize> = counted(tally.failed.iter().map(|(_, reason)| reason.as_str()));
        bail!("only {} of {} watchers joined within 2 minutes; failed tries: {reasons:?}", tally.joined(), count);
    }
    Ok(Watchers { tasks, reports, connect_wall })
}

/// One watcher as an app runs it with socket.io-client 4.x: connects and joins (from the second
/// time on saying the version it holds), follows, and when the connection ends, the transport
/// or its handshake fails (an HTTP error included) or a join fails, tries again after
/// socket.io-client's delay (1 s doubling, ± 50 %, at most 5 s). A refusal by the namespace
/// (`connect_error`), or the server's disconnect from it (`io server disconnect`),
/// socket.io-client does not retry: the watcher is stranded and stops.
async fn keep_watching(
    idx: usize,
    target: Arc<Target>,
    permit: tokio::sync::OwnedSemaphorePermit,
    reports: UnboundedSender<Heard>,
) {
    let mut permit = Some(permit);
    let mut attempt: u32 = 0;
    // The version of the LiveState held, said when joining again as the apps do.
    let mut held = None;
    loop {
        match watcher::join(&target, held).await {
            Ok((link, acked)) => {
                permit.take();
                attempt = 0;
                let version = acked.version;
                let (at, deflate) = (Instant::now(), link.deflate());
                let joined = Heard::Joined { idx, version, at, deflate, ack: acked.took, ack_bytes: acked.bytes };
                if reports.send(joined).is_err() {
                    return;
                }
                let (reason, highest) = watcher::follow(idx, link, &reports).await;
                held = highest.max(Some(version));
                if watcher::is_given_up(&reason) {
                    let _ = reports.send(Heard::Stranded { idx, reason });
                    return;
                }
                if reports.send(Heard::Closed { idx, reason }).is_err() {
                    return;
                }
            }
            Err(reason) if watcher::is_given_up(&reason) => {
                permit.take();
                let _ = reports.send(Heard::Stranded { idx, reason });
                return;
            }
            Err(reason) => {
                permit.take();
                if reports.send(Heard::Failed { reason }).is_err() {
                    return;
                }
            }
        }
        tokio::time::sleep(reconnection_delay(attempt, rand::random::<f64>())).await;
        attempt += 1;
    }
}

/// socket.io-client's delay before reconnection attempt `attempt` (from 0): 1 s doubling each
/// attempt, moved by up to half of it either way (`random` in 0..1), then capped at 5 s.
fn reconnection_delay(attempt: u32, random: f64) -> Duration {
    let delay = 1000.0 * 2f64.powi(i32::try_from(attempt.min(16)).unwrap_or(16));
    let jittered = delay + (random * 2.0 - 1.0) * 0.5 * delay;
    Duration::from_millis(jittered.min(5000.0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reconnection_delay_is_socket_io_client_s() {
        assert_eq!(reconnection_delay(0, 0.5), Duration::from_secs(1));
        assert_eq!(reconnection_delay(0, 0.0), Duration::from_millis(500));
        assert_eq!(reconnection_delay(0, 1.0), Duration::from_millis(1500));
        assert_eq!(reconnection_delay(1, 0.5), Duration::from_secs(2));
        assert_eq!(reconnection_delay(2, 0.0), Duration::from_secs(2));
        assert_eq!(reconnection_delay(2, 1.0), Duration::from_secs(5), "capped after the jitter");
        assert_eq!(reconnection_delay(40, 0.5), Duration::from_secs(5));
    }
}
