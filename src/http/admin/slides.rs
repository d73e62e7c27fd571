//! Platform administration of the promo slides: every slide (also those outside their
//! display window), creating, editing and deleting them, with a target that names an
//! existing tournament or an http(s) address.

use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use floor_entities::enums::PromoTarget;
use floor_entities::{promo_slide_translations, promo_slides, tournaments};
use sea_orm::{ActiveModelTrait, ConnectionTrait, EntityTrait, QueryOrder, Set};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::content::{check_translations, next_sort_order, replace_rows};
use crate::domain::audit;
use crate::http::extract::{Admin, Json, Path, double_option, perm};
use crate::http::reference::{PromoSlideView, SlideTarget, SlideText, promo_slide_views};
use crate::http::state::AppState;
use crate::http::validate::{Problems, optional_text, url};
use crate::http::views::{ItemList, Localized};
use crate::infra::db;
use crate::infra::error::{AppError, AppResult, ErrorBody};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_all_promo_slides, create_promo_slide))
        .routes(routes!(update_promo_slide, delete_promo_slide))
}

/// A promo slide as the admin app sees it: the public card plus its display order.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdminPromoSlideView {
    #[serde(flatten)]
    pub slide: PromoSlideView,
    /// Ascending display order.
    pub sort_order: i32,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewPromoSlide {
    /// An http(s) address.
    #[schema(max_length = 2048, pattern = "^(https?://[!-.0-Z^-~][!-Z^-~]*|/files/[0-9a-f-]{1,64}\\.(png|jpg|webp))$")]
    pub picture_url: String,
    /// `tournament` with the `tournamentId` of an existing tournament, or `url` with an
    /// http(s) `url`; the other field is left out.
    pub target: SlideTarget,
    /// Shown from then on; absent: no start limit.
    pub starts_at: Option<DateTime<Utc>>,
    /// Shown until then, after `startsAt`; absent: no end limit.
    pub ends_at: Option<DateTime<Utc>>,
    /// Default: after every existing slide.
    pub sort_order: Option<i32>,
    /// Both `ru` and `en`: a title of 1 to 200 characters, a subtitle of up to 300.
    #[schema(schema_with = crate::http::views::both_locales::<SlideText>)]
    pub translations: Localized<SlideText>,
}

/// Fields to change; an absent one stays, `null` lifts a window limit. A given `target`
/// replaces the whole target; given locales of `translations` replace those texts.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromoSlideUpdate {
    #[schema(max_length = 2048, pattern = "^(https?://[!-.0-Z^-~][!-Z^-~]*|/files/[0-9a-f-]{1,64}\\.(png|jpg|webp))$")]
    pub picture_url: Option<String>,
    pub target: Option<SlideTarget>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<DateTime<Utc>>)]
    pub starts_at: Option<Option<DateTime<Utc>>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<DateTime<Utc>>)]
    pub ends_at: Option<Option<DateTime<Utc>>>,
    pub sort_order: Option<i32>,
    pub translations: Option<Localized<SlideText>>,
}

/// A target as stored: its kind, tournament and address.
type TargetColumns = (PromoTarget, Option<Uuid>, Option<String>);

/// Checks that a target is consistent: a tournament target names an existing tournament and
/// no address; an address target an http(s) address and no tournament.
async fn check_target(
    conn: &impl ConnectionTrait,
    problems: &mut Problems,
    target: SlideTarget,
) -> AppResult<TargetColumns> {
    match target.kind {
        PromoTarget::Tournament => {
            if target.url.is_some() {
                problems.add("target.url", "must be left out of a tournament target");
            }
            match target.tournament_id {
                None => problems.add("target.tournamentId", "is required for a tournament target"),
                Some(id) => {
                    if tournaments::Entity::find_by_id(id).one(conn).await?.is_none() {
                        problems.add("target.tournamentId", "is not a tournament");
                    }
                }
            }
            Ok((PromoTarget::Tournament, target.tournament_id, None))
        }
        PromoTarget::Url => {
            if target.tournament_id.is_some() {
                problems.add("target.tournamentId", "must be left out of a url target");
            }
            let address = match target.url {
                None => {
                    problems.add("target.url", "is required for a url target");
                    None
                }
                Some(address) => Some(url(problems, "target.url", &address)),
            };
            Ok((PromoTarget::Url, None, address))
        }
    }
}

fn check_window(problems: &mut Problems, starts_at: Option<DateTime<Utc>>, ends_at: Option<DateTime<Utc>>) {
    if let (Some(start), Some(end)) = (starts_at, ends_at)
        && start >= end
    {
        problems.add("endsAt", "must be after startsAt");
    }
}

fn check_texts(
    problems: &mut Problems,
    texts: Localized<SlideText>,
    all_required: bool,
) -> Vec<(&'static str, SlideText)> {
    check_translations(problems, texts, all_required, |problems, field, text| SlideText {
        title: problems.text(&format!("{field}.title"), &text.title, 1, 200),
        subtitle: optional_text(problems, &format!("{field}.subtitle"), text.subtitle, 0, 300)
            .filter(|s| !s.is_empty()),
    })
}

fn text_rows(slide_id: Uuid, texts: Vec<(&'static str, SlideText)>) -> Vec<promo_slide_translations::ActiveModel> {
    texts
        .into_iter()
        .map(|(locale, text)| promo_slide_translations::ActiveModel {
            slide_id: Set(slide_id),
            locale: Set(locale.to_owned()),
            title: Set(text.title),
            subtitle: Set(text.subtitle),
        })
        .collect()
}

/// The admin cards of `slides`, in their order.
async fn admin_slide_views(
    conn: &impl ConnectionTrait,
    slides: Vec<promo_slides::Model>,
) -> AppResult<Vec<AdminPromoSlideView>> {
    let orders: Vec<i32> = slides.iter().map(|slide| slide.sort_order).collect();
    let views = promo_slide_views(conn, slides).await?;
    Ok(views.into_iter().zip(orders).map(|(slide, sort_order)| AdminPromoSlideView { slide, sort_order }).collect())
}

async fn admin_slide_view(conn: &impl ConnectionTrait, slide: promo_slides::Model) -> AppResult<AdminPromoSlideView> {
    admin_slide_views(conn, vec![slide])
        .await?
        .pop()
        .ok_or_else(|| AppError::Internal(anyhow::anyhow!("a view of one slide came back empty")))
}

/// Every slide, also those outside their display window, in display order.
#[utoipa::path(get, path = "/admin/promo-slides", tag = "admin", security(("bearer" = [])),
    responses(
        (status = 200, body = ItemList<AdminPromoSlideView>),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs content.manage", body = ErrorBody),
    ))]
async fn list_all_promo_slides(
    State(app): State<AppState>,
    _admin: Admin<perm::ContentManage>,
) -> AppResult<Json<ItemList<AdminPromoSlideView>>> {
    let slides = promo_slides::Entity::find()
        .order_by_asc(promo_slides::Column::SortOrder)
        .order_by_asc(promo_slides::Column::CreatedAt)
        .all(&app.reads)
        .await?;
    Ok(Json(ItemList::new(admin_slide_views(&app.reads, slides).await?)))
}

/// Adds a slide, after the existing ones unless an order is given.
#[utoipa::path(post, path = "/admin/promo-slides", tag = "admin", security(("bearer" = [])), request_body = NewPromoSlide,
    responses(
        (status = 201, body = AdminPromoSlideView),
        (status = 400, description = "VALIDATION_ERROR: a bad field, an inconsistent target, a window that ends before it starts, a missing locale", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs content.manage", body = ErrorBody),
    ))]
async fn create_promo_slide(
    State(app): State<AppState>,
    admin: Admin<perm::ContentManage>,
    Json(body): Json<NewPromoSlide>,
) -> AppResult<(StatusCode, Json<AdminPromoSlideView>)> {
    let mut problems = Problems::default();
    let picture_url = url(&mut problems, "pictureUrl", &body.picture_url);
    check_window(&mut problems, body.starts_at, body.ends_at);
    let texts = check_texts(&mut problems, body.translations, true);

    let tx = db::begin_write(&app.db).await?;
    let (kind, tournament_id, target_url) = check_target(&tx, &mut problems, body.target).await?;
    problems.into_result()?;
    let sort_order = match body.sort_order {
        Some(order) => order,
        None => next_sort_order::<promo_slides::Entity>(&tx, promo_slides::Column::SortOrder).await?,
    };
    let now = Utc::now();
    let slide = promo_slides::ActiveModel {
        id: Set(Uuid::now_v7()),
        picture_url: Set(picture_url),
        target_kind: Set(kind),
        target_tournament_id: Set(tournament_id),
        target_url: Set(target_url),
        starts_at: Set(body.starts_at),
        ends_at: Set(body.ends_at),
        sort_order: Set(sort_order),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&tx)
    .await?;
    replace_rows(&tx, text_rows(slide.id, texts)).await?;
    audit::record(
        &tx,
        Some(admin.user.id()),
        "admin.promo_slide.create",
        ("promo_slide", slide.id.to_string()),
        json!({"target": kind}),
    )
    .await?;
    let view = admin_slide_view(&tx, slide).await?;
    tx.commit().await?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// Edits a slide; the window is checked with the fields it keeps.
#[utoipa::path(patch, path = "/admin/promo-slides/{id}", tag = "admin", security(("bearer" = [])),
    params(("id" = Uuid, Path)), request_body = PromoSlideUpdate,
    responses(
        (status = 200, body = AdminPromoSlideView),
        (status = 400, description = "VALIDATION_ERROR: a bad field, an inconsistent target, a window that ends before it starts", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs content.manage", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
    ))]
async fn update_promo_slide(
    State(app): State<AppState>,
    admin: Admin<perm::ContentManage>,
    Path(id): Path<Uuid>,
    Json(body): Json<PromoSlideUpdate>,
) -> AppResult<Json<AdminPromoSlideView>> {
    let mut problems = Problems::default();
    let picture_url = body.picture_url.map(|link| url(&mut problems, "pictureUrl", &link));
    let texts = body.translations.map(|texts| check_texts(&mut problems, texts, false)).unwrap_or_default();

    let tx = db::begin_write(&app.db).await?;
    let slide =
        promo_slides::Entity::find_by_id(id).one(&tx).await?.ok_or_else(|| AppError::not_found("promo slide"))?;
    let target = match body.target {
        Some(target) => Some(check_target(&tx, &mut problems, target).await?),
        None => None,
    };
    let starts_at = body.starts_at.unwrap_or(slide.starts_at);
    let ends_at = body.ends_at.unwrap_or(slide.ends_at);
    check_window(&mut problems, starts_at, ends_at);
    problems.into_result()?;

    let mut active: promo_slides::ActiveModel = slide.into();
    if let Some(picture_url) = picture_url {
        active.picture_url = Set(picture_url);
    }
    if let Some((kind, tournament_id, target_url)) = target {
        active.target_kind = Set(kind);
        active.target_tournament_id = Set(tournament_id);
        active.target_url = Set(target_url);
    }
    active.starts_at = Set(starts_at);
    active.ends_at = Set(ends_at);
    if let Some(order) = body.sort_order {
        active.sort_order = Set(order);
    }
    active.updated_at = Set(Utc::now());
    let slide = active.update(&tx).await?;
    replace_rows(&tx, text_rows(slide.id, texts)).await?;
    audit::record(
        &tx,
        Some(admin.user.id()),
        "admin.promo_slide.update",
        ("promo_slide", slide.id.to_string()),
        json!({"target": slide.target_kind, "startsAt": slide.starts_at, "endsAt": slide.ends_at, "sortOrder": slide.sort_order}),
    )
    .await?;
    let view = admin_slide_view(&tx, slide).await?;
    tx.commit().await?;
    Ok(Json(view))
}

/// Deletes a slide with its texts.
#[utoipa::path(delete, path = "/admin/promo-slides/{id}", tag = "admin", security(("bearer" = [])),
    params(("id" = Uuid, Path)),
    responses(
        (status = 204, description = "deleted"),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs content.manage", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
    ))]
async fn delete_promo_slide(
    State(app): State<AppState>,
    admin: Admin<perm::ContentManage>,
    Path(id): Path<Uuid>,
) -> AppResult<StatusCode> {
    let tx = db::begin_write(&app.db).await?;
    let slide =
        promo_slides::Entity::find_by_id(id).one(&tx).await?.ok_or_else(|| AppError::not_found("promo slide"))?;
    promo_slides::Entity::delete_by_id(slide.id).exec(&tx).await?;
    audit::record(
        &tx,
        Some(admin.user.id()),
        "admin.promo_slide.delete",
        ("promo_slide", slide.id.to_string()),
        json!({}),
    )
    .await?;
    tx.commit().await?;
    Ok(StatusCode::NO_CONTENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_must_end_after_it_starts_when_both_ends_are_set() {
        let now = Utc::now();
        let hour = chrono::Duration::hours(1);
        for (starts_at, ends_at, ok) in [
            (Some(now), Some(now + hour), true),
            (Some(now), Some(now), false),
            (Some(now + hour), Some(now), false),
            (None, Some(now), true),
            (Some(now), None, true),
            (None, None, true),
        ] {
            let mut problems = Problems::default();
            check_window(&mut problems, starts_at, ends_at);
            assert_eq!(problems.into_result().is_ok(), ok, "{starts_at:?} {ends_at:?}");
        }
    }
}
