//! The tournament clock: which segment runs, since when, and whether it is paused. Clients
//! compute the time left from these fields; the server only moves them.

use std::fmt;

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use serde::{Deserialize, Serialize};

use super::structure::Segment;

/// Times are kept to the millisecond, as the database and JSON keep them, so a rebuilt
/// actor shows exactly what the old one did.
pub fn to_millis(time: DateTime<Utc>) -> DateTime<Utc> {
    time.duration_trunc(TimeDelta::milliseconds(1)).unwrap_or(time)
}

/// The clock's state as stored and sent to clients.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Clock {
    /// Index of the running segment in the structure; changes on a level press or when a
    /// segment runs out.
    pub current_level_idx: usize,
    /// When the current segment started, shifted forward by any pause so paused time never
    /// counts.
    pub level_started_at: DateTime<Utc>,
    /// When the clock was paused; `None` while it runs.
    pub paused_at: Option<DateTime<Utc>>,
}

/// A level press: one segment forward or back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Next,
    Prev,
}

/// Why a clock operation was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockError {
    /// The step would leave the structure (back from the first or on from the last segment).
    InvalidLevel,
}

impl fmt::Display for ClockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidLevel => f.write_str("there is no segment in that direction"),
        }
    }
}

impl std::error::Error for ClockError {}

impl Clock {
    /// A clock running the first segment from `now`.
    pub fn start(now: DateTime<Utc>) -> Self {
        Self { current_level_idx: 0, level_started_at: now, paused_at: None }
    }

    /// The clock paused at `now`; `None` when it is already paused (a no-op).
    pub fn pause(&self, now: DateTime<Utc>) -> Option<Self> {
        match self.paused_at {
            Some(_) => None,
            None => Some(Self { paused_at: Some(now), ..*self }),
        }
    }

    /// The clock running again at `now`, its segment start moved on by the time it stood
    /// still; `None` when it is running (a no-op).
    pub fn resume(&self, now: DateTime<Utc>) -> Option<Self> {
        let paused_at = self.paused_at?;
        let stood_still = now.signed_duration_since(paused_at).max(TimeDelta::zero());
        let level_started_at = self.level_started_at.checked_add_signed(stood_still).unwrap_or(self.level_started_at);
        Some(Self { level_started_at, paused_at: None, ..*self })
    }

    /// Exactly one segment forward or back. While paused the new segment starts at the moment
    /// of the pause and the clock stays paused; while running it starts at `now`.
    pub fn step(&self, direction: Direction, segments: &[Segment], now: DateTime<Utc>) -> Result<Self, ClockError> {
        let target = match direction {
            Direction::Next => self.current_level_idx.checked_add(1),
            Direction::Prev => self.current_level_idx.checked_sub(1),
        };
        let current_level_idx = target.filter(|index| *index < segments.len()).ok_or(ClockError::InvalidLevel)?;
        Ok(Self { current_level_idx, level_started_at: self.paused_at.unwrap_or(now), paused_at: self.paused_at })
    }

    /// When the current segment runs out, if it will: `None` while paused and on the last
    /// segment, which simply runs on.
    pub fn segment_ends_at(&self, segments: &[Segment]) -> Option<DateTime<Utc>> {
        if self.paused_at.is_some() || self.current_level_idx.checked_add(1)? >= segments.len() {
            return None;
        }
        self.end_of_current(segments)
    }

    /// The clock after every segment that ran out by `now`: each next segment starts exactly
    /// where the previous one ended (no drift however late this runs), stopping at the last
    /// segment. `None` when nothing changed (paused, or the current segment still runs).
    pub fn catch_up(&self, segments: &[Segment], now: DateTime<Utc>) -> Option<Self> {
        let mut clock = *self;
        while let Some(end) = clock.segment_ends_at(segments)
            && end <= now
        {
            clock = Self { current_level_idx: clock.current_level_idx + 1, level_started_at: end, paused_at: None };
        }
        (clock != *self).then_some(clock)
    }

    /// The clock as it stood at `at`, for a command stated to have happened then, given that
    /// only the clock's own moves came after `at` (a command after it conflicts, and is never
    /// rewound): the segments it moved on to after `at` are taken back, each starting where
    /// the one before it started, and those that ran out by `at` moved on.
    pub fn as_of(&self, segments: &[Segment], at: DateTime<Utc>) -> Self {
        let mut clock = *self;
        while clock.paused_at.is_none() && clock.level_started_at > at {
            let Some(previous) = clock.current_level_idx.checked_sub(1) else { break };
            let Some(ran) = segments.get(previous).and_then(|segment| TimeDelta::try_minutes(segment.duration_min()))
            else {
                break;
            };
            clock =
                Self { current_level_idx: previous, level_started_at: clock.level_started_at - ran, paused_at: None };
        }
        clock.catch_up(segments, at).unwrap_or(clock)
    }

    /// Time left in the current segment at `now` (at the pause while paused), never negative.
    pub fn remaining(&self, segments: &[Segment], now: DateTime<Utc>) -> TimeDelta {
        let as_of = self.paused_at.unwrap_or(now);
        self.end_of_current(segments)
            .map(|end| end.signed_duration_since(as_of).max(TimeDelta::zero()))
            .unwrap_or_default()
    }

    /// The current segment's start plus its duration, whatever the state.
    fn end_of_current(&self, segments: &[Segment]) -> Option<DateTime<Utc>> {
        let segment = segments.get(self.current_level_idx)?;
        self.level_started_at.checked_add_signed(TimeDelta::try_minutes(segment.duration_min())?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(minutes: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_790_000_000, 0).expect("a time") + TimeDelta::minutes(minutes)
    }

    fn level(duration_min: i64) -> Segment {
        Segment::Level { duration_min, small_blind: 100, big_blind: 200, ante: None, note: None }
    }

    /// 20-minute level, 10-minute break, 20-minute level, 30-minute level.
    fn segments() -> Vec<Segment> {
        vec![level(20), Segment::Break { duration_min: 10, note: None }, level(20), level(30)]
    }

    fn clock(current_level_idx: usize, started: i64, paused: Option<i64>) -> Clock {
        Clock { current_level_idx, level_started_at: at(started), paused_at: paused.map(at) }
    }

    #[test]
    fn a_clock_starts_running_the_first_segment() {
        assert_eq!(Clock::start(at(0)), clock(0, 0, None));
    }

    #[test]
    fn pausing_a_paused_clock_and_resuming_a_running_one_change_nothing() {
        assert_eq!(clock(1, 0, Some(5)).pause(at(7)), None);
        assert_eq!(clock(1, 0, None).resume(at(7)), None);
    }

    #[test]
    fn pausing_stamps_the_moment() {
        assert_eq!(clock(1, 0, None).pause(at(7)), Some(clock(1, 0, Some(7))));
    }

    #[test]
    fn resuming_moves_the_segment_start_by_the_paused_time() {
        assert_eq!(clock(1, 10, Some(15)).resume(at(40)), Some(clock(1, 35, None)));
        let resumed = clock(0, 0, Some(5)).resume(at(40)).expect("was paused");
        assert_eq!(resumed.remaining(&segments(), at(40)), TimeDelta::minutes(15));
    }

    #[test]
    fn a_level_press_moves_exactly_one_step_and_restarts_the_segment() {
        let running = clock(1, 0, None);
        assert_eq!(running.step(Direction::Next, &segments(), at(3)), Ok(clock(2, 3, None)));
        assert_eq!(running.step(Direction::Prev, &segments(), at(3)), Ok(clock(0, 3, None)));
    }

    #[test]
    fn stepping_out_of_the_structure_is_an_invalid_level() {
        assert_eq!(clock(0, 0, None).step(Direction::Prev, &segments(), at(1)), Err(ClockError::InvalidLevel));
        assert_eq!(clock(3, 0, None).step(Direction::Next, &segments(), at(1)), Err(ClockError::InvalidLevel));
        assert_eq!(clock(0, 0, None).step(Direction::Next, &[], at(1)), Err(ClockError::InvalidLevel));
    }

    #[test]
    fn a_level_press_while_paused_starts_the_new_segment_at_the_pause() {
        let paused = clock(1, 0, Some(4));
        assert_eq!(paused.step(Direction::Next, &segments(), at(9)), Ok(clock(2, 4, Some(4))));
        assert_eq!(paused.step(Direction::Prev, &segments(), at(9)), Ok(clock(0, 4, Some(4))));
    }

    #[test]
    fn a_segment_ends_after_its_duration_unless_paused_or_last() {
        assert_eq!(clock(0, 0, None).segment_ends_at(&segments()), Some(at(20)));
        assert_eq!(clock(1, 20, None).segment_ends_at(&segments()), Some(at(30)));
        assert_eq!(clock(1, 20, Some(25)).segment_ends_at(&segments()), None);
        assert_eq!(clock(3, 50, None).segment_ends_at(&segments()), None);
        assert_eq!(clock(0, 0, None).segment_ends_at(&[]), None);
    }

    #[test]
    fn catching_up_chains_segments_on_their_exact_ends() {
        // 20 + 10 + 20 = 50 minutes in: the last segment began at exactly minute 50.
        assert_eq!(clock(0, 0, None).catch_up(&segments(), at(57)), Some(clock(3, 50, None)));
        // A boundary reached exactly counts as over.
        assert_eq!(clock(0, 0, None).catch_up(&segments(), at(30)), Some(clock(2, 30, None)));
        assert_eq!(clock(0, 0, None).catch_up(&segments(), at(20)), Some(clock(1, 20, None)));
    }

    #[test]
    fn catching_up_keeps_the_start_of_the_segment_not_the_moment_it_ran() {
        let late = at(25) + TimeDelta::seconds(13);
        assert_eq!(clock(0, 0, None).catch_up(&segments(), late), Some(clock(1, 20, None)));
    }

    #[test]
    fn catching_up_stops_at_the_last_segment() {
        assert_eq!(clock(0, 0, None).catch_up(&segments(), at(10_000)), Some(clock(3, 50, None)));
        assert_eq!(clock(3, 50, None).catch_up(&segments(), at(10_000)), None);
    }

    #[test]
    fn catching_up_changes_nothing_before_the_end_or_while_paused() {
        assert_eq!(clock(0, 0, None).catch_up(&segments(), at(19)), None);
        assert_eq!(clock(0, 0, Some(5)).catch_up(&segments(), at(500)), None);
    }

    #[test]
    fn the_clock_as_of_a_past_moment_takes_back_the_segments_begun_since() {
        // At minute 57 the clock ran the last segment from minute 50; at minute 25 it ran the
        // break from minute 20, and at minute 5 the first level from minute 0.
        let now = clock(3, 50, None);
        assert_eq!(now.as_of(&segments(), at(25)), clock(1, 20, None));
        assert_eq!(now.as_of(&segments(), at(5)), clock(0, 0, None));
        // A boundary counts as the next segment's start, as catching up does.
        assert_eq!(now.as_of(&segments(), at(30)), clock(2, 30, None));
        assert_eq!(now.as_of(&segments(), at(50)), clock(3, 50, None));
    }

    #[test]
    fn the_clock_as_of_a_later_moment_moves_on_as_the_timer_would() {
        assert_eq!(clock(0, 0, None).as_of(&segments(), at(25)), clock(1, 20, None));
        assert_eq!(clock(0, 0, None).as_of(&segments(), at(10)), clock(0, 0, None));
    }

    #[test]
    fn a_paused_clock_is_the_same_at_any_moment_after_its_pause() {
        assert_eq!(clock(2, 30, Some(35)).as_of(&segments(), at(36)), clock(2, 30, Some(35)));
        assert_eq!(clock(2, 30, Some(35)).as_of(&segments(), at(90)), clock(2, 30, Some(35)));
    }

    #[test]
    fn rewinding_stops_at_the_first_segment() {
        assert_eq!(clock(0, 10, None).as_of(&segments(), at(5)), clock(0, 10, None));
        assert_eq!(clock(1, 20, None).as_of(&[], at(5)), clock(1, 20, None));
    }

    #[test]
    fn a_resumed_clock_rewinds_along_its_shifted_segments() {
        // Paused at 5 for 10 minutes: the first level ends at 30, the break at 40.
        let resumed = clock(0, 0, Some(5)).resume(at(15)).expect("was paused");
        let later = resumed.catch_up(&segments(), at(45)).expect("moved on");
        assert_eq!(later, clock(2, 40, None));
        assert_eq!(later.as_of(&segments(), at(33)), clock(1, 30, None));
        assert_eq!(later.as_of(&segments(), at(20)), resumed);
    }

    #[test]
    fn remaining_counts_down_to_zero_and_stands_still_while_paused() {
        assert_eq!(clock(0, 0, None).remaining(&segments(), at(0)), TimeDelta::minutes(20));
        assert_eq!(clock(0, 0, None).remaining(&segments(), at(12)), TimeDelta::minutes(8));
        assert_eq!(clock(0, 0, None).remaining(&segments(), at(25)), TimeDelta::zero());
        assert_eq!(clock(0, 0, Some(5)).remaining(&segments(), at(18)), TimeDelta::minutes(15));
        assert_eq!(clock(3, 50, None).remaining(&segments(), at(60)), TimeDelta::minutes(20));
        assert_eq!(clock(3, 50, None).remaining(&segments(), at(90)), TimeDelta::zero());
    }

    #[test]
    fn the_clock_serialises_in_camel_case_and_directions_read_in_lowercase() {
        let json = serde_json::to_value(clock(2, 0, Some(5))).expect("serialises");
        assert_eq!(json["currentLevelIdx"], 2);
        assert_eq!(json["levelStartedAt"], serde_json::to_value(at(0)).expect("serialises"));
        assert_eq!(json["pausedAt"], serde_json::to_value(at(5)).expect("serialises"));
        assert_eq!(serde_json::from_str::<Direction>("\"next\"").expect("reads"), Direction::Next);
        assert_eq!(serde_json::from_str::<Direction>("\"prev\"").expect("reads"), Direction::Prev);
        assert!(serde_json::from_str::<Direction>("\"Next\"").is_err());
    }
}
