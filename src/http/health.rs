//! Liveness: `GET /health` answers whether the database (and Redis, when configured) respond.

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::Json;
use crate::app::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(check_health))
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

/// Liveness check; `503` when a dependency does not answer.
#[utoipa::path(get, path = "/health", tag = "health",
    responses((status = 200, body = Health), (status = 503, body = Health)))]
async fn check_health(State(app): State<AppState>) -> (StatusCode, Json<Health>) {
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
    let healthy = db == "ok" && redis != "error";
    let status = if healthy { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, Json(Health { status: if healthy { "ok" } else { "degraded" }, db, redis }))
}

async fn ping_redis(client: &redis::Client) -> redis::RedisResult<()> {
    let mut connection = client.get_multiplexed_async_connection().await?;
    redis::cmd("PING").query_async::<String>(&mut connection).await.map(drop)
}
