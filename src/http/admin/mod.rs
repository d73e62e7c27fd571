//! The platform's own routes under `/admin`: its staff and their roles, moderation and
//! merging of accounts, the dashboard, broadcasts, the rating settings, and the content the
//! apps show (cities, level tiers, promo slides, tournaments' presentation).

mod admins;
mod broadcasts;
mod cities;
mod content;
mod dashboard;
mod rating_config;
mod slides;
mod tiers;
mod tournaments;
mod users;

use utoipa_axum::router::OpenApiRouter;

use crate::http::state::AppState;

/// Every platform route, with its OpenAPI description.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(admins::router())
        .merge(users::router())
        .merge(dashboard::router())
        .merge(broadcasts::router())
        .merge(rating_config::router())
        .merge(tournaments::router())
        .merge(cities::router())
        .merge(tiers::router())
        .merge(slides::router())
}
