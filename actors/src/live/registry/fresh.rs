//! Reads never go back, on any node: before a kept LiveState is served, the tournament's
//! stored `live_version` is read (one indexed row), and a state older than it is brought up to
//! date first. Notes between nodes (Redis) only make that rarer; they are no longer what
//! keeps a read current. A version any node served was committed before it was served, so a
//! later read anywhere serves it or a newer one: after an account's deletion, whose picture
//! is a new version of each tournament that showed the person, no node serves the old picture
//! (nor `304` to its tag); through a hand-over, neither the leaving node nor the taking one
//! goes back.
//!
//! The readers of a tournament on a node share one check at a time ([`Rounds`]): a burst of
//! thousands of joins costs one indexed read per round trip to the database, not one each.
//! When the stored version is read and is newer than the state held, the state is brought here
//! ([`ASK_WITHIN`], [`LOAD_WITHIN`]) or the read is refused as unavailable: it is never served
//! older than a version the database is known to hold. While the database is out of reach, or
//! the version is not read within [`CHECK_WITHIN`] (a frozen or slowed database), nothing is
//! known, and what the node holds is served: during an outage nothing can change the
//! tournament, and a live read stays a fast one.
//!
//! Except to a client that says it has seen a newer version (a join's `version`, the version
//! in an `If-None-Match` tag): what the node holds would take that client back. Its read
//! waits a moment for the node to catch up (the note of the change is usually on its way),
//! and is refused as unavailable, to be asked again, if it does not: a session's reads never
//! go back, whichever node answers them (the session guarantee of monotonic reads, kept by a
//! token the client carries, as a database's session token does). A client that says nothing
//! may, while the database is slow to this node, be served what the node holds.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use uuid::Uuid;

use crate::error::{LiveError, LiveResult, Refusal};
use crate::live::actor::{TimeSource, TournamentMsg, to_millis};
use crate::live::ports::LiveStore;
use crate::live::state::{LiveState, Snapshot};
use crate::rounds::Rounds;

use super::role::{Role, publish_if_newer};

/// How long the stored version may take to read. Past it (a frozen or slowed database, before
/// the pool notices) nothing is known, and the readers are served what is held, as while the
/// database is known to be out of reach: a live read answers within a fraction of a second
/// whatever the database does.
pub const CHECK_WITHIN: Duration = Duration::from_millis(250);

/// How long a check waits for the tournament's actor here to publish a version the database
/// already holds (its own change between commit and publication, or a change made beside
/// it that it is asked to read); past it the check loads the state itself.
const ASK_WITHIN: Duration = Duration::from_millis(150);

/// How long a check may take to load a state the database holds and this node does not; past
/// it the node is known to be behind ([`Checked::Behind`]).
const LOAD_WITHIN: Duration = Duration::from_millis(400);

/// A round's bound beyond its steps' own: a round that outlives it answers nothing.
const ROUND_WITHIN: Duration = Duration::from_millis(250 + 150 + 400 + 200);

/// How long a read waits for this node to catch up with a version it is known to be behind
/// (stored, or seen by its client): a note of the change on its way, or a follower's read of
/// it. Past it the read is refused as unavailable, to be asked again.
const CATCH_UP_WITHIN: Duration = Duration::from_millis(500);

/// What a round of checks found.
#[derive(Clone)]
pub(super) enum Checked {
    /// A state as new as the stored version was when the round began.
    Current(Snapshot),
    /// The database holds this version, newer than the state held, which could not be brought
    /// here within the round.
    Behind(i64),
    /// The stored version could not be read: the database is out of reach (nothing can change
    /// the tournament meanwhile), or did not answer within [`CHECK_WITHIN`].
    Unknown,
    /// The check failed otherwise.
    Failed(Arc<LiveError>),
}

/// The checks of one tournament's kept state on this node.
pub(super) type Checks = Arc<Rounds<Checked>>;

/// The checks of the state `snapshot` that `role` keeps of `tournament_id`.
pub(super) fn checks<S: LiveStore>(
    store: Arc<S>,
    now: TimeSource,
    tournament_id: Uuid,
    role: Role,
    snapshot: watch::Receiver<Snapshot>,
) -> Checks {
    Rounds::new(ROUND_WITHIN, move || {
        let (store, role, snapshot) = (store.clone(), role.clone(), snapshot.clone());
        async move { up_to_date(store.as_ref(), now, tournament_id, &role, snapshot).await }
    })
}

/// The state to serve once a round has checked it: the newer of what the round found and
/// what is held now (a state published meanwhile). Never older than `seen`, the version the
/// client says it has seen: a node behind it catches up, or refuses ([`CATCH_UP_WITHIN`]).
pub(super) async fn served(
    checks: &Checks,
    held: &watch::Receiver<Snapshot>,
    seen: Option<i64>,
    catch_up: impl FnOnce(),
) -> LiveResult<Snapshot> {
    let now_held = || held.borrow().clone();
    match checks.read().await {
        // As new as the database: a version the client claims beyond it is of no history
        // this database has (a restore from a backup), and holds nothing back.
        Some(Checked::Current(state)) => {
            let held = now_held();
            Ok(if held.version >= state.version { held } else { state })
        }
        Some(Checked::Behind(stored)) => caught_up(held, seen.map_or(stored, |seen| seen.max(stored)), catch_up).await,
        // Nothing known: what is held, unless the client has seen newer.
        Some(Checked::Unknown) | None => {
            let state = now_held();
            match seen {
                Some(seen) if seen > state.version => caught_up(held, seen, catch_up).await,
                _ => Ok(state),
            }
        }
        Some(Checked::Failed(err)) => Err(err.again()),
    }
}

/// The held state once it is as new as `version`, after `catch_up` asked for it.
async fn caught_up(held: &watch::Receiver<Snapshot>, version: i64, catch_up: impl FnOnce()) -> LiveResult<Snapshot> {
    catch_up();
    let mut held = held.clone();
    match tokio::time::timeout(CATCH_UP_WITHIN, held.wait_for(|state| state.version >= version)).await {
        Ok(Ok(state)) => Ok(state.clone()),
        _ => Err(LiveError::refused(
            Refusal::Unavailable,
            format!("this node has not caught up with version {version} of the tournament; ask again in a moment"),
        )),
    }
}

/// What the check of the state held against the stored version finds.
async fn up_to_date<S: LiveStore>(
    store: &S,
    now: TimeSource,
    tournament_id: Uuid,
    role: &Role,
    mut snapshot: watch::Receiver<Snapshot>,
) -> Checked {
    let held = snapshot.borrow().clone();
    let stored = match tokio::time::timeout(CHECK_WITHIN, store.version(tournament_id)).await {
        Ok(Ok(Some(stored))) => stored,
        Ok(Ok(None)) => return Checked::Current(held),
        Ok(Err(err)) => return unknown_or_failed(err),
        Err(_) => return Checked::Unknown,
    };
    if held.version >= stored {
        return Checked::Current(held);
    }
    if let Role::Owner(actor) = role {
        // The actor publishes its own change right after its commit; a change made beside it
        // it reads when asked, and tells its watchers.
        let published = async { snapshot.wait_for(|state| state.version >= stored).await.is_ok() };
        let asked = actor.call(|reply| TournamentMsg::Freshen { stored, reply }, None);
        let _ = tokio::time::timeout(ASK_WITHIN, async {
            tokio::select! {
                _ = published => {}
                _ = asked => {}
            }
        })
        .await;
        let published = snapshot.borrow().clone();
        if published.version >= stored {
            return Checked::Current(published);
        }
    }
    // A follower, or an actor that could not publish it in time: the stored game itself.
    let game = match tokio::time::timeout(LOAD_WITHIN, store.load(tournament_id)).await {
        Ok(Ok(Some(game))) => game,
        Ok(Ok(None)) => return Checked::Current(held),
        Ok(Err(err)) => {
            return match unknown_or_failed(err) {
                Checked::Unknown => Checked::Behind(stored),
                failed => failed,
            };
        }
        Err(_) => return Checked::Behind(stored),
    };
    let loaded = Arc::new(LiveState::of(&game, to_millis(now())));
    if let Role::Follower(follower) = role {
        publish_if_newer(&follower.published, loaded.clone());
    }
    Checked::Current(loaded)
}

/// A database out of reach says nothing of the stored version; any other error is the check's.
fn unknown_or_failed(err: LiveError) -> Checked {
    match err {
        LiveError::Refused { refusal: Refusal::Unavailable, .. } => Checked::Unknown,
        err => Checked::Failed(Arc::new(err)),
    }
}
