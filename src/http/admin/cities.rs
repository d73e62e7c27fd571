//! Platform administration of the cities players and venues choose from: every city
//! (inactive ones too), creating, editing (a slug rename follows into users and venues), and
//! deleting one that no venue uses.

use axum::extract::State;
use axum::http::StatusCode;
use chrono::Utc;
use floor_entities::{cities, city_translations, locations, users};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, Set,
};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::content::{check_names, key, next_sort_order, replace_rows, unless_taken};
use crate::domain::audit;
use crate::http::extract::{Admin, Json, Path, perm};
use crate::http::reference::{CityView, Name, city_view};
use crate::http::state::AppState;
use crate::http::validate::Problems;
use crate::http::views::{ItemList, Localized};
use crate::infra::db;
use crate::infra::error::{AppError, AppResult, ErrorBody, ErrorCode};

/// Longest city slug.
const SLUG_MAX: usize = 50;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_all_cities, create_city)).routes(routes!(update_city, delete_city))
}

/// A city as the admin app sees it: the public card plus id, activity and order.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdminCityView {
    pub id: Uuid,
    #[serde(flatten)]
    pub city: CityView,
    /// Inactive cities stay on profiles and venues but are not offered for selection.
    pub is_active: bool,
    /// Ascending display order.
    pub sort_order: i32,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewCity {
    /// Lowercase latin letters, digits and dashes, unique, at most 50 characters.
    #[schema(max_length = 50, pattern = "^[a-z0-9]+(-[a-z0-9]+)*$")]
    pub slug: String,
    /// Default `true`.
    pub is_active: Option<bool>,
    /// Default: after every existing city.
    pub sort_order: Option<i32>,
    /// Both `ru` and `en`, each a name of 1 to 100 characters.
    #[schema(schema_with = crate::http::views::both_locales::<Name>)]
    pub translations: Localized<Name>,
}

/// Fields to change; an absent one stays. Given locales of `translations` replace those names.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CityUpdate {
    /// The slug is the city's stable key, held by users, venues and clients: it cannot
    /// change. Sending the city's own slug is accepted.
    #[schema(max_length = 50, pattern = "^[a-z0-9]+(-[a-z0-9]+)*$")]
    pub slug: Option<String>,
    pub is_active: Option<bool>,
    pub sort_order: Option<i32>,
    pub translations: Option<Localized<Name>>,
}

async fn admin_city_view(conn: &impl ConnectionTrait, city: cities::Model) -> AppResult<AdminCityView> {
    let translations =
        city_translations::Entity::find().filter(city_translations::Column::CityId.eq(city.id)).all(conn).await?;
    Ok(admin_city(city, translations))
}

fn admin_city(city: cities::Model, translations: Vec<city_translations::Model>) -> AdminCityView {
    AdminCityView {
        id: city.id,
        is_active: city.is_active,
        sort_order: city.sort_order,
        city: city_view(city.slug, translations),
    }
}

fn name_rows(city_id: Uuid, names: Vec<(&'static str, Name)>) -> Vec<city_translations::ActiveModel> {
    names
        .into_iter()
        .map(|(locale, name)| city_translations::ActiveModel {
            city_id: Set(city_id),
            locale: Set(locale.to_owned()),
            name: Set(name.name),
        })
        .collect()
}

/// Every city, inactive ones too, in display order.
#[utoipa::path(get, path = "/admin/cities", tag = "admin", security(("bearer" = [])),
    responses(
        (status = 200, body = ItemList<AdminCityView>),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs cities.manage", body = ErrorBody),
    ))]
async fn list_all_cities(
    State(app): State<AppState>,
    _admin: Admin<perm::CitiesManage>,
) -> AppResult<Json<ItemList<AdminCityView>>> {
    let rows = cities::Entity::find()
        .order_by_asc(cities::Column::SortOrder)
        .order_by_asc(cities::Column::Slug)
        .find_with_related(city_translations::Entity)
        .all(&app.reads)
        .await?;
    Ok(Json(ItemList::new(rows.into_iter().map(|(city, translations)| admin_city(city, translations)).collect())))
}

/// Adds a city, active by default, after the existing ones unless an order is given.
#[utoipa::path(post, path = "/admin/cities", tag = "admin", security(("bearer" = [])), request_body = NewCity,
    responses(
        (status = 201, body = AdminCityView),
        (status = 400, description = "VALIDATION_ERROR: a bad field, a missing locale, or `slug` is taken", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs cities.manage", body = ErrorBody),
    ))]
async fn create_city(
    State(app): State<AppState>,
    admin: Admin<perm::CitiesManage>,
    Json(body): Json<NewCity>,
) -> AppResult<(StatusCode, Json<AdminCityView>)> {
    let mut problems = Problems::default();
    let slug = key(&mut problems, "slug", &body.slug, SLUG_MAX);
    let names = check_names(&mut problems, body.translations, true);
    problems.into_result()?;

    let tx = db::begin_write(&app.db).await?;
    let sort_order = match body.sort_order {
        Some(order) => order,
        None => next_sort_order::<cities::Entity>(&tx, cities::Column::SortOrder).await?,
    };
    let city = cities::ActiveModel {
        id: Set(Uuid::now_v7()),
        slug: Set(slug),
        is_active: Set(body.is_active.unwrap_or(true)),
        sort_order: Set(sort_order),
        created_at: Set(Utc::now()),
    };
    let city = unless_taken(city.insert(&tx).await, "slug")?;
    replace_rows(&tx, name_rows(city.id, names)).await?;
    audit::record(
        &tx,
        Some(admin.user.id()),
        "admin.city.create",
        ("city", city.id.to_string()),
        json!({"slug": city.slug}),
    )
    .await?;
    let view = admin_city_view(&tx, city).await?;
    tx.commit().await?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// Edits a city. A slug rename cascades through the foreign keys into users and venues.
#[utoipa::path(patch, path = "/admin/cities/{id}", tag = "admin", security(("bearer" = [])),
    params(("id" = Uuid, Path)), request_body = CityUpdate,
    responses(
        (status = 200, body = AdminCityView),
        (status = 400, description = "VALIDATION_ERROR: a bad field, or a `slug` other than the city's own (it never changes)", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs cities.manage", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
    ))]
async fn update_city(
    State(app): State<AppState>,
    admin: Admin<perm::CitiesManage>,
    Path(id): Path<Uuid>,
    Json(body): Json<CityUpdate>,
) -> AppResult<Json<AdminCityView>> {
    let mut problems = Problems::default();
    let names = body.translations.map(|texts| check_names(&mut problems, texts, false)).unwrap_or_default();
    problems.into_result()?;

    let tx = db::begin_write(&app.db).await?;
    let city = cities::Entity::find_by_id(id).one(&tx).await?.ok_or_else(|| AppError::not_found("city"))?;
    if body.slug.as_deref().is_some_and(|slug| slug.trim() != city.slug) {
        return Err(AppError::invalid_field("slug", "is the city's stable key and cannot change"));
    }
    let mut active: cities::ActiveModel = city.clone().into();
    if let Some(is_active) = body.is_active {
        active.is_active = Set(is_active);
    }
    if let Some(order) = body.sort_order {
        active.sort_order = Set(order);
    }
    let city = if active.is_changed() { active.update(&tx).await? } else { city };
    replace_rows(&tx, name_rows(city.id, names)).await?;
    audit::record(
        &tx,
        Some(admin.user.id()),
        "admin.city.update",
        ("city", city.id.to_string()),
        json!({"slug": city.slug, "isActive": city.is_active, "sortOrder": city.sort_order}),
    )
    .await?;
    let view = admin_city_view(&tx, city).await?;
    tx.commit().await?;
    Ok(Json(view))
}

/// Deletes a city no venue uses; users who chose it are left without a city (they pick one
/// again). A city with venues is refused: deactivate it instead.
#[utoipa::path(delete, path = "/admin/cities/{id}", tag = "admin", security(("bearer" = [])),
    params(("id" = Uuid, Path)),
    responses(
        (status = 204, description = "deleted"),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs cities.manage", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
        (status = 409, description = "INVALID_STATUS: venues are in this city; deactivate it instead", body = ErrorBody),
    ))]
async fn delete_city(
    State(app): State<AppState>,
    admin: Admin<perm::CitiesManage>,
    Path(id): Path<Uuid>,
) -> AppResult<StatusCode> {
    let tx = db::begin_write(&app.db).await?;
    let city = cities::Entity::find_by_id(id).one(&tx).await?.ok_or_else(|| AppError::not_found("city"))?;
    let venues = locations::Entity::find().filter(locations::Column::CitySlug.eq(&city.slug)).count(&tx).await?;
    if venues > 0 {
        return Err(city_in_use());
    }
    let users_cleared = users::Entity::find().filter(users::Column::CitySlug.eq(&city.slug)).count(&tx).await?;
    // A venue added since the count (another process) makes the foreign key refuse.
    cities::Entity::delete_by_id(city.id).exec(&tx).await.map_err(|err| match err.sql_err() {
        Some(sea_orm::SqlErr::ForeignKeyConstraintViolation(_)) => city_in_use(),
        _ => err.into(),
    })?;
    audit::record(
        &tx,
        Some(admin.user.id()),
        "admin.city.delete",
        ("city", city.id.to_string()),
        json!({"slug": city.slug, "usersCleared": users_cleared}),
    )
    .await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

fn city_in_use() -> AppError {
    AppError::new(
        ErrorCode::InvalidStatus,
        "venues are in this city: deactivate it (isActive: false) instead of deleting it",
    )
}
