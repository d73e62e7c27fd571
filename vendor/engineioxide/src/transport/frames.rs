//! PATCH (floor): a large message's WebSocket frame made once for every socket.
//!
//! A broadcast is one `Str` cloned to every socket of a room, and each socket's writer made
//! its own frame of it: engine.io's `4` and the message copied into a new `String`, 65 KB per
//! socket for each change of a LiveState. Here a shared message's frame is made once, plain,
//! or compressed for the sockets that negotiated permessage-deflate ([`super::deflate`]), and
//! every socket writes the same bytes (tungstenite writes a large frame straight from them).

use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};

use bytes::{BufMut, Bytes, BytesMut};
use engineioxide_core::Str;
use tokio::sync::OnceCell;
use tokio_tungstenite::tungstenite::protocol::frame::{
    Frame,
    coding::{Data, OpCode},
};

use super::deflate;

/// Messages shorter than this are framed by each writer (acks, pings, small events): copying
/// them costs less than finding them here, and compressing them saves a few bytes for a
/// compressor's set-up each.
pub(crate) const THRESHOLD: usize = 1024;

/// The messages kept with their frames, the latest used last. A broadcast in flight is used
/// by every socket's writer in turn and stays; one-off messages (an ack with a state) pass
/// through.
const KEPT: usize = 16;

/// The frames of the recent large messages, one set for the engine.
#[derive(Debug, Default)]
pub(crate) struct SharedFrames {
    recent: Mutex<Vec<Kept>>,
}

#[derive(Debug)]
struct Kept {
    /// Holds the message, so its buffer's address is not reused while it names this entry.
    message: Str,
    frames: Arc<Frames>,
}

/// One message's payloads, each made the first time a writer needs it.
#[derive(Debug, Default)]
struct Frames {
    /// `4<message>`.
    plain: OnceLock<Bytes>,
    /// `4<message>` compressed; `None` inside when it could not be.
    deflated: OnceCell<Option<Bytes>>,
}

/// What a writer gets for a large message.
pub(crate) enum Framed<W> {
    Ready(Frame),
    /// Being compressed, or to be: wait for it (off the worker, by this future).
    Wait(W),
}

/// How one socket's writer frames its large messages.
#[derive(Debug, Clone)]
pub(crate) struct Framing {
    pub(crate) shared: Arc<SharedFrames>,
    /// The socket negotiated permessage-deflate.
    pub(crate) deflate: bool,
}

impl Framing {
    /// The frame of engine.io's message packet `4<message>` (a large one): compressed, RSV1
    /// set, where the socket negotiated it and the message could be compressed, else plain.
    /// Compressed or not, it is made once for every socket that sends the same message; a
    /// message no other socket holds is framed here, plain, or compressed around a text kept
    /// compressed ([`crate::compressed_parts`]), else it is to be compressed.
    pub(crate) fn frame_of(&self, message: &Str) -> Framed<impl Future<Output = Frame> + Send + 'static> {
        // Before `frames_of`, which keeps a clone of it.
        let shared = !message.is_unique();
        if !self.deflate && !shared {
            return Framed::Ready(plain_frame(plain_payload(message)));
        }
        if self.deflate
            && !shared
            && let Some(compressed) = deflate::compress_at_once(message)
        {
            return Framed::Ready(deflate::compressed_frame(compressed));
        }
        let frames = self.shared.frames_of(message);
        if !self.deflate {
            return Framed::Ready(frames.plain(message));
        }
        if let Some(compressed) = frames.deflated.get() {
            return Framed::Ready(frames.compressed_or_plain(compressed.clone(), message));
        }
        let message = message.clone();
        Framed::Wait(async move {
            let compressed = frames.deflated.get_or_init(|| deflate::compress(message.clone(), shared)).await;
            frames.compressed_or_plain(compressed.clone(), &message)
        })
    }

    /// The frame of a large message for a sender that writes it at once, if it can have it
    /// now: as [`Self::frame_of`], except that a shared message's compression that nobody has
    /// started is made here, on the sender's thread (a broadcast is written socket after socket
    /// by its sender, and every socket after the first gets it made). `None` while it is made
    /// elsewhere, and for a message nobody shares (an ack) unless it compresses at once: those
    /// go to the writer's task, which compresses off the runtime's workers.
    pub(crate) fn frame_now(&self, message: &Str) -> Option<Frame> {
        // Before `frame_of`, which keeps a clone of it.
        let shared = !message.is_unique();
        match self.frame_of(message) {
            Framed::Ready(frame) => Some(frame),
            Framed::Wait(_) if !shared => None,
            Framed::Wait(_) => {
                let frames = self.shared.frames_of(message);
                if !frames.deflated.initialized() {
                    // Refused only while a writer's task is compressing it: then `None` below.
                    let _ = frames.deflated.set(deflate::compress_here(message, true));
                }
                frames.deflated.get().map(|compressed| frames.compressed_or_plain(compressed.clone(), message))
            }
        }
    }
}

impl SharedFrames {
    /// The frames of `message`, the same buffer or the same text, made if there are none.
    fn frames_of(&self, message: &Str) -> Arc<Frames> {
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
                Kept { message: message.clone(), frames: Arc::default() }
            }
        };
        let frames = entry.frames.clone();
        recent.push(entry);
        frames
    }
}

impl Frames {
    fn plain(&self, message: &Str) -> Frame {
        let payload = self.plain.get_or_init(|| {
            in_file(&[b"4", message.as_bytes()], &plain_frame(Bytes::new())).unwrap_or_else(|| plain_payload(message))
        });
        plain_frame(payload.clone())
    }

    fn compressed_or_plain(&self, compressed: Option<Bytes>, message: &Str) -> Frame {
        match compressed {
            Some(payload) => deflate::compressed_frame(payload),
            None => self.plain(message),
        }
    }
}

/// `4<message>`.
fn plain_payload(message: &Str) -> Bytes {
    let mut payload = BytesMut::with_capacity(message.len() + 1);
    payload.put_u8(b'4');
    payload.put_slice(message.as_bytes());
    payload.freeze()
}

/// `parts`, as the payload of a frame like `like`, in a memory file that a connection can
/// send from without copying it (`crate::file_frames`); `None` where there is none.
pub(super) fn in_file(parts: &[&[u8]], like: &Frame) -> Option<Bytes> {
    #[cfg(target_os = "linux")]
    {
        let mut head = Vec::new();
        like.header().format(parts.iter().map(|part| part.len() as u64).sum(), &mut head).ok()?;
        crate::file_frames::in_file(&head, parts)
    }
    #[cfg(not(target_os = "linux"))]
    None
}

fn plain_frame(payload: Bytes) -> Frame {
    Frame::message(payload, OpCode::Data(Data::Text), true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_tungstenite::tungstenite;

    fn large(tag: &str) -> Str {
        Str::from(format!("2/live,[\"state\",{{\"v\":\"{tag}\",\"pad\":\"{}\"}}]", "x".repeat(4000)))
    }

    fn framing(frames: &Arc<SharedFrames>, deflate: bool) -> Framing {
        Framing { shared: frames.clone(), deflate }
    }

    fn inflated(frame: &Frame) -> Vec<u8> {
        assert!(frame.header().rsv1);
        tungstenite::deflate::inflate(frame.payload(), None).expect("inflates")
    }

    /// The frame of `message`, waiting for it when it is being compressed.
    async fn frame(framing: &Framing, message: &Str) -> Frame {
        match framing.frame_of(message) {
            Framed::Ready(frame) => frame,
            Framed::Wait(wait) => wait.await,
        }
    }

    #[tokio::test]
    async fn a_message_is_the_engine_io_packet_compressed() {
        let frames = Arc::new(SharedFrames::default());
        let message = large("a");
        let frame = frame(&framing(&frames, true), &message).await;
        assert_eq!(inflated(&frame), format!("4{message}").into_bytes());
        assert!(frame.payload().len() < message.len() / 4);
    }

    #[tokio::test]
    async fn clones_and_equal_texts_share_one_compression() {
        let frames = Arc::new(SharedFrames::default());
        let deflating = framing(&frames, true);
        let message = large("a");
        let first = frame(&deflating, &message).await;
        let again = frame(&deflating, &message.clone()).await;
        let equal = frame(&deflating, &large("a")).await;
        assert_eq!(first.payload().as_ptr(), again.payload().as_ptr());
        assert_eq!(first.payload().as_ptr(), equal.payload().as_ptr());
        let other = frame(&deflating, &large("b")).await;
        assert_ne!(first.payload().as_ptr(), other.payload().as_ptr());
        assert_eq!(inflated(&other), format!("4{}", large("b")).into_bytes());
    }

    /// A broadcast's one `Str`, cloned to each socket, is framed once for the plain sockets:
    /// each writes the same bytes, `4<message>`, not a copy of its own.
    #[tokio::test]
    async fn a_shared_message_is_framed_once_for_every_plain_socket() {
        let frames = Arc::new(SharedFrames::default());
        let plain = framing(&frames, false);
        let broadcast = large("broadcast");
        let sockets: Vec<Str> = (0..3).map(|_| broadcast.clone()).collect();
        drop(broadcast);
        let written: Vec<Frame> = futures_util::future::join_all(sockets.iter().map(|held| frame(&plain, held))).await;
        for frame in &written {
            assert!(!frame.header().rsv1);
            assert_eq!(frame.payload().as_ptr(), written[0].payload().as_ptr());
        }
        assert_eq!(&written[0].payload()[..], format!("4{}", large("broadcast")).as_bytes());
        // The compressed frame of the same message sits beside the plain one.
        let compressed = frame(&framing(&frames, true), &sockets[0]).await;
        assert_eq!(inflated(&compressed), written[0].payload().to_vec());
    }

    /// A message only one socket holds (an ack) is framed by its writer and kept nowhere.
    #[tokio::test]
    async fn a_message_nobody_shares_is_framed_plain_without_being_kept() {
        let frames = Arc::new(SharedFrames::default());
        let frame = frame(&framing(&frames, false), &large("ack")).await;
        assert_eq!(&frame.payload()[..], format!("4{}", large("ack")).as_bytes());
        assert!(frames.recent.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_message_in_use_stays_while_one_off_messages_pass() {
        let frames = Arc::new(SharedFrames::default());
        let deflating = framing(&frames, true);
        let broadcast = large("broadcast");
        let first = frame(&deflating, &broadcast).await;
        for round in 0..100 {
            frame(&deflating, &large(&format!("ack {round}"))).await;
            if round % (KEPT - 1) == 0 {
                let again = frame(&deflating, &broadcast).await;
                assert_eq!(first.payload().as_ptr(), again.payload().as_ptr(), "round {round}");
            }
        }
        assert!(frames.recent.lock().unwrap().len() <= KEPT);
    }

    /// A sender writing a broadcast at once compresses it where nobody has; the writers' tasks
    /// and the senders after it get the same bytes. An ack (nobody shares it) is left to the
    /// writer's task.
    #[tokio::test]
    async fn a_sender_compresses_a_shared_message_at_once_and_leaves_an_ack_to_the_writer() {
        let frames = Arc::new(SharedFrames::default());
        let deflating = framing(&frames, true);
        let broadcast = large("broadcast");
        let held = broadcast.clone();
        let first = deflating.frame_now(&broadcast).expect("compressed at once");
        assert_eq!(inflated(&first), format!("4{broadcast}").into_bytes());
        let writer = frame(&deflating, &held).await;
        assert_eq!(writer.payload().as_ptr(), first.payload().as_ptr());
        assert!(deflating.frame_now(&large("ack")).is_none());
    }

    /// On a runtime of one worker, the writers waiting for a compression leave the worker free:
    /// a task beside them runs while the compression is under way, and they all get the same
    /// bytes once, a compressed frame at the end, and a ready one after.
    #[tokio::test(flavor = "current_thread")]
    async fn writers_wait_for_a_compression_without_holding_the_worker() {
        let frames = Arc::new(SharedFrames::default());
        let deflating = framing(&frames, true);
        let message = Str::from(format!("2/live,[\"state\",\"{}\"]", "state ".repeat(200_000)));
        let waits: Vec<_> = (0..8)
            .map(|_| match deflating.frame_of(&message) {
                Framed::Wait(wait) => tokio::spawn(wait),
                Framed::Ready(_) => panic!("nothing is compressed before anyone asked"),
            })
            .collect();
        let beside = tokio::spawn(async { "ran" });
        assert_eq!(beside.await.expect("the task beside ran"), "ran");
        // 1.2 MB take milliseconds to compress: the task beside ran while it was under way.
        assert!(matches!(deflating.frame_of(&message), Framed::Wait(_)), "the compression was still under way");
        let mut payloads = Vec::new();
        for wait in waits {
            let frame = wait.await.expect("a writer");
            assert!(frame.header().rsv1, "compressed");
            payloads.push(frame.payload().as_ptr());
        }
        payloads.dedup();
        assert_eq!(payloads.len(), 1, "one compression for every writer");
        assert!(matches!(deflating.frame_of(&message), Framed::Ready(_)), "ready for the next writer");
    }
}
