//! What the people of a tournament hear about it beside the reminders: that it was cancelled
//! or moved, where they sit at the start and wherever they are moved, and what the club
//! announces. Each is a [`Notice`] for the one notification entry point, journaled by the
//! caller in the change's own transaction and pushed after it commits; the texts are Russian.
//! Guests have no account and hear nothing.

use chrono::{DateTime, Utc};
use floor_actors::live::Seat;
use floor_entities::enums::{RegistrationStatus, UserStatus};
use floor_entities::{locations, registrations, users};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QuerySelect};
use serde_json::json;
use uuid::Uuid;

use super::registrations::LIVE;
use crate::domain::notifications::{Notice, NoticeKind, PushMessage};
use crate::infra::db::find_where_in;
use crate::infra::error::AppResult;
use crate::values::local_time;

/// The accounts holding a live registration (a seat or a place in the queue).
pub async fn live_registrants(conn: &impl ConnectionTrait, tournament_id: Uuid) -> AppResult<Vec<Uuid>> {
    accounts_in(conn, tournament_id, &LIVE).await
}

/// The accounts of the tournament's registrations in one of `statuses`, but deleted ones: a
/// player out of a running game may delete the account before it ends, and hears nothing more.
pub async fn accounts_in(
    conn: &impl ConnectionTrait,
    tournament_id: Uuid,
    statuses: &[RegistrationStatus],
) -> AppResult<Vec<Uuid>> {
    Ok(registrations::Entity::find()
        .select_only()
        .column(registrations::Column::UserId)
        .inner_join(users::Entity)
        .filter(registrations::Column::TournamentId.eq(tournament_id))
        .filter(registrations::Column::Status.is_in(statuses.iter().copied()))
        .filter(users::Column::Status.ne(UserStatus::Deleted))
        .into_tuple()
        .all(conn)
        .await?)
}

/// The account behind each of `registration_ids` that has one: (registration, account).
pub async fn accounts_of(conn: &impl ConnectionTrait, registration_ids: &[Uuid]) -> AppResult<Vec<(Uuid, Uuid)>> {
    Ok(find_where_in::<registrations::Entity, _>(conn, registrations::Column::Id, registration_ids)
        .await?
        .into_iter()
        .filter_map(|registration| Some((registration.id, registration.user_id?)))
        .collect())
}

/// The tournament was cancelled: everyone who held a place in it.
pub fn cancelled(tournament_id: Uuid, title: &str, recipients: Vec<Uuid>) -> Notice {
    let kind = NoticeKind::TournamentCancelled;
    Notice {
        kind,
        recipients,
        payload: json!({"tournamentId": tournament_id, "title": title}),
        push: Some(PushMessage {
            title: "Турнир отменён".to_owned(),
            body: format!("«{title}» отменён клубом. Регистрация снята, штрафа не будет."),
        }),
        // A tournament is cancelled once.
        dedup_key: Some(format!("{}:{tournament_id}", kind.as_str())),
    }
}

/// Where and when a tournament is, as a change compares it.
#[derive(Clone, Debug)]
pub struct Appointment<'a> {
    pub starts_at: DateTime<Utc>,
    pub venue: &'a locations::Model,
}

/// The tournament's start or venue moved: everyone who holds a place in it hears the new one.
/// `None` when neither moved. `edit` names the edit (the tournament as it was before it), so
/// the same edit is journaled once however often it is written.
pub fn changed(
    tournament_id: Uuid,
    title: &str,
    before: &Appointment<'_>,
    after: &Appointment<'_>,
    edit: DateTime<Utc>,
    recipients: Vec<Uuid>,
) -> Option<Notice> {
    let moved_start = before.starts_at != after.starts_at;
    let moved_venue = before.venue.id != after.venue.id;
    if !moved_start && !moved_venue {
        return None;
    }
    let mut changed = Vec::new();
    let mut lines = Vec::new();
    if moved_start {
        changed.push("startsAt");
        lines.push(format!("новое время — {}", local_time::russian(after.starts_at, Some(&after.venue.timezone))));
    }
    if moved_venue {
        changed.push("location");
        lines.push(format!("новое место — {}, {}", after.venue.name, after.venue.address));
    }
    let kind = NoticeKind::TournamentChanged;
    Some(Notice {
        kind,
        recipients,
        payload: json!({
            "tournamentId": tournament_id,
            "title": title,
            "changed": changed,
            "startsAt": after.starts_at,
            "previousStartsAt": before.starts_at,
            "location": {"id": after.venue.id, "name": after.venue.name, "address": after.venue.address},
            "previousLocationId": before.venue.id,
        }),
        push: Some(PushMessage {
            title: "Турнир перенесён".to_owned(),
            body: format!("«{title}»: {}.", lines.join("; ")),
        }),
        dedup_key: Some(format!("{}:{tournament_id}:{}", kind.as_str(), edit.timestamp_micros())),
    })
}

/// A seat, as a player reads it.
fn seat_words(seat: Seat) -> String {
    format!("стол {}, место {}", seat.table_no, seat.seat_no)
}

/// The tournament started: one notice per seated account, with its own table and seat.
pub fn seated(tournament_id: Uuid, title: &str, user_id: Uuid, registration_id: Uuid, seat: Seat) -> Notice {
    let kind = NoticeKind::TournamentSeated;
    Notice {
        kind,
        recipients: vec![user_id],
        payload: json!({
            "tournamentId": tournament_id,
            "registrationId": registration_id,
            "title": title,
            "tableNo": seat.table_no,
            "seatNo": seat.seat_no,
        }),
        push: Some(PushMessage {
            title: format!("Ваше место: {}", seat_words(seat)),
            body: format!("«{title}» начался. Ваше место: {}.", seat_words(seat)),
        }),
        // Seated once per tournament.
        dedup_key: Some(format!("{}:{tournament_id}", kind.as_str())),
    }
}

/// A player was moved (a reseat, a batch of moves, an undo into another seat). `version` is
/// the LiveState version the move made, which names the move.
pub fn seat_moved(
    tournament_id: Uuid,
    title: &str,
    (user_id, registration_id): (Uuid, Uuid),
    (from, to): (Seat, Seat),
    version: i64,
) -> Notice {
    let kind = NoticeKind::SeatMoved;
    Notice {
        kind,
        recipients: vec![user_id],
        payload: json!({
            "tournamentId": tournament_id,
            "registrationId": registration_id,
            "title": title,
            "fromTable": from.table_no,
            "fromSeat": from.seat_no,
            "toTable": to.table_no,
            "toSeat": to.seat_no,
            "version": version,
        }),
        push: Some(PushMessage {
            title: format!("Пересадка: {}", seat_words(to)),
            body: format!("«{title}»: пройдите за {} (были: {}).", seat_words(to), seat_words(from)),
        }),
        dedup_key: Some(format!("{}:{tournament_id}:{registration_id}:{version}", kind.as_str())),
    }
}

/// The club's announcement to the tournament's players with accounts.
pub fn announcement(
    tournament_id: Uuid,
    announcement_id: Uuid,
    title: &str,
    text: &str,
    recipients: Vec<Uuid>,
) -> Notice {
    let kind = NoticeKind::TournamentAnnouncement;
    Notice {
        kind,
        recipients,
        payload: json!({
            "tournamentId": tournament_id,
            "announcementId": announcement_id,
            "title": title,
            "text": text,
        }),
        push: Some(PushMessage { title: title.to_owned(), body: text.to_owned() }),
        dedup_key: Some(format!("{}:{tournament_id}:{announcement_id}", kind.as_str())),
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn venue(name: &str) -> locations::Model {
        let at = Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).single().expect("a real time");
        locations::Model {
            id: Uuid::now_v7(),
            organizer_id: Uuid::nil(),
            name: name.to_owned(),
            city_slug: "moscow".to_owned(),
            address: "Тверская, 1".to_owned(),
            timezone: "Europe/Moscow".to_owned(),
            lat: 0.0,
            lng: 0.0,
            description: None,
            photo_url: None,
            created_at: at,
            updated_at: at,
        }
    }

    fn at(hour: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 25, hour, 0, 0).single().expect("a real time")
    }

    #[test]
    fn an_edit_that_moves_neither_start_nor_venue_tells_nobody() {
        let club = venue("Клуб");
        let same = Appointment { starts_at: at(16), venue: &club };
        assert!(changed(Uuid::nil(), "Турнир", &same, &same.clone(), at(1), vec![Uuid::nil()]).is_none());
    }

    #[test]
    fn a_new_start_is_told_in_the_venues_time() {
        let club = venue("Клуб");
        let before = Appointment { starts_at: at(16), venue: &club };
        let after = Appointment { starts_at: at(17), venue: &club };
        let notice = changed(Uuid::nil(), "Турнир", &before, &after, at(1), vec![]).expect("a change");
        assert_eq!(notice.payload["changed"], json!(["startsAt"]));
        let push = notice.push.expect("a push");
        assert!(push.body.contains("новое время — 25 ноября, 20:00"), "{}", push.body);
        assert!(!push.body.contains("новое место"), "{}", push.body);
    }

    #[test]
    fn a_new_venue_is_told_with_its_address() {
        let (old, new) = (venue("Старый клуб"), venue("Новый клуб"));
        let before = Appointment { starts_at: at(16), venue: &old };
        let after = Appointment { starts_at: at(16), venue: &new };
        let notice = changed(Uuid::nil(), "Турнир", &before, &after, at(1), vec![]).expect("a change");
        assert_eq!(notice.payload["changed"], json!(["location"]));
        assert_eq!(notice.payload["location"]["name"], "Новый клуб");
        let push = notice.push.expect("a push");
        assert!(push.body.contains("новое место — Новый клуб, Тверская, 1"), "{}", push.body);
    }

    #[test]
    fn each_edit_and_each_move_is_its_own_notice() {
        let club = venue("Клуб");
        let before = Appointment { starts_at: at(16), venue: &club };
        let after = Appointment { starts_at: at(17), venue: &club };
        let first = changed(Uuid::nil(), "T", &before, &after, at(1), vec![]).expect("a change");
        let second = changed(Uuid::nil(), "T", &after, &before, at(2), vec![]).expect("a change");
        assert_ne!(first.dedup_key, second.dedup_key);
        let seat = |table_no, seat_no| Seat { table_no, seat_no };
        let ids = (Uuid::nil(), Uuid::max());
        let one = seat_moved(Uuid::nil(), "T", ids, (seat(1, 1), seat(2, 2)), 7);
        let two = seat_moved(Uuid::nil(), "T", ids, (seat(2, 2), seat(1, 1)), 8);
        assert_ne!(one.dedup_key, two.dedup_key);
        assert_eq!(one.push.expect("a push").title, "Пересадка: стол 2, место 2");
    }
}
