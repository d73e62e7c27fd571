//! What each section of the export reads, and the shape of its entries: the rows that hold
//! the player's id, as stored, less the secrets and other people's details (see the module
//! above for what is withheld and why).

use std::collections::{BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use floor_entities::enums::{
    AdminRole, MemberRole, PushPlatform, RegistrationSource, RegistrationStatus, StrikeReason, TournamentStatus,
    UserStatus,
};
use floor_entities::{
    audit_log, calendar_links, consent_changes, dealer_invites, dealer_profiles, follows, guest_players, notifications,
    organizers, player_profiles, push_tokens, rating_config, refresh_tokens, registrations, results, strikes,
    table_seats, tournament_announcements, tournament_dealers, tournaments, users,
};
use sea_orm::{ColumnTrait, Condition, DatabaseTransaction, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use super::document::{Cut, Document, Pages};
use crate::db::find_where_in;
use crate::error::AppResult;
use crate::tournaments::display_titles;
use crate::{audit, clubs};

/// What every section reads from: one snapshot of the database, and the account as it stands
/// in it.
pub(super) struct Reading<'a> {
    pub tx: &'a DatabaseTransaction,
    pub me: &'a users::Model,
}

/// The account, with the player's rating state.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportProfile {
    pub id: Uuid,
    /// E.164: the sign-in identity.
    pub phone: String,
    pub name: Option<String>,
    pub nickname: Option<String>,
    pub avatar_url: Option<String>,
    pub city_slug: Option<String>,
    pub status: UserStatus,
    pub admin_role: Option<AdminRole>,
    pub deleted_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Null only for an account whose rating state was never made.
    pub player: Option<ExportPlayer>,
}

/// The player's rating state, rebuilt from their results.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportPlayer {
    pub xp: i64,
    pub level: i32,
    /// As stored, 0 to 1 (the apps show `1 + 9 × skill`).
    pub skill: f64,
    pub games_played: i32,
    pub wins: i32,
    /// Registration is refused until then (strikes).
    pub ban_until: Option<DateTime<Utc>>,
    pub updated_at: DateTime<Utc>,
}

pub(super) async fn profile(doc: &mut Document, reading: &Reading<'_>) -> Result<(), Cut> {
    let me = reading.me;
    let player = player_profiles::Entity::find_by_id(me.id).one(reading.tx).await?;
    doc.value(&ExportProfile {
        id: me.id,
        phone: me.phone.clone(),
        name: me.name.clone(),
        nickname: me.nickname.clone(),
        avatar_url: me.avatar_url.clone(),
        city_slug: me.city_slug.clone(),
        status: me.status,
        admin_role: me.admin_role,
        deleted_at: me.deleted_at,
        created_at: me.created_at,
        updated_at: me.updated_at,
        player: player.map(|player| ExportPlayer {
            xp: player.xp,
            level: player.level,
            skill: player.skill,
            games_played: player.games_played,
            wins: player.wins,
            ban_until: player.ban_until,
            updated_at: player.updated_at,
        }),
    })
}

/// Consent as it stands and every change of it.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportConsent {
    /// When the consent in force was given; null without one.
    pub consent_accepted_at: Option<DateTime<Utc>>,
    /// `CONSENT_VERSION` of the text accepted; null without consent.
    pub consent_version: Option<String>,
    /// Oldest first.
    pub changes: Vec<ExportConsentChange>,
}

/// One giving or withdrawing of consent.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportConsentChange {
    /// `true` given, `false` withdrawn.
    pub accepted: bool,
    pub version: Option<String>,
    pub changed_at: DateTime<Utc>,
}

pub(super) async fn consent(doc: &mut Document, reading: &Reading<'_>) -> Result<(), Cut> {
    // A change a version of the text or a withdrawal: a handful in a lifetime, read at once.
    let changes = consent_changes::Entity::find()
        .filter(consent_changes::Column::UserId.eq(reading.me.id))
        .order_by_asc(consent_changes::Column::ChangedAt)
        .order_by_asc(consent_changes::Column::Id)
        .all(reading.tx)
        .await?;
    doc.value(&ExportConsent {
        consent_accepted_at: reading.me.consent_accepted_at,
        consent_version: reading.me.consent_version.clone(),
        changes: changes
            .into_iter()
            .map(|change| ExportConsentChange {
                accepted: change.accepted,
                version: change.version,
                changed_at: change.changed_at,
            })
            .collect(),
    })
}

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

/// A device that receives the caller's pushes; its token, which would let anyone push to it,
/// stays.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportDevice {
    pub platform: PushPlatform,
    pub created_at: DateTime<Utc>,
    /// When the device last registered its token.
    pub updated_at: DateTime<Utc>,
}

pub(super) async fn devices(doc: &mut Document, reading: &Reading<'_>) -> Result<(), Cut> {
    // A few devices a person: read at once.
    let rows = push_tokens::Entity::find()
        .filter(push_tokens::Column::UserId.eq(reading.me.id))
        .order_by_asc(push_tokens::Column::CreatedAt)
        .all(reading.tx)
        .await?;
    doc.array(rows.into_iter().map(|row| ExportDevice {
        platform: row.platform,
        created_at: row.created_at,
        updated_at: row.updated_at,
    }))
    .await
}

/// One sign-in and the refreshes of its token (a token family); the tokens and their hashes
/// stay.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportSession {
    pub started_at: DateTime<Utc>,
    /// When its current token was issued (the last refresh, or the sign-in).
    pub renewed_at: DateTime<Utc>,
    /// When its current token expires unless refreshed.
    pub expires_at: DateTime<Utc>,
    /// When its current token was spent or revoked: the session is over. Null while it lasts.
    pub revoked_at: Option<DateTime<Utc>>,
    /// Tokens it issued: the sign-in's and one a refresh.
    pub tokens: u64,
}

impl ExportSession {
    fn of(token: &refresh_tokens::Model) -> Self {
        Self {
            started_at: token.created_at,
            renewed_at: token.created_at,
            expires_at: token.expires_at,
            revoked_at: token.revoked_at,
            tokens: 1,
        }
    }

    /// Counts `token` in, which becomes the current one when it is the newest.
    fn add(&mut self, token: &refresh_tokens::Model) {
        self.tokens += 1;
        self.started_at = self.started_at.min(token.created_at);
        if token.created_at >= self.renewed_at {
            self.renewed_at = token.created_at;
            self.expires_at = token.expires_at;
            self.revoked_at = token.revoked_at;
        }
    }
}

pub(super) async fn sessions(doc: &mut Document, reading: &Reading<'_>) -> Result<(), Cut> {
    // Tokens (one a refresh) are read a page at a time; what is kept is one line a sign-in.
    let mut families: HashMap<Uuid, ExportSession> = HashMap::new();
    let mut pages = Pages::<refresh_tokens::Entity>::new(
        refresh_tokens::Column::UserId.eq(reading.me.id),
        refresh_tokens::Column::Id,
        |row| row.id,
    );
    while let Some(rows) = pages.next(reading.tx).await? {
        for token in &rows {
            families
                .entry(token.family_id)
                .and_modify(|family| family.add(token))
                .or_insert_with(|| ExportSession::of(token));
        }
    }
    let mut families: Vec<ExportSession> = families.into_values().collect();
    families.sort_by_key(|family| family.started_at);
    doc.array(families).await
}

/// One notification of the journal, pushed or not.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportNotification {
    pub id: Uuid,
    pub kind: String,
    #[schema(value_type = Object)]
    pub payload: Value,
    /// What kept it from being sent twice (a reminder's tournament and window).
    pub dedup_key: Option<String>,
    pub created_at: DateTime<Utc>,
    pub sent_at: Option<DateTime<Utc>>,
}

pub(super) async fn notifications(doc: &mut Document, reading: &Reading<'_>) -> Result<(), Cut> {
    let pages = Pages::<notifications::Entity>::new(
        notifications::Column::UserId.eq(reading.me.id),
        notifications::Column::Id,
        |row| row.id,
    );
    doc.pages(reading.tx, pages, |row| ExportNotification {
        id: row.id,
        kind: row.kind,
        payload: row.payload,
        dedup_key: row.dedup_key,
        created_at: row.created_at,
        sent_at: row.sent_at,
    })
    .await
}

/// Whether the caller has a calendar feed address; the address is a secret and stays.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportCalendarLink {
    pub exists: bool,
    pub created_at: Option<DateTime<Utc>>,
}

pub(super) async fn calendar_link(doc: &mut Document, reading: &Reading<'_>) -> Result<(), Cut> {
    let link = calendar_links::Entity::find_by_id(reading.me.id).one(reading.tx).await?;
    doc.value(&ExportCalendarLink { exists: link.is_some(), created_at: link.map(|link| link.created_at) })
}

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

/// The account this one was merged into (a duplicate, banned for good), or null.
pub(super) fn merged_into(doc: &mut Document, reading: &Reading<'_>) -> Result<(), Cut> {
    doc.value(&reading.me.merged_into_user_id)
}

/// The duplicate accounts merged into this one, by id.
pub(super) async fn merged_from(doc: &mut Document, reading: &Reading<'_>) -> Result<(), Cut> {
    // Merges are a moderator's rare repair: a few ids at most.
    let ids: Vec<Uuid> = users::Entity::find()
        .select_only()
        .column(users::Column::Id)
        .filter(users::Column::MergedIntoUserId.eq(reading.me.id))
        .order_by_asc(users::Column::Id)
        .into_tuple()
        .all(reading.tx)
        .await?;
    doc.value(&ids)
}

/// Each distinct id of `ids`.
fn distinct(ids: impl Iterator<Item = Uuid>) -> Vec<Uuid> {
    ids.collect::<BTreeSet<Uuid>>().into_iter().collect()
}

/// [`Document::pages`] of rows about a tournament (`tournament_of` names it), each entry made
/// with the tournament's title.
async fn titled_pages<E: EntityTrait, T: Serialize>(
    doc: &mut Document,
    tx: &DatabaseTransaction,
    mut pages: Pages<E>,
    tournament_of: fn(&E::Model) -> Uuid,
    entry: impl Fn(E::Model, Option<String>) -> T,
) -> Result<(), Cut> {
    doc.begin_array();
    while let Some(rows) = pages.next(tx).await? {
        let titles = titles_of(tx, rows.iter().map(tournament_of)).await?;
        doc.items(rows.into_iter().map(|row| {
            let title = titles.get(&tournament_of(&row)).cloned();
            entry(row, title)
        }))
        .await?;
    }
    doc.end();
    Ok(())
}

/// The title of each of the tournaments `ids` names.
async fn titles_of(tx: &DatabaseTransaction, ids: impl Iterator<Item = Uuid>) -> AppResult<HashMap<Uuid, String>> {
    display_titles(tx, &distinct(ids)).await
}
