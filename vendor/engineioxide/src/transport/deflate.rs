//! PATCH (floor): a large message compressed once for every WebSocket that negotiated
//! permessage-deflate.
//!
//! The handshake answers `server_no_context_takeover` (see [`tungstenite::deflate`]), so a
//! message's compressed frame does not depend on the connection: a broadcast (one `Str` cloned
//! to every socket of a room) is compressed by the first socket's writer and the others send
//! the same bytes. No compressor or window is kept per connection.

use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use engineioxide_core::Str;
use tokio_tungstenite::tungstenite::{
    self,
    protocol::frame::{
        Frame,
        coding::{Data, OpCode},
    },
};

/// Messages shorter than this go uncompressed (acks, pings, small events): compressing them
/// saves a few bytes for a compressor's set-up each.
pub(crate) const THRESHOLD: usize = 1024;

/// zlib's level: each message is compressed once for all its sockets, so the smallest output
/// is worth its time.
const LEVEL: u32 = 9;

/// The messages kept with their compressed frames, the latest used last. A broadcast in
/// flight is used by every socket's writer in turn and stays; one-off messages (an ack with a
/// state) pass through.
const KEPT: usize = 16;

/// Marks a WebSocket request whose handshake accepted permessage-deflate (in its `Parts`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Negotiated;

/// Whether the request's `Sec-WebSocket-Extensions` offers can be accepted.
pub(crate) fn accepts(headers: &http::HeaderMap) -> bool {
    let offers = headers.get_all(http::header::SEC_WEBSOCKET_EXTENSIONS);
    tungstenite::deflate::accepts(offers.iter().map(|value| value.as_bytes()))
}

/// The compressed payload of each recent large message.
#[derive(Debug, Default)]
pub(crate) struct DeflatedFrames {
    recent: Mutex<Vec<Deflated>>,
}

#[derive(Debug)]
struct Deflated {
    /// Holds the message, so its buffer's address is not reused while it names this entry.
    message: Str,
    payload: Arc<OnceLock<Option<Bytes>>>,
}

impl DeflatedFrames {
    /// The frame of engine.io's message packet `4<message>`, compressed, RSV1 set; `None`
    /// when it cannot be compressed (then the caller sends it plain).
    pub(crate) fn frame_of(&self, message: &Str) -> Option<Frame> {
        let payload = self.slot(message);
        let payload = payload
            .get_or_init(|| tungstenite::deflate::deflate(&[b"4", message.as_bytes()], LEVEL).ok())
            .clone()?;
        let mut frame = Frame::message(payload, OpCode::Data(Data::Text), true);
        frame.header_mut().rsv1 = true;
        Some(frame)
    }

    /// The entry of `message`, the same buffer or the same text, made if there is none.
    fn slot(&self, message: &Str) -> Arc<OnceLock<Option<Bytes>>> {
        let mut recent = self.recent.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let bytes = message.as_bytes();
        let found = recent.iter().rposition(|kept| {
            let text = kept.message.as_bytes();
            std::ptr::eq(text, bytes) || text == bytes
        });
        let entry = match found {
            Some(at) => recent.remove(at),
            None => {
                if recent.len() == KEPT {
                    recent.remove(0);
                }
                Deflated { message: message.clone(), payload: Arc::default() }
            }
        };
        let payload = entry.payload.clone();
        recent.push(entry);
        payload
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn large(tag: &str) -> Str {
        Str::from(format!("2/live,[\"state\",{{\"v\":\"{tag}\",\"pad\":\"{}\"}}]", "x".repeat(4000)))
    }

    fn inflated(frame: &Frame) -> Vec<u8> {
        assert!(frame.header().rsv1);
        tungstenite::deflate::inflate(frame.payload(), None).expect("inflates")
    }

    #[test]
    fn a_message_is_the_engine_io_packet_compressed() {
        let frames = DeflatedFrames::default();
        let message = large("a");
        let frame = frames.frame_of(&message).expect("compressed");
        assert_eq!(inflated(&frame), format!("4{message}").into_bytes());
        assert!(frame.payload().len() < message.len() / 4);
    }

    #[test]
    fn clones_and_equal_texts_share_one_compression() {
        let frames = DeflatedFrames::default();
        let message = large("a");
        let first = frames.frame_of(&message).expect("compressed");
        let again = frames.frame_of(&message.clone()).expect("compressed");
        let equal = frames.frame_of(&large("a")).expect("compressed");
        assert_eq!(first.payload().as_ptr(), again.payload().as_ptr());
        assert_eq!(first.payload().as_ptr(), equal.payload().as_ptr());
        let other = frames.frame_of(&large("b")).expect("compressed");
        assert_ne!(first.payload().as_ptr(), other.payload().as_ptr());
        assert_eq!(inflated(&other), format!("4{}", large("b")).into_bytes());
    }

    #[test]
    fn a_message_in_use_stays_while_one_off_messages_pass() {
        let frames = DeflatedFrames::default();
        let broadcast = large("broadcast");
        let first = frames.frame_of(&broadcast).expect("compressed");
        for round in 0..100 {
            frames.frame_of(&large(&format!("ack {round}"))).expect("compressed");
            if round % (KEPT - 1) == 0 {
                let again = frames.frame_of(&broadcast).expect("compressed");
                assert_eq!(first.payload().as_ptr(), again.payload().as_ptr(), "round {round}");
            }
        }
        assert!(frames.recent.lock().unwrap().len() <= KEPT);
    }
}
