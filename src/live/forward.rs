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

use std::time::Duration;

use axum::http::{HeaderMap, HeaderName};
use floor_actors::error::{LiveError, LiveResult, Refusal};
use floor_actors::live::{Command, Elimination, LiveState, Outcome};
use floor_actors::rules::balance::BalanceHint;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use tracing::Instrument as _;
use uuid::Uuid;

/// The header that carries the nodes' key.
pub const NODE_KEY: HeaderName = HeaderName::from_static("x-floor-node-key");
/// The path of the internal call, under the owner's `NODE_URL`.
pub const INTERNAL_PATH: &str = "/internal/live/{id}";
/// The longest a call waits to connect: an owner that does not accept is taken for gone.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// The longest a call waits for its answer (a command waits 30 s at most for its actor).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(35);

/// What one node hands the owner of a tournament.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Handed {
    /// A live command of member `by` of the club.
    Command { command: Command, by: Uuid },
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
                Self::Done { state: Box::new((*outcome.state).clone()), elimination, balance }
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
            Self::Done { state, elimination, balance } => Ok(Done::Command(Outcome {
                state: Arc::new(*state),
                elimination: elimination.map(|elimination| (elimination, balance)),
            })),
            Self::Announced => Ok(Done::Announced),
            Self::Refused { refusal, message } => Err(LiveError::Refused { refusal, message }),
            Self::Invalid { field, problem } => Err(LiveError::Invalid { field, problem }),
            Self::Elsewhere { owner } => Err(LiveError::Elsewhere { owner }),
            Self::Failed { message } => Err(LiveError::Internal(anyhow::anyhow!(message))),
        }
    }
}

/// How a call to the owner went.
pub enum Sent {
    Answered(Answered),
    /// The owner was not reached: nothing was done there.
    NotDelivered,
    /// The owner was reached and did not answer: the work may have been done.
    Lost(String),
}

/// The key every node presents to the others: a digest of the shared `JWT_SECRET`, so the
/// secret itself never travels.
pub fn node_key(jwt_secret: &str) -> String {
    let digest = Sha256::new().chain_update(b"floor-node-key\0").chain_update(jwt_secret.as_bytes()).finalize();
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Whether `presented` is the nodes' key, compared as digests so the time taken says nothing
/// about how much of it matched.
pub fn is_node_key(presented: &str, key: &str) -> bool {
    Sha256::digest(presented.as_bytes()) == Sha256::digest(key.as_bytes())
}

/// This node's side of the calls.
pub struct Forwarder {
    client: reqwest::Client,
    key: String,
}

impl Forwarder {
    pub fn new(key: String) -> anyhow::Result<Self> {
        // No kept-alive connections: a command handed over on a connection kept from an earlier
        // one, to an owner killed since, fails after it was written, which cannot be told from
        // an owner that died while running it (an error to the client); on a fresh connection
        // a dead owner refuses the connect, and the command waits for the next owner. A press
        // is worth a connect on the nodes' network.
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(ANSWER_TIMEOUT)
            .pool_max_idle_per_host(0)
            .build()?;
        Ok(Self { client, key })
    }

    /// Hands `work` on tournament `tournament_id` to the node at `owner`, in a span of its
    /// own whose context the call carries: the owner's spans join the caller's trace.
    pub async fn send(&self, owner: &str, tournament_id: Uuid, work: &Handed) -> Sent {
        let span = tracing::info_span!("live.forward", otel.kind = "client", %tournament_id, owner);
        self.call(owner, tournament_id, work).instrument(span).await
    }

    async fn call(&self, owner: &str, tournament_id: Uuid, work: &Handed) -> Sent {
        let url = format!("{owner}{}", INTERNAL_PATH.replace("{id}", &tournament_id.to_string()));
        let mut headers = HeaderMap::new();
        crate::trace_context::hand_on(&mut headers);
        let sent = self.client.post(url).headers(headers).header(NODE_KEY, &self.key).json(work).send().await;
        let response = match sent {
            Ok(response) => response,
            Err(err) if err.is_connect() => return Sent::NotDelivered,
            Err(err) => return Sent::Lost(format!("the owner of the tournament did not answer: {err}")),
        };
        let status = response.status();
        if !status.is_success() {
            return Sent::Lost(format!(
                "the owner of the tournament refused the call ({status}); do all nodes share JWT_SECRET?"
            ));
        }
        match response.json::<Answered>().await {
            Ok(answered) => Sent::Answered(answered),
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
            Handed::Command { command: Command::Level(Direction::Next), by },
            Handed::Command { command: Command::Reorder(vec![Uuid::nil(), by]), by },
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

    #[test]
    fn the_key_is_a_digest_that_only_the_same_secret_matches() {
        let key = node_key("a-secret");
        assert_eq!(key.len(), 64);
        assert!(!key.contains("a-secret"));
        assert!(is_node_key(&key, &node_key("a-secret")));
        assert!(!is_node_key(&node_key("another"), &key));
        assert!(!is_node_key("", &key));
    }
}
