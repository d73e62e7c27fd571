//! An anomaly of a live command told in full, so the report alone says what happened: the
//! command (its kind, with a key or not, live or queued), every request it went in (the node,
//! the nemesis at work, when it was sent and answered, what it told), and what the database
//! holds for it (the audit records carrying its `occurredAt`, the row of its key).

use std::collections::HashMap;
use std::fmt::Write as _;

use super::check::Anomaly;
use super::model::{Observed, Op, Outcome, Record};

/// The `occurredAt` of the command an anomaly is about, if it is about one.
pub fn stamp(anomaly: &Anomaly) -> Option<i64> {
    match anomaly {
        Anomaly::AcknowledgedNotOnce { stamp, .. }
        | Anomaly::UnknownTwice { stamp, .. }
        | Anomaly::RefusedApplied { stamp, .. }
        | Anomaly::Phantom { stamp } => Some(*stamp),
        _ => None,
    }
}

/// The keys of the commands `anomalies` are about, to read their rows.
pub fn keys<'a>(anomalies: &[Anomaly], history: &'a [Record]) -> Vec<&'a str> {
    anomalies
        .iter()
        .filter_map(stamp)
        .filter_map(|stamp| command(history, stamp))
        .filter_map(|record| match &record.op {
            Op::Live { key, .. } => key.as_deref(),
            _ => None,
        })
        .collect()
}

fn command(history: &[Record], stamp: i64) -> Option<&Record> {
    history.iter().find(|record| matches!(record.op, Op::Live { stamp: of, .. } if of == stamp))
}

fn told(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Ok => "ok".to_owned(),
        Outcome::Refused(code) => format!("refused {code}"),
        Outcome::Unknown(why) => format!("unknown ({why})"),
    }
}

/// `anomaly`, and when it is about a command, the command told in full. `keys`: the row of
/// each key, as text, by key.
pub fn explain(anomaly: &Anomaly, history: &[Record], observed: &Observed, keys: &HashMap<String, String>) -> String {
    let mut text = format!("{anomaly:?}");
    let Some(stamp) = stamp(anomaly) else { return text };
    match command(history, stamp) {
        Some(record @ Record { op: Op::Live { tournament, command, key, queued, .. }, .. }) => {
            let how = match (key, queued) {
                (Some(_), true) => "queued (POST …/replay), with a key",
                (Some(_), false) => "live, with a key",
                (None, _) => "live, without a key",
            };
            let _ = write!(
                text,
                "\n    {command} on {tournament}, {how}, by client {}; invoked at {} ms under `{}`, answered {} \
                 (first {})",
                record.client,
                record.invoked_ms,
                record.nemesis,
                told(&record.outcome),
                record.first.as_ref().map_or_else(|| told(&record.outcome), told),
            );
            for (n, sending) in record.sendings.iter().enumerate() {
                let _ = write!(
                    text,
                    "\n    sending {}: node {}, {}–{} ms, under `{}`: {}",
                    n + 1,
                    sending.node + 1,
                    sending.invoked_ms,
                    sending.completed_ms,
                    sending.nemesis,
                    told(&sending.outcome),
                );
            }
            match key {
                Some(key) => {
                    let row = keys.get(key).map_or("no row", String::as_str);
                    let _ = write!(text, "\n    key {key}: {row}");
                }
                None => text.push_str("\n    no key"),
            }
        }
        _ => text.push_str("\n    sent by nobody"),
    }
    let audits = observed.audits.get(&stamp).map(Vec::as_slice).unwrap_or_default();
    let _ = write!(text, "\n    audit records carrying its occurredAt: {}", audits.len());
    for audit in audits {
        let _ = write!(text, "\n      {audit}");
    }
    text
}

#[cfg(test)]
mod tests {
    use uuid::Uuid;

    use super::*;
    use crate::history::model::Sending;

    #[test]
    fn a_refused_command_applied_is_told_with_its_sendings_key_row_and_audit_records() {
        let sending = |node, at, nemesis: &str, outcome| Sending {
            node,
            invoked_ms: at,
            completed_ms: at + 5,
            nemesis: nemesis.to_owned(),
            outcome,
        };
        let key = "k-1".to_owned();
        let record = Record {
            client: 3,
            op: Op::Live {
                tournament: Uuid::nil(),
                command: "eliminate".to_owned(),
                stamp: 7,
                key: Some(key.clone()),
                queued: false,
            },
            invoked_ms: 100,
            completed_ms: 400,
            outcome: Outcome::Refused("ALREADY_ELIMINATED".to_owned()),
            first: Some(Outcome::Unknown("cut".to_owned())),
            version: None,
            told: None,
            nemesis: "client cuts".to_owned(),
            sendings: vec![
                sending(0, 100, "client cuts", Outcome::Unknown("cut".to_owned())),
                sending(1, 300, "none", Outcome::Refused("ALREADY_ELIMINATED".to_owned())),
            ],
        };
        let observed =
            Observed { audits: [(7, vec!["live.eliminate at …".to_owned()])].into(), ..Observed::default() };
        let anomaly = Anomaly::RefusedApplied { stamp: 7, code: "ALREADY_ELIMINATED".to_owned(), applied: 1 };
        let keys = [(key.clone(), "status 409".to_owned())].into();
        let text = explain(&anomaly, std::slice::from_ref(&record), &observed, &keys);
        for part in [
            "eliminate on 00000000-0000-0000-0000-000000000000, live, with a key, by client 3",
            "sending 1: node 1, 100–105 ms, under `client cuts`: unknown (cut)",
            "sending 2: node 2, 300–305 ms, under `none`: refused ALREADY_ELIMINATED",
            "key k-1: status 409",
            "audit records carrying its occurredAt: 1\n      live.eliminate at …",
        ] {
            assert!(text.contains(part), "{part:?} is missing from:\n{text}");
        }
        assert_eq!(keys_of(&anomaly, &record), ["k-1"]);
    }

    fn keys_of<'a>(anomaly: &Anomaly, record: &'a Record) -> Vec<&'a str> {
        keys(std::slice::from_ref(anomaly), std::slice::from_ref(record))
    }
}
