//! Strikes and the registration ban: when unforgiven strikes inside the window reach the
//! threshold, registration closes for `ban_days`; forgiving below the threshold lifts it.

use chrono::{DateTime, Duration, Utc};

/// The platform's sanction settings (from the rating configuration).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SanctionRules {
    /// Unforgiven strikes inside the window that cause a ban.
    pub strikes_to_ban: u32,
    pub strike_window_days: i64,
    pub ban_days: i64,
}

impl SanctionRules {
    /// How many of `strikes` (the creation times of a player's unforgiven strikes) fall inside
    /// the window that ends at `now`.
    pub fn active_strikes(&self, strikes: &[DateTime<Utc>], now: DateTime<Utc>) -> u32 {
        let window_start = now - Duration::days(self.strike_window_days);
        let count = strikes.iter().filter(|at| **at > window_start && **at <= now).count();
        u32::try_from(count).unwrap_or(u32::MAX)
    }

    /// The ban after a new strike at `now`: reaching the threshold bans until
    /// `now + ban_days`; a ban already running further is never shortened.
    pub fn ban_after_strike(
        &self,
        strikes: &[DateTime<Utc>],
        now: DateTime<Utc>,
        current_ban: Option<DateTime<Utc>>,
    ) -> Option<DateTime<Utc>> {
        if self.active_strikes(strikes, now) >= self.strikes_to_ban.max(1) {
            let ban = now + Duration::days(self.ban_days);
            Some(current_ban.map_or(ban, |current| current.max(ban)))
        } else {
            current_ban
        }
    }

    /// The ban after a strike was forgiven at `now`: lifted when the active strikes fell
    /// below the threshold, kept as it was otherwise.
    pub fn ban_after_forgiving(
        &self,
        strikes: &[DateTime<Utc>],
        now: DateTime<Utc>,
        current_ban: Option<DateTime<Utc>>,
    ) -> Option<DateTime<Utc>> {
        if self.active_strikes(strikes, now) < self.strikes_to_ban.max(1) { None } else { current_ban }
    }

    /// The ban `strikes` earn when replayed in time order (a merge joins two histories): each
    /// strike that brings the unforgiven strikes inside its window to the threshold bans
    /// until its time plus `ban_days`. Only a ban still running at `now` is returned.
    pub fn ban_from_history(&self, strikes: &[DateTime<Utc>], now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        strikes
            .iter()
            .filter(|at| **at <= now && self.active_strikes(strikes, **at) >= self.strikes_to_ban.max(1))
            .map(|at| *at + Duration::days(self.ban_days))
            .max()
            .filter(|until| *until > now)
    }
}

/// Whether a ban closes registration at `now`.
pub fn is_banned(ban_until: Option<DateTime<Utc>>, now: DateTime<Utc>) -> bool {
    ban_until.is_some_and(|until| until > now)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: SanctionRules = SanctionRules { strikes_to_ban: 2, strike_window_days: 30, ban_days: 14 };

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-22T12:00:00Z").map(|t| t.with_timezone(&Utc)).expect("a time")
    }

    fn days_ago(days: i64) -> DateTime<Utc> {
        now() - Duration::days(days)
    }

    #[test]
    fn one_strike_does_not_ban() {
        assert_eq!(RULES.ban_after_strike(&[now()], now(), None), None);
    }

    #[test]
    fn the_second_strike_inside_the_window_bans_for_ban_days() {
        let ban = RULES.ban_after_strike(&[days_ago(29), now()], now(), None);
        assert_eq!(ban, Some(now() + Duration::days(14)));
    }

    #[test]
    fn strikes_older_than_the_window_do_not_count() {
        assert_eq!(RULES.active_strikes(&[days_ago(30), days_ago(31), now()], now()), 1);
        assert_eq!(RULES.ban_after_strike(&[days_ago(30), now()], now(), None), None);
    }

    #[test]
    fn a_further_strike_extends_but_never_shortens_a_ban() {
        let running = now() + Duration::days(3);
        assert_eq!(
            RULES.ban_after_strike(&[days_ago(2), days_ago(1), now()], now(), Some(running)),
            Some(now() + Duration::days(14))
        );
        let long = now() + Duration::days(100);
        assert_eq!(RULES.ban_after_strike(&[days_ago(1), now()], now(), Some(long)), Some(long));
    }

    #[test]
    fn forgiving_below_the_threshold_lifts_the_ban() {
        let ban = Some(now() + Duration::days(10));
        assert_eq!(RULES.ban_after_forgiving(&[days_ago(3)], now(), ban), None);
    }

    #[test]
    fn forgiving_while_still_at_the_threshold_keeps_the_ban() {
        let ban = Some(now() + Duration::days(10));
        assert_eq!(RULES.ban_after_forgiving(&[days_ago(3), days_ago(1)], now(), ban), ban);
    }

    #[test]
    fn a_threshold_of_one_bans_at_the_first_strike() {
        let strict = SanctionRules { strikes_to_ban: 1, ..RULES };
        assert!(strict.ban_after_strike(&[now()], now(), None).is_some());
    }

    #[test]
    fn a_ban_closes_registration_only_until_it_ends() {
        assert!(is_banned(Some(now() + Duration::seconds(1)), now()));
        assert!(!is_banned(Some(now()), now()));
        assert!(!is_banned(None, now()));
    }

    #[test]
    fn joined_histories_ban_from_the_strike_that_reached_the_threshold() {
        // One strike 20 days ago on each of two accounts, 5 days apart: together they reached
        // the threshold 15 days ago, so the ban ran until yesterday.
        assert_eq!(RULES.ban_from_history(&[days_ago(20), days_ago(15)], now()), None);
        // Reached 3 days ago: banned until 11 days from now, whatever the order given.
        assert_eq!(RULES.ban_from_history(&[days_ago(3), days_ago(10)], now()), Some(now() + Duration::days(11)));
        // Too far apart to count together.
        assert_eq!(RULES.ban_from_history(&[days_ago(40), days_ago(2)], now()), None);
        assert_eq!(RULES.ban_from_history(&[], now()), None);
    }
}
