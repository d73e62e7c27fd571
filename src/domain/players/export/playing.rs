//! The sections about playing: places in tournaments, results, strikes, follows, and the
//! guest places the account took over.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use floor_entities::enums::{RegistrationSource, RegistrationStatus, StrikeReason};
use floor_entities::{follows, guest_players, registrations, results, strikes, table_seats};
use sea_orm::ColumnTrait;
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::document::{Cut, Document, Pages};
use super::reading::{Reading, titled_pages, titles_of};
use crate::infra::db::find_where_in;

/// A place in a tournament.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportRegistration {
    pub id: Uuid,
    pub tournament_id: Uuid,
    /// The Russian title, else the English one.
    pub tournament_title: Option<String>,
    pub status: RegistrationStatus,
    pub source: RegistrationSource,
    pub seated_from_waitlist: bool,
    /// The guest place this came from, when a club seated the phone before the account existed.
    pub guest_id: Option<Uuid>,
    /// Where the player sat (or sat last, once out).
    pub seat: Option<ExportSeat>,
    pub checked_in_at: Option<DateTime<Utc>>,
    pub cancelled_at: Option<DateTime<Utc>>,
    pub eliminated_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A seat at a table.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportSeat {
    pub table_no: i32,
    pub seat_no: i32,
    /// False once the player is out.
    pub active: bool,
}

pub(super) async fn registrations(doc: &mut Document, reading: &Reading<'_>) -> Result<(), Cut> {
    let mut pages = Pages::<registrations::Entity>::new(
        registrations::Column::UserId.eq(reading.me.id),
        registrations::Column::Id,
        |row| row.id,
    );
    doc.begin_array();
    while let Some(rows) = pages.next(reading.tx).await? {
        let titles = titles_of(reading.tx, rows.iter().map(|row| row.tournament_id)).await?;
        let ids: Vec<Uuid> = rows.iter().map(|row| row.id).collect();
        let seats: HashMap<Uuid, table_seats::Model> =
            find_where_in::<table_seats::Entity, _>(reading.tx, table_seats::Column::RegistrationId, &ids)
                .await?
                .into_iter()
                .map(|seat| (seat.registration_id, seat))
                .collect();
        doc.items(rows.into_iter().map(|row| ExportRegistration {
            id: row.id,
            tournament_id: row.tournament_id,
            tournament_title: titles.get(&row.tournament_id).cloned(),
            status: row.status,
            source: row.source,
            seated_from_waitlist: row.seated_from_waitlist,
            guest_id: row.guest_id,
            seat: seats.get(&row.id).map(|seat| ExportSeat {
                table_no: seat.table_no,
                seat_no: seat.seat_no,
                active: seat.active,
            }),
            checked_in_at: row.checked_in_at,
            cancelled_at: row.cancelled_at,
            eliminated_at: row.eliminated_at,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }))
        .await?;
    }
    doc.end();
    Ok(())
}

/// A confirmed place with what it awarded.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportResult {
    pub id: Uuid,
    pub tournament_id: Uuid,
    pub tournament_title: Option<String>,
    pub registration_id: Uuid,
    /// The guest place it was played under, when it was.
    pub guest_id: Option<Uuid>,
    pub place: i32,
    pub season_points: i32,
    pub xp: i32,
    /// Raw skill (0 to 1) before and after.
    pub skill_before: Option<f64>,
    pub skill_after: Option<f64>,
    pub created_at: DateTime<Utc>,
}

pub(super) async fn results(doc: &mut Document, reading: &Reading<'_>) -> Result<(), Cut> {
    let pages =
        Pages::<results::Entity>::new(results::Column::UserId.eq(reading.me.id), results::Column::Id, |row| row.id);
    titled_pages(
        doc,
        reading.tx,
        pages,
        |row| row.tournament_id,
        |row, tournament_title| ExportResult {
            id: row.id,
            tournament_id: row.tournament_id,
            tournament_title,
            registration_id: row.registration_id,
            guest_id: row.guest_id,
            place: row.place,
            season_points: row.season_points,
            xp: row.xp,
            skill_before: row.skill_before,
            skill_after: row.skill_after,
            created_at: row.created_at,
        },
    )
    .await
}

/// A strike for a no-show or a late cancellation; the ban they make is the profile's
/// `player.banUntil`.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportStrike {
    pub id: Uuid,
    pub tournament_id: Uuid,
    pub tournament_title: Option<String>,
    pub registration_id: Uuid,
    pub reason: StrikeReason,
    pub created_at: DateTime<Utc>,
    /// When the club forgave it (who did is the club's to know).
    pub forgiven_at: Option<DateTime<Utc>>,
}

pub(super) async fn strikes(doc: &mut Document, reading: &Reading<'_>) -> Result<(), Cut> {
    let pages =
        Pages::<strikes::Entity>::new(strikes::Column::UserId.eq(reading.me.id), strikes::Column::Id, |row| row.id);
    titled_pages(
        doc,
        reading.tx,
        pages,
        |row| row.tournament_id,
        |row, tournament_title| ExportStrike {
            id: row.id,
            tournament_id: row.tournament_id,
            tournament_title,
            registration_id: row.registration_id,
            reason: row.reason,
            created_at: row.created_at,
            forgiven_at: row.forgiven_at,
        },
    )
    .await
}

/// Another player on one side of a follow: only their id, never their phone or name.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportFollow {
    pub user_id: Uuid,
    pub since: DateTime<Utc>,
}

/// `{following, followers}`: the players the caller follows, and those who follow the caller.
pub(super) async fn follows(doc: &mut Document, reading: &Reading<'_>) -> Result<(), Cut> {
    let me = reading.me.id;
    doc.begin_object();
    doc.key("following")?;
    let following =
        Pages::<follows::Entity>::new(follows::Column::FollowerId.eq(me), follows::Column::FolloweeId, |row| {
            row.followee_id
        });
    doc.pages(reading.tx, following, |row| ExportFollow { user_id: row.followee_id, since: row.created_at }).await?;
    doc.key("followers")?;
    let followers =
        Pages::<follows::Entity>::new(follows::Column::FolloweeId.eq(me), follows::Column::FollowerId, |row| {
            row.follower_id
        });
    doc.pages(reading.tx, followers, |row| ExportFollow { user_id: row.follower_id, since: row.created_at }).await?;
    doc.end();
    Ok(())
}

/// A place a club gave the caller's phone before the account existed, which the account took
/// over at sign-up.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportGuestPlace {
    pub id: Uuid,
    /// The name the club wrote down.
    pub name: String,
    pub created_at: DateTime<Utc>,
}

pub(super) async fn guest_places(doc: &mut Document, reading: &Reading<'_>) -> Result<(), Cut> {
    let pages = Pages::<guest_players::Entity>::new(
        guest_players::Column::ClaimedByUserId.eq(reading.me.id),
        guest_players::Column::Id,
        |row| row.id,
    );
    doc.pages(reading.tx, pages, |row| ExportGuestPlace { id: row.id, name: row.name, created_at: row.created_at })
        .await
}
