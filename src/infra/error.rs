//! The one error type of the API: every failure leaves as `{"error": {code, message, details?}}`
//! with the status the contract assigns to its code.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use floor_actors::live::LiveState;

use crate::infra::db;

/// Every error code of the contract. Clients branch on these names: renaming one is a
/// breaking change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    ValidationError,
    Unauthorized,
    Forbidden,
    NotFound,
    MethodNotAllowed,
    InvalidOtp,
    OtpRateLimited,
    InvalidRefreshToken,
    UserBanned,
    RegistrationClosed,
    RegistrationBanned,
    AlreadyRegistered,
    InvalidStatus,
    NotEnoughPlayers,
    TournamentAlreadyStarted,
    TournamentNotRunning,
    TournamentNotFinished,
    AlreadyEliminated,
    NothingToUndo,
    SeatTaken,
    InvalidLevel,
    InvalidLevels,
    ResultsAlreadyConfirmed,
    /// A live command stated to have happened (`occurredAt`) before a command already
    /// applied to the tournament (beyond the contract's table): `details.state` is the
    /// LiveState now.
    ConflictingChange,
    /// An `Idempotency-Key` sent again with another request (beyond the contract's table).
    IdempotencyKeyReused,
    /// Deleting the account of a club's only owner (beyond the contract's table): transfer
    /// the club first.
    SoleOwner,
    /// Deleting the account of a player of a running tournament (beyond the contract's
    /// table): after it ends.
    PlayingNow,
    PayloadTooLarge,
    /// A request body came slower than `HTTP_BODY_MIN_RATE` (beyond the contract's table).
    RequestTimeout,
    UnsupportedMediaType,
    RateLimited,
    /// A dependency the request needs (the database) is down: try again after `Retry-After`
    /// (beyond the contract's table).
    ServiceUnavailable,
    InternalError,
}

impl ErrorCode {
    /// Every code, for the documents that name them.
    pub const ALL: [Self; 33] = [
        Self::ValidationError,
        Self::Unauthorized,
        Self::Forbidden,
        Self::NotFound,
        Self::MethodNotAllowed,
        Self::InvalidOtp,
        Self::OtpRateLimited,
        Self::InvalidRefreshToken,
        Self::UserBanned,
        Self::RegistrationClosed,
        Self::RegistrationBanned,
        Self::AlreadyRegistered,
        Self::InvalidStatus,
        Self::NotEnoughPlayers,
        Self::TournamentAlreadyStarted,
        Self::TournamentNotRunning,
        Self::TournamentNotFinished,
        Self::AlreadyEliminated,
        Self::NothingToUndo,
        Self::SeatTaken,
        Self::InvalidLevel,
        Self::InvalidLevels,
        Self::ResultsAlreadyConfirmed,
        Self::ConflictingChange,
        Self::IdempotencyKeyReused,
        Self::SoleOwner,
        Self::PlayingNow,
        Self::PayloadTooLarge,
        Self::RequestTimeout,
        Self::UnsupportedMediaType,
        Self::RateLimited,
        Self::ServiceUnavailable,
        Self::InternalError,
    ];

    /// The HTTP status of the code, from the contract's table.
    pub fn status(self) -> StatusCode {
        use ErrorCode::*;
        match self {
            ValidationError | InvalidLevels | InvalidOtp => StatusCode::BAD_REQUEST,
            Unauthorized | InvalidRefreshToken => StatusCode::UNAUTHORIZED,
            Forbidden | UserBanned | RegistrationBanned => StatusCode::FORBIDDEN,
            NotFound => StatusCode::NOT_FOUND,
            MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            RegistrationClosed
            | AlreadyRegistered
            | InvalidStatus
            | NotEnoughPlayers
            | TournamentAlreadyStarted
            | TournamentNotRunning
            | TournamentNotFinished
            | AlreadyEliminated
            | NothingToUndo
            | SeatTaken
            | InvalidLevel
            | ResultsAlreadyConfirmed
            | ConflictingChange
            | IdempotencyKeyReused
            | SoleOwner
            | PlayingNow => StatusCode::CONFLICT,
            PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            OtpRateLimited | RateLimited => StatusCode::TOO_MANY_REQUESTS,
            ServiceUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            InternalError => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The code as it travels on the wire.
    pub fn as_str(self) -> &'static str {
        use ErrorCode::*;
        match self {
            ValidationError => "VALIDATION_ERROR",
            Unauthorized => "UNAUTHORIZED",
            Forbidden => "FORBIDDEN",
            NotFound => "NOT_FOUND",
            MethodNotAllowed => "METHOD_NOT_ALLOWED",
            InvalidOtp => "INVALID_OTP",
            OtpRateLimited => "OTP_RATE_LIMITED",
            InvalidRefreshToken => "INVALID_REFRESH_TOKEN",
            UserBanned => "USER_BANNED",
            RegistrationClosed => "REGISTRATION_CLOSED",
            RegistrationBanned => "REGISTRATION_BANNED",
            AlreadyRegistered => "ALREADY_REGISTERED",
            InvalidStatus => "INVALID_STATUS",
            NotEnoughPlayers => "NOT_ENOUGH_PLAYERS",
            TournamentAlreadyStarted => "TOURNAMENT_ALREADY_STARTED",
            TournamentNotRunning => "TOURNAMENT_NOT_RUNNING",
            TournamentNotFinished => "TOURNAMENT_NOT_FINISHED",
            AlreadyEliminated => "ALREADY_ELIMINATED",
            NothingToUndo => "NOTHING_TO_UNDO",
            SeatTaken => "SEAT_TAKEN",
            InvalidLevel => "INVALID_LEVEL",
            InvalidLevels => "INVALID_LEVELS",
            ResultsAlreadyConfirmed => "RESULTS_ALREADY_CONFIRMED",
            ConflictingChange => "CONFLICTING_CHANGE",
            IdempotencyKeyReused => "IDEMPOTENCY_KEY_REUSED",
            SoleOwner => "SOLE_OWNER",
            PlayingNow => "PLAYING_NOW",
            PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            RequestTimeout => "REQUEST_TIMEOUT",
            UnsupportedMediaType => "UNSUPPORTED_MEDIA_TYPE",
            RateLimited => "RATE_LIMITED",
            ServiceUnavailable => "SERVICE_UNAVAILABLE",
            InternalError => "INTERNAL_ERROR",
        }
    }
}

/// A code named in a text, such as a response's description.
impl std::str::FromStr for ErrorCode {
    type Err = ();

    fn from_str(name: &str) -> Result<Self, ()> {
        Self::ALL.into_iter().find(|code| code.as_str() == name).ok_or(())
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One problem with one input field, for `VALIDATION_ERROR` (and `INVALID_LEVELS`) details.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, ToSchema)]
pub struct FieldProblem {
    /// Path of the field in the request (`phone`, `levels[2].bigBlind`, a path or query name).
    pub field: String,
    /// What is wrong with it, for developers.
    pub problem: String,
}

impl FieldProblem {
    pub fn new(field: impl Into<String>, problem: impl Into<String>) -> Self {
        Self { field: field.into(), problem: problem.into() }
    }
}

/// What an error adds to its code and message.
#[derive(Clone, Debug, PartialEq, Serialize, ToSchema)]
#[serde(untagged)]
pub enum ErrorDetails {
    /// `VALIDATION_ERROR` and `INVALID_LEVELS`: one entry per wrong field.
    Fields(Vec<FieldProblem>),
    /// `CONFLICTING_CHANGE`: the tournament's LiveState now, to show what happened meanwhile.
    State { state: Box<LiveState> },
}

/// The error of every handler and service function.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// A failure the client caused or may act on: sent as it is.
    #[error("{code}: {message}")]
    Api { code: ErrorCode, message: String, details: Option<ErrorDetails> },
    /// Anything unexpected: logged with its cause, sent as a bare `INTERNAL_ERROR`.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

pub type AppResult<T> = Result<T, AppError>;

impl AppError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::Api { code, message: message.into(), details: None }
    }

    pub fn validation(details: Vec<FieldProblem>) -> Self {
        let message = match details.as_slice() {
            [one] => format!("{}: {}", one.field, one.problem),
            _ => "the request has invalid fields".to_owned(),
        };
        Self::Api { code: ErrorCode::ValidationError, message, details: Some(ErrorDetails::Fields(details)) }
    }

    pub fn invalid_field(field: impl Into<String>, problem: impl Into<String>) -> Self {
        Self::validation(vec![FieldProblem::new(field, problem)])
    }

    pub fn not_found(what: &str) -> Self {
        Self::new(ErrorCode::NotFound, format!("{what} not found"))
    }

    pub fn forbidden() -> Self {
        Self::new(ErrorCode::Forbidden, "you are not allowed to do this")
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Unauthorized, message)
    }

    /// An error several callers share (they waited for one piece of work): each gets the
    /// same answer, and an unexpected cause keeps its whole chain in its message.
    pub fn shared(err: std::sync::Arc<Self>) -> Self {
        match err.as_ref() {
            Self::Api { code, message, details } => {
                Self::Api { code: *code, message: message.clone(), details: details.clone() }
            }
            // The text of the chain is all that can be copied; an unreachable database stays
            // one, so every caller gets its 503.
            Self::Internal(cause) if db::is_unreachable(cause) => {
                Self::Internal(db::Unreachable(format!("{cause:#}")).into())
            }
            Self::Internal(cause) => Self::Internal(anyhow::anyhow!("{cause:#}")),
        }
    }

    /// The code this error is sent with: an unexpected failure is `INTERNAL_ERROR`, unless it
    /// is the database being out of reach ([`db::is_unreachable`]), `SERVICE_UNAVAILABLE`.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Api { code, .. } => *code,
            Self::Internal(cause) if db::is_unreachable(cause) => ErrorCode::ServiceUnavailable,
            Self::Internal(_) => ErrorCode::InternalError,
        }
    }

    /// What the client is told: the code, the message and the details. The cause of an
    /// unexpected failure goes to the log instead (it may name tables, queries or secrets),
    /// and so does an unreachable database's, reported once in a while rather than at each
    /// request it turns away.
    pub fn into_public(self) -> (ErrorCode, String, Option<ErrorDetails>) {
        match self {
            Self::Api { code, message, details } => (code, message, details),
            Self::Internal(cause) if db::is_unreachable(&cause) => {
                report_unreachable(&cause);
                (ErrorCode::ServiceUnavailable, UNREACHABLE.to_owned(), None)
            }
            Self::Internal(cause) => {
                tracing::error!(error = ?cause, "internal error");
                (ErrorCode::InternalError, "internal error".to_owned(), None)
            }
        }
    }
}

/// The message of a request turned away because the database cannot be reached.
pub const UNREACHABLE: &str = "the database is unreachable; try again in a few seconds";

/// The `Retry-After` of a `503 SERVICE_UNAVAILABLE`, in seconds: a restart of the database is
/// over in about that, and a request that finds it still down is turned away at once.
pub const RETRY_UNAVAILABLE_AFTER: u32 = 2;

/// How often an outage of the database is written to the log, at most.
const REPORT_UNREACHABLE_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// When the log last heard of an unreachable database, and how many failures it has not heard
/// of since.
static UNREACHABLE_REPORTED: std::sync::Mutex<(Option<std::time::Instant>, u64)> = std::sync::Mutex::new((None, 0));

/// Logs that the database is unreachable, with its cause: once every
/// [`REPORT_UNREACHABLE_EVERY`] at most, with the count of failures since the last line, so an
/// outage leaves a few lines and not one per request.
pub fn report_unreachable(cause: &anyhow::Error) {
    let mut reported = UNREACHABLE_REPORTED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (last, unreported) = &mut *reported;
    if last.is_some_and(|last| last.elapsed() < REPORT_UNREACHABLE_EVERY) {
        *unreported += 1;
        return;
    }
    tracing::error!(error = ?cause, unreported = *unreported, "the database is unreachable; requests that need it are answered 503");
    *last = Some(std::time::Instant::now());
    *unreported = 0;
}

impl From<sea_orm::DbErr> for AppError {
    fn from(err: sea_orm::DbErr) -> Self {
        Self::Internal(err.into())
    }
}

impl From<sea_orm::TransactionError<AppError>> for AppError {
    fn from(err: sea_orm::TransactionError<AppError>) -> Self {
        match err {
            sea_orm::TransactionError::Connection(db) => db.into(),
            sea_orm::TransactionError::Transaction(app) => app,
        }
    }
}

/// Maps a unique-key violation to the domain code it means, in one place
/// (realworld's `on_constraint`): a race lost at the database is a clean 409, not a 500.
pub trait OnUniqueViolation<T> {
    fn on_unique_violation(self, code: ErrorCode, message: &str) -> AppResult<T>;
}

impl<T> OnUniqueViolation<T> for Result<T, sea_orm::DbErr> {
    fn on_unique_violation(self, code: ErrorCode, message: &str) -> AppResult<T> {
        self.map_err(|err| match err.sql_err() {
            Some(sea_orm::SqlErr::UniqueConstraintViolation(_)) => AppError::new(code, message),
            _ => err.into(),
        })
    }
}

/// The body every error is sent in.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    pub error: ErrorObject,
}

#[derive(Serialize, ToSchema)]
pub struct ErrorObject {
    pub code: ErrorCode,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<ErrorDetails>,
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let (code, message, details) = self.into_public();
        let body = ErrorBody { error: ErrorObject { code, message, details } };
        let mut response = (code.status(), axum::Json(body)).into_response();
        let retry_after = match code {
            // The contract promises `Retry-After` with every 429; a limit that knows its
            // wait (the abuse limits) puts its own in place of this one second.
            ErrorCode::RateLimited => Some(1),
            ErrorCode::ServiceUnavailable => Some(RETRY_UNAVAILABLE_AFTER),
            _ => None,
        };
        if let Some(seconds) = retry_after {
            response.headers_mut().insert(axum::http::header::RETRY_AFTER, axum::http::HeaderValue::from(seconds));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_429_tells_when_to_come_back() {
        let response = AppError::new(ErrorCode::RateLimited, "busy").into_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers().get(axum::http::header::RETRY_AFTER).map(|v| v.as_bytes()), Some(&b"1"[..]));
        let other = AppError::new(ErrorCode::NotFound, "no").into_response();
        assert!(other.headers().get(axum::http::header::RETRY_AFTER).is_none());
    }

    #[test]
    fn every_code_serialises_to_its_wire_name_and_reads_back() {
        for code in ErrorCode::ALL {
            let json = serde_json::to_value(code).expect("a code serialises");
            assert_eq!(json, serde_json::Value::String(code.as_str().to_owned()));
            assert_eq!(code.as_str().parse(), Ok(code));
        }
        assert_eq!("UUID".parse::<ErrorCode>(), Err(()));
    }

    #[test]
    fn all_lists_every_code_of_the_schema() {
        let schema = serde_json::to_value(<ErrorCode as utoipa::PartialSchema>::schema()).expect("a schema");
        let mut documented: Vec<String> = serde_json::from_value(schema["enum"].clone()).expect("an enum");
        let mut listed: Vec<String> = ErrorCode::ALL.iter().map(|code| code.as_str().to_owned()).collect();
        documented.sort();
        listed.sort();
        assert_eq!(listed, documented);
    }

    #[test]
    fn statuses_follow_the_contract_table() {
        assert_eq!(ErrorCode::InvalidOtp.status(), StatusCode::BAD_REQUEST);
        assert_eq!(ErrorCode::InvalidLevels.status(), StatusCode::BAD_REQUEST);
        assert_eq!(ErrorCode::InvalidRefreshToken.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(ErrorCode::UserBanned.status(), StatusCode::FORBIDDEN);
        assert_eq!(ErrorCode::RegistrationBanned.status(), StatusCode::FORBIDDEN);
        assert_eq!(ErrorCode::ResultsAlreadyConfirmed.status(), StatusCode::CONFLICT);
        assert_eq!(ErrorCode::InvalidLevel.status(), StatusCode::CONFLICT);
        assert_eq!(ErrorCode::OtpRateLimited.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(ErrorCode::PayloadTooLarge.status(), StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(ErrorCode::UnsupportedMediaType.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert_eq!(ErrorCode::ServiceUnavailable.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(ErrorCode::ServiceUnavailable.as_str(), "SERVICE_UNAVAILABLE");
    }

    async fn body_of(response: Response) -> serde_json::Value {
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 16).await.expect("body");
        serde_json::from_slice(&bytes).expect("json")
    }

    #[tokio::test]
    async fn a_database_out_of_reach_is_a_503_with_retry_after_whichever_way_it_came() {
        let timed_out = || sea_orm::DbErr::ConnectionAcquire(sea_orm::ConnAcquireErr::Timeout);
        let refused = sea_orm::DbErr::Conn(sea_orm::RuntimeErr::SqlxError(std::sync::Arc::new(
            sea_orm::sqlx::Error::Io(std::io::Error::from(std::io::ErrorKind::ConnectionRefused)),
        )));
        let ways = [
            AppError::from(timed_out()),
            AppError::from(refused),
            AppError::from(sea_orm::TransactionError::<AppError>::Connection(timed_out())),
            AppError::Internal(anyhow::Error::new(timed_out()).context("loading the agenda")),
            AppError::Internal(anyhow::Error::new(sea_orm::sqlx::Error::PoolTimedOut)),
            AppError::shared(std::sync::Arc::new(AppError::from(timed_out()))),
        ];
        for err in ways {
            assert_eq!(err.code(), ErrorCode::ServiceUnavailable, "{err:?}");
            let response = err.into_response();
            assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
            let retry_after = response.headers().get(axum::http::header::RETRY_AFTER).map(|v| v.as_bytes().to_vec());
            assert_eq!(retry_after, Some(RETRY_UNAVAILABLE_AFTER.to_string().into_bytes()));
            let body = body_of(response).await;
            assert_eq!(body, serde_json::json!({"error": {"code": "SERVICE_UNAVAILABLE", "message": UNREACHABLE}}));
        }
    }

    #[tokio::test]
    async fn other_database_failures_stay_internal_and_send_no_cause() {
        let violated = sea_orm::DbErr::Exec(sea_orm::RuntimeErr::Internal("UNIQUE constraint failed".to_owned()));
        let err = AppError::from(violated);
        assert_eq!(err.code(), ErrorCode::InternalError);
        let response = err.into_response();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(response.headers().get(axum::http::header::RETRY_AFTER).is_none());
        let body = body_of(response).await;
        assert_eq!(body, serde_json::json!({"error": {"code": "INTERNAL_ERROR", "message": "internal error"}}));
        let shared = AppError::shared(std::sync::Arc::new(AppError::Internal(anyhow::anyhow!("a bug"))));
        assert_eq!(shared.code(), ErrorCode::InternalError);
    }

    #[tokio::test]
    async fn an_internal_error_sends_no_cause() {
        let response = AppError::Internal(anyhow::anyhow!("password=hunter2")).into_response();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 16).await.expect("body");
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains("hunter2"));
        assert!(text.contains("INTERNAL_ERROR"));
    }
}
