//! The tournament's one home. Its life as stored ([`lifecycle`]: create, edit, cancel, start,
//! and the `live_version` protocol), who takes part ([`registrations`], decided at its [`desk`]), what they got
//! ([`results`]) and what they hear about it ([`notices`]); here, the reads they share: the one way to lock a tournament for a write,
//! seat counts, the names players are shown under and the title a push names.

pub mod announcements;
pub mod desk;
pub mod lifecycle;
pub mod notices;
pub mod registrations;
pub mod results;

use std::collections::HashMap;

use floor_entities::enums::RegistrationStatus;
use floor_entities::{guest_players, registrations as registration_rows, tournament_translations, tournaments, users};
use sea_orm::sea_query::{Expr, Func};
use sea_orm::{ColumnTrait, ConnectionTrait, DatabaseTransaction, EntityTrait, QueryFilter, QuerySelect};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::infra::db::{IDS_PER_STATEMENT, find_where_in};
use crate::infra::error::{AppError, AppResult};

/// What a player without a name is called on the tables.
pub const UNNAMED_PLAYER: &str = "Игрок";

/// Title and subtitle in one locale.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct TournamentText {
    /// 1 to 200 characters.
    #[schema(
        max_length = 200,
        pattern = "^[\\t\\n\\v\\f\\r ]*[^\\x00-\\x20\\x7F][^\\x00-\\x1F\\x7F]*[\\t\\n\\v\\f\\r ]*$"
    )]
    pub title: String,
    /// Up to 300 characters.
    #[schema(
        max_length = 300,
        pattern = "^[\\t\\n\\v\\f\\r ]*([^\\x00-\\x20\\x7F][^\\x00-\\x1F\\x7F]*)?[\\t\\n\\v\\f\\r ]*$"
    )]
    pub subtitle: Option<String>,
}

/// Reads the tournament inside `tx` and holds it until `tx` ends: `FOR UPDATE` on
/// PostgreSQL; on SQLite the `IMMEDIATE` transaction of `db::begin_write` already excludes
/// every other writer (SQLite has no row locks). Every write that counts seats goes
/// through here, so concurrent registrations see each other.
pub async fn lock(tx: &DatabaseTransaction, id: Uuid) -> AppResult<tournaments::Model> {
    tournaments::Entity::find_by_id(id).lock_exclusive().one(tx).await?.ok_or_else(|| AppError::not_found("tournament"))
}

/// Seats taken (`registered` + `checked_in`) and places in the waitlist, per tournament.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SeatCounts {
    pub taken: i64,
    pub waitlist: i64,
}

/// Seats taken (`registered` + `checked_in`) in one tournament.
pub async fn taken_seats(conn: &impl ConnectionTrait, tournament_id: Uuid) -> AppResult<i64> {
    Ok(seat_counts(conn, &[tournament_id]).await?.get(&tournament_id).map_or(0, |counts| counts.taken))
}

/// The seat counts of each of `ids` (missing ones count zero).
pub async fn seat_counts(conn: &impl ConnectionTrait, ids: &[Uuid]) -> AppResult<HashMap<Uuid, SeatCounts>> {
    let mut rows: Vec<(Uuid, RegistrationStatus, i64)> = Vec::new();
    for chunk in ids.chunks(IDS_PER_STATEMENT) {
        rows.extend(
            registration_rows::Entity::find()
                .select_only()
                .column(registration_rows::Column::TournamentId)
                .column(registration_rows::Column::Status)
                .column_as(Expr::from(Func::count(Expr::col(registration_rows::Column::Id))), "n")
                .filter(registration_rows::Column::TournamentId.is_in(chunk.iter().copied()))
                .filter(registration_rows::Column::Status.is_in([
                    RegistrationStatus::Registered,
                    RegistrationStatus::CheckedIn,
                    RegistrationStatus::Waitlist,
                ]))
                .group_by(registration_rows::Column::TournamentId)
                .group_by(registration_rows::Column::Status)
                .into_tuple::<(Uuid, RegistrationStatus, i64)>()
                .all(conn)
                .await?,
        );
    }
    let mut counts: HashMap<Uuid, SeatCounts> = HashMap::new();
    for (id, status, n) in rows {
        let entry = counts.entry(id).or_default();
        match status {
            RegistrationStatus::Waitlist => entry.waitlist += n,
            _ => entry.taken += n,
        }
    }
    Ok(counts)
}

/// The title people read in a push: Russian (the interface language), else English.
pub async fn display_title(conn: &impl ConnectionTrait, tournament_id: Uuid) -> AppResult<String> {
    Ok(display_titles(conn, &[tournament_id]).await?.remove(&tournament_id).unwrap_or_default())
}

/// [`display_title`] of each of `tournament_ids` that has a text.
pub async fn display_titles(conn: &impl ConnectionTrait, tournament_ids: &[Uuid]) -> AppResult<HashMap<Uuid, String>> {
    let texts = find_where_in::<tournament_translations::Entity, _>(
        conn,
        tournament_translations::Column::TournamentId,
        tournament_ids,
    )
    .await?;
    let mut titles: HashMap<Uuid, String> = HashMap::new();
    // English first, so Russian takes its place wherever both are written.
    for text in texts.iter().filter(|text| text.locale == "en") {
        titles.insert(text.tournament_id, text.title.clone());
    }
    for text in texts.into_iter().filter(|text| text.locale == "ru") {
        titles.insert(text.tournament_id, text.title);
    }
    Ok(titles)
}

/// The name each registration is shown under: the nickname when set, else the name; a
/// guest's walk-in name (also for the account that claimed the guest, until it has a name of
/// its own). Never a phone.
pub async fn player_names<'a>(
    conn: &impl ConnectionTrait,
    registrations: impl Iterator<Item = &'a registration_rows::Model>,
) -> AppResult<HashMap<Uuid, String>> {
    let registrations: Vec<&registration_rows::Model> = registrations.collect();
    let user_ids: Vec<Uuid> = registrations.iter().filter_map(|r| r.user_id).collect();
    let guest_ids: Vec<Uuid> = registrations.iter().filter_map(|r| r.guest_id).collect();
    let users: HashMap<Uuid, String> = find_where_in::<users::Entity, _>(conn, users::Column::Id, &user_ids)
        .await?
        .into_iter()
        .filter_map(|user| Some((user.id, user.nickname.filter(|n| !n.is_empty()).or(user.name)?)))
        .collect();
    let guests: HashMap<Uuid, String> =
        find_where_in::<guest_players::Entity, _>(conn, guest_players::Column::Id, &guest_ids)
            .await?
            .into_iter()
            .map(|guest| (guest.id, guest.name))
            .collect();
    Ok(registrations
        .into_iter()
        .filter_map(|r| {
            // An account that took over a guest's place keeps the walk-in name until it names itself.
            let name = r.user_id.and_then(|id| users.get(&id)).or_else(|| r.guest_id.and_then(|id| guests.get(&id)));
            Some((r.id, name?.clone()))
        })
        .collect())
}

/// The path of a tournament's venue screen at the bare origin (`screenUrl` of the detail).
pub fn screen_path(tournament_id: Uuid) -> String {
    format!("/screen/{tournament_id}")
}

/// The path of a tournament's public page, behind the links the apps share (`shareUrl`).
pub fn share_path(tournament_id: Uuid) -> String {
    format!("/t/{tournament_id}")
}
