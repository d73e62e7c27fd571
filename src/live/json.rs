//! The LiveState as JSON, serialised once per published state. An answer's `serverTime` is
//! the moment of the answer (clients set their clock's offset by it), so the text is kept in
//! two parts around that value, and each answer writes the current time between them: a
//! venue's phones reloading the snapshot cost a copy each, not a serialisation of 65 KB.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use chrono::{DateTime, Utc};
use floor_actors::live::Snapshot;
use uuid::Uuid;

/// The key whose value each answer stamps.
const SERVER_TIME_KEY: &[u8] = b"\"serverTime\":";

/// Tournaments whose text is kept; beyond it the cache starts again (a node serves a few
/// live tournaments at a time, each text about the LiveState's size).
const KEPT: usize = 256;

/// The text of each tournament's latest published state read over HTTP.
#[derive(Default)]
pub struct LiveJson {
    texts: Mutex<HashMap<Uuid, Arc<Text>>>,
}

/// One state's JSON, split around the value of `serverTime`.
struct Text {
    /// The state it was made from: a state published again (a new `Arc`) is serialised again.
    of: Snapshot,
    head: Bytes,
    tail: Bytes,
}

impl LiveJson {
    /// The JSON of `state` with `serverTime` set to `now`, byte for byte what serialising
    /// `LiveState { server_time: now, ..state }` gives.
    pub fn render(&self, state: &Snapshot, now: DateTime<Utc>) -> Result<Bytes, serde_json::Error> {
        let text = self.text(state)?;
        let stamp = serde_json::to_vec(&now)?;
        let mut body = Vec::with_capacity(text.head.len() + stamp.len() + text.tail.len());
        body.extend_from_slice(&text.head);
        body.extend_from_slice(&stamp);
        body.extend_from_slice(&text.tail);
        Ok(Bytes::from(body))
    }

    fn text(&self, state: &Snapshot) -> Result<Arc<Text>, serde_json::Error> {
        let kept =
            self.texts.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).get(&state.tournament_id).cloned();
        if let Some(text) = kept.filter(|text| Arc::ptr_eq(&text.of, state)) {
            return Ok(text);
        }
        let text = Arc::new(split(state)?);
        let mut texts = self.texts.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if texts.len() >= KEPT && !texts.contains_key(&state.tournament_id) {
            texts.clear();
        }
        texts.insert(state.tournament_id, text.clone());
        Ok(text)
    }
}

/// Serialises `state` and cuts the text around the value of its `serverTime`. The key is the
/// fourth of the object, after the id, the version and the status, so its first occurrence
/// is the state's own (no name or text a user typed comes before it).
fn split(state: &Snapshot) -> Result<Text, serde_json::Error> {
    let json = serde_json::to_vec(state.as_ref())?;
    let value_start = json
        .windows(SERVER_TIME_KEY.len())
        .position(|window| window == SERVER_TIME_KEY)
        .map(|at| at + SERVER_TIME_KEY.len())
        .ok_or_else(|| missing("no serverTime in a serialised LiveState"))?;
    // The value is a quoted RFC 3339 time: no quote inside it.
    let value_end = json[value_start + 1..]
        .iter()
        .position(|byte| *byte == b'"')
        .map(|at| value_start + 1 + at + 1)
        .ok_or_else(|| missing("an unterminated serverTime in a serialised LiveState"))?;
    let json = Bytes::from(json);
    Ok(Text { of: state.clone(), head: json.slice(..value_start), tail: json.slice(value_end..) })
}

fn missing(what: &'static str) -> serde_json::Error {
    serde::de::Error::custom(what)
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use floor_actors::live::LiveState;
    use floor_actors::live::state::ClockView;
    use floor_entities::enums::TournamentStatus;

    use super::*;

    fn state(version: i64, title: &str) -> Snapshot {
        Arc::new(LiveState {
            tournament_id: Uuid::nil(),
            version,
            status: TournamentStatus::Running,
            server_time: Utc.with_ymd_and_hms(2026, 11, 24, 18, 0, 0).single().expect("a time"),
            clock: ClockView { current_level_idx: 3, level_started_at: None, paused_at: None, levels: Vec::new() },
            remaining: version as usize,
            entrants: title.len(),
            chips_in_play: 1_000,
            avg_stack: 10,
            tables: Vec::new(),
            eliminations: Vec::new(),
        })
    }

    fn serialised_at(state: &Snapshot, now: DateTime<Utc>) -> Vec<u8> {
        serde_json::to_vec(&LiveState { server_time: now, ..state.as_ref().clone() }).expect("json")
    }

    #[test]
    fn each_answer_is_the_state_serialised_at_its_own_moment() {
        let json = LiveJson::default();
        let state = state(7, "final");
        let first = Utc.with_ymd_and_hms(2026, 11, 24, 19, 0, 0).single().expect("a time");
        let later = first + chrono::Duration::milliseconds(1_234);
        assert_eq!(json.render(&state, first).expect("json").as_ref(), serialised_at(&state, first).as_slice());
        assert_eq!(json.render(&state, later).expect("json").as_ref(), serialised_at(&state, later).as_slice());
    }

    #[test]
    fn a_state_published_again_is_serialised_again() {
        let json = LiveJson::default();
        let now = Utc::now();
        let before = state(7, "a");
        json.render(&before, now).expect("json");
        let after = state(8, "another");
        assert_eq!(json.render(&after, now).expect("json").as_ref(), serialised_at(&after, now).as_slice());
        // The same version published again is a new state too: nothing but its Arc tells.
        let again = Arc::new(LiveState { entrants: 99, ..after.as_ref().clone() });
        assert_eq!(json.render(&again, now).expect("json").as_ref(), serialised_at(&again, now).as_slice());
    }
}
