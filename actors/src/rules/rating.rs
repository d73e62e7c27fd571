//! Rating arithmetic shown to players: the displayed skill and the level tier.

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

#[cfg(test)]
mod tests {
    use super::*;

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
