//! The caller's notification journal.

use axum::extract::State;
use chrono::{DateTime, Utc};
use floor_entities::notifications;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::{AuthUser, Json};
use super::views::ItemList;
use crate::http::state::AppState;
use crate::infra::error::{AppResult, ErrorBody};

/// The spec's fixed cap: the last 50 notifications, no pagination.
pub const NOTIFICATIONS_SHOWN: u64 = 50;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_my_notifications))
}

/// One journal entry.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotificationView {
    pub id: Uuid,
    /// `tournament.reminder`, `waitlist.promoted`, `followee.registered`,
    /// `tournament.results`, `admin_custom`, and beyond the specification
    /// `tournament.cancelled`, `tournament.changed`, `tournament.seated`, `seat.moved`,
    /// `tournament.announcement`.
    pub kind: String,
    /// What the event is about; its fields depend on `kind`.
    #[schema(value_type = Object)]
    pub payload: Value,
    pub created_at: DateTime<Utc>,
    /// When a push reached at least one of the user's devices; `null` when none did.
    pub sent_at: Option<DateTime<Utc>>,
}

impl From<notifications::Model> for NotificationView {
    fn from(row: notifications::Model) -> Self {
        Self { id: row.id, kind: row.kind, payload: row.payload, created_at: row.created_at, sent_at: row.sent_at }
    }
}

/// The caller's last 50 notifications, newest first.
#[utoipa::path(get, path = "/me/notifications", tag = "notifications", security(("bearer" = [])),
    responses(
        (status = 200, body = ItemList<NotificationView>),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
    ))]
async fn list_my_notifications(
    State(app): State<AppState>,
    user: AuthUser,
) -> AppResult<Json<ItemList<NotificationView>>> {
    let rows = notifications::Entity::find()
        .filter(notifications::Column::UserId.eq(user.id()))
        .order_by_desc(notifications::Column::CreatedAt)
        // Ids are UUIDv7: among rows of one instant, the later written is the larger.
        .order_by_desc(notifications::Column::Id)
        .limit(NOTIFICATIONS_SHOWN)
        .all(&app.reads)
        .await?;
    Ok(Json(ItemList::new(rows.into_iter().map(NotificationView::from).collect())))
}
