//! The abuse limits (`RATE_LIMIT_*`) and the proxies trusted to name the client
//! (`TRUSTED_PROXIES`); the layers that enforce them are `http::limits`.

use std::fmt;
use std::net::IpAddr;
use std::time::Duration;

use ipnet::IpNet;

use super::error::ConfigError;
use super::variables::{Refused, comma_separated, read};

/// The most requests one limit may allow per window: enough to switch a limit off in practice,
/// small enough that `window / count` stays a real interval.
const MAX_COUNT: u32 = 1_000_000;
const MIN_WINDOW: Duration = Duration::from_secs(1);
const MAX_WINDOW: Duration = Duration::from_secs(24 * 60 * 60);
const RATE_EXPECTED: &str = "<count>/<window>, as 10/10m: 1 to 1000000 requests per 1s to 24h (units s, m, h)";

/// At most `count` requests at once, refilled evenly over `window`: after a burst of `count`,
/// one more every `window / count`, and the whole budget back after a quiet `window`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    pub count: u32,
    pub window: Duration,
}

impl Rate {
    pub const fn new(count: u32, window: Duration) -> Self {
        Self { count, window }
    }

    /// The time one spent request takes to come back.
    pub fn interval(&self) -> Duration {
        self.window / self.count.max(1)
    }

    /// Reads `10/10m`, `600/1m`, `30/m`, `5/3600s`.
    fn parse(text: &str) -> Result<Self, Refused> {
        let rate = || {
            let (count, window) = text.split_once('/')?;
            let count: u32 = count.trim().parse().ok()?;
            let window = parse_duration(window)?;
            let valid = (1..=MAX_COUNT).contains(&count) && (MIN_WINDOW..=MAX_WINDOW).contains(&window);
            valid.then_some(Self { count, window })
        };
        rate().ok_or(Refused::expected(RATE_EXPECTED))
    }
}

impl fmt::Debug for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}s", self.count, self.window.as_secs())
    }
}

/// How much each client address (and everyone together, for codes), and each account for
/// registrations, may ask of the service, and who may name the client. A rate is written
/// `<count>/<window>`, as `10/10m`.
#[derive(Clone, Debug, PartialEq, Eq, clap::Args)]
pub struct LimitSettings {
    /// Comma-separated IPs and CIDRs of the load balancers in front: from these peers the
    /// client address is read from `X-Forwarded-For`; from any other peer the header is ignored
    /// and the peer is the client.
    // `std::vec::Vec`, spelled out, is one value to clap: the list is one variable.
    #[arg(long, env = "TRUSTED_PROXIES", default_value = "", value_parser = parse_networks)]
    pub trusted_proxies: std::vec::Vec<IpNet>,
    /// The clients `GET /metrics` answers (the scrapers' networks); anyone else gets `404`.
    // This host, and the private networks a cluster or a compose project runs in (never the
    // internet).
    #[arg(
        long,
        env = "METRICS_ALLOW",
        default_value = "127.0.0.0/8, ::1, 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, fc00::/7, fe80::/10",
        value_parser = parse_networks
    )]
    pub metrics_readers: std::vec::Vec<IpNet>,
    /// Codes asked for by one address (`POST /auth/otp/request` and the deletion page's phone
    /// form): each may cost an SMS.
    #[arg(long, env = "RATE_LIMIT_CODE_REQUESTS", default_value = "10/10m", value_parser = Rate::parse)]
    pub code_requests: Rate,
    /// Codes asked for by everyone together: the ceiling of the SMS bill, whatever the number
    /// of addresses a script cycles through.
    #[arg(long, env = "RATE_LIMIT_CODE_REQUESTS_GLOBAL", default_value = "30/1m", value_parser = Rate::parse)]
    pub code_requests_global: Rate,
    /// Codes checked by one address (`POST /auth/otp/verify`, `POST /me/delete` and the
    /// deletion page's code form): guessing codes across many phones.
    #[arg(long, env = "RATE_LIMIT_CODE_CHECKS", default_value = "30/10m", value_parser = Rate::parse)]
    pub code_checks: Rate,
    /// Token refreshes (`POST /auth/refresh`) by one address.
    #[arg(long, env = "RATE_LIMIT_REFRESHES", default_value = "60/10m", value_parser = Rate::parse)]
    pub refreshes: Rate,
    /// Public reads by one address: a generous ceiling against scraping and floods.
    #[arg(long, env = "RATE_LIMIT_PUBLIC_READS", default_value = "600/1m", value_parser = Rate::parse)]
    pub public_reads: Rate,
    /// Registrations and cancellations by one account (not one address: a rush comes from
    /// thousands of phones behind a few carriers' addresses). A player makes a handful; each
    /// one takes its tournament's desk.
    #[arg(long, env = "RATE_LIMIT_REGISTRATIONS", default_value = "30/1m", value_parser = Rate::parse)]
    pub registrations: Rate,
}

impl Default for LimitSettings {
    /// The production defaults: the declared ones.
    fn default() -> Self {
        Self::from_env(|_| None).expect("the declared defaults of the limits parse")
    }
}

impl LimitSettings {
    /// Reads every limit through `get`; blank values count as unset. A value that does not
    /// parse refuses to start, naming its variable.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        read(&get)
    }
}

/// `10s`, `5m`, `2h`, or a bare unit (`m` is a minute): whole seconds, minutes or hours.
pub(super) fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let unit = text.chars().last()?;
    let seconds_per_unit = match unit {
        's' => 1,
        'm' => 60,
        'h' => 60 * 60,
        _ => return None,
    };
    let amount = &text[..text.len() - unit.len_utf8()];
    let amount: u64 = if amount.is_empty() { 1 } else { amount.parse().ok()? };
    Some(Duration::from_secs(amount.checked_mul(seconds_per_unit)?))
}

/// `10.0.0.0/8, 192.168.1.7, 2001:db8::/32`: a bare address is a network of one. A refusal
/// names the item at fault.
pub(super) fn parse_networks(list: &str) -> Result<Vec<IpNet>, Refused> {
    comma_separated(list, "comma-separated IP addresses or CIDR networks", |item| {
        item.parse::<IpNet>().or_else(|_| item.parse::<IpAddr>().map(IpNet::from)).ok()
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn settings(vars: &[(&str, &str)]) -> Result<LimitSettings, ConfigError> {
        let vars: HashMap<&str, &str> = vars.iter().copied().collect();
        LimitSettings::from_env(|name| vars.get(name).map(|value| (*value).to_owned()))
    }

    #[test]
    fn nothing_set_gives_the_production_defaults() {
        let limits = settings(&[]).expect("defaults");
        assert_eq!(limits, LimitSettings::default());
        assert!(limits.trusted_proxies.is_empty());
        assert_eq!(limits.code_requests, Rate::new(10, Duration::from_secs(600)));
        assert_eq!(limits.code_requests_global, Rate::new(30, Duration::from_secs(60)));
        assert_eq!(limits.registrations, Rate::new(30, Duration::from_secs(60)));
    }

    #[test]
    fn a_rate_reads_as_a_count_per_window() {
        for (text, count, seconds) in [
            ("10/10m", 10, 600),
            ("600/1m", 600, 60),
            ("30/m", 30, 60),
            ("5/3600s", 5, 3600),
            ("2/24h", 2, 86_400),
            (" 7 / 2h ", 7, 7200),
        ] {
            let limits = settings(&[("RATE_LIMIT_CODE_CHECKS", text)]).expect(text);
            assert_eq!(limits.code_checks, Rate::new(count, Duration::from_secs(seconds)), "{text}");
        }
    }

    #[test]
    fn a_rate_refills_one_request_every_window_over_count() {
        assert_eq!(Rate::new(10, Duration::from_secs(600)).interval(), Duration::from_secs(60));
        assert_eq!(Rate::new(1_000_000, Duration::from_secs(1)).interval(), Duration::from_micros(1));
    }

    #[test]
    fn every_limit_refuses_a_bad_rate_naming_its_variable() {
        for name in [
            "RATE_LIMIT_CODE_REQUESTS",
            "RATE_LIMIT_CODE_REQUESTS_GLOBAL",
            "RATE_LIMIT_CODE_CHECKS",
            "RATE_LIMIT_REFRESHES",
            "RATE_LIMIT_PUBLIC_READS",
            "RATE_LIMIT_REGISTRATIONS",
        ] {
            for bad in ["10", "ten/1m", "0/1m", "-1/1m", "10/", "10/1d", "10/0s", "10/25h", "1000001/1s", "10/1.5m"] {
                let err = settings(&[(name, bad)]).expect_err(bad);
                assert!(err.to_string().starts_with(name), "{name}={bad}: {err}");
            }
        }
    }

    #[test]
    fn trusted_proxies_take_addresses_and_networks() {
        let limits = settings(&[("TRUSTED_PROXIES", "10.0.0.0/8, 192.168.1.7,2001:db8::/32,::1")]).expect("ok");
        let networks: Vec<String> = limits.trusted_proxies.iter().map(ToString::to_string).collect();
        assert_eq!(networks, ["10.0.0.0/8", "192.168.1.7/32", "2001:db8::/32", "::1/128"]);
    }

    #[test]
    fn a_bad_network_refuses_to_start_naming_the_variable() {
        for name in ["TRUSTED_PROXIES", "METRICS_ALLOW"] {
            for bad in ["load-balancer", "10.0.0.0/33", "10.0.0.1, nope"] {
                let err = settings(&[(name, bad)]).expect_err(bad);
                assert!(err.to_string().starts_with(name), "{name}={bad}: {err}");
            }
        }
    }

    #[test]
    fn metrics_answer_this_host_and_private_networks_unless_told_otherwise() {
        let readers = settings(&[]).expect("ok").metrics_readers;
        let allowed = |address: &str| {
            let address: IpAddr = address.parse().expect("an address");
            readers.iter().any(|network| network.contains(&address))
        };
        for inside in ["127.0.0.1", "::1", "10.1.2.3", "172.20.0.5", "192.168.1.10", "fd00::5"] {
            assert!(allowed(inside), "{inside}");
        }
        for outside in ["203.0.113.7", "8.8.8.8", "172.32.0.1", "2001:db8::1"] {
            assert!(!allowed(outside), "{outside}");
        }
        let only = settings(&[("METRICS_ALLOW", "10.0.0.0/8")]).expect("ok").metrics_readers;
        assert_eq!(only, vec!["10.0.0.0/8".parse::<IpNet>().expect("a network")]);
    }
}
