//! The nodes' own door: `POST /internal/live/{tournamentId}`, where another node hands this
//! one a command of a tournament it runs ([`crate::domain::live::forward`]). Not part of the API: it
//! answers only callers holding the nodes' key, and the load balancer does not route it.
//!
//! The key is checked before anything of the request is read, so an outsider learns nothing of
//! the protocol from its refusals; and a single node (no `REDIS_URL`), which no other node
//! calls, has no such door at all.

use axum::extract::{Path, Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use uuid::Uuid;

use floor_actors::error::{LiveError, Refusal};
use floor_entities::enums::UserStatus;
use floor_entities::{tournaments, users};
use sea_orm::EntityTrait;

use crate::domain::auth::permissions::ClubRule;
use crate::domain::live::forward::{Answered, Handed, INTERNAL_PATH};
use crate::http::extract::Json;
use crate::http::extract::club_role;
use crate::http::state::AppState;
use crate::infra::error::{AppError, AppResult, ErrorCode};
use crate::infra::node_key::{NODE_KEY, is_node_key, node_key};

pub fn internal_router(state: AppState) -> axum::Router {
    if state.config.redis_url.is_none() {
        return axum::Router::new();
    }
    axum::Router::new()
        .route(INTERNAL_PATH, post(run_handed))
        .route_layer(middleware::from_fn_with_state(state.clone(), only_nodes))
        .with_state(state)
}

/// Refuses (`403`) a caller without the nodes' key, before its body is read.
async fn only_nodes(State(app): State<AppState>, request: Request, next: Next) -> Response {
    let presented = request.headers().get(NODE_KEY).and_then(|value| value.to_str().ok()).unwrap_or_default();
    if !is_node_key(presented, &node_key(app.config.jwt_secret.expose())) {
        return AppError::new(ErrorCode::Forbidden, "only the nodes of this service call here").into_response();
    }
    next.run(request).await
}

/// Runs the handed work here, without handing it on, and answers within the work's own bound
/// ([`Handed::owner_answers_within`]): past it, that its outcome is unknown, which the calling
/// node, waiting longer, passes on as it would its own. A node that no longer runs the
/// tournament says so, and the caller asks again who does.
async fn run_handed(
    State(app): State<AppState>,
    Path(tournament_id): Path<Uuid>,
    Json(work): Json<Handed>,
) -> axum::Json<Answered> {
    super::request_span::name_by_route(&axum::http::Method::POST, INTERNAL_PATH);
    let within = work.owner_answers_within(app.config.database_deadline);
    let answered = tokio::time::timeout(within, run_checked(&app, tournament_id, work)).await;
    axum::Json(answered.unwrap_or_else(|_| {
        tracing::warn!(%tournament_id, ?within, "work handed over by another node was not finished in time; answered as of unknown outcome");
        Answered::unfinished(within)
    }))
}

/// Runs the handed work here. A command is run only for an account that may run it here and
/// now: the calling node checked, but the key alone must not let its holder act as anyone on
/// any club.
async fn run_checked(app: &AppState, tournament_id: Uuid, work: Handed) -> Answered {
    if let Handed::Command { by, .. } | Handed::Replay { by, .. } = &work {
        // The check's own failure crosses as the engine speaks it: a database out of reach is
        // `503` on the calling node too, not a refused call (a `500`).
        let refusal = refusal_of_actor(app, tournament_id, *by).await.unwrap_or_else(|err| Some(err.into_live()));
        if let Some(refusal) = refusal {
            return Answered::of(Err(refusal));
        }
    }
    Answered::of(app.live.here(tournament_id, work).await)
}

/// Why account `by` may not run a live command of the tournament, if it may not: the rule
/// of the HTTP guard (an active owner or td of the tournament's club), read again here.
async fn refusal_of_actor(app: &AppState, tournament_id: Uuid, by: Uuid) -> AppResult<Option<LiveError>> {
    let Some(tournament) = tournaments::Entity::find_by_id(tournament_id).one(&app.reads).await? else {
        return Ok(Some(LiveError::not_found("tournament")));
    };
    let forbidden = || Some(LiveError::refused(Refusal::Forbidden, "the acting account may not run this command"));
    let Some(user) = users::Entity::find_by_id(by).one(&app.reads).await? else { return Ok(forbidden()) };
    if user.status != UserStatus::Active {
        return Ok(forbidden());
    }
    let role = club_role(app, tournament.organizer_id, by).await?;
    Ok(if ClubRule::STAFF.allows(role, user.admin_role) { None } else { forbidden() })
}
