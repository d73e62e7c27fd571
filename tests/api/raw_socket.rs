//! A WebSocket to `/socket.io` spoken by hand, so a test can send what no client library
//! would (a frame header announcing more than it sends, a message past `maxPayload`, RSV1
//! where nothing was negotiated, a compressed bomb) and see what no library shows (which
//! frames came compressed, their size on the wire).

use std::io::Write;
use std::time::Duration;

use flate2::Compression;
use flate2::write::{DeflateDecoder, DeflateEncoder};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// What Floor answers to an offer of permessage-deflate it accepts.
pub const DEFLATE_ANSWER: &str = "permessage-deflate; server_no_context_takeover; client_no_context_takeover";

/// The offer Chrome sends.
pub const CHROME_OFFER: &str = "permessage-deflate; client_max_window_bits";

/// The end of every sync-flushed deflate block, left off on the wire (RFC 7692 7.2.1).
pub const SYNC_FLUSH: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

pub struct RawSocket {
    stream: TcpStream,
    /// The handshake's `Sec-WebSocket-Extensions` answer, if any.
    pub extensions: Option<String>,
}

/// A frame from the server.
pub struct Frame {
    pub rsv1: bool,
    pub opcode: u8,
    pub payload: Vec<u8>,
}

/// A text message from the server, inflated if it came compressed.
pub struct Message {
    pub text: String,
    pub compressed: bool,
    /// The frame's payload as it came.
    pub wire: Vec<u8>,
}

impl RawSocket {
    /// A WebSocket that offers no extension.
    pub async fn open(base: &str) -> Self {
        Self::offering(base, None).await
    }

    /// A WebSocket whose handshake carries `offer` as its `Sec-WebSocket-Extensions`; the
    /// Engine.IO open packet is read.
    pub async fn offering(base: &str, offer: Option<&[u8]>) -> Self {
        let mut stream = TcpStream::connect(base.trim_start_matches("http://")).await.expect("a connection");
        let mut request = b"GET /socket.io/?EIO=4&transport=websocket HTTP/1.1\r\nHost: floor\r\nUpgrade: websocket\r\n\
                       Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            .to_vec();
        if let Some(offer) = offer {
            request.extend_from_slice(b"Sec-WebSocket-Extensions: ");
            request.extend_from_slice(offer);
            request.extend_from_slice(b"\r\n");
        }
        request.extend_from_slice(b"\r\n");
        stream.write_all(&request).await.expect("the upgrade is sent");
        let mut head = Vec::new();
        let mut byte = [0_u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            assert_eq!(stream.read(&mut byte).await.expect("the upgrade's answer"), 1, "closed during the upgrade");
            head.push(byte[0]);
        }
        let head = String::from_utf8_lossy(&head).into_owned();
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        let extensions = head.lines().find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("sec-websocket-extensions").then(|| value.trim().to_owned())
        });
        let mut socket = Self { stream, extensions };
        let open = socket.next_frame().await.expect("the open packet");
        assert_eq!((open.opcode, open.rsv1), (1, false));
        let open = String::from_utf8_lossy(&open.payload).into_owned();
        assert!(open.contains("\"maxPayload\":100000"), "{open}");
        socket
    }

    /// A client frame's header (masked with a zero key, so the payload goes as it is).
    fn header(fin: bool, rsv1: bool, opcode: u8, length: u64) -> Vec<u8> {
        let mut header = vec![if fin { 0x80 } else { 0 } | if rsv1 { 0x40 } else { 0 } | opcode];
        match length {
            0..=125 => header.push(0x80 | length as u8),
            126..=65_535 => {
                header.push(0x80 | 126);
                header.extend_from_slice(&(length as u16).to_be_bytes());
            }
            _ => {
                header.push(0x80 | 127);
                header.extend_from_slice(&length.to_be_bytes());
            }
        }
        header.extend_from_slice(&[0, 0, 0, 0]);
        header
    }

    /// Sends a frame of `length` zero bytes, written 64 KiB at a time (stops quietly when the
    /// server has closed).
    pub async fn send_zeros(&mut self, fin: bool, opcode: u8, length: u64) {
        if self.stream.write_all(&Self::header(fin, false, opcode, length)).await.is_err() {
            return;
        }
        let chunk = vec![0_u8; 64 * 1024];
        let mut left = length;
        while left > 0 {
            let now = left.min(chunk.len() as u64) as usize;
            if self.stream.write_all(&chunk[..now]).await.is_err() {
                return;
            }
            left -= now as u64;
        }
    }

    /// Sends one whole frame (quietly nothing when the server has closed).
    pub async fn send(&mut self, rsv1: bool, opcode: u8, payload: &[u8]) {
        let mut frame = Self::header(true, rsv1, opcode, payload.len() as u64);
        frame.extend_from_slice(payload);
        let _ = self.stream.write_all(&frame).await;
    }

    /// Sends a text message as it is.
    pub async fn send_text(&mut self, text: &str) {
        self.send(false, 1, text.as_bytes()).await;
    }

    /// Sends a text message compressed, RSV1 set.
    pub async fn send_deflated(&mut self, text: &[u8]) {
        self.send(true, 1, &deflate(text)).await;
    }

    /// The next frame from the server; `None` when the connection ended.
    pub async fn next_frame(&mut self) -> Option<Frame> {
        let mut first = [0_u8; 2];
        self.stream.read_exact(&mut first).await.ok()?;
        let length = match first[1] & 0x7f {
            126 => {
                let mut more = [0_u8; 2];
                self.stream.read_exact(&mut more).await.ok()?;
                u64::from(u16::from_be_bytes(more))
            }
            127 => {
                let mut more = [0_u8; 8];
                self.stream.read_exact(&mut more).await.ok()?;
                u64::from_be_bytes(more)
            }
            short => u64::from(short),
        };
        let mut payload = vec![0_u8; usize::try_from(length).ok()?];
        self.stream.read_exact(&mut payload).await.ok()?;
        Some(Frame { rsv1: first[0] & 0x40 != 0, opcode: first[0] & 0x0f, payload })
    }

    /// The next frame's opcode and payload; `None` when the connection ended.
    pub async fn frame(&mut self) -> Option<(u8, Vec<u8>)> {
        self.next_frame().await.map(|frame| (frame.opcode, frame.payload))
    }

    /// The close code the server ends with, skipping its other frames (`None`: no close frame).
    pub async fn close_code(&mut self) -> Option<u16> {
        let waiting = async {
            while let Some((opcode, payload)) = self.frame().await {
                if opcode == 8 {
                    return payload.get(..2).map(|code| u16::from_be_bytes([code[0], code[1]]));
                }
            }
            None
        };
        tokio::time::timeout(Duration::from_secs(10), waiting).await.ok().flatten()
    }

    /// The next text message, Engine.IO's pings answered on the way.
    pub async fn message(&mut self) -> Message {
        let waiting = async {
            loop {
                let frame = self.next_frame().await.expect("the connection stays open");
                if frame.opcode != 1 {
                    assert_ne!(frame.opcode, 8, "closed: {:?}", frame.payload);
                    continue;
                }
                let text = if frame.rsv1 { inflate(&frame.payload) } else { frame.payload.clone() };
                let text = String::from_utf8(text).expect("text messages are UTF-8");
                if text == "2" {
                    self.send_text("3").await;
                    continue;
                }
                return Message { text, compressed: frame.rsv1, wire: frame.payload };
            }
        };
        tokio::time::timeout(Duration::from_secs(15), waiting).await.expect("a message in time")
    }

    /// Connects to `/live` with `token`: the server's answer to the connect packet.
    pub async fn sign_in(&mut self, token: &str) -> Message {
        self.send_text(&format!(r#"40/live,{{"token":"{token}"}}"#)).await;
        let answer = self.message().await;
        assert!(answer.text.starts_with("40/live,"), "{}", answer.text);
        answer
    }

    /// The next message that starts with `prefix`, others skipped.
    pub async fn message_starting(&mut self, prefix: &str) -> Message {
        loop {
            let message = self.message().await;
            if message.text.starts_with(prefix) {
                return message;
            }
        }
    }

    /// Joins a tournament's room (ack id 1): the ack.
    pub async fn join(&mut self, tournament: uuid::Uuid) -> Message {
        self.send_text(&format!(r#"42/live,1["join",{{"tournamentId":"{tournament}"}}]"#)).await;
        self.message_starting("43/live,1[").await
    }
}

/// `text` compressed as one permessage-deflate message.
pub fn deflate(text: &[u8]) -> Vec<u8> {
    let mut encoder = DeflateEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(text).expect("compressed in memory");
    encoder.flush().expect("flushed in memory");
    let mut out = std::mem::take(encoder.get_mut());
    assert!(out.ends_with(&SYNC_FLUSH));
    out.truncate(out.len() - SYNC_FLUSH.len());
    out
}

/// A permessage-deflate message's payload inflated.
pub fn inflate(payload: &[u8]) -> Vec<u8> {
    let mut decoder = DeflateDecoder::new(Vec::new());
    decoder.write_all(payload).expect("inflates");
    decoder.write_all(&SYNC_FLUSH).expect("inflates");
    decoder.flush().expect("inflates");
    std::mem::take(decoder.get_mut())
}
