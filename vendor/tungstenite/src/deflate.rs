//! PATCH (floor): permessage-deflate (RFC 7692) with no context takeover in either direction.
//!
//! A server that answers [`RESPONSE`] compresses every message on its own and tells the client
//! to do the same, so neither side keeps a compressor or a 32 KiB window per connection, and a
//! server may compress one message once and send the same bytes to many connections. The
//! reading side is [`WebSocketConfig::permessage_deflate`](crate::protocol::WebSocketConfig):
//! a data frame with RSV1 set is inflated per message, never past the message size limit.

use bytes::Bytes;
use std::sync::Mutex;

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

use crate::error::{CapacityError, Error, ProtocolError, Result};

/// The `Sec-WebSocket-Extensions` answer of a server that accepted an offer.
pub const RESPONSE: &str =
    "permessage-deflate; server_no_context_takeover; client_no_context_takeover";

/// What every compressed message ends with once flushed, left off on the wire (RFC 7692 7.2.1).
const TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

/// Whether a server may answer [`RESPONSE`] to a client's `Sec-WebSocket-Extensions` headers:
/// one of the offers is permessage-deflate with parameters it can honour (RFC 7692 7.1). An
/// offer that asks the server for a window under 32 KiB is declined (one compression serves
/// every connection), as is one with an unknown or repeated parameter. Headers that do not
/// parse as an extension list decline everything: the connection goes on uncompressed.
pub fn accepts<'a>(headers: impl IntoIterator<Item = &'a [u8]>) -> bool {
    let mut accepted = false;
    for header in headers {
        let Ok(text) = std::str::from_utf8(header) else { return false };
        for offer in split_outside_quotes(text, ',') {
            if offer.trim().is_empty() {
                continue;
            }
            match offer_is_acceptable(offer) {
                None => return false,
                Some(true) => accepted = true,
                Some(false) => {}
            }
        }
    }
    accepted
}

/// `None` when the offer is malformed, else whether it is a permessage-deflate we can take.
fn offer_is_acceptable(offer: &str) -> Option<bool> {
    let mut parts = split_outside_quotes(offer, ';');
    let name = parts.next()?.trim();
    if !is_token(name) {
        return None;
    }
    let mut seen: Vec<&str> = Vec::new();
    let mut acceptable = name.eq_ignore_ascii_case("permessage-deflate");
    for param in parts {
        let (key, value) = match param.split_once('=') {
            Some((key, value)) => (key.trim(), Some(unquoted(value.trim())?)),
            None => (param.trim(), None),
        };
        if !is_token(key) {
            return None;
        }
        if !acceptable {
            continue;
        }
        if seen.iter().any(|earlier| earlier.eq_ignore_ascii_case(key)) {
            acceptable = false;
            continue;
        }
        seen.push(key);
        acceptable = match (key.to_ascii_lowercase().as_str(), value) {
            ("server_no_context_takeover" | "client_no_context_takeover", None) => true,
            // The client may compress with any window: each message is inflated with the largest.
            ("client_max_window_bits", None) => true,
            ("client_max_window_bits", Some(bits)) => window_bits(bits).is_some(),
            ("server_max_window_bits", Some(bits)) => window_bits(bits) == Some(15),
            _ => false,
        };
    }
    Some(acceptable)
}

fn window_bits(value: &str) -> Option<u8> {
    let bits: u8 = if value.len() <= 2 && value.bytes().all(|b| b.is_ascii_digit()) {
        value.parse().ok()?
    } else {
        return None;
    };
    (8..=15).contains(&bits).then_some(bits)
}

/// A parameter's value: a token, or a quoted string whose content is a token (RFC 7692 7.1).
fn unquoted(value: &str) -> Option<&str> {
    let inner = match value.strip_prefix('"') {
        Some(rest) => rest.strip_suffix('"')?,
        None => value,
    };
    is_token(inner).then_some(inner)
}

fn is_token(text: &str) -> bool {
    !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_graphic() && !b"()<>@,;:\\\"/[]?={}".contains(&b))
}

/// `text` split at `separator` where it is not inside a quoted string.
fn split_outside_quotes(text: &str, separator: char) -> impl Iterator<Item = &str> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let current = rest?;
        let mut quoted = false;
        for (at, c) in current.char_indices() {
            match c {
                '"' => quoted = !quoted,
                c if c == separator && !quoted => {
                    rest = Some(&current[at + 1..]);
                    return Some(&current[..at]);
                }
                _ => {}
            }
        }
        rest = None;
        Some(current)
    })
}

/// One message compressed on its own, from its parts in order, as its frame's payload.
pub fn deflate(parts: &[&[u8]], level: u32) -> std::io::Result<Bytes> {
    KEPT.deflate(parts, level)
}

/// Compresses all of `input` into `out`, growing it as needed, then flushes as `flush` says.
fn compress_all(
    compressor: &mut Compress,
    mut input: &[u8],
    out: &mut Vec<u8>,
    flush: FlushCompress,
) -> std::io::Result<()> {
    loop {
        if out.len() == out.capacity() {
            out.reserve(out.capacity().max(256));
        }
        let before = compressor.total_in();
        compressor.compress_vec(input, out, flush).map_err(std::io::Error::other)?;
        input = &input[(compressor.total_in() - before) as usize..];
        // Room left in `out` means the compressor had nothing more to give.
        if input.is_empty() && out.len() < out.capacity() {
            return Ok(());
        }
    }
}

/// Compressors kept between messages, a few: a compressor's state is about 270 KiB (zlib-rs,
/// level 6), and made for every message, on whichever thread of the blocking pool compressed
/// it, its allocations left the heap of a server that compressed one ack per joining socket
/// fragmented (RSS per connection 27–42 KiB at 10,000 sockets instead of 14).
struct Compressors {
    kept: Mutex<Vec<(u32, Compress)>>,
}

/// The compressors [`deflate`] keeps.
static KEPT: Compressors = Compressors::new();

/// The most compressors kept: about as many as messages are compressed at once.
const COMPRESSORS_KEPT: usize = 4;

impl Compressors {
    const fn new() -> Self {
        Self { kept: Mutex::new(Vec::new()) }
    }

    /// [`deflate`] with a compressor of these, given back after.
    fn deflate(&self, parts: &[&[u8]], level: u32) -> std::io::Result<Bytes> {
        let total: usize = parts.iter().map(|part| part.len()).sum();
        let mut out = Vec::with_capacity(total / 4 + 64);
        let mut compressor = self.take(level);
        for (n, part) in parts.iter().enumerate() {
            // A sync flush ends the message on a byte boundary with an empty stored block.
            let flush = if n + 1 == parts.len() { FlushCompress::Sync } else { FlushCompress::None };
            compress_all(&mut compressor, part, &mut out, flush)?;
        }
        self.give_back(level, compressor);
        if out.ends_with(&TAIL) {
            out.truncate(out.len() - TAIL.len());
        }
        Ok(Bytes::from(out))
    }

    /// A compressor of `level`, ready for a new message.
    fn take(&self, level: u32) -> Compress {
        let mut kept = self.kept.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        match kept.iter().rposition(|(kept_level, _)| *kept_level == level) {
            Some(at) => kept.swap_remove(at).1,
            None => Compress::new(Compression::new(level), false),
        }
    }

    /// Keeps `compressor`, reset, for the next message (only one that compressed a message
    /// whole comes back); the oldest kept goes when [`COMPRESSORS_KEPT`] are.
    fn give_back(&self, level: u32, mut compressor: Compress) {
        compressor.reset();
        let mut kept = self.kept.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if kept.len() == COMPRESSORS_KEPT {
            kept.remove(0);
        }
        kept.push((level, compressor));
    }
}

/// A compressed message's payload inflated, refused past `limit` bytes before it is allocated.
pub fn inflate(compressed: &[u8], limit: Option<usize>) -> Result<Vec<u8>> {
    let limit = limit.unwrap_or(usize::MAX);
    let too_long = |size| Error::Capacity(CapacityError::MessageTooLong { size, max_size: limit });
    let mut decompressor = Decompress::new(false);
    let mut out: Vec<u8> = Vec::new();
    for input in [compressed, &TAIL[..]] {
        let mut input = input;
        loop {
            if out.len() == out.capacity() {
                if out.len() > limit {
                    return Err(too_long(out.len()));
                }
                // Grow by what is written already (at least 4 KiB), never far past the limit.
                let room = out.len().max(4096).min(limit.saturating_add(1) - out.len());
                out.reserve_exact(room);
            }
            let before = decompressor.total_in();
            let status = decompressor
                .decompress_vec(input, &mut out, FlushDecompress::Sync)
                .map_err(|_| Error::Protocol(ProtocolError::InvalidCompressedData))?;
            input = &input[(decompressor.total_in() - before) as usize..];
            if out.len() > limit {
                return Err(too_long(out.len()));
            }
            if status == Status::StreamEnd || (input.is_empty() && out.len() < out.capacity()) {
                break;
            }
        }
    }
    Ok(out)
}

/// The kind of message whose compressed frames are being gathered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Deflated {
    Text,
    Binary,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer(header: &str) -> bool {
        accepts([header.as_bytes()])
    }

    #[test]
    fn browsers_offers_are_accepted() {
        assert!(offer("permessage-deflate; client_max_window_bits"));
        assert!(offer("permessage-deflate"));
        assert!(offer("permessage-deflate; server_no_context_takeover; client_no_context_takeover"));
        assert!(offer("permessage-deflate; client_max_window_bits=10"));
        assert!(offer("permessage-deflate; server_max_window_bits=15"));
        assert!(offer("permessage-deflate; server_max_window_bits=\"15\""));
        assert!(offer("PerMessage-Deflate; Client_Max_Window_Bits"));
    }

    #[test]
    fn a_later_acceptable_offer_or_header_is_taken() {
        assert!(offer("permessage-deflate; server_max_window_bits=10, permessage-deflate"));
        assert!(offer("x-webkit-deflate-frame, permessage-deflate"));
        assert!(accepts(["x-foo".as_bytes(), "permessage-deflate".as_bytes()]));
    }

    #[test]
    fn offers_we_cannot_honour_are_declined() {
        assert!(!offer("permessage-deflate; server_max_window_bits=10"));
        assert!(!offer("permessage-deflate; server_max_window_bits"));
        assert!(!offer("permessage-deflate; client_max_window_bits=16"));
        assert!(!offer("permessage-deflate; client_max_window_bits=7"));
        assert!(!offer("permessage-deflate; server_no_context_takeover=1"));
        assert!(!offer("permessage-deflate; unknown_param"));
        assert!(!offer("permessage-deflate; client_no_context_takeover; client_no_context_takeover"));
        assert!(!offer("x-webkit-deflate-frame"));
        assert!(!accepts(std::iter::empty()));
        assert!(!offer(""));
    }

    #[test]
    fn malformed_headers_decline_everything() {
        for header in [
            "permessage-deflate; client_max_window_bits=\"1 5\"",
            "permessage-deflate; client_max_window_bits=\"15",
            "permessage-deflate; =15",
            "permessage deflate",
            "permessage-deflate;; client_max_window_bits",
            "permessage-deflate; client_max_window_bits=99999999999999999999",
            "\u{0}permessage-deflate",
            "permessage-deflate, @",
        ] {
            assert!(!offer(header), "{header:?}");
        }
        assert!(!accepts([&[0xff, 0xfe][..]]));
        assert!(!accepts(["permessage-deflate".as_bytes(), "permessage-deflate; =".as_bytes()]));
    }

    #[test]
    fn a_message_deflated_in_parts_inflates_to_the_whole() {
        let text = br#"{"tournamentId":"x","tables":[{"seats":[1,2,3]}]}"#.repeat(200);
        let compressed = deflate(&[b"4", &text], 6).expect("deflates");
        assert!(compressed.len() < text.len() / 10);
        assert!(!compressed.ends_with(&TAIL));
        let mut whole = b"4".to_vec();
        whole.extend_from_slice(&text);
        assert_eq!(inflate(&compressed, Some(whole.len())).expect("inflates"), whole);
    }

    #[test]
    fn a_kept_compressor_compresses_the_next_message_as_a_fresh_one_would() {
        let compressors = Compressors::new();
        let first = br#"{"first":"message","seats":[1,2,3]}"#.repeat(100);
        let second = br#"{"second":"one","tables":[4,5]}"#.repeat(100);
        compressors.deflate(&[&first], 6).expect("deflates");
        assert_eq!(compressors.kept.lock().expect("not poisoned").len(), 1, "kept for the next message");
        let again = compressors.deflate(&[b"4", &second], 6).expect("deflates");
        assert_eq!(compressors.kept.lock().expect("not poisoned").len(), 1, "the same one, given back");
        assert_eq!(again, Compressors::new().deflate(&[b"4", &second], 6).expect("deflates"));
        for level in 1..=9 {
            compressors.deflate(&[&first], level).expect("deflates");
        }
        assert_eq!(compressors.kept.lock().expect("not poisoned").len(), COMPRESSORS_KEPT);
    }

    #[test]
    fn an_empty_or_incompressible_message_round_trips() {
        assert_eq!(inflate(&deflate(&[b""], 6).expect("deflates"), Some(0)).expect("inflates"), b"");
        let noise: Vec<u8> = (0..100_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        assert_eq!(inflate(&deflate(&[&noise], 6).expect("deflates"), None).expect("inflates"), noise);
    }

    #[test]
    fn a_bomb_is_refused_at_the_limit() {
        let zeros = vec![0u8; 20 << 20];
        let bomb = deflate(&[&zeros], 9).expect("deflates");
        assert!(bomb.len() < 100_000, "{}", bomb.len());
        match inflate(&bomb, Some(100_000)) {
            Err(Error::Capacity(CapacityError::MessageTooLong { max_size: 100_000, size })) => {
                assert!(size <= 200_000, "allocated {size}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_compressed_data_is_a_protocol_error() {
        assert!(matches!(
            inflate(&[0xff, 0xff, 0xff, 0xff], None),
            Err(Error::Protocol(ProtocolError::InvalidCompressedData))
        ));
    }
}
