//! The room's small events (`level`, `announcement`) for the venue screen, which holds no
//! Socket.IO connection (a TV has no account or token): each node keeps a feed of them, and
//! `GET /screen/{id}/events` streams a tournament's as Server-Sent Events. The node that sends
//! an event to the room puts it on its own feed and on the bus, so every node's screens hear
//! it (`Change::Screen`). The streams are capped per client address and per tournament
//! ([`ScreenStreams`]).

use std::net::IpAddr;
use std::sync::Arc;

use tokio::sync::broadcast;
use uuid::Uuid;

use crate::infra::config::ConnectionSettings;
use crate::infra::connection_slots::{Slot, Slots};
use crate::infra::error::{AppError, ErrorCode};

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

/// The caps of the event streams: per client address and per tournament, on this node.
pub struct ScreenStreams {
    per_address: Slots<IpAddr>,
    per_tournament: Slots<Uuid>,
}

/// A stream's slots, given back when the stream ends.
pub struct StreamPlaces {
    _address: Slot<IpAddr>,
    _tournament: Slot<Uuid>,
}

/// Why a stream was refused: the error it is answered with and the limit that refused it.
pub struct StreamRefused {
    pub error: AppError,
    pub limit: &'static str,
}

impl ScreenStreams {
    pub fn new(settings: &ConnectionSettings) -> Self {
        Self {
            per_address: Slots::new(settings.max_screen_streams_per_address),
            per_tournament: Slots::new(settings.max_screen_streams_per_tournament),
        }
    }

    /// The slots of one more stream of `tournament_id` to `client`: `429` when the client
    /// holds its cap (a flood from one address), `503` when the tournament does (the node's
    /// memory, whoever asks).
    pub fn admit(&self, client: IpAddr, tournament_id: Uuid) -> Result<StreamPlaces, StreamRefused> {
        let address = self.per_address.take(client).ok_or_else(|| StreamRefused {
            error: AppError::new(ErrorCode::RateLimited, "too many event streams from this address"),
            limit: "screen_streams_per_address",
        })?;
        let tournament = self.per_tournament.take(tournament_id).ok_or_else(|| StreamRefused {
            error: AppError::new(
                ErrorCode::ServiceUnavailable,
                "too many event streams of this tournament on this node",
            ),
            limit: "screen_streams_per_tournament",
        })?;
        Ok(StreamPlaces { _address: address, _tournament: tournament })
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
