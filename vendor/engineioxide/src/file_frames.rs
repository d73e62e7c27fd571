//! PATCH (floor): a shared frame kept in a memory file, so that the connection's writer can
//! hand the kernel the file's pages (`sendfile`) instead of copying the frame into each socket.
//!
//! A broadcast writes the same frame, byte for byte, to every socket of a room: 65 KB per
//! socket per change of a LiveState. Written from memory, the kernel copies it into new pages
//! for every socket; a `perf` profile of 10,000 watchers put that copy (`_copy_from_iter`) at
//! a quarter of the server's CPU on an AMD EPYC machine. Here a shared frame's payload is made
//! once in a `memfd` mapping, with the frame's WebSocket header written just before it, and
//! [`find`] tells a connection that the slices it is asked to write are those bytes of that
//! file: it can `sendfile` them, and each socket's buffers then hold references to the same
//! pages (the way nginx serves a file). The frame is never written again once it is made, so
//! the bytes the kernel sends are those the caller asked for; a span [`find`] does not know is
//! written as before.

use std::io::{IoSlice, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::{Arc, RwLock};

use bytes::Bytes;

/// Room before the payload for the frame's WebSocket header (2 to 14 bytes).
const HEAD_ROOM: usize = 16;

/// Spans shorter than this are written from memory: copying them costs less than a lookup and
/// a `sendfile`.
const WORTH_IT: usize = 4096;

/// The mappings alive, each with its file.
static LIVE: RwLock<Vec<Live>> = RwLock::new(Vec::new());

struct Live {
    start: usize,
    len: usize,
    file: Arc<OwnedFd>,
}

/// A span of a memory file: what a connection's writer asked to write, found in [`LIVE`].
#[derive(Debug)]
pub struct FileSpan {
    file: Arc<OwnedFd>,
    /// Where the span starts in the file.
    pub offset: u64,
    /// The span's length, in bytes: the whole of the slices asked for.
    pub len: usize,
}

impl FileSpan {
    /// The file to send from.
    pub fn file(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}

/// The span of a memory file that holds exactly the bytes of `bufs`, in order: the payload of
/// a frame made by [`in_file`] (or the part of it left by a partial write) and, before it,
/// any of the header that is still to be written.
pub fn find(bufs: &[IoSlice<'_>]) -> Option<FileSpan> {
    let last_at = bufs.iter().rposition(|buf| !buf.is_empty())?;
    let (before, last) = (&bufs[..last_at], &bufs[last_at]);
    if last.len() < WORTH_IT {
        return None;
    }
    let head_len: usize = before.iter().map(|buf| buf.len()).sum();
    if head_len > HEAD_ROOM {
        return None;
    }
    let at = last.as_ptr() as usize;
    let live = LIVE.read().unwrap_or_else(|poisoned| poisoned.into_inner());
    let mapping = live.iter().find(|live| live.start <= at && at + last.len() <= live.start + live.len)?;
    let offset = at - mapping.start;
    let head_start = offset.checked_sub(head_len)?;
    // SAFETY: the range lies inside a live mapping (checked above), which stays mapped while
    // it is in `LIVE`, and the lock is held.
    let head_in_file = unsafe { std::slice::from_raw_parts((mapping.start + head_start) as *const u8, head_len) };
    let mut in_file = head_in_file;
    for buf in before.iter().filter(|buf| !buf.is_empty()) {
        let (here, rest) = in_file.split_at(buf.len());
        if here != &buf[..] {
            return None;
        }
        in_file = rest;
    }
    Some(FileSpan { file: mapping.file.clone(), offset: head_start as u64, len: head_len + last.len() })
}

/// `parts` one after the other in a memory file, as the payload of a frame whose header is
/// `head` (written just before it): the bytes of a frame that many sockets will send. `None`
/// when `head` is longer than a WebSocket header can be or no memory file could be made (the
/// caller keeps the payload in memory).
pub fn in_file(head: &[u8], parts: &[&[u8]]) -> Option<Bytes> {
    if head.len() > HEAD_ROOM {
        return None;
    }
    let len: usize = parts.iter().map(|part| part.len()).sum();
    let mapping = Mapping::new(HEAD_ROOM + len).ok()?;
    {
        // SAFETY: the mapping is ours alone until it is registered and handed out below.
        let bytes = unsafe { std::slice::from_raw_parts_mut(mapping.start, mapping.len) };
        let mut into = &mut bytes[HEAD_ROOM - head.len()..];
        into.write_all(head).ok()?;
        for part in parts {
            into.write_all(part).ok()?;
        }
    }
    mapping.register();
    Some(Bytes::from_owner(mapping).slice(HEAD_ROOM..))
}

/// A shared mapping of a memory file of its own, unmapped when dropped.
struct Mapping {
    start: *mut u8,
    len: usize,
    file: Arc<OwnedFd>,
}

// SAFETY: the mapping is written only before it is handed out, then only read.
unsafe impl Send for Mapping {}
unsafe impl Sync for Mapping {}

impl Mapping {
    fn new(len: usize) -> rustix::io::Result<Self> {
        use rustix::fs::{MemfdFlags, ftruncate, memfd_create};
        use rustix::mm::{MapFlags, ProtFlags, mmap};
        let file = memfd_create("floor-frame", MemfdFlags::CLOEXEC)?;
        ftruncate(&file, len as u64)?;
        // SAFETY: a new shared mapping of a file nobody else holds, of the file's length.
        let start = unsafe {
            mmap(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED | MapFlags::POPULATE,
                &file,
                0,
            )?
        };
        Ok(Self { start: start.cast(), len, file: Arc::new(file) })
    }

    fn register(&self) {
        let mut live = LIVE.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        live.push(Live { start: self.start as usize, len: self.len, file: self.file.clone() });
    }
}

impl AsRef<[u8]> for Mapping {
    fn as_ref(&self) -> &[u8] {
        // SAFETY: mapped for `len` bytes until dropped.
        unsafe { std::slice::from_raw_parts(self.start, self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        {
            let mut live = LIVE.write().unwrap_or_else(|poisoned| poisoned.into_inner());
            live.retain(|live| live.start != self.start as usize);
        }
        // SAFETY: mapped by `new` with this length; nobody holds a slice of it any longer
        // (the `Bytes` that owned it are gone and `find` holds the lock it was removed under).
        // The pages the kernel still sends from stay until it is done with them.
        let _ = unsafe { rustix::mm::munmap(self.start.cast(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A text frame's header for a payload of 126 to 65,535 bytes.
    fn head_of(len: usize) -> Vec<u8> {
        let len = u16::try_from(len).expect("a medium payload");
        [&[0x81, 0x7e][..], &len.to_be_bytes()].concat()
    }

    #[test]
    fn a_frame_s_header_and_payload_are_found_in_its_file() {
        let body = vec![b'x'; 60_000];
        let head = head_of(60_001);
        let payload = in_file(&head, &[b"4", &body]).expect("a memory file");
        assert_eq!(payload.len(), 60_001);
        assert_eq!(&payload[..2], b"4x");
        let span = find(&[IoSlice::new(&head), IoSlice::new(&payload)]).expect("found");
        assert_eq!((span.offset as usize, span.len), (HEAD_ROOM - head.len(), head.len() + payload.len()));
        let rest_of_head = find(&[IoSlice::new(&head[1..]), IoSlice::new(&payload)]).expect("found");
        assert_eq!((rest_of_head.offset as usize, rest_of_head.len), (HEAD_ROOM - 3, 3 + payload.len()));
        let tail = find(&[IoSlice::new(&payload[5_000..]), IoSlice::new(&[])]).expect("the rest found");
        assert_eq!((tail.offset as usize, tail.len), (HEAD_ROOM + 5_000, payload.len() - 5_000));
    }

    #[test]
    fn other_bytes_are_not_taken_for_a_frame() {
        let body = vec![b'y'; 10_000];
        let head = head_of(10_000);
        let payload = in_file(&head, &[&body]).expect("a memory file");
        let copy = payload.to_vec();
        assert!(find(&[IoSlice::new(&head), IoSlice::new(&copy)]).is_none(), "the same bytes elsewhere");
        assert!(find(&[IoSlice::new(&head_of(9_999)), IoSlice::new(&payload)]).is_none(), "another header");
        assert!(find(&[IoSlice::new(&payload), IoSlice::new(b"more")]).is_none(), "more after the payload");
        assert!(find(&[IoSlice::new(&payload[..100])]).is_none(), "too short to be worth it");
        assert!(in_file(&[0; 17], &[&body]).is_none(), "no WebSocket header is that long");
    }
}
