//! PATCH (floor): a large message compressed once for every WebSocket that negotiated
//! permessage-deflate.
//!
//! The handshake answers `server_no_context_takeover` (see [`tungstenite::deflate`]), so a
//! message's compressed frame does not depend on the connection: a broadcast (one `Str` cloned
//! to every socket of a room) is compressed once and every socket sends the same bytes. No
//! compressor or window is kept per connection.
//!
//! The compression runs on tokio's blocking pool, never on a runtime worker: the first writer
//! to need a message starts it, and every writer that needs it meanwhile waits without
//! holding a worker, so the runtime goes on serving the sockets that negotiated nothing, the
//! requests and the other rooms. A writer that finds it done takes it without waiting.

use std::future::Future;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use engineioxide_core::Str;
use tokio::sync::OnceCell;
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

/// zlib's level. With zlib-rs (flate2's backend in floor), 6 makes a 65 KB LiveState 11,445
/// bytes in 0.7 ms, where 9 takes twice as long for more bytes, and miniz_oxide's 9 took 1.6 ms
/// for 11,540 (best of 30 on the 2-core rust-svc machine, 2026-11-27).
const LEVEL: u32 = 6;

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

/// A message's compressed payload, once compressed; `None` inside when it could not be.
type Payload = Arc<OnceCell<Option<Bytes>>>;

#[derive(Debug)]
struct Deflated {
    /// Holds the message, so its buffer's address is not reused while it names this entry.
    message: Str,
    payload: Payload,
}

/// What a writer gets for a large message.
pub(crate) enum Compressed<W> {
    /// Compressed already: the frame (`None`: it could not be, send it plain).
    Ready(Option<Frame>),
    /// Being compressed, or to be: wait for it (off the worker, by this future).
    Wait(W),
}

impl DeflatedFrames {
    /// The frame of engine.io's message packet `4<message>`, compressed, RSV1 set, when it is
    /// ready; else the wait for it, which starts the compression on the blocking pool if no
    /// writer has. `None` once done means it cannot be compressed (the caller sends it plain).
    pub(crate) fn frame_of(&self, message: &Str) -> Compressed<impl Future<Output = Option<Frame>> + Send + 'static> {
        let payload = self.slot(message);
        if let Some(done) = payload.get() {
            return Compressed::Ready(done.clone().map(compressed_frame));
        }
        let message = message.clone();
        Compressed::Wait(async move {
            let compress = || async move {
                let compressed =
                    tokio::task::spawn_blocking(move || tungstenite::deflate::deflate(&[b"4", message.as_bytes()], LEVEL));
                compressed.await.ok().and_then(Result::ok)
            };
            payload.get_or_init(compress).await.clone().map(compressed_frame)
        })
    }

    /// The entry of `message`, the same buffer or the same text, made if there is none.
    fn slot(&self, message: &Str) -> Payload {
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

/// A data frame of the compressed `payload`, RSV1 set.
fn compressed_frame(payload: Bytes) -> Frame {
    let mut frame = Frame::message(payload, OpCode::Data(Data::Text), true);
    frame.header_mut().rsv1 = true;
    frame
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

    /// The frame of `message`, waiting for it when it is being compressed.
    async fn frame(frames: &DeflatedFrames, message: &Str) -> Frame {
        let frame = match frames.frame_of(message) {
            Compressed::Ready(frame) => frame,
            Compressed::Wait(wait) => wait.await,
        };
        frame.expect("compressed")
    }

    #[tokio::test]
    async fn a_message_is_the_engine_io_packet_compressed() {
        let frames = DeflatedFrames::default();
        let message = large("a");
        let frame = frame(&frames, &message).await;
        assert_eq!(inflated(&frame), format!("4{message}").into_bytes());
        assert!(frame.payload().len() < message.len() / 4);
    }

    #[tokio::test]
    async fn clones_and_equal_texts_share_one_compression() {
        let frames = DeflatedFrames::default();
        let message = large("a");
        let first = frame(&frames, &message).await;
        let again = frame(&frames, &message.clone()).await;
        let equal = frame(&frames, &large("a")).await;
        assert_eq!(first.payload().as_ptr(), again.payload().as_ptr());
        assert_eq!(first.payload().as_ptr(), equal.payload().as_ptr());
        let other = frame(&frames, &large("b")).await;
        assert_ne!(first.payload().as_ptr(), other.payload().as_ptr());
        assert_eq!(inflated(&other), format!("4{}", large("b")).into_bytes());
    }

    #[tokio::test]
    async fn a_message_in_use_stays_while_one_off_messages_pass() {
        let frames = DeflatedFrames::default();
        let broadcast = large("broadcast");
        let first = frame(&frames, &broadcast).await;
        for round in 0..100 {
            frame(&frames, &large(&format!("ack {round}"))).await;
            if round % (KEPT - 1) == 0 {
                let again = frame(&frames, &broadcast).await;
                assert_eq!(first.payload().as_ptr(), again.payload().as_ptr(), "round {round}");
            }
        }
        assert!(frames.recent.lock().unwrap().len() <= KEPT);
    }

    /// On a runtime of one worker, the writers waiting for a compression leave the worker free:
    /// a task beside them runs while the compression is under way, and they all get the same
    /// bytes once, a compressed frame at the end, and a ready one after.
    #[tokio::test(flavor = "current_thread")]
    async fn writers_wait_for_a_compression_without_holding_the_worker() {
        let frames = Arc::new(DeflatedFrames::default());
        let message = Str::from(format!("2/live,[\"state\",\"{}\"]", "state ".repeat(200_000)));
        let waits: Vec<_> = (0..8)
            .map(|_| match frames.frame_of(&message) {
                Compressed::Wait(wait) => tokio::spawn(wait),
                Compressed::Ready(_) => panic!("nothing is compressed before anyone asked"),
            })
            .collect();
        let beside = tokio::spawn(async { "ran" });
        assert_eq!(beside.await.expect("the task beside ran"), "ran");
        // 1.2 MB take milliseconds to compress: the task beside ran while it was under way.
        assert!(matches!(frames.frame_of(&message), Compressed::Wait(_)), "the compression was still under way");
        let mut payloads = Vec::new();
        for wait in waits {
            payloads.push(wait.await.expect("a writer").expect("compressed").payload().as_ptr());
        }
        payloads.dedup();
        assert_eq!(payloads.len(), 1, "one compression for every writer");
        assert!(matches!(frames.frame_of(&message), Compressed::Ready(Some(_))), "ready for the next writer");
    }
}
