//! The live engine as the handlers see it: the registry of tournament actors, and with several
//! nodes the way to the node that runs a tournament. A command on a tournament another node
//! runs is handed to that node ([`super::forward`]) and answered as if it ran here; while the
//! owner is gone (killed, its lease not yet run out) the command waits for the next owner,
//! which may be this node.

use std::sync::Arc;
use std::time::Duration;

use floor_actors::error::{LiveError, LiveResult, Refusal};
use floor_actors::live::{Order, Outcome, Snapshot, Timed};
use tokio::time::Instant;
use uuid::Uuid;

use super::forward::{Answered, Done, Forwarder, Handed, Sent};
use super::leases::{LEASE_FOR, Leases, RENEW_EVERY};
use super::socket::LiveRegistry;
use crate::domain::tournaments::lifecycle::LiveChanges;

/// The longest a command waits for a tournament to have an owner again: a dead owner's
/// lease runs out, then a node takes it within a renewal.
const OWNER_WAIT: Duration = LEASE_FOR.saturating_add(RENEW_EVERY).saturating_add(RENEW_EVERY);
/// The longest a command waits while the owner does not answer (frozen): then it is refused
/// `503`, applied nowhere, and the client tries again (by then another node may run it).
const NOT_ANSWERING_WAIT: Duration = Duration::from_secs(3);
/// How often a waiting command asks again who runs the tournament.
const ASK_AGAIN: Duration = Duration::from_millis(200);
/// How long a hand-over at shutdown gives the actors to finish the commands they took.
const DRAIN_GRACE: Duration = Duration::from_secs(10);

/// The cluster side: this node's leases and its calls to the other nodes.
pub struct Nodes {
    pub leases: Arc<Leases>,
    pub forwarder: Forwarder,
    /// Wakes the keeper before its next round (another node handed its tournaments over).
    pub keeper: tokio::sync::Notify,
}

/// The live engine; cheap to clone.
#[derive(Clone)]
pub struct Live {
    registry: LiveRegistry,
    nodes: Option<Arc<Nodes>>,
}

impl Live {
    pub fn new(registry: LiveRegistry, nodes: Option<Arc<Nodes>>) -> Self {
        Self { registry, nodes }
    }

    pub fn registry(&self) -> &LiveRegistry {
        &self.registry
    }

    pub fn nodes(&self) -> Option<&Arc<Nodes>> {
        self.nodes.as_ref()
    }

    /// The latest LiveState of a tournament, from its actor here or from the follower of the
    /// node that runs it.
    pub async fn snapshot(&self, tournament_id: Uuid) -> LiveResult<Snapshot> {
        self.registry.snapshot(tournament_id).await
    }

    /// The latest LiveState for a client that has seen version `seen`: never older than it
    /// (refused as unavailable while this node cannot catch up with it).
    pub async fn snapshot_since(&self, tournament_id: Uuid, seen: Option<i64>) -> LiveResult<Snapshot> {
        self.registry.snapshot_since(tournament_id, seen).await
    }

    /// Runs a live command, or a replayed queue, through the tournament's actor, wherever it
    /// runs.
    pub async fn command(&self, tournament_id: Uuid, order: impl Into<Order>, by: Uuid) -> LiveResult<Outcome> {
        match self.on_owner(tournament_id, Handed::order(order.into(), by)).await? {
            Done::Command(outcome) => Ok(outcome),
            Done::Announced => Err(LiveError::Internal(anyhow::anyhow!("a command was answered as an announcement"))),
        }
    }

    /// The tournament changed beside its actor (a cancel, an edit) and has committed: returns
    /// when its actor, wherever it runs, has read it and told the watchers.
    pub async fn reload(&self, tournament_id: Uuid) {
        if let Err(err) = self.on_owner(tournament_id, Handed::Announce).await {
            tracing::warn!(%tournament_id, error = %err, "could not tell the tournament actor of a change");
        }
    }

    /// Runs `work` here if this node runs the tournament or may take it now, and never hands
    /// it on: what the internal call runs on the owner.
    pub async fn here(&self, tournament_id: Uuid, work: Handed) -> LiveResult<Done> {
        match work {
            Handed::Command { command, by, occurred_at, key } => {
                let order = Order::One(Timed { command, occurred_at, key });
                self.registry.command(tournament_id, order, by).await.map(Done::Command)
            }
            Handed::Replay { commands, by } => {
                self.registry.command(tournament_id, Order::Queue(commands), by).await.map(Done::Command)
            }
            Handed::Announce => self.registry.reload(tournament_id).await.map(|()| Done::Announced),
        }
    }

    /// Runs `work` here, or hands it to the node that runs the tournament, waiting (up to
    /// [`OWNER_WAIT`]) while no node does.
    async fn on_owner(&self, tournament_id: Uuid, work: Handed) -> LiveResult<Done> {
        let started = Instant::now();
        let deadline = started + OWNER_WAIT;
        let mut unreachable = None;
        // Why an earlier sending's outcome is unknown, when one's is.
        let mut unknown: Option<String> = None;
        loop {
            let owner = match self.here(tournament_id, work.clone()).await {
                Err(LiveError::Elsewhere { owner }) => owner,
                // Turned away here before it ran (the database out of reach, a lock waited out
                // while asking who runs it): an earlier sending's outcome stays unknown.
                Err(LiveError::Refused { refusal: Refusal::Unavailable, message }) => {
                    return Err(unless_unknown(unknown, message));
                }
                done => return done,
            };
            let Some(nodes) = &self.nodes else {
                return Err(LiveError::Internal(anyhow::anyhow!("a single node found its tournament elsewhere")));
            };
            if let Some(owner) = owner {
                match nodes.forwarder.send(&owner, tournament_id, &work).await {
                    // It moved on meanwhile: ask again who runs it.
                    Sent::Answered(Answered::Elsewhere { .. }) => {}
                    // Gone (its lease runs out soon), or NODE_URL names an address this node
                    // cannot reach: the log tells the two apart by how long it lasts.
                    Sent::NotDelivered => {
                        if unreachable.as_ref() != Some(&owner) {
                            tracing::warn!(%tournament_id, %owner, "the node running the tournament is unreachable");
                            unreachable = Some(owner);
                        }
                    }
                    // Frozen, as far as this node knows: its lease runs out unless it wakes.
                    Sent::NotAnswering if started.elapsed() >= NOT_ANSWERING_WAIT => {
                        return Err(unless_unknown(
                            unknown,
                            "the node running this tournament does not answer; try again in a few seconds",
                        ));
                    }
                    Sent::NotAnswering => {}
                    Sent::Answered(answered) => {
                        let done = answered.into_result();
                        if let Ok(Done::Command(outcome)) = &done {
                            self.registry.observe(outcome.state.clone());
                        }
                        return done;
                    }
                    Sent::Refused(why) => {
                        tracing::warn!(%tournament_id, %owner, "{why}");
                        return Err(unless_unknown(unknown, format!("{why}; nothing was applied")));
                    }
                    // Sent, and nothing came back (an owner killed with the call on its way): the
                    // work may or may not have run. Keyed work goes again, to whichever node runs
                    // the tournament by then, which answers a key it applied with its first
                    // outcome; other work stays of unknown outcome.
                    Sent::Lost(why) if work.resends_safely() => {
                        tracing::warn!(%tournament_id, %owner, "{why}; sending it again with its key");
                        unknown = Some(why);
                    }
                    Sent::Lost(why) => return Err(unknown_outcome(&why)),
                }
            }
            if Instant::now() >= deadline {
                // Nothing was handed to an owner that took it: nothing was applied, unless an
                // earlier sending's outcome is unknown.
                return Err(unless_unknown(
                    unknown,
                    "no node took the tournament over in time; nothing was applied, try again",
                ));
            }
            tokio::time::sleep(ASK_AGAIN).await;
        }
    }

    /// Another node changed the tournament to `version`.
    pub fn catch_up(&self, tournament_id: Uuid, version: i64) {
        self.registry.catch_up(tournament_id, version);
    }

    /// Notes from the other nodes may have been lost.
    pub fn catch_up_all(&self) {
        self.registry.catch_up_all();
    }

    /// How many tournament actors run on this node.
    pub fn actor_count(&self) -> usize {
        self.registry.actor_count()
    }

    /// Hands this node's tournaments over at shutdown: it takes no tournament from now on,
    /// its actors finish the commands they took, and their leases go, so another node owns
    /// them at once. Returns how many it handed over.
    pub async fn hand_over(&self) -> usize {
        let Some(nodes) = &self.nodes else { return 0 };
        nodes.leases.leave();
        let handed = self.registry.hand_over(DRAIN_GRACE).await;
        if let Err(err) = nodes.leases.release_all().await {
            tracing::warn!(error = %err, "could not release every lease; they run out by themselves");
        }
        handed.len()
    }

    /// Stops every actor.
    pub fn shutdown(&self) {
        self.registry.shutdown();
    }
}

/// Work whose outcome is unknown (`why`): the caller reads the live state for its effect.
fn unknown_outcome(why: &str) -> LiveError {
    LiveError::Internal(anyhow::anyhow!("{why}; read the live state for its effect"))
}

/// The work was not done (`503`, `message`), unless an earlier sending's outcome is `unknown`,
/// which a later refusal does not undo.
fn unless_unknown(unknown: Option<String>, message: impl Into<String>) -> LiveError {
    match unknown {
        Some(lost) => unknown_outcome(&lost),
        None => LiveError::refused(Refusal::Unavailable, message),
    }
}

impl LiveChanges for Live {
    async fn changed(&self, tournament_id: Uuid) {
        self.reload(tournament_id).await;
    }
}
