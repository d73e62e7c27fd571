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
//! The owner bounds its own answer: work it has not finished within
//! [`Handed::owner_answers_within`] is answered, by the owner, as of unknown outcome (a press:
//! 8 s with the default `DATABASE_DEADLINE` of 3 s, room for one statement that waits out the
//! deadline on a lock, then the look at a commit that went unanswered, under the tournament's
//! row lock, and the rest of the turn). The calling node waits [`TRANSIT`] longer than that,
//! so what the client hears is what the owner answered: a press that a healthy owner may still
//! commit is never called lost here. Both bounds come from `DATABASE_DEADLINE`, which the
//! nodes share.
//!
//! A slow answer is not a frozen owner. While a call goes unanswered past [`OVERDUE`], this node
//! looks at the owner's liveness ([`super::probe`]) every [`FOUND_FOR`]: an owner that answers
//! it is busy, and the call waits on, the presses after it handed over as usual. One that answers
//! nothing (frozen: a stalled host, a paused VM) is marked as not answering: the call is reported
//! lost at once (it may have been applied there), and this node delivers that owner nothing
//! more until its lease has had time to run out, so a press it would apply on waking is never
//! handed to it, and the commands meanwhile wait for the next owner (or are refused `503`,
//! applied nowhere). Nor is a press handed to an owner that has left another press unanswered
//! for [`OVERDUE`] until a look finds it answering: the presses of a freeze's first second are
//! not all handed to it to end unknown.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use axum::http::HeaderMap;
use chrono::{DateTime, Utc};
use floor_actors::error::{LiveError, LiveResult, Refusal};
use floor_actors::live::registry::COMMAND_TIMEOUT;
use floor_actors::live::{Answer, Command, Elimination, LiveState, Order, Outcome, Timed};
use floor_actors::rules::balance::BalanceHint;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use tracing::Instrument as _;
use uuid::Uuid;

use super::probe::{FOUND_FOR, Liveness, Probes};
use crate::infra::db::ANSWER_MARGIN;
use crate::infra::node_key::NODE_KEY;

/// The path of the internal call, under the owner's `NODE_URL`.
pub const INTERNAL_PATH: &str = "/internal/live/{id}";
/// The longest a call waits to connect: an owner that does not accept is taken for gone.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// Room for the statements of a press's turn besides the one that may wait out the deadline
/// and the look at an unanswered commit; for the long work, for the check of the caller's
/// rights before the actor's own limit.
const REST_OF_TURN: Duration = Duration::from_secs(1);
/// How much longer than the owner's own bound the calling node waits for its answer: the
/// answer's way back.
const TRANSIT: Duration = Duration::from_secs(1);
/// How long an owner found frozen gets nothing more from this node: its lease has run out by
/// then unless it renews it, which only a node that answers again does.
const NOT_ANSWERING_FOR: Duration = super::leases::LEASE_FOR;
/// How long a call may go unanswered before this node looks whether the owner answers at all
/// (and hands that owner no other press until it does): a press takes milliseconds.
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

    /// What the owner answers for work it has not finished within `within`: its outcome is
    /// unknown (the actor may still be at it), as a failure, which every node reads.
    pub fn unfinished(within: Duration) -> Self {
        Self::Failed {
            message: format!(
                "the owner of the tournament did not finish the work within {within:?}, so its outcome is unknown; read the live state"
            ),
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

    /// Whether sending this again, after a sending whose outcome is unknown, can do nothing
    /// twice: a command with its idempotency key, a queue whose every command has one (the
    /// owner answers a key it applied with its first outcome), or a reading of the tournament.
    pub fn resends_safely(&self) -> bool {
        match self {
            Self::Command { key, .. } => key.is_some(),
            Self::Replay { commands, .. } => commands.iter().all(|timed| timed.key.is_some()),
            Self::Announce => true,
        }
    }

    /// Whether this is a press, which takes milliseconds, rather than work that may rightly
    /// keep the owner for seconds (starting or confirming a field of thousands, reseating a
    /// broken table, a replayed queue, reading the tournament again).
    fn is_press(&self) -> bool {
        !matches!(
            self,
            Self::Command { command: Command::Start | Command::ConfirmResults | Command::ReseatBatch(_), .. }
                | Self::Replay { .. }
                | Self::Announce
        )
    }

    /// The longest the owner takes over this work, on a database whose statements have
    /// `deadline` (`DATABASE_DEADLINE`), before it answers by itself that the work's outcome is
    /// unknown. A press: one statement that waits the deadline out (a lock held that long, or
    /// a server that froze, given up [`ANSWER_MARGIN`] later), the look at a commit that went
    /// unanswered (under the row lock: as long again at most), and the rest of the turn. The
    /// long work: the actor's own limit, and the check of the caller's rights before it.
    pub fn owner_answers_within(&self, deadline: Duration) -> Duration {
        let work =
            if self.is_press() { deadline.saturating_add(ANSWER_MARGIN).saturating_mul(2) } else { COMMAND_TIMEOUT };
        work.saturating_add(REST_OF_TURN)
    }

    /// The longest the calling node waits for the owner's answer: longer than the owner's own
    /// bound, so the owner's answer is always the one heard.
    fn caller_waits(&self, deadline: Duration) -> Duration {
        self.owner_answers_within(deadline).saturating_add(TRANSIT)
    }
}

/// How a call to the owner went.
pub enum Sent {
    Answered(Answered),
    /// The owner was not reached: nothing was done there.
    NotDelivered,
    /// The owner was found frozen lately: it is sent nothing, and nothing was done there.
    NotAnswering,
    /// The owner turned the call away before running it (a refusal of the call itself: its
    /// key, its route, its body): nothing was done there, and sending again will not help.
    Refused(String),
    /// The owner was reached and did not answer: the work may have been done.
    Lost(String),
}

/// How a call that reached the owner and got no answer is told.
const NO_ANSWER: &str = "the node running the tournament took the command and did not answer";

/// This node's side of the calls.
pub struct Forwarder {
    client: reqwest::Client,
    key: String,
    /// `DATABASE_DEADLINE`, which the owners' bounds come from.
    deadline: Duration,
    /// Looks at whether an owner slow to answer answers at all.
    probes: Probes,
    /// The owners found frozen, and when.
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
    /// The calls of a node whose statements end by `deadline` (`DATABASE_DEADLINE`), keyed
    /// with `key`.
    pub fn new(key: String, deadline: Duration) -> anyhow::Result<Self> {
        // No kept-alive connections: a command handed over on a connection kept from an earlier
        // one, to an owner killed since, fails after it was written, which cannot be told from
        // an owner that died while running it (an error to the client); on a fresh connection
        // a dead owner refuses the connect, and the command waits for the next owner. A press
        // is worth a connect on the nodes' network.
        let client = reqwest::Client::builder().connect_timeout(CONNECT_TIMEOUT).pool_max_idle_per_host(0).build()?;
        Ok(Self {
            probes: Probes::new(client.clone()),
            client,
            key,
            deadline,
            not_answering: Mutex::default(),
            pending: Arc::default(),
            next_call: AtomicU64::new(0),
        })
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

    /// Whether `owner` was found frozen lately.
    fn is_not_answering(&self, owner: &str) -> bool {
        let mut marks = self.not_answering();
        marks.retain(|_, since| since.elapsed() < NOT_ANSWERING_FOR);
        marks.contains_key(owner)
    }

    /// Whether `owner` answers nothing at all (frozen), looked at now or a moment ago; one that
    /// does is marked as not answering.
    async fn is_frozen(&self, owner: &str, tournament_id: Uuid) -> bool {
        if self.probes.liveness(owner).await != Liveness::Silent {
            return false;
        }
        let mut marks = self.not_answering();
        let marked = marks.get(owner).is_some_and(|since| since.elapsed() < NOT_ANSWERING_FOR);
        if !marked {
            tracing::warn!(%tournament_id, owner, "the node running the tournament answers nothing; it is sent nothing more until its lease runs out");
            marks.insert(owner.to_owned(), Instant::now());
        }
        true
    }

    /// Returns once `owner` is found frozen, looking from [`OVERDUE`] on (a call answered
    /// before that is never looked at); never while it answers.
    async fn until_frozen(&self, owner: &str, tournament_id: Uuid) {
        tokio::time::sleep(OVERDUE).await;
        while !self.is_frozen(owner, tournament_id).await {
            tokio::time::sleep(FOUND_FOR).await;
        }
    }

    /// Hands `work` on tournament `tournament_id` to the node at `owner`, in a span of its
    /// own whose context the call carries: the owner's spans join the caller's trace. The call
    /// waits for the owner's answer as long as the owner answers a look at its liveness, and
    /// ends, lost, when it is found frozen.
    pub async fn send(&self, owner: &str, tournament_id: Uuid, work: &Handed) -> Sent {
        if self.is_not_answering(owner) {
            return Sent::NotAnswering;
        }
        if self.has_overdue_press(owner) && self.is_frozen(owner, tournament_id).await {
            return Sent::NotAnswering;
        }
        // Only a press counts: the long work may rightly keep an owner busy for seconds.
        let _pending = work.is_press().then(|| self.hand(owner));
        let span = tracing::info_span!("live.forward", otel.kind = "client", %tournament_id, owner);
        tokio::select! {
            biased;
            sent = self.call(owner, tournament_id, work).instrument(span) => sent,
            () = self.until_frozen(owner, tournament_id) => {
                Sent::Lost(format!("{NO_ANSWER}, and answers nothing now (frozen?)"))
            }
        }
    }

    async fn call(&self, owner: &str, tournament_id: Uuid, work: &Handed) -> Sent {
        let url = format!("{owner}{}", INTERNAL_PATH.replace("{id}", &tournament_id.to_string()));
        let mut headers = HeaderMap::new();
        crate::infra::trace_context::hand_on(&mut headers);
        let request = self.client.post(url).headers(headers).header(NODE_KEY, &self.key).json(work);
        let within = work.caller_waits(self.deadline);
        let sent = request.timeout(within).send().await;
        let response = match sent {
            Ok(response) => response,
            Err(err) if err.is_connect() => return Sent::NotDelivered,
            Err(err) if err.is_timeout() => return Sent::Lost(format!("{NO_ANSWER} within {within:?}")),
            Err(err) => return Sent::Lost(format!("the owner of the tournament did not answer: {err}")),
        };
        let status = response.status();
        if !status.is_success() {
            return unanswered(status);
        }
        match response.json::<Answered>().await {
            Ok(answered) => Sent::Answered(answered),
            Err(err) if err.is_timeout() => Sent::Lost(format!("{NO_ANSWER} within {within:?}")),
            Err(err) => Sent::Lost(format!("the owner's answer was unreadable: {err}")),
        }
    }
}

/// What a call that reached the owner and came back with `status`, not its answer, tells. The
/// internal route answers every outcome of the work itself with `200`; anything else came
/// from before the work ran (the owner's connection limits, its check of the nodes' key, the
/// reading of the body), except a `500`, which a failure in the middle of it may give.
fn unanswered(status: reqwest::StatusCode) -> Sent {
    use reqwest::StatusCode;
    match status {
        // Busy, or leaving: as if not reached; another try, or another owner, may take it.
        StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE => Sent::NotDelivered,
        StatusCode::FORBIDDEN => Sent::Refused(format!(
            "the owner of the tournament refused this node ({status}); do all nodes share JWT_SECRET?"
        )),
        status if status.is_client_error() => Sent::Refused(format!(
            "the owner of the tournament refused the call ({status}); are the nodes of one version?"
        )),
        status => Sent::Lost(format!("the owner of the tournament failed the call ({status})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use floor_actors::rules::clock::Direction;

    #[test]
    fn only_a_failure_in_the_middle_of_the_work_leaves_it_unknown() {
        use reqwest::StatusCode;
        for status in [StatusCode::TOO_MANY_REQUESTS, StatusCode::SERVICE_UNAVAILABLE] {
            assert!(matches!(unanswered(status), Sent::NotDelivered), "{status}");
        }
        for status in
            [StatusCode::FORBIDDEN, StatusCode::NOT_FOUND, StatusCode::PAYLOAD_TOO_LARGE, StatusCode::BAD_REQUEST]
        {
            assert!(matches!(unanswered(status), Sent::Refused(_)), "{status}");
        }
        for status in [StatusCode::INTERNAL_SERVER_ERROR, StatusCode::BAD_GATEWAY] {
            assert!(matches!(unanswered(status), Sent::Lost(_)), "{status}");
        }
    }

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

    fn press() -> Handed {
        Handed::Command { command: Command::Level(Direction::Next), by: Uuid::nil(), occurred_at: None, key: None }
    }

    #[test]
    fn only_keyed_work_and_a_reading_are_sent_again_after_an_unknown_outcome() {
        let by = Uuid::nil();
        let key = Some("k".to_owned());
        let keyed = Handed::Command { command: Command::Pause, by, occurred_at: None, key: key.clone() };
        assert!(keyed.resends_safely());
        assert!(!press().resends_safely(), "a press without a key might run twice");
        let all_keyed = vec![Timed::from(Command::Pause).keyed(key.clone()), Timed::from(Command::Undo).keyed(key)];
        assert!(Handed::Replay { commands: all_keyed, by }.resends_safely());
        let one_unkeyed = vec![Timed::from(Command::Pause).keyed(Some("p".to_owned())), Command::Undo.into()];
        assert!(!Handed::Replay { commands: one_unkeyed, by }.resends_safely());
        assert!(Handed::Announce.resends_safely(), "reading the tournament again changes nothing");
    }

    #[test]
    fn the_caller_waits_past_the_owner_s_own_bound_which_outlasts_a_statement_and_the_settle() {
        let long = [
            Handed::Command { command: Command::Start, by: Uuid::nil(), occurred_at: None, key: None },
            Handed::Replay { commands: vec![Command::Pause.into()], by: Uuid::nil() },
            Handed::Announce,
        ];
        // Every deadline the configuration takes, 1 s to a minute.
        for deadline in (1..=60).map(Duration::from_secs) {
            let statement = deadline + ANSWER_MARGIN;
            let owner = press().owner_answers_within(deadline);
            assert!(owner > statement * 2, "{deadline:?}: a lock wait and the settle fit in {owner:?}");
            assert!(press().caller_waits(deadline) > owner, "{deadline:?}");
            for work in &long {
                assert!(work.owner_answers_within(deadline) > COMMAND_TIMEOUT, "{work:?}: the actor's own limit");
                assert!(work.caller_waits(deadline) > work.owner_answers_within(deadline), "{work:?}");
            }
        }
        // With the default deadline of 3 s: the owner answers within 8 s, the caller waits 9 s.
        let defaults = crate::infra::config::Config::from_lookup(|_| None).expect("the defaults read");
        let deadline = defaults.database_deadline;
        assert_eq!(press().owner_answers_within(deadline), Duration::from_secs(8));
        assert_eq!(press().caller_waits(deadline), Duration::from_secs(9));
    }

    #[test]
    fn only_the_quick_commands_are_presses() {
        assert!(press().is_press());
        let eliminate = Command::Eliminate(Uuid::nil());
        assert!(Handed::Command { command: eliminate, by: Uuid::nil(), occurred_at: None, key: None }.is_press());
        for command in [Command::Start, Command::ConfirmResults, Command::ReseatBatch(Vec::new())] {
            assert!(!Handed::Command { command, by: Uuid::nil(), occurred_at: None, key: None }.is_press());
        }
        assert!(!Handed::Replay { commands: Vec::new(), by: Uuid::nil() }.is_press());
        assert!(!Handed::Announce.is_press());
    }

    #[test]
    fn work_left_unfinished_crosses_as_of_unknown_outcome() {
        let answered = Answered::unfinished(Duration::from_secs(8));
        let text = serde_json::to_string(&answered).expect("json");
        assert!(text.contains(r#""kind":"failed""#), "a variant every node reads: {text}");
        match serde_json::from_str::<Answered>(&text).expect("an answer").into_result() {
            Err(LiveError::Internal(cause)) => assert!(cause.to_string().contains("outcome is unknown"), "{cause}"),
            other => panic!("unexpected {other:?}"),
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

    /// A LiveState with something in every list, as an owner answers it.
    fn sample_state() -> LiveState {
        serde_json::from_value(serde_json::json!({
            "tournamentId": "00000000-0000-0000-0000-000000005eed",
            "version": 12,
            "status": "running",
            "serverTime": "2026-11-29T12:00:00Z",
            "clock": {
                "currentLevelIdx": 1,
                "levelStartedAt": "2026-11-29T11:40:00Z",
                "pausedAt": null,
                "levels": [
                    {"kind": "level", "durationMin": 20, "smallBlind": 100, "bigBlind": 200, "ante": 25, "note": "colour up"},
                    {"kind": "break", "durationMin": 10}
                ]
            },
            "remaining": 2,
            "entrants": 3,
            "chipsInPlay": 30000,
            "avgStack": 15000,
            "tables": [{"tableNo": 1, "seats": [{"seatNo": 1, "registrationId": "00000000-0000-0000-0000-0000000000a1", "name": "Анна"}]}],
            "eliminations": [{"registrationId": "00000000-0000-0000-0000-0000000000a3", "name": "Борис", "place": 3, "eliminatedAt": "2026-11-29T11:55:00Z"}]
        }))
        .expect("a LiveState")
    }

    /// One of each kind of work handed to an owner (every command), as this release hands it.
    fn handed_samples() -> Vec<Handed> {
        use floor_actors::live::Seat;
        let (by, player) = (Uuid::from_u128(0xb1), Uuid::from_u128(0xa1));
        let at = "2026-11-29T11:58:00Z".parse().ok();
        let seat = Seat { table_no: 2, seat_no: 5 };
        let commands = [
            Command::Start,
            Command::Pause,
            Command::Resume,
            Command::Level(Direction::Next),
            Command::Level(Direction::Prev),
            Command::Eliminate(player),
            Command::Undo,
            Command::Reorder(vec![player, by]),
            Command::Reseat(player, seat),
            Command::ReseatBatch(vec![(player, seat)]),
            Command::ConfirmResults,
        ];
        // A command added to the game is added to the samples above.
        let named: std::collections::BTreeSet<&str> = commands.iter().map(Command::name).collect();
        assert_eq!(named.len(), 10, "a sample of every command");
        let mut samples: Vec<Handed> = commands
            .into_iter()
            .map(|command| Handed::Command { command, by, occurred_at: at, key: Some("k-1".to_owned()) })
            .collect();
        let queue = vec![Timed::at(Command::Pause, at).keyed(Some("q-1".to_owned())), Command::Resume.into()];
        samples.extend([Handed::Replay { commands: queue, by }, Handed::Announce]);
        samples
    }

    /// One of each kind of answer (every refusal), as this release answers.
    fn answered_samples() -> Vec<Answered> {
        use floor_actors::live::Recorded;
        use floor_actors::rules::balance::Move;
        use strum::IntoEnumIterator;
        let player = Uuid::from_u128(0xa1);
        let eliminated_at = "2026-11-29T11:55:00Z".parse().expect("a moment");
        let elimination = Elimination { registration_id: player, place: 3, eliminated_at };
        let moves = vec![Move { registration_id: player, from_table: 2, from_seat: 5, to_table: 1, to_seat: 3 }];
        let answers = vec![
            Answer {
                recorded: Recorded::Applied { version: Some(12), elimination: Some(elimination.clone()) },
                replayed: true,
            },
            Answer {
                recorded: Recorded::Refused {
                    refusal: Refusal::InvalidLevel,
                    message: "no level before the first".to_owned(),
                },
                replayed: false,
            },
            Answer {
                recorded: Recorded::Invalid { field: "seat".to_owned(), problem: "taken".to_owned() },
                replayed: false,
            },
        ];
        let mut samples = vec![
            Answered::Done {
                state: Box::new(sample_state()),
                elimination: Some(elimination),
                balance: Some(BalanceHint::Move { moves: moves.clone() }),
                answers,
            },
            Answered::Done {
                state: Box::new(sample_state()),
                elimination: None,
                balance: Some(BalanceHint::FinalTable { moves }),
                answers: Vec::new(),
            },
            Answered::Announced,
            Answered::Invalid { field: "seat".to_owned(), problem: "taken".to_owned() },
            Answered::Elsewhere { owner: Some("http://10.0.0.2:8080".to_owned()) },
            Answered::unfinished(Duration::from_secs(8)),
        ];
        samples.extend(Refusal::iter().map(|refusal| Answered::Refused { refusal, message: "refused".to_owned() }));
        samples
    }

    /// What crosses for each sample: the work, then the answers.
    fn forwarded_today() -> Vec<serde_json::Value> {
        let handed = handed_samples().into_iter().map(|work| serde_json::to_value(work).expect("json"));
        let answered = answered_samples().into_iter().map(|answer| serde_json::to_value(answer).expect("json"));
        handed.chain(answered).collect()
    }

    #[test]
    fn compat_every_kept_release_s_forwarded_work_and_answers_read_as_they_meant() {
        for (release, samples) in crate::infra::wire_compat::kept("forwarded.json") {
            for sample in samples {
                // Work and answers share the `kind` tag and none of its values.
                let again = match serde_json::from_value::<Handed>(sample.clone()) {
                    Ok(work) => serde_json::to_value(work),
                    Err(_) => match serde_json::from_value::<Answered>(sample.clone()) {
                        Ok(answer) => serde_json::to_value(answer),
                        Err(err) => panic!("{release}: {err}: {sample}"),
                    },
                }
                .expect("json");
                let lost = crate::infra::wire_compat::keeps_fields(&sample, &again, &release.to_string());
                assert_eq!(lost, Ok(()), "today reads all of {release}'s {sample}");
            }
        }
    }

    #[test]
    fn compat_the_release_before_reads_today_s_forwarded_work_and_answers() {
        let today = forwarded_today();
        crate::infra::wire_compat::the_release_before_reads("forwarded.json", &today, &[]);
        // A refusal is a value, not a kind: the release before must know each one answered.
        let Some((before, kept)) = crate::infra::wire_compat::before_this("forwarded.json") else { return };
        for refusal in today.iter().filter(|sample| sample["kind"] == "refused").map(|sample| &sample["refusal"]) {
            assert!(
                kept.iter().any(|old| old["kind"] == "refused" && old["refusal"] == *refusal),
                "floor {before} does not know the refusal {refusal}: an owner must not answer it while floor {before} may forward"
            );
        }
    }

    #[test]
    fn compat_this_release_keeps_what_it_forwards() {
        crate::infra::wire_compat::this_release_keeps("forwarded.json", &forwarded_today());
    }
}
