//! Public reference data for the apps: cities, level tiers and the promo slides on show now.

use std::collections::HashMap;
use std::hash::Hash;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use chrono::{DateTime, Utc};
use floor_entities::enums::PromoTarget;
use floor_entities::{
    cities, city_translations, level_tier_translations, level_tiers, promo_slide_translations, promo_slides,
};
use sea_orm::ConnectionTrait;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::cached;
use super::views::{ItemList, Localized};
use crate::http::read_cache::Answer;
use crate::http::state::AppState;
use crate::infra::db::find_where_in;
use crate::infra::error::{AppResult, ErrorBody};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_cities))
        .routes(routes!(list_level_tiers))
        .routes(routes!(list_promo_slides))
}

/// A name in one language.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct Name {
    #[schema(
        max_length = 100,
        pattern = "^[\\t\\n\\v\\f\\r ]*[^\\x00-\\x20\\x7F][^\\x00-\\x1F\\x7F]*[\\t\\n\\v\\f\\r ]*$"
    )]
    pub name: String,
}

/// A city players and venues can choose.
#[derive(Serialize, ToSchema)]
pub struct CityView {
    /// Stable key, as `citySlug` elsewhere.
    pub slug: String,
    pub translations: Localized<Name>,
}

/// A band of player levels.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LevelTierView {
    /// Stable key (`fish` … `legend`), as `tier` in profiles.
    pub key: String,
    /// A player is in the tier with the largest `minLevel` not above their level.
    pub min_level: i32,
    /// `#rrggbb`.
    pub color: String,
    pub picture_url: Option<String>,
    pub translations: Localized<Name>,
}

/// Title and subtitle of a slide in one language.
#[derive(Serialize, Deserialize, ToSchema)]
pub struct SlideText {
    #[schema(
        max_length = 200,
        pattern = "^[\\t\\n\\v\\f\\r ]*[^\\x00-\\x20\\x7F][^\\x00-\\x1F\\x7F]*[\\t\\n\\v\\f\\r ]*$"
    )]
    pub title: String,
    #[schema(
        max_length = 300,
        pattern = "^[\\t\\n\\v\\f\\r ]*([^\\x00-\\x20\\x7F][^\\x00-\\x1F\\x7F]*)?[\\t\\n\\v\\f\\r ]*$"
    )]
    pub subtitle: Option<String>,
}

/// What tapping a slide opens: a tournament card (`tournamentId`) or an address (`url`).
#[derive(Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SlideTarget {
    pub kind: PromoTarget,
    pub tournament_id: Option<Uuid>,
    #[schema(max_length = 2048, pattern = "^(https?://[!-.0-Z^-~][!-Z^-~]*|/files/[0-9a-f-]{1,64}\\.(png|jpg|webp))$")]
    pub url: Option<String>,
}

/// A promo slide of the player app's carousel.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromoSlideView {
    pub id: Uuid,
    pub picture_url: String,
    pub target: SlideTarget,
    /// Shown from then on; `null`: no start limit.
    pub starts_at: Option<DateTime<Utc>>,
    /// Shown until then; `null`: no end limit.
    pub ends_at: Option<DateTime<Utc>>,
    pub translations: Localized<SlideText>,
}

/// Active cities in display order.
#[utoipa::path(get, path = "/cities", tag = "reference",
    responses(
        (status = 200, body = ItemList<CityView>),
        (status = 500, description = "INTERNAL_ERROR", body = ErrorBody),
    ))]
async fn list_cities(State(app): State<AppState>, headers: HeaderMap) -> AppResult<Response> {
    cached::answer(&app, &headers, "GET /cities".to_owned(), async {
        let rows = cities::Entity::find()
            .filter(cities::Column::IsActive.eq(true))
            .order_by_asc(cities::Column::SortOrder)
            .order_by_asc(cities::Column::Slug)
            .find_with_related(city_translations::Entity)
            .all(&app.reads)
            .await?;
        Answer::json(&ItemList::new(
            rows.into_iter().map(|(city, translations)| city_view(city.slug, translations)).collect(),
        ))
    })
    .await
}

/// Every level tier, from the lowest level up.
#[utoipa::path(get, path = "/level-tiers", tag = "reference",
    responses(
        (status = 200, body = ItemList<LevelTierView>),
        (status = 500, description = "INTERNAL_ERROR", body = ErrorBody),
    ))]
async fn list_level_tiers(State(app): State<AppState>, headers: HeaderMap) -> AppResult<Response> {
    cached::answer(&app, &headers, "GET /level-tiers".to_owned(), async {
        let rows = level_tiers::Entity::find()
            .order_by_asc(level_tiers::Column::MinLevel)
            .find_with_related(level_tier_translations::Entity)
            .all(&app.reads)
            .await?;
        Answer::json(&ItemList::new(
            rows.into_iter().map(|(tier, translations)| level_tier_view(tier, translations)).collect(),
        ))
    })
    .await
}

/// The slides whose display window holds now, in display order.
#[utoipa::path(get, path = "/promo-slides", tag = "reference",
    responses(
        (status = 200, body = ItemList<PromoSlideView>),
        (status = 500, description = "INTERNAL_ERROR", body = ErrorBody),
    ))]
async fn list_promo_slides(State(app): State<AppState>, headers: HeaderMap) -> AppResult<Response> {
    cached::answer(&app, &headers, "GET /promo-slides".to_owned(), async {
        let now = Utc::now();
        // Few rows: the window is checked here, the same on both databases.
        let all: Vec<promo_slides::Model> = promo_slides::Entity::find()
            .order_by_asc(promo_slides::Column::SortOrder)
            .order_by_asc(promo_slides::Column::CreatedAt)
            .all(&app.reads)
            .await?;
        // The list holds until the next slide comes on or goes off.
        let windows = all.iter().map(|slide| (slide.starts_at, slide.ends_at));
        let holds_for = next_window_edge(windows, now).and_then(|edge| (edge - now).to_std().ok());
        let slides = all.into_iter().filter(|slide| on_show(slide.starts_at, slide.ends_at, now)).collect();
        Answer::json_holding_for(&ItemList::new(promo_slide_views(&app.reads, slides).await?), holds_for)
    })
    .await
}

/// The first start or end of a display window after `now`: when the slides on show change.
fn next_window_edge(
    windows: impl IntoIterator<Item = (Option<DateTime<Utc>>, Option<DateTime<Utc>>)>,
    now: DateTime<Utc>,
) -> Option<DateTime<Utc>> {
    windows.into_iter().flat_map(|(starts_at, ends_at)| [starts_at, ends_at]).flatten().filter(|edge| *edge > now).min()
}

/// The public card of a city.
pub(super) fn city_view(slug: String, translations: Vec<city_translations::Model>) -> CityView {
    CityView { slug, translations: localized(translations.into_iter().map(|t| (t.locale, Name { name: t.name }))) }
}

/// The public card of a level tier.
pub(super) fn level_tier_view(
    tier: level_tiers::Model,
    translations: Vec<level_tier_translations::Model>,
) -> LevelTierView {
    LevelTierView {
        key: tier.key,
        min_level: tier.min_level,
        color: tier.color,
        picture_url: tier.picture_url,
        translations: localized(translations.into_iter().map(|t| (t.locale, Name { name: t.name }))),
    }
}

/// The public cards of `slides`, in their order, with their texts read in one query.
pub(super) async fn promo_slide_views(
    conn: &impl ConnectionTrait,
    slides: Vec<promo_slides::Model>,
) -> AppResult<Vec<PromoSlideView>> {
    let ids: Vec<Uuid> = slides.iter().map(|slide| slide.id).collect();
    let mut texts = group_by(
        find_where_in::<promo_slide_translations::Entity, _>(conn, promo_slide_translations::Column::SlideId, &ids)
            .await?,
        |t| t.slide_id,
    );
    Ok(slides
        .into_iter()
        .map(|slide| PromoSlideView {
            translations: localized(
                texts
                    .remove(&slide.id)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|t| (t.locale, SlideText { title: t.title, subtitle: t.subtitle })),
            ),
            id: slide.id,
            picture_url: slide.picture_url,
            target: SlideTarget {
                kind: slide.target_kind,
                tournament_id: slide.target_tournament_id,
                url: slide.target_url,
            },
            starts_at: slide.starts_at,
            ends_at: slide.ends_at,
        })
        .collect())
}

/// Whether a display window `[starts_at, ends_at)` holds `now`; an open end has no limit.
fn on_show(starts_at: Option<DateTime<Utc>>, ends_at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> bool {
    starts_at.is_none_or(|start| start <= now) && ends_at.is_none_or(|end| now < end)
}

fn localized<T>(translations: impl IntoIterator<Item = (String, T)>) -> Localized<T> {
    let mut localized = Localized::default();
    for (locale, value) in translations {
        localized.set(&locale, value);
    }
    localized
}

fn group_by<K: Eq + Hash, V>(rows: Vec<V>, key: impl Fn(&V) -> K) -> HashMap<K, Vec<V>> {
    let mut groups: HashMap<K, Vec<V>> = HashMap::new();
    for row in rows {
        groups.entry(key(&row)).or_default().push(row);
    }
    groups
}

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use super::*;

    #[test]
    fn a_window_holds_from_its_start_up_to_but_not_at_its_end() {
        let now = Utc::now();
        let hour = Duration::hours(1);
        assert!(on_show(None, None, now), "both ends open");
        assert!(on_show(Some(now - hour), Some(now + hour), now));
        assert!(on_show(Some(now), None, now), "the start is inclusive");
        assert!(!on_show(None, Some(now), now), "the end is exclusive");
        assert!(!on_show(Some(now + hour), None, now), "not yet");
        assert!(!on_show(None, Some(now - hour), now), "over");
    }

    #[test]
    fn the_slides_on_show_hold_until_the_next_window_opens_or_closes() {
        let now = Utc::now();
        let at = |minutes| Some(now + Duration::minutes(minutes));
        assert_eq!(next_window_edge([(None, None)], now), None, "nothing ever changes");
        assert_eq!(next_window_edge([(at(-60), at(30)), (at(10), None)], now), at(10), "one comes on first");
        assert_eq!(next_window_edge([(at(-60), at(5)), (at(10), at(20))], now), at(5), "one goes off first");
        assert_eq!(next_window_edge([(at(-60), at(-5)), (None, Some(now))], now), None, "every edge is past");
    }
}
