//! Clubs (organizers): the platform creates them with their first owner and lists them.

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

use super::extract::{Admin, Json, perm};
use super::validate::Problems;
use super::views::ItemList;
use crate::accounts::find_or_create_account;
use crate::app::AppState;
use crate::error::{AppError, AppResult, ErrorBody};
use crate::{audit, db};

/// The cancel deadline of a new club, in hours before the start.
pub const DEFAULT_CANCEL_DEADLINE_HOURS: i32 = 3;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_organizers, create_organizer))
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

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewOrganizer {
    pub name: String,
    /// The first owner; an account is created for this phone when none exists.
    pub owner_phone: String,
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
    let clubs = organizers::Entity::find().order_by_asc(organizers::Column::CreatedAt).all(&app.db).await?;
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
    organizer_members::ActiveModel {
        id: Set(Uuid::now_v7()),
        organizer_id: Set(organizer.id),
        user_id: Set(owner.id),
        role: Set(MemberRole::Owner),
        created_at: Set(now),
    }
    .insert(&tx)
    .await?;
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
