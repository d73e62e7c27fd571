//! The span of each HTTP request: the root of a press's trace on the node that took it, or a
//! child of the caller's span when a trusted caller (another node handing this one a command)
//! sends a W3C `traceparent` ([`trace_context`]). It is named by the route's pattern once the
//! router has matched it (`POST /api/v1/tournaments/{id}/pause`), never by its ids. Its
//! `path` never holds a secret ([`shown_path`]): log lines and exported traces carry it.

use std::borrow::Cow;
use std::time::Duration;

use axum::http::{HeaderName, Method, Request, Response, StatusCode};
use opentelemetry::trace::TraceContextExt as _;
use tower_http::classify::ServerErrorsFailureClass;
use tower_http::trace::{DefaultOnFailure, DefaultOnResponse, OnFailure, OnResponse};
use tracing::Span;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use crate::infra::trace_context::{self, TrustedCallers};

/// The request's span, with the request id the service answers with.
pub fn make_span<B>(request: &Request<B>, request_id_header: &HeaderName, trusted: &TrustedCallers) -> Span {
    let request_id = request.headers().get(request_id_header).and_then(|value| value.to_str().ok()).unwrap_or_default();
    // Until a route matches, the span is named by the method alone, as OpenTelemetry's HTTP
    // conventions name a request outside any route.
    let span = tracing::info_span!(
        "request",
        otel.name = %request.method(),
        otel.kind = "server",
        otel.status_code = Empty,
        method = %request.method(),
        path = %shown_path(request.uri().path()),
        http.route = Empty,
        http.response.status_code = Empty,
        request_id,
    );
    trace_context::continue_caller(request, &span, trusted);
    span
}

/// Characters a secret in an address is made of; a run of [`SECRET_RUN`] or more of them is
/// taken for one.
fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-' || c == '_'
}

/// The shortest run of token characters that is taken for a secret: a calendar feed's is 64.
/// An id in a path is a hyphenated UUID, which is shown.
const SECRET_RUN: usize = 32;

/// What a span and a log line show of a request's path: each segment that holds a secret (a
/// run of [`SECRET_RUN`] or more letters, digits, `-` or `_` that is not a UUID: the calendar
/// feed's address, and any secret link to come) is `{secret}`, its extension kept. The rest as
/// sent; the query is never shown.
pub fn shown_path(path: &str) -> Cow<'_, str> {
    if !path.split('/').any(holds_a_secret) {
        return Cow::Borrowed(path);
    }
    let shown: Vec<Cow<'_, str>> = path
        .split('/')
        .map(|segment| match segment.rsplit_once('.') {
            _ if !holds_a_secret(segment) => Cow::Borrowed(segment),
            Some((stem, extension)) if holds_a_secret(stem) && !holds_a_secret(extension) => {
                Cow::Owned(format!("{{secret}}.{extension}"))
            }
            _ => Cow::Borrowed("{secret}"),
        })
        .collect();
    Cow::Owned(shown.join("/"))
}

fn holds_a_secret(segment: &str) -> bool {
    let is_id = |run: &str| run.len() == 36 && uuid::Uuid::try_parse(run).is_ok();
    segment.split(|c| !is_token_char(c)).any(|run| run.len() >= SECRET_RUN && !is_id(run))
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

/// A `5xx` as tower-http logs it (ERROR), except a `503`: the contract's "not now" (a
/// dependency down, a graceful shutdown begun, a connection cap), whose cause the log has
/// already heard once where it arose; a line per request would page whoever alerts on ERROR
/// at every deploy and every blink of PostgreSQL. The span carries its status either way.
pub fn on_failure(failure: ServerErrorsFailureClass, latency: Duration, span: &Span) {
    match failure {
        ServerErrorsFailureClass::StatusCode(StatusCode::SERVICE_UNAVAILABLE) => {
            tracing::debug!(latency_ms = latency.as_millis(), "answered 503: not now");
        }
        failure => DefaultOnFailure::default().on_failure(failure, latency, span),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_in_a_path_is_never_shown() {
        let secret = "0a1566f076dfbcd0eec61e699c880b6954bc6578bda0428d9eea15c1d1dadde8";
        assert_eq!(shown_path(&format!("/calendar/{secret}.ics")), "/calendar/{secret}.ics");
        assert_eq!(shown_path(&format!("/calendar/{secret}")), "/calendar/{secret}");
        assert_eq!(shown_path(&format!("/calendar/{secret}.ics/more")), "/calendar/{secret}.ics/more");
        assert_eq!(shown_path(&format!("/x/{secret}.{secret}")), "/x/{secret}");
        let token = "dGhpcyBpcyBhIHNlY3JldCB0b2tlbiBvZiBhIGxpbmsK_-";
        assert_eq!(shown_path(&format!("/invite/{token}/accept")), "/invite/{secret}/accept");
    }

    #[test]
    fn ids_and_ordinary_paths_are_shown_as_sent() {
        for path in [
            "/api/v1/tournaments/01a21b1f-b476-7510-b11c-f320337d80c2/live",
            "/files/01a21b1f-b476-7510-b11c-f320337d80c2.png",
            "/screen/assets/screen.js",
            "/api/v1/cities",
            "/",
            "",
            "/account/delete",
        ] {
            assert!(matches!(shown_path(path), Cow::Borrowed(shown) if shown == path), "{path}");
        }
    }
}
