//! Blind structures: the segments a clock runs over, and the contract's rules for a valid
//! list (at least one level, positive durations, 0 < small blind <= big blind, blinds never
//! decreasing, no blinds on a break).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The longest segment accepted, in minutes (a day).
pub const MAX_SEGMENT_MINUTES: i64 = 24 * 60;
/// The most segments a structure may have.
pub const MAX_SEGMENTS: usize = 200;
/// The longest note a segment may carry (a colour-up reminder, say), in characters.
pub const MAX_NOTE_CHARS: usize = 140;

/// One segment of the clock, in the JSON shape clients read:
/// `{kind: "level", durationMin, smallBlind, bigBlind, ante?}` or `{kind: "break", durationMin}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Segment {
    #[serde(rename_all = "camelCase")]
    Level {
        duration_min: i64,
        small_blind: i64,
        big_blind: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ante: Option<i64>,
        /// Shown with the segment (on the venue screen): "colour up the 25s".
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    Break {
        duration_min: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
}

impl Segment {
    pub fn duration_min(&self) -> i64 {
        match self {
            Self::Level { duration_min, .. } | Self::Break { duration_min, .. } => *duration_min,
        }
    }
}

/// What is wrong with one place of a levels list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelProblem {
    /// `levels`, `levels[3]`, `levels[3].bigBlind`.
    pub field: String,
    pub problem: String,
}

fn problem(field: String, text: &str) -> LevelProblem {
    LevelProblem { field, problem: text.to_owned() }
}

/// Reads and checks a levels list as a client sent it. Any problem of any kind (shape or
/// rule) is reported with the place it is at; every problem is reported at once.
pub fn parse_levels(levels: &Value) -> Result<Vec<Segment>, Vec<LevelProblem>> {
    let Some(items) = levels.as_array() else {
        return Err(vec![problem("levels".into(), "must be a list of segments")]);
    };
    let mut problems = Vec::new();
    if items.len() > MAX_SEGMENTS {
        problems.push(problem("levels".into(), "has too many segments (at most 200)"));
    }
    let mut segments = Vec::with_capacity(items.len());
    let mut previous_blinds: Option<(i64, i64)> = None;
    for (index, item) in items.iter().enumerate() {
        let Some(object) = item.as_object() else {
            problems.push(problem(format!("levels[{index}]"), "must be an object"));
            continue;
        };
        let mut fields = SegmentFields { index, object, problems: &mut problems };
        let duration = fields.duration();
        let note = fields.note();
        match object.get("kind").and_then(Value::as_str) {
            Some("break") => {
                fields.no_blinds();
                if let Some(duration_min) = duration {
                    segments.push(Segment::Break { duration_min, note });
                }
            }
            Some("level") => {
                let Some((small_blind, big_blind, ante)) = fields.blinds(&mut previous_blinds) else { continue };
                if let Some(duration_min) = duration {
                    segments.push(Segment::Level { duration_min, small_blind, big_blind, ante, note });
                }
            }
            _ => fields.problem("kind", "must be \"level\" or \"break\""),
        }
    }
    if !items.iter().any(|item| item.get("kind").and_then(Value::as_str) == Some("level")) {
        problems.push(problem("levels".into(), "needs at least one level"));
    }
    if problems.is_empty() { Ok(segments) } else { Err(problems) }
}

/// The fields of the segment at `index` of a levels list, each read and checked, a problem
/// noted where it is found.
struct SegmentFields<'a> {
    index: usize,
    object: &'a serde_json::Map<String, Value>,
    problems: &'a mut Vec<LevelProblem>,
}

impl SegmentFields<'_> {
    /// Notes a problem of `field` of this segment.
    fn problem(&mut self, field: &str, text: &str) {
        self.problems.push(problem(format!("levels[{}].{field}", self.index), text));
    }

    /// A number field: absent (or null), a whole number, or something else (`Some(None)`).
    fn integer(&self, field: &str) -> Option<Option<i64>> {
        self.object.get(field).filter(|value| !value.is_null()).map(Value::as_i64)
    }

    /// `durationMin`, required, 1 minute to a day.
    fn duration(&mut self) -> Option<i64> {
        match self.integer("durationMin") {
            Some(Some(minutes)) if (1..=MAX_SEGMENT_MINUTES).contains(&minutes) => Some(minutes),
            Some(Some(_)) => {
                self.problem("durationMin", "must be 1 to 1440 minutes");
                None
            }
            Some(None) => {
                self.problem("durationMin", "must be a whole number of minutes");
                None
            }
            None => {
                self.problem("durationMin", "is required");
                None
            }
        }
    }

    /// `note`, optional: kept trimmed, and none when empty.
    fn note(&mut self) -> Option<String> {
        match self.object.get("note") {
            None | Some(Value::Null) => None,
            // Counted as sent, as the contract's `maxLength` counts it; kept trimmed.
            Some(Value::String(text)) if text.chars().count() <= MAX_NOTE_CHARS => {
                Some(text.trim().to_owned()).filter(|text| !text.is_empty())
            }
            Some(_) => {
                self.problem("note", "must be a text of at most 140 characters");
                None
            }
        }
    }

    /// A break's blinds, which it must not have.
    fn no_blinds(&mut self) {
        for field in ["smallBlind", "bigBlind", "ante"] {
            if self.integer(field).is_some() {
                self.problem(field, "a break has no blinds");
            }
        }
    }

    /// A level's small and big blinds and its ante, when both blinds read: the small not
    /// above the big, neither below the `previous` level's, which they then become.
    fn blinds(&mut self, previous: &mut Option<(i64, i64)>) -> Option<(i64, i64, Option<i64>)> {
        let small = self.blind("smallBlind");
        let big = self.blind("bigBlind");
        let ante = match self.integer("ante") {
            Some(Some(value)) if value >= 0 => Some(value),
            Some(_) => {
                self.problem("ante", "must be a whole number, 0 or more");
                None
            }
            None => None,
        };
        let (Some(small_blind), Some(big_blind)) = (small, big) else { return None };
        if small_blind > big_blind {
            self.problem("smallBlind", "must not exceed the big blind");
        }
        if let Some((previous_small, previous_big)) = *previous
            && (small_blind < previous_small || big_blind < previous_big)
        {
            self.problems.push(problem(format!("levels[{}]", self.index), "blinds must never decrease"));
        }
        *previous = Some((small_blind, big_blind));
        Some((small_blind, big_blind, ante))
    }

    /// One blind of a level: required, positive.
    fn blind(&mut self, field: &str) -> Option<i64> {
        match self.integer(field) {
            Some(Some(value)) if value > 0 => Some(value),
            Some(_) => {
                self.problem(field, "must be a positive whole number");
                None
            }
            None => {
                self.problem(field, "is required for a level");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fields(levels: Value) -> Vec<String> {
        parse_levels(&levels).expect_err("invalid").into_iter().map(|p| p.field).collect()
    }

    #[test]
    fn a_structure_of_levels_and_breaks_is_read_in_order() {
        let levels = json!([
            {"kind": "level", "durationMin": 20, "smallBlind": 100, "bigBlind": 200},
            {"kind": "break", "durationMin": 10},
            {"kind": "level", "durationMin": 20, "smallBlind": 100, "bigBlind": 200, "ante": 25},
        ]);
        assert_eq!(
            parse_levels(&levels),
            Ok(vec![
                Segment::Level { duration_min: 20, small_blind: 100, big_blind: 200, ante: None, note: None },
                Segment::Break { duration_min: 10, note: None },
                Segment::Level { duration_min: 20, small_blind: 100, big_blind: 200, ante: Some(25), note: None },
            ])
        );
    }

    #[test]
    fn segments_serialise_back_to_the_contract_shape() {
        let level = Segment::Level { duration_min: 15, small_blind: 50, big_blind: 100, ante: Some(0), note: None };
        assert_eq!(
            serde_json::to_value(&level).expect("serialises"),
            json!({"kind": "level", "durationMin": 15, "smallBlind": 50, "bigBlind": 100, "ante": 0})
        );
        let pause = Segment::Break { duration_min: 10, note: None };
        assert_eq!(serde_json::to_value(&pause).expect("serialises"), json!({"kind": "break", "durationMin": 10}));
    }

    #[test]
    fn a_segment_may_carry_a_short_note_which_comes_back_as_written() {
        let levels = json!([
            {"kind": "level", "durationMin": 20, "smallBlind": 25, "bigBlind": 50, "note": "  Снимаем фишки по 25  "},
            {"kind": "break", "durationMin": 10, "note": "Colour up the 25s"},
            {"kind": "level", "durationMin": 20, "smallBlind": 50, "bigBlind": 100, "note": ""},
            {"kind": "level", "durationMin": 20, "smallBlind": 50, "bigBlind": 100, "note": null},
        ]);
        let segments = parse_levels(&levels).expect("valid");
        let notes: Vec<Option<&str>> = segments
            .iter()
            .map(|segment| match segment {
                Segment::Level { note, .. } | Segment::Break { note, .. } => note.as_deref(),
            })
            .collect();
        assert_eq!(notes, [Some("Снимаем фишки по 25"), Some("Colour up the 25s"), None, None]);
        let wire = serde_json::to_value(&segments).expect("serialises");
        assert_eq!(wire[1], json!({"kind": "break", "durationMin": 10, "note": "Colour up the 25s"}));
        assert!(wire[2].get("note").is_none(), "no note, no field");
        let longest = "ж".repeat(MAX_NOTE_CHARS);
        assert!(
            parse_levels(
                &json!([{"kind": "level", "durationMin": 5, "smallBlind": 1, "bigBlind": 2, "note": longest}])
            )
            .is_ok()
        );
    }

    #[test]
    fn a_note_is_a_text_of_at_most_140_characters() {
        let too_long = "ж".repeat(MAX_NOTE_CHARS + 1);
        assert_eq!(
            fields(json!([
                {"kind": "level", "durationMin": 5, "smallBlind": 1, "bigBlind": 2, "note": too_long},
                {"kind": "break", "durationMin": 5, "note": 7},
                {"kind": "break", "durationMin": 5, "note": format!(" {} ", "ж".repeat(MAX_NOTE_CHARS - 1))},
            ])),
            ["levels[0].note", "levels[1].note", "levels[2].note"]
        );
        let just_fits = format!(" {} ", "ж".repeat(MAX_NOTE_CHARS - 2));
        assert!(
            parse_levels(
                &json!([{"kind": "level", "durationMin": 5, "smallBlind": 1, "bigBlind": 2, "note": just_fits}])
            )
            .is_ok()
        );
    }

    #[test]
    fn a_structure_needs_a_list_with_at_least_one_level() {
        assert_eq!(fields(json!({})), ["levels"]);
        assert_eq!(fields(json!([])), ["levels"]);
        assert_eq!(fields(json!([{"kind": "break", "durationMin": 10}])), ["levels"]);
    }

    #[test]
    fn every_duration_must_be_positive() {
        assert_eq!(
            fields(json!([
                {"kind": "level", "durationMin": 0, "smallBlind": 1, "bigBlind": 2},
                {"kind": "break", "durationMin": -5},
                {"kind": "level", "smallBlind": 1, "bigBlind": 2},
                {"kind": "level", "durationMin": 1.5, "smallBlind": 1, "bigBlind": 2},
            ])),
            ["levels[0].durationMin", "levels[1].durationMin", "levels[2].durationMin", "levels[3].durationMin"]
        );
    }

    #[test]
    fn a_level_needs_positive_blinds_with_the_small_not_above_the_big() {
        assert_eq!(
            fields(json!([{"kind": "level", "durationMin": 10, "smallBlind": 0, "bigBlind": 2}])),
            ["levels[0].smallBlind"]
        );
        assert_eq!(
            fields(json!([{"kind": "level", "durationMin": 10, "smallBlind": 300, "bigBlind": 200}])),
            ["levels[0].smallBlind"]
        );
        assert_eq!(fields(json!([{"kind": "level", "durationMin": 10, "bigBlind": 200}])), ["levels[0].smallBlind"]);
        assert_eq!(
            fields(json!([{"kind": "level", "durationMin": 10, "smallBlind": 1, "bigBlind": 2, "ante": -1}])),
            ["levels[0].ante"]
        );
        assert!(
            parse_levels(&json!([{"kind": "level", "durationMin": 10, "smallBlind": 200, "bigBlind": 200}])).is_ok()
        );
    }

    #[test]
    fn blinds_never_decrease_even_across_a_break() {
        assert_eq!(
            fields(json!([
                {"kind": "level", "durationMin": 10, "smallBlind": 100, "bigBlind": 200},
                {"kind": "break", "durationMin": 10},
                {"kind": "level", "durationMin": 10, "smallBlind": 100, "bigBlind": 150},
            ])),
            ["levels[2]"]
        );
    }

    #[test]
    fn a_break_carries_no_blinds_and_kinds_are_closed() {
        assert_eq!(
            fields(json!([
                {"kind": "level", "durationMin": 10, "smallBlind": 1, "bigBlind": 2},
                {"kind": "break", "durationMin": 10, "bigBlind": 4},
                {"kind": "pause", "durationMin": 10},
                "level",
            ])),
            ["levels[1].bigBlind", "levels[2].kind", "levels[3]"]
        );
    }
}
