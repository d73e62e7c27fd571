//! Liveness and readiness. `GET /api/v1/health` is liveness: it answers `200` while the
//! process answers, whatever its dependencies do (restarting a node helps nothing while
//! PostgreSQL or Redis is down, and drops every socket it holds). `GET /ready`, at the bare
//! origin, is readiness: `503` only when this node cannot serve its clients, because its
//! database does not answer or a graceful shutdown has begun; without Redis it still serves
//! its own clients (degraded). Both read the dependencies' state as last found in the
//! background ([`crate::db_watch`], [`crate::bus::Link`]), so a hanging dependency never
//! makes a probe hang.

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
    /// `ready`; `degraded` when it serves but Redis is down (its changes reach only its own
    /// watchers until Redis is back); `not_ready`.
    pub status: &'static str,
    pub db: &'static str,
    pub redis: &'static str,
    /// A graceful shutdown has begun: the node finishes what it has and takes nothing new.
    pub shutting_down: bool,
}

/// `200` while the database answers and no shutdown has begun, else `503`.
async fn check_ready(State(app): State<AppState>) -> (StatusCode, Json<Readiness>) {
    let Dependencies { db, redis } = Dependencies::of(&app);
    let shutting_down = app.shutdown.is_cancelled();
    let ready = db == OK && !shutting_down;
    let (status, word) = match (ready, redis) {
        (false, _) => (StatusCode::SERVICE_UNAVAILABLE, "not_ready"),
        (true, ERROR) => (StatusCode::OK, "degraded"),
        (true, _) => (StatusCode::OK, "ready"),
    };
    (status, Json(Readiness { status: word, db, redis, shutting_down }))
}

#[derive(Serialize, ToSchema)]
pub struct Health {
    /// `ok` when every configured dependency answers, else `degraded`; the process answers
    /// either way.
    pub status: &'static str,
    /// `ok` or `error`.
    pub db: &'static str,
    /// `ok`, `error`, or `off` when `REDIS_URL` is unset.
    pub redis: &'static str,
}

/// Liveness: `200` while the process answers; the body says which dependency is down.
#[utoipa::path(get, path = "/health", tag = "health", responses((status = 200, body = Health)))]
async fn check_health(State(app): State<AppState>) -> Json<Health> {
    let Dependencies { db, redis } = Dependencies::of(&app);
    let status = if db == OK && redis != ERROR { "ok" } else { "degraded" };
    Json(Health { status, db, redis })
}

const OK: &str = "ok";
const ERROR: &str = "error";

/// The dependencies as last found: the database (`ok` or `error`) and Redis (`ok`, `error`,
/// or `off` when not configured).
struct Dependencies {
    db: &'static str,
    redis: &'static str,
}

impl Dependencies {
    fn of(app: &AppState) -> Self {
        let word = |up: bool| if up { OK } else { ERROR };
        Self { db: word(app.db_watch.is_up()), redis: app.link.as_ref().map_or("off", |link| word(link.is_up())) }
    }
}
