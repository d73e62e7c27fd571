//! PATCH (floor): a large text compressed once for every message that holds it.
//!
//! A message sent to one socket is compressed for it alone (permessage-deflate, see
//! `transport::deflate`): a broadcast is compressed once for a room, but a join's ack is a
//! message of its own, `43<id>[{"ok":true,"state":{…}}]` with the moment of the answer inside
//! the state. 65 KB of it took about 1 ms of CPU, and 10,000 sockets joining at once each
//! waited for its turn holding its 65 KB ack: the server's heap grew by hundreds of them and
//! kept the memory once they were gone.
//!
//! A server that knows a large text its messages will hold (floor: a state's JSON after its
//! `serverTime`) keeps it here, compressed once ([`keep`]). A message that holds it is then
//! compressed in three pieces: what comes before the text, the text's kept compression, and
//! what comes after. Each piece is compressed by a compressor of its own and ends in a sync
//! flush (on a byte boundary, not final), so no piece refers back into another and the three
//! read as one deflate stream, the message's (RFC 7692, section 7.2.1: the stream's last
//! `00 00 ff ff` left off). The pieces around the text are a few dozen bytes: such a message
//! compresses in microseconds, on the writer's own task.

use std::sync::{Arc, RwLock, Weak};

use bytes::{Bytes, BytesMut};
use tokio_tungstenite::tungstenite;

use crate::transport::deflate::LEVEL;

/// A sync flush's empty stored block, which ends each piece and which a message leaves off.
const SYNC_FLUSH: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

/// Texts shorter than this are not kept: compressing them whole costs little.
pub const WORTH_IT: usize = 4096;

/// How much of a kept text is looked for before it is compared whole.
const PROBE: usize = 64;

/// The texts kept, each while its [`KeptPart`] lives; the newest last.
static KEPT: RwLock<Vec<Weak<Part>>> = RwLock::new(Vec::new());

#[derive(Debug)]
struct Part {
    plain: Bytes,
    /// `plain` compressed on its own, ending in a sync flush (its `00 00 ff ff` kept).
    deflated: Bytes,
}

/// A text kept compressed for as long as this lives.
#[derive(Debug)]
pub struct KeptPart(Arc<Part>);

impl KeptPart {
    /// The bytes this holds: the text and its compression.
    pub fn bytes(&self) -> usize {
        self.0.plain.len() + self.0.deflated.len()
    }
}

/// Keeps `plain` compressed, for the messages that will hold it, while the answer lives;
/// `None` for a text under [`WORTH_IT`] bytes.
pub fn keep(plain: Bytes) -> std::io::Result<Option<KeptPart>> {
    if plain.len() < WORTH_IT {
        return Ok(None);
    }
    let mut deflated = BytesMut::from(tungstenite::deflate::deflate(&[&plain], LEVEL)?);
    deflated.extend_from_slice(&SYNC_FLUSH);
    let part = Arc::new(Part { plain, deflated: deflated.freeze() });
    let mut kept = KEPT.write().unwrap_or_else(|poisoned| poisoned.into_inner());
    kept.retain(|part| part.strong_count() > 0);
    kept.push(Arc::downgrade(&part));
    Ok(Some(KeptPart(part)))
}

impl Drop for KeptPart {
    fn drop(&mut self) {
        let me = Arc::as_ptr(&self.0);
        let mut kept = KEPT.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        kept.retain(|part| part.as_ptr() != me && part.strong_count() > 0);
    }
}

/// `head` then `text`, compressed as one message around a kept text that `text` holds; `None`
/// when it holds none, or when what is around it is `most_around` bytes or more.
pub(crate) fn deflate_around(head: &[u8], text: &[u8], most_around: usize) -> Option<std::io::Result<Bytes>> {
    let (at, part) = found_in(text)?;
    let after = &text[at + part.plain.len()..];
    if head.len() + at + after.len() >= most_around {
        return None;
    }
    Some(joined(&[head, &text[..at]], &part.deflated, after))
}

/// The newest kept text that `text` holds, with where it starts.
fn found_in(text: &[u8]) -> Option<(usize, Arc<Part>)> {
    let kept = KEPT.read().unwrap_or_else(|poisoned| poisoned.into_inner());
    kept.iter().rev().filter_map(Weak::upgrade).find_map(|part| {
        let probe = &part.plain[..PROBE.min(part.plain.len())];
        let at = memchr::memmem::find_iter(text, probe).find(|&at| text[at..].starts_with(&part.plain))?;
        Some((at, part))
    })
}

/// The pieces before, the kept compression and the piece after, as one message's payload.
fn joined(before: &[&[u8]], deflated: &Bytes, after: &[u8]) -> std::io::Result<Bytes> {
    let before = tungstenite::deflate::deflate(before, LEVEL)?;
    let after = if after.is_empty() { None } else { Some(tungstenite::deflate::deflate(&[after], LEVEL)?) };
    let mut message = BytesMut::with_capacity(before.len() + deflated.len() + after.as_ref().map_or(0, Bytes::len) + 4);
    message.extend_from_slice(&before);
    message.extend_from_slice(&SYNC_FLUSH);
    match after {
        Some(after) => {
            message.extend_from_slice(deflated);
            message.extend_from_slice(&after);
        }
        None => message.extend_from_slice(&deflated[..deflated.len() - SYNC_FLUSH.len()]),
    }
    Ok(message.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A text of `len` bytes unlike any other test's (each test keeps its own).
    fn text(seed: &str, len: usize) -> Bytes {
        let mut text = String::new();
        let mut n = 0u64;
        while text.len() < len {
            text.push_str(&format!("{{\"{seed}\":{n},\"name\":\"player {}\"}},", n * 7919 % 1000));
            n += 1;
        }
        text.truncate(len);
        Bytes::from(text)
    }

    fn inflated(payload: &[u8]) -> Vec<u8> {
        tungstenite::deflate::inflate(payload, None).expect("one valid deflate stream")
    }

    fn holds(haystack: &[u8], needle: &[u8]) -> bool {
        memchr::memmem::find(haystack, needle).is_some()
    }

    #[test]
    fn a_message_holding_a_kept_text_is_its_kept_compression_with_the_rest_around_it() {
        let state = text("held", 65_000);
        let kept = keep(state.clone()).expect("compressed").expect("kept");
        let deflated_state = &kept.0.deflated[..kept.0.deflated.len() - SYNC_FLUSH.len()];
        let stamp = "2026-11-30T06:00:00.123456789Z";
        for (before, after) in [("3/live,1[{\"ok\":true,\"state\":{\"at\":\"", "\"}}]"), ("", "}]"), ("3[", "")] {
            let message = [before.as_bytes(), stamp.as_bytes(), &state, after.as_bytes()].concat();
            let payload = deflate_around(b"4", &message, 1024).expect("holds it").expect("compressed");
            assert_eq!(inflated(&payload), [b"4", message.as_slice()].concat());
            assert!(holds(&payload, deflated_state), "the kept compression itself, for {before:?}…{after:?}");
            assert!(payload.len() < deflated_state.len() + 200, "{} bytes", payload.len());
        }
    }

    #[test]
    fn a_message_without_a_kept_text_whole_or_with_much_around_it_is_left_alone() {
        let state = text("alone", 20_000);
        let _kept = keep(state.clone()).expect("compressed").expect("kept");
        // Its first bytes but not the rest: looked at, not taken.
        let almost = [&state[..10_000], b"changed", &state[10_007..]].concat();
        assert!(deflate_around(b"4", &almost, usize::MAX).is_none());
        assert!(deflate_around(b"4", &state[1..], usize::MAX).is_none());
        let much_around = [&state[..], "x".repeat(2_000).as_bytes()].concat();
        assert!(deflate_around(b"4", &much_around, 1024).is_none());
        let payload = deflate_around(b"4", &much_around, usize::MAX).expect("holds it").expect("compressed");
        assert_eq!(inflated(&payload), [b"4", much_around.as_slice()].concat());
    }

    #[test]
    fn a_text_is_forgotten_with_its_kept_part_and_a_short_one_is_not_kept() {
        let state = text("forgotten", 8_000);
        let kept = keep(state.clone()).expect("compressed").expect("kept");
        assert!(deflate_around(b"4", &state, 1024).is_some());
        drop(kept);
        assert!(deflate_around(b"4", &state, 1024).is_none());
        assert!(keep(text("short", WORTH_IT - 1)).expect("nothing to compress").is_none());
    }
}
