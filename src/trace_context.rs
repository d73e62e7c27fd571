//! A trace across processes: the W3C `traceparent` read from a caller (an app instrumented with
//! OpenTelemetry, or the node that hands this one a command), written on the calls this node
//! makes, and carried in the notes between nodes. Without span export (no
//! `OTEL_EXPORTER_OTLP_ENDPOINT`) spans have no OpenTelemetry context: nothing is read or
//! written and these cost nothing.

use std::collections::HashMap;

use axum::http::HeaderMap;
use opentelemetry::global;
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry_http::{HeaderExtractor, HeaderInjector};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The header of the W3C trace context.
const TRACEPARENT: &str = "traceparent";

/// Makes `span` (new, not yet entered) part of the caller's trace when the request carries a
/// `traceparent`: its spans join the caller's, and the sampler follows the caller's decision.
pub fn continue_caller(headers: &HeaderMap, span: &Span) {
    if !headers.contains_key(TRACEPARENT) {
        return;
    }
    let caller = global::get_text_map_propagator(|propagator| propagator.extract(&HeaderExtractor(headers)));
    if caller.span().span_context().is_valid() {
        // Refused only for a span already started, which a new one is not.
        let _ = span.set_parent(caller);
    }
}

/// Writes the current span's context into `headers`, so the called node's spans join this
/// trace.
pub fn hand_on(headers: &mut HeaderMap) {
    let context = Span::current().context();
    if context.span().span_context().is_valid() {
        global::get_text_map_propagator(|propagator| propagator.inject_context(&context, &mut HeaderInjector(headers)));
    }
}

/// The current span's `traceparent`, for a note to the other nodes; `None` outside a trace.
pub fn current_traceparent() -> Option<String> {
    let context = Span::current().context();
    if !context.span().span_context().is_valid() {
        return None;
    }
    let mut fields = HashMap::new();
    global::get_text_map_propagator(|propagator| propagator.inject_context(&context, &mut fields));
    fields.remove(TRACEPARENT)
}

/// Links `span` to the trace of a note's `traceparent`: the work a note starts on another
/// node is a trace of its own, found from the change's trace and back.
pub fn link_to(span: &Span, traceparent: &str) {
    let fields = HashMap::from([(TRACEPARENT.to_owned(), traceparent.to_owned())]);
    let noted = global::get_text_map_propagator(|propagator| propagator.extract(&fields));
    let noted = noted.span().span_context().clone();
    if noted.is_valid() {
        span.add_link(noted);
    }
}

/// Whether the current span's trace goes to the collector: what only a trace needs (a room's
/// size) is worked out only then.
pub fn is_sampled() -> bool {
    Span::current().context().span().span_context().is_sampled()
}
