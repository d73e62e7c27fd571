//! Between nodes: after a node changes something it leaves a note on a Redis channel, and
//! every other node hears it. A tournament's note makes the other nodes' actor of it read the
//! change from the database, so a read (`GET …/live`, a `join`) on any node shows the latest
//! state (the watchers themselves hear the change through the Socket.IO Redis adapter). A
//! note that the data changed makes them drop their cached public reads.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The channel every node listens on.
const CHANNEL: &str = "floor:changes";
/// How long a node waits before listening again after losing Redis.
const RECONNECT_AFTER: Duration = Duration::from_secs(1);
/// The longest a note may hold its sender (the tournament's actor, a write's answer).
const PUBLISH_TIMEOUT: Duration = Duration::from_secs(2);

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
    /// A small event of the tournament's room (`level`, `announcement`) with its JSON, for the
    /// venue screens listening on the other nodes.
    #[serde(rename_all = "camelCase")]
    Screen { tournament_id: Uuid, event: String, data: String },
}

/// One note on the channel: a change, from node `node`.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Note {
    #[serde(flatten)]
    change: Change,
    node: Uuid,
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
    /// Reconnects by itself after Redis comes back.
    publisher: redis::aio::ConnectionManager,
    /// The task hearing the other nodes; it ends with the bus.
    listener: tokio::task::JoinHandle<()>,
}

impl Drop for Bus {
    fn drop(&mut self) {
        self.listener.abort();
    }
}

impl Bus {
    /// Connects to Redis and starts handing the other nodes' notes to `hearer`.
    pub async fn start(client: redis::Client, hearer: Arc<dyn Hearer>) -> anyhow::Result<Self> {
        let node = Uuid::new_v4();
        let publisher = redis::aio::ConnectionManager::new(client.clone()).await?;
        // The first subscription is made before serving, so no note after start is missed.
        let subscriber = subscribe(&client).await?;
        let listener = tokio::spawn(listen(client, subscriber, node, hearer));
        Ok(Self { node, publisher, listener })
    }

    /// Tells the other nodes that this one made `change`.
    pub async fn announce(&self, change: Change) {
        let note = Note { change, node: self.node };
        let Ok(payload) = serde_json::to_string(&note) else { return };
        let change = &note.change;
        let mut connection = self.publisher.clone();
        let mut command = redis::cmd("PUBLISH");
        command.arg(CHANNEL).arg(payload);
        let publish = command.query_async::<i64>(&mut connection);
        match tokio::time::timeout(PUBLISH_TIMEOUT, publish).await {
            Ok(Ok(_)) => {}
            Ok(Err(err)) => tracing::warn!(?change, error = %err, "could not tell the other nodes of a change"),
            Err(_) => tracing::warn!(?change, "telling the other nodes of a change timed out"),
        }
    }
}

async fn subscribe(client: &redis::Client) -> redis::RedisResult<redis::aio::PubSub> {
    let mut pubsub = client.get_async_pubsub().await?;
    pubsub.subscribe(CHANNEL).await?;
    Ok(pubsub)
}

/// Hands every other node's note to `hearer`, listening again whenever Redis drops.
async fn listen(client: redis::Client, first: redis::aio::PubSub, node: Uuid, hearer: Arc<dyn Hearer>) {
    let mut subscription = Some(first);
    loop {
        let pubsub = match subscription.take() {
            Some(pubsub) => pubsub,
            None => match subscribe(&client).await {
                Ok(pubsub) => {
                    // Notes sent while this node was not listening are lost.
                    hearer.missed_some();
                    pubsub
                }
                Err(err) => {
                    tracing::warn!(error = %err, "could not listen for the other nodes' changes; trying again");
                    tokio::time::sleep(RECONNECT_AFTER).await;
                    continue;
                }
            },
        };
        let mut messages = pubsub.into_on_message();
        while let Some(message) = messages.next().await {
            let note = message.get_payload::<String>().ok().and_then(|text| serde_json::from_str::<Note>(&text).ok());
            match note {
                Some(note) if note.node != node => hearer.heard(note.change),
                Some(_) => {}
                None => tracing::warn!("an unreadable note on the bus"),
            }
        }
        tracing::warn!("lost the bus; listening again");
        tokio::time::sleep(RECONNECT_AFTER).await;
    }
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
            let text = serde_json::to_string(&Note { change: change.clone(), node }).expect("json");
            assert_eq!(serde_json::from_str::<Note>(&text).expect("a note"), Note { change, node });
        }
    }

    #[test]
    fn a_tournament_note_keeps_its_wire_names() {
        let note = Note { change: Change::Tournament { tournament_id: Uuid::nil(), version: 3 }, node: Uuid::nil() };
        let text = serde_json::to_value(&note).expect("json");
        assert_eq!(text["kind"], "tournament");
        assert_eq!(text["tournamentId"], Uuid::nil().to_string());
        assert_eq!(text["version"], 3);
    }
}
