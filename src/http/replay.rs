//! `POST /tournaments/{id}/replay`: the queue of live commands an organizer's app made while
//! the venue had no connection, applied in order in one turn of the tournament's actor, each
//! as of the moment it happened and each on its own, with one broadcast for the whole queue.
//!
//! Each command carries its `Idempotency-Key`, kept with the same account's keys of the
//! header, in the transaction that applies it: a command whose key was kept before (by an
//! earlier sending of the same queue, cut or answered, or by the live request the app sent
//! before it lost the connection) is not applied again and is answered `replayed` with what it
//! came to the first time; a key kept for another command or tournament refuses the command.

use std::collections::HashSet;

use axum::extract::State;
use chrono::{DateTime, Utc};
use floor_actors::live::command::QUEUE_AT_MOST;
use floor_actors::live::{Answer, Command, LiveState, Order, Recorded, Timed};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::{Json, TournamentAccess, club};
use super::idempotency;
use super::live::{LevelChange, ReseatRequest, command_actor, current};
use crate::http::state::AppState;
use crate::infra::error::{AppError, AppResult, ErrorBody};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(replay_queue))
}

/// A live command of a queue, by its contract name.
#[derive(Clone, Copy, Debug, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
enum QueuedKind {
    Pause,
    Resume,
    Level,
    Eliminate,
    Undo,
    Reseat,
}

/// One command made offline.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct QueuedCommand {
    command: QueuedKind,
    /// The command's own body, without `tournamentId`: `{direction}` for `level`,
    /// `{registrationId}` for `eliminate`, `{registrationId, tableNo, seatNo}` for `reseat`,
    /// nothing (or `{}`) for the others.
    #[serde(default)]
    #[schema(value_type = Object)]
    body: serde_json::Map<String, Value>,
    /// RFC 3339: when it happened, by the device's clock corrected by the server time it last
    /// saw; at most 5 s ahead, at most 6 hours old.
    occurred_at: DateTime<Utc>,
    /// As the `Idempotency-Key` header: 1 to 255 visible ASCII characters, a fresh UUID per
    /// command is best. Each key once per queue.
    #[schema(min_length = 1, max_length = 255, pattern = "^[!-~]+$")]
    idempotency_key: String,
}

#[derive(Deserialize, ToSchema)]
struct ReplayRequest {
    /// 1 to 200 commands, in the order they were made.
    #[schema(min_items = 1, max_items = 200)]
    commands: Vec<QueuedCommand>,
}

/// What one command came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
enum ReplayOutcome {
    /// Applied now (`version` is the LiveState version after it; unchanged when it changed
    /// nothing, such as a pause while paused).
    Applied,
    /// Its key was kept before (an earlier sending, however it ended): not applied again;
    /// `version` or `error` is what it came to then.
    Replayed,
    /// Refused on its own, nothing of it applied (`error`); the others stand.
    Refused,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
struct ReplayError {
    code: String,
    message: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ReplayResult {
    idempotency_key: String,
    outcome: ReplayOutcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ReplayError>,
}

/// Each command's result, in the queue's order, and the LiveState after the whole queue.
#[derive(Serialize, ToSchema)]
struct ReplayAnswer {
    results: Vec<ReplayResult>,
    state: LiveState,
}

/// Applies a queue of live commands made offline, in order, in one turn of the tournament:
/// each as of its `occurredAt` and on its own (applied, or refused with its code: a command
/// stated before a command another request applied is `CONFLICTING_CHANGE`), each idempotent
/// by its key. One broadcast for the whole queue; a queue replayed again changes nothing. The
/// request takes no `Idempotency-Key` header of its own: the keys are the commands'.
///
/// How an organizer app works offline: it keeps `serverTime − its own clock` from each
/// LiveState and stamps every command's `occurredAt` with its clock corrected by it; it sends
/// each command live with a fresh `Idempotency-Key` and, on a network error, keeps it with its
/// key in a queue, behind which it queues every later command; once the connection is back it
/// sends the queue here, drops what is `applied` or `replayed`, and shows the organizer what is
/// `refused` beside the state in the answer. Keys of commands made offline are kept 6 hours.
/// An answer that never came (a cut, a timeout, a `5xx`) means nothing is known: the app sends
/// the same queue again with the same keys, and each command's answer is then its true outcome,
/// applied once. `refused` with `IDEMPOTENCY_KEY_REUSED`: the key was kept for another command
/// or tournament, and this command was not applied.
#[utoipa::path(post, path = "/tournaments/{id}/replay", tags = ["live", "extension"], security(("bearer" = [])),
    params(("id" = Uuid, Path)),
    request_body = ReplayRequest,
    responses(
        (status = 200, body = ReplayAnswer),
        (status = 400, description = "VALIDATION_ERROR: no commands or more than 200, an unknown command, a key twice in the queue", body = ErrorBody),
        (status = 503, description = "SERVICE_UNAVAILABLE: the database or the tournament's node is out of reach; nothing was applied", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: not an owner or td of the club", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
    ))]
async fn replay_queue(
    State(app): State<AppState>,
    access: TournamentAccess<club::Staff>,
    Json(request): Json<ReplayRequest>,
) -> AppResult<axum::Json<ReplayAnswer>> {
    let queue = request.commands;
    check_queue(&queue)?;
    let (tournament_id, by) = (access.tournament.id, access.user.id());
    let mut results: Vec<Option<ReplayResult>> = Vec::with_capacity(queue.len());
    let mut to_run: Vec<(usize, Timed)> = Vec::new();
    for (index, queued) in queue.iter().enumerate() {
        match command_of(index, queued) {
            Ok(command) => {
                let timed = Timed::at(command, Some(queued.occurred_at)).keyed(Some(queued.idempotency_key.clone()));
                to_run.push((index, timed));
                results.push(None);
            }
            Err(err) => results.push(Some(refused(queued.idempotency_key.clone(), &err))),
        }
    }
    let state = if to_run.is_empty() {
        app.live.snapshot(tournament_id).await?
    } else {
        let order = Order::Queue(to_run.iter().map(|(_, timed)| timed.clone()).collect());
        let outcome = command_actor(&app, tournament_id, order, by).await?;
        // One answer per command run (an owner of another version could answer fewer): a
        // command left without one would be dropped from the results, its outcome untold.
        if outcome.answers.len() != to_run.len() {
            return Err(AppError::Internal(anyhow::anyhow!(
                "the queue of {} commands was answered {} times; read the live state for their effect",
                to_run.len(),
                outcome.answers.len()
            )));
        }
        for ((index, _), answer) in to_run.iter().zip(outcome.answers) {
            results[*index] = Some(result_of(queue[*index].idempotency_key.clone(), answer));
        }
        outcome.state
    };
    let results = results.into_iter().flatten().collect();
    Ok(axum::Json(ReplayAnswer { results, state: current(&state) }))
}

/// Refuses a queue that is empty or too long, or whose keys are malformed or used twice.
fn check_queue(queue: &[QueuedCommand]) -> AppResult<()> {
    if queue.is_empty() || queue.len() > QUEUE_AT_MOST {
        return Err(AppError::invalid_field("commands", format!("must hold 1 to {QUEUE_AT_MOST} commands")));
    }
    let mut keys = HashSet::new();
    for (index, queued) in queue.iter().enumerate() {
        if !idempotency::is_key(&queued.idempotency_key) {
            let field = format!("commands[{index}].idempotencyKey");
            return Err(AppError::invalid_field(field, "must be 1 to 255 visible ASCII characters"));
        }
        if !keys.insert(queued.idempotency_key.as_str()) {
            let field = format!("commands[{index}].idempotencyKey");
            return Err(AppError::invalid_field(field, "is used twice in the queue"));
        }
    }
    Ok(())
}

/// The command a queued one stands for; a body that does not fit is a bad field of it.
fn command_of(index: usize, queued: &QueuedCommand) -> AppResult<Command> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct EliminateBody {
        registration_id: Uuid,
    }
    let body = || Value::Object(queued.body.clone());
    Ok(match queued.command {
        QueuedKind::Pause => Command::Pause,
        QueuedKind::Resume => Command::Resume,
        QueuedKind::Undo => Command::Undo,
        QueuedKind::Level => body_of::<LevelChange>(index, body())?.command(),
        QueuedKind::Eliminate => Command::Eliminate(body_of::<EliminateBody>(index, body())?.registration_id),
        QueuedKind::Reseat => body_of::<ReseatRequest>(index, body())?.command(),
    })
}

fn body_of<T: DeserializeOwned>(index: usize, body: Value) -> AppResult<T> {
    serde_path_to_error::deserialize::<_, T>(body).map_err(|err| {
        let path = err.path().to_string();
        let field =
            if path == "." { format!("commands[{index}].body") } else { format!("commands[{index}].body.{path}") };
        AppError::invalid_field(field, err.inner().to_string())
    })
}

fn refused(idempotency_key: String, err: &AppError) -> ReplayResult {
    let error = ReplayError { code: err.code().as_str().to_owned(), message: message_of(err) };
    ReplayResult { idempotency_key, outcome: ReplayOutcome::Refused, version: None, error: Some(error) }
}

/// The message a client is shown: an internal failure's cause stays in the log.
fn message_of(err: &AppError) -> String {
    match err {
        AppError::Api { message, .. } => message.clone(),
        AppError::Internal(_) => "internal error".to_owned(),
    }
}

/// What one command of the queue came to, as the answer tells it.
fn result_of(idempotency_key: String, answer: Answer) -> ReplayResult {
    let error = answer.recorded.error().map(|err| {
        let err = AppError::from(err);
        ReplayError { code: err.code().as_str().to_owned(), message: message_of(&err) }
    });
    let version = match answer.recorded {
        Recorded::Applied { version, .. } => version,
        Recorded::Refused { .. } | Recorded::Invalid { .. } => None,
    };
    let outcome = match (answer.replayed, &error) {
        (true, _) => ReplayOutcome::Replayed,
        (false, None) => ReplayOutcome::Applied,
        (false, Some(_)) => ReplayOutcome::Refused,
    };
    ReplayResult { idempotency_key, outcome, version, error }
}
