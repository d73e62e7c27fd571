//! Clubs (organizers): the platform creates them with their first owner and lists them; a
//! member finds their clubs; an owner (or the platform) reads and edits the club settings.

use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use floor_entities::enums::{MemberRole, OrganizerStatus};
use floor_entities::{organizer_members, organizers};
use sea_orm::{ActiveModelTrait, EntityTrait, QueryOrder, Set};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::{Admin, AuthUser, Json, OrganizerAccess, club, perm};
use super::validate::Problems;
use super::views::ItemList;
use crate::domain::audit;
use crate::domain::clubs::{insert_membership, memberships_of};
use crate::domain::players::signup::find_or_create_account;
use crate::http::state::AppState;
use crate::infra::db;
use crate::infra::error::{AppError, AppResult, ErrorBody};

/// The cancel deadline of a new club, in hours before the start.
pub const DEFAULT_CANCEL_DEADLINE_HOURS: i32 = 3;
/// The range a club may set its cancel deadline in: from the start itself to a week before.
pub const CANCEL_DEADLINE_HOURS: std::ops::RangeInclusive<i32> = 0..=168;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_organizers, create_organizer))
        .routes(routes!(list_my_organizers))
        .routes(routes!(get_organizer, update_organizer))
}

/// A club.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrganizerView {
    pub id: Uuid,
    pub name: String,
    pub status: OrganizerStatus,
    /// Cancelling later than this many hours before the start earns a strike.
    pub cancel_deadline_hours: i32,
    pub created_at: DateTime<Utc>,
}

impl From<organizers::Model> for OrganizerView {
    fn from(organizer: organizers::Model) -> Self {
        Self {
            id: organizer.id,
            name: organizer.name,
            status: organizer.status,
            cancel_deadline_hours: organizer.cancel_deadline_hours,
            created_at: organizer.created_at,
        }
    }
}

/// One of the caller's memberships, with its club.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MyMembershipView {
    /// The membership's id (as `GET /organizers/{id}/members` lists it).
    pub id: Uuid,
    pub role: MemberRole,
    pub organizer: OrganizerView,
}

impl MyMembershipView {
    pub fn new(member: organizer_members::Model, organizer: organizers::Model) -> Self {
        Self { id: member.id, role: member.role, organizer: organizer.into() }
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewOrganizer {
    #[schema(
        max_length = 120,
        pattern = "^[\\t\\n\\v\\f\\r ]*[^\\x00-\\x20\\x7F][^\\x00-\\x1F\\x7F]*[\\t\\n\\v\\f\\r ]*$"
    )]
    pub name: String,
    /// The first owner; an account is created for this phone when none exists.
    #[schema(pattern = "^[ ()\\t\u{a0}-]*\\+[ ()\\t\u{a0}-]*[1-9]([ ()\\t\u{a0}-]*[0-9]){0,14}[ ()\\t\u{a0}-]*$")]
    pub owner_phone: String,
}

/// Changes to a club; an absent field stays as it is.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrganizerUpdate {
    /// 1 to 120 characters.
    #[schema(
        max_length = 120,
        pattern = "^[\\t\\n\\v\\f\\r ]*[^\\x00-\\x20\\x7F][^\\x00-\\x1F\\x7F]*[\\t\\n\\v\\f\\r ]*$"
    )]
    pub name: Option<String>,
    /// Hours before the start after which a cancellation earns a strike: 0 to 168.
    #[schema(minimum = 0, maximum = 168)]
    pub cancel_deadline_hours: Option<i32>,
}

/// Every club, oldest first.
#[utoipa::path(get, path = "/admin/organizers", tag = "clubs", security(("bearer" = [])),
    responses(
        (status = 200, body = ItemList<OrganizerView>),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs organizers.manage", body = ErrorBody),
    ))]
async fn list_organizers(
    State(app): State<AppState>,
    _admin: Admin<perm::OrganizersManage>,
) -> AppResult<Json<ItemList<OrganizerView>>> {
    let clubs = organizers::Entity::find().order_by_asc(organizers::Column::CreatedAt).all(&app.reads).await?;
    Ok(Json(ItemList::new(clubs.into_iter().map(OrganizerView::from).collect())))
}

/// Creates a club with its first owner, creating the owner's account by phone if missing.
#[utoipa::path(post, path = "/admin/organizers", tag = "clubs", security(("bearer" = [])), request_body = NewOrganizer,
    responses(
        (status = 201, body = OrganizerView),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs organizers.manage", body = ErrorBody),
    ))]
async fn create_organizer(
    State(app): State<AppState>,
    admin: Admin<perm::OrganizersManage>,
    Json(body): Json<NewOrganizer>,
) -> AppResult<(StatusCode, Json<OrganizerView>)> {
    let mut problems = Problems::default();
    let name = problems.text("name", &body.name, 1, 120);
    let phone = problems.phone("ownerPhone", &body.owner_phone);
    problems.into_result()?;
    let phone = phone.ok_or_else(|| AppError::invalid_field("ownerPhone", "is not a phone"))?;

    let now = Utc::now();
    let tx = db::begin_write(&app.db).await?;
    let owner = find_or_create_account(&tx, &phone).await?;
    let organizer = organizers::ActiveModel {
        id: Set(Uuid::now_v7()),
        name: Set(name),
        status: Set(OrganizerStatus::Active),
        cancel_deadline_hours: Set(DEFAULT_CANCEL_DEADLINE_HOURS),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&tx)
    .await?;
    insert_membership(&tx, organizer.id, owner.id, MemberRole::Owner).await?;
    audit::record(
        &tx,
        Some(admin.user.id()),
        "organizer.create",
        ("organizer", organizer.id.to_string()),
        json!({"name": organizer.name, "ownerUserId": owner.id}),
    )
    .await?;
    tx.commit().await?;
    Ok((StatusCode::CREATED, Json(organizer.into())))
}

/// The caller's memberships, each with its club, oldest membership first. Empty for a user
/// who belongs to no club.
#[utoipa::path(get, path = "/organizers/mine", tag = "clubs", security(("bearer" = [])),
    responses(
        (status = 200, body = ItemList<MyMembershipView>),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
    ))]
async fn list_my_organizers(
    State(app): State<AppState>,
    user: AuthUser,
) -> AppResult<Json<ItemList<MyMembershipView>>> {
    let items = memberships_of(&app.reads, user.id())
        .await?
        .into_iter()
        .map(|(member, organizer)| MyMembershipView::new(member, organizer))
        .collect();
    Ok(Json(ItemList::new(items)))
}

/// One club with its settings.
#[utoipa::path(get, path = "/organizers/{id}", tag = "clubs", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The club")),
    responses(
        (status = 200, body = OrganizerView),
        (status = 400, description = "VALIDATION_ERROR: the id is not a UUID", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs club:owner or organizers.manage", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
    ))]
async fn get_organizer(access: OrganizerAccess<club::OwnerOrOrganizersManage>) -> Json<OrganizerView> {
    Json(access.organizer.into())
}

/// Renames a club or changes its cancel deadline (its only setting).
#[utoipa::path(patch, path = "/organizers/{id}", tag = "clubs", security(("bearer" = [])),
    params(("id" = Uuid, Path, description = "The club")), request_body = OrganizerUpdate,
    responses(
        (status = 200, body = OrganizerView),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs club:owner or organizers.manage", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
    ))]
async fn update_organizer(
    State(app): State<AppState>,
    access: OrganizerAccess<club::OwnerOrOrganizersManage>,
    Json(body): Json<OrganizerUpdate>,
) -> AppResult<Json<OrganizerView>> {
    let mut problems = Problems::default();
    let name = body.name.map(|name| problems.text("name", &name, 1, 120));
    if let Some(hours) = body.cancel_deadline_hours
        && !CANCEL_DEADLINE_HOURS.contains(&hours)
    {
        problems.add(
            "cancelDeadlineHours",
            format!("must be {} to {}", CANCEL_DEADLINE_HOURS.start(), CANCEL_DEADLINE_HOURS.end()),
        );
    }
    problems.into_result()?;

    let before = access.organizer.clone();
    let mut active: organizers::ActiveModel = access.organizer.into();
    if let Some(name) = name {
        active.name = Set(name);
    }
    if let Some(hours) = body.cancel_deadline_hours {
        active.cancel_deadline_hours = Set(hours);
    }
    active.updated_at = Set(Utc::now());
    let tx = db::begin_write(&app.db).await?;
    let organizer = active.update(&tx).await?;
    audit::record(
        &tx,
        Some(access.user.id()),
        "organizer.update",
        ("organizer", organizer.id.to_string()),
        json!({
            "from": {"name": before.name, "cancelDeadlineHours": before.cancel_deadline_hours},
            "to": {"name": organizer.name, "cancelDeadlineHours": organizer.cancel_deadline_hours},
        }),
    )
    .await?;
    tx.commit().await?;
    Ok(Json(organizer.into()))
}
