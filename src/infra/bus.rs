//! Between nodes: after a node changes something it leaves a note on a Redis channel, and
//! every other node hears it. A tournament's note makes the other nodes' actor of it read the
//! change from the database at once (the watchers themselves hear the change through the
//! Socket.IO Redis adapter); a read (`GET …/live`, a `join`) does not depend on it, as each
//! checks the stored version before it serves what its node holds. A note that the data
//! changed makes them drop their cached public reads. The notes travel on
//! the node's one [`Link`] to Redis, which reconnects by itself; when it comes back after an
//! outage, the notes sent meanwhile are lost and every node takes everything as changed.

mod channel;
pub mod link;
pub mod releases;

use std::sync::Arc;

use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use self::channel::CHANNEL;
pub use self::link::Link;
use self::releases::Releases;
use crate::infra::metrics::Metrics;

/// How many notes may wait for this node's hearer before the newest are dropped.
const WAITING_NOTES: usize = 1024;

/// What changed, as the other nodes hear it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Change {
    /// Tournament `tournament_id` is at `version` now.
    #[serde(rename_all = "camelCase")]
    Tournament { tournament_id: Uuid, version: i64 },
    /// Data behind the public reads changed.
    Reads,
    /// A node handed its tournaments over (it is shutting down): the others take the
    /// running ones now rather than at their next round.
    HandedOver,
    /// A state of tournament `tournament_id` up to `version` may not have reached the other
    /// nodes' watchers (its node sent it while Redis could not carry it): each node whose
    /// rooms are behind brings them up to date from the database.
    #[serde(rename_all = "camelCase")]
    Missed { tournament_id: Uuid, version: i64 },
    /// Tournament `tournament_id`'s picture changed outside any game (a deleted player's
    /// name) and is at `version` now: a node holding it reads it again, and the one running it
    /// tells the watchers.
    #[serde(rename_all = "camelCase")]
    Restated { tournament_id: Uuid, version: i64 },
    /// A small event of the tournament's room (`level`, `announcement`) with its JSON, for the
    /// venue screens listening on the other nodes.
    #[serde(rename_all = "camelCase")]
    Screen { tournament_id: Uuid, event: String, data: String },
    /// A registration desk committed a group of tournament `tournament_id`: a node builds again
    /// its kept answers that show the tournament's registrations (and drops the others), as
    /// the deciding node did, so readers of the agenda in a rush wait for no build. Sent only
    /// once every node runs 0.3.0 ([`Change::gate`]); [`Change::Reads`] until then.
    #[serde(rename_all = "camelCase")]
    Renewed { tournament_id: Uuid },
    /// A kind of note this release does not know, from a newer one (during a rolling deploy or
    /// after a rollback): never sent, passed over and counted. A newer release sends a kind
    /// that an older one must act on only once every node runs it (docs/operations.md#upgrading).
    #[serde(other)]
    Unknown,
}

impl Change {
    /// For a kind an older release passes over: the release every node must run before it is
    /// sent, and what is sent instead until then.
    pub fn gate(&self) -> Option<(&'static str, Change)> {
        match self {
            Self::Renewed { .. } => Some(("0.3.0", Self::Reads)),
            _ => None,
        }
    }
}

/// One note on the channel: a change, from node `node` of release `release`, and the
/// `traceparent` of the span that made it when that was traced (what the note starts on the
/// other nodes links to it). Read tolerantly across releases: a field a reader does not know
/// is passed over, and a kind it does not know is [`Change::Unknown`]; a release never drops
/// or renames a field the release before reads (tests/compat keeps each release's notes).
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Note {
    #[serde(flatten)]
    change: Change,
    node: Uuid,
    /// The sender's release; empty from a build before releases were named.
    #[serde(default)]
    release: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    traceparent: Option<String>,
}

/// What a node does with the other nodes' notes.
pub trait Hearer: Send + Sync + 'static {
    /// Another node made `change`.
    fn heard(&self, change: Change);
    /// Notes may have been lost (this node was not listening for a while): take everything
    /// as changed.
    fn missed_some(&self);
}

/// This node's end of the bus.
pub struct Bus {
    node: Uuid,
    link: Link,
    /// Which releases the nodes run, for the kinds an older one passes over.
    releases: Releases,
    /// The task hearing the other nodes; it ends with the bus.
    listener: tokio::task::JoinHandle<()>,
}

impl Drop for Bus {
    fn drop(&mut self) {
        self.listener.abort();
    }
}

impl Bus {
    /// Starts handing the other nodes' notes to `hearer`, from now on: the subscription is
    /// made before serving when Redis answers, so no note after start is missed.
    pub async fn start(link: Link, hearer: Arc<dyn Hearer>, metrics: Arc<Metrics>) -> Self {
        let node = Uuid::new_v4();
        let notes = link.listen(CHANNEL.to_owned(), WAITING_NOTES).await;
        let listener = tokio::spawn(listen(notes, link.recoveries(), node, hearer, metrics));
        let releases = Releases::start(link.clone(), node, crate::infra::release::VERSION);
        Self { node, link, releases, listener }
    }

    /// Tells the other nodes that this one made `change`; dropped while Redis is unreachable
    /// (they take everything as changed when it is back).
    pub async fn announce(&self, change: Change) {
        let change = match change.gate() {
            Some((release, instead)) if !self.releases.lowest().all_run(&gate_release(release)) => instead,
            _ => change,
        };
        let note = Note {
            change,
            node: self.node,
            release: crate::infra::release::VERSION.to_owned(),
            traceparent: crate::infra::trace_context::current_traceparent(),
        };
        let Ok(payload) = serde_json::to_vec(&note) else { return };
        self.link.send(CHANNEL.to_owned(), payload).await;
    }
}

/// A gate's release, written as a version in [`Change::gate`].
fn gate_release(release: &str) -> semver::Version {
    semver::Version::parse(release).unwrap_or_else(|_| semver::Version::new(u64::MAX, 0, 0))
}

/// Hands every other node's note to `hearer`, and tells it when Redis came back after notes
/// could have been lost.
async fn listen(
    mut notes: socketioxide_redis::drivers::MessageStream<socketioxide_redis::drivers::ChanItem>,
    mut recoveries: tokio::sync::watch::Receiver<u64>,
    node: Uuid,
    hearer: Arc<dyn Hearer>,
    metrics: Arc<Metrics>,
) {
    loop {
        tokio::select! {
            note = notes.next() => {
                let Some((_, payload)) = note else { return };
                match serde_json::from_slice::<Note>(&payload) {
                    Ok(note) if note.node == node => {}
                    Ok(Note { change: Change::Unknown, release, .. }) => {
                        metrics.bus_note_ignored("unknown_kind");
                        tracing::debug!(%release, "passed over a note of a kind this release does not know");
                    }
                    Ok(note) => hear(hearer.as_ref(), note),
                    Err(err) => {
                        metrics.bus_note_ignored("unreadable");
                        tracing::warn!(error = %err, "an unreadable note on the bus");
                    }
                }
            }
            recovered = recoveries.changed() => {
                if recovered.is_err() {
                    return;
                }
                hearer.missed_some();
            }
        }
    }
}

/// Hands `note` to `hearer`, in a span linked to the trace of the change when it has one.
fn hear(hearer: &dyn Hearer, note: Note) {
    let Some(traceparent) = &note.traceparent else { return hearer.heard(note.change) };
    let span = tracing::info_span!("bus.heard", otel.kind = "consumer", from_node = %note.node);
    crate::infra::trace_context::link_to(&span, traceparent);
    span.in_scope(|| hearer.heard(note.change));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_read_back_as_written() {
        let node = Uuid::new_v4();
        let screen = Change::Screen {
            tournament_id: Uuid::new_v4(),
            event: "announcement".to_owned(),
            data: r#"{"text":"Перерыв"}"#.to_owned(),
        };
        for change in [
            Change::Tournament { tournament_id: Uuid::new_v4(), version: 7 },
            Change::Reads,
            Change::HandedOver,
            screen,
        ] {
            let note = Note { change: change.clone(), node, release: "0.2.0".to_owned(), traceparent: None };
            let text = serde_json::to_string(&note).expect("json");
            assert!(!text.contains("traceparent"), "{text}");
            assert_eq!(serde_json::from_str::<Note>(&text).expect("a note"), note);
        }
    }

    #[test]
    fn a_tournament_note_keeps_its_wire_names() {
        let traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".to_owned();
        let change = Change::Tournament { tournament_id: Uuid::nil(), version: 3 };
        let note = Note { change, node: Uuid::nil(), release: String::new(), traceparent: Some(traceparent.clone()) };
        let text = serde_json::to_value(&note).expect("json");
        assert_eq!(text["kind"], "tournament");
        assert_eq!(text["tournamentId"], Uuid::nil().to_string());
        assert_eq!(text["version"], 3);
        assert_eq!(text["traceparent"], traceparent);
    }

    /// One note of each kind this release sends, as it sends them.
    fn samples() -> Vec<Note> {
        let tournament_id = Uuid::from_u128(0x5eed);
        let changes = [
            Change::Tournament { tournament_id, version: 7 },
            Change::Reads,
            Change::HandedOver,
            Change::Missed { tournament_id, version: 8 },
            Change::Restated { tournament_id, version: 9 },
            Change::Screen { tournament_id, event: "level".to_owned(), data: r#"{"levelIdx":1}"#.to_owned() },
            Change::Renewed { tournament_id },
        ];
        // A kind added here is added to the samples above (and to tests/compat at the release).
        let covered: std::collections::BTreeSet<u8> = changes
            .iter()
            .map(|change| match change {
                Change::Tournament { .. } => 0,
                Change::Reads => 1,
                Change::HandedOver => 2,
                Change::Missed { .. } => 3,
                Change::Restated { .. } => 4,
                Change::Screen { .. } => 5,
                Change::Renewed { .. } => 6,
                Change::Unknown => u8::MAX,
            })
            .collect();
        assert_eq!(covered, (0..7).collect(), "a sample of every kind that is sent");
        let traceparent = Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".to_owned());
        changes
            .into_iter()
            .map(|change| Note {
                change,
                node: Uuid::from_u128(1),
                release: crate::infra::release::VERSION.to_owned(),
                traceparent: traceparent.clone(),
            })
            .collect()
    }

    fn today() -> Vec<serde_json::Value> {
        samples().iter().map(|note| serde_json::to_value(note).expect("json")).collect()
    }

    #[test]
    fn compat_every_kept_release_s_notes_read_as_they_meant() {
        for (release, notes) in crate::infra::wire_compat::kept("notes.json") {
            for sample in notes {
                let note: Note =
                    serde_json::from_value(sample.clone()).unwrap_or_else(|err| panic!("{release}: {err}"));
                assert_ne!(note.change, Change::Unknown, "{release}: {sample}");
                let again = serde_json::to_value(&note).expect("json");
                let lost = crate::infra::wire_compat::keeps_fields(&sample, &again, &release.to_string());
                assert_eq!(lost, Ok(()), "today reads all of {release}'s {sample}");
            }
        }
    }

    #[test]
    fn compat_the_release_before_reads_today_s_notes() {
        // A kind gated on a release after the one before is not sent while that one runs.
        let before = crate::infra::wire_compat::before_this("notes.json").map(|(release, _)| release);
        let gated: Vec<String> = samples()
            .iter()
            .filter(|note| {
                note.change
                    .gate()
                    .is_some_and(|(release, _)| before.as_ref().is_some_and(|b| gate_release(release) > *b))
            })
            .map(|note| crate::infra::wire_compat::kind_of(&serde_json::to_value(note).expect("json")))
            .collect();
        crate::infra::wire_compat::the_release_before_reads("notes.json", &today(), &gated);
    }

    #[test]
    fn a_gated_kind_names_a_release_and_falls_back_on_one_every_release_reads() {
        for note in samples() {
            let Some((release, instead)) = note.change.gate() else { continue };
            assert!(semver::Version::parse(release).is_ok(), "{release}");
            assert!(instead.gate().is_none(), "{instead:?} is sent as it is");
        }
    }

    #[test]
    fn compat_this_release_keeps_what_it_sends() {
        crate::infra::wire_compat::this_release_keeps("notes.json", &today());
    }

    #[test]
    fn a_note_of_a_kind_a_newer_release_sends_is_read_as_unknown_and_new_fields_are_passed_over() {
        let newer = r#"{"kind":"seatsChanged","tournamentId":"00000000-0000-0000-0000-000000005eed","node":"00000000-0000-0000-0000-000000000001","release":"9.0.0"}"#;
        let note: Note = serde_json::from_str(newer).expect("a note");
        assert_eq!((note.change, note.release.as_str()), (Change::Unknown, "9.0.0"));
        let more = r#"{"kind":"tournament","tournamentId":"00000000-0000-0000-0000-000000005eed","version":3,"shard":2,"node":"00000000-0000-0000-0000-000000000001"}"#;
        let note: Note = serde_json::from_str(more).expect("a note");
        assert_eq!(note.change, Change::Tournament { tournament_id: Uuid::from_u128(0x5eed), version: 3 });
        assert_eq!(note.release, "", "a note from before releases were named");
    }
}
