//! `Idempotency-Key` on the live commands: a caller that did not hear the answer (a timeout,
//! a cut connection) sends the command again with the same key, and within ten minutes (six
//! hours for a command made offline) the same account gets what the command came to the first
//! time instead of a second change.
//!
//! The key is not claimed here: it travels with the command to the tournament's actor, which
//! keeps it in the command's own transaction ([`crate::domain::live::command_keys`]) and reads it before
//! deciding a command sent again. This middleware checks the header, hands the key to the
//! command through a task-local, and marks an answer that is the record of an earlier sending.
//!
//! Which operations take the header is said where each is declared: its `#[utoipa::path]`
//! carries the extension [`EXTENSION`] (`extensions(("x-idempotency-key" = json!(true)))`),
//! which the published contract shows too. Only a handler that hands the key to its command
//! (`command_actor` in `live.rs`, a single command) may carry it: the header is then checked,
//! documented and kept. `POST …/replay` does not: each command of its queue carries its own key.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderName, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use utoipa::openapi::path::{ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{OpenApi as OpenApiDoc, Required};

use super::api_prefix::API_PREFIX;
use crate::infra::error::{AppError, AppResult, ErrorCode};

pub const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");
/// Set on an answer that is the record of an earlier sending of the command.
pub const IDEMPOTENT_REPLAYED: HeaderName = HeaderName::from_static("idempotent-replayed");
/// The longest a key may be: room for a UUID or a client's own scheme.
const MAX_KEY_LEN: usize = 255;
/// What [`MAX_KEY_LEN`]'s characters may be, as the contract's pattern.
const VISIBLE_ASCII: &str = "^[!-~]+$";
/// The extension that marks an operation taking the header: a live command.
pub const EXTENSION: &str = "x-idempotency-key";

/// The key a live command was sent with, and whether its answer turned out to be a replay.
struct SentKey {
    key: String,
    replayed: AtomicBool,
}

tokio::task_local! {
    /// The key of the live command the current request runs, set by [`answer_once`].
    static SENT_KEY: Arc<SentKey>;
}

/// The `Idempotency-Key` the live command of the current request was sent with.
pub fn sent_key() -> Option<String> {
    SENT_KEY.try_with(|sent| sent.key.clone()).ok()
}

/// Marks the current request's answer as the record of an earlier sending of its command.
pub fn mark_replayed() {
    let _ = SENT_KEY.try_with(|sent| sent.replayed.store(true, Ordering::Relaxed));
}

/// The state of the middleware: the paths of the live commands.
#[derive(Clone)]
pub struct Idempotency {
    commands: Arc<HashSet<String>>,
}

impl Idempotency {
    pub fn new(contract: &OpenApiDoc) -> Self {
        Self { commands: Arc::new(commands(contract)) }
    }
}

/// The full paths of the live commands: the `POST` operations that carry [`EXTENSION`].
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
    operation.extensions.as_ref().is_some_and(|extensions| extensions.contains_key(EXTENSION))
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
                 Kept with the command in the transaction that applies it: sent again by the same account \
                 within 10 minutes (6 hours for a command with `occurredAt`), however the first request \
                 ended, the command is not applied again and what it came to comes back with \
                 `Idempotent-Replayed: true`: a refusal as it was, a success with the state now. A key \
                 with no record was never applied: the command runs. The key is bound to the tournament \
                 and the command (not to `occurredAt`): with another command or tournament, \
                 `409 IDEMPOTENCY_KEY_REUSED`, nothing applied.",
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
            "the `Idempotency-Key` was kept for another command or tournament",
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
    let key = match key_of(request.headers().get(IDEMPOTENCY_KEY)) {
        Ok(key) => key,
        Err(err) => return err.into_response(),
    };
    let sent = Arc::new(SentKey { key, replayed: AtomicBool::new(false) });
    let mut response = SENT_KEY.scope(sent.clone(), next.run(request)).await;
    if sent.replayed.load(Ordering::Relaxed) {
        response.headers_mut().insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
    }
    response
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
}
