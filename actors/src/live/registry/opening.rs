//! Opening a tournament this node has no entry of (a cold start): one load per tournament
//! however many callers ask at once, within the node's bounds, then an actor when this node
//! may run it, or a follower when another node does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{Semaphore, watch};
use tokio::time::Instant;
use uuid::Uuid;

use crate::error::{LiveError, LiveResult, Refusal};
use crate::live::actor::to_millis;
use crate::live::game::Game;
use crate::live::ports::{Broadcaster, LiveStore, Owner};
use crate::live::state::LiveState;

use super::Registry;
use super::entry::{Entry, entries, locked};
use super::role::{Follower, Role};
use super::supervisor::SupervisorMsg;

/// How many cold starts may be under way or waiting at once on a node: more callers are
/// refused at once ([`Refusal::Busy`]) rather than queued without bound. Finding out that a
/// tournament does not exist takes one indexed read, so only a flood fills it.
pub const COLD_START_QUEUE: usize = 256;
/// How many games are loaded from the database at once for cold starts, so that a burst of
/// first reads (a morning of tournaments, a restart) leaves the pool to the running ones.
pub const COLD_LOADS: usize = 16;

/// How a cold start ended, for every caller that waited for it.
pub(super) type Opened = Result<Entry, Arc<LiveError>>;

/// Cold starts under way, by tournament: a caller that finds one waits for its outcome
/// instead of starting another (and taking another place in the queue), so a venue's phones
/// joining a tournament this node has not opened yet cost one load, not one each.
pub(super) type Openings = Arc<Mutex<HashMap<Uuid, watch::Receiver<Option<Opened>>>>>;

/// Takes a cold start off [`Openings`] when its opener is done, or gone.
struct Opening {
    openings: Openings,
    tournament_id: Uuid,
}

impl Drop for Opening {
    fn drop(&mut self) {
        locked(&self.openings).remove(&self.tournament_id);
    }
}

/// The bounds of cold starts: places in the queue, and permits to load a game.
#[derive(Clone)]
pub(super) struct ColdStarts {
    pub(super) queue: Arc<Semaphore>,
    pub(super) loads: Arc<Semaphore>,
}

impl<S: LiveStore, B: Broadcaster> Registry<S, B> {
    pub(super) fn running(&self, tournament_id: Uuid) -> Option<Entry> {
        let mut map = entries(&self.entries);
        let entry = map.get_mut(&tournament_id)?;
        entry.last_used = Instant::now();
        Some(entry.clone())
    }

    pub(super) async fn entry(&self, tournament_id: Uuid) -> LiveResult<Entry> {
        loop {
            if let Some(entry) = self.running(tournament_id) {
                return Ok(entry);
            }
            let turn = {
                let mut openings = locked(&self.openings);
                match openings.get(&tournament_id) {
                    Some(under_way) => Err(under_way.clone()),
                    None => {
                        let (done, under_way) = watch::channel(None);
                        openings.insert(tournament_id, under_way);
                        Ok(done)
                    }
                }
            };
            match turn {
                Ok(done) => {
                    let opening = Opening { openings: self.openings.clone(), tournament_id };
                    let opened = self.cold_start(tournament_id).await;
                    let _ = done.send(Some(opened.as_ref().map(Clone::clone).map_err(|err| Arc::new(err.again()))));
                    drop(opening);
                    return opened;
                }
                Err(mut under_way) => {
                    let outcome = under_way.wait_for(Option::is_some).await.map(|outcome| outcome.clone());
                    match outcome {
                        Ok(Some(opened)) => return opened.map_err(|err| err.again()),
                        // The opener's caller went away before it was done: open it here.
                        Ok(None) | Err(_) => continue,
                    }
                }
            }
        }
    }

    /// Loads the game and has the supervisor start its actor, within the node's bounds.
    pub(super) async fn cold_start(&self, tournament_id: Uuid) -> LiveResult<Entry> {
        let Ok(_place) = self.cold_starts.queue.try_acquire() else {
            return Err(LiveError::refused(Refusal::Busy, "too many tournaments are being opened at once; try again"));
        };
        if self.store.version(tournament_id).await?.is_none() {
            return Err(LiveError::not_found("tournament"));
        }
        let _load = self.cold_starts.loads.acquire().await.map_err(|err| LiveError::Internal(err.into()))?;
        // Another caller may have started it while this one waited for its turn.
        if let Some(entry) = self.running(tournament_id) {
            return Ok(entry);
        }
        let game = self.store.load(tournament_id).await?.ok_or_else(|| LiveError::not_found("tournament"))?;
        if self.store.claim(tournament_id).await? != Owner::Here {
            return Ok(self.follow(game));
        }
        self.adopt(game).await
    }

    /// Has the supervisor start the actor of `game` (or give the one it runs), in place of
    /// whatever entry this node held of it.
    pub(super) async fn adopt(&self, game: Game) -> LiveResult<Entry> {
        let game = Box::new(game);
        match self.supervisor.call(|reply| SupervisorMsg::Adopt { game, reply: Some(reply) }, None).await {
            Ok(ractor::rpc::CallResult::Success(entry)) => entry,
            Ok(_) => Err(LiveError::Internal(anyhow::anyhow!("the live supervisor did not answer"))),
            Err(err) => Err(LiveError::Internal(anyhow::anyhow!("the live supervisor is gone: {err}"))),
        }
    }

    /// Follows a tournament another node runs, from `game` as loaded.
    pub(super) fn follow(&self, game: Game) -> Entry {
        let mut map = entries(&self.entries);
        if let Some(entry) = map.get(&game.tournament_id) {
            return entry.clone();
        }
        let first = Arc::new(LiveState::of(&game, to_millis((self.now)())));
        let (follower, snapshot) = Follower::start(self.store.clone(), self.now, first);
        let entry = Entry::new(&self.store, self.now, game.tournament_id, Role::Follower(follower), snapshot);
        map.insert(game.tournament_id, entry.clone());
        entry
    }
}
