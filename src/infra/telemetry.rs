//! Logs and traces: the global `tracing` subscriber and, when configured, OTLP/HTTP span export.

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::{Context, bail};
use opentelemetry::KeyValue;
use opentelemetry::trace::{Link, SpanKind, TraceContextExt as _, TraceId, TraceState, TracerProvider as _};
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Sampler, SamplingDecision, SamplingResult, SdkTracerProvider, ShouldSample};
use tracing::Subscriber;
use tracing_subscriber::fmt::FmtContext;
use tracing_subscriber::fmt::format::{FormatEvent, FormatFields, JsonFields, Writer};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry};

use crate::infra::config::TelemetryConfig;
use crate::infra::config::telemetry::{RootSampling, TraceSampler};

/// What goes into a trace, whatever `RUST_LOG` says of the log lines: Floor's own spans (the
/// request, the live command, its transaction, the fan-out) and sea-orm's span of each
/// statement, with its SQL and without its values. The other crates' spans and events stay
/// out (their warnings still reach the log).
const TRACES_FILTER: &str = "warn,floor=info,floor_actors=info,sea_orm=info";

/// Longest time `Drop` of [`TelemetryGuard`] waits for the last batch to reach the collector,
/// so an unreachable collector cannot hold up process exit for long.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// OTLP/HTTP path for spans, appended to the base endpoint as the OTLP specification does for
/// `OTEL_EXPORTER_OTLP_ENDPOINT`.
const TRACES_PATH: &str = "/v1/traces";

/// What [`init`] sets up, read from the configuration at start.
#[derive(Debug, Clone)]
pub struct TelemetrySettings {
    /// The log lines' form and the trace export, from the environment.
    pub config: TelemetryConfig,
    /// The `service.name` resource attribute of exported spans.
    pub service_name: &'static str,
    /// The `service.instance.id` resource attribute: tells the nodes' spans apart in a trace
    /// that crosses them (the node's `NODE_URL` when set).
    pub instance_id: String,
}

/// Keeps the span exporter alive; dropping it flushes the buffered spans and stops the export
/// thread. Hold it in `main` for the life of the process. Without OTLP it does nothing.
#[derive(Debug)]
#[must_use = "dropping the guard shuts the span exporter down at once"]
pub struct TelemetryGuard {
    /// The provider whose batch processor owns the export thread; `None` without OTLP.
    /// The global subscriber holds a clone inside its tracer, so the provider is never dropped
    /// for the last time on its own: the guard has to shut it down explicitly.
    provider: Option<SdkTracerProvider>,
}

impl Drop for TelemetryGuard {
    fn drop(&mut self) {
        let Some(provider) = self.provider.take() else {
            return;
        };
        // Safe on any thread, a tokio worker included: the batch processor and the blocking
        // reqwest client each run on threads of their own, so shutdown only sends a message over
        // a std channel and waits at most SHUTDOWN_TIMEOUT for the final export. Nothing here
        // needs the tokio runtime to make progress, and the reqwest client (whose drop must not
        // happen inside a runtime) is dropped on the processor's thread, not here.
        if let Err(error) = provider.shutdown_with_timeout(SHUTDOWN_TIMEOUT) {
            tracing::warn!(%error, "span exporter did not shut down cleanly; spans may be lost");
        }
    }
}

/// Installs the global subscriber: log lines filtered by `RUST_LOG` (its default is declared
/// with the other variables, in
/// [`TelemetryVariables`](crate::infra::config::TelemetryVariables)), JSON with the trace's
/// ids or human-readable; and when an OTLP endpoint is set and not blank, the spans of
/// [`TRACES_FILTER`] sampled as configured and sent in batches to `{endpoint}/v1/traces`.
/// Without an endpoint no span is kept past its log lines: nothing is exported and a trace
/// costs nothing.
///
/// Safe to call from inside `#[tokio::main]`. Fails on an invalid endpoint, or when a global
/// subscriber is already installed (the configuration has refused an invalid `RUST_LOG`).
pub fn init(settings: &TelemetrySettings) -> anyhow::Result<TelemetryGuard> {
    let config = &settings.config;
    let log_filter = EnvFilter::try_new(&config.log_filter)
        .with_context(|| format!("RUST_LOG={:?} is not a valid tracing filter", config.log_filter))?;

    // Blank counts as unset: compose files and env templates often pass the variable through
    // empty, and that should mean "no export", not a startup failure.
    let endpoint = config.otlp_endpoint.as_deref().map(str::trim).filter(|endpoint| !endpoint.is_empty());
    let provider = endpoint.map(|endpoint| otlp_tracer_provider(endpoint, settings)).transpose()?;
    let otel_layer = match &provider {
        Some(provider) => Some(
            tracing_opentelemetry::layer()
                .with_tracer(provider.tracer(settings.service_name))
                .with_filter(EnvFilter::try_new(TRACES_FILTER).context("the traces filter is invalid")?),
        ),
        None => None,
    };
    // A caller's `traceparent` (an app, or the node that hands this one a command) is read and
    // written in the W3C form.
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());

    let log_layer: Box<dyn Layer<Registry> + Send + Sync> = if config.json_logs {
        let lines =
            tracing_subscriber::fmt::format().json().flatten_event(true).with_current_span(true).with_span_list(false);
        Box::new(tracing_subscriber::fmt::layer().fmt_fields(JsonFields::new()).event_format(WithTraceIds(lines)))
    } else {
        Box::new(tracing_subscriber::fmt::layer().with_ansi(std::io::stdout().is_terminal()))
    };

    tracing_subscriber::registry()
        .with(log_layer.with_filter(log_filter))
        .with(otel_layer)
        .try_init()
        .context("installing the global tracing subscriber")?;

    // Only the scheme and host part of the endpoint: a collector URL may carry a token.
    if let Some(endpoint) = endpoint {
        tracing::info!(
            otlp_endpoint = %redacted(endpoint),
            service_name = settings.service_name,
            sampler = ?config.sampler,
            "exporting spans over OTLP/HTTP"
        );
    }
    Ok(TelemetryGuard { provider })
}

/// The JSON line of an event with `trace_id` and `span_id` of its span when it is part of a
/// trace, so an operator goes from a log line to its trace. tracing-subscriber's JSON writes
/// the rest; the two ids go in before its closing brace.
struct WithTraceIds<F>(F);

impl<S, N, F> FormatEvent<S, N> for WithTraceIds<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let ids = ctx.lookup_current().and_then(|span| {
            let context = tracing::dispatcher::get_default(|dispatch| {
                tracing_opentelemetry::get_otel_context(&span.id(), dispatch)
            })?;
            let span = context.span();
            let span_context = span.span_context();
            span_context.is_valid().then(|| (span_context.trace_id(), span_context.span_id()))
        });
        let Some((trace_id, span_id)) = ids else { return self.0.format_event(ctx, writer, event) };
        let mut line = String::new();
        self.0.format_event(ctx, Writer::new(&mut line), event)?;
        match line.trim_end().strip_suffix('}') {
            Some(object) => writeln!(writer, "{object},\"trace_id\":\"{trace_id}\",\"span_id\":\"{span_id}\"}}"),
            None => writer.write_str(&line),
        }
    }
}

/// Builds a tracer provider that samples as configured, batches spans and posts them as
/// protobuf to `{endpoint}/v1/traces`, naming the service and this instance of it.
///
/// Building is safe inside a tokio runtime: opentelemetry-otlp 0.33 constructs the blocking
/// reqwest client on a short-lived thread of its own, and the batch processor exports from its
/// own thread ("OpenTelemetry.Traces.BatchProcessor"), so no tokio thread ever blocks on I/O.
pub(crate) fn otlp_tracer_provider(endpoint: &str, settings: &TelemetrySettings) -> anyhow::Result<SdkTracerProvider> {
    let url = traces_url(endpoint)?;
    let exporter = SpanExporter::builder()
        .with_http()
        // Set explicitly: an OTEL_EXPORTER_OTLP_PROTOCOL left over in the environment would
        // otherwise pick a protocol this build cannot speak.
        .with_protocol(Protocol::HttpBinary)
        // A programmatic endpoint is used verbatim (the SDK appends /v1/traces only to the one
        // it reads from the environment), hence the full URL.
        .with_endpoint(url)
        .build()
        .with_context(|| format!("building the OTLP span exporter for {}", redacted(endpoint)))?;
    let resource = Resource::builder()
        .with_service_name(settings.service_name)
        .with_attribute(KeyValue::new("service.instance.id", settings.instance_id.clone()))
        .build();
    Ok(SdkTracerProvider::builder()
        .with_sampler(sampler(settings.config.sampler))
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build())
}

/// The SDK's sampler for the configured one, without the traces nobody opens.
fn sampler(configured: TraceSampler) -> WithoutProbes {
    let root = match configured.root {
        RootSampling::Always => Sampler::AlwaysOn,
        RootSampling::Never => Sampler::AlwaysOff,
        RootSampling::Ratio(ratio) => Sampler::TraceIdRatioBased(ratio),
    };
    WithoutProbes(if configured.parent_based { Sampler::ParentBased(Box::new(root)) } else { root })
}

/// Paths that probes and scrapers call every few seconds on every node: their traces would
/// bury the presses.
const UNTRACED_PATHS: [&str; 3] = ["/ready", "/health", "/metrics"];

/// The configured sampler, except that a trace that would begin with a probe's request or
/// with a statement outside any request or job (the migrations at start) is not kept. Inside
/// a trace every span follows the trace's decision as before.
#[derive(Clone, Debug)]
struct WithoutProbes(Sampler);

impl ShouldSample for WithoutProbes {
    fn should_sample(
        &self,
        parent: Option<&opentelemetry::Context>,
        trace_id: TraceId,
        name: &str,
        kind: &SpanKind,
        attributes: &[KeyValue],
        links: &[Link],
    ) -> SamplingResult {
        let begins_a_trace = parent.is_none_or(|parent| !parent.span().span_context().is_valid());
        if begins_a_trace && is_noise(name, attributes) {
            return SamplingResult {
                decision: SamplingDecision::Drop,
                attributes: Vec::new(),
                trace_state: TraceState::default(),
            };
        }
        self.0.should_sample(parent, trace_id, name, kind, attributes, links)
    }
}

/// A probe's request (by its `path`), or a database statement on its own.
fn is_noise(name: &str, attributes: &[KeyValue]) -> bool {
    name.starts_with("sea_orm.")
        || attributes.iter().any(|attribute| {
            attribute.key.as_str() == "path" && UNTRACED_PATHS.contains(&attribute.value.as_str().as_ref())
        })
}

/// `{endpoint}/v1/traces` with exactly one slash between, after checking the scheme: the SDK
/// accepts `collector:4318` as a URI and would only fail on the first export.
fn traces_url(endpoint: &str) -> anyhow::Result<String> {
    let base = endpoint.trim().trim_end_matches('/');
    if !(base.starts_with("http://") || base.starts_with("https://")) {
        bail!("OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL, got {:?}", redacted(endpoint));
    }
    Ok(format!("{base}{TRACES_PATH}"))
}

/// The endpoint without user info, path or query, fit for logs and error messages.
fn redacted(endpoint: &str) -> String {
    let (scheme, rest) = endpoint.split_once("://").unwrap_or(("", endpoint));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    if scheme.is_empty() { host.to_owned() } else { format!("{scheme}://{host}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpListener;
    use std::sync::mpsc;

    /// What the fake collector saw: request line and body.
    struct Received {
        request_line: String,
        body: Vec<u8>,
    }

    /// A one-request OTLP collector on a std thread, so it answers whatever the test's runtime
    /// is doing (a blocking shutdown on a current-thread runtime included).
    fn fake_collector() -> anyhow::Result<(String, mpsc::Receiver<Received>)> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let address = listener.local_addr()?;
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || -> anyhow::Result<()> {
            let (stream, _) = listener.accept()?;
            let mut reader = BufReader::new(stream.try_clone()?);
            let mut request_line = String::new();
            reader.read_line(&mut request_line)?;
            let mut content_length = 0;
            loop {
                let mut header = String::new();
                reader.read_line(&mut header)?;
                let header = header.trim_end();
                if header.is_empty() {
                    break;
                }
                if let Some((name, value)) = header.split_once(':')
                    && name.eq_ignore_ascii_case("content-length")
                {
                    content_length = value.trim().parse()?;
                }
            }
            let mut body = vec![0; content_length];
            reader.read_exact(&mut body)?;
            // Handed over before answering: the export, and so the shutdown, cannot finish
            // before the test can see what arrived.
            sender.send(Received { request_line: request_line.trim_end().to_owned(), body })?;
            let mut stream = stream;
            stream.write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\n\
                  content-length: 0\r\nconnection: close\r\n\r\n",
            )?;
            Ok(())
        });
        // Trailing slash on purpose: the path must still come out as /v1/traces.
        Ok((format!("http://{address}/"), receiver))
    }

    fn contains(haystack: &[u8], needle: &[u8]) -> bool {
        haystack.windows(needle.len()).any(|window| window == needle)
    }

    // A current-thread runtime, the harshest place to build and drop the exporter: a blocking
    // call that needed the runtime would hang here.
    #[tokio::test]
    async fn a_span_reaches_the_collector_when_the_guard_is_dropped() -> anyhow::Result<()> {
        let (endpoint, received) = fake_collector()?;
        let settings = TelemetrySettings {
            config: TelemetryConfig {
                json_logs: false,
                log_filter: "info".to_owned(),
                otlp_endpoint: Some(endpoint.clone()),
                sampler: TraceSampler { parent_based: true, root: RootSampling::Always },
                trusted_callers: Vec::new(),
            },
            service_name: "floor",
            instance_id: "http://node-a:8080".to_owned(),
        };
        let provider = otlp_tracer_provider(&endpoint, &settings)?;
        let subscriber =
            tracing_subscriber::registry().with(tracing_opentelemetry::layer().with_tracer(provider.tracer("floor")));
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("seat_players", tournament_id = 7);
            let _entered = span.enter();
            tracing::info!("seated");
        });

        // The batch delay is 5 s, so nothing has left yet; the drop must flush and wait for
        // the export, which means the request has arrived by the time it returns.
        drop(TelemetryGuard { provider: Some(provider) });

        let request = received.try_recv()?;
        assert_eq!(request.request_line, "POST /v1/traces HTTP/1.1");
        assert!(contains(&request.body, b"seat_players"), "span name missing");
        assert!(contains(&request.body, b"service.name"), "resource missing");
        assert!(contains(&request.body, b"floor"), "service name missing");
        assert!(contains(&request.body, b"http://node-a:8080"), "instance id missing");
        Ok(())
    }

    #[test]
    fn probes_and_lone_statements_begin_no_trace_and_the_rest_follow_the_sampler() {
        let keep_all = sampler(TraceSampler { parent_based: true, root: RootSampling::Always });
        let decide = |name: &str, path: Option<&str>, parent: Option<&opentelemetry::Context>| {
            let attributes: Vec<KeyValue> =
                path.map(|path| KeyValue::new("path", path.to_owned())).into_iter().collect();
            keep_all.should_sample(parent, TraceId::from(7), name, &SpanKind::Server, &attributes, &[]).decision
        };
        for path in UNTRACED_PATHS {
            assert_eq!(decide("GET", Some(path), None), SamplingDecision::Drop, "{path}");
        }
        assert_eq!(decide("sea_orm.execute", None, None), SamplingDecision::Drop);
        assert_eq!(decide("POST", Some("/api/v1/tournaments/x/pause"), None), SamplingDecision::RecordAndSample);
        assert_eq!(decide("live.publish", None, None), SamplingDecision::RecordAndSample);

        // Inside a kept trace a statement is kept; inside a dropped one nothing is.
        let span_context = |flags| {
            opentelemetry::trace::SpanContext::new(
                TraceId::from(7),
                opentelemetry::trace::SpanId::from(9),
                flags,
                true,
                TraceState::default(),
            )
        };
        let kept = opentelemetry::Context::new()
            .with_remote_span_context(span_context(opentelemetry::trace::TraceFlags::SAMPLED));
        let dropped = opentelemetry::Context::new()
            .with_remote_span_context(span_context(opentelemetry::trace::TraceFlags::default()));
        assert_eq!(decide("sea_orm.execute", None, Some(&kept)), SamplingDecision::RecordAndSample);
        assert_eq!(decide("POST", Some("/api/v1/me"), Some(&dropped)), SamplingDecision::Drop);
    }

    #[test]
    fn a_guard_without_otlp_drops_quietly() {
        drop(TelemetryGuard { provider: None });
    }

    #[test]
    fn the_traces_url_appends_one_path_to_the_base_endpoint() -> anyhow::Result<()> {
        assert_eq!(traces_url("http://collector:4318")?, "http://collector:4318/v1/traces");
        assert_eq!(traces_url("https://otlp.example.com/otlp/")?, "https://otlp.example.com/otlp/v1/traces");
        assert!(traces_url("collector:4318").is_err());
        Ok(())
    }

    #[test]
    fn endpoints_are_logged_without_credentials_or_paths() {
        assert_eq!(redacted("https://user:secret@otlp.example.com/otlp?token=x"), "https://otlp.example.com");
        assert_eq!(redacted("collector:4318"), "collector:4318");
    }
}
