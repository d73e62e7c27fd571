//! Liveness and readiness. `GET /api/v1/health` is liveness: it answers `200` while the
//! process answers, whatever its dependencies do (restarting a node helps nothing while
//! PostgreSQL or Redis is down, and drops every socket it holds). `GET /ready`, at the bare
//! origin, is readiness: `503` only when the balancer does better sending this node's clients
//! elsewhere: a graceful shutdown has begun, or PostgreSQL answers another node and not this
//! one. An outage every node shares (PostgreSQL down for all; or for this one while Redis,
//! where the nodes compare notes, is down too) leaves the node in: it still serves the live
//! sockets and the reads it keeps in memory, and answers what needs the database with the
//! contract's `503` and `Retry-After`, where a balancer with no node left would answer its own
//! bare error to everyone. Without Redis it still serves its own clients (degraded). Both read
//! the dependencies' state as last found in the background ([`crate::infra::db_watch`],
//! [`crate::infra::bus::Link`]), so a hanging dependency never makes a probe hang.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::Json;
use crate::http::state::AppState;

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
    /// `ready`; `degraded` when it serves but a dependency is down (Redis: its changes reach
    /// only its own watchers until it is back; PostgreSQL, for every node: what needs it is
    /// `503`); `not_ready`.
    pub status: &'static str,
    pub db: &'static str,
    pub redis: &'static str,
    /// PostgreSQL does not answer this node while it answers another: the trouble is this
    /// node's, and the others serve its clients better.
    pub db_answers_elsewhere: bool,
    /// A graceful shutdown has begun: the node finishes what it has and takes nothing new.
    pub shutting_down: bool,
}

/// `503` from the start of a shutdown, and while PostgreSQL answers another node and not this
/// one; else `200`.
async fn check_ready(State(app): State<AppState>) -> (StatusCode, Json<Readiness>) {
    let Dependencies { db, redis } = Dependencies::of(&app);
    let shutting_down = app.shutdown.is_cancelled();
    let db_answers_elsewhere = app.db_watch.answers_elsewhere();
    let ready = !shutting_down && !db_answers_elsewhere;
    let (status, word) = match (ready, db, redis) {
        (false, _, _) => (StatusCode::SERVICE_UNAVAILABLE, "not_ready"),
        (true, ERROR, _) | (true, _, ERROR) => (StatusCode::OK, "degraded"),
        (true, _, _) => (StatusCode::OK, "ready"),
    };
    (status, Json(Readiness { status: word, db, redis, db_answers_elsewhere, shutting_down }))
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

#[cfg(test)]
mod tests {
    #[test]
    fn the_nodes_look_at_each_other_on_the_health_route() {
        assert_eq!(
            crate::domain::live::probe::LIVENESS_PATH,
            format!("{}/health", super::super::api_prefix::API_PREFIX)
        );
    }
}
