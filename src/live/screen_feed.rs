//! The room's small events (`level`, `announcement`) for the venue screen, which holds no
//! Socket.IO connection (a TV has no account or token): each node keeps a feed of them, and
//! `GET /screen/{id}/events` streams a tournament's as Server-Sent Events. The node that sends
//! an event to the room puts it on its own feed and on the bus, so every node's screens hear
//! it (`Change::Screen`).

use std::sync::Arc;

use tokio::sync::broadcast;
use uuid::Uuid;

/// How many events a slow screen may fall behind before it misses some (it then reads the
/// state again, which it polls anyway).
const FEED_CAPACITY: usize = 256;

/// One event of a tournament's room, as the screen gets it.
#[derive(Clone, Debug, PartialEq)]
pub struct ScreenEvent {
    pub tournament_id: Uuid,
    /// The Socket.IO event's name: `level` or `announcement`.
    pub name: String,
    /// Its payload, serialised once.
    pub data: Arc<str>,
}

/// This node's feed of room events.
#[derive(Debug)]
pub struct ScreenFeed {
    sender: broadcast::Sender<ScreenEvent>,
}

impl Default for ScreenFeed {
    fn default() -> Self {
        Self { sender: broadcast::channel(FEED_CAPACITY).0 }
    }
}

impl ScreenFeed {
    /// Hands `event` to every screen listening on this node (none listening is fine).
    pub fn send(&self, event: ScreenEvent) {
        let _ = self.sender.send(event);
    }

    pub fn subscribe(&self) -> broadcast::Receiver<ScreenEvent> {
        self.sender.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_listener_hears_what_is_sent_after_it_listens() {
        let feed = ScreenFeed::default();
        feed.send(ScreenEvent { tournament_id: Uuid::nil(), name: "level".into(), data: "{}".into() });
        let mut listener = feed.subscribe();
        let event =
            ScreenEvent { tournament_id: Uuid::max(), name: "announcement".into(), data: "{\"text\":\"x\"}".into() };
        feed.send(event.clone());
        assert_eq!(listener.recv().await.ok(), Some(event));
    }
}
