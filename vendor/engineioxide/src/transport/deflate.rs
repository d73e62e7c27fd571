//! PATCH (floor): permessage-deflate, a large message compressed once for every WebSocket
//! that negotiated it.
//!
//! The handshake answers `server_no_context_takeover` (see [`tungstenite::deflate`]), so a
//! message's compressed frame does not depend on the connection: a broadcast (one `Str` cloned
//! to every socket of a room) is compressed once ([`super::frames`] keeps it) and every socket
//! sends the same bytes. No compressor or window is kept per connection.
//!
//! The compression runs on tokio's blocking pool, never on a runtime worker: the first writer
//! to need a message starts it, and every writer that needs it meanwhile waits without
//! holding a worker, so the runtime goes on serving the sockets that negotiated nothing, the
//! requests and the other rooms. A writer that finds it done takes it without waiting.

use bytes::Bytes;
use engineioxide_core::Str;
use tokio_tungstenite::tungstenite::{
    self,
    protocol::frame::{
        Frame,
        coding::{Data, OpCode},
    },
};

/// zlib's level. With zlib-rs (flate2's backend in floor), 6 makes a 65 KB LiveState 11,445
/// bytes in 0.7 ms, where 9 takes twice as long for more bytes, and miniz_oxide's 9 took 1.6 ms
/// for 11,540 (best of 30 on the 2-core rust-svc machine, 2026-11-27).
pub(crate) const LEVEL: u32 = 6;

/// Marks a WebSocket request whose handshake accepted permessage-deflate (in its `Parts`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Negotiated;

/// Whether the request's `Sec-WebSocket-Extensions` offers can be accepted.
pub(crate) fn accepts(headers: &http::HeaderMap) -> bool {
    let offers = headers.get_all(http::header::SEC_WEBSOCKET_EXTENSIONS);
    tungstenite::deflate::accepts(offers.iter().map(|value| value.as_bytes()))
}

/// Engine.IO's message packet `4<message>` compressed, on the blocking pool; `None` when it
/// could not be (the caller sends it plain). `shared`: many sockets will send it (see
/// [`compress_here`]).
///
/// At most one compression per core runs at once, the others wait here: 10,000 sockets
/// joining at once each get an ack of their own to compress, and the blocking pool started a
/// thread for each one waiting (29–35 threads in the node while 10,000 joined, 19–21 with
/// this), for no more compressions done in a second.
pub(crate) async fn compress(message: Str, shared: bool) -> Option<Bytes> {
    let _turn = compressing().acquire().await.ok()?;
    tokio::task::spawn_blocking(move || compress_here(&message, shared)).await.ok().flatten()
}

/// The same, on the caller's thread. A message many sockets will send is kept in a memory
/// file ([`super::frames::in_file`]); one sent once stays in memory.
pub(crate) fn compress_here(message: &Str, shared: bool) -> Option<Bytes> {
    let compressed = crate::compressed_parts::deflate_around(b"4", message.as_bytes(), usize::MAX)
        .unwrap_or_else(|| tungstenite::deflate::deflate(&[b"4", message.as_bytes()], LEVEL))
        .ok()?;
    if !shared {
        return Some(compressed);
    }
    Some(super::frames::in_file(&[&compressed], &compressed_frame(Bytes::new())).unwrap_or(compressed))
}

/// `4<message>` compressed at once, where that is cheap: the message holds a text kept
/// compressed ([`crate::compressed_parts`]) and under [`AT_ONCE_AROUND`] bytes beside it.
pub(crate) fn compress_at_once(message: &Str) -> Option<Bytes> {
    crate::compressed_parts::deflate_around(b"4", message.as_bytes(), AT_ONCE_AROUND)?.ok()
}

/// What a message compressed at once may hold beside its kept text: a few microseconds of
/// compression.
const AT_ONCE_AROUND: usize = 1024;

/// The compressions that may run at once on the blocking pool: one per core.
fn compressing() -> &'static tokio::sync::Semaphore {
    static COMPRESSING: std::sync::OnceLock<tokio::sync::Semaphore> = std::sync::OnceLock::new();
    COMPRESSING.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        tokio::sync::Semaphore::new(cores)
    })
}

/// A data frame of the compressed `payload`, RSV1 set.
pub(crate) fn compressed_frame(payload: Bytes) -> Frame {
    let mut frame = Frame::message(payload, OpCode::Data(Data::Text), true);
    frame.header_mut().rsv1 = true;
    frame
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_compression_waits_while_every_core_compresses() {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let busy = compressing().acquire_many(u32::try_from(cores).expect("cores")).await.expect("open");
        let message = Str::from("{\"seats\":[1,2,3]}".repeat(200));
        let mut waiting = tokio::spawn(compress(message.clone(), false));
        let early = tokio::time::timeout(std::time::Duration::from_millis(50), &mut waiting).await;
        assert!(early.is_err(), "compressed while every core was taken");
        drop(busy);
        let compressed = waiting.await.expect("joined").expect("compressed");
        let inflated = tungstenite::deflate::inflate(&compressed, None).expect("inflates");
        assert_eq!(inflated, format!("4{message}").into_bytes());
    }
}
