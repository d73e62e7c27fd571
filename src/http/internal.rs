//! The nodes' own door: `POST /internal/live/{tournamentId}`, where another node hands this
//! one a command of a tournament it runs ([`crate::live::forward`]). Not part of the API: it
//! answers only callers holding the nodes' key, and the load balancer does not route it.

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::routing::post;
use uuid::Uuid;

use crate::app::AppState;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::http::extract::Json;
use crate::live::forward::{Answered, Handed, INTERNAL_PATH, NODE_KEY, is_node_key, node_key};

pub fn internal_router(state: AppState) -> axum::Router {
    axum::Router::new().route(INTERNAL_PATH, post(run_handed)).with_state(state)
}

/// Runs the handed work here, without handing it on: a node that no longer runs the
/// tournament says so, and the caller asks again who does.
async fn run_handed(
    State(app): State<AppState>,
    Path(tournament_id): Path<Uuid>,
    headers: HeaderMap,
    Json(work): Json<Handed>,
) -> AppResult<axum::Json<Answered>> {
    let presented = headers.get(NODE_KEY).and_then(|value| value.to_str().ok()).unwrap_or_default();
    if !is_node_key(presented, &node_key(app.config.jwt_secret.expose())) {
        return Err(AppError::new(ErrorCode::Forbidden, "only the nodes of this service call here"));
    }
    Ok(axum::Json(Answered::of(app.live.here(tournament_id, work).await)))
}
