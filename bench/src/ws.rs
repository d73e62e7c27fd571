//! A watcher's WebSocket connection: the HTTP/1.1 upgrade, then messages read through one
//! small buffer kept for the connection's life (reads go into its spare capacity; a message
//! of any size passes through it, see [`crate::frame`]), pings and close answered. With
//! `deflate` the upgrade offers permessage-deflate as Chrome does.

use std::net::SocketAddr;

use anyhow::{Context, bail};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tungstenite::handshake::client::generate_key;
use tungstenite::handshake::derive_accept_key;

use crate::frame::{self, Decoder, Found};

/// The read buffer of a connection. Bigger means fewer reads of a 65 KB frame, and more
/// memory for the benchmark itself: 16 KiB × 10,000 watchers is 160 MiB.
const READ_BUFFER: usize = 16 * 1024;
/// The first bytes of a message the watcher looks at: the Socket.IO header, the event name,
/// `tournamentId` and `version` come well within them.
const HEAD_LIMIT: usize = 512;
/// What Chrome offers.
const DEFLATE_OFFER: &str = "permessage-deflate; client_max_window_bits";

pub struct WsConn {
    stream: TcpStream,
    /// Bytes read; `buf[start..]` are not decoded yet.
    buf: Vec<u8>,
    start: usize,
    decoder: Decoder,
    /// The frame being written, reused.
    out: Vec<u8>,
    /// Whether the server accepted permessage-deflate.
    pub deflate: bool,
    /// The size on the wire of the last message read.
    pub last_wire: usize,
}

impl WsConn {
    /// Connects and upgrades `GET path_and_query` to WebSocket, offering permessage-deflate
    /// with `deflate`.
    pub async fn connect(addr: SocketAddr, path_and_query: &str, deflate: bool) -> anyhow::Result<Self> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let mut conn = Self {
            stream,
            buf: Vec::with_capacity(READ_BUFFER),
            start: 0,
            decoder: Decoder::new(HEAD_LIMIT, false),
            out: Vec::with_capacity(128),
            deflate: false,
            last_wire: 0,
        };
        let key = generate_key();
        let offer = if deflate { format!("Sec-WebSocket-Extensions: {DEFLATE_OFFER}\r\n") } else { String::new() };
        let request = format!(
            "GET {path_and_query} HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n{offer}\r\n"
        );
        conn.stream.write_all(request.as_bytes()).await?;
        loop {
            if let Some(end) = memchr::memmem::find(&conn.buf, b"\r\n\r\n") {
                conn.deflate = check_upgrade(&conn.buf[..end], &key)?;
                conn.decoder = Decoder::new(HEAD_LIMIT, conn.deflate);
                // Whatever follows the head is already WebSocket.
                conn.start = end + 4;
                return Ok(conn);
            }
            if conn.buf.len() == conn.buf.capacity() {
                bail!("upgrade: the response head is too long");
            }
            if conn.stream.read_buf(&mut conn.buf).await? == 0 {
                bail!("upgrade: closed before the response");
            }
        }
    }

    /// Sends one text message.
    pub async fn send_text(&mut self, text: &[u8]) -> anyhow::Result<()> {
        self.send(frame::TEXT, text).await
    }

    async fn send(&mut self, opcode: u8, payload: &[u8]) -> anyhow::Result<()> {
        self.out.clear();
        frame::encode(&mut self.out, opcode, payload, rand::random());
        self.stream.write_all(&self.out).await.context("write")
    }

    /// Reads until a whole data message has arrived and gives its first bytes, answering
    /// pings on the way; `None` once the server has closed the connection with a close frame.
    pub async fn next_message(&mut self) -> anyhow::Result<Option<&[u8]>> {
        loop {
            let at = self.start;
            let (used, found) = self.decoder.decode(&self.buf[at..])?;
            self.start += used;
            match found {
                Some(Found::Message { len, .. }) => {
                    self.last_wire = len;
                    return Ok(Some(self.decoder.head()));
                }
                Some(Found::Ping(range)) => {
                    let mut payload = [0; frame::MAX_CONTROL_PAYLOAD];
                    let payload = &mut payload[..range.len()];
                    payload.copy_from_slice(&self.buf[at + range.start..at + range.end]);
                    self.send(frame::PONG, payload).await?;
                    continue;
                }
                Some(Found::Close) => {
                    // The server closes the TCP connection anyway: a failed echo changes nothing.
                    let _ = self.send(frame::CLOSE, &[]).await;
                    return Ok(None);
                }
                None => {}
            }
            self.fill().await?;
        }
    }

    /// Moves the undecoded tail (at most a header or a control frame: the decoder consumes
    /// data as it comes) to the front, then reads into the spare capacity.
    async fn fill(&mut self) -> anyhow::Result<()> {
        if self.start == self.buf.len() {
            self.buf.clear();
        } else if self.start > 0 {
            self.buf.copy_within(self.start.., 0);
            self.buf.truncate(self.buf.len() - self.start);
        }
        self.start = 0;
        if self.buf.len() == self.buf.capacity() {
            bail!("the read buffer is full of one undecodable frame");
        }
        match self.stream.read_buf(&mut self.buf).await.context("read")? {
            0 => bail!("the server closed the connection without a close frame"),
            _ => Ok(()),
        }
    }
}

/// Checks the server's answer to the upgrade request (its head, without the blank line);
/// whether it accepted permessage-deflate (each message compressed on its own, as the head
/// inflation needs).
fn check_upgrade(head: &[u8], key: &str) -> anyhow::Result<bool> {
    let head = std::str::from_utf8(head).context("upgrade: the response head is not UTF-8")?;
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap_or_default();
    if !status.starts_with("HTTP/1.1 101 ") {
        bail!("upgrade refused: {status}");
    }
    let fields: Vec<(&str, &str)> =
        lines.filter_map(|line| line.split_once(':')).map(|(name, value)| (name.trim(), value.trim())).collect();
    let field =
        |wanted: &str| fields.iter().find(|(name, _)| name.eq_ignore_ascii_case(wanted)).map(|(_, value)| *value);
    if field("sec-websocket-accept") != Some(derive_accept_key(key.as_bytes()).as_str()) {
        bail!("upgrade: a wrong Sec-WebSocket-Accept");
    }
    match field("sec-websocket-extensions") {
        None => Ok(false),
        Some(agreed) if agreed.starts_with("permessage-deflate") && agreed.contains("server_no_context_takeover") => {
            Ok(true)
        }
        Some(agreed) => bail!("upgrade: an extension the benchmark cannot read: {agreed}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6455 §1.3's example key and answer.
    const KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

    #[test]
    fn an_upgrade_is_accepted_only_with_101_and_the_keys_answer() {
        let ok = "HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\n\
                  SEC-WEBSOCKET-ACCEPT: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";
        assert!(!check_upgrade(ok.as_bytes(), KEY).expect("accepted"));
        let deflating = format!("{ok}\r\nsec-websocket-extensions: permessage-deflate; server_no_context_takeover");
        assert!(check_upgrade(deflating.as_bytes(), KEY).expect("accepted"));
        let taking_over = format!("{ok}\r\nsec-websocket-extensions: permessage-deflate");
        assert!(check_upgrade(taking_over.as_bytes(), KEY).is_err());
        let wrong = ok.replace("s3pP", "xxxx");
        assert!(check_upgrade(wrong.as_bytes(), KEY).is_err());
        let refused = check_upgrade(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0", KEY).expect_err("refused");
        assert_eq!(refused.to_string(), "upgrade refused: HTTP/1.1 400 Bad Request");
    }
}
