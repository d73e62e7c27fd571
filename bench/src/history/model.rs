//! A history: every operation the workload's clients made, with its outcome as the client saw
//! it, and what the database holds after the run. Plain data, so the checker is a pure function
//! of it and its unit tests write histories by hand.

use std::collections::HashMap;

use uuid::Uuid;

/// The nemesis name of the sendings that resolve an unknown outcome once the cluster healed.
pub const AFTER_THE_RUN: &str = "after the run";

/// What a request came to, as its client saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// `2xx`: applied (or, replayed, applied before).
    Ok,
    /// `4xx` (or `503`): nothing applied; the error's code.
    Refused(String),
    /// A cut, a timeout, a `500` "outcome unknown": nobody knows yet; why.
    Unknown(String),
}

impl Outcome {
    /// `ok`, `refused` or `unknown`, for the counts.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Refused(_) => "refused",
            Self::Unknown(_) => "unknown",
        }
    }
}

/// What an operation did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// A live command (`pause`, `resume`, `level`, `eliminate`), sent live or in a queue of
    /// `POST …/replay`. `stamp` is its `occurredAt` in milliseconds, unique across the run: the
    /// audit record of its effect carries it, so the database tells how often it was applied.
    /// `key`: its idempotency key, when it was sent with one.
    Live {
        tournament: Uuid,
        command: String,
        stamp: i64,
        key: Option<String>,
        queued: bool,
    },
    /// A player registering (`register`) or cancelling (`cancel`).
    Register {
        tournament: Uuid,
        user: Uuid,
    },
    Cancel {
        tournament: Uuid,
        user: Uuid,
    },
    /// `GET …/live` on a node; `seen`: the version its `If-None-Match` tag named, if it sent
    /// one (the newest the client had been answered).
    Read {
        tournament: Uuid,
        seen: Option<i64>,
    },
    /// A Socket.IO `join` of `/live` on a node, its ack read; `seen`: the `version` it said it
    /// holds, if it said.
    Join {
        tournament: Uuid,
        seen: Option<i64>,
    },
}

impl Op {
    /// The tournament whose LiveState the operation answers with.
    pub fn tournament(&self) -> Option<Uuid> {
        match self {
            Self::Live { tournament, .. } | Self::Read { tournament, .. } | Self::Join { tournament, .. } => {
                Some(*tournament)
            }
            Self::Register { .. } | Self::Cancel { .. } => None,
        }
    }

    /// The operation's kind, for the counts.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Live { key: Some(_), queued: true, .. } => "queued",
            Self::Live { key: Some(_), .. } => "live with key",
            Self::Live { .. } => "live without key",
            Self::Register { .. } => "register",
            Self::Cancel { .. } => "cancel",
            Self::Read { seen: Some(_), .. } => "read",
            Self::Read { seen: None, .. } => "read, nothing seen said",
            Self::Join { seen: Some(_), .. } => "join",
            Self::Join { seen: None, .. } => "join, nothing seen said",
        }
    }
}

/// A registration's answer: the row it names, its status and the waitlist place it told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Told {
    pub registration: Uuid,
    pub status: String,
    pub position: Option<i64>,
}

/// One operation, from its invocation to its completion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The client that made it; a client's operations are sequential.
    pub client: usize,
    pub op: Op,
    /// Milliseconds since the run began.
    pub invoked_ms: u64,
    pub completed_ms: u64,
    /// The outcome the client finally knows: for a command with a key, after resending it
    /// (during the run, and once more after it) until the answer was not unknown.
    pub outcome: Outcome,
    /// The first attempt's outcome, when it differed (a cut resolved by resending).
    pub first: Option<Outcome>,
    /// The LiveState version the answer carried.
    pub version: Option<i64>,
    /// A registration's answer.
    pub told: Option<Told>,
    /// The nemesis at work when the operation was invoked (`none` when healthy).
    pub nemesis: String,
    /// Every request the operation was sent in, in order (a queued command's: its queue's),
    /// those after the run included.
    pub sendings: Vec<Sending>,
}

/// One request of an operation: to which node, when, under which nemesis, and what it told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sending {
    /// The node's index (0 or 1).
    pub node: usize,
    /// Milliseconds since the run began.
    pub invoked_ms: u64,
    pub completed_ms: u64,
    /// The nemesis at work when it was sent (`none` when healthy; `after the run` for the
    /// sendings that resolve an unknown outcome on the healed cluster).
    pub nemesis: String,
    pub outcome: Outcome,
}

/// A registration row after the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub id: Uuid,
    pub tournament: Uuid,
    pub user: Uuid,
    /// `registered`, `waitlist`, `checked_in`, `no_show` or `cancelled`.
    pub status: String,
    /// The queue's order: `created_at`, then `id`, as the server orders its waitlist.
    pub created_at: chrono::DateTime<chrono::Utc>,
}

impl Row {
    /// Whether the row holds a place (a seat or the waitlist).
    pub fn live(&self) -> bool {
        matches!(self.status.as_str(), "registered" | "waitlist" | "checked_in")
    }

    /// Whether the row holds a seat.
    pub fn seated(&self) -> bool {
        matches!(self.status.as_str(), "registered" | "checked_in")
    }
}

/// What the database holds after the run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Observed {
    /// Per `occurredAt` (ms) of an applied live command, how many audit records carry it.
    pub applied: HashMap<i64, usize>,
    /// The registrations of the registering tournaments.
    pub rows: Vec<Row>,
    /// Each registering tournament's capacity.
    pub capacity: HashMap<Uuid, i64>,
    /// Per `occurredAt` (ms), the audit records that carry it, as text (for the anomalies'
    /// explanations).
    pub audits: HashMap<i64, Vec<String>>,
}
