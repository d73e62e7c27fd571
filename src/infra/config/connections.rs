//! How long a client may take and how much it may hold open: the timeouts and caps that let a
//! bare `floor serve` face the internet (`http::server` and the live socket enforce them).
//!
//! The caps are set so that a venue of 300 phones behind one NAT never meets them: a phone
//! holds its app's HTTP pool (up to 4 connections) and one live socket, and after a Wi-Fi roam
//! its old socket lingers until its ping times out (up to 45 s) beside the new one.

use std::time::Duration;

use super::ConfigError;
use super::limits::parse_duration;

/// | variable | default | what |
/// |---|---|---|
/// | `HTTP_HEADER_TIMEOUT` | `10s` | a request's head must arrive within it; a keep-alive connection idle that long is closed |
/// | `HTTP_BODY_MIN_RATE` | `1024` | bytes per second a request body must average once `HTTP_HEADER_TIMEOUT` has passed (else `408`) |
/// | `MAX_CONNECTIONS` | `20000` | open connections on this node, never more than the open-file limit less 512 (else `503`) |
/// | `MAX_CONNECTIONS_PER_ADDRESS` | `1500` | open connections from one peer address; a trusted proxy has none (else `429`) |
/// | `MAX_SCREEN_STREAMS_PER_ADDRESS` | `300` | `/screen/{id}/events` streams of one client address (else `429`) |
/// | `MAX_SCREEN_STREAMS_PER_TOURNAMENT` | `2000` | those streams of one tournament on this node (else `503`) |
/// | `MAX_LIVE_SOCKETS_PER_ACCOUNT` | `20` | `/live` sockets of one account on this node (`connect_error` `RATE_LIMITED`) |
/// | `MAX_LIVE_SOCKETS_PER_ADDRESS` | `1000` | `/live` sockets of one client address on this node (same) |
/// | `LIVE_CONNECT_TIMEOUT` | `10s` | from the transport's handshake to the `/live` connect packet |
/// | `LIVE_DEFLATE` | `true` | a WebSocket that offers permessage-deflate gets large messages compressed (once per message for all its sockets) |
/// | `LIVE_JOIN_ACKS_BYTES` | `67108864` (64 MiB) | what this node keeps to ack `join`s with (recent states, their JSON, patches), 1 MiB to 64 GiB; past it the least recently used goes |
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectionSettings {
    pub header_timeout: Duration,
    /// Bytes per second.
    pub body_min_rate: u32,
    pub max_connections: usize,
    pub max_connections_per_address: usize,
    pub max_screen_streams_per_address: usize,
    pub max_screen_streams_per_tournament: usize,
    pub max_live_sockets_per_account: usize,
    pub max_live_sockets_per_address: usize,
    pub live_connect_timeout: Duration,
    pub live_deflate: bool,
    /// Bytes.
    pub live_join_acks_bytes: u64,
}

impl Default for ConnectionSettings {
    /// The production defaults.
    fn default() -> Self {
        Self {
            // A phone on a poor venue Wi-Fi sends a head of under 2 KB in well under a second.
            header_timeout: Duration::from_secs(10),
            // An avatar of 5 MB at this rate takes 80 minutes: no honest client is that slow.
            body_min_rate: 1024,
            max_connections: 20_000,
            // 300 phones × (4 pooled connections + 1 socket).
            max_connections_per_address: 1_500,
            // Every phone of that venue on the screen page too.
            max_screen_streams_per_address: 300,
            max_screen_streams_per_tournament: 2_000,
            // A player's phone, tablet and browser, or a club account on every table's tablet.
            max_live_sockets_per_account: 20,
            // 300 phones, each with a lingering socket after a roam, and the staff's tablets.
            max_live_sockets_per_address: 1_000,
            live_connect_timeout: Duration::from_secs(10),
            // One compression per change serves every socket: a state of 65 KB goes as 11 KB.
            live_deflate: true,
            // A tournament joined here keeps up to 16 states of 65 KB and their JSON, about
            // 1 MiB: 64 of those, or hundreds of quieter ones; a node joined on one finished
            // tournament after another keeps no more.
            live_join_acks_bytes: 64 << 20,
        }
    }
}

/// The largest count a cap takes: more than any machine has file descriptors.
const MAX_CAP: usize = 10_000_000;
const COUNT_EXPECTED: &str = "a whole number from 1 to 10000000";
const DURATION_EXPECTED: &str = "a duration of 1s to 10m, as 10s or 2m";
const RATE_EXPECTED: &str = "bytes per second, from 1 to 1000000000";
const BYTES_EXPECTED: &str = "a whole number of bytes from 1048576 (1 MiB) to 68719476736 (64 GiB)";

impl ConnectionSettings {
    /// Reads every setting; a value that does not parse refuses to start, naming its variable.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let defaults = Self::default();
        let count = |name: &'static str, default: usize| match get(name) {
            None => Ok(default),
            Some(text) => text
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|count| (1..=MAX_CAP).contains(count))
                .ok_or(ConfigError::Invalid { name, value: text, expected: COUNT_EXPECTED }),
        };
        let duration = |name: &'static str, default: Duration| match get(name) {
            None => Ok(default),
            Some(text) => parse_duration(&text)
                .filter(|duration| (Duration::from_secs(1)..=Duration::from_secs(600)).contains(duration))
                .ok_or(ConfigError::Invalid { name, value: text, expected: DURATION_EXPECTED }),
        };
        let body_min_rate = match get("HTTP_BODY_MIN_RATE") {
            None => defaults.body_min_rate,
            Some(text) => text
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|rate| (1..=1_000_000_000).contains(rate))
                .ok_or(ConfigError::Invalid { name: "HTTP_BODY_MIN_RATE", value: text, expected: RATE_EXPECTED })?,
        };
        let live_join_acks_bytes = match get("LIVE_JOIN_ACKS_BYTES") {
            None => defaults.live_join_acks_bytes,
            Some(text) => {
                text.trim().parse::<u64>().ok().filter(|bytes| (1 << 20..=64 << 30).contains(bytes)).ok_or(
                    ConfigError::Invalid { name: "LIVE_JOIN_ACKS_BYTES", value: text, expected: BYTES_EXPECTED },
                )?
            }
        };
        Ok(Self {
            header_timeout: duration("HTTP_HEADER_TIMEOUT", defaults.header_timeout)?,
            body_min_rate,
            max_connections: count("MAX_CONNECTIONS", defaults.max_connections)?,
            max_connections_per_address: count("MAX_CONNECTIONS_PER_ADDRESS", defaults.max_connections_per_address)?,
            max_screen_streams_per_address: count(
                "MAX_SCREEN_STREAMS_PER_ADDRESS",
                defaults.max_screen_streams_per_address,
            )?,
            max_screen_streams_per_tournament: count(
                "MAX_SCREEN_STREAMS_PER_TOURNAMENT",
                defaults.max_screen_streams_per_tournament,
            )?,
            max_live_sockets_per_account: count("MAX_LIVE_SOCKETS_PER_ACCOUNT", defaults.max_live_sockets_per_account)?,
            max_live_sockets_per_address: count("MAX_LIVE_SOCKETS_PER_ADDRESS", defaults.max_live_sockets_per_address)?,
            live_connect_timeout: duration("LIVE_CONNECT_TIMEOUT", defaults.live_connect_timeout)?,
            live_deflate: match get("LIVE_DEFLATE") {
                None => defaults.live_deflate,
                Some(text) => super::parse_flag(text.trim()).ok_or(ConfigError::Invalid {
                    name: "LIVE_DEFLATE",
                    value: text,
                    expected: "true or false",
                })?,
            },
            live_join_acks_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn settings(vars: &[(&str, &str)]) -> Result<ConnectionSettings, ConfigError> {
        let vars: HashMap<&str, &str> = vars.iter().copied().collect();
        ConnectionSettings::from_env(|name| vars.get(name).map(|value| (*value).to_owned()))
    }

    #[test]
    fn nothing_set_gives_the_production_defaults() {
        let settings = settings(&[]).expect("defaults");
        assert_eq!(settings, ConnectionSettings::default());
        assert_eq!(settings.header_timeout, Duration::from_secs(10));
        assert_eq!(settings.max_live_sockets_per_account, 20);
    }

    #[test]
    fn each_setting_reads_its_variable() {
        let read = settings(&[
            ("HTTP_HEADER_TIMEOUT", "3s"),
            ("HTTP_BODY_MIN_RATE", "10"),
            ("MAX_CONNECTIONS", "50"),
            ("MAX_CONNECTIONS_PER_ADDRESS", "5"),
            ("MAX_SCREEN_STREAMS_PER_ADDRESS", "6"),
            ("MAX_SCREEN_STREAMS_PER_TOURNAMENT", "7"),
            ("MAX_LIVE_SOCKETS_PER_ACCOUNT", "8"),
            ("MAX_LIVE_SOCKETS_PER_ADDRESS", "9"),
            ("LIVE_CONNECT_TIMEOUT", "1m"),
            ("LIVE_DEFLATE", "false"),
            ("LIVE_JOIN_ACKS_BYTES", "2097152"),
        ])
        .expect("valid");
        assert_eq!(
            read,
            ConnectionSettings {
                header_timeout: Duration::from_secs(3),
                body_min_rate: 10,
                max_connections: 50,
                max_connections_per_address: 5,
                max_screen_streams_per_address: 6,
                max_screen_streams_per_tournament: 7,
                max_live_sockets_per_account: 8,
                max_live_sockets_per_address: 9,
                live_connect_timeout: Duration::from_secs(60),
                live_deflate: false,
                live_join_acks_bytes: 2 << 20,
            }
        );
    }

    #[test]
    fn a_bad_value_refuses_to_start_naming_its_variable() {
        for (name, bad) in [
            ("HTTP_HEADER_TIMEOUT", "0s"),
            ("HTTP_HEADER_TIMEOUT", "11m"),
            ("HTTP_HEADER_TIMEOUT", "ten"),
            ("HTTP_BODY_MIN_RATE", "0"),
            ("MAX_CONNECTIONS", "0"),
            ("MAX_CONNECTIONS_PER_ADDRESS", "-1"),
            ("MAX_LIVE_SOCKETS_PER_ACCOUNT", "many"),
            ("LIVE_CONNECT_TIMEOUT", "10"),
            ("LIVE_DEFLATE", "maybe"),
            ("LIVE_JOIN_ACKS_BYTES", "1000"),
            ("LIVE_JOIN_ACKS_BYTES", "64MiB"),
        ] {
            let err = settings(&[(name, bad)]).expect_err(bad);
            assert!(err.to_string().starts_with(name), "{name}={bad}: {err}");
        }
    }
}
