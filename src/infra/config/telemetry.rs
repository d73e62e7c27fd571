//! How the service reports on itself: the form of its log lines and which traces it keeps and
//! sends to a collector ([`crate::infra::telemetry::init`] applies them).
//!
//! The sampler's names are the OpenTelemetry SDKs' own. An unknown name or a ratio outside
//! 0–1 refuses to start: the SDK would quietly fall back to keeping every trace.
//!
//! A `traceparent` from anyone not in `TRACE_TRUSTED_CALLERS` (an app, a script, anyone on the internet) never makes
//! Floor keep a trace: the request starts a trace of its own, sampled as `OTEL_TRACES_SAMPLER`
//! says for new traces, with a link to the caller's span so the two can still be found from
//! each other. `TRUSTED_PROXIES` is no such list: a proxy passes its clients' headers on.

use ipnet::IpNet;

use super::error::{ConfigError, invalid};
use super::limits::parse_networks;
use super::variables::{Refused, read};

/// The variables of the log lines and the traces.
#[derive(clap::Args)]
pub struct TelemetryVariables {
    /// `json`: one object per line, with `trace_id` and `span_id` inside a trace; `text`: lines
    /// for people.
    ///
    /// Default: `json` in production, else `text`
    #[arg(long, env = "LOG_FORMAT", value_parser = log_format)]
    pub log_format: Option<LogFormat>,
    /// The filter of the log lines (not of the traces), as `tracing`'s `EnvFilter` reads it.
    // sqlx logs every statement at INFO, so the noisy crates are held at WARN.
    #[arg(
        long,
        env = "RUST_LOG",
        default_value = "info,sqlx=warn,sea_orm=warn,hyper=warn,tower_http=info",
        value_parser = log_filter
    )]
    pub rust_log: String,
    /// An OTLP/HTTP collector's base URL (`http://otel-collector:4318`; spans go to
    /// `/v1/traces`); unset: no span is kept or sent.
    #[arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    pub otel_exporter_otlp_endpoint: Option<String>,
    /// Which traces are kept: `always_on`, `always_off`, `traceidratio`, or each as
    /// `parentbased_*` (a trusted caller's `traceparent` decides).
    #[arg(long, env = "OTEL_TRACES_SAMPLER", default_value = "parentbased_always_on", value_parser = trace_sampler)]
    pub otel_traces_sampler: TraceSampler,
    /// The share of new traces a `*traceidratio` sampler keeps, from 0 to 1; the other
    /// samplers ignore it, as the OpenTelemetry SDKs do, so it is read only for them.
    #[arg(long, env = "OTEL_TRACES_SAMPLER_ARG", default_value = "1.0")]
    pub otel_traces_sampler_arg: String,
    /// Comma-separated IPs and CIDRs (an instrumented gateway) whose `traceparent` a request
    /// continues, sampling decision included; the other nodes are always trusted.
    // `std::vec::Vec`, spelled out, is one value to clap: the list is one variable.
    #[arg(long, env = "TRACE_TRUSTED_CALLERS", default_value = "", value_parser = parse_networks)]
    pub trace_trusted_callers: std::vec::Vec<IpNet>,
}

/// What [`crate::infra::telemetry::init`] needs from the environment.
#[derive(Clone, Debug, PartialEq)]
pub struct TelemetryConfig {
    /// One JSON object per line (for log collectors), else human-readable lines.
    pub json_logs: bool,
    /// The filter of the log lines, checked to read.
    pub log_filter: String,
    /// Base URL of an OTLP/HTTP collector (`http://otel-collector:4318`); `None`: no export.
    pub otlp_endpoint: Option<String>,
    pub sampler: TraceSampler,
    /// Peers whose `traceparent` a request continues, sampling decision included.
    pub trusted_callers: Vec<IpNet>,
}

/// Which traces are kept, as `OTEL_TRACES_SAMPLER` names it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TraceSampler {
    /// A span whose caller sent a `traceparent` follows the caller's decision; `root` decides
    /// only for traces that begin here.
    pub parent_based: bool,
    pub root: RootSampling,
}

/// The decision for a trace that begins here (or for every span, without `parent_based`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RootSampling {
    Always,
    Never,
    /// This share of traces, chosen by trace id, so every node keeps or drops the same ones.
    Ratio(f64),
}

const SAMPLERS: &str =
    "always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio";

impl TelemetryConfig {
    /// Reads the variables through `get`; `production` decides the default form of the lines.
    pub fn from_env(get: impl Fn(&str) -> Option<String>, production: bool) -> Result<Self, ConfigError> {
        Self::from_variables(read(&get)?, production)
    }

    pub(super) fn from_variables(variables: TelemetryVariables, production: bool) -> Result<Self, ConfigError> {
        let mut sampler = variables.otel_traces_sampler;
        if let RootSampling::Ratio(_) = sampler.root {
            let text = variables.otel_traces_sampler_arg;
            let ratio = text.parse::<f64>().ok().filter(|ratio| (0.0..=1.0).contains(ratio));
            let ratio = ratio.ok_or_else(|| invalid("OTEL_TRACES_SAMPLER_ARG", &text, "a ratio from 0 to 1"))?;
            sampler.root = RootSampling::Ratio(ratio);
        }
        Ok(Self {
            json_logs: variables.log_format.map_or(production, |format| format == LogFormat::Json),
            log_filter: variables.rust_log,
            otlp_endpoint: variables.otel_exporter_otlp_endpoint,
            sampler,
            trusted_callers: variables.trace_trusted_callers,
        })
    }
}

/// The form of the log lines, as `LOG_FORMAT` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogFormat {
    Json,
    Text,
}

fn log_format(text: &str) -> Result<LogFormat, Refused> {
    match text {
        "json" => Ok(LogFormat::Json),
        "text" => Ok(LogFormat::Text),
        _ => Err(Refused::expected("json or text")),
    }
}

/// A filter `tracing` can use: a typo refuses to start rather than quietly turning off the
/// lines someone went looking for.
fn log_filter(text: &str) -> Result<String, Refused> {
    tracing_subscriber::EnvFilter::try_new(text)
        .map(|_| text.to_owned())
        .map_err(|_| Refused::expected("a tracing filter, as info,floor=debug"))
}

/// Reads the sampler as the OpenTelemetry specification names it; a ratio sampler's share is
/// `OTEL_TRACES_SAMPLER_ARG`'s, read once the sampler is known.
fn trace_sampler(name: &str) -> Result<TraceSampler, Refused> {
    let (parent_based, root) = match name.strip_prefix("parentbased_") {
        Some(root) => (true, root),
        None => (false, name),
    };
    let root = match root {
        "always_on" => RootSampling::Always,
        "always_off" => RootSampling::Never,
        "traceidratio" => RootSampling::Ratio(1.0),
        _ => return Err(Refused::expected(SAMPLERS)),
    };
    Ok(TraceSampler { parent_based, root })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn read(vars: &[(&str, &str)], production: bool) -> Result<TelemetryConfig, ConfigError> {
        let vars: HashMap<String, String> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        TelemetryConfig::from_env(|name| vars.get(name).cloned(), production)
    }

    #[test]
    fn by_default_logs_are_json_in_production_only_and_every_trace_is_kept_unless_the_caller_says_no() {
        let development = read(&[], false).expect("valid");
        assert!(!development.json_logs);
        assert_eq!(development.otlp_endpoint, None);
        assert_eq!(development.sampler, TraceSampler { parent_based: true, root: RootSampling::Always });
        assert!(development.trusted_callers.is_empty(), "no caller decides Floor's sampling unless named");
        assert!(read(&[], true).expect("valid").json_logs);
        assert!(read(&[("LOG_FORMAT", "json")], false).expect("valid").json_logs);
        assert!(!read(&[("LOG_FORMAT", "text")], true).expect("valid").json_logs);
    }

    #[test]
    fn every_sampler_of_the_specification_reads() {
        let cases = [
            ("always_on", None, false, RootSampling::Always),
            ("always_off", None, false, RootSampling::Never),
            ("traceidratio", Some("0.25"), false, RootSampling::Ratio(0.25)),
            ("traceidratio", None, false, RootSampling::Ratio(1.0)),
            ("parentbased_always_on", None, true, RootSampling::Always),
            ("parentbased_always_off", None, true, RootSampling::Never),
            ("parentbased_traceidratio", Some("0"), true, RootSampling::Ratio(0.0)),
            ("parentbased_traceidratio", Some("1"), true, RootSampling::Ratio(1.0)),
        ];
        for (name, arg, parent_based, root) in cases {
            let mut vars = vec![("OTEL_TRACES_SAMPLER", name)];
            vars.extend(arg.map(|arg| ("OTEL_TRACES_SAMPLER_ARG", arg)));
            assert_eq!(read(&vars, false).expect(name).sampler, TraceSampler { parent_based, root }, "{name}");
        }
    }

    #[test]
    fn a_sampler_or_ratio_the_sdk_would_quietly_replace_refuses_to_start() {
        for (vars, name) in [
            (vec![("OTEL_TRACES_SAMPLER", "ratio")], "OTEL_TRACES_SAMPLER"),
            (vec![("OTEL_TRACES_SAMPLER", "parentbased_jaeger_remote")], "OTEL_TRACES_SAMPLER"),
            (
                vec![("OTEL_TRACES_SAMPLER", "traceidratio"), ("OTEL_TRACES_SAMPLER_ARG", "1.5")],
                "OTEL_TRACES_SAMPLER_ARG",
            ),
            (
                vec![("OTEL_TRACES_SAMPLER", "traceidratio"), ("OTEL_TRACES_SAMPLER_ARG", "half")],
                "OTEL_TRACES_SAMPLER_ARG",
            ),
            (
                vec![("OTEL_TRACES_SAMPLER", "traceidratio"), ("OTEL_TRACES_SAMPLER_ARG", "-0.1")],
                "OTEL_TRACES_SAMPLER_ARG",
            ),
            (vec![("LOG_FORMAT", "xml")], "LOG_FORMAT"),
            (vec![("RUST_LOG", "info,sqlx=loud")], "RUST_LOG"),
            (vec![("TRACE_TRUSTED_CALLERS", "gateway")], "TRACE_TRUSTED_CALLERS"),
        ] {
            match read(&vars, false) {
                Err(ConfigError::Invalid { name: refused, .. }) => assert_eq!(refused, name, "{vars:?}"),
                other => panic!("{vars:?} was read as {other:?}"),
            }
        }
    }

    #[test]
    fn the_log_filter_holds_the_noisy_crates_at_warn_unless_rust_log_says_otherwise() {
        let filter = read(&[], false).expect("valid").log_filter;
        let parsed = tracing_subscriber::EnvFilter::try_new(&filter).expect("the default filter parses");
        let rendered = parsed.to_string();
        assert!(rendered.contains("sqlx=warn") && rendered.contains("sea_orm=warn"), "{rendered}");
        let chosen = read(&[("RUST_LOG", "debug,floor=trace")], false).expect("valid").log_filter;
        assert_eq!(chosen, "debug,floor=trace");
    }
}
