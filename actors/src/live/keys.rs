//! A command's idempotency key, kept as part of the command. The key a client sends with a
//! command (the `Idempotency-Key` header, or a queued command's `idempotencyKey`) is written in
//! the same transaction as the command's effect, with what the command came to. Whether a key's
//! command was applied is then a question the database answers: a key with no record was never
//! applied, one with a record was applied (or refused) exactly as recorded. The actor, which
//! takes a tournament's commands one at a time, reads the records of a turn's keys before it
//! decides the turn, so a command sent again is answered by its first outcome and never runs
//! twice, however the first sending ended (cut, lost, timed out).

use serde::{Deserialize, Serialize};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::error::{LiveError, Refusal};

/// A recorded elimination, as the elimination response shows it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Elimination {
    pub registration_id: Uuid,
    pub place: i32,
    pub eliminated_at: DateTime<Utc>,
}

/// What a keyed command came to, as kept with its key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "camelCase")]
pub enum Recorded {
    /// Applied; `version` is the LiveState version after it (unchanged when it changed
    /// nothing; unknown for a start or a confirmation, whose version the store sets).
    Applied {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        version: Option<i64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        elimination: Option<Elimination>,
    },
    /// Refused by a rule: nothing of it was applied.
    Refused { refusal: Refusal, message: String },
    /// A field of it was wrong: nothing of it was applied.
    Invalid { field: String, problem: String },
}

impl Recorded {
    /// The refusal a decided command came to, when it is one to keep: a rule's refusal or a
    /// bad field. `None` for a failure that said nothing about the command (the store).
    pub fn refusal(err: &LiveError) -> Option<Self> {
        match err {
            // Said of the moment, not of the command: nothing was done, and a retry may run it.
            // A key that stands for another command is that command's, not this one's.
            LiveError::Refused { refusal: Refusal::Unavailable | Refusal::Busy | Refusal::KeyReused, .. } => None,
            LiveError::Refused { refusal, message } => {
                Some(Self::Refused { refusal: *refusal, message: message.clone() })
            }
            LiveError::Invalid { field, problem } => {
                Some(Self::Invalid { field: field.clone(), problem: problem.clone() })
            }
            LiveError::Internal(_) | LiveError::Elsewhere { .. } => None,
        }
    }

    /// The answer of a command whose key stands for another command.
    pub fn key_reused() -> Self {
        Self::Refused { refusal: Refusal::KeyReused, message: KEY_REUSED.to_owned() }
    }

    /// The error a refused or invalid record stands for; `None` for an applied one.
    pub fn error(&self) -> Option<LiveError> {
        match self {
            Self::Applied { .. } => None,
            Self::Refused { refusal, message } => Some(LiveError::refused(*refusal, message.clone())),
            Self::Invalid { field, problem } => Some(LiveError::invalid(field.clone(), problem.clone())),
        }
    }
}

/// What one command of a turn came to, and whether that is the record of an earlier sending
/// of it (its key was used before) rather than this one's doing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    #[serde(flatten)]
    pub recorded: Recorded,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replayed: bool,
}

/// What the store holds for a key of a turn before the turn is decided.
#[derive(Clone, Debug, PartialEq)]
pub enum First {
    /// The same command (same account, tournament and command) was sent with this key before:
    /// this is what it came to.
    Same(Recorded),
    /// The key was used for another command or another tournament: it may not stand for this one.
    Other,
}

/// A key to keep with its command's outcome, in the transaction that applies the command.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyRecord {
    pub key: String,
    /// The command it stands for, which the store fingerprints with the tournament.
    pub command: crate::live::Command,
    /// Made offline (`occurredAt`): kept as long as the command may be replayed.
    pub stated: bool,
    pub recorded: Recorded,
}

const KEY_REUSED: &str =
    "this idempotency key was used for another command or tournament; use a new key for a new command";

/// The refusal of a command whose key stands for another command.
pub fn key_reused() -> LiveError {
    LiveError::refused(Refusal::KeyReused, KEY_REUSED)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_as_written() {
        for recorded in [
            Recorded::Applied { version: Some(7), elimination: None },
            Recorded::Applied { version: None, elimination: None },
            Recorded::Refused { refusal: Refusal::AlreadyEliminated, message: "out".to_owned() },
            Recorded::Invalid { field: "occurredAt".to_owned(), problem: "old".to_owned() },
        ] {
            let text = serde_json::to_string(&recorded).expect("json");
            assert_eq!(serde_json::from_str::<Recorded>(&text).expect("a record"), recorded);
            let answer = Answer { recorded: recorded.clone(), replayed: true };
            let text = serde_json::to_string(&answer).expect("json");
            assert_eq!(serde_json::from_str::<Answer>(&text).expect("an answer"), answer);
        }
    }

    #[test]
    fn only_a_rule_or_a_field_is_kept_as_what_a_command_came_to() {
        assert!(Recorded::refusal(&LiveError::not_running()).is_some());
        assert!(Recorded::refusal(&LiveError::invalid("f", "p")).is_some());
        assert!(Recorded::refusal(&LiveError::refused(Refusal::Unavailable, "down")).is_none());
        assert!(Recorded::refusal(&LiveError::refused(Refusal::Busy, "busy")).is_none());
        assert!(Recorded::refusal(&key_reused()).is_none());
        assert!(Recorded::refusal(&LiveError::Internal(anyhow::anyhow!("x"))).is_none());
        assert!(Recorded::refusal(&LiveError::Elsewhere { owner: None }).is_none());
    }

    #[test]
    fn a_kept_refusal_is_the_same_error_again() {
        let recorded = Recorded::refusal(&LiveError::not_running()).expect("kept");
        assert!(matches!(recorded.error(), Some(LiveError::Refused { refusal: Refusal::TournamentNotRunning, .. })));
        assert!(Recorded::Applied { version: Some(1), elimination: None }.error().is_none());
    }
}
