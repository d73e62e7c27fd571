//! The live engine as the server runs it: the tournament actors' registry over the
//! database store and the Socket.IO broadcaster.

pub mod asyncapi;
pub mod command_keys;
pub mod engine;
pub mod events;
pub mod forward;
pub mod json;
pub mod keeper;
pub mod known;
pub mod leases;
pub mod patch;
pub mod player_rows;
pub mod probe;
pub mod screen_feed;
pub mod socket;
pub mod socket_guards;
pub mod store;

use std::sync::Arc;

use chrono::Utc;
use floor_actors::error::{LiveError, Refusal};
use floor_actors::live::{Fanout, Registry};
use floor_entities::enums::TournamentStatus;
use floor_entities::tournaments;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter, QuerySelect};
use strum::IntoEnumIterator;
use uuid::Uuid;

use self::engine::{Live, Nodes};
use self::socket::SocketBroadcaster;
use self::store::SeaOrmStore;
use crate::domain::notifications::Notifier;
use crate::infra::bus::Link;
use crate::infra::error::{AppError, ErrorCode, FieldProblem};
use crate::infra::metrics::Metrics;

/// Starts the live engine's supervisor; `nodes`, and the `link` to Redis, when this node is
/// one of several. The broadcaster goes live once Socket.IO is served
/// ([`socket::serve_beside`]), and [`resume_running`] then wakes the running tournaments.
pub async fn start(
    db: &DatabaseConnection,
    reads: &DatabaseConnection,
    notifier: Notifier,
    metrics: Arc<Metrics>,
    nodes: Option<Arc<Nodes>>,
    link: Option<Link>,
) -> anyhow::Result<(Live, Arc<SocketBroadcaster>)> {
    let leases = nodes.as_ref().map(|nodes| nodes.leases.clone());
    let store =
        Arc::new(SeaOrmStore { db: db.clone(), reads: reads.clone(), notifier, leases, breaker: Arc::default() });
    let sockets = Arc::new(SocketBroadcaster::new(metrics, link));
    let registry = Registry::start(store, Arc::new(Fanout::new(sockets.clone())), Utc::now).await?;
    Ok((Live::new(registry, nodes), sockets))
}

/// Starts an actor for every tournament that was running when the server stopped, so its
/// clock moves on (with several nodes, those no other node runs).
pub async fn resume_running(live: &Live, db: &DatabaseConnection) -> anyhow::Result<()> {
    let running: Vec<Uuid> = tournaments::Entity::find()
        .select_only()
        .column(tournaments::Column::Id)
        .filter(tournaments::Column::Status.eq(TournamentStatus::Running))
        .into_tuple()
        .all(db)
        .await?;
    live.registry().resume(&running).await;
    Ok(())
}

/// The contract code of each refusal of the live engine: the one table from refusals to
/// codes. The way back ([`refusal_of`], for the store, which speaks `AppError`) reads it too.
fn code_of(refusal: Refusal) -> ErrorCode {
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
        Refusal::ConflictingChange => ErrorCode::ConflictingChange,
        Refusal::Busy => ErrorCode::RateLimited,
        Refusal::Unavailable => ErrorCode::ServiceUnavailable,
        Refusal::Forbidden => ErrorCode::Forbidden,
        Refusal::KeyReused => ErrorCode::IdempotencyKeyReused,
    }
}

/// The refusal a code stands for, when it is one of the engine's.
fn refusal_of(code: ErrorCode) -> Option<Refusal> {
    Refusal::iter().find(|refusal| code_of(*refusal) == code)
}

impl From<LiveError> for AppError {
    fn from(err: LiveError) -> Self {
        match err {
            LiveError::Refused { refusal, message } => AppError::new(code_of(refusal), message),
            LiveError::Invalid { field, problem } => AppError::validation(vec![FieldProblem::new(field, problem)]),
            LiveError::Internal(cause) => AppError::Internal(cause),
            LiveError::Elsewhere { owner } => {
                AppError::Internal(anyhow::anyhow!("the tournament's owner ({owner:?}) was not reached"))
            }
        }
    }
}

impl AppError {
    /// The same failure as the live engine speaks it (for the store behind the actors): a
    /// refusal when its code is one of the engine's, else an internal error. A database out of
    /// reach is the refusal [`Refusal::Unavailable`] (its cause logged here), so it keeps its
    /// `503` through the actor, the registry and a hand-over between nodes.
    pub fn into_live(self) -> LiveError {
        match self {
            AppError::Api { code, message, .. } => match refusal_of(code) {
                Some(refusal) => LiveError::refused(refusal, message),
                None => LiveError::Internal(anyhow::anyhow!("{code}: {message}")),
            },
            AppError::Internal(cause) if crate::infra::db::is_unreachable(&cause) => {
                crate::infra::error::report_unreachable(&cause);
                LiveError::refused(Refusal::Unavailable, crate::infra::error::UNREACHABLE)
            }
            AppError::Internal(cause) => LiveError::Internal(cause),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_refusal_has_its_own_code_and_comes_back_from_it() {
        for refusal in Refusal::iter() {
            let code = code_of(refusal);
            let sharing: Vec<Refusal> = Refusal::iter().filter(|other| code_of(*other) == code).collect();
            assert_eq!(sharing, [refusal], "{code} stands for one refusal only");
            assert_eq!(refusal_of(code), Some(refusal));
        }
    }

    #[test]
    fn a_refusal_survives_the_round_trip_through_the_store_with_its_message() {
        let stored = AppError::new(ErrorCode::SeatTaken, "another player sits there");
        let back = AppError::from(stored.into_live());
        assert_eq!(back.code(), ErrorCode::SeatTaken);
        assert_eq!(back.to_string(), "SEAT_TAKEN: another player sits there");
    }

    #[test]
    fn a_database_out_of_reach_is_refused_through_the_engine_as_503() {
        let timed_out = sea_orm::DbErr::ConnectionAcquire(sea_orm::ConnAcquireErr::Timeout);
        let live = AppError::from(timed_out).into_live();
        assert!(matches!(live, LiveError::Refused { refusal: Refusal::Unavailable, .. }), "{live:?}");
        // As another caller of the same cold start, or another node, gets it.
        let back = AppError::from(live.again());
        assert_eq!(back.code(), ErrorCode::ServiceUnavailable);
        assert_eq!(back.to_string(), format!("SERVICE_UNAVAILABLE: {}", crate::infra::error::UNREACHABLE));
        let other = AppError::Internal(anyhow::anyhow!("a bug")).into_live();
        assert!(matches!(other, LiveError::Internal(_)), "{other:?}");
    }

    #[test]
    fn a_code_the_engine_does_not_speak_is_internal() {
        let back = AppError::from(AppError::new(ErrorCode::SoleOwner, "no").into_live());
        assert_eq!(back.code(), ErrorCode::InternalError);
    }
}
