//! What one run measured (one N), the statistics behind it, and how it is shown: text for
//! people, JSON for tools. The JSON document is an array of [`Report`]s; its field names are
//! the ones below, times in milliseconds (`_ms`) or seconds (`_s`), memory in KiB or MiB, and
//! a figure that could not be had (nobody delivered) is `null`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

use crate::tally::Counts;
use crate::watcher::Transport;

/// One trigger and its fan-out.
#[derive(Debug, Serialize)]
pub struct Round {
    /// `pause` or `resume`.
    pub trigger: &'static str,
    /// The LiveState version the trigger made, from its answer.
    pub version: i64,
    /// From sending the trigger to having its whole HTTP answer.
    pub answer_ms: f64,
    /// Watchers that read this version whole within the round's 30 s.
    pub delivered: u64,
    /// From sending the trigger to a watcher having read the whole event: the first watcher,
    /// the median and 99th percentile (nearest rank) and the last, over `delivered`.
    pub first_ms: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub last_ms: Option<f64>,
    /// The server's CPU (user + system) from just before the trigger to 300 ms after the last
    /// delivery.
    pub server_cpu_s: f64,
    /// The benchmark's own CPU over the same span: it shares the machine with the server.
    pub bench_cpu_s: f64,
    /// With several nodes: the 99th percentile of the watchers of each node (the first takes
    /// the presses).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub p99_by_node_ms: Vec<Option<f64>>,
}

impl Round {
    pub fn new(
        trigger: &'static str,
        version: i64,
        answer: Duration,
        mut deliveries: Vec<f64>,
        server_cpu_s: f64,
        bench_cpu_s: f64,
    ) -> Self {
        deliveries.sort_by(f64::total_cmp);
        Self {
            trigger,
            version,
            answer_ms: ms(answer),
            delivered: deliveries.len() as u64,
            first_ms: deliveries.first().copied(),
            p50_ms: percentile(&deliveries, 50.0),
            p99_ms: percentile(&deliveries, 99.0),
            last_ms: deliveries.last().copied(),
            // CPU time comes in 10 ms ticks: no float noise in the figures.
            server_cpu_s: thousandths(server_cpu_s),
            bench_cpu_s: thousandths(bench_cpu_s),
            p99_by_node_ms: Vec::new(),
        }
    }
}

/// One N: a fresh server, N watchers, the rounds.
#[derive(Debug, Serialize)]
pub struct Report {
    /// `floor`, or `node peer` (the Node server it is compared with, `--peer`).
    pub server: &'static str,
    pub watchers: usize,
    /// Nodes of floor the watchers were spread over (the presses go to the first).
    pub nodes: usize,
    /// `sqlite` or `postgres`.
    pub database: &'static str,
    pub transport: Transport,
    /// socketioxide's adapter: `local`, or `redis` with `--redis-url`.
    pub adapter: &'static str,
    /// Whether watchers joined as compact (a clock change comes as a `clock` event).
    pub compact: bool,
    /// Whether watchers offered permessage-deflate, and how many joined with it negotiated.
    pub deflate_offered: bool,
    pub deflating: usize,
    /// The median size on the wire of a delivery to one watcher (a `state` or `clock`
    /// message's WebSocket payload, compressed where negotiated; a polling packet).
    pub median_wire_bytes: Option<f64>,
    pub players: usize,
    pub eliminated: usize,
    /// Size of the LiveState (`GET …/live`), which every `state` event carries.
    pub live_state_bytes: usize,
    pub joined: usize,
    /// Watchers that never joined (`failures` says why).
    pub lost: usize,
    /// Watchers that never joined, by reason (`join: timeout`: no ack within 15 s).
    pub failures: BTreeMap<String, usize>,
    /// Joined watchers whose connection ended during the run, by reason.
    pub closed: BTreeMap<String, usize>,
    /// From the first connection attempt to the last join's ack.
    pub connect_wall_s: f64,
    pub rss_before_mib: f64,
    pub rss_connected_mib: f64,
    /// (RSS connected − RSS before) / joined.
    pub rss_per_connection_kib: Option<f64>,
    pub rss_after_rounds_mib: f64,
    /// Medians over the rounds of the rounds' figures.
    pub median_first_ms: Option<f64>,
    pub median_p50_ms: Option<f64>,
    pub median_p99_ms: Option<f64>,
    /// With several nodes: per node, the median over the rounds of its watchers' p99.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub median_p99_by_node_ms: Vec<Option<f64>>,
    pub median_last_ms: Option<f64>,
    pub median_server_cpu_s: Option<f64>,
    pub median_bench_cpu_s: Option<f64>,
    /// Over the rounds' trigger answers.
    pub answer_p50_ms: Option<f64>,
    pub answer_max_ms: Option<f64>,
    /// Triggers whose version was not the previous one plus one.
    pub version_gaps: usize,
    /// Of the deliveries, how many were `clock` events (compact watchers).
    pub clock_events: u64,
    pub correctness: Counts,
    /// What the server logged (warnings and errors) from the watchers' first connection on.
    pub server_log: Vec<String>,
    pub rounds: Vec<Round>,
    /// Every watcher joined and stayed, and got every change exactly once, in order.
    pub ok: bool,
}

impl Report {
    /// Fills the medians from the rounds.
    pub fn summarise(&mut self) {
        let over =
            |figure: fn(&Round) -> Option<f64>| median(&self.rounds.iter().filter_map(figure).collect::<Vec<_>>());
        self.median_first_ms = over(|round| round.first_ms);
        self.median_p50_ms = over(|round| round.p50_ms);
        self.median_p99_ms = over(|round| round.p99_ms);
        self.median_last_ms = over(|round| round.last_ms);
        let nodes = self.rounds.first().map_or(0, |round| round.p99_by_node_ms.len());
        self.median_p99_by_node_ms = (0..nodes)
            .map(|node| {
                median(
                    &self
                        .rounds
                        .iter()
                        .filter_map(|round| round.p99_by_node_ms.get(node).copied().flatten())
                        .collect::<Vec<_>>(),
                )
            })
            .collect();
        self.median_server_cpu_s = over(|round| Some(round.server_cpu_s));
        self.median_bench_cpu_s = over(|round| Some(round.bench_cpu_s));
        let mut answers: Vec<f64> = self.rounds.iter().map(|round| round.answer_ms).collect();
        answers.sort_by(f64::total_cmp);
        self.answer_p50_ms = percentile(&answers, 50.0);
        self.answer_max_ms = answers.last().copied();
    }

    /// The summary for people.
    pub fn text(&self) -> String {
        let mut out = String::new();
        self.write_setup(&mut out);
        self.write_memory_and_wire(&mut out);
        self.write_delivery(&mut out);
        self.write_correctness(&mut out);
        self.write_rounds(&mut out);
        self.write_server_log(&mut out);
        let _ = writeln!(out, "{}", if self.ok { "OK" } else { "NOT OK" });
        out
    }

    /// What was measured, and how the watchers joined.
    fn write_setup(&self, out: &mut String) {
        let compact = match (self.compact, self.deflate_offered) {
            (false, false) => "",
            (true, false) => ", compact",
            (false, true) => ", deflate offered",
            (true, true) => ", compact, deflate offered",
        };
        let _ = writeln!(
            out,
            "== {}: N={} over {}, {} node(s) on {}, {} adapter{compact}; LiveState {} bytes ({} players, {} out); {} rounds",
            self.server,
            self.watchers,
            self.transport.name(),
            self.nodes,
            self.database,
            self.adapter,
            self.live_state_bytes,
            self.players,
            self.eliminated,
            self.rounds.len()
        );
        let _ = writeln!(
            out,
            "joined {}/{} (lost {}) in {:.2} s; failures: {}; closed during the run: {}",
            self.joined,
            self.watchers,
            self.lost,
            self.connect_wall_s,
            reasons(&self.failures),
            reasons(&self.closed)
        );
    }

    /// The servers' memory, and a delivery's size on the wire.
    fn write_memory_and_wire(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "RSS {:.1} MiB before, {:.1} MiB connected ({} KiB per connection), {:.1} MiB after the rounds",
            self.rss_before_mib,
            self.rss_connected_mib,
            figure(self.rss_per_connection_kib, 1),
            self.rss_after_rounds_mib
        );
        let _ = writeln!(
            out,
            "on the wire: a delivery to one watcher {} bytes (median); permessage-deflate negotiated by {} of {}",
            figure(self.median_wire_bytes, 0),
            self.deflating,
            self.joined
        );
    }

    /// How fast the rounds' changes reached the watchers, and what the rounds cost.
    fn write_delivery(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "delivery, median over rounds: first {} ms, p50 {} ms, p99 {} ms, last {} ms",
            figure(self.median_first_ms, 1),
            figure(self.median_p50_ms, 1),
            figure(self.median_p99_ms, 1),
            figure(self.median_last_ms, 1)
        );
        if !self.median_p99_by_node_ms.is_empty() {
            let by_node: Vec<String> = self
                .median_p99_by_node_ms
                .iter()
                .enumerate()
                .map(|(node, p99)| format!("node {} {} ms", node + 1, figure(*p99, 1)))
                .collect();
            let _ = writeln!(
                out,
                "delivery p99 by node (node 1 takes the presses), median over rounds: {}",
                by_node.join(", ")
            );
        }
        let _ = writeln!(
            out,
            "trigger answer p50 {} ms, max {} ms; CPU per round: servers {} s, benchmark {} s (medians)",
            figure(self.answer_p50_ms, 1),
            figure(self.answer_max_ms, 1),
            figure(self.median_server_cpu_s, 3),
            figure(self.median_bench_cpu_s, 3)
        );
    }

    /// Whether every watcher got every change exactly once, in order.
    fn write_correctness(&self, out: &mut String) {
        let c = &self.correctness;
        let _ = writeln!(
            out,
            "correctness: expected {}, received {}, missing {}, duplicate {}, out of order {}, stale {}, \
             unexpected {}; version gaps {}; clock events {}",
            c.expected,
            c.received,
            c.missing,
            c.duplicate,
            c.out_of_order,
            c.stale,
            c.unexpected,
            self.version_gaps,
            self.clock_events
        );
    }

    /// The rounds' table: its head, then a line per round.
    fn write_rounds(&self, out: &mut String) {
        let _ = writeln!(out, "round trigger version answer_ms delivered first_ms p50_ms p99_ms last_ms server_cpu_s");
        for (i, round) in self.rounds.iter().enumerate() {
            let _ = writeln!(
                out,
                "{:>5} {:>7} {:>7} {:>9.1} {:>9} {:>8} {:>6} {:>6} {:>7} {:>12.3}",
                i + 1,
                round.trigger,
                round.version,
                round.answer_ms,
                round.delivered,
                figure(round.first_ms, 1),
                figure(round.p50_ms, 1),
                figure(round.p99_ms, 1),
                figure(round.last_ms, 1),
                round.server_cpu_s
            );
        }
    }

    /// What the servers logged while measured (the first lines).
    fn write_server_log(&self, out: &mut String) {
        let _ = writeln!(out, "server log while measured: {} lines", self.server_log.len());
        for line in self.server_log.iter().take(SERVER_LOG_SHOWN) {
            let _ = writeln!(out, "  [floor] {line}");
        }
    }
}

/// The most server log lines the text shows (the JSON has them all).
const SERVER_LOG_SHOWN: usize = 20;

/// Nearest-rank percentile of sorted values: the smallest value with at least `p` % of the
/// values at or below it.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.clamp(1, sorted.len().max(1)) - 1).copied()
}

/// The median (the mean of the middle two of an even count).
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    match sorted.len() {
        0 => None,
        len if len % 2 == 1 => Some(sorted[middle]),
        _ => Some((sorted[middle - 1] + sorted[middle]) / 2.0),
    }
}

fn thousandths(value: f64) -> f64 {
    (value * 1000.0).round() / 1000.0
}

pub fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn figure(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(|| "-".to_owned(), |value| format!("{value:.decimals$}"))
}

fn reasons(counts: &BTreeMap<String, usize>) -> String {
    if counts.is_empty() {
        return "none".to_owned();
    }
    counts.iter().map(|(reason, n)| format!("{n} × {reason}")).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&values, 50.0), Some(50.0));
        assert_eq!(percentile(&values, 99.0), Some(99.0));
        assert_eq!(percentile(&values, 100.0), Some(100.0));
        assert_eq!(percentile(&values, 0.0), Some(1.0));
        assert_eq!(percentile(&[1.0, 2.0, 3.0], 50.0), Some(2.0));
        assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn the_median_of_an_even_count_is_between_the_middle_two() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn a_round_sorts_its_deliveries_before_taking_figures() {
        let round = Round::new("pause", 12, Duration::from_millis(3), vec![30.0, 10.0, 20.0], 0.5, 0.1);
        assert_eq!((round.first_ms, round.p50_ms, round.last_ms), (Some(10.0), Some(20.0), Some(30.0)));
        assert_eq!(round.delivered, 3);
        assert_eq!(round.answer_ms, 3.0);
        let nobody = Round::new("resume", 13, Duration::ZERO, Vec::new(), 0.0, 0.0);
        assert_eq!((nobody.first_ms, nobody.p99_ms), (None, None));
    }
}
