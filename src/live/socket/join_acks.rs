//! What a `join` is acked with, made once for every socket that joins while a state is
//! current rather than once per socket: the LiveState as JSON, or, for a client that says the
//! version it holds, the `patch` from that version to the current one (empty when it is
//! current). In a reconnect burst thousands of sockets join within a second, nearly all holding
//! a state a press or two old: each used to get the 65 KB state serialised for it alone.
//!
//! A node keeps, for each tournament joined on it lately, the states it saw in the last
//! [`KEPT_FOR`] (those its joins read and those it broadcast), at most [`MOST_STATES`], and
//! what it made of the current one. A tournament nobody joins keeps nothing here.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use floor_actors::live::Snapshot;
use moka::future::Cache;
use serde_json::value::RawValue;
use uuid::Uuid;

use crate::live::events::{JoinAck, StatePatch};

/// How long a state seen is kept to patch from: longer than an app's reconnect takes.
const KEPT_FOR: Duration = Duration::from_secs(60);

/// The most states kept of one tournament.
const MOST_STATES: usize = 16;

/// A tournament nobody joined for this long is forgotten here.
const IDLE_FOR: Duration = Duration::from_secs(120);

/// The JSON of an ack's `state` or `patch`, shared by every socket it goes to.
pub type Json = Arc<RawValue>;

/// The acks of this node's joins.
pub struct JoinAcks {
    tournaments: Cache<Uuid, Arc<Mutex<Recent>>>,
}

impl Default for JoinAcks {
    fn default() -> Self {
        Self { tournaments: Cache::builder().time_to_idle(IDLE_FOR).build() }
    }
}

/// What a join is acked with.
pub enum Made {
    /// The state whole.
    State(Json),
    /// The patch from the version the client holds.
    Patch(Json),
}

impl Made {
    pub fn ack(&self) -> JoinAck<'_> {
        match self {
            Self::State(state) => JoinAck::joined(state),
            Self::Patch(patch) => JoinAck::patched(patch),
        }
    }
}

/// One tournament's recent states, oldest first, and what was made of the newest.
#[derive(Default)]
struct Recent {
    states: VecDeque<(Instant, Snapshot)>,
    /// The newest state's JSON, once a join needed it.
    state_json: Option<Json>,
    /// Patches to the newest state, by the version they start from (`None`: the patch would
    /// outweigh the state).
    patches: Vec<(i64, Option<Json>)>,
}

impl JoinAcks {
    /// The ack of a join that read `current`, from a client holding `held` (if it said).
    pub async fn made(&self, current: &Snapshot, held: Option<i64>) -> serde_json::Result<Made> {
        let recent = self.tournaments.get_with(current.tournament_id, async { Arc::default() }).await;
        let mut recent = locked(&recent);
        recent.see(current);
        if let Some(held) = held
            && let Some(patch) = recent.patch_from(held)?
        {
            return Ok(Made::Patch(patch));
        }
        recent.state_json().map(Made::State)
    }

    /// A state this node broadcast: kept to patch from if the tournament was joined here lately.
    pub async fn broadcast(&self, state: &Snapshot) {
        if let Some(recent) = self.tournaments.get(&state.tournament_id).await {
            locked(&recent).see(state);
        }
    }
}

impl Recent {
    /// Keeps `state` if it is newer than every state kept, and lets go of those too old.
    fn see(&mut self, state: &Snapshot) {
        let now = Instant::now();
        let newest = self.states.back().map(|(_, kept)| kept);
        if newest.is_none_or(|newest| state.version > newest.version) {
            self.states.push_back((now, state.clone()));
            self.state_json = None;
            self.patches.clear();
        }
        while self.states.len() > MOST_STATES
            || self.states.len() > 1 && self.states.front().is_some_and(|(seen, _)| now - *seen > KEPT_FOR)
        {
            self.states.pop_front();
        }
    }

    fn newest(&self) -> Option<&Snapshot> {
        self.states.back().map(|(_, state)| state)
    }

    fn state_json(&mut self) -> serde_json::Result<Json> {
        if let Some(json) = &self.state_json {
            return Ok(json.clone());
        }
        let newest = self.newest().ok_or_else(|| serde::ser::Error::custom("no state kept"))?;
        let json: Json = serde_json::value::to_raw_value(&**newest)?.into();
        self.state_json = Some(json.clone());
        Ok(json)
    }

    /// The patch from the state of version `held` to the newest, when this node kept that
    /// state and the patch is smaller than the state; `None` otherwise.
    fn patch_from(&mut self, held: i64) -> serde_json::Result<Option<Json>> {
        if let Some((_, made)) = self.patches.iter().find(|(from, _)| *from == held) {
            return Ok(made.clone());
        }
        let Some(newest) = self.newest() else { return Ok(None) };
        let Some(before) = self.states.iter().map(|(_, state)| state).find(|state| state.version == held) else {
            return Ok(None);
        };
        let made = match StatePatch::across(before, newest) {
            Some(patch) => Some(Json::from(serde_json::value::to_raw_value(&patch)?)),
            None => None,
        };
        self.patches.push((held, made.clone()));
        Ok(made)
    }
}

/// The lock of one tournament's recent states. A panic while holding it leaves states that
/// are still in order, so a poisoned lock is taken over.
fn locked(recent: &Mutex<Recent>) -> MutexGuard<'_, Recent> {
    recent.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(version: i64, paused: bool) -> Snapshot {
        let mut state = crate::live::events::tests::state(version);
        state.clock.paused_at = paused.then(chrono::Utc::now);
        Arc::new(state)
    }

    fn patch_of(made: &Made) -> Option<serde_json::Value> {
        match made {
            Made::Patch(json) => Some(serde_json::from_str(json.get()).expect("json")),
            Made::State(_) => None,
        }
    }

    #[tokio::test]
    async fn a_join_holding_a_kept_version_gets_the_patch_and_any_other_the_state() {
        let acks = JoinAcks::default();
        let (first, second) = (state(1, false), state(2, true));
        assert!(patch_of(&acks.made(&first, None).await.expect("made")).is_none(), "no version said: the state");
        acks.broadcast(&second).await;
        let patch = patch_of(&acks.made(&second, Some(1)).await.expect("made")).expect("a patch from 1");
        assert_eq!((patch["fromVersion"].as_i64(), patch["version"].as_i64()), (Some(1), Some(2)));
        let current = patch_of(&acks.made(&second, Some(2)).await.expect("made")).expect("a patch from 2");
        assert_eq!(current["ops"], serde_json::json!([]), "nothing to change for a client that is current");
        for unknown in [0, 3] {
            assert!(patch_of(&acks.made(&second, Some(unknown)).await.expect("made")).is_none(), "{unknown}");
        }
    }

    #[tokio::test]
    async fn what_a_join_is_acked_with_is_made_once_per_state() {
        let acks = JoinAcks::default();
        let (first, second) = (state(1, false), state(2, true));
        acks.made(&first, None).await.expect("made");
        acks.broadcast(&second).await;
        let json = |made: Made| match made {
            Made::State(json) | Made::Patch(json) => json,
        };
        let a = json(acks.made(&second, None).await.expect("made"));
        let b = json(acks.made(&second, None).await.expect("made"));
        assert!(Arc::ptr_eq(&a, &b), "the state's JSON is shared");
        let c = json(acks.made(&second, Some(1)).await.expect("made"));
        let d = json(acks.made(&second, Some(1)).await.expect("made"));
        assert!(Arc::ptr_eq(&c, &d), "the patch is shared");
        acks.made(&first, None).await.expect("an older state read late");
        let e = json(acks.made(&second, None).await.expect("made"));
        assert!(Arc::ptr_eq(&a, &e), "an older state does not replace the newest");
    }

    #[tokio::test]
    async fn a_broadcast_of_a_tournament_nobody_joined_keeps_nothing() {
        let acks = JoinAcks::default();
        acks.broadcast(&state(1, false)).await;
        acks.made(&state(2, true), None).await.expect("made");
        assert!(patch_of(&acks.made(&state(2, true), Some(1)).await.expect("made")).is_none(), "1 was never kept");
    }

    #[test]
    fn at_most_the_newest_states_are_kept() {
        let mut recent = Recent::default();
        for version in 1..=40 {
            recent.see(&state(version, version % 2 == 0));
        }
        assert_eq!(recent.states.len(), MOST_STATES);
        let oldest = 40 - i64::try_from(MOST_STATES).expect("a few") + 1;
        assert_eq!(recent.states.front().map(|(_, kept)| kept.version), Some(oldest));
        assert!(recent.patch_from(20).expect("made").is_none(), "let go of");
        assert!(recent.patch_from(39).expect("made").is_some());
    }
}
