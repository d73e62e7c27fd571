//! Strikes as the club sees them: a tournament's strikes, and forgiving one.

use axum::extract::State;
use chrono::{DateTime, Utc};
use floor_entities::enums::StrikeReason;
use floor_entities::{strikes, tournaments};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder};
use serde::Serialize;
use serde_json::json;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::extract::{AuthUser, Json, Path, TournamentAccess, authorize_in_club, club};
use super::views::ItemList;
use crate::domain::audit;
use crate::http::state::AppState;
use crate::infra::db;
use crate::infra::error::{AppError, AppResult, ErrorBody};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_strikes)).routes(routes!(forgive_strike))
}

/// A strike for a no-show or a late cancellation.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StrikeView {
    pub id: Uuid,
    pub user_id: Uuid,
    pub tournament_id: Uuid,
    pub registration_id: Uuid,
    pub reason: StrikeReason,
    pub created_at: DateTime<Utc>,
    pub forgiven_at: Option<DateTime<Utc>>,
}

impl From<strikes::Model> for StrikeView {
    fn from(strike: strikes::Model) -> Self {
        Self {
            id: strike.id,
            user_id: strike.user_id,
            tournament_id: strike.tournament_id,
            registration_id: strike.registration_id,
            reason: strike.reason,
            created_at: strike.created_at,
            forgiven_at: strike.forgiven_at,
        }
    }
}

/// The strikes issued in a tournament.
#[utoipa::path(get, path = "/tournaments/{id}/strikes", tag = "registration", security(("bearer" = [])),
    params(("id" = Uuid, Path)),
    responses(
        (status = 200, body = ItemList<StrikeView>),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: club owner or td only", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
    ))]
async fn list_strikes(
    State(app): State<AppState>,
    access: TournamentAccess<club::Staff>,
) -> AppResult<Json<ItemList<StrikeView>>> {
    let rows = strikes::Entity::find()
        .filter(strikes::Column::TournamentId.eq(access.tournament.id))
        .order_by_asc(strikes::Column::CreatedAt)
        .all(&app.reads)
        .await?;
    Ok(Json(ItemList::new(rows.into_iter().map(StrikeView::from).collect())))
}

/// Forgives a strike of the club's tournament; the player's ban is recomputed and lifted when
/// the active strikes fall below the threshold.
#[utoipa::path(post, path = "/strikes/{id}/forgive", tag = "registration", security(("bearer" = [])),
    params(("id" = Uuid, Path)),
    responses(
        (status = 200, body = StrikeView),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: owner or td of the tournament's club only", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
        (status = 409, description = "INVALID_STATUS: already forgiven", body = ErrorBody),
    ))]
async fn forgive_strike(
    State(app): State<AppState>,
    user: AuthUser,
    Path(id): Path<Uuid>,
) -> AppResult<Json<StrikeView>> {
    let strike = strikes::Entity::find_by_id(id).one(&app.db).await?.ok_or_else(|| AppError::not_found("strike"))?;
    let tournament = tournaments::Entity::find_by_id(strike.tournament_id)
        .one(&app.db)
        .await?
        .ok_or_else(|| AppError::not_found("tournament"))?;
    authorize_in_club::<club::Staff>(&app, &user, tournament.organizer_id).await?;
    let tx = db::begin_write(&app.db).await?;
    let forgiven = crate::domain::strikes::forgive(&tx, strike, user.id(), Utc::now()).await?;
    audit::record(
        &tx,
        Some(user.id()),
        "strike.forgive",
        ("strike", forgiven.id.to_string()),
        json!({"userId": forgiven.user_id}),
    )
    .await?;
    tx.commit().await?;
    Ok(Json(forgiven.into()))
}
