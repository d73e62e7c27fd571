//! The public agenda, `GET /tournaments`: upcoming and running tournaments by start time,
//! filtered, kept for everyone, with a signed-in caller's statuses read each time.

use std::collections::HashMap;

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use floor_entities::enums::{RegistrationStatus, TournamentStatus};
use floor_entities::{locations, registrations, tournaments};
use sea_orm::sea_query::Query as SqlQuery;
use sea_orm::{ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

use super::cards::{TournamentView, tournament_views};
use crate::http::cached;
use crate::http::extract::{MaybeAuthUser, Query};
use crate::http::read_cache::{Answer, Renewal, Shows};
use crate::http::state::AppState;
use crate::http::views::ItemList;
use crate::infra::error::{AppError, AppResult, ErrorBody};

/// The agenda's route, merged into the tournaments' router.
pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_agenda))
}

/// The agenda never returns more than this many tournaments.
pub const AGENDA_LIMIT: u64 = 50;

#[derive(Clone, Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query, rename_all = "camelCase")]
pub struct AgendaFilter {
    /// Only tournaments at venues in this city (a slug).
    pub city: Option<String>,
    pub organizer_id: Option<Uuid>,
    /// Starting at or after this time.
    pub from: Option<DateTime<Utc>>,
    /// Starting at or before this time.
    pub to: Option<DateTime<Utc>>,
    /// One status instead of the default `registration` and `running`.
    pub status: Option<TournamentStatus>,
}

// The contract's shape of what `list_agenda` writes: the kept cards, with `myStatus` set in
// each by `with_my_statuses`.
/// A card of the agenda. Read with a token it also carries the caller's `myStatus`.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct AgendaCard {
    #[serde(flatten)]
    tournament: TournamentView,
    /// Only when the agenda is read with a token: the caller's registration status in this
    /// tournament (any status, `cancelled` included), null when the caller has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    my_status: Option<Option<RegistrationStatus>>,
}

/// The agenda: upcoming and running tournaments by start time, at most 50. With a token,
/// each card carries the caller's `myStatus` (or null).
#[utoipa::path(get, path = "/tournaments", tag = "tournaments", params(AgendaFilter), security((), ("bearer" = [])),
    responses(
        (status = 200, body = ItemList<AgendaCard>),
        (status = 400, description = "VALIDATION_ERROR: a bad filter", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED: a token was sent but is invalid", body = ErrorBody),
    ))]
async fn list_agenda(
    State(app): State<AppState>,
    MaybeAuthUser(caller): MaybeAuthUser,
    Query(filter): Query<AgendaFilter>,
    headers: HeaderMap,
) -> AppResult<Response> {
    // The cards everyone gets are kept; a signed-in caller's statuses are read each time.
    let key = format!("GET /tournaments {filter:?}");
    let cards = agenda_cards(app.kept_reads.clone(), filter);
    let Some(user) = caller else { return cached::renewed_answer(&app, &headers, key, cards).await };
    let cards = app.read_cache.get_or_renew(key, cards).await?;
    let body = with_my_statuses(&app.reads, &cards.body, user.id()).await?;
    Ok(([(CONTENT_TYPE, HeaderValue::from_static("application/json"))], body).into_response())
}

/// The agenda's cards for `filter` as everyone gets them, built again by every registration
/// desk's commit.
fn agenda_cards(kept_reads: DatabaseConnection, filter: AgendaFilter) -> Renewal {
    Renewal::new(Shows::AnyTournament, move || {
        let (kept_reads, filter) = (kept_reads.clone(), filter.clone());
        Box::pin(async move {
            let models = agenda_query(filter).all(&kept_reads).await?;
            Answer::json(&ItemList::new(tournament_views(&kept_reads, models).await?))
        })
    })
}

/// The kept agenda `cards` (JSON) with `myStatus` of `user_id` in each card.
async fn with_my_statuses(conn: &impl ConnectionTrait, cards: &[u8], user_id: Uuid) -> AppResult<Vec<u8>> {
    let internal = |err: serde_json::Error| AppError::Internal(err.into());
    let mut list: serde_json::Value = serde_json::from_slice(cards).map_err(internal)?;
    let Some(items) = list.get_mut("items").and_then(serde_json::Value::as_array_mut) else {
        return Err(AppError::Internal(anyhow::anyhow!("a kept agenda has no items")));
    };
    let ids: Vec<Uuid> = items.iter().filter_map(|card| card["id"].as_str()?.parse().ok()).collect();
    // At most the agenda's 50 ids: one statement.
    let mine: HashMap<Uuid, RegistrationStatus> = registrations::Entity::find()
        .select_only()
        .column(registrations::Column::TournamentId)
        .column(registrations::Column::Status)
        .filter(registrations::Column::UserId.eq(user_id))
        .filter(registrations::Column::TournamentId.is_in(ids))
        .into_tuple()
        .all(conn)
        .await?
        .into_iter()
        .collect();
    for card in items.iter_mut() {
        let status = card["id"].as_str().and_then(|id| id.parse::<Uuid>().ok()).and_then(|id| mine.get(&id));
        card["myStatus"] = serde_json::to_value(status).map_err(internal)?;
    }
    serde_json::to_vec(&list).map_err(internal)
}

/// The agenda's tournaments for `filter`, by start time, at most [`AGENDA_LIMIT`].
fn agenda_query(filter: AgendaFilter) -> sea_orm::Select<tournaments::Entity> {
    let mut query =
        tournaments::Entity::find().order_by_asc(tournaments::Column::StartsAt).order_by_asc(tournaments::Column::Id);
    query = match filter.status {
        Some(status) => query.filter(tournaments::Column::Status.eq(status)),
        None => {
            query.filter(tournaments::Column::Status.is_in([TournamentStatus::Registration, TournamentStatus::Running]))
        }
    };
    if let Some(city) = filter.city {
        query = query.filter(
            tournaments::Column::LocationId.in_subquery(
                SqlQuery::select()
                    .column(locations::Column::Id)
                    .from(locations::Entity)
                    .and_where(locations::Column::CitySlug.eq(city))
                    .to_owned(),
            ),
        );
    }
    if let Some(organizer_id) = filter.organizer_id {
        query = query.filter(tournaments::Column::OrganizerId.eq(organizer_id));
    }
    if let Some(from) = filter.from {
        query = query.filter(tournaments::Column::StartsAt.gte(from));
    }
    if let Some(to) = filter.to {
        query = query.filter(tournaments::Column::StartsAt.lte(to));
    }
    query.limit(AGENDA_LIMIT)
}
