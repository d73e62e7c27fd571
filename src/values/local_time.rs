//! Moments as people in the venue read them: in the venue's zone, in Russian.

use chrono::{DateTime, Utc};

const MONTHS: [&str; 12] = [
    "января",
    "февраля",
    "марта",
    "апреля",
    "мая",
    "июня",
    "июля",
    "августа",
    "сентября",
    "октября",
    "ноября",
    "декабря",
];

/// "25 ноября, 19:00" in the venue's zone (UTC when the zone is unknown, said so).
pub fn russian(starts_at: DateTime<Utc>, zone: Option<&str>) -> String {
    use chrono::{Datelike, Timelike};
    match zone.and_then(|zone| zone.parse::<chrono_tz::Tz>().ok()) {
        Some(tz) => {
            let local = starts_at.with_timezone(&tz);
            let month = MONTHS[local.month0() as usize];
            format!("{} {month}, {:02}:{:02}", local.day(), local.hour(), local.minute())
        }
        None => {
            let month = MONTHS[starts_at.month0() as usize];
            format!("{} {month}, {:02}:{:02} UTC", starts_at.day(), starts_at.hour(), starts_at.minute())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn a_moment_reads_in_the_venues_zone() {
        let at = Utc.with_ymd_and_hms(2026, 11, 25, 16, 0, 0).single().expect("a real time");
        assert_eq!(russian(at, Some("Europe/Moscow")), "25 ноября, 19:00");
        assert_eq!(russian(at, Some("Asia/Yekaterinburg")), "25 ноября, 21:00");
    }

    #[test]
    fn an_unknown_zone_reads_in_utc_and_says_so() {
        let at = Utc.with_ymd_and_hms(2026, 1, 2, 3, 4, 0).single().expect("a real time");
        assert_eq!(russian(at, Some("Nowhere/Else")), "2 января, 03:04 UTC");
        assert_eq!(russian(at, None), "2 января, 03:04 UTC");
    }
}
