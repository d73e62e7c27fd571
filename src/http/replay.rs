//! `POST /tournaments/{id}/replay`: the queue of live commands an organizer's app made while
//! the venue had no connection, applied in order in one turn of the tournament's actor, each
//! as of the moment it happened and each on its own, with one broadcast for the whole queue.
//!
//! Each command carries its `Idempotency-Key`, kept with the same account's keys of the
//! header: a command whose key was already used (by an earlier replay of the same queue, or
//! by the live request the app sent before it lost the connection) is not applied again and is
//! answered `replayed` with what it came to the first time.

use std::collections::{HashMap, HashSet};

use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use floor_actors::live::command::QUEUE_AT_MOST;
use floor_actors::live::{Command, LiveState, Order, Snapshot, Timed};
use floor_entities::idempotency_keys;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::{Json, TournamentAccess, club};
use super::idempotency::{self, KEEP_OFFLINE};
use super::live::{LevelChange, ReseatRequest, command_actor, current};
use crate::app::AppState;
use crate::error::{AppError, AppResult, ErrorBody, ErrorCode};

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
    body: Value,
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
    /// Its key was used before: not applied again; `version` or `error` is what it came to then.
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
/// by its key. One broadcast for the whole queue; a queue replayed again changes nothing.
///
/// How an organizer app works offline: it keeps `serverTime − its own clock` from each
/// LiveState and stamps every command's `occurredAt` with its clock corrected by it; it sends
/// each command live with a fresh `Idempotency-Key` and, on a network error, keeps it with its
/// key in a queue, behind which it queues every later command; once the connection is back it
/// sends the queue here, drops what is `applied` or `replayed`, and shows the organizer what is
/// `refused` beside the state in the answer. Keys of commands made offline are kept 6 hours.
#[utoipa::path(post, path = "/tournaments/{id}/replay", tags = ["live", "extension"], security(("bearer" = [])),
    params(("id" = Uuid, Path)),
    request_body = ReplayRequest,
    responses(
        (status = 200, body = ReplayAnswer),
        (status = 400, description = "VALIDATION_ERROR: no commands or more than 200, an unknown command, a key twice in the queue", body = ErrorBody),
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
    let keys: Vec<String> = queue.iter().map(|queued| queued.idempotency_key.clone()).collect();
    let this_request = format!("replay:{}", Uuid::now_v7());
    let now = Utc::now();
    let kept_until = Some(now + KEEP_OFFLINE);
    idempotency::claim_all(&app.db, by, &keys, &this_request, now, kept_until).await?;
    let firsts = ended_firsts(&app, by, &keys, &this_request, now).await?;
    let mut replay = Replay::sort(&queue, &firsts, &this_request);
    let state = if replay.to_run.is_empty() {
        app.live.snapshot(tournament_id).await?
    } else {
        replay.run(&app, tournament_id, by, &keys).await?
    };
    let (done, did_nothing): (Vec<_>, Vec<_>) =
        replay.answers.into_iter().partition(|(_, status, _)| !idempotency::did_nothing(*status));
    idempotency::record_all(&app.db, by, &done, &this_request, now, kept_until).await?;
    let nothing_done: Vec<String> = did_nothing.into_iter().map(|(key, ..)| key).collect();
    idempotency::let_go_all(&app.db, by, &nothing_done).await?;
    let results = replay.results.into_iter().flatten().collect();
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

/// A queue being replayed: what becomes of each command, and the answers to keep.
struct Replay {
    /// Each command's result in the queue's order; `None` while it waits for the actor.
    results: Vec<Option<ReplayResult>>,
    /// The commands the actor runs, with their index in the queue.
    to_run: Vec<(usize, Timed)>,
    /// The answers to keep with their keys (key, status, body), for a later replay to read.
    answers: Vec<(String, StatusCode, String)>,
}

impl Replay {
    /// Sorts what each command is: run now (claimed by this request, and well formed),
    /// answered already (its key was used before), or refused before it reaches the actor.
    fn sort(queue: &[QueuedCommand], firsts: &HashMap<String, idempotency_keys::Model>, this_request: &str) -> Self {
        let mut replay = Self { results: Vec::with_capacity(queue.len()), to_run: Vec::new(), answers: Vec::new() };
        for (index, queued) in queue.iter().enumerate() {
            let key = queued.idempotency_key.clone();
            match firsts.get(&key) {
                Some(first) if first.fingerprint == this_request => match command_of(index, queued) {
                    Ok(command) => {
                        replay.to_run.push((index, Timed { command, occurred_at: Some(queued.occurred_at) }));
                        replay.results.push(None);
                    }
                    Err(err) => {
                        let result = refused(key, &err);
                        replay.answers.push(answer_of(&result));
                        replay.results.push(Some(result));
                    }
                },
                Some(first) if first.status_code.is_some() => replay.results.push(Some(replayed(key, first))),
                // Still running elsewhere after the wait, or gone since (expired this very
                // moment): say so rather than guess; nothing of it was applied here.
                _ => replay.results.push(Some(refused(
                    key,
                    &AppError::new(
                        ErrorCode::ServiceUnavailable,
                        "the first request with this key has not ended; replay the queue again",
                    ),
                ))),
            }
        }
        replay
    }

    /// Runs the commands to run in one turn of the tournament's actor and takes in what each
    /// came to; the LiveState after them.
    async fn run(&mut self, app: &AppState, tournament_id: Uuid, by: Uuid, keys: &[String]) -> AppResult<Snapshot> {
        let order = Order::Queue(self.to_run.iter().map(|(_, timed)| timed.clone()).collect());
        let run_keys: Vec<String> = self.to_run.iter().map(|(index, _)| keys[*index].clone()).collect();
        let outcome = match command_actor(app, tournament_id, order, by).await {
            Ok(outcome) => outcome,
            Err(err) => {
                // Nothing of the queue was applied: its keys are let go, so the queue may be
                // sent again as it is.
                idempotency::let_go_all(&app.db, by, &run_keys).await?;
                return Err(err);
            }
        };
        for ((index, _), answer) in self.to_run.iter().zip(outcome.queue) {
            let key = keys[*index].clone();
            let result = match answer {
                Ok(version) => ReplayResult {
                    idempotency_key: key,
                    outcome: ReplayOutcome::Applied,
                    version: Some(version),
                    error: None,
                },
                Err(err) => refused(key, &AppError::from(err)),
            };
            self.answers.push(answer_of(&result));
            self.results[*index] = Some(result);
        }
        Ok(outcome.state)
    }
}

/// The claims of `keys`, once those of other requests still running have ended (or
/// [`idempotency::WAIT_FOR_FIRST`] has passed): a command sent live just before the connection
/// went may still be under way.
async fn ended_firsts(
    app: &AppState,
    by: Uuid,
    keys: &[String],
    this_request: &str,
    now: DateTime<Utc>,
) -> AppResult<HashMap<String, idempotency_keys::Model>> {
    let deadline = tokio::time::Instant::now() + idempotency::WAIT_FOR_FIRST;
    let mut firsts = HashMap::new();
    let mut asking: Vec<String> = keys.to_vec();
    loop {
        for first in idempotency::find_all(&app.db, by, &asking, now).await? {
            firsts.insert(first.key.clone(), first);
        }
        asking = firsts
            .values()
            .filter(|first| first.fingerprint != this_request && first.status_code.is_none())
            .map(|first| first.key.clone())
            .collect();
        if asking.is_empty() || tokio::time::Instant::now() >= deadline {
            return Ok(firsts);
        }
        tokio::time::sleep(idempotency::POLL_EVERY).await;
    }
}

/// The command a queued one stands for; a body that does not fit is a bad field of it.
fn command_of(index: usize, queued: &QueuedCommand) -> AppResult<Command> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct EliminateBody {
        registration_id: Uuid,
    }
    let body = || queued.body.clone();
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
    let code = err.code();
    let message = match err {
        AppError::Api { message, .. } => message.clone(),
        AppError::Internal(_) => "internal error".to_owned(),
    };
    ReplayResult {
        idempotency_key,
        outcome: ReplayOutcome::Refused,
        version: None,
        error: Some(ReplayError { code: code.as_str().to_owned(), message }),
    }
}

/// The answer kept for a command's key: the status and body a later replay reads back.
fn answer_of(result: &ReplayResult) -> (String, StatusCode, String) {
    let key = result.idempotency_key.clone();
    match &result.error {
        Some(error) => {
            let status = error.code.parse::<ErrorCode>().map_or(StatusCode::INTERNAL_SERVER_ERROR, ErrorCode::status);
            (key, status, json!({"error": error}).to_string())
        }
        None => (key, StatusCode::OK, json!({"version": result.version}).to_string()),
    }
}

/// What a key's first request came to, read back from its kept answer: the version it left
/// (a live command's answer holds the LiveState, an elimination's holds it in `state`, a
/// replay's holds the version), or its error.
fn replayed(idempotency_key: String, first: &idempotency_keys::Model) -> ReplayResult {
    let body: Value =
        first.response_body.as_deref().and_then(|body| serde_json::from_str(body).ok()).unwrap_or_default();
    let error = (first.status_code.unwrap_or(200) >= 400)
        .then(|| serde_json::from_value::<ReplayError>(body["error"].clone()).ok())
        .flatten();
    let version = body["version"].as_i64().or_else(|| body["state"]["version"].as_i64());
    ReplayResult {
        idempotency_key,
        outcome: ReplayOutcome::Replayed,
        version: error.is_none().then_some(version).flatten(),
        error,
    }
}
