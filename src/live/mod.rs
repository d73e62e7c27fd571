//! The live engine as the server runs it: the tournament actors' registry over the
//! database store and the Socket.IO broadcaster, and results.

pub mod bus;
pub mod results;
pub mod socket;
pub mod store;

use std::sync::Arc;

use chrono::Utc;
use floor_actors::error::{LiveError, Refusal};
use floor_actors::live::Registry;
use floor_entities::enums::TournamentStatus;
use floor_entities::tournaments;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter, QuerySelect};
use uuid::Uuid;

use self::socket::SocketBroadcaster;
use self::store::SeaOrmStore;
use crate::error::{AppError, ErrorCode, FieldProblem};
use crate::notifications::Notifier;

/// The registry of tournament actors as the server runs it.
pub type LiveRegistry = Registry<SeaOrmStore, SocketBroadcaster>;

/// Starts the live engine's supervisor. The broadcaster goes live once Socket.IO is served
/// ([`socket::serve_beside`]), and [`resume_running`] then wakes the running tournaments.
pub async fn start(
    db: &DatabaseConnection,
    notifier: Notifier,
) -> anyhow::Result<(LiveRegistry, Arc<SocketBroadcaster>)> {
    let store = Arc::new(SeaOrmStore { db: db.clone(), notifier });
    let broadcaster = Arc::new(SocketBroadcaster::default());
    let registry = Registry::start(store, broadcaster.clone(), Utc::now).await?;
    Ok((registry, broadcaster))
}

/// Starts an actor for every tournament that was running when the server stopped, so its
/// clock moves on.
pub async fn resume_running(registry: &LiveRegistry, db: &DatabaseConnection) -> anyhow::Result<()> {
    let running: Vec<Uuid> = tournaments::Entity::find()
        .select_only()
        .column(tournaments::Column::Id)
        .filter(tournaments::Column::Status.eq(TournamentStatus::Running))
        .into_tuple()
        .all(db)
        .await?;
    registry.resume(&running).await;
    Ok(())
}

impl From<LiveError> for AppError {
    fn from(err: LiveError) -> Self {
        match err {
            LiveError::Refused { refusal, message } => AppError::new(error_code(refusal), message),
            LiveError::Invalid { field, problem } => AppError::validation(vec![FieldProblem::new(field, problem)]),
            LiveError::Internal(cause) => AppError::Internal(cause),
        }
    }
}

fn error_code(refusal: Refusal) -> ErrorCode {
    match refusal {
        Refusal::NotFound => ErrorCode::NotFound,
        Refusal::InvalidStatus => ErrorCode::InvalidStatus,
        Refusal::NotEnoughPlayers => ErrorCode::NotEnoughPlayers,
        Refusal::TournamentAlreadyStarted => ErrorCode::TournamentAlreadyStarted,
        Refusal::TournamentNotRunning => ErrorCode::TournamentNotRunning,
        Refusal::AlreadyEliminated => ErrorCode::AlreadyEliminated,
        Refusal::NothingToUndo => ErrorCode::NothingToUndo,
        Refusal::SeatTaken => ErrorCode::SeatTaken,
        Refusal::InvalidLevel => ErrorCode::InvalidLevel,
        Refusal::ResultsAlreadyConfirmed => ErrorCode::ResultsAlreadyConfirmed,
    }
}

impl AppError {
    /// The same failure as the live engine speaks it (for the store behind the actors).
    pub fn into_live(self) -> LiveError {
        let refusal = match self.code() {
            ErrorCode::NotFound => Refusal::NotFound,
            ErrorCode::InvalidStatus => Refusal::InvalidStatus,
            ErrorCode::NotEnoughPlayers => Refusal::NotEnoughPlayers,
            ErrorCode::TournamentAlreadyStarted => Refusal::TournamentAlreadyStarted,
            ErrorCode::TournamentNotRunning => Refusal::TournamentNotRunning,
            ErrorCode::AlreadyEliminated => Refusal::AlreadyEliminated,
            ErrorCode::NothingToUndo => Refusal::NothingToUndo,
            ErrorCode::SeatTaken => Refusal::SeatTaken,
            ErrorCode::InvalidLevel => Refusal::InvalidLevel,
            ErrorCode::ResultsAlreadyConfirmed => Refusal::ResultsAlreadyConfirmed,
            _ => {
                return match self {
                    AppError::Api { code, message, .. } => LiveError::Internal(anyhow::anyhow!("{code}: {message}")),
                    AppError::Internal(cause) => LiveError::Internal(cause),
                };
            }
        };
        match self {
            AppError::Api { message, .. } => LiveError::refused(refusal, message),
            AppError::Internal(cause) => LiveError::Internal(cause),
        }
    }
}
