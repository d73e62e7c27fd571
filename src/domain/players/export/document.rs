//! The export as it is written: JSON text made a piece at a time into a small buffer and
//! handed to the answer's body in chunks, and the lists behind it read a page at a time, so
//! neither the document nor any table of it is ever held whole.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::body::Bytes;
use futures_util::{Stream, stream};
use sea_orm::{
    ColumnTrait, Condition, DatabaseTransaction, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect,
    sea_query::IntoCondition,
};
use serde::Serialize;
use tokio::sync::mpsc;
use uuid::Uuid;

use crate::infra::error::AppError;

/// A piece of the answer's body; an error ends the body there, cut short.
pub type Chunk = Result<Bytes, std::io::Error>;

/// Rows per read of a list: a long history (notifications, registrations, the audit log) is
/// read and sent in pieces of this size, so what the export holds does not grow with it.
pub const PAGE: u64 = 500;

/// Bytes gathered before they are handed on: large enough that a long list goes in few
/// writes, small enough to stay flat.
const CHUNK_BYTES: usize = 32 * 1024;

/// Chunks written ahead of the client: the writer waits for a slow reader beyond these.
const CHUNKS_AHEAD: usize = 4;

/// Why the export stopped before its end.
#[derive(Debug)]
pub enum Cut {
    /// A read failed (or a row would not serialise): the body ends cut short.
    Failed(AppError),
    /// The client went away: nobody reads what would follow.
    ClientLeft,
}

impl From<DbErr> for Cut {
    fn from(err: DbErr) -> Self {
        Self::Failed(err.into())
    }
}

impl From<AppError> for Cut {
    fn from(err: AppError) -> Self {
        Self::Failed(err)
    }
}

impl From<serde_json::Error> for Cut {
    fn from(err: serde_json::Error) -> Self {
        Self::Failed(AppError::Internal(err.into()))
    }
}

/// An object or an array the document is inside of.
struct Open {
    /// `}` or `]`.
    closer: u8,
    /// Whether it has a member yet (the next one needs a comma).
    filled: bool,
}

/// The JSON document being written. Members are written in order: `key` then a value in an
/// object, values alone in an array. Until [`Document::hand_on`] it only gathers; from then
/// on [`Document::flush`] sends what it gathered.
pub struct Document {
    buffer: Vec<u8>,
    open: Vec<Open>,
    /// A key was written and its value is next (it needs no comma of its own).
    after_key: bool,
    sender: Option<mpsc::Sender<Bytes>>,
    /// Set once the document is whole and sent: the body may end.
    whole: Arc<AtomicBool>,
}

impl Document {
    /// A document whose outer object is open.
    pub fn new() -> Self {
        let mut document = Self {
            buffer: Vec::with_capacity(CHUNK_BYTES),
            open: Vec::new(),
            after_key: false,
            sender: None,
            whole: Arc::new(AtomicBool::new(false)),
        };
        document.begin(b'{', b'}');
        document
    }

    /// Writes a member's key in the object the document is inside of.
    pub fn key(&mut self, key: &str) -> Result<(), Cut> {
        self.separate();
        serde_json::to_writer(&mut self.buffer, key)?;
        self.buffer.push(b':');
        self.after_key = true;
        Ok(())
    }

    /// Writes a value: after its key in an object, or as the next item of an array.
    pub fn value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Cut> {
        self.before_value();
        serde_json::to_writer(&mut self.buffer, value)?;
        Ok(())
    }

    /// Opens an object as a value.
    pub fn begin_object(&mut self) {
        self.before_value();
        self.begin(b'{', b'}');
    }

    /// Opens an array as a value.
    pub fn begin_array(&mut self) {
        self.before_value();
        self.begin(b'[', b']');
    }

    /// Closes the object or array opened last.
    pub fn end(&mut self) {
        if let Some(open) = self.open.pop() {
            self.buffer.push(open.closer);
        }
    }

    /// Writes each of `items` into the array opened last, then hands on what is gathered when
    /// it is enough.
    pub async fn items<T: Serialize>(&mut self, items: impl IntoIterator<Item = T>) -> Result<(), Cut> {
        for item in items {
            self.value(&item)?;
        }
        self.flush().await
    }

    /// Writes `items`, a short list read at once, as an array.
    pub async fn array<T: Serialize>(&mut self, items: impl IntoIterator<Item = T>) -> Result<(), Cut> {
        self.begin_array();
        self.items(items).await?;
        self.end();
        Ok(())
    }

    /// Writes the rows `pages` finds as an array, a page at a time, each made an entry by
    /// `entry`.
    pub async fn pages<E: EntityTrait, T: Serialize>(
        &mut self,
        tx: &DatabaseTransaction,
        mut pages: Pages<E>,
        entry: impl Fn(E::Model) -> T,
    ) -> Result<(), Cut> {
        self.begin_array();
        while let Some(rows) = pages.next(tx).await? {
            self.items(rows.into_iter().map(&entry)).await?;
        }
        self.end();
        Ok(())
    }

    /// What is gathered so far, taken out (the first chunk, sent before any is handed on).
    pub fn take(&mut self) -> Bytes {
        Bytes::from(std::mem::replace(&mut self.buffer, Vec::with_capacity(CHUNK_BYTES)))
    }

    /// From now on, what is gathered goes to the body returned, the rest of the answer. The
    /// body ends with an error unless [`Document::finish`] made the document whole: a writer
    /// that stops for any reason (a failed read, the time limit, a panic) leaves the client a
    /// body cut short, never one that only looks whole.
    pub fn hand_on(&mut self) -> impl Stream<Item = Chunk> + Send + use<> {
        let (sender, receiver) = mpsc::channel(CHUNKS_AHEAD);
        self.sender = Some(sender);
        let whole = self.whole.clone();
        stream::unfold(Some(receiver), move |receiver| {
            let whole = whole.clone();
            async move {
                let mut receiver = receiver?;
                match receiver.recv().await {
                    Some(chunk) => Some((Ok(chunk), Some(receiver))),
                    None if whole.load(Ordering::Acquire) => None,
                    None => Some((Err(std::io::Error::other("the export was cut short")), None)),
                }
            }
        })
    }

    /// Hands on what is gathered once it is [`CHUNK_BYTES`] or more.
    pub async fn flush(&mut self) -> Result<(), Cut> {
        if self.buffer.len() < CHUNK_BYTES { Ok(()) } else { self.send().await }
    }

    /// Closes whatever is open and hands on the rest: the document is whole.
    pub async fn finish(&mut self) -> Result<(), Cut> {
        while !self.open.is_empty() {
            self.end();
        }
        self.send().await?;
        self.whole.store(true, Ordering::Release);
        Ok(())
    }

    async fn send(&mut self) -> Result<(), Cut> {
        let chunk = self.take();
        match &self.sender {
            Some(sender) if !chunk.is_empty() => sender.send(chunk).await.map_err(|_| Cut::ClientLeft),
            _ => Ok(()),
        }
    }

    fn begin(&mut self, opener: u8, closer: u8) {
        self.buffer.push(opener);
        self.open.push(Open { closer, filled: false });
    }

    fn before_value(&mut self) {
        if self.after_key {
            self.after_key = false;
        } else {
            self.separate();
        }
    }

    /// A comma before every member but the first.
    fn separate(&mut self) {
        if let Some(open) = self.open.last_mut() {
            if open.filled {
                self.buffer.push(b',');
            }
            open.filled = true;
        }
    }
}

/// The rows of `E` that `filter` picks, [`PAGE`] at a time in the order of the key column:
/// each read starts after the last key of the one before, so a page costs the same however
/// far into the list it is.
pub struct Pages<E: EntityTrait> {
    filter: Condition,
    key: E::Column,
    key_of: fn(&E::Model) -> Uuid,
    after: Option<Uuid>,
    done: bool,
}

impl<E: EntityTrait> Pages<E> {
    /// The rows `filter` picks, by `key` (a unique column; `key_of` reads it from a row).
    pub fn new(filter: impl IntoCondition, key: E::Column, key_of: fn(&E::Model) -> Uuid) -> Self {
        Self { filter: filter.into_condition(), key, key_of, after: None, done: false }
    }

    /// The next page, or `None` after the last.
    pub async fn next(&mut self, tx: &DatabaseTransaction) -> Result<Option<Vec<E::Model>>, DbErr> {
        if self.done {
            return Ok(None);
        }
        let mut query = E::find().filter(self.filter.clone());
        if let Some(after) = self.after {
            query = query.filter(self.key.gt(after));
        }
        let rows = query.order_by_asc(self.key).limit(PAGE).all(tx).await?;
        self.done = u64::try_from(rows.len()).map_or(true, |count| count < PAGE);
        self.after = rows.last().map(self.key_of);
        Ok((!rows.is_empty()).then_some(rows))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text of a document written by `write`, gathered without a receiver.
    fn written(write: impl FnOnce(&mut Document) -> Result<(), Cut>) -> serde_json::Value {
        let mut document = Document::new();
        write(&mut document).expect("written");
        while !document.open.is_empty() {
            document.end();
        }
        serde_json::from_slice(&document.take()).expect("valid JSON")
    }

    #[test]
    fn members_and_items_are_separated_at_every_depth() {
        let document = written(|doc| {
            doc.key("a")?;
            doc.value(&1)?;
            doc.key("list")?;
            doc.begin_array();
            doc.value("x")?;
            doc.begin_object();
            doc.key("inner")?;
            doc.begin_array();
            doc.end();
            doc.key("n")?;
            doc.value(&Option::<u8>::None)?;
            doc.end();
            doc.value(&[1, 2])?;
            doc.end();
            doc.key("empty")?;
            doc.begin_object();
            doc.end();
            Ok(())
        });
        assert_eq!(document, serde_json::json!({"a": 1, "list": ["x", {"inner": [], "n": null}, [1, 2]], "empty": {}}));
    }

    /// The body `rest` makes after `head`, and whether it ended with an error.
    async fn read(head: Bytes, rest: impl Stream<Item = Chunk>) -> (Vec<u8>, bool) {
        use futures_util::StreamExt;
        let mut body = head.to_vec();
        let mut failed = false;
        let mut rest = std::pin::pin!(rest);
        while let Some(chunk) = rest.next().await {
            match chunk {
                Ok(bytes) => body.extend_from_slice(&bytes),
                Err(err) => {
                    assert_eq!(err.to_string(), "the export was cut short");
                    failed = true;
                }
            }
        }
        (body, failed)
    }

    #[tokio::test]
    async fn a_finished_document_ends_the_body_whole() {
        let mut document = Document::new();
        document.key("first").expect("a key");
        document.value("before the answer").expect("a value");
        let head = document.take();
        let rest = document.hand_on();
        let writer = tokio::spawn(async move {
            document.key("rows")?;
            document.begin_array();
            document.items(["x".repeat(CHUNK_BYTES), "y".to_owned()]).await?;
            document.finish().await
        });
        let (body, failed) = read(head, rest).await;
        assert!(writer.await.expect("the writer ran").is_ok());
        assert!(!failed);
        let document: serde_json::Value = serde_json::from_slice(&body).expect("valid JSON");
        assert_eq!(document["first"], "before the answer");
        assert_eq!(document["rows"][1], "y");
    }

    #[tokio::test]
    async fn a_writer_that_stops_before_the_end_leaves_the_body_cut_short() {
        let mut document = Document::new();
        let head = document.take();
        let rest = document.hand_on();
        let writer = tokio::spawn(async move {
            document.key("rows")?;
            document.begin_array();
            document.items(["x".repeat(CHUNK_BYTES)]).await?;
            Err::<(), Cut>(Cut::Failed(AppError::Internal(anyhow::anyhow!("a read failed"))))
        });
        let (body, failed) = read(head, rest).await;
        assert!(writer.await.expect("the writer ran").is_err());
        assert!(failed, "the body ends with an error");
        assert!(body.starts_with(br#"{"rows":["xxx"#));
        assert!(serde_json::from_slice::<serde_json::Value>(&body).is_err(), "a cut document is no valid JSON");
    }

    #[tokio::test]
    async fn a_client_that_left_stops_the_writing() {
        let mut document = Document::new();
        drop(document.hand_on());
        document.key("rows").expect("a key");
        assert!(matches!(document.finish().await, Err(Cut::ClientLeft)));
    }
}
