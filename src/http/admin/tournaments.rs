//! The admin app's tournaments section: every club's tournaments, and their presentation
//! (texts, banner, prizes) edited by the platform's content admins in any status.

use axum::extract::State;
use floor_entities::enums::TournamentStatus;
use floor_entities::tournaments;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use crate::domain::tournaments::TournamentText;
use crate::domain::tournaments::lifecycle;
use crate::http::extract::{Admin, Json, Path, Query, double_option, perm};
use crate::http::state::AppState;
use crate::http::tournaments::{TournamentView, check_presentation, tournament_view, tournament_views};
use crate::http::validate::Problems;
use crate::http::views::{ItemList, Localized};
use crate::infra::error::{AppResult, ErrorBody};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_all_tournaments)).routes(routes!(update_tournament_presentation))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AdminTournamentFilter {
    /// Only tournaments in this status.
    pub status: Option<TournamentStatus>,
}

/// The presentation of a tournament; an absent field stays, `null` clears `bannerUrl` or
/// `prizes`. Given locales of `translations` replace those texts. Other fields are ignored.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PresentationUpdate {
    pub translations: Option<Localized<TournamentText>>,
    /// An http(s) address.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>, max_length = 2048, pattern = "^(https?://[!-.0-Z^-~][!-Z^-~]*|/files/[0-9a-f-]{1,64}\\.(png|jpg|webp))$")]
    pub banner_url: Option<Option<String>>,
    /// Free text, up to 2000 characters.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>, max_length = 2000, pattern = "^[\\t\\n\\v\\f\\r ]*([^\\x00-\\x20\\x7F][^\\x00-\\x08\\x0B\\x0C\\x0E-\\x1F\\x7F]*)?[\\t\\n\\v\\f\\r ]*$")]
    pub prizes: Option<Option<String>>,
}

/// Every club's tournaments, latest start first.
#[utoipa::path(get, path = "/admin/tournaments", tag = "admin", security(("bearer" = [])), params(AdminTournamentFilter),
    responses(
        (status = 200, body = ItemList<TournamentView>),
        (status = 400, description = "VALIDATION_ERROR: an unknown status", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs content.manage", body = ErrorBody),
    ))]
async fn list_all_tournaments(
    State(app): State<AppState>,
    _admin: Admin<perm::ContentManage>,
    Query(filter): Query<AdminTournamentFilter>,
) -> AppResult<Json<ItemList<TournamentView>>> {
    let mut query =
        tournaments::Entity::find().order_by_desc(tournaments::Column::StartsAt).order_by_desc(tournaments::Column::Id);
    if let Some(status) = filter.status {
        query = query.filter(tournaments::Column::Status.eq(status));
    }
    let models = query.all(&app.reads).await?;
    Ok(Json(ItemList::new(tournament_views(&app.reads, models).await?)))
}

/// Edits a tournament's texts, banner and prizes, in any status; nothing else changes.
#[utoipa::path(patch, path = "/admin/tournaments/{id}", tag = "admin", security(("bearer" = [])),
    params(("id" = Uuid, Path)), request_body = PresentationUpdate,
    responses(
        (status = 200, body = TournamentView),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: needs content.manage", body = ErrorBody),
        (status = 404, description = "NOT_FOUND", body = ErrorBody),
    ))]
async fn update_tournament_presentation(
    State(app): State<AppState>,
    admin: Admin<perm::ContentManage>,
    Path(id): Path<Uuid>,
    Json(body): Json<PresentationUpdate>,
) -> AppResult<Json<TournamentView>> {
    let mut problems = Problems::default();
    let presentation = check_presentation(&mut problems, body.prizes, body.banner_url, body.translations);
    problems.into_result()?;

    let updated = lifecycle::update_presentation(&app.db, id, admin.user.id(), presentation).await?;
    Ok(Json(tournament_view(&app.db, updated).await?))
}
