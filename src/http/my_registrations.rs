//! `GET /me/registrations` (beyond the specification): "my tournaments" for the player app,
//! which otherwise sees its registration only on one tournament's detail.

use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::{AuthUser, Json};
use super::registrations::{RegistrationView, registration_view};
use super::tournaments::{TournamentView, tournament_views};
use super::views::ItemList;
use crate::domain::tournaments::registrations::upcoming_of;
use crate::http::state::AppState;
use crate::infra::error::{AppResult, ErrorBody};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_my_registrations))
}

/// One of the caller's registrations with its tournament's card.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MyRegistrationView {
    pub registration: RegistrationView,
    pub tournament: TournamentView,
}

/// The caller's registrations that hold a place (`registered`, `waitlist`, `checked_in`) in
/// tournaments still to be played or running, by start time, each with its tournament card;
/// at most 100.
#[utoipa::path(get, path = "/me/registrations", tags = ["registration", "extension"], security(("bearer" = [])),
    responses(
        (status = 200, body = ItemList<MyRegistrationView>),
        (status = 401, description = "UNAUTHORIZED", body = ErrorBody),
    ))]
async fn list_my_registrations(
    State(app): State<AppState>,
    user: AuthUser,
) -> AppResult<Json<ItemList<MyRegistrationView>>> {
    let (registrations, tournaments): (Vec<_>, Vec<_>) = upcoming_of(&app.db, user.id()).await?.into_iter().unzip();
    let cards = tournament_views(&app.db, tournaments).await?;
    let mut items = Vec::with_capacity(cards.len());
    for (registration, tournament) in registrations.into_iter().zip(cards) {
        items.push(MyRegistrationView { registration: registration_view(&app.db, registration).await?, tournament });
    }
    Ok(Json(ItemList::new(items)))
}
