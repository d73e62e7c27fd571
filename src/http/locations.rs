//! Venues: a club's locations, the public catalogue with its city filter.

use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use floor_entities::locations;
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, QueryOrder, Set};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::{AuthUser, Json, OrganizerAccess, Path, Query, authorize_in_club, club, double_option};
use super::validate::{Problems, active_city, optional_multiline_text, url};
use super::views::ItemList;
use crate::http::state::AppState;
use crate::infra::error::{AppError, AppResult, ErrorBody};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_club_locations, create_location))
        .routes(routes!(get_location, update_location))
        .routes(routes!(list_locations))
}

/// A venue of a club.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocationView {
    pub id: Uuid,
    pub organizer_id: Uuid,
    pub name: String,
    pub city_slug: String,
    pub address: String,
    /// IANA zone name, for showing local start times.
    pub timezone: String,
    pub lat: f64,
    pub lng: f64,
    pub description: Option<String>,
    pub photo_url: Option<String>,
    pub created_at: DateTime<Utc>,
}

impl From<locations::Model> for LocationView {
    fn from(location: locations::Model) -> Self {
        Self {
            id: location.id,
            organizer_id: location.organizer_id,
            name: location.name,
            city_slug: location.city_slug,
            address: location.address,
            timezone: location.timezone,
            lat: location.lat,
            lng: location.lng,
            description: location.description,
            photo_url: location.photo_url,
            created_at: location.created_at,
        }
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewLocation {
    /// 1 to 120 characters.
    #[schema(
        max_length = 120,
        pattern = "^[\\t\\n\\v\\f\\r ]*[^\\x00-\\x20\\x7F][^\\x00-\\x1F\\x7F]*[\\t\\n\\v\\f\\r ]*$"
    )]
    pub name: String,
    /// An active city from `GET /cities`.
    pub city_slug: String,
    /// 1 to 300 characters.
    #[schema(
        max_length = 300,
        pattern = "^[\\t\\n\\v\\f\\r ]*[^\\x00-\\x20\\x7F][^\\x00-\\x1F\\x7F]*[\\t\\n\\v\\f\\r ]*$"
    )]
    pub address: String,
    /// IANA zone name such as `Europe/Moscow`.
    #[schema(max_length = 64, pattern = "^(UTC|[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+)+)$")]
    pub timezone: String,
    /// -90 to 90.
    #[schema(minimum = -90, maximum = 90)]
    pub lat: f64,
    /// -180 to 180.
    #[schema(minimum = -180, maximum = 180)]
    pub lng: f64,
    /// Up to 2000 characters.
    #[schema(
        max_length = 2000,
        pattern = "^[\\t\\n\\v\\f\\r ]*([^\\x00-\\x20\\x7F][^\\x00-\\x08\\x0B\\x0C\\x0E-\\x1F\\x7F]*)?[\\t\\n\\v\\f\\r ]*$"
    )]
    pub description: Option<String>,
    #[schema(max_length = 2048, pattern = "^(https?://[!-.0-Z^-~][!-Z^-~]*|/files/[0-9a-f-]{1,64}\\.(png|jpg|webp))$")]
    pub photo_url: Option<String>,
}

/// Fields to change; an absent field stays, `null` clears an optional one.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocationUpdate {
    #[schema(
        max_length = 120,
        pattern = "^[\\t\\n\\v\\f\\r ]*[^\\x00-\\x20\\x7F][^\\x00-\\x1F\\x7F]*[\\t\\n\\v\\f\\r ]*$"
    )]
    pub name: Option<String>,
    pub city_slug: Option<String>,
    #[schema(
        max_length = 300,
        pattern = "^[\\t\\n\\v\\f\\r ]*[^\\x00-\\x20\\x7F][^\\x00-\\x1F\\x7F]*[\\t\\n\\v\\f\\r ]*$"
    )]
    pub address: Option<String>,
    #[schema(max_length = 64, pattern = "^(UTC|[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+)+)$")]
    pub timezone: Option<String>,
    #[schema(minimum = -90, maximum = 90)]
    pub lat: Option<f64>,
    #[schema(minimum = -180, maximum = 180)]
    pub lng: Option<f64>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>, max_length = 2000, pattern = "^[\\t\\n\\v\\f\\r ]*([^\\x00-\\x20\\x7F][^\\x00-\\x08\\x0B\\x0C\\x0E-\\x1F\\x7F]*)?[\\t\\n\\v\\f\\r ]*$")]
    pub description: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>, max_length = 2048, pattern = "^(https?://[!-.0-Z^-~][!-Z^-~]*|/files/[0-9a-f-]{1,64}\\.(png|jpg|webp))$")]
    pub photo_url: Option<Option<String>>,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CityFilter {
    /// Only venues in this city (a slug).
    pub city: Option<String>,
}

/// Checks an IANA zone name by its form (`Area/Location[/More]` or `UTC`).
fn timezone(problems: &mut Problems, value: &str) -> String {
    let value = value.to_owned();
    let part_ok = |part: &str| {
        !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+'))
    };
    let well_formed = value == "UTC" || (value.contains('/') && value.split('/').all(part_ok));
    if !well_formed || value.len() > 64 {
        problems.add("timezone", "must be an IANA zone name such as Europe/Moscow");
    }
    value
}

fn coordinate(problems: &mut Problems, field: &str, value: f64, bound: f64) -> f64 {
    if !value.is_finite() || value.abs() > bound {
        problems.add(field, format!("must be between -{bound} and {bound}"));
    }
    value
}

/// The venues of a club.
#[utoipa::path(get, path = "/organizers/{id}/locations", tag = "venues", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "organizer")),
    responses(
        (status = 200, body = ItemList<LocationView>),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: club owner or td only", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
    ))]
async fn list_club_locations(
    State(app): State<AppState>,
    access: OrganizerAccess<club::Staff>,
) -> AppResult<Json<ItemList<LocationView>>> {
    let venues = locations::Entity::find()
        .filter(locations::Column::OrganizerId.eq(access.organizer.id))
        .order_by_asc(locations::Column::Name)
        .all(&app.reads)
        .await?;
    Ok(Json(ItemList::new(venues.into_iter().map(LocationView::from).collect())))
}

/// Adds a venue to a club.
#[utoipa::path(post, path = "/organizers/{id}/locations", tag = "venues", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "organizer")), request_body = NewLocation,
    responses(
        (status = 201, body = LocationView),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: club owner only", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
    ))]
async fn create_location(
    State(app): State<AppState>,
    access: OrganizerAccess<club::Owner>,
    Json(body): Json<NewLocation>,
) -> AppResult<(StatusCode, Json<LocationView>)> {
    let mut problems = Problems::default();
    let name = problems.text("name", &body.name, 1, 120);
    active_city(&app.db, &mut problems, "citySlug", &body.city_slug).await?;
    let address = problems.text("address", &body.address, 1, 300);
    let zone = timezone(&mut problems, &body.timezone);
    let lat = coordinate(&mut problems, "lat", body.lat, 90.0);
    let lng = coordinate(&mut problems, "lng", body.lng, 180.0);
    let description = optional_multiline_text(&mut problems, "description", body.description, 0, 2000);
    let photo_url = body.photo_url.map(|link| url(&mut problems, "photoUrl", &link));
    problems.into_result()?;

    let now = Utc::now();
    let location = locations::ActiveModel {
        id: Set(Uuid::now_v7()),
        organizer_id: Set(access.organizer.id),
        name: Set(name),
        city_slug: Set(body.city_slug),
        address: Set(address),
        timezone: Set(zone),
        lat: Set(lat),
        lng: Set(lng),
        description: Set(description),
        photo_url: Set(photo_url),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&app.db)
    .await?;
    Ok((StatusCode::CREATED, Json(location.into())))
}

/// A venue, for everyone.
#[utoipa::path(get, path = "/locations/{id}", tag = "venues",
    params(("id" = Uuid, Path)),
    responses(
        (status = 200, body = LocationView),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
    ))]
async fn get_location(State(app): State<AppState>, Path(id): Path<Uuid>) -> AppResult<Json<LocationView>> {
    let location =
        locations::Entity::find_by_id(id).one(&app.reads).await?.ok_or_else(|| AppError::not_found("location"))?;
    Ok(Json(location.into()))
}

/// Edits a venue; the club's owner only.
#[utoipa::path(patch, path = "/locations/{id}", tag = "venues", security(("bearer" = [])),
    params(("id" = Uuid, Path)), request_body = LocationUpdate,
    responses(
        (status = 200, body = LocationView),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: club owner only", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
    ))]
async fn update_location(
    State(app): State<AppState>,
    user: AuthUser,
    Path(id): Path<Uuid>,
    Json(body): Json<LocationUpdate>,
) -> AppResult<Json<LocationView>> {
    let location =
        locations::Entity::find_by_id(id).one(&app.db).await?.ok_or_else(|| AppError::not_found("location"))?;
    authorize_in_club::<club::Owner>(&app, &user, location.organizer_id).await?;

    let mut problems = Problems::default();
    let name = body.name.map(|name| problems.text("name", &name, 1, 120));
    if let Some(slug) = &body.city_slug {
        active_city(&app.db, &mut problems, "citySlug", slug).await?;
    }
    let address = body.address.map(|address| problems.text("address", &address, 1, 300));
    let zone = body.timezone.map(|zone| timezone(&mut problems, &zone));
    let lat = body.lat.map(|lat| coordinate(&mut problems, "lat", lat, 90.0));
    let lng = body.lng.map(|lng| coordinate(&mut problems, "lng", lng, 180.0));
    let description = body.description.map(|text| optional_multiline_text(&mut problems, "description", text, 0, 2000));
    let photo_url = body.photo_url.map(|photo| photo.map(|link| url(&mut problems, "photoUrl", &link)));
    problems.into_result()?;

    let mut active: locations::ActiveModel = location.into();
    if let Some(name) = name {
        active.name = Set(name);
    }
    if let Some(slug) = body.city_slug {
        active.city_slug = Set(slug);
    }
    if let Some(address) = address {
        active.address = Set(address);
    }
    if let Some(zone) = zone {
        active.timezone = Set(zone);
    }
    if let Some(lat) = lat {
        active.lat = Set(lat);
    }
    if let Some(lng) = lng {
        active.lng = Set(lng);
    }
    if let Some(description) = description {
        active.description = Set(description);
    }
    if let Some(photo_url) = photo_url {
        active.photo_url = Set(photo_url);
    }
    active.updated_at = Set(Utc::now());
    Ok(Json(active.update(&app.db).await?.into()))
}

/// The public catalogue of venues, optionally in one city.
#[utoipa::path(get, path = "/locations", tag = "venues", params(CityFilter),
    responses(
        (status = 200, body = ItemList<LocationView>),
        (status = 400, description = "VALIDATION_ERROR: a malformed query", body = ErrorBody),
        (status = 500, description = "INTERNAL_ERROR", body = ErrorBody),
    ))]
async fn list_locations(
    State(app): State<AppState>,
    Query(filter): Query<CityFilter>,
) -> AppResult<Json<ItemList<LocationView>>> {
    let mut query = locations::Entity::find().order_by_asc(locations::Column::Name);
    if let Some(city) = filter.city {
        query = query.filter(locations::Column::CitySlug.eq(city));
    }
    let venues = query.all(&app.reads).await?;
    Ok(Json(ItemList::new(venues.into_iter().map(LocationView::from).collect())))
}
