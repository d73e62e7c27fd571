//! The nodes' own door: `POST /internal/live/{tournamentId}`, where another node hands this
//! one a command of a tournament it runs ([`crate::live::forward`]). Not part of the API: it
//! answers only callers holding the nodes' key, and the load balancer does not route it.
//!
//! The key is checked before anything of the request is read, so an outsider learns nothing of
//! the protocol from its refusals; and a single node (no `REDIS_URL`), which no other node
//! calls, has no such door at all.

use axum::extract::{Path, Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use uuid::Uuid;

use crate::app::AppState;
use crate::error::{AppError, AppResult, ErrorCode};
use crate::http::extract::Json;
use crate::live::forward::{Answered, Handed, INTERNAL_PATH, NODE_KEY, is_node_key, node_key};

pub fn internal_router(state: AppState) -> axum::Router {
    if state.config.redis_url.is_none() {
        return axum::Router::new();
    }
    axum::Router::new()
        .route(INTERNAL_PATH, post(run_handed))
        .route_layer(middleware::from_fn_with_state(state.clone(), only_nodes))
        .with_state(state)
}

/// Refuses (`403`) a caller without the nodes' key, before its body is read.
async fn only_nodes(State(app): State<AppState>, request: Request, next: Next) -> Response {
    let presented = request.headers().get(NODE_KEY).and_then(|value| value.to_str().ok()).unwrap_or_default();
    if !is_node_key(presented, &node_key(app.config.jwt_secret.expose())) {
        return AppError::new(ErrorCode::Forbidden, "only the nodes of this service call here").into_response();
    }
    next.run(request).await
}

/// Runs the handed work here, without handing it on: a node that no longer runs the
/// tournament says so, and the caller asks again who does.
async fn run_handed(
    State(app): State<AppState>,
    Path(tournament_id): Path<Uuid>,
    Json(work): Json<Handed>,
) -> AppResult<axum::Json<Answered>> {
    Ok(axum::Json(Answered::of(app.live.here(tournament_id, work).await)))
}
