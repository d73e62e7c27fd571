//! Between nodes: after a node changes something it leaves a note on a Redis channel, and
//! every other node hears it. A tournament's note makes the other nodes' actor of it read the
//! change from the database at once (the watchers themselves hear the change through the
//! Socket.IO Redis adapter); a read (`GET …/live`, a `join`) does not depend on it, as each
//! checks the stored version before it serves what its node holds. A note that the data
//! changed makes them drop their cached public reads. The notes travel on
//! the node's one [`Link`] to Redis, which reconnects by itself; when it comes back after an
//! outage, the notes sent meanwhile are lost and every node takes everything as changed.

pub mod link;

use std::sync::Arc;

use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub use self::link::Link;

/// The channel every node listens on.
const CHANNEL: &str = "floor:changes";
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
}

/// One note on the channel: a change, from node `node`, and the `traceparent` of the span
/// that made it when that was traced (what the note starts on the other nodes links to it).
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Note {
    #[serde(flatten)]
    change: Change,
    node: Uuid,
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
    pub async fn start(link: Link, hearer: Arc<dyn Hearer>) -> Self {
        let node = Uuid::new_v4();
        let notes = link.listen(CHANNEL.to_owned(), WAITING_NOTES).await;
        let listener = tokio::spawn(listen(notes, link.recoveries(), node, hearer));
        Self { node, link, listener }
    }

    /// Tells the other nodes that this one made `change`; dropped while Redis is unreachable
    /// (they take everything as changed when it is back).
    pub async fn announce(&self, change: Change) {
        let note = Note { change, node: self.node, traceparent: crate::trace_context::current_traceparent() };
        let Ok(payload) = serde_json::to_vec(&note) else { return };
        self.link.send(CHANNEL.to_owned(), payload).await;
    }
}

/// Hands every other node's note to `hearer`, and tells it when Redis came back after notes
/// could have been lost.
async fn listen(
    mut notes: socketioxide_redis::drivers::MessageStream<socketioxide_redis::drivers::ChanItem>,
    mut recoveries: tokio::sync::watch::Receiver<u64>,
    node: Uuid,
    hearer: Arc<dyn Hearer>,
) {
    loop {
        tokio::select! {
            note = notes.next() => {
                let Some((_, payload)) = note else { return };
                match serde_json::from_slice::<Note>(&payload) {
                    Ok(note) if note.node != node => hear(hearer.as_ref(), note),
                    Ok(_) => {}
                    Err(_) => tracing::warn!("an unreadable note on the bus"),
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
    crate::trace_context::link_to(&span, traceparent);
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
            let note = Note { change: change.clone(), node, traceparent: None };
            let text = serde_json::to_string(&note).expect("json");
            assert!(!text.contains("traceparent"), "{text}");
            assert_eq!(serde_json::from_str::<Note>(&text).expect("a note"), note);
        }
    }

    #[test]
    fn a_tournament_note_keeps_its_wire_names() {
        let traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".to_owned();
        let change = Change::Tournament { tournament_id: Uuid::nil(), version: 3 };
        let note = Note { change, node: Uuid::nil(), traceparent: Some(traceparent.clone()) };
        let text = serde_json::to_value(&note).expect("json");
        assert_eq!(text["kind"], "tournament");
        assert_eq!(text["tournamentId"], Uuid::nil().to_string());
        assert_eq!(text["version"], 3);
        assert_eq!(text["traceparent"], traceparent);
    }
}
