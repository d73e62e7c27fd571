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
//! While the database is out of reach, or a check does not answer within [`CHECK_WITHIN`] (a
//! frozen database the pool has not noticed yet), what the node holds is served, as before:
//! nothing can change the tournament meanwhile, and a live read stays a fast one.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use uuid::Uuid;

use crate::error::{LiveError, LiveResult, Refusal};
use crate::live::actor::{TimeSource, TournamentMsg, to_millis};
use crate::live::state::{LiveState, Snapshot};
use crate::live::store::LiveStore;
use crate::rounds::Rounds;

use super::role::{Role, publish_if_newer};

/// How long a check may take. Past it (a frozen database, before the pool notices) the readers
/// are served what is held, as while the database is known to be out of reach: a live read
/// answers within a fraction of a second whatever the database does.
pub const CHECK_WITHIN: Duration = Duration::from_millis(250);

/// How long a check waits for the tournament's actor here to publish a version the database
/// already holds (its own change between commit and publication, or a change made beside
/// it that it is asked to read); past it the check loads the state itself.
const ASK_WITHIN: Duration = Duration::from_millis(150);

/// What a round of checks found.
#[derive(Clone)]
pub(super) enum Checked {
    /// A state as new as the stored version was when the round began.
    Current(Snapshot),
    /// The database is out of reach: nothing can change the tournament meanwhile, and the
    /// state held is served (as reads were before a database outage).
    Unreachable,
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
    Rounds::new(CHECK_WITHIN, move || {
        let (store, role, snapshot) = (store.clone(), role.clone(), snapshot.clone());
        async move {
            match up_to_date(store.as_ref(), now, tournament_id, &role, snapshot).await {
                Ok(state) => Checked::Current(state),
                Err(LiveError::Refused { refusal: Refusal::Unavailable, .. }) => Checked::Unreachable,
                Err(err) => Checked::Failed(Arc::new(err)),
            }
        }
    })
}

/// The state to serve once a round has checked it: the newer of what the round found and
/// what is held now (a state published meanwhile).
pub(super) async fn served(checks: &Checks, held: &watch::Receiver<Snapshot>) -> LiveResult<Snapshot> {
    let now_held = || held.borrow().clone();
    match checks.read().await {
        Some(Checked::Current(state)) => {
            let held = now_held();
            Ok(if held.version >= state.version { held } else { state })
        }
        // Out of reach, or not answering within the bound: what is held.
        Some(Checked::Unreachable) | None => Ok(now_held()),
        Some(Checked::Failed(err)) => Err(err.again()),
    }
}

/// A state of the tournament at least as new as its stored version now.
async fn up_to_date<S: LiveStore>(
    store: &S,
    now: TimeSource,
    tournament_id: Uuid,
    role: &Role,
    mut snapshot: watch::Receiver<Snapshot>,
) -> LiveResult<Snapshot> {
    let held = snapshot.borrow().clone();
    let Some(stored) = store.version(tournament_id).await? else { return Ok(held) };
    if held.version >= stored {
        return Ok(held);
    }
    if let Role::Owner(actor) = role {
        // The actor publishes its own change right after its commit; a change made beside it
        // it reads when asked, and tells its watchers.
        let published = async { snapshot.wait_for(|state| state.version >= stored).await.is_ok() };
        let asked = actor.call(|reply| TournamentMsg::Freshen { stored, reply }, Some(ASK_WITHIN));
        let _ = tokio::time::timeout(ASK_WITHIN, async {
            tokio::select! {
                _ = published => {}
                _ = asked => {}
            }
        })
        .await;
        let published = snapshot.borrow().clone();
        if published.version >= stored {
            return Ok(published);
        }
    }
    // A follower, or an actor that could not publish it in time: the stored game itself.
    let Some(game) = store.load(tournament_id).await? else { return Ok(held) };
    let loaded = Arc::new(LiveState::of(&game, to_millis(now())));
    if let Role::Follower(follower) = role {
        publish_if_newer(&follower.published, loaded.clone());
    }
    Ok(loaded)
}
