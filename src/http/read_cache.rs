//! Public answers that change rarely (the agenda, a tournament's card, cities, tiers, slides,
//! leaderboards), kept ready to send: built once after a change, then served from memory to
//! every phone that asks, with their validator made once and their gzip made once.
//!
//! Any change drops them all (the API's writes, through `http::cached`; another node's,
//! through the Redis bus). An answer that names people is filed besides under the count of
//! erasures read for its request (`crate::domain::erasures`): an account's deletion reaches it on
//! every node without the bus. Dropping moves the cache to a new generation and files every
//! answer under the generation it was built in, so an answer built from the old data while
//! the change committed is never served after the change was answered. Concurrent requests
//! for a missing answer wait for one build. A registration desk's commit, which changes only
//! the registrations of one tournament, builds again the answers that show them before it
//! moves the generation ([`ReadCache::renew`]): in a registration rush, where a group commits
//! every few tens of milliseconds, readers of the agenda never wait for a build. An answer that depends on the time (the slides on
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
use futures_util::future::{BoxFuture, join_all};
use moka::Expiry;
use moka::future::Cache;
use serde::Serialize;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::infra::error::{AppError, AppResult};

/// The longest an answer is kept, changed or not.
pub const LONGEST_KEPT: Duration = Duration::from_secs(60);

/// The memory the answers may take together; past it the least used are dropped.
const MOST_BYTES: u64 = 64 << 20;

/// The most answers one commit builds again before it is answered (the agenda's filters in
/// use and the tournament's card); any more are dropped, and built by their next reader.
const MOST_RENEWED: usize = 8;

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
    /// How a registration desk's commit builds it again, for an answer that shows
    /// registrations.
    renewal: Option<Renewal>,
}

/// How an answer that shows registrations is built again when they change: which
/// tournaments' registrations it shows, and its build, which holds no borrow.
#[derive(Clone)]
pub struct Renewal {
    shows: Shows,
    build: Arc<dyn Fn() -> BoxFuture<'static, AppResult<Answer>> + Send + Sync>,
}

/// Whose registrations an answer shows.
#[derive(Clone, Copy, Debug)]
pub enum Shows {
    /// Any tournament's (the agenda's cards).
    AnyTournament,
    /// This tournament's only (its card).
    Tournament(Uuid),
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

    /// The answer under `key` as [`Self::get_or_build`] gives it, built by `renewal`, which a
    /// registration desk's commit runs again ([`Self::renew`]).
    pub async fn get_or_renew(&self, key: String, renewal: Renewal) -> AppResult<Arc<Answer>> {
        // Built only on a miss: a kept answer is served without making the build's future.
        let build = async {
            let answer = (renewal.build)().await?;
            Ok(Answer { renewal: Some(renewal), ..answer })
        };
        self.get_or_build(key, build).await
    }

    /// The registrations of `tournament_id` changed, and nothing else: called after the change
    /// committed and before it is answered. The answers of this generation that show them
    /// are built again, while readers are still served the ones before; then the cache moves
    /// to a new generation holding the rebuilt answers only, every other answer dropped as
    /// [`Self::invalidate`] drops them. If another change moved the generation meanwhile, the
    /// rebuilt answers are thrown away (they may have been read before that change) and the
    /// cache drops everything as [`Self::invalidate`] does: the generation the other change
    /// began may hold another renewal's answers, read before this change committed.
    pub async fn renew(&self, tournament_id: Uuid) {
        let generation = self.generation.load(Ordering::Acquire);
        let renewals: Vec<(String, Renewal)> = self
            .answers
            .iter()
            .filter(|(key, _)| key.0 == generation)
            .filter_map(|(key, answer)| {
                let renewal =
                    answer.renewal.as_ref().filter(|renewal| renewal.shows.registrations_of(tournament_id))?;
                Some((key.1.clone(), renewal.clone()))
            })
            .take(MOST_RENEWED)
            .collect();
        let rebuilt = join_all(renewals.into_iter().map(|(key, renewal)| async move {
            let answer = (renewal.build)().await;
            (key, answer.map(|answer| Answer { renewal: Some(renewal), ..answer }))
        }))
        .await;
        let next = generation + 1;
        if self.generation.compare_exchange(generation, next, Ordering::AcqRel, Ordering::Acquire).is_err() {
            return self.invalidate();
        }
        self.answers.invalidate_all();
        for (key, answer) in rebuilt {
            match answer {
                Ok(answer) => self.answers.insert((next, key), Arc::new(answer)).await,
                // Its next reader builds it, and gets the error if it holds.
                Err(err) => tracing::warn!(%key, error = %err, "could not build a kept answer again"),
            }
        }
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
        Ok(Self { body, etag, holds_for, gzip: OnceLock::new(), renewal: None })
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

impl Renewal {
    /// An answer showing the registrations `shows` names, built by `build`.
    pub fn new(
        shows: Shows,
        build: impl Fn() -> BoxFuture<'static, AppResult<Answer>> + Send + Sync + 'static,
    ) -> Self {
        Self { shows, build: Arc::new(build) }
    }
}

impl Shows {
    /// Whether a change to the registrations of `tournament_id` changes this answer.
    fn registrations_of(self, tournament_id: Uuid) -> bool {
        match self {
            Self::AnyTournament => true,
            Self::Tournament(shown) => shown == tournament_id,
        }
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

    /// A renewal showing `shows` that reads `data`'s value, then answers it once `gate` lets
    /// it, counting its builds.
    fn renewal_of(
        shows: Shows,
        data: &Arc<AtomicUsize>,
        gate: &Arc<tokio::sync::Mutex<()>>,
        builds: &Arc<AtomicUsize>,
    ) -> Renewal {
        let (data, gate, builds) = (data.clone(), gate.clone(), builds.clone());
        Renewal::new(shows, move || {
            let (data, gate, builds) = (data.clone(), gate.clone(), builds.clone());
            Box::pin(async move {
                let read = data.load(Ordering::SeqCst);
                let _open = gate.lock().await;
                builds.fetch_add(1, Ordering::SeqCst);
                Answer::json(&read)
            })
        })
    }

    /// A cache holding the agenda, built from `data` (1) once its `gate` lets it.
    async fn with_agenda() -> (Arc<ReadCache>, Arc<AtomicUsize>, Arc<tokio::sync::Mutex<()>>) {
        let cache = Arc::new(ReadCache::default());
        let (data, gate) = (Arc::new(AtomicUsize::new(1)), Arc::new(tokio::sync::Mutex::new(())));
        let agenda = renewal_of(Shows::AnyTournament, &data, &gate, &Arc::default());
        cache.get_or_renew("agenda".into(), agenda).await.expect("built");
        (cache, data, gate)
    }

    /// A commit's renewal, in a task of its own.
    fn renew_aside(cache: &Arc<ReadCache>) -> tokio::task::JoinHandle<()> {
        let cache = cache.clone();
        tokio::spawn(async move { cache.renew(Uuid::new_v4()).await })
    }

    async fn body(cache: &ReadCache, key: &str) -> Bytes {
        cache
            .get_or_build(key.into(), async { Answer::json(&"built by the reader") })
            .await
            .expect("built")
            .body
            .clone()
    }

    #[tokio::test]
    async fn a_commit_builds_again_the_answers_that_show_its_registrations_and_drops_the_rest() {
        let cache = ReadCache::default();
        let (data, gate, builds) = (Arc::new(AtomicUsize::new(1)), Arc::default(), Arc::new(AtomicUsize::new(0)));
        let (this, other) = (Uuid::new_v4(), Uuid::new_v4());
        for (key, shows) in [
            ("agenda", Shows::AnyTournament),
            ("card", Shows::Tournament(this)),
            ("other card", Shows::Tournament(other)),
        ] {
            cache.get_or_renew(key.into(), renewal_of(shows, &data, &gate, &builds)).await.expect("built");
        }
        cache.get_or_build("cities".into(), async { Answer::json(&"cities") }).await.expect("built");
        assert_eq!(builds.load(Ordering::SeqCst), 3);
        data.store(2, Ordering::SeqCst);
        cache.renew(this).await;
        assert_eq!(builds.load(Ordering::SeqCst), 5, "the agenda and this tournament's card, built again");
        assert_eq!(body(&cache, "agenda").await.as_ref(), b"2", "ready, not built by the reader");
        assert_eq!(body(&cache, "card").await.as_ref(), b"2");
        assert_eq!(body(&cache, "other card").await.as_ref(), b"\"built by the reader\"", "dropped");
        assert_eq!(body(&cache, "cities").await.as_ref(), b"\"built by the reader\"", "dropped");
        // Renewed answers are renewed again by the next commit.
        data.store(3, Ordering::SeqCst);
        cache.renew(this).await;
        assert_eq!(body(&cache, "agenda").await.as_ref(), b"3");
    }

    #[tokio::test]
    async fn readers_get_the_answers_before_until_a_commit_has_built_them_again() {
        let (cache, data, gate) = with_agenda().await;
        data.store(2, Ordering::SeqCst);
        let held = gate.lock().await;
        let renewing = renew_aside(&cache);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!renewing.is_finished(), "the rebuild waits at the gate");
        assert_eq!(body(&cache, "agenda").await.as_ref(), b"1", "the answer before, at once");
        drop(held);
        renewing.await.expect("renewed");
        assert_eq!(body(&cache, "agenda").await.as_ref(), b"2");
    }

    #[tokio::test]
    async fn answers_built_again_across_another_change_are_thrown_away() {
        let (cache, _, gate) = with_agenda().await;
        let held = gate.lock().await;
        let renewing = renew_aside(&cache);
        tokio::time::sleep(Duration::from_millis(20)).await;
        // Another change commits and drops the reads while the rebuild reads what was before it.
        cache.invalidate();
        drop(held);
        renewing.await.expect("renewed");
        assert_eq!(body(&cache, "agenda").await.as_ref(), b"\"built by the reader\"", "not the rebuilt answer");
    }

    #[tokio::test]
    async fn two_commits_renewing_at_once_never_leave_the_answers_read_before_the_second() {
        let (cache, data, gate) = with_agenda().await;
        let held = gate.lock().await;
        // The first commit's rebuild reads, then waits; the second commits and renews too.
        data.store(2, Ordering::SeqCst);
        let first = renew_aside(&cache);
        tokio::time::sleep(Duration::from_millis(20)).await;
        data.store(3, Ordering::SeqCst);
        let second = renew_aside(&cache);
        tokio::time::sleep(Duration::from_millis(20)).await;
        // The first moves the generation with what it read (2); the second finds it moved.
        drop(held);
        first.await.expect("renewed");
        second.await.expect("renewed");
        assert_eq!(body(&cache, "agenda").await.as_ref(), b"\"built by the reader\"", "never the first's 2");
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
