//! The club of the rolling run: pressing pause or resume through HAProxy while the events
//! run, and, at the end, whether every acknowledged press is in the final state once.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};
use tokio::task::JoinHandle;

/// How often the club presses.
const PRESS_EVERY: Duration = Duration::from_millis(500);

/// One press as the club saw it: the status (`0`: no answer), the version of a `200`, and how
/// long it took, tries again included.
pub(super) struct Press {
    pub(super) status: u16,
    pub(super) version: Option<i64>,
    pub(super) took: Duration,
}

/// The club pressing in the background.
pub(super) struct Pressing {
    task: JoinHandle<()>,
    stop: Arc<AtomicBool>,
}

impl Pressing {
    /// Starts pressing on `tournament` through `balancer`: the presses, as they are answered.
    pub(super) fn start(balancer: String, token: String, tournament: String) -> (Self, UnboundedReceiver<Press>) {
        let (presses_tx, presses) = mpsc::unbounded_channel();
        let stop = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn(press_loop(balancer, token, tournament, presses_tx, stop.clone()));
        (Self { task, stop }, presses)
    }

    /// Stops pressing once the press in flight is answered.
    pub(super) async fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        self.task.await.ok();
    }
}

/// Presses pause or resume (whichever the last answer calls for) every [`PRESS_EVERY`], one
/// in flight at a time, each with its own `Idempotency-Key`, tried again with it on a refused
/// connection as a client does.
async fn press_loop(
    balancer: String,
    token: String,
    tournament: String,
    presses: UnboundedSender<Press>,
    stop: Arc<AtomicBool>,
) {
    let http = match reqwest::Client::builder().timeout(Duration::from_secs(30)).build() {
        Ok(http) => http,
        Err(_) => return,
    };
    let mut paused = false;
    let mut tick = tokio::time::interval(PRESS_EVERY);
    while !stop.load(Ordering::SeqCst) {
        tick.tick().await;
        let trigger = if paused { "resume" } else { "pause" };
        let url = format!("{balancer}/api/v1/tournaments/{tournament}/{trigger}");
        let key = uuid::Uuid::new_v4().to_string();
        let sent = Instant::now();
        let mut answer = (0, None);
        for _ in 0..5 {
            let answered = http.post(&url).bearer_auth(&token).header("idempotency-key", &key).send().await;
            match answered {
                Ok(response) => {
                    let status = response.status().as_u16();
                    let body: Value = response.json().await.unwrap_or(Value::Null);
                    let version = body["version"].as_i64().filter(|_| status == 200);
                    if status == 200 {
                        paused = body["clock"]["pausedAt"].is_string();
                    } else if status == 409 {
                        // Another state than thought (a press of unknown outcome): the other.
                        paused = !paused;
                    }
                    answer = (status, version);
                    break;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
        if presses.send(Press { status: answer.0, version: answer.1, took: sent.elapsed() }).is_err() {
            return;
        }
    }
}

/// What the presses did to the state.
pub(super) struct Applied {
    /// Presses answered `200` with a version.
    pub(super) acknowledged: usize,
    /// Versions the final state moved past the first.
    pub(super) applied: i64,
    /// Every acknowledged press is in the final state once.
    pub(super) none_lost: bool,
}

impl Applied {
    /// Judges `presses` against the state's version before the first (`first`) and after the
    /// last (`live`): a press of unknown outcome (a `500`, no answer) may or may not be in it.
    pub(super) fn judge(presses: &[Press], first: i64, live: i64) -> anyhow::Result<Self> {
        let mut acknowledged: Vec<i64> = presses.iter().filter_map(|press| press.version).collect();
        acknowledged.sort_unstable();
        let distinct = {
            let mut distinct = acknowledged.clone();
            distinct.dedup();
            distinct.len()
        };
        let unknown = presses.iter().filter(|press| press.status == 500 || press.status == 0).count();
        let applied = live - first;
        let kept = i64::try_from(acknowledged.len())?;
        let none_lost = distinct == acknowledged.len()
            && acknowledged.last().is_none_or(|last| *last <= live)
            && (kept..=kept + i64::try_from(unknown)?).contains(&applied);
        Ok(Self { acknowledged: acknowledged.len(), applied, none_lost })
    }
}
