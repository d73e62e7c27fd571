//! Pages for browsers at the bare origin, outside the API and its contract: the venue screen,
//! the public tournament page behind share links (and the app-link files that let the apps
//! open those links instead), the club's printable pages, and players' calendar feeds.

pub mod app_links;
pub mod calendar;
pub mod print;
pub mod screen;
pub mod share;

use axum::http::HeaderName;
use axum::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, X_CONTENT_TYPE_OPTIONS};
use floor_entities::tournaments;
use sea_orm::{EntityTrait, QuerySelect};
use uuid::Uuid;

use crate::app::AppState;

/// Every page: fetched again each time (it is small; its data changes), nothing from another
/// host, no script but the page's own.
const PAGE_HEADERS: [(HeaderName, &str); 3] = [
    (CACHE_CONTROL, "no-cache"),
    (
        CONTENT_SECURITY_POLICY,
        "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; form-action 'none'",
    ),
    (X_CONTENT_TYPE_OPTIONS, "nosniff"),
];

async fn tournament_exists(app: &AppState, id: Uuid) -> bool {
    let found: Result<Option<Uuid>, _> = tournaments::Entity::find_by_id(id)
        .select_only()
        .column(tournaments::Column::Id)
        .into_tuple()
        .one(&app.reads)
        .await;
    matches!(found, Ok(Some(_)))
}
