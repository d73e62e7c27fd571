//! A tournament's life as stored: created open for registration, edited while registration
//! is open (its presentation at any time, by the platform), cancelled, and started.
//!
//! # The `live_version` protocol
//! A tournament's LiveState is the picture its actor publishes, and `live_version` names it.
//! Every write that changes that picture moves the stored version on by one in the write's
//! own transaction, guarded by the version and the status the writer decided on
//! ([`advance_live_version`]), so a change decided on a stale picture is never written. A
//! change the actor makes (start, the clock, eliminations, confirmation) is published by the
//! actor as it answers; a change made beside it (a new structure, a cancel) is published by
//! [`publish`] once it has committed, so a read after the answer shows it.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use floor_entities::enums::{TournamentStatus, TournamentType};
use floor_entities::{locations, tournament_translations, tournaments};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter, Set, UpdateMany,
};
use serde_json::json;
use uuid::Uuid;

use super::notices::{self, Appointment};
use super::registrations::{cancel_all, fill_free_seats};
use super::{TournamentText, display_title, lock, taken_seats};
use crate::domain::audit;
use crate::domain::notifications::{Journaled, Notifier};
use crate::domain::seasons::ensure_season;
use crate::infra::db;
use crate::infra::error::{AppError, AppResult, ErrorCode};

mod live_version;
mod start;

pub use self::live_version::{advance_live_version, advance_live_version_by, advance_live_versions};
pub use self::start::start;

/// The version of a new tournament's live picture.
const FIRST_LIVE_VERSION: i64 = 0;

/// [`advance_live_version`] for a writer that holds the tournament's lock, where nobody can
/// have moved the version meanwhile.
async fn advance_locked(
    conn: &impl ConnectionTrait,
    tournament: &tournaments::Model,
    change: UpdateMany<tournaments::Entity>,
    now: DateTime<Utc>,
) -> AppResult<()> {
    if advance_live_version(conn, tournament.id, (tournament.live_version, tournament.status), change, now).await? {
        Ok(())
    } else {
        Err(AppError::Internal(anyhow::anyhow!("tournament {} moved on while it was locked", tournament.id)))
    }
}

/// Where a change made beside the tournament's actor goes once it has committed: the live
/// engine, which returns when the actor has read it and told the watchers.
pub trait LiveChanges {
    fn changed(&self, tournament_id: Uuid) -> impl Future<Output = ()> + Send;
}

async fn publish(live: &impl LiveChanges, tournament_id: Uuid) {
    live.changed(tournament_id).await;
}

/// A tournament's texts by locale (`ru`, `en`).
pub type Texts = BTreeMap<&'static str, TournamentText>;

/// A new tournament, its fields checked.
pub struct TournamentDraft {
    pub location_id: Uuid,
    pub blind_template_id: Uuid,
    pub tournament_type: TournamentType,
    pub starts_at: DateTime<Utc>,
    pub capacity: i32,
    pub prizes: Option<String>,
    pub chat_link: Option<String>,
    pub banner_url: Option<String>,
    pub texts: Texts,
}

/// What people read about a tournament, beside the game itself: the club may change it while
/// registration is open, the platform's content admins at any time. `None` leaves a field,
/// `Some(None)` clears it; given locales of `texts` replace those texts, others stay.
#[derive(Default)]
pub struct Presentation {
    pub prizes: Option<Option<String>>,
    pub banner_url: Option<Option<String>>,
    pub texts: Texts,
}

impl Presentation {
    /// Sets the given fields on `active`; the texts are left for [`write_texts`].
    fn apply(self, active: &mut tournaments::ActiveModel) -> Texts {
        if let Some(prizes) = self.prizes {
            active.prizes = Set(prizes);
        }
        if let Some(banner_url) = self.banner_url {
            active.banner_url = Set(banner_url);
        }
        self.texts
    }
}

/// An edit while registration is open, its fields checked; `None` leaves a field.
pub struct TournamentChanges {
    pub location_id: Option<Uuid>,
    pub blind_template_id: Option<Uuid>,
    pub tournament_type: Option<TournamentType>,
    pub starts_at: Option<DateTime<Utc>>,
    /// Not below the seats already taken; a larger capacity promotes from the waitlist.
    pub capacity: Option<i32>,
    pub chat_link: Option<Option<String>>,
    pub presentation: Presentation,
}

/// Creates a tournament of `organizer_id` in `registration`, open at once, in the season of
/// its start.
pub async fn create(
    db: &DatabaseConnection,
    organizer_id: Uuid,
    by: Uuid,
    draft: TournamentDraft,
) -> AppResult<tournaments::Model> {
    let now = Utc::now();
    let tx = db::begin_write(db).await?;
    let season = ensure_season(&tx, draft.starts_at.date_naive()).await?;
    let tournament = tournaments::ActiveModel {
        id: Set(Uuid::now_v7()),
        organizer_id: Set(organizer_id),
        location_id: Set(draft.location_id),
        season_id: Set(season.id),
        blind_template_id: Set(draft.blind_template_id),
        tournament_type: Set(draft.tournament_type),
        starts_at: Set(draft.starts_at),
        capacity: Set(draft.capacity),
        status: Set(TournamentStatus::Registration),
        prizes: Set(draft.prizes),
        chat_link: Set(draft.chat_link),
        banner_url: Set(draft.banner_url),
        entry_fee: Set(0),
        payment_status: Set("not_required".to_owned()),
        clock_levels: Set(None),
        current_level_idx: Set(0),
        level_started_at: Set(None),
        paused_at: Set(None),
        last_command_at: Set(None),
        chips_in_play: Set(0),
        live_version: Set(FIRST_LIVE_VERSION),
        started_at: Set(None),
        finished_at: Set(None),
        cancelled_at: Set(None),
        created_by_user_id: Set(Some(by)),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&tx)
    .await?;
    write_texts(&tx, tournament.id, draft.texts).await?;
    audit::record(
        &tx,
        Some(by),
        "tournament.create",
        ("tournament", tournament.id.to_string()),
        json!({"organizerId": organizer_id}),
    )
    .await?;
    tx.commit().await?;
    Ok(tournament)
}

/// Edits a tournament while registration is open. A new blind template is a new version of
/// the pre-start LiveState (it shows the structure); a larger capacity moves the queue up.
pub async fn update(
    db: &DatabaseConnection,
    notifier: &Notifier,
    live: &impl LiveChanges,
    tournament_id: Uuid,
    by: Uuid,
    changes: TournamentChanges,
) -> AppResult<tournaments::Model> {
    let now = Utc::now();
    let tx = db::begin_write(db).await?;
    let tournament = lock(&tx, tournament_id).await?;
    if tournament.status != TournamentStatus::Registration {
        return Err(AppError::new(
            ErrorCode::InvalidStatus,
            "a tournament can be edited only while registration is open",
        ));
    }
    if let Some(capacity) = changes.capacity {
        let taken = taken_seats(&tx, tournament.id).await?;
        if i64::from(capacity) < taken {
            return Err(AppError::invalid_field(
                "capacity",
                format!("must not be below the {taken} seats already taken"),
            ));
        }
    }
    let new_structure = changes.blind_template_id.filter(|id| *id != tournament.blind_template_id);
    if new_structure.is_some() {
        advance_locked(&tx, &tournament, tournaments::Entity::update_many(), now).await?;
    }
    let before = (tournament.starts_at, tournament.location_id, tournament.updated_at);
    let mut active: tournaments::ActiveModel = tournament.into();
    if let Some(id) = changes.location_id {
        active.location_id = Set(id);
    }
    if let Some(id) = new_structure {
        active.blind_template_id = Set(id);
    }
    if let Some(kind) = changes.tournament_type {
        active.tournament_type = Set(kind);
    }
    if let Some(starts_at) = changes.starts_at {
        active.starts_at = Set(starts_at);
        active.season_id = Set(ensure_season(&tx, starts_at.date_naive()).await?.id);
    }
    if let Some(capacity) = changes.capacity {
        active.capacity = Set(capacity);
    }
    if let Some(chat_link) = changes.chat_link {
        active.chat_link = Set(chat_link);
    }
    let texts = changes.presentation.apply(&mut active);
    active.updated_at = Set(now);
    let updated = active.update(&tx).await?;
    write_texts(&tx, updated.id, texts).await?;
    // A larger capacity frees seats: the queue moves up at once.
    let promoted = fill_free_seats(&tx, notifier, &updated, None).await?;
    let moved = tell_of_move(&tx, notifier, before, &updated).await?;
    audit::record(&tx, Some(by), "tournament.update", ("tournament", updated.id.to_string()), json!({})).await?;
    tx.commit().await?;
    notifier.push_in_background(db, promoted.into_iter().chain(moved).collect());
    if new_structure.is_some() {
        publish(live, updated.id).await;
    }
    Ok(updated)
}

/// Tells everyone holding a place in `updated` that its start or venue moved from `before`
/// (start, venue, and the edit stamp naming the edit); journaled in `tx`.
async fn tell_of_move(
    tx: &impl ConnectionTrait,
    notifier: &Notifier,
    (starts_at, location_id, edited_at): (DateTime<Utc>, Uuid, DateTime<Utc>),
    updated: &tournaments::Model,
) -> AppResult<Option<Journaled>> {
    if starts_at == updated.starts_at && location_id == updated.location_id {
        return Ok(None);
    }
    let venue = |id: Uuid| async move {
        locations::Entity::find_by_id(id)
            .one(tx)
            .await?
            .ok_or_else(|| AppError::Internal(anyhow::anyhow!("tournament {} has no venue {id}", updated.id)))
    };
    let (old_venue, new_venue) = (venue(location_id).await?, venue(updated.location_id).await?);
    let before = Appointment { starts_at, venue: &old_venue };
    let after = Appointment { starts_at: updated.starts_at, venue: &new_venue };
    let title = display_title(tx, updated.id).await?;
    let recipients = notices::live_registrants(tx, updated.id).await?;
    match notices::changed(updated.id, &title, &before, &after, edited_at, recipients) {
        Some(notice) => Ok(Some(notifier.journal(tx, notice).await?)),
        None => Ok(None),
    }
}

/// Changes what people read about a tournament, in any status (the platform's content
/// admins). Only the presentation columns are written: the live engine's stay its own.
pub async fn update_presentation(
    db: &DatabaseConnection,
    tournament_id: Uuid,
    by: Uuid,
    presentation: Presentation,
) -> AppResult<tournaments::Model> {
    let tx = db::begin_write(db).await?;
    let tournament = lock(&tx, tournament_id).await?;
    let mut active: tournaments::ActiveModel = tournament.into();
    let texts = presentation.apply(&mut active);
    let locales: Vec<&str> = texts.keys().copied().collect();
    let fields = json!({
        "prizes": active.prizes.is_set(),
        "bannerUrl": active.banner_url.is_set(),
        "translations": locales,
    });
    active.updated_at = Set(Utc::now());
    let updated = active.update(&tx).await?;
    write_texts(&tx, updated.id, texts).await?;
    audit::record(
        &tx,
        Some(by),
        "admin.tournament.update",
        ("tournament", updated.id.to_string()),
        json!({"changed": fields}),
    )
    .await?;
    tx.commit().await?;
    Ok(updated)
}

/// Replaces the texts of the given locales.
async fn write_texts(conn: &impl ConnectionTrait, tournament_id: Uuid, texts: Texts) -> AppResult<()> {
    for (locale, text) in texts {
        tournament_translations::Entity::delete_many()
            .filter(tournament_translations::Column::TournamentId.eq(tournament_id))
            .filter(tournament_translations::Column::Locale.eq(locale))
            .exec(conn)
            .await?;
        tournament_translations::ActiveModel {
            tournament_id: Set(tournament_id),
            locale: Set(locale.to_owned()),
            title: Set(text.title),
            subtitle: Set(text.subtitle),
        }
        .insert(conn)
        .await?;
    }
    Ok(())
}

/// Cancels a tournament in `registration` or `running`: every live registration is cancelled
/// (nobody gets a strike) and every seat freed, and everyone who held one is told
/// (`tournament.cancelled`). Watchers of a running one see it at once.
pub async fn cancel(
    db: &DatabaseConnection,
    notifier: &Notifier,
    live: &impl LiveChanges,
    tournament_id: Uuid,
    by: Uuid,
) -> AppResult<tournaments::Model> {
    let tx = db::begin_write(db).await?;
    let tournament = lock(&tx, tournament_id).await?;
    if !matches!(tournament.status, TournamentStatus::Registration | TournamentStatus::Running) {
        return Err(AppError::new(
            ErrorCode::InvalidStatus,
            "only a tournament in registration or running can be cancelled",
        ));
    }
    let now = Utc::now();
    let cancel = tournaments::Entity::update_many()
        .col_expr(tournaments::Column::Status, Expr::value(TournamentStatus::Cancelled))
        .col_expr(tournaments::Column::CancelledAt, Expr::value(Some(now)));
    advance_locked(&tx, &tournament, cancel, now).await?;
    let recipients = notices::live_registrants(&tx, tournament.id).await?;
    let title = display_title(&tx, tournament.id).await?;
    let told = notifier.journal(&tx, notices::cancelled(tournament.id, &title, recipients)).await?;
    cancel_all(&tx, tournament.id, now).await?;
    audit::record(
        &tx,
        Some(by),
        "tournament.cancel",
        ("tournament", tournament.id.to_string()),
        json!({"from": tournament.status}),
    )
    .await?;
    tx.commit().await?;
    notifier.push_in_background(db, vec![told]);
    publish(live, tournament.id).await;
    Ok(tournaments::Model {
        status: TournamentStatus::Cancelled,
        cancelled_at: Some(now),
        updated_at: now,
        live_version: tournament.live_version + 1,
        ..tournament
    })
}
