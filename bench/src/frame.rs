//! RFC 6455 frames as a watcher needs them: its own frames written masked, the server's read
//! as a stream. A data message is not kept whole: the decoder keeps its first bytes (enough
//! for the packet's kind and `version`) and counts the rest as it passes, so one small read
//! buffer serves every message whatever its size, and nothing is allocated per message.
//! With permessage-deflate negotiated, a compressed message's first bytes are kept and its
//! head inflated from them (the server compresses each message on its own).

use std::ops::Range;

use anyhow::bail;

pub const CONTINUATION: u8 = 0x0;
pub const TEXT: u8 = 0x1;
pub const BINARY: u8 = 0x2;
pub const CLOSE: u8 = 0x8;
pub const PING: u8 = 0x9;
pub const PONG: u8 = 0xA;
/// Control frames carry at most this much (RFC 6455 §5.5).
pub const MAX_CONTROL_PAYLOAD: usize = 125;
/// Of a compressed message, the first bytes kept to inflate its head from: a LiveState
/// compresses about 5.7 to 1, so these hold some 5 KB of text.
const COMPRESSED_HEAD: usize = 1024;

/// Appends one final client frame of `opcode` carrying `payload`, masked with `mask`.
pub fn encode(out: &mut Vec<u8>, opcode: u8, payload: &[u8], mask: [u8; 4]) {
    out.push(0x80 | opcode);
    match payload.len() {
        len @ 0..=125 => out.push(0x80 | len as u8),
        len @ 126..=0xFFFF => {
            out.push(0x80 | 126);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        }
        len => {
            out.push(0x80 | 127);
            out.extend_from_slice(&(len as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(&mask);
    out.extend(payload.iter().zip(mask.iter().cycle()).map(|(byte, key)| byte ^ key));
}

/// The fixed part of a frame.
#[derive(Debug, PartialEq, Eq)]
struct Header {
    fin: bool,
    /// permessage-deflate's "compressed" bit.
    rsv1: bool,
    opcode: u8,
    payload_len: u64,
    /// Bytes of the header itself (2, 4 or 10: a server's frames carry no mask).
    size: usize,
}

/// The header at the front of `buf`, or `None` until enough of it has arrived.
fn header(buf: &[u8]) -> anyhow::Result<Option<Header>> {
    let [first, second, ..] = *buf else { return Ok(None) };
    if first & 0x30 != 0 {
        bail!("a frame with RSV2 or RSV3 set");
    }
    if second & 0x80 != 0 {
        bail!("a masked frame from the server");
    }
    let (payload_len, size) = match second & 0x7F {
        126 => match buf.get(2..4) {
            Some(&[high, low]) => (u64::from(u16::from_be_bytes([high, low])), 4),
            _ => return Ok(None),
        },
        127 => match buf.get(2..10).and_then(|bytes| <[u8; 8]>::try_from(bytes).ok()) {
            Some(bytes) => (u64::from_be_bytes(bytes), 10),
            None => return Ok(None),
        },
        len => (u64::from(len), 2),
    };
    Ok(Some(Header { fin: first & 0x80 != 0, rsv1: first & 0x40 != 0, opcode: first & 0x0F, payload_len, size }))
}

/// What [`Decoder::decode`] completed.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// A whole data message of `len` bytes on the wire (`compressed`: inflated for its head);
    /// its first bytes are [`Decoder::head`].
    Message { len: usize, compressed: bool },
    /// A ping; its payload is this range of the bytes given to `decode`.
    Ping(Range<usize>),
    /// The server's close frame.
    Close,
}

/// Reads the server's frames from a byte stream handed over in pieces of any size.
pub struct Decoder {
    /// How many first bytes of a data message to keep.
    head_limit: usize,
    /// The first bytes of the data message being read (or the last one read).
    head: Vec<u8>,
    /// Whether a data frame's header has been read and its payload is passing.
    in_frame: bool,
    /// Payload bytes of that frame still to come.
    frame_left: u64,
    /// Whether that frame ends its message.
    frame_fin: bool,
    /// Whether a message has begun and not ended (its next frame is a continuation).
    in_message: bool,
    /// Payload bytes of the message so far.
    message_len: usize,
    /// Whether permessage-deflate was negotiated (RSV1 allowed on a message's first frame).
    deflate: bool,
    /// Whether the message being read is compressed.
    compressed: bool,
}

impl Decoder {
    pub fn new(head_limit: usize, deflate: bool) -> Self {
        Self {
            head_limit,
            head: Vec::with_capacity(head_limit),
            in_frame: false,
            frame_left: 0,
            frame_fin: false,
            in_message: false,
            message_len: 0,
            deflate,
            compressed: false,
        }
    }

    /// The first bytes of the last data message (up to the head limit).
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// Consumes what it can of `buf`: returns how many bytes it used and what they completed,
    /// if anything. Unused bytes (an incomplete header or control frame) must be given again,
    /// followed by more.
    pub fn decode(&mut self, buf: &[u8]) -> anyhow::Result<(usize, Option<Found>)> {
        let mut used = 0;
        loop {
            if self.in_frame {
                let available = buf.len() - used;
                let take = usize::try_from(self.frame_left).map_or(available, |left| left.min(available));
                let limit = if self.compressed { COMPRESSED_HEAD } else { self.head_limit };
                let keep = take.min(limit.saturating_sub(self.head.len()));
                self.head.extend_from_slice(&buf[used..used + keep]);
                used += take;
                self.message_len += take;
                self.frame_left -= take as u64;
                if self.frame_left > 0 {
                    return Ok((used, None));
                }
                self.in_frame = false;
                if self.frame_fin {
                    self.in_message = false;
                    if self.compressed {
                        self.head = inflate_head(&self.head, self.head_limit);
                    }
                    return Ok((used, Some(Found::Message { len: self.message_len, compressed: self.compressed })));
                }
                continue;
            }
            let Some(header) = header(&buf[used..])? else { return Ok((used, None)) };
            let starts_message = matches!(header.opcode, TEXT | BINARY);
            if header.rsv1 && !(self.deflate && starts_message) {
                bail!("RSV1 on a frame that is not the first of a message, or without permessage-deflate");
            }
            if header.opcode >= CLOSE {
                let len = match usize::try_from(header.payload_len) {
                    Ok(len) if header.fin && len <= MAX_CONTROL_PAYLOAD => len,
                    _ => bail!("a fragmented or oversized control frame"),
                };
                let payload = used + header.size..used + header.size + len;
                if payload.end > buf.len() {
                    return Ok((used, None));
                }
                used = payload.end;
                match header.opcode {
                    PING => return Ok((used, Some(Found::Ping(payload)))),
                    CLOSE => return Ok((used, Some(Found::Close))),
                    PONG => continue,
                    other => bail!("an unknown control frame {other:#x}"),
                }
            }
            match header.opcode {
                TEXT | BINARY if self.in_message => bail!("a new message inside a fragmented one"),
                TEXT | BINARY => {
                    self.in_message = true;
                    self.head.clear();
                    self.message_len = 0;
                    self.compressed = header.rsv1;
                }
                CONTINUATION if !self.in_message => bail!("a continuation frame outside a message"),
                CONTINUATION => {}
                other => bail!("an unknown data frame {other:#x}"),
            }
            used += header.size;
            self.in_frame = true;
            self.frame_left = header.payload_len;
            self.frame_fin = header.fin;
        }
    }
}

/// The first `limit` bytes of a message compressed on its own, from its first compressed
/// bytes (a cut stream ends the output early, which is all a head needs).
fn inflate_head(compressed: &[u8], limit: usize) -> Vec<u8> {
    let mut head = Vec::with_capacity(limit);
    let _ = flate2::Decompress::new(false).decompress_vec(compressed, &mut head, flate2::FlushDecompress::None);
    head
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server frame: unmasked.
    fn server_frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
        let mut frame = Vec::new();
        encode(&mut frame, opcode, payload, [0; 4]);
        frame[0] = if fin { 0x80 | opcode } else { opcode };
        frame[1] &= 0x7F;
        let mask_at = frame.len() - payload.len() - 4;
        frame.drain(mask_at..mask_at + 4);
        frame
    }

    /// Feeds `stream` in pieces of `piece` bytes, as reads would, and lists what was found.
    fn decode_in_pieces(decoder: &mut Decoder, stream: &[u8], piece: usize) -> Vec<(Found, Vec<u8>)> {
        let (mut buf, mut fed, mut found) = (Vec::new(), 0, Vec::new());
        while fed < stream.len() || !buf.is_empty() {
            let end = (fed + piece).min(stream.len());
            buf.extend_from_slice(&stream[fed..end]);
            fed = end;
            loop {
                let (used, event) = decoder.decode(&buf).expect("valid frames");
                let event = event.map(|event| {
                    let bytes = match &event {
                        Found::Message { .. } => decoder.head().to_vec(),
                        Found::Ping(range) => buf[range.clone()].to_vec(),
                        Found::Close => Vec::new(),
                    };
                    (event, bytes)
                });
                buf.drain(..used);
                match event {
                    Some(event) => found.push(event),
                    None => break,
                }
            }
            if fed == stream.len() && !buf.is_empty() {
                panic!("{} bytes left over", buf.len());
            }
        }
        found
    }

    #[test]
    fn a_client_frame_is_masked_with_the_length_in_the_right_width() {
        let mut out = Vec::new();
        encode(&mut out, TEXT, b"3", [1, 2, 3, 4]);
        assert_eq!(out, [0x81, 0x81, 1, 2, 3, 4, b'3' ^ 1]);

        for (len, header) in [(125, 2 + 4), (126, 4 + 4), (70_000, 10 + 4)] {
            let payload = vec![b'x'; len];
            let mut out = Vec::new();
            encode(&mut out, TEXT, &payload, [9, 8, 7, 6]);
            assert_eq!(out.len(), header + len, "{len}");
            let mask = &out[header - 4..header];
            let unmasked: Vec<u8> = out[header..].iter().enumerate().map(|(i, byte)| byte ^ mask[i % 4]).collect();
            assert_eq!(unmasked, payload);
        }
    }

    #[test]
    fn a_large_message_keeps_its_head_and_counts_the_rest_whatever_the_reads() {
        let payload: Vec<u8> = (0..70_000u32).map(|i| (i % 251) as u8).collect();
        let stream = server_frame(true, TEXT, &payload);
        for piece in [1, 7, 4096, stream.len()] {
            let mut decoder = Decoder::new(16, false);
            let found = decode_in_pieces(&mut decoder, &stream, piece);
            assert_eq!(
                found,
                [(Found::Message { len: 70_000, compressed: false }, payload[..16].to_vec())],
                "pieces of {piece}"
            );
        }
    }

    #[test]
    fn a_fragmented_message_with_a_ping_between_its_frames_comes_whole_after_the_ping() {
        let mut stream = server_frame(false, TEXT, b"42/live,[");
        stream.extend(server_frame(true, PING, b"hi"));
        stream.extend(server_frame(false, CONTINUATION, b""));
        stream.extend(server_frame(true, CONTINUATION, b"\"state\"]"));
        stream.extend(server_frame(true, PONG, b""));
        stream.extend(server_frame(true, TEXT, b"2"));
        stream.extend(server_frame(true, CLOSE, &[0x03, 0xE8]));
        for piece in [1, 3, stream.len()] {
            let found = decode_in_pieces(&mut Decoder::new(512, false), &stream, piece);
            let kinds: Vec<_> =
                found.iter().map(|(found, bytes)| (matches!(found, Found::Ping(_)), bytes.clone())).collect();
            assert_eq!(
                kinds,
                [
                    (true, b"hi".to_vec()),
                    (false, b"42/live,[\"state\"]".to_vec()),
                    (false, b"2".to_vec()),
                    (false, vec![])
                ],
                "pieces of {piece}"
            );
            assert_eq!(found[1].0, Found::Message { len: 17, compressed: false });
            assert_eq!(found[3].0, Found::Close);
        }
    }

    #[test]
    fn an_incomplete_header_or_control_frame_is_left_for_the_next_read() {
        let mut decoder = Decoder::new(8, false);
        let big = server_frame(true, TEXT, &[b'a'; 300]);
        assert_eq!(decoder.decode(&big[..3]).expect("ok"), (0, None), "the 16-bit length is cut");
        let ping = server_frame(true, PING, b"abc");
        assert_eq!(decoder.decode(&ping[..4]).expect("ok"), (0, None));
        assert_eq!(decoder.decode(&ping).expect("ok"), (5, Some(Found::Ping(2..5))));
    }

    #[test]
    fn protocol_violations_are_errors() {
        let mut masked = Vec::new();
        encode(&mut masked, TEXT, b"x", [1, 1, 1, 1]);
        assert!(Decoder::new(8, false).decode(&masked).is_err(), "a server must not mask");
        assert!(Decoder::new(8, false).decode(&server_frame(true, CONTINUATION, b"x")).is_err());
        assert!(Decoder::new(8, false).decode(&server_frame(false, PING, b"x")).is_err());
        let mut two_starts = server_frame(false, TEXT, b"a");
        two_starts.extend(server_frame(true, TEXT, b"b"));
        assert!(Decoder::new(8, false).decode(&two_starts).is_err());
        assert!(Decoder::new(8, false).decode(&[0xC1, 0x00]).is_err(), "RSV1 without an extension");
        assert!(Decoder::new(8, true).decode(&[0xA1, 0x00]).is_err(), "RSV2");
        let mut continued = server_frame(false, TEXT, b"a");
        continued.extend(server_frame(true, CONTINUATION, b"b"));
        continued[3] |= 0x40;
        assert!(Decoder::new(8, true).decode(&continued).is_err(), "RSV1 on a continuation");
    }

    /// A server's message of `text` compressed on its own, RSV1 set, in two frames; and the
    /// compressed size.
    fn compressed_frames(text: &[u8]) -> (Vec<u8>, usize) {
        use std::io::Write;
        let mut encoder = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
        encoder.write_all(text).expect("in memory");
        encoder.flush().expect("in memory");
        let mut payload = std::mem::take(encoder.get_mut());
        payload.truncate(payload.len() - 4);
        let (first, rest) = payload.split_at(payload.len() / 2);
        let mut stream = server_frame(false, TEXT, first);
        stream[0] |= 0x40;
        stream.extend(server_frame(true, CONTINUATION, rest));
        (stream, payload.len())
    }

    #[test]
    fn a_compressed_message_gives_its_inflated_head_and_its_size_on_the_wire() {
        let text = format!(
            "42/live,[\"state\",{{\"tournamentId\":\"x\",\"version\":7,\"tables\":[{}]}}]",
            "1,".repeat(30_000)
        );
        let (stream, wire) = compressed_frames(text.as_bytes());
        for piece in [1, 100, stream.len()] {
            let found = decode_in_pieces(&mut Decoder::new(64, true), &stream, piece);
            assert_eq!(found, [(Found::Message { len: wire, compressed: true }, text.as_bytes()[..64].to_vec())]);
        }
        let plain = server_frame(true, TEXT, b"42/live,[\"clock\"]");
        let found = decode_in_pieces(&mut Decoder::new(64, true), &plain, 5);
        assert_eq!(found, [(Found::Message { len: 17, compressed: false }, b"42/live,[\"clock\"]".to_vec())]);
        assert!(Decoder::new(64, false).decode(&stream).is_err(), "compressed without the extension");
    }
}
