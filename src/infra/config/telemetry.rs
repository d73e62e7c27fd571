//! How the service reports on itself: the form of its log lines and which traces it keeps and
//! sends to a collector ([`crate::infra::telemetry::init`] applies them).
//!
//! | variable | default | what |
//! |---|---|---|
//! | `LOG_FORMAT` | `json` in production, else `text` | one JSON object per line (with `trace_id` and `span_id` inside a trace), or lines for people |
//! | `OTEL_EXPORTER_OTLP_ENDPOINT` | unset | OTLP/HTTP collector base URL; unset: no span is kept or sent |
//! | `OTEL_TRACES_SAMPLER` | `parentbased_always_on` | `always_on`, `always_off`, `traceidratio`, or each of these as `parentbased_*` (a trusted caller's `traceparent` decides) |
//! | `OTEL_TRACES_SAMPLER_ARG` | `1.0` | the share of new traces kept by a `*traceidratio` sampler, from 0 to 1 |
//! | `TRACE_TRUSTED_CALLERS` | empty | IPs and CIDRs whose `traceparent` a request continues (an instrumented gateway); the other nodes are always trusted |
//!
//! The sampler's names are the OpenTelemetry SDKs' own. An unknown name or a ratio outside
//! 0–1 refuses to start: the SDK would quietly fall back to keeping every trace.
//!
//! A `traceparent` from anyone else (an app, a script, anyone on the internet) never makes
//! Floor keep a trace: the request starts a trace of its own, sampled as `OTEL_TRACES_SAMPLER`
//! says for new traces, with a link to the caller's span so the two can still be found from
//! each other. `TRUSTED_PROXIES` is no such list: a proxy passes its clients' headers on.

use ipnet::IpNet;

use super::limits::parse_networks;
use super::{ConfigError, invalid};

/// What [`crate::infra::telemetry::init`] needs from the environment.
#[derive(Clone, Debug, PartialEq)]
pub struct TelemetryConfig {
    /// One JSON object per line (for log collectors), else human-readable lines.
    pub json_logs: bool,
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
    pub fn from_env(get: impl Fn(&str) -> Option<String>, production: bool) -> Result<Self, ConfigError> {
        let json_logs = match get("LOG_FORMAT").as_deref() {
            None => production,
            Some("json") => true,
            Some("text") => false,
            Some(other) => return Err(invalid("LOG_FORMAT", other, "json or text")),
        };
        let sampler = trace_sampler(get("OTEL_TRACES_SAMPLER").as_deref(), get("OTEL_TRACES_SAMPLER_ARG").as_deref())?;
        let trusted_callers = match get("TRACE_TRUSTED_CALLERS") {
            None => Vec::new(),
            Some(list) => parse_networks("TRACE_TRUSTED_CALLERS", &list)?,
        };
        Ok(Self { json_logs, otlp_endpoint: get("OTEL_EXPORTER_OTLP_ENDPOINT"), sampler, trusted_callers })
    }
}

/// Reads the sampler as the OpenTelemetry specification names it; the default keeps every
/// trace a caller does not say to drop.
fn trace_sampler(name: Option<&str>, arg: Option<&str>) -> Result<TraceSampler, ConfigError> {
    let name = name.unwrap_or("parentbased_always_on");
    let (parent_based, root) = match name.strip_prefix("parentbased_") {
        Some(root) => (true, root),
        None => (false, name),
    };
    let root = match root {
        "always_on" => RootSampling::Always,
        "always_off" => RootSampling::Never,
        "traceidratio" => RootSampling::Ratio(match arg {
            None => 1.0,
            Some(text) => text
                .parse::<f64>()
                .ok()
                .filter(|ratio| (0.0..=1.0).contains(ratio))
                .ok_or_else(|| invalid("OTEL_TRACES_SAMPLER_ARG", text, "a ratio from 0 to 1"))?,
        }),
        _ => return Err(invalid("OTEL_TRACES_SAMPLER", name, SAMPLERS)),
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
            (vec![("TRACE_TRUSTED_CALLERS", "gateway")], "TRACE_TRUSTED_CALLERS"),
        ] {
            match read(&vars, false) {
                Err(ConfigError::Invalid { name: refused, .. }) => assert_eq!(refused, name, "{vars:?}"),
                other => panic!("{vars:?} was read as {other:?}"),
            }
        }
    }
}
