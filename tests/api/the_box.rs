//! The box the tests run on, shared by every test's database and taken whole by a crowd test.
//!
//! A crowd test (`rolling`, `history`, `drain`) runs two nodes under thousands of real clients
//! or nemeses and asserts what only unloaded nodes promise: no ERROR line, every watcher
//! current within a bound. Beside another test on CI's two cores it failed on the box, not on
//! the nodes (`rolling` beside `schemathesis`, 2026-11-29), so it waits until no test holds a
//! database and runs alone, about two minutes in all.
//!
//! A test that holds a share may always take another (a second database of its own), so no
//! test waits on itself; a test that holds none waits while a crowd test waits for the box.

use std::sync::Mutex;

use tokio::sync::Notify;

use crate::helpers::{Backend, TestApp, TestDatabase};

struct Holders {
    shares: usize,
    whole: bool,
    waiting_for_whole: usize,
}

static HOLDERS: Mutex<Holders> = Mutex::new(Holders { shares: 0, whole: false, waiting_for_whole: 0 });
static CHANGED: Notify = Notify::const_new();

/// A test's part of the box, held by its database.
pub struct Share(());

/// The whole box, held by a crowd test until it ends.
pub struct Whole(());

/// Waits until `take` takes its part of the box from the holders.
async fn until(mut take: impl FnMut(&mut Holders) -> bool) {
    loop {
        let changed = CHANGED.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        if take(&mut HOLDERS.lock().expect("the box's holders")) {
            return;
        }
        changed.await;
    }
}

fn release(give_back: impl FnOnce(&mut Holders)) {
    give_back(&mut HOLDERS.lock().expect("the box's holders"));
    CHANGED.notify_waiters();
}

/// A share of the box: at once beside other shares, unless a crowd test has it or waits for
/// it with nobody else in.
pub async fn share() -> Share {
    until(|holders| {
        let free = !holders.whole && (holders.waiting_for_whole == 0 || holders.shares > 0);
        holders.shares += usize::from(free);
        free
    })
    .await;
    Share(())
}

impl Drop for Share {
    fn drop(&mut self) {
        release(|holders| holders.shares -= 1);
    }
}

/// The whole box, once no test holds a share and no other crowd test has it.
pub async fn whole() -> Whole {
    /// Counted among those waiting for the box until it has it (or gives up).
    struct Waiting;
    impl Drop for Waiting {
        fn drop(&mut self) {
            release(|holders| holders.waiting_for_whole -= 1);
        }
    }
    HOLDERS.lock().expect("the box's holders").waiting_for_whole += 1;
    let waiting = Waiting;
    until(|holders| {
        let free = !holders.whole && holders.shares == 0;
        holders.whole |= free;
        free
    })
    .await;
    drop(waiting);
    Whole(())
}

impl Drop for Whole {
    fn drop(&mut self) {
        release(|holders| holders.whole = false);
    }
}

impl Whole {
    /// A database of the crowd test's own, under the box it holds.
    pub async fn database(&self, backend: Backend) -> Option<TestDatabase> {
        TestDatabase::create_within(backend, None).await
    }

    /// [`crate::helpers::spawn_app_with`] under the box the crowd test holds.
    pub async fn spawn_app_with(&self, backend: Backend, extra: &[(&str, &str)]) -> Option<TestApp> {
        let database = TestDatabase::migrated_within(backend, None).await?;
        Some(crate::helpers::start_on_database(database, extra).await)
    }
}
