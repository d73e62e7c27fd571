//! `tournament-reminders`: the two reminders of a tournament open for registration, 24 hours
//! before its start and at its club's cancel deadline, each sent once to every account
//! holding a seat.
//!
//! Time is cut into five-minute slots, one per tick. The run of slot `s` owns the moments in
//! `(s, s + 5 min]`: together the slots cover time without gaps or overlaps, and a moment on a
//! slot boundary belongs to the earlier tick, so a deadline on the hour reaches the players
//! five minutes before it, while cancelling is still free (at the deadline itself it already
//! costs a strike). What was sent is remembered by the journal's dedup key (kind, tournament,
//! window), so a repeated tick or a manual rerun sends nothing twice.

use std::collections::HashMap;

use chrono::{DateTime, Duration, DurationRound, Utc};
use floor_entities::enums::{RegistrationStatus, TournamentStatus};
use floor_entities::{organizers, tournaments};
use sea_orm::sea_query::{Expr, Func};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QuerySelect};
use serde_json::json;
use uuid::Uuid;

use crate::domain::notifications::{Notice, NoticeKind, Notifier, PushMessage};
use crate::domain::tournaments::display_title;
use crate::domain::tournaments::notices::accounts_in;
use crate::infra::db::find_where_in;
use crate::infra::error::AppResult;

/// The run period of the job, and so the length of the window one run searches.
pub const PERIOD: Duration = Duration::minutes(5);

/// Which of the two reminders; its name is part of the dedup key and of the payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    /// 24 hours before the start.
    DayBefore,
    /// At the club's cancel deadline, `cancelDeadlineHours` before the start.
    CancelDeadline,
}

impl Window {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DayBefore => "24h",
            Self::CancelDeadline => "deadline",
        }
    }

    /// The moment this reminder is due for a tournament starting at `starts_at`.
    pub fn moment(self, starts_at: DateTime<Utc>, cancel_deadline_hours: i32) -> DateTime<Utc> {
        match self {
            Self::DayBefore => starts_at - Duration::hours(24),
            Self::CancelDeadline => starts_at - Duration::hours(i64::from(cancel_deadline_hours)),
        }
    }
}

/// The slot a run at `now` owns: `now` floored to the period.
pub fn slot_of(now: DateTime<Utc>) -> DateTime<Utc> {
    now.duration_trunc(PERIOD).unwrap_or(now)
}

/// Whether `moment` is in the window of `slot`: after its start, up to and including its end.
pub fn owns(slot: DateTime<Utc>, moment: DateTime<Utc>) -> bool {
    slot < moment && moment <= slot + PERIOD
}

/// The reminders of a tournament due in the window of `slot` (both, with a 24-hour deadline).
pub fn due(slot: DateTime<Utc>, starts_at: DateTime<Utc>, cancel_deadline_hours: i32) -> Vec<Window> {
    [Window::DayBefore, Window::CancelDeadline]
        .into_iter()
        .filter(|window| owns(slot, window.moment(starts_at, cancel_deadline_hours)))
        .collect()
}

/// The latest start a tournament may have for one of its reminders to be due in the window
/// of `slot`, given the longest cancel deadline any club has.
fn latest_start(slot: DateTime<Utc>, longest_deadline_hours: i32) -> DateTime<Utc> {
    slot + Duration::hours(i64::from(longest_deadline_hours.max(24))) + PERIOD
}

/// The text of a reminder, in Russian.
fn push_message(window: Window, title: &str) -> PushMessage {
    match window {
        Window::DayBefore => PushMessage {
            title: "Турнир через 24 часа".to_owned(),
            body: format!(
                "«{title}» начнётся через 24 часа. Не получится прийти — отмените регистрацию, чтобы место досталось другому."
            ),
        },
        Window::CancelDeadline => PushMessage {
            title: "Бесплатная отмена заканчивается".to_owned(),
            body: format!("«{title}»: отменить регистрацию без штрафа можно ещё несколько минут."),
        },
    }
}

/// The registrations a reminder is for: those holding a seat (the queue waits for one).
const HOLDING_A_SEAT: [RegistrationStatus; 2] = [RegistrationStatus::Registered, RegistrationStatus::CheckedIn];

/// What one run sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReminderReport {
    /// Reminders (tournament and window) that were due.
    pub due: usize,
    /// Journal rows written: recipients who had not had that reminder yet.
    pub journaled: usize,
}

/// Sends the reminders due in the window of `now`'s slot (a tick passes its scheduled time,
/// a manual run its own clock). Recipients are the accounts registered or checked in; guests
/// have no account and get nothing.
pub async fn send_reminders(
    conn: &impl ConnectionTrait,
    notifier: &Notifier,
    now: DateTime<Utc>,
) -> AppResult<ReminderReport> {
    let slot = slot_of(now);
    let longest_deadline: Option<i32> = organizers::Entity::find()
        .select_only()
        .column_as(Expr::from(Func::max(Expr::col(organizers::Column::CancelDeadlineHours))), "hours")
        .into_tuple()
        .one(conn)
        .await?
        .flatten();
    let candidates = tournaments::Entity::find()
        .filter(tournaments::Column::Status.eq(TournamentStatus::Registration))
        .filter(tournaments::Column::StartsAt.gt(slot))
        .filter(tournaments::Column::StartsAt.lte(latest_start(slot, longest_deadline.unwrap_or(0))))
        .all(conn)
        .await?;
    let club_ids: Vec<Uuid> = candidates.iter().map(|tournament| tournament.organizer_id).collect();
    let deadline_hours: HashMap<Uuid, i32> =
        find_where_in::<organizers::Entity, _>(conn, organizers::Column::Id, &club_ids)
            .await?
            .into_iter()
            .map(|club| (club.id, club.cancel_deadline_hours))
            .collect();

    let mut report = ReminderReport::default();
    for tournament in candidates {
        let Some(&hours) = deadline_hours.get(&tournament.organizer_id) else { continue };
        let windows = due(slot, tournament.starts_at, hours);
        if windows.is_empty() {
            continue;
        }
        let recipients = accounts_in(conn, tournament.id, &HOLDING_A_SEAT).await?;
        let title = display_title(conn, tournament.id).await?;
        for window in windows {
            report.due += 1;
            let kind = NoticeKind::TournamentReminder;
            let notice = Notice {
                kind,
                recipients: recipients.clone(),
                payload: json!({
                    "tournamentId": tournament.id,
                    "window": window.as_str(),
                    "startsAt": tournament.starts_at,
                    "title": title,
                }),
                push: Some(push_message(window, &title)),
                dedup_key: Some(format!("{}:{}:{}", kind.as_str(), tournament.id, window.as_str())),
            };
            report.journaled += notifier.notify(conn, notice).await?.journaled;
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(hour: u32, minute: u32, second: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 22, hour, minute, second).single().expect("a real time")
    }

    #[test]
    fn a_slot_is_the_time_floored_to_five_minutes() {
        assert_eq!(slot_of(at(15, 57, 42)), at(15, 55, 0));
        assert_eq!(slot_of(at(16, 0, 0)), at(16, 0, 0));
        assert_eq!(slot_of(at(16, 4, 59)), at(16, 0, 0));
    }

    #[test]
    fn a_slot_owns_the_five_minutes_after_its_start_with_the_end_and_without_the_start() {
        let slot = at(15, 55, 0);
        assert!(!owns(slot, at(15, 55, 0)));
        assert!(owns(slot, at(15, 55, 1)));
        assert!(owns(slot, at(16, 0, 0)));
        assert!(!owns(slot, at(16, 0, 1)));
    }

    #[test]
    fn consecutive_slots_share_no_moment_and_leave_none_out() {
        let first = at(15, 55, 0);
        let second = first + PERIOD;
        for seconds in 0..=600 {
            let moment = first + Duration::seconds(seconds);
            let owners = [first - PERIOD, first, second].into_iter().filter(|slot| owns(*slot, moment)).count();
            assert_eq!(owners, 1, "{moment}");
        }
    }

    #[test]
    fn a_deadline_on_the_hour_is_announced_by_the_tick_before_it() {
        // Starts at 19:00 with a 3-hour deadline: cancelling costs a strike from 16:00 on.
        let starts_at = at(19, 0, 0);
        assert_eq!(due(at(15, 55, 0), starts_at, 3), [Window::CancelDeadline]);
        assert!(due(at(16, 0, 0), starts_at, 3).is_empty());
        assert!(due(at(15, 50, 0), starts_at, 3).is_empty());
    }

    #[test]
    fn the_day_before_reminder_is_due_24_hours_before_the_start() {
        let starts_at = at(19, 0, 0) + Duration::days(1);
        assert_eq!(due(at(18, 55, 0), starts_at, 3), [Window::DayBefore]);
        assert!(due(at(19, 0, 0), starts_at, 3).is_empty());
    }

    #[test]
    fn a_24_hour_deadline_makes_both_reminders_due_in_one_slot() {
        let starts_at = at(19, 2, 30) + Duration::days(1);
        assert_eq!(due(at(19, 0, 0), starts_at, 24), [Window::DayBefore, Window::CancelDeadline]);
    }

    #[test]
    fn a_zero_hour_deadline_is_the_start_itself() {
        let starts_at = at(19, 0, 0);
        assert_eq!(due(at(18, 55, 0), starts_at, 0), [Window::CancelDeadline]);
    }

    #[test]
    fn the_search_reaches_as_far_as_the_longest_deadline_or_a_day() {
        let slot = at(12, 0, 0);
        assert_eq!(latest_start(slot, 3), slot + Duration::hours(24) + PERIOD);
        assert_eq!(latest_start(slot, 168), slot + Duration::hours(168) + PERIOD);
    }
}
