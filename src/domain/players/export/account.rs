//! The sections about the account itself: the profile, consent, devices, sessions,
//! notifications, the calendar link, and merges.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use floor_entities::enums::{AdminRole, PushPlatform, UserStatus};
use floor_entities::{
    calendar_links, consent_changes, notifications, player_profiles, push_tokens, refresh_tokens, users,
};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use super::document::{Cut, Document, Pages};
use super::reading::Reading;

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

/// The account this one was merged into (a duplicate, banned for good), or null.
pub(super) async fn merged_into(doc: &mut Document, reading: &Reading<'_>) -> Result<(), Cut> {
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
