//! The two ports of a tournament actor: where the game is persisted (the database, through
//! sea-orm, in the server) and where a new LiveState goes out (the Socket.IO room). Keeping
//! them behind traits keeps the actor free of I/O detail: the same actor runs on SQLite and
//! PostgreSQL, alone or as one of several nodes behind Redis, and under test doubles.

use std::future::Future;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::error::{LiveError, LiveResult};
use crate::live::command::Timed;
use crate::live::game::{Change, Game, Made};
use crate::live::keys::{First, KeyRecord};
use crate::live::state::Snapshot;

/// What a guarded write found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Persisted {
    /// Written; the stored version is now `game.version` plus the changes written.
    Written,
    /// The stored tournament moved on without this actor (a cancel, another node): nothing
    /// was written and the actor must reload before it decides again.
    Stale,
    /// A key of the turn was kept meanwhile for another command (of another tournament, whose
    /// actor runs beside this one): nothing was written, and the actor reads the keys again.
    KeyTaken,
}

/// What a write whose commit went unanswered turned out to be, once looked at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settled {
    /// It committed: the stored version is the one it wrote.
    Committed,
    /// It did not: the stored version is still the one it was decided on.
    RolledBack,
}

/// The keys a turn keeps with its commands' outcomes: the sender's account, and a record for
/// each keyed command, written in the turn's transaction.
#[derive(Clone, Copy, Debug)]
pub struct Keys<'a> {
    pub by: Uuid,
    pub records: &'a [KeyRecord],
}

impl Keys<'_> {
    pub const NONE: Keys<'static> = Keys { by: Uuid::nil(), records: &[] };
}

/// Which node runs a tournament's actor, when several nodes share the database.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Owner {
    /// This node: it runs the actor.
    Here,
    /// Another node, reached at this address.
    Node(String),
    /// No node, and this one takes no tournament now (it is shutting down).
    Nobody,
}

/// The database side of a tournament actor. Every method is one transaction.
pub trait LiveStore: Send + Sync + 'static {
    /// Takes the tournament for this node unless another node holds it, and says who runs it.
    /// One node alone always runs it.
    fn claim(&self, _tournament_id: Uuid) -> impl Future<Output = LiveResult<Owner>> + Send {
        async { Ok(Owner::Here) }
    }

    /// Lets go of the tournament, whose actor here has stopped, so any node may take it.
    fn release(&self, _tournament_id: Uuid) -> impl Future<Output = ()> + Send {
        async {}
    }

    /// The game as stored, `None` when the tournament does not exist.
    fn load(&self, tournament_id: Uuid) -> impl Future<Output = LiveResult<Option<Game>>> + Send;

    /// The stored `live_version`: whether a game held in memory is still current.
    fn version(&self, tournament_id: Uuid) -> impl Future<Output = LiveResult<Option<i64>>> + Send;

    /// Whether other nodes write the tournaments too. A node alone makes every change itself
    /// and publishes it before it answers, so what it holds is current and a read is served
    /// without looking at the stored version ([`super::registry`]'s `fresh`).
    fn shared(&self) -> bool {
        true
    }

    /// Writes `changes` in order, in one transaction, each with its audit record and the
    /// command it came from (`None` for the clock's own moves), and `keys` with what their
    /// commands came to, only if the stored version is still `game.version`, the tournament
    /// still runs and no key was kept meanwhile.
    fn persist(
        &self,
        game: &Game,
        changes: &[(Change, Option<Made>)],
        keys: Keys<'_>,
    ) -> impl Future<Output = LiveResult<Persisted>> + Send;

    /// What was kept with each keyed command of `queue` sent by `by` (in order, `None` for a
    /// command without a key or a key not kept): read before the turn is decided.
    fn recorded(
        &self,
        tournament_id: Uuid,
        by: Uuid,
        queue: &[Timed],
    ) -> impl Future<Output = LiveResult<Vec<Option<First>>>> + Send {
        let _ = (tournament_id, by);
        let none = vec![None; queue.len()];
        async move { Ok(none) }
    }

    /// Keeps `keys` for commands that changed nothing (refused, or a pause while paused), in a
    /// transaction of their own: [`Persisted::KeyTaken`] when one was kept meanwhile.
    fn keep(&self, tournament_id: Uuid, keys: Keys<'_>) -> impl Future<Output = LiveResult<Persisted>> + Send {
        let _ = (tournament_id, keys);
        async { Ok(Persisted::Written) }
    }

    /// Whether the write of `game` moved on by `changes`, whose commit went unanswered,
    /// committed: looked at once no transaction can still be writing it (under the
    /// tournament's row lock).
    fn settle(&self, game: &Game, changes: i64) -> impl Future<Output = LiveResult<Settled>> + Send {
        let _ = (game, changes);
        async { Err(LiveError::Internal(anyhow::anyhow!("this store cannot look at an unanswered commit"))) }
    }

    /// Starts the tournament: seating, no-shows with strikes, chips and the clock, and the
    /// guarded move to `running`; with `key`, kept in the same transaction.
    fn start(
        &self,
        tournament_id: Uuid,
        by: Uuid,
        now: DateTime<Utc>,
        key: Option<&KeyRecord>,
    ) -> impl Future<Output = LiveResult<()>> + Send;

    /// Confirms the results behind the atomic gate and awards the rating; with `key`, kept in
    /// the same transaction.
    fn confirm(
        &self,
        tournament_id: Uuid,
        by: Uuid,
        now: DateTime<Utc>,
        key: Option<&KeyRecord>,
    ) -> impl Future<Output = LiveResult<()>> + Send;
}

/// Fans a new LiveState out to the tournament's watchers. Awaited by the actor, so the
/// watchers of one tournament see the versions in order ([`super::Fanout`] makes that wait
/// a hand-over to the tournament's own sender).
pub trait Broadcaster: Send + Sync + 'static {
    fn broadcast(&self, state: Snapshot) -> impl Future<Output = ()> + Send;

    /// [`Self::broadcast`] of a state whose change began a segment, a level or a break (by a
    /// press or by the clock itself; see [`crate::live::state::began_segment`]): a room that
    /// signals it does so after the state. By default only the state goes.
    fn broadcast_began(&self, state: Snapshot) -> impl Future<Output = ()> + Send {
        self.broadcast(state)
    }

    /// An actor starts here from `state` as loaded (a node taking a tournament over, or a
    /// first read): what the watchers already hold when the node before sent its last
    /// change, so the next change may go to them as a small one. By default nothing is kept.
    fn adopted(&self, state: &Snapshot) {
        let _ = state;
    }
}
