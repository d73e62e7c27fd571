//! Places: the finishing order the results are written in, the place an elimination gets,
//! and the strictly increasing elimination stamps that order rests on.

use chrono::{DateTime, SubsecRound, TimeDelta, Utc};

/// One player of a finished field, as the results need them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Finisher<Id> {
    pub player: Id,
    /// When they were knocked out; `None` for the player still in (the winner).
    pub eliminated_at: Option<DateTime<Utc>>,
    /// When they registered: the first tie-break.
    pub created_at: DateTime<Utc>,
}

/// `(place, player)` for places 1..=N: whoever was not eliminated first, then the later an
/// elimination, the better the place. Ties (and several players still in) go to the earlier
/// `created_at`, then the lower id.
pub fn finishing_order<Id: Copy + Ord>(finishers: &[Finisher<Id>]) -> Vec<(i32, Id)> {
    let mut order = finishers.to_vec();
    order.sort_by(|a, b| {
        let still_in = a.eliminated_at.is_some().cmp(&b.eliminated_at.is_some());
        still_in
            .then(b.eliminated_at.cmp(&a.eliminated_at))
            .then(a.created_at.cmp(&b.created_at))
            .then(a.player.cmp(&b.player))
    });
    order
        .into_iter()
        .enumerate()
        .map(|(index, finisher)| {
            (i32::try_from(index).map_or(i32::MAX, |index| index.saturating_add(1)), finisher.player)
        })
        .collect()
}

/// The place of a player knocked out while `active_before` players, them included, were
/// still in: the last one standing before the winner is second, and so on.
pub fn place_at_elimination(active_before: usize) -> i32 {
    i32::try_from(active_before).unwrap_or(i32::MAX)
}

/// The stamp for an elimination at `now` after the tournament's latest stamp `last`.
/// Stamps keep milliseconds only (as the database and JSON do) and must strictly increase,
/// so two knock-outs in the same millisecond, or a clock that stepped back, still order:
/// `now` truncated to the millisecond when it is after `last`, else `last` plus one millisecond.
pub fn next_elimination_stamp(now: DateTime<Utc>, last: Option<DateTime<Utc>>) -> DateTime<Utc> {
    let now = now.trunc_subsecs(3);
    match last {
        Some(last) if now <= last => {
            let last = last.trunc_subsecs(3);
            last.checked_add_signed(TimeDelta::milliseconds(1)).unwrap_or(last)
        }
        _ => now,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_790_000_000 + seconds, 0).expect("a time")
    }

    fn out(player: u32, eliminated: i64, created: i64) -> Finisher<u32> {
        Finisher { player, eliminated_at: Some(at(eliminated)), created_at: at(created) }
    }

    fn still_in(player: u32, created: i64) -> Finisher<u32> {
        Finisher { player, eliminated_at: None, created_at: at(created) }
    }

    #[test]
    fn the_player_still_in_wins_and_later_eliminations_place_higher() {
        let field = [out(1, 100, 0), still_in(2, 5), out(3, 300, 1), out(4, 200, 2)];
        assert_eq!(finishing_order(&field), [(1, 2), (2, 3), (3, 4), (4, 1)]);
    }

    #[test]
    fn equal_eliminations_go_to_the_earlier_registration_then_the_lower_id() {
        let field = [out(9, 100, 3), out(5, 100, 3), out(7, 100, 1), still_in(1, 9)];
        assert_eq!(finishing_order(&field), [(1, 1), (2, 7), (3, 5), (4, 9)]);
    }

    #[test]
    fn several_players_still_in_are_ordered_by_registration_then_id() {
        let field = [out(1, 100, 0), still_in(8, 4), still_in(6, 4), still_in(3, 7)];
        assert_eq!(finishing_order(&field), [(1, 6), (2, 8), (3, 3), (4, 1)]);
    }

    #[test]
    fn a_single_player_is_first() {
        assert_eq!(finishing_order(&[still_in(42, 0)]), [(1, 42)]);
        assert_eq!(finishing_order(&[out(42, 10, 0)]), [(1, 42)]);
        assert_eq!(finishing_order::<u32>(&[]), []);
    }

    #[test]
    fn the_place_is_the_count_still_in_before_the_elimination() {
        assert_eq!(place_at_elimination(9), 9);
        assert_eq!(place_at_elimination(2), 2);
    }

    #[test]
    fn a_stamp_after_the_last_is_now() {
        assert_eq!(next_elimination_stamp(at(10), Some(at(5))), at(10));
        assert_eq!(next_elimination_stamp(at(10), None), at(10));
    }

    #[test]
    fn stamps_strictly_increase_when_now_is_equal_or_earlier() {
        let millisecond = TimeDelta::milliseconds(1);
        assert_eq!(next_elimination_stamp(at(5), Some(at(5))), at(5) + millisecond);
        assert_eq!(next_elimination_stamp(at(1), Some(at(5))), at(5) + millisecond);

        let mut last = None;
        let mut stamps = Vec::new();
        for _ in 0..5 {
            let stamp = next_elimination_stamp(at(0), last);
            stamps.push(stamp);
            last = Some(stamp);
        }
        assert_eq!(stamps, (0..5).map(|ms| at(0) + TimeDelta::milliseconds(ms)).collect::<Vec<_>>());
    }

    #[test]
    fn stamps_are_truncated_to_the_millisecond() {
        let now = at(0) + TimeDelta::microseconds(1_999);
        assert_eq!(next_elimination_stamp(now, None), at(0) + TimeDelta::milliseconds(1));
        // Within the same millisecond as the last stamp: the next millisecond.
        let last = at(0) + TimeDelta::milliseconds(1);
        assert_eq!(next_elimination_stamp(now, Some(last)), at(0) + TimeDelta::milliseconds(2));
        // A last stamp finer than a millisecond still gives a whole millisecond after it.
        let fine = at(0) + TimeDelta::microseconds(2_500);
        assert_eq!(next_elimination_stamp(now, Some(fine)), at(0) + TimeDelta::milliseconds(3));
    }
}
