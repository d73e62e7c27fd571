//! Checks shared by many callers, each read after its caller asked: a version stamp in the
//! database that a read kept in memory is held against before it is served. Many readers at
//! once share one read at a time, and none is answered by a read that began before it asked
//! (that read may have missed a change committed just before the question, which is the very
//! change the check is there to catch). A caller therefore waits for the next read, which
//! begins as soon as the one under way ends and answers every caller that asked meanwhile.
//!
//! So however many readers ask, one read is under way per [`Rounds`] at a time, and a reader
//! waits at most for the end of the read under way and one more. A read has a bound: one that
//! does not answer within it (a frozen database) answers its callers `None`, and they go on
//! without it. A single-flight cache (or
//! moka's `try_get_with`) would let a caller join a read already under way, which is exactly
//! what must not happen here; hence this small piece of its own.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::oneshot;

/// What a round reads.
type Read<T> = Box<dyn Fn() -> Pin<Box<dyn Future<Output = T> + Send>> + Send + Sync>;

/// Reads of one value, shared by the callers that ask at once.
pub struct Rounds<T> {
    read: Read<T>,
    /// How long a read may take before its callers go on without it.
    within: Duration,
    waiting: Mutex<Waiting<T>>,
}

/// The callers waiting for the next read, and whether a task is reading for them.
struct Waiting<T> {
    reading: bool,
    callers: Vec<oneshot::Sender<Option<T>>>,
}

impl<T: Clone + Send + 'static> Rounds<T> {
    /// Rounds of `read`, each given `within` to answer.
    pub fn new<F>(within: Duration, read: impl Fn() -> F + Send + Sync + 'static) -> Arc<Self>
    where
        F: Future<Output = T> + Send + 'static,
    {
        let read: Read<T> = Box::new(move || Box::pin(read()));
        Arc::new(Self { read, within, waiting: Mutex::new(Waiting { reading: false, callers: Vec::new() }) })
    }

    /// A value read after this call began. `None` when the read did not answer within its
    /// bound, or could not finish (it panicked, or the runtime is shutting down).
    pub async fn read(self: &Arc<Self>) -> Option<T> {
        let (answer, answered) = oneshot::channel();
        let lead = {
            let mut waiting = self.waiting();
            waiting.callers.push(answer);
            !std::mem::replace(&mut waiting.reading, true)
        };
        if lead {
            // A task of its own: the callers it answers must not depend on the first of them
            // staying (a reader whose client hung up drops its future). Its mark is made here,
            // not when it first runs: a task dropped before it ran (a runtime shutting down)
            // lets its callers go all the same.
            tokio::spawn(Reading { rounds: self.clone(), done: false }.serve());
        }
        answered.await.ok().flatten()
    }

    fn waiting(&self) -> MutexGuard<'_, Waiting<T>> {
        // Each change under the lock is one push, one take or one flag: a panic elsewhere
        // leaves it consistent.
        self.waiting.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The reading task's mark: if the task ends without finishing (a read that panicked, a
/// runtime shutting down), the callers it would have answered are let go (they get `None`)
/// and the next caller starts a reader again, rather than waiting for one that is gone.
struct Reading<T> {
    rounds: Arc<Rounds<T>>,
    done: bool,
}

impl<T: Clone + Send + 'static> Reading<T> {
    /// Reads for the callers waiting, round after round, until none waits.
    async fn serve(mut self) {
        loop {
            let callers = {
                let mut waiting = self.rounds.waiting();
                if waiting.callers.is_empty() {
                    waiting.reading = false;
                    self.done = true;
                    return;
                }
                std::mem::take(&mut waiting.callers)
            };
            // Given up past the bound: the next round reads afresh.
            let value = tokio::time::timeout(self.rounds.within, (self.rounds.read)()).await.ok();
            for caller in callers {
                // A caller that went away meanwhile needs nothing.
                let _ = caller.send(value.clone());
            }
        }
    }
}

impl<T> Drop for Reading<T> {
    fn drop(&mut self) {
        if !self.done {
            let mut waiting = self.rounds.waiting.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            waiting.reading = false;
            waiting.callers.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
    use std::time::Duration;

    use tokio::sync::Semaphore;

    use super::*;

    /// A value in "the database", read through a gate the test opens one read at a time.
    struct Stored {
        value: AtomicI64,
        gate: Semaphore,
        reads: AtomicUsize,
    }

    fn stored() -> (Arc<Stored>, Arc<Rounds<i64>>) {
        let stored = Arc::new(Stored { value: AtomicI64::new(1), gate: Semaphore::new(0), reads: AtomicUsize::new(0) });
        let rounds = Rounds::new(Duration::from_secs(60), {
            let stored = stored.clone();
            move || {
                let stored = stored.clone();
                async move {
                    stored.reads.fetch_add(1, Ordering::SeqCst);
                    // The value as of the read's beginning, then the read's time in the database.
                    let value = stored.value.load(Ordering::SeqCst);
                    stored.gate.acquire().await.expect("open").forget();
                    value
                }
            }
        });
        (stored, rounds)
    }

    fn ask(rounds: &Arc<Rounds<i64>>) -> tokio::task::JoinHandle<Option<i64>> {
        let rounds = rounds.clone();
        tokio::spawn(async move { rounds.read().await })
    }

    async fn settle() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    #[tokio::test]
    async fn a_caller_never_gets_a_read_that_began_before_it_asked() {
        let (stored, rounds) = stored();
        let early = ask(&rounds);
        settle().await;
        // A change commits while the first read is under way; then another caller asks.
        stored.value.store(2, Ordering::SeqCst);
        let late = ask(&rounds);
        settle().await;
        stored.gate.add_permits(1);
        assert_eq!(early.await.expect("joined"), Some(1), "the read it waited for");
        settle().await;
        assert!(!late.is_finished(), "the late caller waits for a read of its own");
        stored.gate.add_permits(1);
        assert_eq!(late.await.expect("joined"), Some(2), "it sees the change");
    }

    #[tokio::test]
    async fn callers_that_ask_during_a_read_share_the_next_one() {
        let (stored, rounds) = stored();
        let first = ask(&rounds);
        settle().await;
        let waiting: Vec<_> = (0..50).map(|_| ask(&rounds)).collect();
        settle().await;
        stored.gate.add_permits(2);
        first.await.expect("joined");
        for caller in waiting {
            assert_eq!(caller.await.expect("joined"), Some(1));
        }
        assert_eq!(stored.reads.load(Ordering::SeqCst), 2, "one read, then one for all fifty");
    }

    #[tokio::test]
    async fn reading_stops_when_nobody_waits_and_starts_again_for_the_next_caller() {
        let (stored, rounds) = stored();
        stored.gate.add_permits(1);
        assert_eq!(ask(&rounds).await.expect("joined"), Some(1));
        stored.value.store(3, Ordering::SeqCst);
        stored.gate.add_permits(1);
        assert_eq!(ask(&rounds).await.expect("joined"), Some(3));
        assert_eq!(stored.reads.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_caller_that_went_away_leaves_the_others_answered() {
        let (stored, rounds) = stored();
        let gone = ask(&rounds);
        settle().await;
        gone.abort();
        let staying = ask(&rounds);
        settle().await;
        stored.gate.add_permits(2);
        assert_eq!(staying.await.expect("joined"), Some(1));
    }

    #[tokio::test]
    async fn a_read_past_its_bound_lets_its_callers_go_and_the_next_round_reads_afresh() {
        let (stored, _) = stored();
        let rounds = Rounds::new(Duration::from_millis(50), {
            let stored = stored.clone();
            move || {
                let stored = stored.clone();
                async move {
                    // The first read never answers (a frozen database); the next at once.
                    if stored.reads.fetch_add(1, Ordering::SeqCst) == 0 {
                        std::future::pending::<()>().await;
                    }
                    stored.value.load(Ordering::SeqCst)
                }
            }
        });
        assert_eq!(rounds.read().await, None, "gone on without it");
        assert_eq!(rounds.read().await, Some(1));
    }

    #[tokio::test]
    async fn a_read_that_panics_lets_its_callers_go_and_the_next_caller_reads_again() {
        let tries = Arc::new(AtomicUsize::new(0));
        let rounds = Rounds::new(Duration::from_secs(60), {
            let tries = tries.clone();
            move || {
                let tries = tries.clone();
                async move {
                    assert!(tries.fetch_add(1, Ordering::SeqCst) > 0, "the first read fails");
                    7
                }
            }
        });
        assert_eq!(rounds.read().await, None, "let go, not left waiting");
        assert_eq!(rounds.read().await, Some(7));
    }
}
