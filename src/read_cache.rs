//! Public answers that change rarely (the agenda, a tournament's card, cities, tiers, slides,
//! leaderboards), kept ready to send: built once after a change, then served from memory to
//! every phone that asks, with their validator made once and their gzip made once.
//!
//! Any change drops them all (the API's writes, through `http::cached`; another node's,
//! through the Redis bus). Dropping moves the cache to a new generation and files every
//! answer under the generation it was built in, so an answer built from the old data while
//! the change committed is never served after the change was answered. Concurrent requests
//! for a missing answer wait for one build. An answer that depends on the time (the slides on
//! show, the current season) says how long it holds, and none is kept longer than
//! [`LONGEST_KEPT`], which bounds how stale a change made outside the running nodes (a manual
//! fix in SQL) can leave a read.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::HeaderValue;
use flate2::Compression;
use flate2::write::GzEncoder;
use moka::Expiry;
use moka::future::Cache;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::error::{AppError, AppResult};

/// The longest an answer is kept, changed or not.
pub const LONGEST_KEPT: Duration = Duration::from_secs(60);

/// The memory the answers may take together; past it the least used are dropped.
const MOST_BYTES: u64 = 64 << 20;

/// An answer's key: the generation it was built in, and what it answers (a route and its
/// canonical parameters).
type Key = (u64, String);

/// The cached answers of this node.
pub struct ReadCache {
    generation: AtomicU64,
    answers: Cache<Key, Arc<Answer>>,
}

/// One answer, ready to send.
pub struct Answer {
    /// The JSON.
    pub body: Bytes,
    /// Its weak validator, `W/"<128 bits of its SHA-256>"`.
    pub etag: HeaderValue,
    /// How long it holds when that depends on the time; [`LONGEST_KEPT`] at most.
    holds_for: Option<Duration>,
    /// The body in gzip, made by the first request that takes it (`None` if that failed: the
    /// JSON goes out as it is).
    gzip: OnceLock<Option<Bytes>>,
}

impl Default for ReadCache {
    fn default() -> Self {
        let answers = Cache::builder()
            .max_capacity(MOST_BYTES)
            .weigher(|key: &Key, answer: &Arc<Answer>| {
                u32::try_from(key.1.len() + answer.body.len()).unwrap_or(u32::MAX)
            })
            .expire_after(HoldsFor)
            .build();
        Self { generation: AtomicU64::new(0), answers }
    }
}

impl ReadCache {
    /// The answer under `key`, built by `build` when missing: one build at a time for a key,
    /// which every concurrent caller waits for. An error is not kept: each caller gets it,
    /// and the next request builds again.
    pub async fn get_or_build(
        &self,
        key: String,
        build: impl Future<Output = AppResult<Answer>>,
    ) -> AppResult<Arc<Answer>> {
        let generation = self.generation.load(Ordering::Acquire);
        self.answers
            .try_get_with((generation, key), async { build.await.map(Arc::new) })
            .await
            .map_err(AppError::shared)
    }

    /// Drops every answer: the data behind them changed. A build in progress finishes under
    /// the old generation, where nobody looks any more.
    pub fn invalidate(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        self.answers.invalidate_all();
    }
}

impl Answer {
    /// `value` as JSON, holding until the data changes.
    pub fn json(value: &impl Serialize) -> AppResult<Self> {
        Self::json_holding_for(value, None)
    }

    /// `value` as JSON, holding `holds_for` at most even if nothing changes (a list that
    /// depends on the time); `None` when it does not depend on the time.
    pub fn json_holding_for(value: &impl Serialize, holds_for: Option<Duration>) -> AppResult<Self> {
        let body = Bytes::from(serde_json::to_vec(value).map_err(|err| AppError::Internal(err.into()))?);
        let etag = HeaderValue::from_str(&weak_tag(&body)).map_err(|err| AppError::Internal(err.into()))?;
        Ok(Self { body, etag, holds_for, gzip: OnceLock::new() })
    }

    /// The body in gzip, compressed once.
    pub fn gzip(&self) -> Option<&Bytes> {
        self.gzip
            .get_or_init(|| {
                let mut encoder = GzEncoder::new(Vec::with_capacity(self.body.len() / 4), Compression::default());
                match encoder.write_all(&self.body).and_then(|()| encoder.finish()) {
                    Ok(gzipped) => Some(Bytes::from(gzipped)),
                    Err(err) => {
                        tracing::error!(error = %err, "could not gzip a kept answer; it goes out as it is");
                        None
                    }
                }
            })
            .as_ref()
    }
}

/// A weak validator of a body: the first 128 bits of its SHA-256. Weak, because the API
/// compresses answers, and a compressed answer has other bytes for the same content.
pub fn weak_tag(body: &[u8]) -> String {
    let digest = Sha256::digest(body);
    format!("W/\"{}\"", hex::encode(&digest[..16]))
}

/// Each answer expires after its own time, and after [`LONGEST_KEPT`] at the latest.
struct HoldsFor;

impl Expiry<Key, Arc<Answer>> for HoldsFor {
    fn expire_after_create(&self, _key: &Key, answer: &Arc<Answer>, _created_at: Instant) -> Option<Duration> {
        Some(answer.holds_for.map_or(LONGEST_KEPT, |holds| holds.min(LONGEST_KEPT)))
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::sync::atomic::AtomicUsize;

    use super::*;

    fn build_counting(builds: &AtomicUsize, text: &str) -> impl Future<Output = AppResult<Answer>> {
        builds.fetch_add(1, Ordering::SeqCst);
        let text = text.to_owned();
        async move { Answer::json(&text) }
    }

    #[tokio::test]
    async fn an_answer_is_built_once_until_the_data_changes() {
        let cache = ReadCache::default();
        let builds = AtomicUsize::new(0);
        let first = cache.get_or_build("a".into(), build_counting(&builds, "one")).await.expect("built");
        let again = cache.get_or_build("a".into(), async { Answer::json(&"other") }).await.expect("kept");
        assert_eq!(again.body, first.body, "the kept answer, not a new build");
        assert_eq!(builds.load(Ordering::SeqCst), 1);
        cache.invalidate();
        let after = cache.get_or_build("a".into(), async { Answer::json(&"two") }).await.expect("rebuilt");
        assert_eq!(after.body.as_ref(), b"\"two\"");
        assert_ne!(after.etag, first.etag, "a new body, a new validator");
    }

    #[tokio::test]
    async fn a_build_that_straddles_a_change_is_never_served_after_it() {
        let cache = Arc::new(ReadCache::default());
        let (started_tx, started) = tokio::sync::oneshot::channel::<()>();
        let (finish_tx, finish) = tokio::sync::oneshot::channel::<()>();
        let slow = tokio::spawn({
            let cache = cache.clone();
            async move {
                cache
                    .get_or_build("a".into(), async move {
                        let _ = started_tx.send(());
                        let _ = finish.await;
                        Answer::json(&"read before the change")
                    })
                    .await
            }
        });
        started.await.expect("the build started");
        cache.invalidate();
        let _ = finish_tx.send(());
        let stale = slow.await.expect("joined").expect("built");
        assert_eq!(stale.body.as_ref(), b"\"read before the change\"", "its own caller gets what it read");
        let fresh = cache.get_or_build("a".into(), async { Answer::json(&"after") }).await.expect("built");
        assert_eq!(fresh.body.as_ref(), b"\"after\"", "later callers never get the straddling build");
    }

    #[tokio::test]
    async fn errors_are_not_kept() {
        let cache = ReadCache::default();
        let failed = cache.get_or_build("a".into(), async { Err(AppError::not_found("tournament")) }).await;
        assert!(matches!(failed, Err(AppError::Api { .. })), "the same error, not a 500");
        let built = cache.get_or_build("a".into(), async { Answer::json(&1) }).await.expect("built");
        assert_eq!(built.body.as_ref(), b"1");
    }

    #[tokio::test]
    async fn concurrent_misses_share_one_build() {
        let cache = Arc::new(ReadCache::default());
        let builds = Arc::new(AtomicUsize::new(0));
        let readers = (0..16).map(|_| {
            let (cache, builds) = (cache.clone(), builds.clone());
            tokio::spawn(async move {
                cache
                    .get_or_build("a".into(), async move {
                        builds.fetch_add(1, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        Answer::json(&"shared")
                    })
                    .await
                    .map(|answer| answer.body.clone())
            })
        });
        for reader in futures_util::future::join_all(readers).await {
            assert_eq!(reader.expect("joined").expect("built").as_ref(), b"\"shared\"");
        }
        assert_eq!(builds.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn the_gzip_is_the_body() {
        let answer = Answer::json(&vec!["Турнир выходного дня"; 100]).expect("json");
        let mut plain = Vec::new();
        let gzipped = answer.gzip().expect("gzipped");
        flate2::read::GzDecoder::new(gzipped.as_ref()).read_to_end(&mut plain).expect("valid gzip");
        assert_eq!(plain, answer.body.as_ref());
        assert!(gzipped.len() < answer.body.len() / 10);
    }

    #[test]
    fn an_answer_is_kept_a_minute_at_most() {
        let at = Instant::now();
        let key = (0, String::new());
        let holding = |holds_for| Arc::new(Answer::json_holding_for(&1, holds_for).expect("json"));
        assert_eq!(HoldsFor.expire_after_create(&key, &holding(None), at), Some(LONGEST_KEPT));
        let soon = Duration::from_secs(5);
        assert_eq!(HoldsFor.expire_after_create(&key, &holding(Some(soon)), at), Some(soon));
        let later = Duration::from_secs(3600);
        assert_eq!(HoldsFor.expire_after_create(&key, &holding(Some(later)), at), Some(LONGEST_KEPT));
    }

    #[test]
    fn a_tag_names_its_body() {
        assert_eq!(weak_tag(b"[1,2]"), weak_tag(b"[1,2]"));
        assert_ne!(weak_tag(b"[1,2]"), weak_tag(b"[1,3]"));
        assert!(weak_tag(b"{}").starts_with("W/\"") && weak_tag(b"{}").len() == 36);
    }
}
