//! A club's announcements to a tournament: a short text to its players with accounts (a
//! push) and to its room (a Socket.IO `announcement`, shown on the venue screen). At most one
//! a minute per tournament, checked under the tournament's lock against the stored ones, so
//! the limit holds however many nodes take the requests.

use chrono::{DateTime, Duration, Utc};
use floor_entities::enums::TournamentStatus;
use floor_entities::tournament_announcements;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder, Set,
};
use serde_json::json;
use uuid::Uuid;

use super::{display_title, lock, notices};
use crate::domain::audit;
use crate::domain::notifications::Notifier;
use crate::infra::db;
use crate::infra::error::{AppError, AppResult, ErrorCode};

/// The longest announcement, in characters.
pub const MAX_ANNOUNCEMENT_CHARS: usize = 280;

/// How long a tournament waits between two announcements.
pub const ANNOUNCEMENT_INTERVAL: Duration = Duration::minutes(1);

/// What [`announce`] did.
pub enum Announced {
    Sent(tournament_announcements::Model),
    /// The tournament's last announcement is younger than a minute: nothing was sent; the
    /// next one may go in `wait`.
    TooSoon {
        wait: std::time::Duration,
    },
}

/// How long until the next announcement may go, when one went at `last`; `None` when it may
/// go now.
fn wait_after(last: DateTime<Utc>, now: DateTime<Utc>) -> Option<std::time::Duration> {
    let next = last + ANNOUNCEMENT_INTERVAL;
    (now < next).then(|| (next - now).to_std().unwrap_or_default())
}

/// Sends `text` (checked by the request's handler) to the tournament's players with accounts
/// (`tournament.announcement`, journaled with the announcement, pushed after the commit). The
/// caller sends it to the room. Only while registration is open or the game runs.
pub async fn announce(
    db: &DatabaseConnection,
    notifier: &Notifier,
    tournament_id: Uuid,
    by: Uuid,
    text: String,
) -> AppResult<Announced> {
    let tx = db::begin_write(db).await?;
    let tournament = lock(&tx, tournament_id).await?;
    if !matches!(tournament.status, TournamentStatus::Registration | TournamentStatus::Running) {
        return Err(AppError::new(
            ErrorCode::InvalidStatus,
            "announcements go to a tournament in registration or running",
        ));
    }
    let now = Utc::now();
    if let Some(last) = latest(&tx, tournament_id).await?
        && let Some(wait) = wait_after(last.created_at, now)
    {
        return Ok(Announced::TooSoon { wait });
    }
    let announcement = tournament_announcements::ActiveModel {
        id: Set(Uuid::now_v7()),
        tournament_id: Set(tournament_id),
        text: Set(text),
        created_by_user_id: Set(Some(by)),
        created_at: Set(now),
    }
    .insert(&tx)
    .await?;
    let title = display_title(&tx, tournament_id).await?;
    let recipients = notices::live_registrants(&tx, tournament_id).await?;
    let notice = notices::announcement(tournament_id, announcement.id, &title, &announcement.text, recipients);
    let told = notifier.journal(&tx, notice).await?;
    audit::record(
        &tx,
        Some(by),
        "tournament.announce",
        ("tournament", tournament_id.to_string()),
        json!({"announcementId": announcement.id, "recipients": told.len()}),
    )
    .await?;
    tx.commit().await?;
    notifier.push_in_background(db, vec![told]);
    Ok(Announced::Sent(announcement))
}

/// The tournament's latest announcement.
pub async fn latest(
    conn: &impl ConnectionTrait,
    tournament_id: Uuid,
) -> AppResult<Option<tournament_announcements::Model>> {
    Ok(tournament_announcements::Entity::find()
        .filter(tournament_announcements::Column::TournamentId.eq(tournament_id))
        .order_by_desc(tournament_announcements::Column::CreatedAt)
        .one(conn)
        .await?)
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn the_next_announcement_waits_a_minute_after_the_last() {
        let last = Utc.with_ymd_and_hms(2026, 11, 25, 19, 0, 0).single().expect("a real time");
        assert_eq!(wait_after(last, last), Some(std::time::Duration::from_secs(60)));
        assert_eq!(wait_after(last, last + Duration::seconds(45)), Some(std::time::Duration::from_secs(15)));
        assert_eq!(wait_after(last, last + ANNOUNCEMENT_INTERVAL), None);
        assert_eq!(wait_after(last, last + Duration::hours(1)), None);
    }
}
