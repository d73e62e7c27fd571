//! A trace across processes: the W3C `traceparent` read from a caller (the node that hands
//! this one a command, or a gateway the operator trusts), written on the calls this node makes,
//! and carried in the notes between nodes. Without span export (no
//! `OTEL_EXPORTER_OTLP_ENDPOINT`) spans have no OpenTelemetry context: nothing is read or
//! written and these cost nothing.
//!
//! Floor decides what it traces. Only a trusted caller's `traceparent` is continued, its
//! sampling decision with it: another node (it presents the nodes' key) or a peer of
//! `TRACE_TRUSTED_CALLERS`. Anyone else's starts a trace of Floor's own, sampled as new traces
//! are, and linked to the caller's span: a client can neither make Floor trace (and export)
//! every request it sends nor lose the thread between its trace and Floor's.

use std::collections::HashMap;
use std::net::SocketAddr;

use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, Request};
use ipnet::IpNet;
use opentelemetry::global;
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry_http::{HeaderExtractor, HeaderInjector};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use crate::infra::node_key::{NODE_KEY, is_node_key};

/// The header of the W3C trace context.
const TRACEPARENT: &str = "traceparent";

/// Whose `traceparent` a request continues.
#[derive(Clone, Debug)]
pub struct TrustedCallers {
    /// The key the other nodes present on their calls (`x-floor-node-key`).
    node_key: String,
    /// `TRACE_TRUSTED_CALLERS`.
    networks: Vec<IpNet>,
}

impl TrustedCallers {
    pub fn new(node_key: String, networks: Vec<IpNet>) -> Self {
        Self { node_key, networks }
    }

    /// Whether `request` comes from a caller whose trace, and its sampling decision, this
    /// node continues.
    fn trust<B>(&self, request: &Request<B>) -> bool {
        let from_a_node = request
            .headers()
            .get(NODE_KEY)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|presented| is_node_key(presented, &self.node_key));
        from_a_node || self.peer_is_trusted(request)
    }

    fn peer_is_trusted<B>(&self, request: &Request<B>) -> bool {
        let Some(ConnectInfo(peer)) = request.extensions().get::<ConnectInfo<SocketAddr>>() else { return false };
        let peer = peer.ip().to_canonical();
        self.networks.iter().any(|network| network.contains(&peer))
    }
}

/// Places `span` (new, not yet entered) in the caller's trace when `request` carries a
/// `traceparent`: a trusted caller's is continued (its spans and sampling decision); anyone
/// else's is only linked, and the span begins a trace that Floor samples as its own.
pub fn continue_caller<B>(request: &Request<B>, span: &Span, trusted: &TrustedCallers) {
    let headers = request.headers();
    if !headers.contains_key(TRACEPARENT) {
        return;
    }
    let caller = global::get_text_map_propagator(|propagator| propagator.extract(&HeaderExtractor(headers)));
    let caller_span = caller.span().span_context().clone();
    if !caller_span.is_valid() {
        return;
    }
    if trusted.trust(request) {
        // Refused only for a span already started, which a new one is not.
        let _ = span.set_parent(caller);
    } else {
        span.add_link(caller_span);
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
