//! Tournaments outside the live engine: the one way to lock a tournament for a write, the
//! seat counts shown on a card, and the title a push names.

use std::collections::HashMap;

use floor_entities::enums::RegistrationStatus;
use floor_entities::{registrations, tournament_translations, tournaments};
use sea_orm::sea_query::{Expr, Func};
use sea_orm::{ColumnTrait, ConnectionTrait, DatabaseTransaction, EntityTrait, QueryFilter, QuerySelect};
use uuid::Uuid;

use crate::db::IDS_PER_STATEMENT;
use crate::error::{AppError, AppResult};

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
            registrations::Entity::find()
                .select_only()
                .column(registrations::Column::TournamentId)
                .column(registrations::Column::Status)
                .column_as(Expr::from(Func::count(Expr::col(registrations::Column::Id))), "n")
                .filter(registrations::Column::TournamentId.is_in(chunk.iter().copied()))
                .filter(registrations::Column::Status.is_in([
                    RegistrationStatus::Registered,
                    RegistrationStatus::CheckedIn,
                    RegistrationStatus::Waitlist,
                ]))
                .group_by(registrations::Column::TournamentId)
                .group_by(registrations::Column::Status)
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
    let texts = tournament_translations::Entity::find()
        .filter(tournament_translations::Column::TournamentId.eq(tournament_id))
        .all(conn)
        .await?;
    let by_locale = |locale: &str| texts.iter().find(|t| t.locale == locale).map(|t| t.title.clone());
    Ok(by_locale("ru").or_else(|| by_locale("en")).unwrap_or_default())
}
