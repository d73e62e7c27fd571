//! Blind templates: a club's own structures plus the platform's, and creating one with the
//! contract's level rules (`INVALID_LEVELS` for any bad list).

use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use floor_actors::rules::structure::{Segment, parse_levels};
use floor_entities::blind_templates;
use sea_orm::sea_query::Condition;
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, QueryOrder, Set};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa::openapi::schema::{Object, ObjectBuilder, Type};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::{Json, OrganizerAccess, club};
use super::validate::Problems;
use super::views::ItemList;
use crate::http::state::AppState;
use crate::infra::error::{AppError, AppResult, ErrorBody, ErrorCode, ErrorDetails, FieldProblem};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_blind_templates, create_blind_template))
}

/// One segment of a structure, told apart by `kind`: a `level` with its blinds or a `break`
/// without. Only a schema: `parse_levels` reads the list and answers `INVALID_LEVELS` with the
/// places of its problems, among them what no schema states (a level's small blind above its
/// big blind, blinds that go down from one level to the next).
#[derive(Serialize, ToSchema)]
#[serde(tag = "kind", rename_all = "lowercase")]
#[expect(dead_code, reason = "only its schema is used: parse_levels reads the list")]
pub enum SegmentSchema {
    Level(LevelSegment),
    Break(BreakSegment),
}

/// A level: blinds and an optional ante.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LevelSegment {
    /// Positive, at most 1440.
    #[schema(minimum = 1, maximum = 1440)]
    pub duration_min: i64,
    /// Positive, at most the big blind, never below the previous level's.
    #[schema(minimum = 1)]
    pub small_blind: i64,
    /// Positive, never below the previous level's.
    #[schema(minimum = 1)]
    pub big_blind: i64,
    /// 0 or more.
    #[schema(minimum = 0)]
    pub ante: Option<i64>,
    /// A short note shown with the level (a colour-up reminder), at most 140 characters; blank
    /// is none.
    #[schema(max_length = 140)]
    pub note: Option<String>,
}

/// A break: no blinds (`smallBlind`, `bigBlind` and `ante` absent or null).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BreakSegment {
    /// Positive, at most 1440.
    #[schema(minimum = 1, maximum = 1440)]
    pub duration_min: i64,
    #[schema(schema_with = no_blinds)]
    pub small_blind: Option<()>,
    #[schema(schema_with = no_blinds)]
    pub big_blind: Option<()>,
    #[schema(schema_with = no_blinds)]
    pub ante: Option<()>,
    /// A short note shown with the break, at most 140 characters; blank is none.
    #[schema(max_length = 140)]
    pub note: Option<String>,
}

/// A field a break does not have: absent, or null.
fn no_blinds() -> Object {
    ObjectBuilder::new().schema_type(Type::Null).description(Some("A break has none.")).build()
}

/// A blind structure; `organizerId` is null for a platform template every club may use.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlindTemplateView {
    pub id: Uuid,
    pub organizer_id: Option<Uuid>,
    pub name: String,
    #[schema(value_type = Vec<SegmentSchema>)]
    pub levels: serde_json::Value,
    pub starting_stack: i64,
    /// Stored and returned; no rule checks it.
    pub late_reg_level: Option<i32>,
    pub created_at: DateTime<Utc>,
}

impl From<blind_templates::Model> for BlindTemplateView {
    fn from(template: blind_templates::Model) -> Self {
        Self {
            id: template.id,
            organizer_id: template.organizer_id,
            name: template.name,
            levels: template.levels,
            starting_stack: template.starting_stack,
            late_reg_level: template.late_reg_level,
            created_at: template.created_at,
        }
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewBlindTemplate {
    /// 1 to 120 characters.
    #[schema(
        max_length = 120,
        pattern = "^[\\t\\n\\v\\f\\r ]*[^\\x00-\\x20\\x7F][^\\x00-\\x1F\\x7F]*[\\t\\n\\v\\f\\r ]*$"
    )]
    pub name: String,
    /// Any problem with the list is `400 INVALID_LEVELS`, with the places in `details`.
    #[schema(value_type = Vec<SegmentSchema>, min_items = 1)]
    pub levels: serde_json::Value,
    /// 1 to 100 000 000 chips.
    #[schema(minimum = 1, maximum = 100000000)]
    pub starting_stack: i64,
    /// 1-based level number, within the list's levels.
    pub late_reg_level: Option<i32>,
}

/// The club's templates followed by the platform's.
#[utoipa::path(get, path = "/organizers/{id}/blind-templates", tag = "venues", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "organizer")),
    responses(
        (status = 200, body = ItemList<BlindTemplateView>),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: club owner or td only", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
    ))]
async fn list_blind_templates(
    State(app): State<AppState>,
    access: OrganizerAccess<club::Staff>,
) -> AppResult<Json<ItemList<BlindTemplateView>>> {
    let templates = blind_templates::Entity::find()
        .filter(
            Condition::any()
                .add(blind_templates::Column::OrganizerId.eq(access.organizer.id))
                .add(blind_templates::Column::OrganizerId.is_null()),
        )
        .order_by_asc(blind_templates::Column::CreatedAt)
        .all(&app.reads)
        .await?;
    // The club's own first: they are what its directors made for themselves.
    let (own, platform): (Vec<_>, Vec<_>) = templates.into_iter().partition(|t| t.organizer_id.is_some());
    Ok(Json(ItemList::new(own.into_iter().chain(platform).map(BlindTemplateView::from).collect())))
}

/// Adds a blind template to a club.
#[utoipa::path(post, path = "/organizers/{id}/blind-templates", tag = "venues", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "organizer")), request_body = NewBlindTemplate,
    responses(
        (status = 201, body = BlindTemplateView),
        (status = 400, description = "VALIDATION_ERROR (name, stack) or INVALID_LEVELS (the list)", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: club owner only", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
    ))]
async fn create_blind_template(
    State(app): State<AppState>,
    access: OrganizerAccess<club::Owner>,
    Json(body): Json<NewBlindTemplate>,
) -> AppResult<(StatusCode, Json<BlindTemplateView>)> {
    let segments = parse_levels(&body.levels).map_err(|problems| {
        let details: Vec<_> = problems.into_iter().map(|p| FieldProblem::new(p.field, p.problem)).collect();
        let message = details.first().map_or_else(String::new, |first| format!("{}: {}", first.field, first.problem));
        AppError::Api { code: ErrorCode::InvalidLevels, message, details: Some(ErrorDetails::Fields(details)) }
    })?;
    let mut problems = Problems::default();
    let name = problems.text("name", &body.name, 1, 120);
    if !(1..=100_000_000).contains(&body.starting_stack) {
        problems.add("startingStack", "must be 1 to 100000000 chips");
    }
    let levels = segments.iter().filter(|segment| matches!(segment, Segment::Level { .. })).count();
    if let Some(late) = body.late_reg_level
        && (late < 1 || usize::try_from(late).is_ok_and(|late| late > levels))
    {
        problems.add("lateRegLevel", format!("must be a level number from 1 to {levels}"));
    }
    problems.into_result()?;

    let levels = serde_json::to_value(&segments).map_err(|err| AppError::Internal(err.into()))?;
    let template = blind_templates::ActiveModel {
        id: Set(Uuid::now_v7()),
        organizer_id: Set(Some(access.organizer.id)),
        name: Set(name),
        levels: Set(levels),
        starting_stack: Set(body.starting_stack),
        late_reg_level: Set(body.late_reg_level),
        created_at: Set(Utc::now()),
    }
    .insert(&app.db)
    .await?;
    Ok((StatusCode::CREATED, Json(template.into())))
}
