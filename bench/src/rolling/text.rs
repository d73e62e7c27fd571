//! The rolling run's report as text for people: a line per event, and the whole run's.

use super::Report;
use super::event::{Event, OfficialFigures};

impl Event {
    /// The event's figures on one line (and its first ERROR lines below).
    pub fn text(&self) -> String {
        let figure = |value: Option<f64>| value.map_or_else(|| "-".to_owned(), |value| format!("{value:.0}"));
        format!(
            "{:<20} {:>5.1} s; every watcher current {} after its end ({} behind, {} stranded); {} reconnects; \
             {} joins, ack p50 {} / p99 {} / max {} ms, {:.1} MB of acks; {:.1} MB of changes read; failed joins {:?}; \
             presses {:?}, slowest \
             {} ms; heard again {}; ERROR lines {}{}",
            self.name,
            self.length_s,
            self.every_watcher_current_after_s.map_or_else(|| "never".to_owned(), |s| format!("{s:.2} s")),
            self.behind,
            self.stranded,
            self.reconnects,
            self.joins_in_burst,
            figure(self.join_ack_p50_ms),
            figure(self.join_ack_p99_ms),
            figure(self.join_ack_max_ms),
            self.join_ack_bytes as f64 / 1e6,
            self.delivered_bytes as f64 / 1e6,
            self.failed_joins,
            self.presses,
            figure(self.press_max_ms),
            self.heard_again,
            self.error_lines.len(),
            self.error_lines.iter().take(5).map(|line| format!("\n    {line}")).collect::<String>(),
        ) + &self.official.as_ref().map(OfficialFigures::text).unwrap_or_default()
    }
}

impl OfficialFigures {
    /// The official watchers' figures, on a line of their own under the event's.
    fn text(&self) -> String {
        format!(
            "\n    official socket.io-client: every one current {} after its end ({} behind, {} stranded, \
             {} refused \"Invalid namespace\"); connect errors {:?}; slowest rejoin {}, their \
             client's event loop held up to {:.0} ms",
            self.every_watcher_current_after_s.map_or_else(|| "never".to_owned(), |s| format!("{s:.2} s")),
            self.behind,
            self.stranded,
            self.invalid_namespace,
            self.connect_errors,
            self.rejoin_max_ms.map_or_else(|| "none".to_owned(), |ms| format!("{ms:.0} ms")),
            self.client_lag_max_ms,
        )
    }
}

impl Report {
    /// The run's figures: a line per event, then the presses' outcome.
    pub fn text(&self) -> String {
        let restart = if self.started_as == self.restarted_as {
            format!("rolling restart of {}", self.started_as)
        } else {
            format!("rolling restart from {} to {}", self.started_as, self.restarted_as)
        };
        let mut text = format!(
            "{restart}, {} {}watchers ({} of them official socket.io-client) through {} HAProxy, LiveState {} \
             bytes, connected in {:.1} s\n",
            self.watchers,
            if self.compact { "compact " } else { "" },
            self.official_watchers,
            self.balancers,
            self.live_state_bytes,
            self.connect_wall_s
        );
        for event in &self.events {
            text.push_str(&event.text());
            text.push('\n');
        }
        text.push_str(&format!(
            "{} presses acknowledged, the state moved {} versions; none lost: {}; {} watchers stranded ({} official); \
             ok: {}\n",
            self.acknowledged, self.applied, self.none_lost, self.stranded, self.official_stranded, self.ok
        ));
        text
    }
}
