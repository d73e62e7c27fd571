//! Platform administrators: listing them, granting a role by phone, changing or removing it.

use axum::extract::State;
use axum::http::StatusCode;
use chrono::Utc;
use floor_entities::enums::AdminRole;
use floor_entities::users;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, Set,
};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::domain::audit;
use crate::domain::players::signup::find_or_create_account;
use crate::http::extract::{Admin, Json, Path, perm};
use crate::http::state::AppState;
use crate::http::validate::{Problems, optional_text};
use crate::http::views::ItemList;
use crate::infra::db;
use crate::infra::error::{AppError, AppResult, ErrorBody, ErrorCode};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_admins, create_admin)).routes(routes!(set_admin_role))
}

/// A user holding a platform role.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdminView {
    pub user_id: Uuid,
    pub phone: String,
    pub name: Option<String>,
    pub nickname: Option<String>,
    pub admin_role: Option<AdminRole>,
    pub created_at: chrono::DateTime<Utc>,
}

impl From<users::Model> for AdminView {
    fn from(user: users::Model) -> Self {
        Self {
            user_id: user.id,
            phone: user.phone,
            name: user.name,
            nickname: user.nickname,
            admin_role: user.admin_role,
            created_at: user.created_at,
        }
    }
}

#[derive(Deserialize, ToSchema)]
pub struct NewAdmin {
    /// The account is created when no user has this phone yet.
    #[schema(pattern = "^[ ()\\t\u{a0}-]*\\+[ ()\\t\u{a0}-]*[1-9]([ ()\\t\u{a0}-]*[0-9]){0,14}[ ()\\t\u{a0}-]*$")]
    pub phone: String,
    /// Set as the account's name only when it has none.
    #[schema(
        max_length = 80,
        pattern = "^[\\t\\n\\v\\f\\r ]*[^\\x00-\\x20\\x7F][^\\x00-\\x1F\\x7F]*[\\t\\n\\v\\f\\r ]*$"
    )]
    pub name: Option<String>,
    pub role: AdminRole,
}

#[derive(Deserialize, ToSchema)]
pub struct RoleChange {
    /// `null` removes the platform role.
    pub role: Option<AdminRole>,
}

/// Every user with a platform role.
#[utoipa::path(get, path = "/admin/admins", tag = "admin", security(("bearer" = [])),
    responses(
        (status = 200, body = ItemList<AdminView>),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs admins.manage", body = ErrorBody),
    ))]
async fn list_admins(
    State(app): State<AppState>,
    _admin: Admin<perm::AdminsManage>,
) -> AppResult<Json<ItemList<AdminView>>> {
    let admins = users::Entity::find()
        .filter(users::Column::AdminRole.is_not_null())
        .order_by_asc(users::Column::CreatedAt)
        .all(&app.reads)
        .await?;
    Ok(Json(ItemList::new(admins.into_iter().map(AdminView::from).collect())))
}

/// Grants a platform role to the user with this phone, creating the account if needed.
#[utoipa::path(post, path = "/admin/admins", tag = "admin", security(("bearer" = [])), request_body = NewAdmin,
    responses(
        (status = 201, body = AdminView),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs admins.manage", body = ErrorBody),
        (status = 409, description = "INVALID_STATUS: the last super_admin keeps the role", body = ErrorBody),
    ))]
async fn create_admin(
    State(app): State<AppState>,
    admin: Admin<perm::AdminsManage>,
    Json(body): Json<NewAdmin>,
) -> AppResult<(StatusCode, Json<AdminView>)> {
    let mut problems = Problems::default();
    let phone = problems.phone("phone", &body.phone);
    let name = optional_text(&mut problems, "name", body.name, 1, 80);
    problems.into_result()?;
    let phone = phone.ok_or_else(|| AppError::invalid_field("phone", "is not a phone"))?;

    let tx = db::begin_write(&app.db).await?;
    db::lock_key(&tx, ADMIN_ROLES_LOCK).await?;
    let user = find_or_create_account(&tx, &phone).await?;
    let mut user = change_role(&tx, user, Some(body.role)).await?;
    if user.name.is_none() && name.is_some() {
        let mut active: users::ActiveModel = user.into();
        active.name = Set(name);
        user = active.update(&tx).await?;
    }
    audit::record(&tx, Some(admin.user.id()), "admin.grant", ("user", user.id.to_string()), json!({"role": body.role}))
        .await?;
    tx.commit().await?;
    Ok((StatusCode::CREATED, Json(user.into())))
}

/// Changes a user's platform role; `null` removes it.
#[utoipa::path(put, path = "/admin/admins/{userId}/role", tag = "admin", security(("bearer" = [])),
    params(("userId" = Uuid, Path)), request_body = RoleChange,
    responses(
        (status = 200, body = AdminView),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs admins.manage", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
        (status = 409, description = "INVALID_STATUS: the last super_admin keeps the role", body = ErrorBody),
    ))]
async fn set_admin_role(
    State(app): State<AppState>,
    admin: Admin<perm::AdminsManage>,
    Path(user_id): Path<Uuid>,
    Json(body): Json<RoleChange>,
) -> AppResult<Json<AdminView>> {
    let tx = db::begin_write(&app.db).await?;
    db::lock_key(&tx, ADMIN_ROLES_LOCK).await?;
    let user = users::Entity::find_by_id(user_id).one(&tx).await?.ok_or_else(|| AppError::not_found("user"))?;
    let before = user.admin_role;
    let user = change_role(&tx, user, body.role).await?;
    audit::record(
        &tx,
        Some(admin.user.id()),
        "admin.role_change",
        ("user", user.id.to_string()),
        json!({"from": before, "to": body.role}),
    )
    .await?;
    tx.commit().await?;
    Ok(Json(user.into()))
}

/// Role changes are serialised, so two concurrent demotions cannot leave no super_admin.
const ADMIN_ROLES_LOCK: &str = "admin-roles";

/// Sets `role`, refusing to take the role away from the last super_admin (the platform would
/// have nobody left to manage admins).
async fn change_role(
    conn: &impl ConnectionTrait,
    user: users::Model,
    role: Option<AdminRole>,
) -> AppResult<users::Model> {
    if user.admin_role == role {
        return Ok(user);
    }
    if user.admin_role == Some(AdminRole::SuperAdmin) {
        let super_admins =
            users::Entity::find().filter(users::Column::AdminRole.eq(AdminRole::SuperAdmin)).count(conn).await?;
        if super_admins <= 1 {
            return Err(AppError::new(ErrorCode::InvalidStatus, "the last super_admin cannot lose the role"));
        }
    }
    let mut active: users::ActiveModel = user.into();
    active.admin_role = Set(role);
    active.updated_at = Set(Utc::now());
    Ok(active.update(conn).await?)
}
