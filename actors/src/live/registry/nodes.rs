//! What passes between nodes: following a tournament another node runs (its answers and
//! notes), taking a tournament over, letting it go, and handing every one over at shutdown.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use ractor::ActorRef;
use tokio::task::JoinSet;
use uuid::Uuid;

use crate::error::{LiveError, LiveResult};
use crate::live::actor::{TournamentMsg, to_millis};
use crate::live::ports::{Broadcaster, LiveStore, Owner};
use crate::live::state::{LiveState, Snapshot};

use super::entry::{Entry, entries};
use super::role::{Follower, Role, publish_if_newer};
use super::{Registry, announce};

impl<S: LiveStore, B: Broadcaster> Registry<S, B> {
    /// A state another node answered for a tournament it runs: the follower here shows it at
    /// once, so a read on this node after the answer is current.
    pub fn observe(&self, state: Snapshot) {
        if let Some(Role::Follower(follower)) = entries(&self.entries).get(&state.tournament_id).map(|e| &e.role) {
            publish_if_newer(&follower.published, state);
        }
    }

    /// The tournament's state read again from the database now when another node runs it
    /// (this node may have missed its notes); `None` when this node runs it.
    pub async fn read_again(&self, tournament_id: Uuid) -> LiveResult<Option<Snapshot>> {
        let entry = self.entry(tournament_id).await?;
        let Role::Follower(follower) = &entry.role else { return Ok(None) };
        // The stored version first (one indexed read): the game is loaded only when it moved.
        let held = entry.snapshot.borrow().version;
        if self.store.version(tournament_id).await?.is_some_and(|stored| stored > held)
            && let Some(game) = self.store.load(tournament_id).await?
        {
            publish_if_newer(&follower.published, Arc::new(LiveState::of(&game, to_millis((self.now)()))));
        }
        let latest = entry.snapshot.borrow().clone();
        Ok(Some(latest))
    }

    /// The tournament's picture changed in the database outside any game (a deleted player's
    /// name): if this node holds it, it is read again now, and when its actor runs here the
    /// watchers are told. Returns once what this node serves shows the change; a tournament
    /// this node does not hold is read fresh at its next read anyway.
    pub async fn restate(&self, tournament_id: Uuid) -> LiveResult<()> {
        let Some(entry) = entries(&self.entries).get(&tournament_id).cloned() else { return Ok(()) };
        match &entry.role {
            Role::Owner(actor) => announce(actor).await,
            Role::Follower(follower) => {
                if let Some(game) = self.store.load(tournament_id).await? {
                    publish_if_newer(&follower.published, Arc::new(LiveState::of(&game, to_millis((self.now)()))));
                }
                Ok(())
            }
        }
    }

    /// Another node changed the tournament to `version`: what this node holds of it, if
    /// older, is read again from the database (the change's maker has told the watchers).
    pub fn catch_up(&self, tournament_id: Uuid, version: i64) {
        if let Some(entry) = entries(&self.entries).get(&tournament_id)
            && entry.snapshot.borrow().version < version
        {
            entry.catch_up();
        }
    }

    /// Everything here is read again (after this node could have missed other nodes' notes,
    /// such as when it lost Redis for a while).
    pub fn catch_up_all(&self) {
        for entry in entries(&self.entries).values() {
            entry.catch_up();
        }
    }

    /// This node no longer holds the tournament (its hold ran out and another node took it):
    /// its actor stops without writing more, and the tournament is followed from now on, from
    /// the state the actor left: reads here go on from memory (held against the stored
    /// version, as every follower's) rather than wait for a load, or fail while the database
    /// is out of reach.
    pub fn let_go(&self, tournament_id: Uuid) {
        let replaced = self.follow_in_place(&mut entries(&self.entries), tournament_id);
        if let Some((owner, _)) = replaced
            && let Some(actor) = owner.actor()
        {
            tracing::warn!(%tournament_id, "another node took the tournament over; its actor here stops");
            actor.stop(Some("another node holds the tournament".into()));
        }
    }

    /// Puts a follower, starting from the actor's latest state, in the place of the actor of
    /// `tournament_id` in `map`; returns the actor's entry and the follower. `None` when this
    /// node runs no actor of it.
    fn follow_in_place(&self, map: &mut HashMap<Uuid, Entry>, tournament_id: Uuid) -> Option<(Entry, Arc<Follower>)> {
        map.get(&tournament_id)?.actor()?;
        let owner = map.remove(&tournament_id)?;
        let latest = owner.snapshot.borrow().clone();
        let (follower, snapshot) = Follower::start(self.store.clone(), self.now, latest);
        let mut entry = Entry::new(&self.store, self.now, tournament_id, Role::Follower(follower.clone()), snapshot);
        entry.last_used = owner.last_used;
        map.insert(tournament_id, entry);
        Some((owner, follower))
    }

    /// Hands every tournament this node runs over: each actor finishes the commands it has
    /// taken (within `grace`), then its tournament is released for another node. Commands
    /// arriving meanwhile find no actor here; with the store refusing new claims (a node
    /// shutting down), they are answered [`LiveError::Elsewhere`]. A follower takes each
    /// actor's place at once, from its state and then from each state the actor publishes
    /// while it finishes, so the reads and joins that still reach this node until it closes are
    /// answered from memory rather than by loading the game again (once the new owner moves
    /// on, a read here loads what it wrote: [`super::fresh`]).
    /// Returns the tournaments.
    pub async fn hand_over(&self, grace: Duration) -> Vec<Uuid> {
        let owned: Vec<(Uuid, Entry, Arc<Follower>)> = {
            let mut map = entries(&self.entries);
            let ids: Vec<Uuid> = map.iter().filter(|(_, entry)| entry.actor().is_some()).map(|(id, _)| *id).collect();
            ids.into_iter()
                .filter_map(|id| self.follow_in_place(&mut map, id).map(|(owner, follower)| (id, owner, follower)))
                .collect()
        };
        let mut draining = JoinSet::new();
        for (tournament_id, owner, follower) in owned {
            let store = self.store.clone();
            draining.spawn(async move {
                // What the actor publishes while it finishes its commands is served here at once.
                let forwarding = tokio::spawn({
                    let (mut published, follower) = (owner.snapshot.clone(), follower.clone());
                    async move {
                        while published.changed().await.is_ok() {
                            publish_if_newer(&follower.published, published.borrow_and_update().clone());
                        }
                    }
                });
                if let Some(actor) = owner.actor()
                    && actor.drain_and_wait(Some(grace)).await.is_err()
                {
                    tracing::warn!(%tournament_id, "a tournament actor did not finish its commands in time");
                    actor.stop(Some("handing over".into()));
                }
                forwarding.abort();
                publish_if_newer(&follower.published, owner.snapshot.borrow().clone());
                store.release(tournament_id).await;
                tournament_id
            });
        }
        draining.join_all().await
    }

    /// The actor of a tournament this node runs or may take now; [`LiveError::Elsewhere`]
    /// when another node runs it. A follower asks again, as its owner may have let go.
    pub(super) async fn owner_actor(&self, tournament_id: Uuid) -> LiveResult<ActorRef<TournamentMsg>> {
        let entry = self.entry(tournament_id).await?;
        if let Role::Owner(actor) = &entry.role {
            return Ok(actor.clone());
        }
        match self.store.claim(tournament_id).await? {
            Owner::Here => self.take_over(tournament_id).await,
            Owner::Node(url) => Err(LiveError::Elsewhere { owner: Some(url) }),
            Owner::Nobody => Err(LiveError::Elsewhere { owner: None }),
        }
    }

    /// Starts the actor of a tournament this node followed and has just claimed. The follower
    /// stays in place until the actor replaces it, so reads (a reconnect burst's thousands of
    /// joins, when the owner before left) keep its state instead of waiting for the load.
    async fn take_over(&self, tournament_id: Uuid) -> LiveResult<ActorRef<TournamentMsg>> {
        let _load = self.cold_starts.loads.acquire().await.map_err(|err| LiveError::Internal(err.into()))?;
        // Another caller may have taken it while this one waited for its turn.
        if let Some(actor) = self.running(tournament_id).as_ref().and_then(Entry::actor) {
            return Ok(actor.clone());
        }
        let game = self.store.load(tournament_id).await?.ok_or_else(|| LiveError::not_found("tournament"))?;
        let entry = self.adopt(game).await?;
        entry
            .actor()
            .cloned()
            .ok_or_else(|| LiveError::Internal(anyhow::anyhow!("a tournament was adopted without an actor")))
    }
}
