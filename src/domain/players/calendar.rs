//! Players' calendar feeds: the secret address a player subscribes to in a calendar app
//! (`/calendar/<secret>.ics` at the bare origin) and the iCalendar document behind it, the
//! tournaments the player is in. The address is the only key, like a private calendar link
//! of any calendar service: only the SHA-256 of its secret is stored, a new address replaces
//! the old one, and a revoked or replaced address finds nothing.
//!
//! What the feed shows, decided here:
//! - every tournament, not finished, in which the player holds a live place: `registered` or
//!   `checked_in` as `STATUS:CONFIRMED`, `waitlist` as `STATUS:TENTATIVE`;
//! - for 30 days after it, a place the player cancelled or lost with the tournament's
//!   cancellation (which cancels every place), as `STATUS:CANCELLED`, so a subscribed
//!   calendar shows the event struck through rather than silently gone; after that it leaves;
//! - a finished tournament leaves the feed: it is history, on the player's profile.

use std::collections::HashMap;

use anyhow::anyhow;
use chrono::{DateTime, Duration, Utc};
use floor_actors::rules::structure::Segment;
use floor_entities::enums::{RegistrationStatus, TournamentStatus};
use floor_entities::{blind_templates, calendar_links, locations, organizers, registrations, tournaments};
use icalendar::{Calendar, Component, EventLike, EventStatus, Property};
use rand::TryRng;
use sea_orm::sea_query::OnConflict;
use sea_orm::{ColumnTrait, Condition, ConnectionTrait, EntityTrait, QueryFilter, Set};
use uuid::Uuid;

use crate::domain::auth::tokens::sha256_hex;
use crate::domain::tournaments::registrations::LIVE;
use crate::domain::tournaments::{display_titles, share_path};
use crate::infra::db::find_where_in;
use crate::infra::error::{AppError, AppResult};

/// Random bytes in a secret: 256 bits from the operating system, written as 64 hex digits
/// (URL-safe as they are).
const SECRET_BYTES: usize = 32;
/// How long a cancelled place stays in the feed, marked cancelled.
pub const CANCELLED_SHOWN_FOR: Duration = Duration::days(30);
/// How long an event lasts when its blind structure cannot tell: a usual club tournament.
const USUAL_LENGTH: Duration = Duration::hours(4);
/// The bounds of an event's length: a structure's sum is its planned length, but a list of
/// levels written far past any real finish must not fill the player's whole day and night.
const SHORTEST: Duration = Duration::hours(1);
const LONGEST: Duration = Duration::hours(12);
/// What calendar apps are asked to wait between two fetches (most poll less often anyway).
const REFRESH_EVERY: Duration = Duration::hours(1);

/// The feed's route at the bare origin; its one segment is `<secret>.ics` (a route cannot
/// split a segment).
pub const FEED_ROUTE: &str = "/calendar/{file}";

/// The path of the feed whose address carries `secret`, at the bare origin.
pub fn feed_path(secret: &str) -> String {
    format!("/calendar/{secret}.ics")
}

/// A fresh secret straight from the operating system's generator: it is a bearer credential
/// for the player's calendar, so it is never derived from anything else.
fn new_secret() -> AppResult<String> {
    let mut bytes = [0u8; SECRET_BYTES];
    rand::rngs::SysRng
        .try_fill_bytes(&mut bytes)
        .map_err(|err| AppError::Internal(anyhow!("the system's random generator failed: {err}")))?;
    Ok(hex::encode(bytes))
}

/// Whether `text` is shaped like a secret this module makes, so junk costs no query.
fn looks_like_secret(text: &str) -> bool {
    text.len() == SECRET_BYTES * 2 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Makes a new secret address for `user_id`, replacing the one they had: returns the secret,
/// which is shown this once and stored only as its hash.
pub async fn replace_link(conn: &impl ConnectionTrait, user_id: Uuid, now: DateTime<Utc>) -> AppResult<String> {
    let secret = new_secret()?;
    let row = calendar_links::ActiveModel {
        user_id: Set(user_id),
        secret_hash: Set(sha256_hex(&secret)),
        created_at: Set(now),
    };
    calendar_links::Entity::insert(row)
        .on_conflict(
            OnConflict::column(calendar_links::Column::UserId)
                .update_columns([calendar_links::Column::SecretHash, calendar_links::Column::CreatedAt])
                .to_owned(),
        )
        .exec_without_returning(conn)
        .await?;
    Ok(secret)
}

/// Forgets `user_id`'s address, if they had one.
pub async fn revoke_link(conn: &impl ConnectionTrait, user_id: Uuid) -> AppResult<()> {
    calendar_links::Entity::delete_many().filter(calendar_links::Column::UserId.eq(user_id)).exec(conn).await?;
    Ok(())
}

/// Whose feed the address carrying `secret` is, if it is a live address. Looked up by the
/// secret's hash: the database never sees the secret, and no comparison is made in code.
pub async fn feed_owner(conn: &impl ConnectionTrait, secret: &str) -> AppResult<Option<Uuid>> {
    if !looks_like_secret(secret) {
        return Ok(None);
    }
    let link = calendar_links::Entity::find()
        .filter(calendar_links::Column::SecretHash.eq(sha256_hex(secret)))
        .one(conn)
        .await?;
    Ok(link.map(|link| link.user_id))
}

/// How the player stands in a tournament of the feed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// `registered` or `checked_in`: a seat is theirs.
    Seated,
    /// On the waitlist: they may get a seat.
    Waitlisted,
    /// Their place was cancelled, by them or with the tournament.
    Cancelled,
}

/// One tournament as the feed shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeedEvent {
    pub tournament_id: Uuid,
    /// The Russian title, else the English one.
    pub title: String,
    pub club: String,
    /// The venue's name and address.
    pub venue: Option<(String, String)>,
    pub starts_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
    pub standing: Standing,
    /// The last change of the tournament or of the player's place in it.
    pub changed_at: DateTime<Utc>,
}

/// The tournaments `user_id`'s feed shows at `now` (see the module's rules), by start.
pub async fn feed_events(conn: &impl ConnectionTrait, user_id: Uuid, now: DateTime<Utc>) -> AppResult<Vec<FeedEvent>> {
    let places = registrations::Entity::find()
        .filter(registrations::Column::UserId.eq(user_id))
        .filter(
            Condition::any().add(registrations::Column::Status.is_in(LIVE)).add(
                Condition::all()
                    .add(registrations::Column::Status.eq(RegistrationStatus::Cancelled))
                    .add(registrations::Column::CancelledAt.gt(now - CANCELLED_SHOWN_FOR)),
            ),
        )
        .all(conn)
        .await?;
    let tournament_ids: Vec<Uuid> = places.iter().map(|place| place.tournament_id).collect();
    let tournaments: HashMap<Uuid, tournaments::Model> =
        find_where_in::<tournaments::Entity, _>(conn, tournaments::Column::Id, &tournament_ids)
            .await?
            .into_iter()
            .map(|tournament| (tournament.id, tournament))
            .collect();

    let mut shown = Vec::new();
    for place in &places {
        let Some(tournament) = tournaments.get(&place.tournament_id) else { continue };
        if let Some(standing) = standing(place, tournament, now) {
            shown.push((place, tournament, standing));
        }
    }

    let ids: Vec<Uuid> = shown.iter().map(|(_, tournament, _)| tournament.id).collect();
    let titles = display_titles(conn, &ids).await?;
    let club_ids: Vec<Uuid> = shown.iter().map(|(_, tournament, _)| tournament.organizer_id).collect();
    let clubs: HashMap<Uuid, String> = find_where_in::<organizers::Entity, _>(conn, organizers::Column::Id, &club_ids)
        .await?
        .into_iter()
        .map(|club| (club.id, club.name))
        .collect();
    let venue_ids: Vec<Uuid> = shown.iter().map(|(_, tournament, _)| tournament.location_id).collect();
    let venues: HashMap<Uuid, (String, String)> =
        find_where_in::<locations::Entity, _>(conn, locations::Column::Id, &venue_ids)
            .await?
            .into_iter()
            .map(|venue| (venue.id, (venue.name, venue.address)))
            .collect();
    // A started tournament runs on its own copy of the levels; the others on their template's.
    let template_ids: Vec<Uuid> = shown
        .iter()
        .filter(|(_, tournament, _)| tournament.clock_levels.is_none())
        .map(|(_, tournament, _)| tournament.blind_template_id)
        .collect();
    let template_levels: HashMap<Uuid, serde_json::Value> =
        find_where_in::<blind_templates::Entity, _>(conn, blind_templates::Column::Id, &template_ids)
            .await?
            .into_iter()
            .map(|template| (template.id, template.levels))
            .collect();

    let mut events: Vec<FeedEvent> = shown
        .into_iter()
        .map(|(place, tournament, standing)| {
            let levels =
                tournament.clock_levels.as_ref().or_else(|| template_levels.get(&tournament.blind_template_id));
            FeedEvent {
                tournament_id: tournament.id,
                title: titles.get(&tournament.id).cloned().unwrap_or_else(|| "Турнир".to_owned()),
                club: clubs.get(&tournament.organizer_id).cloned().unwrap_or_default(),
                venue: venues.get(&tournament.location_id).cloned(),
                starts_at: tournament.starts_at,
                ends_at: tournament.starts_at + length(levels),
                standing,
                changed_at: tournament.updated_at.max(place.updated_at),
            }
        })
        .collect();
    events.sort_by_key(|event| (event.starts_at, event.tournament_id));
    Ok(events)
}

/// How the player stands in `tournament` by `place`, or `None` when the feed leaves it out.
fn standing(place: &registrations::Model, tournament: &tournaments::Model, now: DateTime<Utc>) -> Option<Standing> {
    let recently = |at: Option<DateTime<Utc>>| at.is_some_and(|at| at > now - CANCELLED_SHOWN_FOR);
    match (tournament.status, place.status) {
        // Cancelling a tournament cancels every place in it, so this is the same news.
        (TournamentStatus::Cancelled, _) => {
            recently(tournament.cancelled_at.or(place.cancelled_at)).then_some(Standing::Cancelled)
        }
        (_, RegistrationStatus::Cancelled) => recently(place.cancelled_at).then_some(Standing::Cancelled),
        (TournamentStatus::Finished, _) => None,
        (_, RegistrationStatus::Registered | RegistrationStatus::CheckedIn) => Some(Standing::Seated),
        (_, RegistrationStatus::Waitlist) => Some(Standing::Waitlisted),
        (_, RegistrationStatus::NoShow) => None,
    }
}

/// How long the event lasts: the blind structure's planned length (levels and breaks), kept
/// within [`SHORTEST`] and [`LONGEST`]; [`USUAL_LENGTH`] when there are no levels to read.
fn length(levels: Option<&serde_json::Value>) -> Duration {
    let segments = levels.and_then(|levels| serde_json::from_value::<Vec<Segment>>(levels.clone()).ok());
    let minutes: i64 = segments.iter().flatten().map(Segment::duration_min).sum();
    if minutes <= 0 { USUAL_LENGTH } else { Duration::minutes(minutes).clamp(SHORTEST, LONGEST) }
}

/// `text` as a feed may carry it: without C0 controls but tab and LF, and without DEL. The
/// `icalendar` crate escapes LF (as `\n`) but writes CR raw, and a reader that splits lines on
/// a bare CR then takes `\rEND:VEVENT\rBEGIN:VEVENT` in a title for a whole other event. The
/// checks refuse such texts at input; this keeps out the ones stored before they did.
fn feed_text(text: &str) -> String {
    text.chars().filter(|c| !c.is_ascii_control() || matches!(c, '\t' | '\n')).collect()
}

/// The feed as iCalendar text, for the service at `public_url` (its origin names the events'
/// UIDs and the links). Times are in UTC, so the document needs no time zone definitions.
pub fn render(events: &[FeedEvent], public_url: &str) -> String {
    let host = url::Url::parse(public_url)
        .ok()
        .and_then(|origin| origin.host_str().map(str::to_owned))
        .unwrap_or_else(|| "floor".to_owned());
    let mut calendar = Calendar::empty();
    calendar
        .append_property(Property::new("VERSION", "2.0"))
        .append_property(Property::new("PRODID", "-//Floor//Tournament calendar//RU"))
        .append_property(Property::new("CALSCALE", "GREGORIAN"))
        .name("Floor — мои турниры")
        .ttl(&REFRESH_EVERY);
    for event in events {
        let page = format!("{public_url}{}", share_path(event.tournament_id));
        let (status, standing) = match event.standing {
            Standing::Seated => (EventStatus::Confirmed, "Вы зарегистрированы."),
            Standing::Waitlisted => (EventStatus::Tentative, "Вы в листе ожидания."),
            Standing::Cancelled => (EventStatus::Cancelled, "Участие отменено."),
        };
        let mut entry = icalendar::Event::new();
        // The tournament's id keeps the UID stable across fetches and a new address alike,
        // so a calendar updates the event it has rather than adding another.
        entry
            .uid(&format!("{}@{host}", event.tournament_id))
            .timestamp(event.changed_at)
            .last_modified(event.changed_at)
            .starts(event.starts_at)
            .ends(event.ends_at)
            .summary(&feed_text(&event.title))
            .description(&format!("{standing}\nКлуб: {}\nСтраница турнира: {page}", feed_text(&event.club)))
            .url(&page)
            .status(status);
        if let Some((name, address)) = &event.venue {
            entry.location(&feed_text(&format!("{name}, {address}")));
        }
        calendar.push(entry.done());
    }
    calendar.done().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use icalendar::{CalendarDateTime, DatePerhapsTime};

    fn at(hour: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 5, hour, 0, 0).single().expect("a time")
    }

    fn event(standing: Standing) -> FeedEvent {
        FeedEvent {
            tournament_id: Uuid::from_u128(7),
            title: "Пятничный турнир; вход, свободный".to_owned(),
            club: "Ривер".to_owned(),
            venue: Some(("Зал «Ривер»".to_owned(), "Москва, ул. Тверская, 1".to_owned())),
            starts_at: at(16),
            ends_at: at(20),
            standing,
            changed_at: at(9),
        }
    }

    #[test]
    fn secrets_are_64_hex_digits_and_differ() {
        let (first, second) = (new_secret().expect("a secret"), new_secret().expect("a secret"));
        assert!(looks_like_secret(&first) && looks_like_secret(&second));
        assert_ne!(first, second);
        assert!(!looks_like_secret("calendar") && !looks_like_secret(&first.to_uppercase()));
    }

    #[test]
    fn an_event_parses_back_with_its_fields() {
        let text = render(&[event(Standing::Waitlisted)], "https://floor.example");
        assert!(text.contains("\r\n"), "lines end in CRLF");
        let parsed: Calendar = text.parse().expect("the feed parses");
        let events: Vec<&icalendar::Event> = parsed.events().collect();
        assert_eq!(events.len(), 1);
        let parsed = events[0];
        assert_eq!(parsed.get_uid(), Some("00000000-0000-0000-0000-000000000007@floor.example"));
        assert_eq!(parsed.get_summary(), Some("Пятничный турнир; вход, свободный"));
        assert_eq!(parsed.get_location(), Some("Зал «Ривер», Москва, ул. Тверская, 1"));
        assert_eq!(parsed.get_start(), Some(DatePerhapsTime::DateTime(CalendarDateTime::Utc(at(16)))));
        assert_eq!(parsed.get_end(), Some(DatePerhapsTime::DateTime(CalendarDateTime::Utc(at(20)))));
        assert_eq!(parsed.get_timestamp(), Some(at(9)));
        assert_eq!(parsed.get_status(), Some(EventStatus::Tentative));
        let page = "https://floor.example/t/00000000-0000-0000-0000-000000000007";
        assert_eq!(parsed.get_url(), Some(page));
        let description = parsed.get_description().expect("a description");
        assert!(description.contains("Клуб: Ривер") && description.contains(page), "{description}");
    }

    #[test]
    fn controls_stored_in_texts_stay_out_of_the_feed() {
        let mut forged = event(Standing::Seated);
        forged.title = "Турнир\rEND:VEVENT\rBEGIN:VEVENT\rUID:x\r\n\u{b}\u{7f}\u{0}".to_owned();
        forged.club = "Ривер\r\u{c}".to_owned();
        forged.venue = Some(("Зал\r".to_owned(), "Тверская\u{1b}, 1".to_owned()));
        let text = render(&[forged], "https://floor.example");
        assert!(text.split("\r\n").all(|line| !line.contains(['\r', '\n'])), "every line ends in CRLF: {text:?}");
        assert!(!text.contains(|c: char| c.is_ascii_control() && !matches!(c, '\r' | '\n')), "{text:?}");
        let parsed: Calendar = text.parse().expect("the feed parses");
        let events: Vec<&icalendar::Event> = parsed.events().collect();
        assert_eq!(events.len(), 1, "{text}");
        assert_eq!(events[0].get_summary(), Some("ТурнирEND:VEVENTBEGIN:VEVENTUID:x\n"), "a line break stays, escaped");
        assert_eq!(events[0].get_location(), Some("Зал, Тверская, 1"));
        let description = events[0].get_description().expect("a description");
        assert!(description.contains("Клуб: Ривер\n"), "{description:?}");
    }

    #[test]
    fn each_standing_has_its_status() {
        for (standing, expected) in [
            (Standing::Seated, EventStatus::Confirmed),
            (Standing::Waitlisted, EventStatus::Tentative),
            (Standing::Cancelled, EventStatus::Cancelled),
        ] {
            let parsed: Calendar = render(&[event(standing)], "http://localhost:8080").parse().expect("parses");
            let status = parsed.events().next().and_then(|event| event.get_status());
            assert_eq!(status, Some(expected), "{standing:?}");
        }
    }

    #[test]
    fn an_event_lasts_its_structure_within_bounds() {
        let level = |minutes: i64| serde_json::json!({"kind": "level", "durationMin": minutes, "smallBlind": 100, "bigBlind": 200});
        let pause = serde_json::json!({"kind": "break", "durationMin": 15});
        let levels = serde_json::json!([level(20), level(20), pause, level(25)]);
        assert_eq!(length(Some(&levels)), Duration::minutes(80));
        assert_eq!(length(Some(&serde_json::json!([level(10)]))), SHORTEST);
        let endless = serde_json::Value::Array((0..60).map(|_| level(20)).collect());
        assert_eq!(length(Some(&endless)), LONGEST);
        assert_eq!(length(None), USUAL_LENGTH);
        assert_eq!(length(Some(&serde_json::json!({"not": "levels"}))), USUAL_LENGTH);
    }

    #[test]
    fn the_feed_names_itself_and_asks_for_hourly_fetches() {
        let parsed: Calendar = render(&[], "http://localhost:8080").parse().expect("parses");
        assert_eq!(parsed.get_name(), Some("Floor — мои турниры"));
        assert_eq!(parsed.get_ttl(), Some(REFRESH_EVERY));
        assert_eq!(parsed.events().count(), 0);
    }
}
