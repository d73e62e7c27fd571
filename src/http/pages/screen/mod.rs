//! `GET /screen/{tournamentId}`: the tournament clock for the venue's TV or projector, public
//! like `GET …/live`. The page, its style, its script and its chime are built into the binary
//! (venues are often offline-ish: nothing comes from another host). The script polls the
//! public live state with its `ETag` every second and counts the clock down itself, moving on
//! through levels and breaks as the server's auto-advance does, so it keeps the time through
//! a lost connection (see `screen.js` beside this file). Decided: polling the public snapshot
//! rather than a Socket.IO screen token: a TV needs no account or token to expire, an
//! unchanged state costs a `304`, and a poll that fails is the plain signal of a lost
//! connection. The room's small events (`level`, `announcement`) come to it as Server-Sent
//! Events (`/screen/{id}/events`): the chime plays on `level`.

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Path, State};
use axum::http::HeaderMap;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;
use uuid::Uuid;

use super::{PAGE_HEADERS, tournament_exists};
use crate::domain::tournaments::announcements::latest;
use crate::http::state::AppState;
use crate::infra::client_address::client_key;

const PAGE: &str = include_str!("index.html");
const STYLE: &str = include_str!("screen.css");
const SCRIPT: &str = include_str!("screen.js");
const CHIME: &[u8] = include_bytes!("chime.wav");

pub fn screen_router(state: AppState) -> axum::Router {
    axum::Router::new()
        .route("/screen/{id}", get(page))
        .route("/screen/{id}/announcement", get(announcement))
        .route("/screen/{id}/events", get(events))
        .route("/screen/assets/{file}", get(asset))
        .with_state(state)
}

/// How long the screen shows an announcement.
const ANNOUNCEMENT_SHOWN_FOR: chrono::Duration = chrono::Duration::minutes(5);

/// The club's latest announcement while the screen shows it (five minutes), polled by the
/// page beside the live state: `200 {text, createdAt, serverTime}`, or `204` when there is
/// none to show. Public like the screen itself (the room hears it anyway).
async fn announcement(State(app): State<AppState>, Path(id): Path<String>) -> Response {
    let Ok(id) = Uuid::parse_str(&id) else { return StatusCode::NOT_FOUND.into_response() };
    let now = chrono::Utc::now();
    let no_store = [(CACHE_CONTROL, HeaderValue::from_static("no-store"))];
    match latest(&app.reads, id).await {
        Ok(Some(shown)) if now - shown.created_at < ANNOUNCEMENT_SHOWN_FOR => {
            let body = json!({"text": shown.text, "createdAt": shown.created_at, "serverTime": now});
            (no_store, axum::Json(body)).into_response()
        }
        Ok(_) => (StatusCode::NO_CONTENT, no_store).into_response(),
        Err(err) => err.into_response(),
    }
}

/// The page; `404` (with the same page, which says so) for a tournament that does not exist.
async fn page(State(app): State<AppState>, Path(id): Path<String>) -> Response {
    let status = match Uuid::parse_str(&id) {
        Ok(id) if tournament_exists(&app, id).await => StatusCode::OK,
        _ => StatusCode::NOT_FOUND,
    };
    let html = [(CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"))];
    (status, PAGE_HEADERS, html, PAGE).into_response()
}

/// How often an idle event stream says it is still there (proxies close silent ones).
const KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(15);

/// The tournament's room events as Server-Sent Events, public like the page: `level` (a
/// level or a break began: the screen's chime) and `announcement`, each with the payload the
/// room's Socket.IO event carries. A screen that fell behind misses the oldest; it polls the
/// state and the announcement anyway.
async fn events(
    State(app): State<AppState>,
    Path(id): Path<String>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request_headers: HeaderMap,
) -> Response {
    let Ok(id) = Uuid::parse_str(&id) else { return StatusCode::NOT_FOUND.into_response() };
    if !tournament_exists(&app, id).await {
        return StatusCode::NOT_FOUND.into_response();
    }
    let client = client_key(peer.ip(), &request_headers, &app.config.limits.trusted_proxies);
    let places = match app.screen_streams.admit(client, id) {
        Ok(places) => places,
        Err(refusal) => {
            app.metrics.refused(refusal.limit);
            return refusal.error.into_response();
        }
    };
    let feed = (app.live_sockets.screens().subscribe(), places);
    let heard = futures_util::stream::unfold(feed, move |(mut feed, places)| async move {
        loop {
            match feed.recv().await {
                Ok(event) if event.tournament_id == id => {
                    let sent = Event::default().event(event.name).data(event.data.as_ref());
                    return Some((Ok::<_, std::convert::Infallible>(sent), (feed, places)));
                }
                Ok(_) | Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => return None,
            }
        }
    });
    let headers = [(CACHE_CONTROL, HeaderValue::from_static("no-store"))];
    (headers, Sse::new(heard).keep_alive(KeepAlive::new().interval(KEEP_ALIVE))).into_response()
}

/// The page's files. They change only with the binary, so browsers keep them for an hour.
async fn asset(Path(file): Path<String>) -> Response {
    let (kind, body): (&'static str, &'static [u8]) = match file.as_str() {
        "screen.css" => ("text/css; charset=utf-8", STYLE.as_bytes()),
        "screen.js" => ("text/javascript; charset=utf-8", SCRIPT.as_bytes()),
        "chime.wav" => ("audio/wav", CHIME),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    let headers = [
        (CONTENT_TYPE, HeaderValue::from_static(kind)),
        (CACHE_CONTROL, HeaderValue::from_static("public, max-age=3600")),
    ];
    (headers, body).into_response()
}
