//! An OTLP/HTTP collector inside the tests: it takes the spans `floor serve` nodes export to
//! `POST /v1/traces`, decodes them with the exporter's own protobuf types and keeps them
//! flattened, one [`Span`] each, for the tests of traces to wait on and inspect.

use std::collections::HashMap;
use std::io::Read;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
pub(crate) use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message;

/// How often [`Collector::spans_until`] looks at what has arrived.
const POLL_EVERY: Duration = Duration::from_millis(100);

/// One exported span, ids in lowercase hex, attribute values rendered as strings.
#[derive(Clone, Debug)]
pub(crate) struct Span {
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a root span.
    pub parent_span_id: String,
    pub name: String,
    pub kind: SpanKind,
    pub start_nanos: u64,
    pub end_nanos: u64,
    pub attributes: HashMap<String, String>,
    /// The (trace id, span id) of each linked span.
    pub links: Vec<(String, String)>,
    /// The attributes of the resource that exported it: `service.name`, `service.instance.id`, …
    pub resource: HashMap<String, String>,
}

impl Span {
    pub fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }

    /// Whether the span links to the span `span_id` of trace `trace_id`.
    pub fn links_to(&self, trace_id: &str, span_id: &str) -> bool {
        self.links.iter().any(|(trace, span)| trace == trace_id && span == span_id)
    }

    /// The exporting node's `service.instance.id`, which tells the nodes of one test apart.
    pub fn instance(&self) -> Option<&str> {
        self.resource.get("service.instance.id").map(String::as_str)
    }
}

/// The spans of one trace as an indented tree, each with its node and duration, children in
/// the order they started: what an operator's trace view shows, as text.
pub fn tree(spans: &[Span]) -> String {
    let ids: std::collections::HashSet<&str> = spans.iter().map(|span| span.span_id.as_str()).collect();
    let mut roots: Vec<&Span> = spans.iter().filter(|span| !ids.contains(span.parent_span_id.as_str())).collect();
    roots.sort_by_key(|span| span.start_nanos);
    let mut text = String::new();
    for root in roots {
        branch(spans, root, 0, &mut text);
    }
    text
}

fn branch(spans: &[Span], span: &Span, depth: usize, text: &mut String) {
    let took = span.end_nanos.saturating_sub(span.start_nanos) as f64 / 1e6;
    let node = span.instance().unwrap_or("?");
    let port = node.rsplit(':').next().unwrap_or(node);
    text.push_str(&format!("{:indent$}{} [{port}] {took:.2} ms\n", "", span.name, indent = depth * 2));
    let mut children: Vec<&Span> = spans.iter().filter(|child| child.parent_span_id == span.span_id).collect();
    children.sort_by_key(|child| child.start_nanos);
    for child in children {
        branch(spans, child, depth + 1, text);
    }
}

impl std::fmt::Display for Span {
    /// One line, enough to read a dump of many spans.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {:?} trace={} span={} parent={} instance={} attributes={:?}",
            self.name,
            self.kind,
            self.trace_id,
            self.span_id,
            if self.parent_span_id.is_empty() { "-" } else { &self.parent_span_id },
            self.instance().unwrap_or("-"),
            self.attributes.iter().collect::<std::collections::BTreeMap<_, _>>(),
        )
    }
}

/// The collector, serving until dropped.
pub(crate) struct Collector {
    /// What a node takes as `OTEL_EXPORTER_OTLP_ENDPOINT` (no path: the exporter adds
    /// `/v1/traces`).
    pub endpoint: String,
    spans: Arc<Mutex<Vec<Span>>>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Collector {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl Collector {
    /// Starts a collector on a free port of 127.0.0.1.
    pub async fn start() -> Self {
        let spans = Arc::new(Mutex::new(Vec::new()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a port for the collector");
        let address = listener.local_addr().expect("the collector's address");
        let router = Router::new().route("/v1/traces", post(export_traces)).with_state(Arc::clone(&spans));
        let server = tokio::spawn(async move {
            axum::serve(listener, router).await.expect("the collector serves");
        });
        Self { endpoint: format!("http://{address}"), spans, server }
    }

    /// Every span received so far, in order of arrival.
    pub fn spans(&self) -> Vec<Span> {
        self.spans.lock().expect("the spans' lock").clone()
    }

    /// Waits until `done` holds over the spans received, and returns them; panics after
    /// `timeout` with every span received, so a failure shows what did arrive.
    pub async fn spans_until(&self, timeout: Duration, done: impl Fn(&[Span]) -> bool) -> Vec<Span> {
        let deadline = Instant::now() + timeout;
        loop {
            let spans = self.spans();
            if done(&spans) {
                return spans;
            }
            if Instant::now() >= deadline {
                let dump: Vec<String> = spans.iter().map(ToString::to_string).collect();
                panic!(
                    "the spans awaited did not arrive within {timeout:?}; received {}:\n{}",
                    spans.len(),
                    dump.join("\n")
                );
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
    }
}

/// `POST /v1/traces`: protobuf only (the exporter is built for it), gzip or not.
async fn export_traces(State(spans): State<Arc<Mutex<Vec<Span>>>>, headers: HeaderMap, body: Bytes) -> Response {
    let header_is = |name, value: &str| {
        headers.get(name).and_then(|found| found.to_str().ok()).is_some_and(|found| found.eq_ignore_ascii_case(value))
    };
    if !header_is(header::CONTENT_TYPE, "application/x-protobuf") {
        return (StatusCode::UNSUPPORTED_MEDIA_TYPE, "protobuf only").into_response();
    }
    let body = if header_is(header::CONTENT_ENCODING, "gzip") {
        let mut inflated = Vec::new();
        if let Err(error) = flate2::read::GzDecoder::new(&body[..]).read_to_end(&mut inflated) {
            return (StatusCode::BAD_REQUEST, format!("bad gzip: {error}")).into_response();
        }
        Bytes::from(inflated)
    } else {
        body
    };
    let request = match ExportTraceServiceRequest::decode(body) {
        Ok(request) => request,
        Err(error) => {
            return (StatusCode::BAD_REQUEST, format!("not an ExportTraceServiceRequest: {error}")).into_response();
        }
    };
    spans.lock().expect("the spans' lock").extend(flatten(request));
    let answer = ExportTraceServiceResponse::default().encode_to_vec();
    ([(header::CONTENT_TYPE, "application/x-protobuf")], answer).into_response()
}

/// The request's spans, each with its resource's attributes.
fn flatten(request: ExportTraceServiceRequest) -> Vec<Span> {
    let mut flat = Vec::new();
    for resource_spans in request.resource_spans {
        let resource = resource_spans.resource.map(|resource| rendered(&resource.attributes)).unwrap_or_default();
        for span in resource_spans.scope_spans.into_iter().flat_map(|scope| scope.spans) {
            flat.push(Span {
                trace_id: hex::encode(&span.trace_id),
                span_id: hex::encode(&span.span_id),
                parent_span_id: hex::encode(&span.parent_span_id),
                kind: SpanKind::try_from(span.kind).unwrap_or(SpanKind::Unspecified),
                start_nanos: span.start_time_unix_nano,
                end_nanos: span.end_time_unix_nano,
                attributes: rendered(&span.attributes),
                links: span
                    .links
                    .iter()
                    .map(|link| (hex::encode(&link.trace_id), hex::encode(&link.span_id)))
                    .collect(),
                resource: resource.clone(),
                name: span.name,
            });
        }
    }
    flat
}

fn rendered(attributes: &[KeyValue]) -> HashMap<String, String> {
    attributes.iter().map(|attribute| (attribute.key.clone(), text_of(attribute.value.as_ref()))).collect()
}

/// Scalars as they read; anything else (arrays, maps, bytes) in its debug form, enough to
/// compare in a test.
fn text_of(value: Option<&AnyValue>) -> String {
    match value.and_then(|value| value.value.as_ref()) {
        Some(any_value::Value::StringValue(text)) => text.clone(),
        Some(any_value::Value::IntValue(number)) => number.to_string(),
        Some(any_value::Value::BoolValue(flag)) => flag.to_string(),
        Some(any_value::Value::DoubleValue(number)) => number.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}
