//! How long a client may take and how much it may hold open: the timeouts and caps that let a
//! bare `floor serve` face the internet (`http::server` and the live socket enforce them).
//!
//! The caps are set so that a venue of 300 phones behind one NAT never meets them: a phone
//! holds its app's HTTP pool (up to 4 connections) and one live socket, and after a Wi-Fi roam
//! its old socket lingers until its ping times out (up to 45 s) beside the new one.

use std::time::Duration;

use super::error::ConfigError;
use super::limits::parse_duration;
use super::variables::{Refused, read};

/// The timeouts and caps. Durations are `1s` to `10m` (`10s`, `2m`); counts 1 to 10,000,000.
#[derive(Clone, Debug, PartialEq, Eq, clap::Args)]
pub struct ConnectionSettings {
    /// A request's head must arrive within it, from the connection's start or the end of the
    /// previous answer; a keep-alive connection idle that long is closed.
    // A phone on a poor venue Wi-Fi sends a head of under 2 KB in well under a second.
    #[arg(long, env = "HTTP_HEADER_TIMEOUT", default_value = "10s", value_parser = duration)]
    pub header_timeout: Duration,
    /// Bytes per second a request body must average once `HTTP_HEADER_TIMEOUT` has passed
    /// (else `408`).
    // An avatar of 5 MB at this rate takes 80 minutes: no honest client is that slow.
    #[arg(long, env = "HTTP_BODY_MIN_RATE", default_value = "1024", value_parser = body_min_rate)]
    pub body_min_rate: u32,
    /// Open connections on this node, never more than the open-file limit less 512 (else
    /// `503`).
    #[arg(long, env = "MAX_CONNECTIONS", default_value = "20000", value_parser = count)]
    pub max_connections: usize,
    /// Open connections from one peer address; a trusted proxy has none (else `429`).
    // 300 phones × (4 pooled connections + 1 socket).
    #[arg(long, env = "MAX_CONNECTIONS_PER_ADDRESS", default_value = "1500", value_parser = count)]
    pub max_connections_per_address: usize,
    /// `/screen/{id}/events` streams of one client address (else `429`).
    // Every phone of that venue on the screen page too.
    #[arg(long, env = "MAX_SCREEN_STREAMS_PER_ADDRESS", default_value = "300", value_parser = count)]
    pub max_screen_streams_per_address: usize,
    /// Those streams of one tournament on this node (else `503`).
    #[arg(long, env = "MAX_SCREEN_STREAMS_PER_TOURNAMENT", default_value = "2000", value_parser = count)]
    pub max_screen_streams_per_tournament: usize,
    /// `/live` sockets of one account on this node (`connect_error` `RATE_LIMITED`).
    // A player's phone, tablet and browser, or a club account on every table's tablet.
    #[arg(long, env = "MAX_LIVE_SOCKETS_PER_ACCOUNT", default_value = "20", value_parser = count)]
    pub max_live_sockets_per_account: usize,
    /// `/live` sockets of one client address on this node (the same).
    // 300 phones, each with a lingering socket after a roam, and the staff's tablets.
    #[arg(long, env = "MAX_LIVE_SOCKETS_PER_ADDRESS", default_value = "1000", value_parser = count)]
    pub max_live_sockets_per_address: usize,
    /// From the transport's handshake to the `/live` connect packet.
    #[arg(long, env = "LIVE_CONNECT_TIMEOUT", default_value = "10s", value_parser = duration)]
    pub live_connect_timeout: Duration,
    /// A WebSocket that offers permessage-deflate gets large messages compressed (once per
    /// message for all its sockets); `false` declines every offer.
    // One compression per change serves every socket: a state of 65 KB goes as 11 KB.
    #[arg(long, env = "LIVE_DEFLATE", default_value = "true", value_parser = super::variables::flag, action = clap::ArgAction::Set)]
    pub live_deflate: bool,
    /// Bytes this node keeps to ack `join`s with (recent states, their JSON, patches), 1 MiB
    /// to 64 GiB; past it the least recently used goes.
    // A tournament joined here keeps up to 16 states of 65 KB and their JSON, about 1 MiB: 64
    // MiB holds 64 of those, or hundreds of quieter ones; a node joined on one finished
    // tournament after another keeps no more.
    #[arg(long, env = "LIVE_JOIN_ACKS_BYTES", default_value = "67108864", value_parser = live_join_acks_bytes)]
    pub live_join_acks_bytes: u64,
}

impl Default for ConnectionSettings {
    /// The production defaults: the declared ones.
    fn default() -> Self {
        Self::from_env(|_| None).expect("the declared defaults of the connections parse")
    }
}

/// The largest count a cap takes: more than any machine has file descriptors.
const MAX_CAP: usize = 10_000_000;

impl ConnectionSettings {
    /// Reads every setting through `get`; a value that does not parse refuses to start, naming
    /// its variable.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        read(&get)
    }
}

fn count(text: &str) -> Result<usize, Refused> {
    text.parse::<usize>()
        .ok()
        .filter(|count| (1..=MAX_CAP).contains(count))
        .ok_or(Refused::expected("a whole number from 1 to 10000000"))
}

fn duration(text: &str) -> Result<Duration, Refused> {
    parse_duration(text)
        .filter(|duration| (Duration::from_secs(1)..=Duration::from_secs(600)).contains(duration))
        .ok_or(Refused::expected("a duration of 1s to 10m, as 10s or 2m"))
}

fn body_min_rate(text: &str) -> Result<u32, Refused> {
    text.parse::<u32>()
        .ok()
        .filter(|rate| (1..=1_000_000_000).contains(rate))
        .ok_or(Refused::expected("bytes per second, from 1 to 1000000000"))
}

fn live_join_acks_bytes(text: &str) -> Result<u64, Refused> {
    text.parse::<u64>()
        .ok()
        .filter(|bytes| (1 << 20..=64 << 30).contains(bytes))
        .ok_or(Refused::expected("a whole number of bytes from 1048576 (1 MiB) to 68719476736 (64 GiB)"))
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
