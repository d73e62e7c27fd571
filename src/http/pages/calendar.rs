//! `GET /calendar/<secret>.ics`: a player's calendar feed, for calendar apps to subscribe to
//! (see `crate::domain::players::calendar` for what it shows). Public but unguessable: the secret is the only
//! key, so an unknown or revoked one is a plain `404` that tells nothing more, and fetches
//! spend the public reads' budget per address, so the address space cannot be walked.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, X_CONTENT_TYPE_OPTIONS};
use axum::http::{HeaderName, StatusCode};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use chrono::Utc;

use crate::domain::players::calendar;
use crate::http::limits::{self, AbuseLimits};
use crate::http::state::AppState;
use crate::infra::error::AppResult;

const FEED_EXTENSION: &str = ".ics";

/// The feed is one person's: no shared cache keeps it. Calendar apps poll every hour or more
/// seldom, so five minutes of their own cache costs nobody freshness.
const FEED_HEADERS: [(HeaderName, &str); 3] = [
    (CONTENT_TYPE, "text/calendar; charset=utf-8"),
    (CACHE_CONTROL, "private, max-age=300"),
    (X_CONTENT_TYPE_OPTIONS, "nosniff"),
];
const MISSING_HEADERS: [(HeaderName, &str); 3] =
    [(CONTENT_TYPE, "text/plain; charset=utf-8"), (CACHE_CONTROL, "no-store"), (X_CONTENT_TYPE_OPTIONS, "nosniff")];

pub fn calendar_router(state: AppState, abuse_limits: Arc<AbuseLimits>) -> axum::Router {
    axum::Router::new()
        .route(calendar::FEED_ROUTE, get(feed))
        .route_layer(middleware::from_fn_with_state(abuse_limits, limits::limit_abuse))
        .with_state(state)
}

async fn feed(State(app): State<AppState>, Path(file): Path<String>) -> Response {
    let Some(secret) = file.strip_suffix(FEED_EXTENSION) else { return missing() };
    match render(&app, secret).await {
        Ok(Some(text)) => (FEED_HEADERS, text).into_response(),
        Ok(None) => missing(),
        Err(err) => {
            tracing::error!(error = %err, "could not serve a calendar feed");
            (StatusCode::INTERNAL_SERVER_ERROR, MISSING_HEADERS, "server error").into_response()
        }
    }
}

async fn render(app: &AppState, secret: &str) -> AppResult<Option<String>> {
    let Some(user_id) = calendar::feed_owner(&app.reads, secret).await? else { return Ok(None) };
    let events = calendar::feed_events(&app.reads, user_id, Utc::now()).await?;
    Ok(Some(calendar::render(&events, &app.config.public_url)))
}

fn missing() -> Response {
    (StatusCode::NOT_FOUND, MISSING_HEADERS, "no such calendar").into_response()
}
