//! The sections about what the account did as club staff, dealer or admin: club roles,
//! dealing, the audit records by or about it, tournaments created, announcements, rating
//! settings, and forgiven strikes.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use floor_entities::enums::{MemberRole, TournamentStatus};
use floor_entities::{
    audit_log, dealer_invites, dealer_profiles, organizers, rating_config, strikes, tournament_announcements,
    tournament_dealers, tournaments,
};
use sea_orm::{ColumnTrait, Condition, EntityTrait, QueryFilter};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use super::document::{Cut, Document, Pages};
use super::reading::{Reading, distinct, titled_pages};
use crate::domain::{audit, clubs};
use crate::infra::db::find_where_in;

/// A role in a club.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportMembership {
    pub organizer_id: Uuid,
    pub organizer_name: String,
    pub role: MemberRole,
    pub since: DateTime<Utc>,
}

pub(super) async fn memberships(doc: &mut Document, reading: &Reading<'_>) -> Result<(), Cut> {
    // One row a club the person works in: read at once.
    let rows = clubs::memberships_of(reading.tx, reading.me.id).await?;
    doc.array(rows.into_iter().map(|(member, club)| ExportMembership {
        organizer_id: club.id,
        organizer_name: club.name,
        role: member.role,
        since: member.created_at,
    }))
    .await
}

/// The dealer's showcase profile.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportDealerProfile {
    pub photo_url: Option<String>,
    pub bio: Option<String>,
    pub experience_years: Option<i32>,
    pub games_dealt: i32,
    pub updated_at: DateTime<Utc>,
}

/// A dealer invite the caller claimed, made (as club staff) or was sent; its code (only a
/// hash is kept) and the phone it was made for stay.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportDealerInvite {
    pub id: Uuid,
    pub organizer_id: Uuid,
    pub organizer_name: Option<String>,
    /// Made for the caller's phone.
    pub for_me: bool,
    pub created_by_me: bool,
    pub claimed_by_me: bool,
    pub expires_at: DateTime<Utc>,
    pub claimed_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

/// A tournament the caller was assigned to deal.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportDealerAssignment {
    pub id: Uuid,
    pub tournament_id: Uuid,
    pub tournament_title: Option<String>,
    pub table_no: Option<i32>,
    pub created_at: DateTime<Utc>,
}

/// `{profile, invites, assignments}`.
pub(super) async fn dealer(doc: &mut Document, reading: &Reading<'_>) -> Result<(), Cut> {
    let me = reading.me;
    doc.begin_object();
    doc.key("profile")?;
    let profile = dealer_profiles::Entity::find_by_id(me.id).one(reading.tx).await?;
    doc.value(&profile.map(|profile| ExportDealerProfile {
        photo_url: profile.photo_url,
        bio: profile.bio,
        experience_years: profile.experience_years,
        games_dealt: profile.games_dealt,
        updated_at: profile.updated_at,
    }))?;

    doc.key("invites")?;
    let mine = Condition::any()
        .add(dealer_invites::Column::ClaimedByUserId.eq(me.id))
        .add(dealer_invites::Column::CreatedByUserId.eq(me.id))
        .add(dealer_invites::Column::Phone.eq(me.phone.as_str()));
    let mut invites = Pages::<dealer_invites::Entity>::new(mine, dealer_invites::Column::Id, |row| row.id);
    doc.begin_array();
    while let Some(rows) = invites.next(reading.tx).await? {
        let club_ids: Vec<Uuid> = distinct(rows.iter().map(|row| row.organizer_id));
        let clubs: HashMap<Uuid, String> =
            find_where_in::<organizers::Entity, _>(reading.tx, organizers::Column::Id, &club_ids)
                .await?
                .into_iter()
                .map(|club| (club.id, club.name))
                .collect();
        doc.items(rows.into_iter().map(|row| ExportDealerInvite {
            id: row.id,
            organizer_id: row.organizer_id,
            organizer_name: clubs.get(&row.organizer_id).cloned(),
            for_me: row.phone == me.phone,
            created_by_me: row.created_by_user_id == Some(me.id),
            claimed_by_me: row.claimed_by_user_id == Some(me.id),
            expires_at: row.expires_at,
            claimed_at: row.claimed_at,
            created_at: row.created_at,
        }))
        .await?;
    }
    doc.end();

    doc.key("assignments")?;
    let assignments = Pages::<tournament_dealers::Entity>::new(
        tournament_dealers::Column::DealerUserId.eq(me.id),
        tournament_dealers::Column::Id,
        |row| row.id,
    );
    titled_pages(
        doc,
        reading.tx,
        assignments,
        |row| row.tournament_id,
        |row, tournament_title| ExportDealerAssignment {
            id: row.id,
            tournament_id: row.tournament_id,
            tournament_title,
            table_no: row.table_no,
            created_at: row.created_at,
        },
    )
    .await?;
    doc.end();
    Ok(())
}

/// A record of the audit log that the caller made, or that is about the caller's account.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportAuditEntry {
    pub id: Uuid,
    /// Dotted verb such as `user.ban` or `tournament.start`.
    pub action: String,
    pub target_type: Option<String>,
    pub target_id: Option<String>,
    /// Whether the caller did it; someone else's act on the account does not name them.
    pub by_me: bool,
    /// What changed, as recorded, less any phone (another person's, as the one a dealer
    /// invite was made for).
    #[schema(value_type = Object)]
    pub details: Value,
    pub created_at: DateTime<Utc>,
}

pub(super) async fn audit_entries(doc: &mut Document, reading: &Reading<'_>) -> Result<(), Cut> {
    let me = reading.me.id;
    let about_me = Condition::any().add(audit_log::Column::ActorUserId.eq(me)).add(
        Condition::all()
            .add(audit_log::Column::TargetType.eq("user"))
            .add(audit_log::Column::TargetId.eq(me.to_string())),
    );
    let pages = Pages::<audit_log::Entity>::new(about_me, audit_log::Column::Id, |row| row.id);
    doc.pages(reading.tx, pages, |row| ExportAuditEntry {
        id: row.id,
        action: row.action,
        target_type: row.target_type,
        target_id: row.target_id,
        by_me: row.actor_user_id == Some(me),
        // A phone is the one detail that is someone else's to give.
        details: audit::without_phones(row.details),
        created_at: row.created_at,
    })
    .await
}

/// A tournament the caller created, as club staff.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportTournament {
    pub id: Uuid,
    pub title: Option<String>,
    pub organizer_id: Uuid,
    pub status: TournamentStatus,
    pub starts_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
}

pub(super) async fn created_tournaments(doc: &mut Document, reading: &Reading<'_>) -> Result<(), Cut> {
    let pages = Pages::<tournaments::Entity>::new(
        tournaments::Column::CreatedByUserId.eq(reading.me.id),
        tournaments::Column::Id,
        |row| row.id,
    );
    titled_pages(
        doc,
        reading.tx,
        pages,
        |row| row.id,
        |row, title| ExportTournament {
            id: row.id,
            title,
            organizer_id: row.organizer_id,
            status: row.status,
            starts_at: row.starts_at,
            created_at: row.created_at,
        },
    )
    .await
}

/// A message the caller sent to a tournament's players, as club staff.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportAnnouncement {
    pub id: Uuid,
    pub tournament_id: Uuid,
    pub text: String,
    pub created_at: DateTime<Utc>,
}

pub(super) async fn announcements(doc: &mut Document, reading: &Reading<'_>) -> Result<(), Cut> {
    let pages = Pages::<tournament_announcements::Entity>::new(
        tournament_announcements::Column::CreatedByUserId.eq(reading.me.id),
        tournament_announcements::Column::Id,
        |row| row.id,
    );
    doc.pages(reading.tx, pages, |row| ExportAnnouncement {
        id: row.id,
        tournament_id: row.tournament_id,
        text: row.text,
        created_at: row.created_at,
    })
    .await
}

/// The platform's rating settings, when the caller (an admin) changed them last.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportRatingConfigUpdate {
    pub updated_at: DateTime<Utc>,
}

pub(super) async fn rating_config_updates(doc: &mut Document, reading: &Reading<'_>) -> Result<(), Cut> {
    // One row of settings on the whole platform.
    let rows = rating_config::Entity::find()
        .filter(rating_config::Column::UpdatedByUserId.eq(reading.me.id))
        .all(reading.tx)
        .await?;
    doc.array(rows.into_iter().map(|row| ExportRatingConfigUpdate { updated_at: row.updated_at })).await
}

/// A strike the caller forgave, as club staff.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportForgivenStrike {
    pub id: Uuid,
    /// The player it was forgiven to.
    pub user_id: Uuid,
    pub tournament_id: Uuid,
    pub forgiven_at: Option<DateTime<Utc>>,
}

pub(super) async fn forgiven_strikes(doc: &mut Document, reading: &Reading<'_>) -> Result<(), Cut> {
    let pages = Pages::<strikes::Entity>::new(
        strikes::Column::ForgivenByUserId.eq(reading.me.id),
        strikes::Column::Id,
        |row| row.id,
    );
    doc.pages(reading.tx, pages, |row| ExportForgivenStrike {
        id: row.id,
        user_id: row.user_id,
        tournament_id: row.tournament_id,
        forgiven_at: row.forgiven_at,
    })
    .await
}
