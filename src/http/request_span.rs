//! The span of each HTTP request: the root of a press's trace on the node that took it, or a
//! child of the caller's span when the request carries a W3C `traceparent` (an instrumented
//! app, or another node handing this one a command). It is named by the route's pattern once
//! the router has matched it (`POST /api/v1/tournaments/{id}/pause`), never by its ids.

use std::time::Duration;

use axum::http::{HeaderName, Method, Request, Response};
use opentelemetry::trace::TraceContextExt as _;
use tower_http::trace::{DefaultOnResponse, OnResponse};
use tracing::Span;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use crate::trace_context;

/// The request's span, with the request id the service answers with.
pub fn make_span<B>(request: &Request<B>, request_id_header: &HeaderName) -> Span {
    let request_id = request.headers().get(request_id_header).and_then(|value| value.to_str().ok()).unwrap_or_default();
    // Until a route matches, the span is named by the method alone, as OpenTelemetry's HTTP
    // conventions name a request outside any route.
    let span = tracing::info_span!(
        "request",
        otel.name = %request.method(),
        otel.kind = "server",
        otel.status_code = Empty,
        method = %request.method(),
        path = %request.uri().path(),
        http.route = Empty,
        http.response.status_code = Empty,
        request_id,
    );
    trace_context::continue_caller(request.headers(), &span);
    span
}

/// Names the current request's span by its route's pattern. The trace's span is renamed
/// directly: tracing-opentelemetry reads `otel.name` only until the span has started, which
/// a request's span has by the time the router matched it.
pub fn name_by_route(method: &Method, route: &str) {
    let span = Span::current();
    span.record("http.route", route);
    let context = span.context();
    let traced = context.span();
    if traced.span_context().is_valid() {
        traced.update_name(format!("{method} {route}"));
    }
}

/// Records the status on the span (a `5xx` marks it failed), then does what tower-http does by
/// default (a DEBUG line with the latency).
pub fn on_response<B>(response: &Response<B>, latency: Duration, span: &Span) {
    let status = response.status();
    span.record("http.response.status_code", status.as_u16());
    if status.is_server_error() {
        span.record("otel.status_code", "ERROR");
    }
    DefaultOnResponse::default().on_response(response, latency, span);
}
