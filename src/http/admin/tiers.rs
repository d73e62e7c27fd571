//! Platform administration of the level tiers: creating, editing and deleting them, keeping
//! one tier at level 1 so every player always has a tier.

use axum::extract::State;
use axum::http::StatusCode;
use chrono::Utc;
use floor_actors::rules::rating::MAX_LEVEL;
use floor_entities::{level_tier_translations, level_tiers};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseTransaction, EntityTrait, PaginatorTrait, QueryFilter,
    QueryOrder, Set,
};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::content::{add_taken, check_names, key, replace_rows, unless_taken};
use crate::domain::audit;
use crate::http::extract::{Admin, Json, Path, double_option, perm};
use crate::http::reference::{LevelTierView, Name, level_tier_view};
use crate::http::state::AppState;
use crate::http::validate::{Problems, url};
use crate::http::views::{ItemList, Localized};
use crate::infra::db;
use crate::infra::error::{AppError, AppResult, ErrorBody, ErrorCode};

/// Longest tier key.
const KEY_MAX: usize = 32;
/// The level every player starts at: a tier must begin there.
const FIRST_LEVEL: i32 = 1;
/// Tier writes are serialised, so the uniqueness of `minLevel` and the tier at level 1 hold.
const TIERS_LOCK: &str = "level-tiers";

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_all_level_tiers, create_level_tier))
        .routes(routes!(update_level_tier, delete_level_tier))
}

/// A level tier as the admin app sees it: the public card plus its id.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdminLevelTierView {
    pub id: Uuid,
    #[serde(flatten)]
    pub tier: LevelTierView,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewLevelTier {
    /// Lowercase latin letters, digits and dashes, unique, at most 32 characters.
    #[schema(max_length = 32, pattern = "^[a-z0-9]+(-[a-z0-9]+)*$")]
    pub key: String,
    /// 1 to 1000, unique among tiers.
    #[schema(minimum = 1, maximum = 1000)]
    pub min_level: i32,
    /// `#rrggbb`; stored in lowercase.
    #[schema(pattern = "^#[0-9A-Fa-f]{6}$")]
    pub color: String,
    #[schema(max_length = 2048, pattern = "^(https?://[!-.0-Z^-~][!-Z^-~]*|/files/[0-9a-f-]{1,64}\\.(png|jpg|webp))$")]
    pub picture_url: Option<String>,
    /// Both `ru` and `en`, each a name of 1 to 100 characters.
    #[schema(schema_with = crate::http::views::both_locales::<Name>)]
    pub translations: Localized<Name>,
}

/// Fields to change; an absent one stays, `pictureUrl: null` clears the picture. Given
/// locales of `translations` replace those names.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LevelTierUpdate {
    #[schema(max_length = 32, pattern = "^[a-z0-9]+(-[a-z0-9]+)*$")]
    pub key: Option<String>,
    /// The tier at level 1 cannot move while it is the only one there.
    #[schema(minimum = 1, maximum = 1000)]
    pub min_level: Option<i32>,
    #[schema(pattern = "^#[0-9A-Fa-f]{6}$")]
    pub color: Option<String>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>, max_length = 2048, pattern = "^(https?://[!-.0-Z^-~][!-Z^-~]*|/files/[0-9a-f-]{1,64}\\.(png|jpg|webp))$")]
    pub picture_url: Option<Option<String>>,
    pub translations: Option<Localized<Name>>,
}

fn check_min_level(problems: &mut Problems, min_level: i32) {
    if !(FIRST_LEVEL..=MAX_LEVEL).contains(&min_level) {
        problems.add("minLevel", format!("must be {FIRST_LEVEL} to {MAX_LEVEL}"));
    }
}

/// A `#rrggbb` colour, in lowercase.
fn color(problems: &mut Problems, value: &str) -> String {
    let value = value.to_ascii_lowercase();
    let hex =
        value.strip_prefix('#').filter(|digits| digits.len() == 6 && digits.chars().all(|c| c.is_ascii_hexdigit()));
    if hex.is_none() {
        problems.add("color", "must be #rrggbb");
    }
    value
}

/// Records a problem when another tier than `except` begins at `min_level`.
async fn check_min_level_free(
    tx: &DatabaseTransaction,
    problems: &mut Problems,
    min_level: i32,
    except: Option<Uuid>,
) -> AppResult<()> {
    let mut holders = level_tiers::Entity::find().filter(level_tiers::Column::MinLevel.eq(min_level));
    if let Some(id) = except {
        holders = holders.filter(level_tiers::Column::Id.ne(id));
    }
    if holders.count(tx).await? > 0 {
        add_taken(problems, "minLevel");
    }
    Ok(())
}

/// Refuses to take `tier` away from level 1 when no other tier begins there: a player below
/// every tier would have none.
async fn keep_first_level(tx: &DatabaseTransaction, tier: &level_tiers::Model) -> AppResult<()> {
    if tier.min_level != FIRST_LEVEL {
        return Ok(());
    }
    let others = level_tiers::Entity::find()
        .filter(level_tiers::Column::MinLevel.eq(FIRST_LEVEL))
        .filter(level_tiers::Column::Id.ne(tier.id))
        .count(tx)
        .await?;
    if others == 0 {
        return Err(AppError::new(
            ErrorCode::InvalidStatus,
            "the tier at level 1 must stay so every player has a tier: edit it instead",
        ));
    }
    Ok(())
}

async fn admin_level_tier_view(conn: &impl ConnectionTrait, tier: level_tiers::Model) -> AppResult<AdminLevelTierView> {
    let translations = level_tier_translations::Entity::find()
        .filter(level_tier_translations::Column::TierId.eq(tier.id))
        .all(conn)
        .await?;
    Ok(AdminLevelTierView { id: tier.id, tier: level_tier_view(tier, translations) })
}

fn name_rows(tier_id: Uuid, names: Vec<(&'static str, Name)>) -> Vec<level_tier_translations::ActiveModel> {
    names
        .into_iter()
        .map(|(locale, name)| level_tier_translations::ActiveModel {
            tier_id: Set(tier_id),
            locale: Set(locale.to_owned()),
            name: Set(name.name),
        })
        .collect()
}

/// Every level tier, from the lowest level up.
#[utoipa::path(get, path = "/admin/level-tiers", tag = "admin", security(("bearer" = [])),
    responses(
        (status = 200, body = ItemList<AdminLevelTierView>),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs content.manage", body = ErrorBody),
    ))]
async fn list_all_level_tiers(
    State(app): State<AppState>,
    _admin: Admin<perm::ContentManage>,
) -> AppResult<Json<ItemList<AdminLevelTierView>>> {
    let rows = level_tiers::Entity::find()
        .order_by_asc(level_tiers::Column::MinLevel)
        .find_with_related(level_tier_translations::Entity)
        .all(&app.reads)
        .await?;
    let items = rows
        .into_iter()
        .map(|(tier, translations)| AdminLevelTierView { id: tier.id, tier: level_tier_view(tier, translations) })
        .collect();
    Ok(Json(ItemList::new(items)))
}

/// Adds a tier beginning at a level no other tier begins at.
#[utoipa::path(post, path = "/admin/level-tiers", tag = "admin", security(("bearer" = [])), request_body = NewLevelTier,
    responses(
        (status = 201, body = AdminLevelTierView),
        (status = 400, description = "VALIDATION_ERROR: a bad field, a missing locale, `key` or `minLevel` is taken", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs content.manage", body = ErrorBody),
    ))]
async fn create_level_tier(
    State(app): State<AppState>,
    admin: Admin<perm::ContentManage>,
    Json(body): Json<NewLevelTier>,
) -> AppResult<(StatusCode, Json<AdminLevelTierView>)> {
    let mut problems = Problems::default();
    let key = key(&mut problems, "key", &body.key, KEY_MAX);
    check_min_level(&mut problems, body.min_level);
    let color = color(&mut problems, &body.color);
    let picture_url = body.picture_url.map(|link| url(&mut problems, "pictureUrl", &link));
    let names = check_names(&mut problems, body.translations, true);

    let tx = db::begin_write(&app.db).await?;
    db::lock_key(&tx, TIERS_LOCK).await?;
    check_min_level_free(&tx, &mut problems, body.min_level, None).await?;
    problems.into_result()?;
    let tier = level_tiers::ActiveModel {
        id: Set(Uuid::now_v7()),
        key: Set(key),
        min_level: Set(body.min_level),
        color: Set(color),
        picture_url: Set(picture_url),
        created_at: Set(Utc::now()),
    };
    let tier = unless_taken(tier.insert(&tx).await, "key")?;
    replace_rows(&tx, name_rows(tier.id, names)).await?;
    audit::record(
        &tx,
        Some(admin.user.id()),
        "admin.level_tier.create",
        ("level_tier", tier.id.to_string()),
        json!({"key": tier.key, "minLevel": tier.min_level}),
    )
    .await?;
    let view = admin_level_tier_view(&tx, tier).await?;
    tx.commit().await?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// Edits a tier. Its key is only a name: profiles find their tier by level.
#[utoipa::path(patch, path = "/admin/level-tiers/{id}", tag = "admin", security(("bearer" = [])),
    params(("id" = Uuid, Path)), request_body = LevelTierUpdate,
    responses(
        (status = 200, body = AdminLevelTierView),
        (status = 400, description = "VALIDATION_ERROR: a bad field, `key` or `minLevel` is taken", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs content.manage", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
        (status = 409, description = "INVALID_STATUS: the only tier at level 1 cannot move up", body = ErrorBody),
    ))]
async fn update_level_tier(
    State(app): State<AppState>,
    admin: Admin<perm::ContentManage>,
    Path(id): Path<Uuid>,
    Json(body): Json<LevelTierUpdate>,
) -> AppResult<Json<AdminLevelTierView>> {
    let mut problems = Problems::default();
    let key = body.key.map(|value| key(&mut problems, "key", &value, KEY_MAX));
    if let Some(min_level) = body.min_level {
        check_min_level(&mut problems, min_level);
    }
    let color = body.color.map(|value| color(&mut problems, &value));
    let picture_url = body.picture_url.map(|link| link.map(|link| url(&mut problems, "pictureUrl", &link)));
    let names = body.translations.map(|texts| check_names(&mut problems, texts, false)).unwrap_or_default();

    let tx = db::begin_write(&app.db).await?;
    db::lock_key(&tx, TIERS_LOCK).await?;
    let tier = level_tiers::Entity::find_by_id(id).one(&tx).await?.ok_or_else(|| AppError::not_found("level tier"))?;
    let moves = body.min_level.filter(|level| *level != tier.min_level);
    if let Some(min_level) = moves {
        check_min_level_free(&tx, &mut problems, min_level, Some(tier.id)).await?;
    }
    problems.into_result()?;
    if moves.is_some() {
        keep_first_level(&tx, &tier).await?;
    }
    let before = json!({"key": tier.key, "minLevel": tier.min_level});
    let mut active: level_tiers::ActiveModel = tier.clone().into();
    if let Some(key) = key {
        active.key = Set(key);
    }
    if let Some(min_level) = body.min_level {
        active.min_level = Set(min_level);
    }
    if let Some(color) = color {
        active.color = Set(color);
    }
    if let Some(picture_url) = picture_url {
        active.picture_url = Set(picture_url);
    }
    let tier = if active.is_changed() { unless_taken(active.update(&tx).await, "key")? } else { tier };
    replace_rows(&tx, name_rows(tier.id, names)).await?;
    audit::record(
        &tx,
        Some(admin.user.id()),
        "admin.level_tier.update",
        ("level_tier", tier.id.to_string()),
        json!({"before": before, "key": tier.key, "minLevel": tier.min_level, "color": tier.color}),
    )
    .await?;
    let view = admin_level_tier_view(&tx, tier).await?;
    tx.commit().await?;
    Ok(Json(view))
}

/// Deletes a tier; its players fall into the tier below. The only tier at level 1 stays.
#[utoipa::path(delete, path = "/admin/level-tiers/{id}", tag = "admin", security(("bearer" = [])),
    params(("id" = Uuid, Path)),
    responses(
        (status = 204, description = "deleted"),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs content.manage", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
        (status = 409, description = "INVALID_STATUS: the only tier at level 1 cannot be deleted", body = ErrorBody),
    ))]
async fn delete_level_tier(
    State(app): State<AppState>,
    admin: Admin<perm::ContentManage>,
    Path(id): Path<Uuid>,
) -> AppResult<StatusCode> {
    let tx = db::begin_write(&app.db).await?;
    db::lock_key(&tx, TIERS_LOCK).await?;
    let tier = level_tiers::Entity::find_by_id(id).one(&tx).await?.ok_or_else(|| AppError::not_found("level tier"))?;
    keep_first_level(&tx, &tier).await?;
    level_tiers::Entity::delete_by_id(tier.id).exec(&tx).await?;
    audit::record(
        &tx,
        Some(admin.user.id()),
        "admin.level_tier.delete",
        ("level_tier", tier.id.to_string()),
        json!({"key": tier.key, "minLevel": tier.min_level}),
    )
    .await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_are_six_hex_digits_after_a_hash_kept_in_lowercase() {
        let mut problems = Problems::default();
        assert_eq!(color(&mut problems, "#A1b2C3"), "#a1b2c3");
        assert!(problems.into_result().is_ok());
        for bad in ["a1b2c3", "#a1b2c", "#a1b2c3d", "#g1b2c3", "red", ""] {
            let mut problems = Problems::default();
            color(&mut problems, bad);
            assert!(problems.into_result().is_err(), "{bad}");
        }
    }

    #[test]
    fn levels_run_from_one_to_the_highest_level() {
        for (level, ok) in [(0, false), (1, true), (MAX_LEVEL, true), (MAX_LEVEL + 1, false), (-5, false)] {
            let mut problems = Problems::default();
            check_min_level(&mut problems, level);
            assert_eq!(problems.into_result().is_ok(), ok, "{level}");
        }
    }
}
