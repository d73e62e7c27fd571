//! Liveness and readiness: `GET /api/v1/health` answers `200` while the process does, and
//! reports whether the database (and Redis, when configured) respond; `GET /ready`, at the bare
//! origin, is `503` while one does not, or once this node takes no new work (from the start
//! of a graceful shutdown, so a load balancer sends no more).

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::Json;
use crate::app::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(check_health))
}

/// `GET /ready`, outside the API (an operations endpoint, like `/metrics`).
pub fn ready_router(state: AppState) -> axum::Router {
    axum::Router::new().route("/ready", get(check_ready)).with_state(state)
}

/// Whether this node should be sent work.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Readiness {
    /// `ready` or `not_ready`.
    pub status: &'static str,
    pub db: &'static str,
    pub redis: &'static str,
    /// A graceful shutdown has begun: the node finishes what it has and takes nothing new.
    pub shutting_down: bool,
}

/// `200` while the database (and Redis, when configured) answer and no shutdown has begun,
/// else `503`.
async fn check_ready(State(app): State<AppState>) -> (StatusCode, Json<Readiness>) {
    let (db, redis) = probe(&app).await;
    let shutting_down = app.shutdown.is_cancelled();
    let ready = db == "ok" && redis != "error" && !shutting_down;
    let status = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, Json(Readiness { status: if ready { "ready" } else { "not_ready" }, db, redis, shutting_down }))
}

#[derive(Serialize, ToSchema)]
pub struct Health {
    /// `ok` when every configured dependency answers, else `degraded`.
    pub status: &'static str,
    /// `ok` or `error`.
    pub db: &'static str,
    /// `ok`, `error`, or `off` when `REDIS_URL` is unset.
    pub redis: &'static str,
}

const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Liveness check: `200` while the process answers, whatever its dependencies.
///
/// The body says how they are; whether to send this node work is `GET /ready`'s question.
#[utoipa::path(get, path = "/health", tag = "health", responses((status = 200, body = Health)))]
async fn check_health(State(app): State<AppState>) -> Json<Health> {
    let (db, redis) = probe(&app).await;
    let healthy = db == "ok" && redis != "error";
    Json(Health { status: if healthy { "ok" } else { "degraded" }, db, redis })
}

/// The database (`ok` or `error`) and Redis (`ok`, `error`, or `off` when not configured).
async fn probe(app: &AppState) -> (&'static str, &'static str) {
    let db = match tokio::time::timeout(PROBE_TIMEOUT, app.reads.ping()).await {
        Ok(Ok(())) => "ok",
        _ => "error",
    };
    let redis = match &app.redis {
        None => "off",
        Some(client) => match tokio::time::timeout(PROBE_TIMEOUT, ping_redis(client)).await {
            Ok(Ok(())) => "ok",
            _ => "error",
        },
    };
    (db, redis)
}

async fn ping_redis(client: &redis::Client) -> redis::RedisResult<()> {
    let mut connection = client.get_multiplexed_async_connection().await?;
    redis::cmd("PING").query_async::<String>(&mut connection).await.map(drop)
}
