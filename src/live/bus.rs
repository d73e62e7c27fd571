//! Between nodes: after a node changes a tournament it leaves a note on a Redis channel, and
//! every other node's actor of that tournament reads the change from the database. So a
//! read (`GET …/live`, a `join`) on any node shows the latest state; the watchers themselves
//! hear the change through the Socket.IO Redis adapter.

use std::time::Duration;

use futures_util::StreamExt;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::LiveRegistry;

/// The channel every node listens on.
const CHANNEL: &str = "floor:live:changed";
/// How long a node waits before listening again after losing Redis.
const RECONNECT_AFTER: Duration = Duration::from_secs(1);
/// The longest a note may hold the tournament's actor.
const PUBLISH_TIMEOUT: Duration = Duration::from_secs(2);

/// "Tournament `tournament_id` is at `version` now", from node `node`.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ChangeNote {
    tournament_id: Uuid,
    version: i64,
    node: Uuid,
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
    /// Connects to Redis and starts listening for the other nodes' notes.
    pub async fn start(client: redis::Client, registry: LiveRegistry) -> anyhow::Result<Self> {
        let node = Uuid::new_v4();
        let publisher = redis::aio::ConnectionManager::new(client.clone()).await?;
        // The first subscription is made before serving, so no note after start is missed.
        let subscriber = subscribe(&client).await?;
        let listener = tokio::spawn(listen(client, subscriber, node, registry));
        Ok(Self { node, publisher, listener })
    }

    /// Tells the other nodes that this one changed the tournament.
    pub async fn announce(&self, tournament_id: Uuid, version: i64) {
        let note = ChangeNote { tournament_id, version, node: self.node };
        let Ok(payload) = serde_json::to_string(&note) else { return };
        let mut connection = self.publisher.clone();
        let mut command = redis::cmd("PUBLISH");
        command.arg(CHANNEL).arg(payload);
        let publish = command.query_async::<i64>(&mut connection);
        match tokio::time::timeout(PUBLISH_TIMEOUT, publish).await {
            Ok(Ok(_)) => {}
            Ok(Err(err)) => tracing::warn!(%tournament_id, error = %err, "could not tell the other nodes of a change"),
            Err(_) => tracing::warn!(%tournament_id, "telling the other nodes of a change timed out"),
        }
    }
}

async fn subscribe(client: &redis::Client) -> redis::RedisResult<redis::aio::PubSub> {
    let mut pubsub = client.get_async_pubsub().await?;
    pubsub.subscribe(CHANNEL).await?;
    Ok(pubsub)
}

/// Hands every other node's note to the registry, listening again whenever Redis drops.
async fn listen(client: redis::Client, first: redis::aio::PubSub, node: Uuid, registry: LiveRegistry) {
    let mut subscription = Some(first);
    loop {
        let pubsub = match subscription.take() {
            Some(pubsub) => pubsub,
            None => match subscribe(&client).await {
                Ok(pubsub) => {
                    // Notes sent while this node was not listening are lost: read everything again.
                    registry.catch_up_all();
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
            let note =
                message.get_payload::<String>().ok().and_then(|text| serde_json::from_str::<ChangeNote>(&text).ok());
            match note {
                Some(note) if note.node != node => registry.catch_up(note.tournament_id, note.version),
                Some(_) => {}
                None => tracing::warn!("an unreadable note on the live bus"),
            }
        }
        tracing::warn!("lost the live bus; listening again");
        tokio::time::sleep(RECONNECT_AFTER).await;
    }
}
