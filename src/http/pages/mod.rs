//! Pages for browsers at the bare origin, outside the API and its contract: the venue screen,
//! the public tournament page behind share links (and the app-link files that let the apps
//! open those links instead), the club's printable pages, players' calendar feeds, and the
//! page that deletes an account without the app.

pub mod account_deletion;
pub mod app_links;
pub mod calendar;
pub mod language;
pub mod print;
pub mod screen;
pub mod share;

use axum::http::HeaderName;
use axum::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, X_CONTENT_TYPE_OPTIONS};
use uuid::Uuid;

use crate::http::state::AppState;

/// Every page: fetched again each time (it is small; its data changes), nothing from another
/// host, no script but the page's own.
const PAGE_HEADERS: [(HeaderName, &str); 3] = [
    (CACHE_CONTROL, "no-cache"),
    (
        CONTENT_SECURITY_POLICY,
        "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
    (X_CONTENT_TYPE_OPTIONS, "nosniff"),
];

/// The look the pages people read share (the share page, the deletion page), before each
/// page's own: dark felt and light type, one column of readable width, on a phone as well.
const PAGE_STYLE: &str = "body{margin:0;font-family:'DejaVu Sans',Roboto,Arial,sans-serif;background:#0b1a12;color:#f4f1e8}\
main{max-width:42rem;margin:0 auto;padding:1.2rem}h1{font-size:1.7rem;margin:.2rem 0}.muted{color:#9fb3a6}\
section{background:rgba(255,255,255,.06);border-radius:.6rem;padding:.8rem 1rem;margin:1rem 0}\
h2{font-size:1.1rem;color:#9fb3a6;margin:0 0 .4rem}a{color:#f2c14e}";

async fn tournament_exists(app: &AppState, id: Uuid) -> bool {
    matches!(app.known_tournaments.exists(id).await, Ok(true))
}
