//! The checker: a history and what the database holds after it, in; the anomalies, out. Pure,
//! in the spirit of Jepsen's Elle and Knossos: whether each command was applied is read from
//! the database (each live command's audit record carries its unique `occurredAt`; each person's
//! registration is a row), never taken from the answers, and the answers are then held to it.

use std::collections::{BTreeMap, HashMap, HashSet};

use uuid::Uuid;

use super::model::{AFTER_THE_RUN, Observed, Op, Outcome, Record};

/// Something the history and the database say that a correct server never lets happen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Anomaly {
    /// A command answered `2xx` (or resolved so) applied `applied` times, not once.
    AcknowledgedNotOnce { stamp: i64, applied: usize },
    /// A command whose outcome stayed unknown applied more than once.
    UnknownTwice { stamp: i64, applied: usize },
    /// A command answered with a refusal, applied.
    RefusedApplied { stamp: i64, code: String, applied: usize },
    /// An audit record of a command nobody sent (its `occurredAt` is in no operation).
    Phantom { stamp: i64 },
    /// More seats taken than the tournament has.
    OverCapacity { tournament: Uuid, seated: usize, capacity: i64 },
    /// One person holding more than one place in a tournament.
    TwoPlaces { tournament: Uuid, user: Uuid, places: usize },
    /// A person's place (held or not) that no order of their answered operations explains:
    /// a refused registration or cancel applied, or an acknowledged one lost.
    PlaceNotAsAnswered { tournament: Uuid, user: Uuid, holds: bool },
    /// A registration told waitlist place `told` that holds place `holds` (`None`: off the list).
    WaitlistNotAsTold { registration: Uuid, told: i64, holds: Option<i64> },
    /// A client that saw version `seen` of a tournament (in the answer of an operation of kind
    /// `seen_in`) and then an older one, `then` (of `then_in`).
    VersionWentBack {
        client: usize,
        tournament: Uuid,
        seen: i64,
        seen_in: &'static str,
        then: i64,
        then_in: &'static str,
    },
}

/// Every anomaly of `history` against `observed`.
pub fn check(history: &[Record], observed: &Observed) -> Vec<Anomaly> {
    let mut anomalies = live_commands(history, observed);
    anomalies.extend(places(history, observed));
    anomalies.extend(waitlists(history, observed));
    anomalies.extend(versions(history));
    anomalies
}

/// Each acknowledged command applied once, each unknown at most once, each refused never, and
/// nothing applied that nobody sent.
fn live_commands(history: &[Record], observed: &Observed) -> Vec<Anomaly> {
    let mut anomalies = Vec::new();
    let mut sent = HashSet::new();
    for record in history {
        let Op::Live { stamp, ref command, .. } = record.op else { continue };
        sent.insert(stamp);
        let applied = observed.applied.get(&stamp).copied().unwrap_or(0);
        // A pause while paused (a resume while running) is answered applied and changes
        // nothing: no record. It is still never applied twice.
        let may_change_nothing = matches!(command.as_str(), "pause" | "resume");
        match &record.outcome {
            Outcome::Ok if applied > 1 || (applied == 0 && !may_change_nothing) => {
                anomalies.push(Anomaly::AcknowledgedNotOnce { stamp, applied })
            }
            Outcome::Unknown(_) if applied > 1 => anomalies.push(Anomaly::UnknownTwice { stamp, applied }),
            Outcome::Refused(code) if applied > 0 => {
                anomalies.push(Anomaly::RefusedApplied { stamp, code: code.clone(), applied });
            }
            _ => {}
        }
    }
    let mut phantoms: Vec<i64> = observed.applied.keys().copied().filter(|stamp| !sent.contains(stamp)).collect();
    phantoms.sort_unstable();
    anomalies.extend(phantoms.into_iter().map(|stamp| Anomaly::Phantom { stamp }));
    anomalies
}

/// Capacity, one place per person, and each person's place explained by their answers.
fn places(history: &[Record], observed: &Observed) -> Vec<Anomaly> {
    let mut anomalies = Vec::new();
    let mut seated: BTreeMap<Uuid, usize> = BTreeMap::new();
    let mut held: HashMap<(Uuid, Uuid), usize> = HashMap::new();
    for row in observed.rows.iter().filter(|row| row.live()) {
        *held.entry((row.tournament, row.user)).or_default() += 1;
        if row.seated() {
            *seated.entry(row.tournament).or_default() += 1;
        }
    }
    for (tournament, seated) in seated {
        let capacity = observed.capacity.get(&tournament).copied().unwrap_or(0);
        if i64::try_from(seated).unwrap_or(i64::MAX) > capacity {
            anomalies.push(Anomaly::OverCapacity { tournament, seated, capacity });
        }
    }
    let mut people: Vec<(Uuid, Uuid)> = held.iter().filter(|(_, places)| **places > 1).map(|(who, _)| *who).collect();
    people.sort_unstable();
    anomalies.extend(people.into_iter().map(|(tournament, user)| Anomaly::TwoPlaces {
        tournament,
        user,
        places: held[&(tournament, user)],
    }));
    // What each person may hold after their operations, in their order (one client's): a set
    // of the states some order of the unknown ones' outcomes leads to (Knossos' model, for a
    // register of one bit).
    let mut possible: BTreeMap<(Uuid, Uuid), HashSet<bool>> = BTreeMap::new();
    for record in in_client_order(history) {
        let (tournament, user, to) = match record.op {
            Op::Register { tournament, user } => (tournament, user, true),
            Op::Cancel { tournament, user } => (tournament, user, false),
            _ => continue,
        };
        let states = possible.entry((tournament, user)).or_insert_with(|| HashSet::from([false]));
        match record.outcome {
            Outcome::Ok => *states = HashSet::from([to]),
            Outcome::Unknown(_) => {
                states.insert(to);
            }
            Outcome::Refused(_) => {}
        }
    }
    for ((tournament, user), states) in possible {
        let holds = held.contains_key(&(tournament, user));
        if !states.contains(&holds) {
            anomalies.push(Anomaly::PlaceNotAsAnswered { tournament, user, holds });
        }
    }
    anomalies
}

/// In a tournament where nobody left (no cancel applied or perhaps applied), the waitlist only
/// grows at its end: each place told must be the place held at the end.
fn waitlists(history: &[Record], observed: &Observed) -> Vec<Anomaly> {
    let left: HashSet<Uuid> = history
        .iter()
        .filter_map(|record| match record.op {
            Op::Cancel { tournament, .. } if !matches!(record.outcome, Outcome::Refused(_)) => Some(tournament),
            _ => None,
        })
        .collect();
    let mut queues: HashMap<Uuid, Vec<&super::model::Row>> = HashMap::new();
    for row in observed.rows.iter().filter(|row| row.status == "waitlist") {
        queues.entry(row.tournament).or_default().push(row);
    }
    let mut holds: HashMap<Uuid, i64> = HashMap::new();
    for queue in queues.values_mut() {
        queue.sort_by_key(|row| (row.created_at, row.id));
        holds.extend(queue.iter().zip(1..).map(|(row, place)| (row.id, place)));
    }
    let mut anomalies = Vec::new();
    for record in history {
        let Op::Register { tournament, .. } = record.op else { continue };
        let Some(told) = record.told.as_ref().filter(|_| record.outcome == Outcome::Ok) else { continue };
        let Some(place) = told.position.filter(|_| !left.contains(&tournament)) else { continue };
        let held = holds.get(&told.registration).copied();
        if held != Some(place) {
            anomalies.push(Anomaly::WaitlistNotAsTold { registration: told.registration, told: place, holds: held });
        }
    }
    anomalies
}

/// No client sees a tournament's version go back: each client's answered operations, in its
/// order, carry versions that never fall. An operation answered only by a sending after the
/// run (an unknown resolved on the healed cluster) was seen then, after all the client's
/// others: its version does not count in the client's order. A read or join that did not say
/// what its client had seen is promised less (the state held, while the node's database does
/// not answer its check in time): one behind is not an anomaly, and is counted apart
/// ([`unsaid_behind`]).
fn versions(history: &[Record]) -> Vec<Anomaly> {
    client_versions(history).0
}

/// Per nemesis (at the operation's invocation), the reads and joins that said nothing of what
/// their client had seen and were answered a version older than one it had.
pub fn unsaid_behind(history: &[Record]) -> BTreeMap<String, usize> {
    client_versions(history).1
}

fn client_versions(history: &[Record]) -> (Vec<Anomaly>, BTreeMap<String, usize>) {
    let mut seen: HashMap<(usize, Uuid), (i64, &'static str)> = HashMap::new();
    let (mut anomalies, mut unsaid) = (Vec::new(), BTreeMap::new());
    for record in in_client_order(history) {
        let answered_after_the_run = record.sendings.last().is_some_and(|sending| sending.nemesis == AFTER_THE_RUN);
        let (Some(version), Outcome::Ok, Some(tournament), false) =
            (record.version, &record.outcome, record.op.tournament(), answered_after_the_run)
        else {
            continue;
        };
        let kind = record.op.kind();
        let last = seen.entry((record.client, tournament)).or_insert((version, kind));
        if version >= last.0 {
            *last = (version, kind);
        } else if matches!(record.op, Op::Read { seen: None, .. } | Op::Join { seen: None, .. }) {
            *unsaid.entry(record.nemesis.clone()).or_default() += 1;
        } else {
            let (client, seen, seen_in) = (record.client, last.0, last.1);
            anomalies.push(Anomaly::VersionWentBack {
                client,
                tournament,
                seen,
                seen_in,
                then: version,
                then_in: kind,
            });
        }
    }
    (anomalies, unsaid)
}

/// The records client by client, each client's in the order it made them.
fn in_client_order(history: &[Record]) -> Vec<&Record> {
    let mut ordered: Vec<&Record> = history.iter().collect();
    ordered.sort_by_key(|record| (record.client, record.invoked_ms, record.completed_ms));
    ordered
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::model::{Row, Sending, Told};

    fn record(client: usize, at: u64, op: Op, outcome: Outcome) -> Record {
        Record {
            client,
            op,
            invoked_ms: at,
            completed_ms: at + 1,
            outcome,
            first: None,
            version: None,
            told: None,
            nemesis: "none".to_owned(),
            sendings: Vec::new(),
        }
    }

    fn live(tournament: Uuid, stamp: i64) -> Op {
        Op::Live { tournament, command: "level".to_owned(), stamp, key: Some(format!("k{stamp}")), queued: false }
    }

    fn refused() -> Outcome {
        Outcome::Refused("CONFLICTING_CHANGE".to_owned())
    }

    fn unknown() -> Outcome {
        Outcome::Unknown("cut".to_owned())
    }

    fn applied(stamps: &[(i64, usize)]) -> Observed {
        Observed { applied: stamps.iter().copied().collect(), ..Observed::default() }
    }

    fn row(tournament: Uuid, user: Uuid, status: &str, at_ms: i64) -> Row {
        Row {
            id: Uuid::new_v4(),
            tournament,
            user,
            status: status.to_owned(),
            created_at: chrono::DateTime::from_timestamp_millis(1_800_000_000_000 + at_ms).expect("a time"),
        }
    }

    /// A clean history of every kind of operation, and the database that matches it.
    fn clean() -> (Vec<Record>, Observed, Uuid) {
        let (game, desk) = (Uuid::new_v4(), Uuid::new_v4());
        let (ann, bob, cid) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let mut history = vec![
            record(0, 1, live(game, 1), Outcome::Ok),
            record(0, 2, live(game, 2), refused()),
            record(0, 3, live(game, 3), unknown()),
            record(0, 4, live(game, 4), unknown()),
            record(1, 1, Op::Register { tournament: desk, user: ann }, Outcome::Ok),
            record(1, 2, Op::Register { tournament: desk, user: bob }, Outcome::Ok),
            record(1, 3, Op::Register { tournament: desk, user: cid }, unknown()),
            record(1, 4, Op::Register { tournament: desk, user: ann }, Outcome::Refused("ALREADY_REGISTERED".into())),
        ];
        for (n, version) in [4, 5, 5, 7].into_iter().enumerate() {
            let mut read = record(2, n as u64, Op::Read { tournament: game, seen: Some(4) }, Outcome::Ok);
            read.version = Some(version);
            history.push(read);
        }
        let rows = vec![
            row(desk, ann, "registered", 1),
            row(desk, bob, "waitlist", 2),
            row(desk, cid, "waitlist", 3),
            row(desk, Uuid::new_v4(), "cancelled", 0),
        ];
        history[5].told = Some(Told { registration: rows[1].id, status: "waitlist".into(), position: Some(1) });
        let observed =
            Observed { applied: [(1, 1), (4, 1)].into(), rows, capacity: [(desk, 1)].into(), ..Observed::default() };
        (history, observed, desk)
    }

    #[test]
    fn a_clean_history_passes() {
        let (history, observed, _) = clean();
        assert_eq!(check(&history, &observed), Vec::new());
    }

    #[test]
    fn an_acknowledged_command_applied_twice_or_never_is_caught() {
        let game = Uuid::new_v4();
        let history = [record(0, 1, live(game, 7), Outcome::Ok)];
        assert_eq!(check(&history, &applied(&[(7, 2)])), [Anomaly::AcknowledgedNotOnce { stamp: 7, applied: 2 }]);
        assert_eq!(check(&history, &applied(&[])), [Anomaly::AcknowledgedNotOnce { stamp: 7, applied: 0 }]);
    }

    #[test]
    fn an_acknowledged_pause_may_have_changed_nothing_but_is_never_applied_twice() {
        let op = Op::Live {
            tournament: Uuid::new_v4(),
            command: "pause".into(),
            stamp: 7,
            key: Some("k7".into()),
            queued: false,
        };
        let history = [record(0, 1, op, Outcome::Ok)];
        assert_eq!(check(&history, &applied(&[])), []);
        assert_eq!(check(&history, &applied(&[(7, 2)])), [Anomaly::AcknowledgedNotOnce { stamp: 7, applied: 2 }]);
    }

    #[test]
    fn an_unknown_applied_twice_is_caught() {
        let history = [record(0, 1, live(Uuid::new_v4(), 7), unknown())];
        assert_eq!(check(&history, &applied(&[(7, 2)])), [Anomaly::UnknownTwice { stamp: 7, applied: 2 }]);
        assert_eq!(check(&history, &applied(&[(7, 1)])), []);
        assert_eq!(check(&history, &applied(&[])), []);
    }

    #[test]
    fn a_refused_command_applied_is_caught() {
        let history = [record(0, 1, live(Uuid::new_v4(), 7), refused())];
        let found = check(&history, &applied(&[(7, 1)]));
        assert_eq!(found, [Anomaly::RefusedApplied { stamp: 7, code: "CONFLICTING_CHANGE".into(), applied: 1 }]);
    }

    #[test]
    fn a_command_nobody_sent_is_caught() {
        let history = [record(0, 1, live(Uuid::new_v4(), 7), Outcome::Ok)];
        assert_eq!(check(&history, &applied(&[(7, 1), (8, 1)])), [Anomaly::Phantom { stamp: 8 }]);
    }

    #[test]
    fn more_seats_than_the_capacity_are_caught() {
        let (history, mut observed, desk) = clean();
        observed.rows[1].status = "registered".into();
        let found = check(&history, &observed);
        assert!(found.contains(&Anomaly::OverCapacity { tournament: desk, seated: 2, capacity: 1 }), "{found:?}");
    }

    #[test]
    fn two_places_of_one_person_are_caught() {
        let (history, mut observed, desk) = clean();
        let ann = observed.rows[0].user;
        observed.rows.push(row(desk, ann, "waitlist", 9));
        let found = check(&history, &observed);
        assert!(found.contains(&Anomaly::TwoPlaces { tournament: desk, user: ann, places: 2 }), "{found:?}");
    }

    #[test]
    fn a_refused_registration_that_holds_a_place_is_caught() {
        let (desk, dan) = (Uuid::new_v4(), Uuid::new_v4());
        let history = [record(0, 1, Op::Register { tournament: desk, user: dan }, Outcome::Refused("X".into()))];
        let observed = Observed {
            rows: vec![row(desk, dan, "registered", 1)],
            capacity: [(desk, 5)].into(),
            ..Observed::default()
        };
        assert_eq!(
            check(&history, &observed),
            [Anomaly::PlaceNotAsAnswered { tournament: desk, user: dan, holds: true }]
        );
    }

    #[test]
    fn an_acknowledged_cancel_that_left_the_place_is_caught_and_an_unknown_one_is_not() {
        let (desk, dan) = (Uuid::new_v4(), Uuid::new_v4());
        let register = record(0, 1, Op::Register { tournament: desk, user: dan }, Outcome::Ok);
        let observed = Observed {
            rows: vec![row(desk, dan, "registered", 1)],
            capacity: [(desk, 5)].into(),
            ..Observed::default()
        };
        let cancelled = [register.clone(), record(0, 2, Op::Cancel { tournament: desk, user: dan }, Outcome::Ok)];
        assert_eq!(
            check(&cancelled, &observed),
            [Anomaly::PlaceNotAsAnswered { tournament: desk, user: dan, holds: true }]
        );
        let perhaps = [register, record(0, 2, Op::Cancel { tournament: desk, user: dan }, unknown())];
        assert_eq!(check(&perhaps, &observed), []);
    }

    #[test]
    fn a_waitlist_place_other_than_the_one_told_is_caught() {
        let (mut history, observed, _) = clean();
        let told = history[5].told.as_mut().expect("told");
        told.position = Some(2);
        let registration = told.registration;
        assert_eq!(check(&history, &observed), [Anomaly::WaitlistNotAsTold { registration, told: 2, holds: Some(1) }]);
    }

    #[test]
    fn waitlist_places_are_not_held_to_where_people_left() {
        let (mut history, observed, desk) = clean();
        history[5].told.as_mut().expect("told").position = Some(2);
        let someone = observed.rows[3].user;
        history.push(record(1, 0, Op::Cancel { tournament: desk, user: someone }, unknown()));
        assert_eq!(check(&history, &observed), []);
    }

    #[test]
    fn a_version_going_back_for_one_client_is_caught() {
        let game = Uuid::new_v4();
        let mut history = Vec::new();
        for (client, at, version) in [(0, 1, 5), (0, 2, 4), (1, 3, 3)] {
            let mut read = record(client, at, Op::Join { tournament: game, seen: Some(1) }, Outcome::Ok);
            read.version = Some(version);
            history.push(read);
        }
        assert_eq!(
            check(&history, &Observed::default()),
            [Anomaly::VersionWentBack {
                client: 0,
                tournament: game,
                seen: 5,
                seen_in: "join",
                then: 4,
                then_in: "join"
            }]
        );
    }

    #[test]
    fn a_version_seen_only_after_the_run_is_not_one_the_client_saw_before_its_next_operations() {
        let game = Uuid::new_v4();
        let sending = |nemesis: &str| Sending {
            node: 0,
            invoked_ms: 1,
            completed_ms: 2,
            nemesis: nemesis.to_owned(),
            outcome: Outcome::Ok,
        };
        let mut resolved = record(0, 1, live(game, 1), Outcome::Ok);
        resolved.version = Some(9);
        resolved.sendings = vec![sending("client cuts"), sending(AFTER_THE_RUN)];
        let mut read = record(0, 2, Op::Join { tournament: game, seen: Some(1) }, Outcome::Ok);
        read.version = Some(4);
        let observed = applied(&[(1, 1)]);
        assert_eq!(check(&[resolved.clone(), read.clone()], &observed), []);
        // Answered during the run, its version counts.
        resolved.sendings.pop();
        assert_eq!(check(&[resolved, read], &observed).len(), 1);
    }

    #[test]
    fn a_read_that_said_nothing_seen_is_counted_behind_not_an_anomaly() {
        let game = Uuid::new_v4();
        let mut history = Vec::new();
        for (at, version, seen) in [(1, 5, Some(1)), (2, 4, None), (3, 5, Some(5)), (4, 3, Some(5))] {
            let mut read = record(0, at, Op::Read { tournament: game, seen }, Outcome::Ok);
            read.version = Some(version);
            read.nemesis = "PostgreSQL slow".to_owned();
            history.push(read);
        }
        assert_eq!(unsaid_behind(&history), BTreeMap::from([("PostgreSQL slow".to_owned(), 1)]));
        assert_eq!(
            check(&history, &Observed::default()),
            [Anomaly::VersionWentBack {
                client: 0,
                tournament: game,
                seen: 5,
                seen_in: "read",
                then: 3,
                then_in: "read"
            }]
        );
    }
}
