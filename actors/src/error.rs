//! What a live command can fail with: the contract's live codes, a bad field, or an
//! unexpected failure of the store. The HTTP layer maps each to its `AppError`.

/// The refusals a live command can answer with; each is one code of the contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::EnumIter, serde::Serialize, serde::Deserialize)]
pub enum Refusal {
    NotFound,
    InvalidStatus,
    NotEnoughPlayers,
    TournamentAlreadyStarted,
    TournamentNotRunning,
    AlreadyEliminated,
    NothingToUndo,
    SeatTaken,
    InvalidLevel,
    ResultsAlreadyConfirmed,
    /// A command stated to have happened (`occurredAt`) before a command already applied.
    ConflictingChange,
    /// Too many callers wait for tournaments to be opened on this node; come back shortly.
    Busy,
    /// The store cannot reach the database: nothing was done; come back shortly.
    Unavailable,
    /// The acting account may not run the tournament's live commands (the owning node's own
    /// check of a command another node handed it).
    Forbidden,
    /// The command's idempotency key was used for another command or tournament.
    KeyReused,
}

/// The error of every live command.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// A rule refused the command; `message` is for developers.
    #[error("{refusal:?}: {message}")]
    Refused { refusal: Refusal, message: String },
    /// One input field is wrong (`VALIDATION_ERROR`).
    #[error("{field}: {problem}")]
    Invalid { field: String, problem: String },
    /// The store failed, or the actor is gone: a 500 whose cause is logged, not sent.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
    /// Another node runs the tournament's actor (at `owner`; `None` while no node does): the
    /// command is for it.
    #[error("the tournament runs on another node ({owner:?})")]
    Elsewhere { owner: Option<String> },
}

impl LiveError {
    pub fn refused(refusal: Refusal, message: impl Into<String>) -> Self {
        Self::Refused { refusal, message: message.into() }
    }

    pub fn invalid(field: impl Into<String>, problem: impl Into<String>) -> Self {
        Self::Invalid { field: field.into(), problem: problem.into() }
    }

    pub fn not_found(what: &str) -> Self {
        Self::refused(Refusal::NotFound, format!("{what} not found"))
    }

    pub fn not_running() -> Self {
        Self::refused(Refusal::TournamentNotRunning, "the tournament is not running")
    }

    /// The same error for another caller that waited for the same work; an unexpected
    /// cause keeps its whole chain in its message.
    pub fn again(&self) -> Self {
        match self {
            Self::Refused { refusal, message } => Self::Refused { refusal: *refusal, message: message.clone() },
            Self::Invalid { field, problem } => Self::Invalid { field: field.clone(), problem: problem.clone() },
            Self::Internal(cause) => Self::Internal(anyhow::anyhow!("{cause:#}")),
            Self::Elsewhere { owner } => Self::Elsewhere { owner: owner.clone() },
        }
    }
}

pub type LiveResult<T> = Result<T, LiveError>;
