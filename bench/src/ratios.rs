//! Floor's fan-out figures as ratios to the Node peer's ([`crate::peer`]) measured in the same
//! repetition, minutes apart at most: below 1, floor is ahead. A ratio, not an absolute figure,
//! is what holds from one machine (or one minute) to the next.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::report::Report;

/// One repetition at one N.
#[derive(Debug, Serialize)]
pub struct Ratios {
    pub watchers: usize,
    /// The repetition, from 1.
    pub rep: usize,
    /// Whether floor's watchers offered permessage-deflate (the peer's never negotiate it:
    /// it runs with socket.io's defaults).
    pub deflate_offered: bool,
    /// Of the medians over the rounds: the 99th percentile of the deliveries, the server's CPU
    /// per change, the first delivery, the median delivery.
    pub p99: Option<f64>,
    pub cpu_per_change: Option<f64>,
    pub first: Option<f64>,
    pub p50: Option<f64>,
    /// Resident memory per connection.
    pub rss_per_connection: Option<f64>,
    /// The LiveState's size, floor's to the peer's: the other ratios compare like with like
    /// only near 1.
    pub live_state: Option<f64>,
}

impl Ratios {
    pub fn of(floor: &Report, peer: &Report, rep: usize) -> Self {
        Self {
            watchers: floor.watchers,
            rep,
            deflate_offered: floor.deflate_offered,
            p99: ratio(floor.median_p99_ms, peer.median_p99_ms),
            cpu_per_change: ratio(floor.median_server_cpu_s, peer.median_server_cpu_s),
            first: ratio(floor.median_first_ms, peer.median_first_ms),
            p50: ratio(floor.median_p50_ms, peer.median_p50_ms),
            rss_per_connection: ratio(floor.rss_per_connection_kib, peer.rss_per_connection_kib),
            live_state: ratio(Some(floor.live_state_bytes as f64), Some(peer.live_state_bytes as f64)),
        }
    }

    /// One line: the repetition's ratios.
    pub fn text(&self) -> String {
        format!(
            "floor / Node peer, N={} rep {}{}: p99 {}, CPU per change {}, first {}, p50 {}, RSS per connection {} \
             (LiveState {})\n",
            self.watchers,
            self.rep,
            if self.deflate_offered { ", deflate offered to floor" } else { "" },
            times(self.p99),
            times(self.cpu_per_change),
            times(self.first),
            times(self.p50),
            times(self.rss_per_connection),
            times(self.live_state),
        )
    }
}

/// Per N, each ratio's lowest and highest over the repetitions: a lead is the highest.
pub fn summary(all: &[Ratios]) -> String {
    let mut by_n: BTreeMap<usize, Vec<&Ratios>> = BTreeMap::new();
    for ratios in all {
        by_n.entry(ratios.watchers).or_default().push(ratios);
    }
    let mut out = String::new();
    for (n, reps) in by_n {
        let range = |figure: fn(&Ratios) -> Option<f64>| {
            let values: Vec<f64> = reps.iter().filter_map(|ratios| figure(ratios)).collect();
            let low = values.iter().copied().reduce(f64::min);
            let high = values.iter().copied().reduce(f64::max);
            match (low, high) {
                (Some(low), Some(high)) => format!("{low:.2}–{high:.2}x"),
                _ => "-".to_owned(),
            }
        };
        let _ = writeln!(
            out,
            "== floor / Node peer at N={n}, {} repetition(s), lowest–highest: p99 {}, CPU per change {}, first {}, \
             p50 {}, RSS per connection {}",
            reps.len(),
            range(|ratios| ratios.p99),
            range(|ratios| ratios.cpu_per_change),
            range(|ratios| ratios.first),
            range(|ratios| ratios.p50),
            range(|ratios| ratios.rss_per_connection),
        );
    }
    out
}

fn ratio(floor: Option<f64>, peer: Option<f64>) -> Option<f64> {
    match (floor, peer) {
        (Some(floor), Some(peer)) if peer > 0.0 => Some(floor / peer),
        _ => None,
    }
}

fn times(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |value| format!("{value:.2}x"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ratio_needs_both_figures_and_a_peer_above_zero() {
        assert_eq!(ratio(Some(3.0), Some(4.0)), Some(0.75));
        assert_eq!(ratio(None, Some(4.0)), None);
        assert_eq!(ratio(Some(3.0), None), None);
        assert_eq!(ratio(Some(3.0), Some(0.0)), None, "a peer that spent no CPU gives no ratio");
    }

    fn ratios(watchers: usize, rep: usize, p99: f64) -> Ratios {
        Ratios {
            watchers,
            rep,
            deflate_offered: false,
            p99: Some(p99),
            cpu_per_change: None,
            first: Some(1.5),
            p50: Some(0.5),
            rss_per_connection: Some(0.6),
            live_state: Some(1.01),
        }
    }

    #[test]
    fn the_summary_gives_each_n_its_range_over_the_repetitions() {
        let summary = summary(&[ratios(10_000, 1, 0.9), ratios(1_000, 1, 0.5), ratios(10_000, 2, 0.7)]);
        let lines: Vec<&str> = summary.lines().collect();
        assert_eq!(lines.len(), 2, "{summary}");
        assert!(lines[0].starts_with("== floor / Node peer at N=1000, 1 repetition(s)"), "{summary}");
        assert!(lines[0].contains("p99 0.50–0.50x"), "{summary}");
        assert!(lines[1].contains("N=10000, 2 repetition(s)") && lines[1].contains("p99 0.70–0.90x"), "{summary}");
        assert!(lines[1].contains("CPU per change -"), "no figure, no range: {summary}");
    }
}
