//! Handing a tournament's work to the node that runs it: an internal HTTP call,
//! `POST /internal/live/{tournamentId}` on the owner's `NODE_URL`, with the command and who
//! sent it (the node that took the request has checked the caller's rights). The owner runs it
//! through its actor and answers what the actor answered, so the first node answers its
//! client as if the actor were local. The call carries a key made from `JWT_SECRET`, which
//! every node shares; the load balancer does not route `/internal`.
//!
//! A call that never reached the owner (refused connection: the owner died) is safe to make
//! again once another node runs the tournament; one that reached it and got no answer may
//! have been applied, so it is reported, not repeated (the client's `Idempotency-Key` makes
//! its own retry safe).
//!
//! An owner that takes a call and does not answer it in time (frozen: a stalled host, a
//! paused VM) is marked as not answering: this node delivers it nothing more until its lease
//! has had time to run out, so a press it would apply on waking is never handed to it, and the
//! commands meanwhile wait for the next owner (or are refused `503`, applied nowhere). Nor is
//! a press handed to an owner that has left another press unanswered for [`OVERDUE`]: the
//! presses of a freeze's first seconds are not all handed to it to end unknown.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use axum::http::HeaderMap;
use chrono::{DateTime, Utc};
use floor_actors::error::{LiveError, LiveResult, Refusal};
use floor_actors::live::{Answer, Command, Elimination, LiveState, Order, Outcome, Timed};
use floor_actors::rules::balance::BalanceHint;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use tracing::Instrument as _;
use uuid::Uuid;

use crate::live::node_key::NODE_KEY;

/// The path of the internal call, under the owner's `NODE_URL`.
pub const INTERNAL_PATH: &str = "/internal/live/{id}";
/// The longest a call waits to connect: an owner that does not accept is taken for gone.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// The longest a press waits for the owner's answer (a clock press or an elimination takes
/// milliseconds): past it the owner is taken for frozen.
const ANSWER_WITHIN: Duration = Duration::from_secs(2);
/// The longest the work that may rightly take long waits (starting or confirming a field of
/// thousands, reseating a broken table, reading the tournament again): the actor's own limit.
const LONG_WORK_ANSWER_WITHIN: Duration = Duration::from_secs(35);
/// How long an owner that left a call unanswered gets nothing more from this node: its lease
/// has run out by then unless it renews it, which only a node that answers again does.
const NOT_ANSWERING_FOR: Duration = super::leases::LEASE_FOR;
/// How long a press handed to an owner may go unanswered before this node hands that owner no
/// other press: an owner answers one in milliseconds.
const OVERDUE: Duration = Duration::from_millis(500);

/// What one node hands the owner of a tournament.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Handed {
    /// A live command of member `by` of the club, when it happened if made offline, and the
    /// idempotency key it was sent with.
    Command {
        command: Command,
        by: Uuid,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        occurred_at: Option<DateTime<Utc>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<String>,
    },
    /// A queue of live commands made offline by member `by`, applied in one turn.
    Replay { commands: Vec<Timed>, by: Uuid },
    /// The tournament changed beside its actor (a cancel, an edit): the owner reads it again
    /// and tells the watchers.
    Announce,
}

/// What the owner answers.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Answered {
    /// The command's outcome.
    Done {
        state: Box<LiveState>,
        elimination: Option<Elimination>,
        balance: Option<BalanceHint<Uuid>>,
        /// What each command came to, in order.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        answers: Vec<Answer>,
    },
    /// The change was announced.
    Announced,
    Refused {
        refusal: Refusal,
        message: String,
    },
    Invalid {
        field: String,
        problem: String,
    },
    /// The called node does not run the tournament (any more): ask again who does.
    Elsewhere {
        owner: Option<String>,
    },
    /// It failed there; the cause is in that node's log.
    Failed {
        message: String,
    },
}

/// What the owner's actor did with the work.
#[derive(Debug)]
pub enum Done {
    Command(Outcome),
    Announced,
}

impl Answered {
    pub fn of(result: LiveResult<Done>) -> Self {
        match result {
            Ok(Done::Command(outcome)) => {
                let (elimination, balance) = match outcome.elimination {
                    Some((elimination, balance)) => (Some(elimination), balance),
                    None => (None, None),
                };
                Self::Done { state: Box::new((*outcome.state).clone()), elimination, balance, answers: outcome.answers }
            }
            Ok(Done::Announced) => Self::Announced,
            Err(LiveError::Refused { refusal, message }) => Self::Refused { refusal, message },
            Err(LiveError::Invalid { field, problem }) => Self::Invalid { field, problem },
            Err(LiveError::Elsewhere { owner }) => Self::Elsewhere { owner },
            Err(LiveError::Internal(cause)) => {
                tracing::error!(error = ?cause, "work handed over by another node failed");
                Self::Failed { message: "the owner of the tournament failed; see its log".to_owned() }
            }
        }
    }

    pub fn into_result(self) -> LiveResult<Done> {
        match self {
            Self::Done { state, elimination, balance, answers } => Ok(Done::Command(Outcome {
                state: Arc::new(*state),
                elimination: elimination.map(|elimination| (elimination, balance)),
                answers,
            })),
            Self::Announced => Ok(Done::Announced),
            Self::Refused { refusal, message } => Err(LiveError::Refused { refusal, message }),
            Self::Invalid { field, problem } => Err(LiveError::Invalid { field, problem }),
            Self::Elsewhere { owner } => Err(LiveError::Elsewhere { owner }),
            Self::Failed { message } => Err(LiveError::Internal(anyhow::anyhow!(message))),
        }
    }
}

impl Handed {
    /// `order` of member `by`, as it travels to the owner.
    pub fn order(order: Order, by: Uuid) -> Self {
        match order {
            Order::One(Timed { command, occurred_at, key }) => Self::Command { command, by, occurred_at, key },
            Order::Queue(commands) => Self::Replay { commands, by },
        }
    }

    /// How long the owner may take to answer this work.
    fn answer_within(&self) -> Duration {
        match self {
            Self::Command { command: Command::Start | Command::ConfirmResults | Command::ReseatBatch(_), .. }
            | Self::Replay { .. }
            | Self::Announce => LONG_WORK_ANSWER_WITHIN,
            Self::Command { .. } => ANSWER_WITHIN,
        }
    }
}

/// How a call to the owner went.
pub enum Sent {
    Answered(Answered),
    /// The owner was not reached: nothing was done there.
    NotDelivered,
    /// The owner did not answer this node's last call in time: it is sent nothing, and nothing
    /// was done there.
    NotAnswering,
    /// The owner was reached and did not answer: the work may have been done.
    Lost(String),
}

/// How a call that reached the owner and timed out is told.
const NO_ANSWER: &str = "the node running the tournament took the command and did not answer";

/// This node's side of the calls.
pub struct Forwarder {
    client: reqwest::Client,
    key: String,
    /// The owners that left a call of this node unanswered, and when.
    not_answering: Mutex<HashMap<String, Instant>>,
    /// The presses handed to each owner and not answered yet: when each was handed.
    pending: Arc<Mutex<PendingPresses>>,
    next_call: AtomicU64,
}

/// For each owner, the presses handed to it and not answered yet, by call: when each was handed.
type PendingPresses = HashMap<String, HashMap<u64, Instant>>;

/// A press handed to an owner, until it is answered (or its wait ends).
struct Pending {
    presses: Arc<Mutex<PendingPresses>>,
    owner: String,
    call: u64,
}

impl Drop for Pending {
    fn drop(&mut self) {
        let mut presses = self.presses.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(handed) = presses.get_mut(&self.owner) {
            handed.remove(&self.call);
            if handed.is_empty() {
                presses.remove(&self.owner);
            }
        }
    }
}

impl Forwarder {
    pub fn new(key: String) -> anyhow::Result<Self> {
        // No kept-alive connections: a command handed over on a connection kept from an earlier
        // one, to an owner killed since, fails after it was written, which cannot be told from
        // an owner that died while running it (an error to the client); on a fresh connection
        // a dead owner refuses the connect, and the command waits for the next owner. A press
        // is worth a connect on the nodes' network.
        let client = reqwest::Client::builder().connect_timeout(CONNECT_TIMEOUT).pool_max_idle_per_host(0).build()?;
        Ok(Self { client, key, not_answering: Mutex::default(), pending: Arc::default(), next_call: AtomicU64::new(0) })
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, PendingPresses> {
        self.pending.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether a press handed to `owner` has gone unanswered for [`OVERDUE`].
    fn has_overdue_press(&self, owner: &str) -> bool {
        self.pending().get(owner).is_some_and(|handed| handed.values().any(|since| since.elapsed() >= OVERDUE))
    }

    /// Counts a press as handed to `owner` until the returned guard goes.
    fn hand(&self, owner: &str) -> Pending {
        let call = self.next_call.fetch_add(1, Ordering::Relaxed);
        self.pending().entry(owner.to_owned()).or_default().insert(call, Instant::now());
        Pending { presses: self.pending.clone(), owner: owner.to_owned(), call }
    }

    fn not_answering(&self) -> std::sync::MutexGuard<'_, HashMap<String, Instant>> {
        self.not_answering.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether `owner` left a call of this node unanswered lately.
    fn is_not_answering(&self, owner: &str) -> bool {
        let mut marks = self.not_answering();
        marks.retain(|_, since| since.elapsed() < NOT_ANSWERING_FOR);
        marks.contains_key(owner)
    }

    /// Hands `work` on tournament `tournament_id` to the node at `owner`, in a span of its
    /// own whose context the call carries: the owner's spans join the caller's trace.
    pub async fn send(&self, owner: &str, tournament_id: Uuid, work: &Handed) -> Sent {
        if self.is_not_answering(owner) || self.has_overdue_press(owner) {
            return Sent::NotAnswering;
        }
        // Only a press counts: the long work may rightly keep an owner busy for seconds.
        let _pending = (work.answer_within() == ANSWER_WITHIN).then(|| self.hand(owner));
        let span = tracing::info_span!("live.forward", otel.kind = "client", %tournament_id, owner);
        let sent = self.call(owner, tournament_id, work).instrument(span).await;
        if let Sent::Lost(why) = &sent
            && why.starts_with(NO_ANSWER)
        {
            tracing::warn!(%tournament_id, owner, "the node running the tournament did not answer in time; it is sent nothing more until its lease runs out");
            self.not_answering().insert(owner.to_owned(), Instant::now());
        }
        sent
    }

    async fn call(&self, owner: &str, tournament_id: Uuid, work: &Handed) -> Sent {
        let url = format!("{owner}{}", INTERNAL_PATH.replace("{id}", &tournament_id.to_string()));
        let mut headers = HeaderMap::new();
        crate::trace_context::hand_on(&mut headers);
        let request = self.client.post(url).headers(headers).header(NODE_KEY, &self.key).json(work);
        let sent = request.timeout(work.answer_within()).send().await;
        let response = match sent {
            Ok(response) => response,
            Err(err) if err.is_connect() => return Sent::NotDelivered,
            Err(err) if err.is_timeout() => {
                return Sent::Lost(format!("{NO_ANSWER} within {:?}", work.answer_within()));
            }
            Err(err) => return Sent::Lost(format!("the owner of the tournament did not answer: {err}")),
        };
        let status = response.status();
        if !status.is_success() {
            let hint = if status == reqwest::StatusCode::FORBIDDEN { "; do all nodes share JWT_SECRET?" } else { "" };
            return Sent::Lost(format!("the owner of the tournament refused the call ({status}){hint}"));
        }
        match response.json::<Answered>().await {
            Ok(answered) => Sent::Answered(answered),
            Err(err) if err.is_timeout() => Sent::Lost(format!("{NO_ANSWER} within {:?}", work.answer_within())),
            Err(err) => Sent::Lost(format!("the owner's answer was unreadable: {err}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use floor_actors::rules::clock::Direction;

    #[test]
    fn work_reads_back_as_written() {
        let by = Uuid::new_v4();
        for work in [
            Handed::Command { command: Command::Level(Direction::Next), by, occurred_at: None, key: None },
            Handed::Command {
                command: Command::Reorder(vec![Uuid::nil(), by]),
                by,
                occurred_at: Some(Utc::now()),
                key: Some("k".to_owned()),
            },
            Handed::Replay {
                commands: vec![Command::Pause.into(), Timed::from(Command::Undo).keyed(Some("u".to_owned()))],
                by,
            },
            Handed::Announce,
        ] {
            let text = serde_json::to_string(&work).expect("json");
            assert_eq!(serde_json::from_str::<Handed>(&text).expect("work"), work);
        }
    }

    #[test]
    fn a_refusal_crosses_with_its_refusal_and_message() {
        let answered = Answered::of(Err(LiveError::refused(Refusal::SeatTaken, "taken")));
        let text = serde_json::to_string(&answered).expect("json");
        match serde_json::from_str::<Answered>(&text).expect("an answer").into_result() {
            Err(LiveError::Refused { refusal, message }) => {
                assert_eq!((refusal, message.as_str()), (Refusal::SeatTaken, "taken"));
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}
