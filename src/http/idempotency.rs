//! `Idempotency-Key` on the live commands: a caller that timed out may send the command again
//! with the same key, and within ten minutes the same account gets the first answer back
//! instead of a second change.
//!
//! The first request with a key claims `(account, key)` in the database, so the rule holds
//! across nodes; its handler runs in a task of its own, so the answer is recorded even when
//! the caller hangs up. A retry while the first still runs waits for its answer. The key may
//! only be sent again with the same request (method, path and body); another is refused.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{FromRequestParts, MatchedPath, Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderName, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use floor_entities::idempotency_keys;
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, ExprTrait, QueryFilter, Set};
use sha2::{Digest, Sha256};
use tracing::Instrument as _;
use utoipa::openapi::path::{ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{OpenApi as OpenApiDoc, Required};
use uuid::Uuid;

use super::API_PREFIX;
use super::extract::AuthUser;
use crate::app::AppState;
use crate::error::{AppError, AppResult, ErrorCode};

pub const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");
/// Set on an answer that is the replay of the first one.
pub const IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");
/// How long a key holds its first answer.
pub const KEEP: chrono::Duration = chrono::Duration::minutes(10);
/// How long the key of a command made offline (`occurredAt`) holds it: as long as the
/// command may still be replayed, so a queue sent again hours later applies nothing twice.
pub const KEEP_OFFLINE: chrono::Duration =
    floor_actors::live::command::BACK_AT_MOST.checked_add(&chrono::Duration::minutes(10)).expect("in range");
/// The longest a key may be: room for a UUID or a client's own scheme.
const MAX_KEY_LEN: usize = 255;
/// What [`MAX_KEY_LEN`]'s characters may be, as the contract's pattern.
const VISIBLE_ASCII: &str = "^[!-~]+$";
/// A live command's body is a few fields; a larger one is not a command.
const MAX_BODY: usize = 64 * 1024;
/// How long a retry waits for the first request's answer: longer than a command may take
/// (30 seconds), so only a first request whose node died is not waited out.
pub const WAIT_FOR_FIRST: Duration = Duration::from_secs(40);
pub const POLL_EVERY: Duration = Duration::from_millis(50);
/// The operations that accept the header: the live commands.
const TAG: &str = "live";

/// The state of the middleware: the server's, and the paths of the live commands.
#[derive(Clone)]
pub struct Idempotency {
    app: AppState,
    commands: Arc<HashSet<String>>,
}

impl Idempotency {
    pub fn new(app: AppState, contract: &OpenApiDoc) -> Self {
        Self { app, commands: Arc::new(commands(contract)) }
    }
}

/// The full paths of the live commands: the `POST` operations tagged `live`.
fn commands(contract: &OpenApiDoc) -> HashSet<String> {
    contract
        .paths
        .paths
        .iter()
        .filter(|(_, item)| item.post.as_ref().is_some_and(is_command))
        .map(|(path, _)| format!("{API_PREFIX}{path}"))
        .collect()
}

fn is_command(operation: &utoipa::openapi::path::Operation) -> bool {
    operation.tags.as_ref().is_some_and(|tags| tags.iter().any(|tag| tag == TAG))
}

/// Documents the header on every live command of `contract`.
pub fn document(contract: &mut OpenApiDoc) {
    for item in contract.paths.paths.values_mut() {
        let Some(operation) = item.post.as_mut().filter(|operation| is_command(operation)) else { continue };
        let parameter = ParameterBuilder::new()
            .name("Idempotency-Key")
            .parameter_in(ParameterIn::Header)
            .required(Required::False)
            .description(Some(
                "Any string of 1 to 255 visible ASCII characters (a fresh UUID per command is best). \
                 Sent again by the same account within 10 minutes, the command is not applied again: \
                 the first answer comes back (its status and body, with `Idempotent-Replayed: true`), \
                 after the first request ends if it still runs. Sent with another method, path or body: \
                 `409 IDEMPOTENCY_KEY_REUSED`.",
            ))
            .schema(Some(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .min_length(Some(1))
                    .max_length(Some(MAX_KEY_LEN))
                    .pattern(Some(VISIBLE_ASCII)),
            ))
            .build();
        operation.parameters.get_or_insert_with(Vec::new).push(utoipa::openapi::RefOr::T(parameter));
        super::statuses::answers(
            operation,
            ErrorCode::IdempotencyKeyReused,
            "the `Idempotency-Key` came with another request in the last 10 minutes",
        );
    }
}

/// The middleware, for `route_layer` (it reads the routed path).
pub async fn answer_once(State(idempotency): State<Idempotency>, request: Request, next: Next) -> Response {
    let applies = request.method() == Method::POST
        && request.headers().contains_key(IDEMPOTENCY_KEY)
        && request.extensions().get::<MatchedPath>().is_some_and(|path| idempotency.commands.contains(path.as_str()));
    if !applies {
        return next.run(request).await;
    }
    remembered(&idempotency.app, request, next).await.unwrap_or_else(IntoResponse::into_response)
}

async fn remembered(app: &AppState, request: Request, next: Next) -> AppResult<Response> {
    let key = key_of(request.headers().get(IDEMPOTENCY_KEY))?;
    let (mut parts, body) = request.into_parts();
    let user = AuthUser::from_request_parts(&mut parts, app).await?.id();
    let body =
        axum::body::to_bytes(body, MAX_BODY).await.map_err(|err| match super::paced_body::came_too_slowly(&err) {
            true => super::paced_body::request_timeout(),
            false => AppError::new(ErrorCode::PayloadTooLarge, "a live command's body is at most 64 KiB"),
        })?;
    let fingerprint = fingerprint(&parts.method, parts.uri.path(), &body);
    let offline = made_offline(&body);
    let request = Request::from_parts(parts, Body::from(body));

    let deadline = tokio::time::Instant::now() + WAIT_FOR_FIRST;
    loop {
        let now = Utc::now();
        let kept_until = offline.then(|| now + KEEP_OFFLINE);
        if claim(&app.db, user, &key, &fingerprint, now, kept_until).await? {
            return first_answer(app, user, key, request, next).await;
        }
        // Gone between the claim and the read: expired, or let go after a `429`.
        let Some(first) = find(&app.db, user, &key, now).await? else { continue };
        if first.fingerprint != fingerprint {
            // The request itself is well formed: it conflicts with what the key already means.
            return Err(AppError::new(
                ErrorCode::IdempotencyKeyReused,
                "this Idempotency-Key was sent with another request in the last 10 minutes; use a new key for a new command",
            ));
        }
        if let Some(answer) = replay(&first) {
            return Ok(answer);
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(AppError::Internal(anyhow::anyhow!(
                "the first request with this Idempotency-Key never ended (its node stopped?); read the live state for its effect"
            )));
        }
        tokio::time::sleep(POLL_EVERY).await;
    }
}

/// Runs the command for the request that claimed the key and records its answer. The run is
/// a task of its own: the actor applies a command whether or not the caller still listens,
/// and its answer must be there for the retry. An answer that did nothing lets the key go
/// instead ([`did_nothing`]), behind the answer's back: the database may be what is down.
async fn first_answer(app: &AppState, user: Uuid, key: String, request: Request, next: Next) -> AppResult<Response> {
    let db = app.db.clone();
    // The task stays in the request's span, so the command's trace goes on through it.
    let run = tokio::spawn(
        async move {
            let (parts, body) = next.run(request).await.into_parts();
            let body = axum::body::to_bytes(body, usize::MAX).await.unwrap_or_default();
            if did_nothing(parts.status) {
                tokio::spawn(async move { let_go(&db, user, &key).await });
            } else if let Err(err) = record(&db, user, &key, parts.status, &body).await {
                tracing::error!(error = %err, "could not record the answer of an idempotent command");
            }
            Response::from_parts(parts, Body::from(body))
        }
        .in_current_span(),
    );
    run.await.map_err(|err| AppError::Internal(anyhow::anyhow!("an idempotent command's task failed: {err}")))
}

/// Whether an answer says the command was not run, so a retry with the same key must run it:
/// `429` (the engine was too busy to take it) and `503` (the database was out of reach).
pub fn did_nothing(status: StatusCode) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS || status == StatusCode::SERVICE_UNAVAILABLE
}

/// How long a key whose command did nothing is tried to be let go: a claim left behind would
/// hold the retry for [`WAIT_FOR_FIRST`] and then fail it.
const LET_GO_FOR: Duration = Duration::from_secs(60);
const LET_GO_AGAIN_AFTER: Duration = Duration::from_secs(1);

/// Forgets the claim of `(user, key)`, trying again while the database does not answer. A
/// retry that comes meanwhile waits for it, then runs.
async fn let_go(db: &impl ConnectionTrait, user: Uuid, key: &str) {
    let deadline = tokio::time::Instant::now() + LET_GO_FOR;
    loop {
        let forgotten = idempotency_keys::Entity::delete_many()
            .filter(idempotency_keys::Column::UserId.eq(user))
            .filter(idempotency_keys::Column::Key.eq(key))
            .exec(db)
            .await;
        match forgotten {
            Ok(_) => return,
            Err(err) if tokio::time::Instant::now() >= deadline => {
                tracing::error!(error = %err, "could not let go of the Idempotency-Key of a command that did nothing");
                return;
            }
            Err(_) => tokio::time::sleep(LET_GO_AGAIN_AFTER).await,
        }
    }
}

/// The key as sent: 1 to 255 visible ASCII characters.
fn key_of(header: Option<&HeaderValue>) -> AppResult<String> {
    let key = header.and_then(|value| value.to_str().ok()).unwrap_or_default();
    if !is_key(key) {
        return Err(AppError::invalid_field("Idempotency-Key", "must be 1 to 255 visible ASCII characters"));
    }
    Ok(key.to_owned())
}

/// Whether `key` may be a key: 1 to 255 visible ASCII characters.
pub fn is_key(key: &str) -> bool {
    !key.is_empty() && key.len() <= MAX_KEY_LEN && key.bytes().all(|byte| byte.is_ascii_graphic())
}

/// What makes two requests the same command: method, path (with the tournament) and body.
fn fingerprint(method: &Method, path: &str, body: &[u8]) -> String {
    let mut digest = Sha256::new();
    digest.update(method.as_str());
    digest.update([0]);
    digest.update(path);
    digest.update([0]);
    digest.update(body);
    hex::encode(digest.finalize())
}

/// Whether a command's body says it was made offline (it states `occurredAt`).
fn made_offline(body: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(body)
        .is_ok_and(|body| body.get("occurredAt").is_some_and(|at| !at.is_null()))
}

/// Claims `(user, key)` for a first request: true when this call made the claim. Expired
/// keys of everyone are forgotten first, so an old key starts afresh.
async fn claim(
    db: &impl ConnectionTrait,
    user: Uuid,
    key: &str,
    fingerprint: &str,
    now: DateTime<Utc>,
    kept_until: Option<DateTime<Utc>>,
) -> AppResult<bool> {
    let inserted = claim_all(db, user, &[key.to_owned()], fingerprint, now, kept_until).await?;
    Ok(inserted == 1)
}

/// Claims each of `keys` of `user` not claimed yet, for one request (`fingerprint`), after
/// forgetting the expired keys of everyone: how many it claimed.
pub async fn claim_all(
    db: &impl ConnectionTrait,
    user: Uuid,
    keys: &[String],
    fingerprint: &str,
    now: DateTime<Utc>,
    kept_until: Option<DateTime<Utc>>,
) -> AppResult<u64> {
    idempotency_keys::Entity::delete_many()
        .filter(idempotency_keys::Column::CreatedAt.lte(now - KEEP))
        .filter(idempotency_keys::Column::KeptUntil.is_null().or(idempotency_keys::Column::KeptUntil.lte(now)))
        .exec(db)
        .await?;
    let rows = keys.iter().map(|key| idempotency_keys::ActiveModel {
        user_id: Set(user),
        key: Set(key.clone()),
        fingerprint: Set(fingerprint.to_owned()),
        status_code: Set(None),
        response_body: Set(None),
        created_at: Set(now),
        finished_at: Set(None),
        kept_until: Set(kept_until),
    });
    let inserted = idempotency_keys::Entity::insert_many(rows)
        .on_conflict(
            OnConflict::columns([idempotency_keys::Column::UserId, idempotency_keys::Column::Key])
                .do_nothing()
                .to_owned(),
        )
        .exec_without_returning(db)
        .await?;
    Ok(inserted)
}

/// Whether a claim made at `now` or before still holds.
fn unexpired(first: &idempotency_keys::Model, now: DateTime<Utc>) -> bool {
    first.created_at > now - KEEP || first.kept_until.is_some_and(|until| until > now)
}

/// The unexpired claim of `(user, key)`.
async fn find(
    db: &impl ConnectionTrait,
    user: Uuid,
    key: &str,
    now: DateTime<Utc>,
) -> AppResult<Option<idempotency_keys::Model>> {
    Ok(idempotency_keys::Entity::find_by_id((user, key.to_owned()))
        .one(db)
        .await?
        .filter(|first| unexpired(first, now)))
}

/// The unexpired claims of `user` among `keys`.
pub async fn find_all(
    db: &impl ConnectionTrait,
    user: Uuid,
    keys: &[String],
    now: DateTime<Utc>,
) -> AppResult<Vec<idempotency_keys::Model>> {
    let mut found = Vec::with_capacity(keys.len());
    for chunk in keys.chunks(crate::db::IDS_PER_STATEMENT) {
        found.extend(
            idempotency_keys::Entity::find()
                .filter(idempotency_keys::Column::UserId.eq(user))
                .filter(idempotency_keys::Column::Key.is_in(chunk.iter().cloned()))
                .all(db)
                .await?
                .into_iter()
                .filter(|first| unexpired(first, now)),
        );
    }
    Ok(found)
}

/// Keeps the first answers of several keys of `user` at once: `(key, status, body)`.
pub async fn record_all(
    db: &impl ConnectionTrait,
    user: Uuid,
    answers: &[(String, StatusCode, String)],
    fingerprint: &str,
    now: DateTime<Utc>,
    kept_until: Option<DateTime<Utc>>,
) -> AppResult<()> {
    if answers.is_empty() {
        return Ok(());
    }
    let rows = answers.iter().map(|(key, status, body)| idempotency_keys::ActiveModel {
        user_id: Set(user),
        key: Set(key.clone()),
        fingerprint: Set(fingerprint.to_owned()),
        status_code: Set(Some(i32::from(status.as_u16()))),
        response_body: Set(Some(body.clone())),
        created_at: Set(now),
        finished_at: Set(Some(Utc::now())),
        kept_until: Set(kept_until),
    });
    let columns = [
        idempotency_keys::Column::StatusCode,
        idempotency_keys::Column::ResponseBody,
        idempotency_keys::Column::FinishedAt,
    ];
    idempotency_keys::Entity::insert_many(rows)
        .on_conflict(
            OnConflict::columns([idempotency_keys::Column::UserId, idempotency_keys::Column::Key])
                .update_columns(columns)
                .to_owned(),
        )
        .exec_without_returning(db)
        .await?;
    Ok(())
}

/// Forgets the claims of `keys` of `user` whose commands did nothing, so they may run again.
pub async fn let_go_all(db: &impl ConnectionTrait, user: Uuid, keys: &[String]) -> AppResult<()> {
    for chunk in keys.chunks(crate::db::IDS_PER_STATEMENT) {
        idempotency_keys::Entity::delete_many()
            .filter(idempotency_keys::Column::UserId.eq(user))
            .filter(idempotency_keys::Column::Key.is_in(chunk.iter().cloned()))
            .exec(db)
            .await?;
    }
    Ok(())
}

/// Keeps the first answer (of a command that ran, or was refused by a rule).
async fn record(db: &impl ConnectionTrait, user: Uuid, key: &str, status: StatusCode, body: &Bytes) -> AppResult<()> {
    idempotency_keys::Entity::update_many()
        .col_expr(idempotency_keys::Column::StatusCode, Expr::value(i32::from(status.as_u16())))
        .col_expr(idempotency_keys::Column::ResponseBody, Expr::value(String::from_utf8_lossy(body).into_owned()))
        .col_expr(idempotency_keys::Column::FinishedAt, Expr::value(Utc::now()))
        .filter(idempotency_keys::Column::UserId.eq(user))
        .filter(idempotency_keys::Column::Key.eq(key))
        .exec(db)
        .await?;
    Ok(())
}

/// The first answer again, when it has ended.
fn replay(first: &idempotency_keys::Model) -> Option<Response> {
    let status = StatusCode::from_u16(u16::try_from(first.status_code?).ok()?).ok()?;
    let body = first.response_body.clone().unwrap_or_default();
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    Some(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_one_to_255_visible_ascii_characters() {
        let key = |text: &str| key_of(Some(&HeaderValue::from_str(text).expect("a header value")));
        assert_eq!(
            key("0b7c3a6e-5b1f-4a8e-9d7e-3f2a1c0b9e8d").ok().as_deref(),
            Some("0b7c3a6e-5b1f-4a8e-9d7e-3f2a1c0b9e8d")
        );
        assert!(key(&"k".repeat(255)).is_ok());
        for bad in ["", "two words", &"k".repeat(256), "tab\there"] {
            let refused = key(bad).err().map(|err| err.code());
            assert_eq!(refused, Some(ErrorCode::ValidationError), "{bad:?}");
        }
        assert_eq!(key_of(None).err().map(|err| err.code()), Some(ErrorCode::ValidationError));
    }

    #[test]
    fn the_same_command_has_one_fingerprint_and_another_another() {
        let path = "/api/v1/tournaments/7/eliminate";
        let one = fingerprint(&Method::POST, path, br#"{"registrationId":"a"}"#);
        assert_eq!(one, fingerprint(&Method::POST, path, br#"{"registrationId":"a"}"#));
        assert_ne!(one, fingerprint(&Method::POST, path, br#"{"registrationId":"b"}"#));
        assert_ne!(one, fingerprint(&Method::POST, "/api/v1/tournaments/8/eliminate", br#"{"registrationId":"a"}"#));
        // The separators keep a path and a body from running into each other.
        assert_ne!(fingerprint(&Method::POST, "/a", b"bc"), fingerprint(&Method::POST, "/ab", b"c"));
    }

    #[test]
    fn a_body_stating_its_moment_is_a_command_made_offline() {
        assert!(made_offline(br#"{"occurredAt":"2026-11-28T21:30:00Z"}"#));
        assert!(made_offline(br#"{"direction":"next","occurredAt":"2026-11-28T21:30:00Z"}"#));
        assert!(!made_offline(br#"{"occurredAt":null}"#));
        assert!(!made_offline(br#"{"direction":"next"}"#));
        assert!(!made_offline(b""));
    }

    #[test]
    fn a_key_holds_ten_minutes_or_until_it_is_kept() {
        let now = Utc::now();
        let first = |created_ago: i64, kept_for: Option<i64>| idempotency_keys::Model {
            user_id: Uuid::nil(),
            key: "k".to_owned(),
            fingerprint: String::new(),
            status_code: Some(200),
            response_body: None,
            created_at: now - chrono::Duration::minutes(created_ago),
            finished_at: None,
            kept_until: kept_for.map(|minutes| now + chrono::Duration::minutes(minutes)),
        };
        assert!(unexpired(&first(9, None), now));
        assert!(!unexpired(&first(10, None), now));
        assert!(unexpired(&first(300, Some(1)), now), "a command made offline is kept longer");
        assert!(!unexpired(&first(300, Some(0)), now));
    }

    #[test]
    fn a_replay_carries_the_first_status_and_body() {
        let first = idempotency_keys::Model {
            user_id: Uuid::nil(),
            key: "k".to_owned(),
            fingerprint: String::new(),
            status_code: Some(409),
            response_body: Some(r#"{"error":{"code":"ALREADY_ELIMINATED","message":"m"}}"#.to_owned()),
            created_at: Utc::now(),
            finished_at: Some(Utc::now()),
            kept_until: None,
        };
        let response = replay(&first).expect("an ended answer");
        assert_eq!(response.status(), StatusCode::CONFLICT);
        assert_eq!(response.headers().get(IDEMPOTENT_REPLAYED).map(HeaderValue::as_bytes), Some(&b"true"[..]));
        let running = idempotency_keys::Model { status_code: None, ..first };
        assert!(replay(&running).is_none());
    }
}
