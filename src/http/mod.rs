//! HTTP: one module per resource, each with its `router()`, merged here under `/api/v1`,
//! with the OpenAPI document generated from the same handlers and served at `/docs`.

mod admin;
mod announcements;
mod api_prefix;
mod auth;
mod blind_templates;
mod cached;
mod calendar_links;
mod club_exports;
mod compression;
mod dealer_invites;
mod dealers;
mod devices;
mod docs;
mod etag;
pub mod extract;
pub(crate) mod headers;
mod health;
mod idempotency;
mod internal;
mod leaderboards;
pub mod limits;
mod live;
mod locations;
mod me;
mod members;
mod metrics;
mod my_data;
mod my_registrations;
mod notifications;
mod organizers;
mod paced_body;
mod pages;
mod players;
pub mod read_cache;
mod reference;
mod registrations;
mod replay;
mod request_span;
mod results;
mod search;
mod seasons;
pub mod server;
pub mod state;
mod statuses;
mod strikes;
mod tournament_dealers;
mod tournaments;
mod uploads;
mod validate;
pub mod views;

use std::sync::{Arc, LazyLock};

use axum::http::{HeaderName, Request};
use axum::response::{IntoResponse, Response};
use axum::{Router, middleware};
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{OpenApi as OpenApiDoc, ServerBuilder};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;

use self::docs::DocumentLinks;
use crate::http::state::AppState;
use crate::infra::error::{AppError, ErrorCode};
use crate::infra::schema_formats;
use crate::infra::trace_context::TrustedCallers;

pub use self::api_prefix::API_PREFIX;
const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

#[derive(OpenApi)]
#[openapi(
    info(title = "Floor API", description = "Sport-poker clubs: registration, live game day, results and one rating. Errors are always `{\"error\": {\"code\", \"message\", \"details?\"}}`. Texts are trimmed of ASCII white space; no text of a body, a path or a query may hold U+0000 (nor a path or query parameter bytes that are not UTF-8 once percent-decoded), and inside a stored text no other C0 control or DEL may stand but, in a text of several lines (a description, a message), tab, LF and CR (`400 VALIDATION_ERROR` naming the field; each field states it as its pattern)."),
    modifiers(&BearerAuth, &DocumentLinks),
    components(schemas(
        crate::infra::error::ErrorCode,
        crate::infra::error::FieldProblem,
        reference::Name,
        reference::SlideText,
        crate::domain::tournaments::TournamentText,
    )),
)]
struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut OpenApiDoc) {
        openapi.servers = Some(vec![ServerBuilder::new().url(API_PREFIX).build()]);
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).bearer_format("JWT").build()),
        );
    }
}

/// All resources, with their OpenAPI descriptions.
fn api() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(auth::router())
        .merge(me::router())
        .merge(calendar_links::router())
        .merge(my_data::router())
        .merge(admin::router())
        .merge(organizers::router())
        .merge(members::router())
        .merge(dealer_invites::router())
        .merge(dealers::router())
        .merge(locations::router())
        .merge(blind_templates::router())
        .merge(tournaments::router())
        .merge(tournament_dealers::router())
        .merge(registrations::router())
        .merge(my_registrations::router())
        .merge(live::router())
        .merge(replay::router())
        .merge(announcements::router())
        .merge(results::router())
        .merge(club_exports::router())
        .merge(strikes::router())
        .merge(search::router())
        .merge(players::router())
        .merge(devices::router())
        .merge(notifications::router())
        .merge(leaderboards::router())
        .merge(seasons::router())
        .merge(reference::router())
        .merge(uploads::router())
        .merge(health::router())
}

/// The routes and the contract generated from them, with the abuse limits documented on the
/// operations they guard. Built once per process: generating the contract is most of a server's
/// start in a debug build (about 0.3 s), which the tests paid for every server they started.
fn api_parts() -> (Router<AppState>, OpenApiDoc) {
    static PARTS: LazyLock<(Router<AppState>, OpenApiDoc)> = LazyLock::new(build_api_parts);
    PARTS.clone()
}

fn build_api_parts() -> (Router<AppState>, OpenApiDoc) {
    let (api, mut openapi) = api().split_for_parts();
    limits::document(&mut openapi);
    idempotency::document(&mut openapi);
    etag::document(&mut openapi);
    statuses::document(&mut openapi);
    (api, schema_formats::with_patterns(openapi))
}

/// The contract as generated from the handlers: what `floor openapi` prints.
pub fn openapi() -> OpenApiDoc {
    api_parts().1
}

/// The whole HTTP application.
pub fn router(state: AppState) -> Router {
    let (api, openapi) = api_parts();
    let files = uploads::files_router(state.clone());
    let ready = health::ready_router(state.clone());
    let scrape = metrics::metrics_router(state.clone());
    let internal = internal::internal_router(state.clone());
    let screen = pages::screen::screen_router(state.clone());
    let share = pages::share::share_router(state.clone());
    let app_links = pages::app_links::app_links_router(&state.config.app_links);
    let print = pages::print::print_router(state.clone());
    let abuse_limits = Arc::new(limits::AbuseLimits::new(&state.config.limits, &openapi, state.sign_in.jwt.clone()));
    abuse_limits.spawn_sweeper();
    let calendar = pages::calendar::calendar_router(state.clone(), abuse_limits.clone());
    let account_deletion = pages::account_deletion::account_deletion_router(state.clone(), abuse_limits.clone());
    let idempotency = idempotency::Idempotency::new(&openapi);
    let trusted_callers = TrustedCallers::new(
        crate::infra::node_key::node_key(state.config.jwt_secret.expose()),
        state.config.telemetry.trusted_callers.clone(),
    );
    // Each `layer` or `route_layer` call wraps every route in one more boxed service, and
    // axum clones a route's whole chain of boxes on each request, at every level: so the
    // middleware of one place goes in as one stack (the first listed runs first).
    let api = api
        .route_layer(
            ServiceBuilder::new()
                .layer(middleware::from_fn_with_state(state.clone(), metrics::measure_requests))
                .layer(middleware::from_fn_with_state(abuse_limits, limits::limit_abuse))
                .layer(middleware::from_fn_with_state(idempotency, idempotency::answer_once))
                .layer(middleware::from_fn_with_state(state.clone(), cached::drop_on_change)),
        )
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
        .layer(ServiceBuilder::new().layer(compression::compression()).layer(middleware::from_fn(etag::tag_reads)));
    Router::new()
        .nest(API_PREFIX, api)
        .merge(docs::docs_router(openapi))
        .merge(files)
        .merge(ready)
        .merge(scrape)
        .merge(internal)
        .merge(screen)
        .merge(share)
        .merge(app_links)
        .merge(print)
        .merge(calendar)
        .merge(account_deletion)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(
            ServiceBuilder::new()
                .map_request(headers::keep_only_uuid_request_id(REQUEST_ID))
                .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
                .layer(
                    TraceLayer::new_for_http()
                        .make_span_with(move |request: &Request<_>| {
                            request_span::make_span(request, &REQUEST_ID, &trusted_callers)
                        })
                        .on_response(request_span::on_response)
                        .on_failure(request_span::on_failure),
                )
                .layer(PropagateRequestIdLayer::new(REQUEST_ID))
                .layer(CatchPanicLayer::custom(panic_response)),
        )
}

async fn not_found() -> AppError {
    AppError::new(ErrorCode::NotFound, "no such path")
}

async fn method_not_allowed() -> AppError {
    AppError::new(ErrorCode::MethodNotAllowed, "this path does not accept that method")
}

fn panic_response(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    AppError::Internal(anyhow::anyhow!("a request handler panicked")).into_response()
}
