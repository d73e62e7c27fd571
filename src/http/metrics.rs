//! `GET /metrics` at the bare origin (an operations endpoint, not part of the API), and the
//! middleware that counts and times every request of the API by its route.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::app::AppState;
use crate::db;
use crate::metrics::{NodeState, PoolUse};

/// The scrape's content type: OpenMetrics text, which Prometheus reads.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

pub fn metrics_router(state: AppState) -> axum::Router {
    axum::Router::new().route("/metrics", get(scrape)).with_state(state)
}

async fn scrape(State(app): State<AppState>) -> Response {
    let pool = |db: &sea_orm::DatabaseConnection| {
        let (open, idle) = db::pool_use(db);
        PoolUse { open, idle }
    };
    let now = NodeState {
        sockets: app.live_sockets.connected_sockets(),
        live_actors: app.live.actor_count(),
        writer: pool(&app.db),
        readers: db::has_own_readers(&app.config.database_url).then(|| pool(&app.reads)),
        db_up: app.db_watch.is_up(),
        bus_up: app.link.as_ref().map(crate::bus::Link::is_up),
    };
    match app.metrics.render(now) {
        Ok(text) => ([(CONTENT_TYPE, HeaderValue::from_static(OPENMETRICS))], text).into_response(),
        Err(err) => {
            tracing::error!(error = %err, "could not render the metrics");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// The middleware, for `route_layer` (it reads the matched route): one count and one
/// duration per answered request, labelled by the route's pattern, never by its ids.
pub async fn measure_requests(State(app): State<AppState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    // A clone of the matched route is a reference count, not a copy of the text.
    let route = request.extensions().get::<MatchedPath>().cloned();
    if let Some(route) = &route {
        super::request_span::name_by_route(&method, route.as_str());
    }
    let response = next.run(request).await;
    if let Some(route) = route {
        app.metrics.request(method.as_str(), route.as_str(), response.status().as_u16(), started.elapsed());
    }
    response
}
