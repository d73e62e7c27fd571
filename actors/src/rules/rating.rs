//! Rating arithmetic: season points, skill, xp levels and tiers, the displayed skill, and the
//! from-scratch rebuild of a player's profile out of their results.

use std::fmt;

/// Skill as players see it: `1 + 9 * skill`, rounded to one decimal (raw 0..1 becomes 1.0..10.0).
pub fn displayed_skill(skill: f64) -> f64 {
    (10.0 * (1.0 + 9.0 * skill)).round() / 10.0
}

/// The tier of `level`: the key of the tier with the highest `min_level` not above it.
/// `tiers` are `(key, min_level)` pairs in any order.
pub fn tier_for_level<'a>(tiers: impl IntoIterator<Item = (&'a str, i32)>, level: i32) -> Option<&'a str> {
    tiers
        .into_iter()
        .filter(|(_, min_level)| *min_level <= level)
        .max_by_key(|(_, min_level)| *min_level)
        .map(|(key, _)| key)
}

/// The highest level a player can reach; the level search stops here.
pub const MAX_LEVEL: i32 = 1000;

/// The platform's rating settings. Changes apply to new awards only.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RatingConfig {
    /// Multiplier of the season points formula.
    pub points_base: f64,
    /// The fewest points a participation earns.
    pub min_points: i32,
    /// Base of the xp needed for a level.
    pub xp_level_base: f64,
    /// Exponent of the xp needed for a level.
    pub xp_level_exponent: f64,
    /// Skill smoothing: how much one result moves the skill.
    pub skill_alpha: f64,
    /// A new player's skill (displayed as 5.0).
    pub skill_initial: f64,
}

impl Default for RatingConfig {
    fn default() -> Self {
        Self {
            points_base: 10.0,
            min_points: 1,
            xp_level_base: 50.0,
            xp_level_exponent: 1.5,
            skill_alpha: 0.1,
            skill_initial: 0.4444,
        }
    }
}

/// A place that cannot exist in its field (or a field of nobody).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RangeError {
    pub field_size: i32,
    pub place: i32,
}

impl fmt::Display for RangeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "place {} is outside 1..={}", self.place, self.field_size)
    }
}

impl std::error::Error for RangeError {}

/// Season points (also the xp awarded) for `place` in a field of `field_size` players who
/// played: `round(points_base * sqrt(N) * (N - place + 1) / N)`, at least `min_points`. Bigger
/// fields pay more, and every participation pays something.
pub fn season_points(config: &RatingConfig, field_size: i32, place: i32) -> Result<i32, RangeError> {
    if field_size <= 0 || !(1..=field_size).contains(&place) {
        return Err(RangeError { field_size, place });
    }
    let n = f64::from(field_size);
    let points = (config.points_base * n.sqrt() * f64::from(field_size - place + 1) / n).round();
    Ok((points as i32).max(config.min_points))
}

/// How well `place` did in a field of `field_size`: 1 for the winner down to 0 for the last;
/// 1 for a field of one, where winning is all there was.
pub fn performance(field_size: i32, place: i32) -> f64 {
    if field_size <= 1 {
        return 1.0;
    }
    f64::from(field_size - place) / f64::from(field_size - 1)
}

/// The skill after one result: exponential smoothing of performances,
/// `previous + alpha * (performance - previous)`, kept inside 0..=1. Order matters, which is
/// why profiles are rebuilt in chronological order.
pub fn next_skill(alpha: f64, previous: f64, performance: f64) -> f64 {
    (previous + alpha * (performance - previous)).clamp(0.0, 1.0)
}

/// The xp needed to reach `level`: `round(xp_level_base * (level - 1) ^ xp_level_exponent)`;
/// nothing for level 1 (or below).
pub fn reach_xp(config: &RatingConfig, level: i32) -> i64 {
    if level <= 1 {
        return 0;
    }
    (config.xp_level_base * f64::from(level - 1).powf(config.xp_level_exponent)).round() as i64
}

/// The level `xp` reaches: the largest level in 1..=MAX_LEVEL whose threshold is not above it
/// (1 for no xp). Thresholds grow with the level, so the search halves the range.
pub fn level_for_xp(config: &RatingConfig, xp: i64) -> i32 {
    if xp <= 0 {
        return 1;
    }
    // `low` always reaches; everything above `high` never does.
    let (mut low, mut high) = (1, MAX_LEVEL);
    while low < high {
        let middle = low + (high - low + 1) / 2;
        if reach_xp(config, middle) <= xp {
            low = middle;
        } else {
            high = middle - 1;
        }
    }
    low
}

/// One result of a player, as the rebuild replays it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlayedResult {
    /// Players who played that tournament.
    pub field_size: i32,
    pub place: i32,
    /// The xp the result awarded when it was confirmed (kept, not recomputed).
    pub xp: i32,
    /// The skill smoothing in force when the result was awarded: a later change of the
    /// configuration applies to new awards only.
    pub skill_alpha: f64,
}

/// A player's rating profile as their results make it.
#[derive(Clone, Debug, PartialEq)]
pub struct RebuiltProfile {
    pub xp: i64,
    pub level: i32,
    /// Raw skill, 0..=1.
    pub skill: f64,
    pub games_played: i32,
    pub wins: i32,
    /// `(skill before, skill after)` of each result, in the order given: what the results
    /// list shows as `skillBefore` and `skillAfter`.
    pub skills: Vec<(f64, f64)>,
}

/// The profile out of `results` in chronological order, replayed from a fresh profile.
/// Skill depends on order, so a profile is always rebuilt from scratch, never patched.
pub fn rebuild_profile(config: &RatingConfig, results: &[PlayedResult]) -> RebuiltProfile {
    let mut skill = config.skill_initial;
    let mut skills = Vec::with_capacity(results.len());
    for result in results {
        let before = skill;
        skill = next_skill(result.skill_alpha, skill, performance(result.field_size, result.place));
        skills.push((before, skill));
    }
    let xp = results.iter().map(|result| i64::from(result.xp)).sum();
    let count = |played: usize| i32::try_from(played).unwrap_or(i32::MAX);
    RebuiltProfile {
        xp,
        level: level_for_xp(config, xp),
        skill,
        games_played: count(results.len()),
        wins: count(results.iter().filter(|result| result.place == 1).count()),
        skills,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: RatingConfig = RatingConfig {
        points_base: 10.0,
        min_points: 1,
        xp_level_base: 50.0,
        xp_level_exponent: 1.5,
        skill_alpha: 0.1,
        skill_initial: 0.4444,
    };

    fn points(field_size: i32, place: i32) -> i32 {
        season_points(&CONFIG, field_size, place).expect("a place in the field")
    }

    fn close(actual: f64, expected: f64) {
        assert!((actual - expected).abs() < 1e-9, "{actual} is not {expected}");
    }

    #[test]
    fn the_defaults_are_the_platform_settings() {
        assert_eq!(RatingConfig::default(), CONFIG);
    }

    #[test]
    fn season_points_grow_with_the_field_and_the_place() {
        assert_eq!(points(1, 1), 10);
        assert_eq!([1, 2, 3, 4].map(|place| points(4, place)), [20, 15, 10, 5]);
        assert_eq!(points(9, 1), 30);
        assert_eq!(points(9, 9), 3);
        assert_eq!(points(100, 1), 100);
        assert_eq!(points(100, 100), 1);
    }

    #[test]
    fn season_points_never_fall_below_the_minimum() {
        let generous = RatingConfig { min_points: 5, ..CONFIG };
        assert_eq!(season_points(&generous, 9, 9), Ok(5));
        assert_eq!(season_points(&generous, 4, 4), Ok(5));
        assert_eq!(season_points(&generous, 4, 3), Ok(10));
        let tiny = RatingConfig { points_base: 0.01, ..CONFIG };
        assert_eq!(season_points(&tiny, 100, 100), Ok(1));
    }

    #[test]
    fn a_place_outside_the_field_is_a_range_error() {
        for (field_size, place) in [(0, 1), (0, 0), (-3, 1), (5, 0), (5, 6), (5, -1)] {
            assert_eq!(season_points(&CONFIG, field_size, place), Err(RangeError { field_size, place }));
        }
        assert_eq!(RangeError { field_size: 5, place: 6 }.to_string(), "place 6 is outside 1..=5");
    }

    #[test]
    fn performance_runs_from_one_for_the_winner_to_zero_for_the_last() {
        assert_eq!(performance(1, 1), 1.0);
        assert_eq!(performance(5, 1), 1.0);
        assert_eq!(performance(5, 3), 0.5);
        assert_eq!(performance(5, 5), 0.0);
    }

    #[test]
    fn skill_moves_a_share_of_the_way_to_the_performance() {
        close(next_skill(0.1, 0.4444, 1.0), 0.49996);
        close(next_skill(0.1, 0.5, 0.0), 0.45);
        close(next_skill(0.1, 0.5, 0.5), 0.5);
    }

    #[test]
    fn skill_stays_between_zero_and_one() {
        assert_eq!(next_skill(1.5, 0.5, 1.0), 1.0);
        assert_eq!(next_skill(1.5, 0.5, 0.0), 0.0);
        assert_eq!(next_skill(0.1, 1.2, 1.0), 1.0);
        assert_eq!(next_skill(0.1, -0.2, 0.0), 0.0);
    }

    #[test]
    fn the_xp_for_a_level_grows_by_the_power_rule() {
        assert_eq!(reach_xp(&CONFIG, 1), 0);
        assert_eq!(reach_xp(&CONFIG, 0), 0);
        assert_eq!(reach_xp(&CONFIG, -4), 0);
        assert_eq!(reach_xp(&CONFIG, 2), 50);
        assert_eq!(reach_xp(&CONFIG, 3), 141);
        assert_eq!(reach_xp(&CONFIG, 4), 260);
        assert_eq!(reach_xp(&CONFIG, 5), 400);
        assert_eq!(reach_xp(&CONFIG, 10), 1350);
    }

    #[test]
    fn the_level_is_the_highest_threshold_reached() {
        assert_eq!(level_for_xp(&CONFIG, -10), 1);
        assert_eq!(level_for_xp(&CONFIG, 0), 1);
        assert_eq!(level_for_xp(&CONFIG, 49), 1);
        assert_eq!(level_for_xp(&CONFIG, 50), 2);
        assert_eq!(level_for_xp(&CONFIG, 140), 2);
        assert_eq!(level_for_xp(&CONFIG, 141), 3);
        assert_eq!(level_for_xp(&CONFIG, 1349), 9);
        assert_eq!(level_for_xp(&CONFIG, 1350), 10);
    }

    #[test]
    fn the_level_stops_at_the_maximum() {
        assert_eq!(level_for_xp(&CONFIG, reach_xp(&CONFIG, MAX_LEVEL)), MAX_LEVEL);
        assert_eq!(level_for_xp(&CONFIG, reach_xp(&CONFIG, MAX_LEVEL) - 1), MAX_LEVEL - 1);
        assert_eq!(level_for_xp(&CONFIG, i64::MAX), MAX_LEVEL);
    }

    #[test]
    fn the_level_search_agrees_with_a_scan_of_every_threshold() {
        for xp in (0..200_000).step_by(37) {
            let scanned = (1..=MAX_LEVEL).rev().find(|level| reach_xp(&CONFIG, *level) <= xp).unwrap_or(1);
            assert_eq!(level_for_xp(&CONFIG, xp), scanned, "{xp} xp");
        }
    }

    #[test]
    fn a_profile_is_rebuilt_from_its_results_in_order() {
        let results = [
            PlayedResult { field_size: 5, place: 1, xp: 100, skill_alpha: 0.1 },
            PlayedResult { field_size: 9, place: 5, xp: 40, skill_alpha: 0.1 },
            PlayedResult { field_size: 3, place: 3, xp: 10, skill_alpha: 0.1 },
        ];
        let profile = rebuild_profile(&CONFIG, &results);
        assert_eq!(profile.xp, 150);
        assert_eq!(profile.level, 3);
        assert_eq!(profile.games_played, 3);
        assert_eq!(profile.wins, 1);
        // 0.4444 + 0.1 * (1 - 0.4444) = 0.49996; + 0.1 * (0.5 - 0.49996) = 0.499964;
        // + 0.1 * (0 - 0.499964) = 0.4499676.
        close(profile.skill, 0.4499676);
        let expected = [(0.4444, 0.49996), (0.49996, 0.499964), (0.499964, 0.4499676)];
        assert_eq!(profile.skills.len(), expected.len());
        for ((before, after), (expected_before, expected_after)) in profile.skills.iter().zip(expected) {
            close(*before, expected_before);
            close(*after, expected_after);
        }
        for pair in profile.skills.windows(2) {
            assert_eq!(pair[0].1, pair[1].0, "each result starts from the previous one's skill");
        }
        assert_eq!(profile.skills.last().map(|(_, after)| *after), Some(profile.skill));
    }

    #[test]
    fn the_order_of_results_changes_the_skill() {
        let won = PlayedResult { field_size: 5, place: 1, xp: 100, skill_alpha: 0.1 };
        let lost = PlayedResult { field_size: 5, place: 5, xp: 10, skill_alpha: 0.1 };
        let forward = rebuild_profile(&CONFIG, &[won, lost]);
        let backward = rebuild_profile(&CONFIG, &[lost, won]);
        assert_eq!((forward.xp, forward.wins), (backward.xp, backward.wins));
        assert!(backward.skill > forward.skill);
    }

    #[test]
    fn each_result_smooths_with_the_alpha_it_was_awarded_under() {
        let old = PlayedResult { field_size: 5, place: 1, xp: 100, skill_alpha: 0.1 };
        let new = PlayedResult { field_size: 5, place: 1, xp: 100, skill_alpha: 0.5 };
        let profile = rebuild_profile(&RatingConfig { skill_alpha: 0.9, ..CONFIG }, &[old, new]);
        // 0.4444 + 0.1 * 0.5556 = 0.49996; + 0.5 * 0.50004 = 0.74998. The configuration's
        // 0.9 is not used: it applies to awards made after it.
        close(profile.skills[0].1, 0.49996);
        close(profile.skill, 0.74998);
    }

    #[test]
    fn no_results_give_a_fresh_profile() {
        assert_eq!(
            rebuild_profile(&CONFIG, &[]),
            RebuiltProfile { xp: 0, level: 1, skill: 0.4444, games_played: 0, wins: 0, skills: vec![] }
        );
    }

    #[test]
    fn the_initial_skill_is_displayed_as_five() {
        assert_eq!(displayed_skill(0.4444), 5.0);
    }

    #[test]
    fn displayed_skill_spans_one_to_ten() {
        assert_eq!(displayed_skill(0.0), 1.0);
        assert_eq!(displayed_skill(1.0), 10.0);
        assert_eq!(displayed_skill(0.5), 5.5);
        assert_eq!(displayed_skill(0.123), 2.1);
    }

    const TIERS: [(&str, i32); 6] =
        [("grinder", 3), ("fish", 1), ("regular", 6), ("shark", 10), ("pro", 15), ("legend", 25)];

    #[test]
    fn a_level_gets_the_highest_tier_it_reached() {
        assert_eq!(tier_for_level(TIERS, 1), Some("fish"));
        assert_eq!(tier_for_level(TIERS, 2), Some("fish"));
        assert_eq!(tier_for_level(TIERS, 3), Some("grinder"));
        assert_eq!(tier_for_level(TIERS, 9), Some("regular"));
        assert_eq!(tier_for_level(TIERS, 10), Some("shark"));
        assert_eq!(tier_for_level(TIERS, 24), Some("pro"));
        assert_eq!(tier_for_level(TIERS, 1000), Some("legend"));
    }

    #[test]
    fn below_every_tier_there_is_none() {
        assert_eq!(tier_for_level(TIERS, 0), None);
        assert_eq!(tier_for_level([], 5), None);
    }
}
