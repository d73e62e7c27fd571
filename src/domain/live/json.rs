//! The LiveState as JSON, serialised once per published state. An answer's `serverTime` is
//! the moment of the answer (clients set their clock's offset by it, and stamp the commands
//! they make offline with it), so the text is kept as its members, and each answer writes the
//! current time in place of the one member `serverTime` ([`Stamped`]): a venue's phones
//! reloading the snapshot, or thousands of sockets joining, cost a copy each, not a
//! serialisation of 65 KB. `GET /tournaments/{id}/live` and a `join`'s ack both answer so.
//!
//! The same holds compressed: both parts are also kept as gzip's deflate data, each ended on
//! a byte boundary, and a gzip answer is its header, the head, the time as a stored block, the
//! tail and a trailer whose CRC is combined from the parts' (one gzip member, as any client
//! reads it), instead of compressing 65 KB per answer.

use std::collections::HashMap;
use std::fmt;
use std::io::Write;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use chrono::{DateTime, Utc};
use flate2::write::DeflateEncoder;
use flate2::{Compression, Crc};
use floor_actors::live::{LiveState, Snapshot};
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use uuid::Uuid;

/// The member whose value each answer writes.
const SERVER_TIME: &str = "serverTime";

/// The key whose value each answer stamps, as it is written.
const SERVER_TIME_KEY: &[u8] = b"\"serverTime\":";

/// A LiveState's JSON made once, whose `serverTime` each answer writes: the object's members
/// in order, each value kept as its JSON text. Serialising [`Self::at`] writes the text as it
/// is, and the moment of the answer as `serverTime`: byte for byte the state serialised then.
pub struct Stamped {
    members: Vec<(Box<str>, Box<RawValue>)>,
}

impl Stamped {
    /// Serialises `state` (once: each answer then copies the text).
    pub fn of(state: &LiveState) -> serde_json::Result<Self> {
        Self::read(&serde_json::to_vec(state)?)
    }

    /// The members of a serialised LiveState.
    fn read(json: &[u8]) -> serde_json::Result<Self> {
        let Members(members) = serde_json::from_slice(json)?;
        if !members.iter().any(|(key, _)| &**key == SERVER_TIME) {
            return Err(missing("no serverTime in a serialised LiveState"));
        }
        Ok(Self { members })
    }

    /// The state as of `now`: what an answer sends.
    pub fn at(&self, now: DateTime<Utc>) -> StampedAt<'_> {
        StampedAt { stamped: self, now }
    }

    /// The text every answer writes after the value of `serverTime`: the members after it and
    /// the object's closing brace.
    pub fn tail(&self) -> serde_json::Result<Vec<u8>> {
        let after = self.members.iter().skip_while(|(key, _)| &**key != SERVER_TIME).skip(1);
        let mut tail = Vec::with_capacity(self.bytes());
        for (key, value) in after {
            tail.push(b',');
            serde_json::to_writer(&mut tail, key)?;
            tail.push(b':');
            tail.extend_from_slice(value.get().as_bytes());
        }
        tail.push(b'}');
        Ok(tail)
    }

    /// The bytes of JSON kept.
    pub fn bytes(&self) -> usize {
        // The braces; the quotes, the colon and the comma beside each key and value.
        2 + self.members.iter().map(|(key, value)| key.len() + value.get().len() + 4).sum::<usize>()
    }
}

/// A [`Stamped`] state as of one answer's moment, serialised as the LiveState it is.
pub struct StampedAt<'a> {
    stamped: &'a Stamped,
    now: DateTime<Utc>,
}

impl Serialize for StampedAt<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.stamped.members.len()))?;
        for (key, value) in &self.stamped.members {
            if &**key == SERVER_TIME {
                map.serialize_entry(key, &self.now)?;
            } else {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

impl fmt::Debug for StampedAt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StampedAt").field("members", &self.stamped.members.len()).field("now", &self.now).finish()
    }
}

/// A JSON object's members in order, each value as its text (a map would sort them).
struct Members(Vec<(Box<str>, Box<RawValue>)>);

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct InOrder;
        impl<'de> Visitor<'de> for InOrder {
            type Value = Members;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Members, M::Error> {
                let mut members = Vec::with_capacity(map.size_hint().unwrap_or(16));
                while let Some(member) = map.next_entry()? {
                    members.push(member);
                }
                Ok(Members(members))
            }
        }
        deserializer.deserialize_map(InOrder)
    }
}

/// Tournaments whose text is kept; beyond it the cache starts again (a node serves a few
/// live tournaments at a time, each text about the LiveState's size).
const KEPT: usize = 256;

/// The text of each tournament's latest published state read over HTTP.
#[derive(Default)]
pub struct LiveJson {
    texts: Mutex<HashMap<Uuid, Arc<Text>>>,
}

/// One state's JSON, plain ([`Stamped`]) and deflated in two parts around the value of
/// `serverTime`.
struct Text {
    /// The state it was made from: a state published again (a new `Arc`) is serialised again.
    of: Snapshot,
    stamped: Stamped,
    /// The lengths of the plain text before the value of `serverTime` and after it.
    head_len: usize,
    tail_len: usize,
    /// `head` deflated, ending in a sync flush (not final, byte-aligned).
    deflated_head: Bytes,
    /// `tail` deflated, ending in the final block.
    deflated_tail: Bytes,
    head_crc: Crc,
    tail_crc: Crc,
}

/// gzip's member header: deflate, no flags, no time, unknown system.
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255];

impl LiveJson {
    /// The JSON of `state` with `serverTime` set to `now`, byte for byte what serialising
    /// `LiveState { server_time: now, ..state }` gives.
    pub fn render(&self, state: &Snapshot, now: DateTime<Utc>) -> Result<Bytes, serde_json::Error> {
        let text = self.text(state)?;
        let mut body = Vec::with_capacity(text.head_len + 40 + text.tail_len);
        serde_json::to_writer(&mut body, &text.stamped.at(now))?;
        Ok(Bytes::from(body))
    }

    /// [`Self::render`]'s answer in gzip.
    pub fn render_gzip(&self, state: &Snapshot, now: DateTime<Utc>) -> Result<Bytes, serde_json::Error> {
        let text = self.text(state)?;
        let stamp = serde_json::to_vec(&now)?;
        let mut stamp_crc = Crc::new();
        stamp_crc.update(&stamp);
        let mut crc = Crc::new();
        for part in [&text.head_crc, &stamp_crc, &text.tail_crc] {
            crc.combine(part);
        }
        let length = text.head_len + stamp.len() + text.tail_len;
        let mut body = Vec::with_capacity(text.deflated_head.len() + text.deflated_tail.len() + stamp.len() + 28);
        body.extend_from_slice(&GZIP_HEADER);
        body.extend_from_slice(&text.deflated_head);
        // A stored block, not final: the head ended on a byte boundary, so its 3 header bits
        // and padding are one zero byte; then LEN and its complement.
        let stamp_len = u16::try_from(stamp.len()).map_err(|_| missing("a serverTime of over 64 KB"))?;
        body.push(0);
        body.extend_from_slice(&stamp_len.to_le_bytes());
        body.extend_from_slice(&(!stamp_len).to_le_bytes());
        body.extend_from_slice(&stamp);
        body.extend_from_slice(&text.deflated_tail);
        body.extend_from_slice(&crc.sum().to_le_bytes());
        // ISIZE is the length modulo 2^32.
        body.extend_from_slice(&(length as u32).to_le_bytes());
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

/// Serialises `state`, reads its members and cuts the text around the value of its
/// `serverTime` for gzip. The key is the fourth of the object, after the id, the version and
/// the status, so its first occurrence is the state's own (no name or text a user typed comes
/// before it).
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
    let stamped = Stamped::read(&json)?;
    let (head, tail) = (&json[..value_start], &json[value_end..]);
    let crc_of = |part: &[u8]| {
        let mut crc = Crc::new();
        crc.update(part);
        crc
    };
    Ok(Text {
        of: state.clone(),
        stamped,
        deflated_head: deflate(head, false).map_err(serde_json::Error::io)?,
        deflated_tail: deflate(tail, true).map_err(serde_json::Error::io)?,
        head_crc: crc_of(head),
        tail_crc: crc_of(tail),
        head_len: head.len(),
        tail_len: tail.len(),
    })
}

/// `part` as raw deflate data: ending in the final block when `last`, else in a sync flush
/// (not final, on a byte boundary), so that more deflate data may follow it.
fn deflate(part: &[u8], last: bool) -> std::io::Result<Bytes> {
    let mut encoder = DeflateEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(part)?;
    if last {
        return Ok(Bytes::from(encoder.finish()?));
    }
    encoder.flush()?;
    // Dropping the encoder would finish the stream into its buffer: take the buffer first.
    Ok(Bytes::from(std::mem::take(encoder.get_mut())))
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

    fn gunzip(bytes: &[u8]) -> Vec<u8> {
        use std::io::Read;
        let mut plain = Vec::new();
        // The decoder checks the trailer: the combined CRC and the length.
        flate2::read::GzDecoder::new(bytes).read_to_end(&mut plain).expect("valid gzip");
        plain
    }

    #[test]
    fn a_gzip_answer_is_one_valid_member_of_the_same_text() {
        let json = LiveJson::default();
        let state = state(7, "final");
        let first = Utc.with_ymd_and_hms(2026, 11, 24, 19, 0, 0).single().expect("a time");
        let later = first + chrono::Duration::nanoseconds(987_654_321);
        for now in [first, later] {
            let gzipped = json.render_gzip(&state, now).expect("gzip");
            assert_eq!(gunzip(&gzipped), serialised_at(&state, now));
        }
    }

    #[test]
    fn a_stamped_state_is_the_state_serialised_at_the_moment_it_is_given() {
        let state = state(7, "final");
        let stamped = Stamped::of(&state).expect("json");
        let now = Utc.with_ymd_and_hms(2026, 11, 24, 19, 0, 0).single().expect("a time");
        let later = now + chrono::Duration::minutes(20);
        for moment in [now, later] {
            assert_eq!(serde_json::to_vec(&stamped.at(moment)).expect("json"), serialised_at(&state, moment));
        }
        let length = serialised_at(&state, now).len();
        assert!((length..length + 64).contains(&stamped.bytes()), "{} for {length}", stamped.bytes());
    }

    #[test]
    fn a_stamped_state_s_tail_is_what_every_answer_ends_with_after_its_time() {
        let state = state(7, "final");
        let stamped = Stamped::of(&state).expect("json");
        let now = Utc.with_ymd_and_hms(2026, 11, 24, 19, 0, 0).single().expect("a time");
        let answer = serialised_at(&state, now);
        let tail = stamped.tail().expect("json");
        let stamp = serde_json::to_vec(&now).expect("json");
        let after_stamp =
            answer.windows(stamp.len()).position(|window| window == stamp).expect("stamped") + stamp.len();
        assert_eq!(&answer[after_stamp..], tail.as_slice());
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
        assert_eq!(gunzip(&json.render_gzip(&again, now).expect("gzip")), serialised_at(&again, now));
    }
}
