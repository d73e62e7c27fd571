//! Notifications: the one entry point every event goes through. It always writes the
//! journal row (one per recipient); when a push is asked for, it sends it to all the
//! recipients' device tokens and stamps `sentAt`. Pushes travel through FCM ([`fcm`]) when
//! `FCM_SERVICE_ACCOUNT_JSON` is set; without it the journal is all there is.

pub mod fcm;

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use chrono::Utc;
use floor_entities::{notifications, push_tokens};
use futures_util::{StreamExt, stream};
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, Set};
use serde_json::Value;
use uuid::Uuid;

use self::fcm::{FcmSender, FcmSettings, PushConfigError, SendOutcome};
use crate::db::IDS_PER_STATEMENT;
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
pub struct Notifier {
    /// `None`: pushes are not configured, notifications are journaled only.
    push: Option<Arc<FcmSender>>,
}

impl fmt::Debug for Notifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Notifier").field("push", &self.push).finish()
    }
}

/// How many device sends run at once for one notification.
const SEND_CONCURRENCY: usize = 16;

impl Notifier {
    /// A notifier that pushes through FCM when `settings` are given, else journals only.
    pub fn from_settings(settings: Option<&FcmSettings>) -> Result<Self, PushConfigError> {
        let push = settings.map(FcmSender::from_settings).transpose()?.map(Arc::new);
        Ok(Self { push })
    }

    /// Whether pushes are sent at all.
    pub fn pushes_enabled(&self) -> bool {
        self.push.is_some()
    }

    /// Journals `notice` for each recipient and, when it asks for a push, pushes it. Call it
    /// after the change it reports has committed: a push must never announce a rolled-back
    /// change.
    ///
    /// The push goes to every device token of every recipient whose journal row was written
    /// (a deduplicated recipient gets nothing again); the rows of recipients with at least
    /// one accepting device get `sent_at`. A device FCM no longer knows is forgotten. A failed
    /// send is logged and never fails the call: the journal row stays.
    pub async fn notify(&self, conn: &impl ConnectionTrait, notice: Notice) -> AppResult<Delivery> {
        let now = Utc::now();
        let mut seen = HashSet::new();
        // (recipient, id of the journal row written for them)
        let mut journaled = Vec::new();
        for recipient in notice.recipients.iter().copied().filter(|id| seen.insert(*id)) {
            let id = Uuid::now_v7();
            let row = notifications::ActiveModel {
                id: Set(id),
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
            if inserted > 0 {
                journaled.push((recipient, id));
            }
        }
        let mut delivery = Delivery { journaled: journaled.len(), pushed: 0 };
        if let (Some(sender), Some(message)) = (&self.push, &notice.push) {
            delivery.pushed = push(conn, sender, &notice, message, &journaled).await?;
        }
        Ok(delivery)
    }
}

/// Sends `message` to every device of the `journaled` recipients; stamps the rows of those
/// reached and forgets unregistered devices. Returns how many recipients were reached.
async fn push(
    conn: &impl ConnectionTrait,
    sender: &FcmSender,
    notice: &Notice,
    message: &PushMessage,
    journaled: &[(Uuid, Uuid)],
) -> AppResult<usize> {
    let mut devices = Vec::new();
    for chunk in journaled.chunks(IDS_PER_STATEMENT) {
        let users = chunk.iter().map(|(user, _)| *user);
        devices.extend(push_tokens::Entity::find().filter(push_tokens::Column::UserId.is_in(users)).all(conn).await?);
    }
    if devices.is_empty() {
        return Ok(0);
    }
    let data = fcm::message_data(notice.kind.as_str(), &notice.payload);
    let outcomes: Vec<(push_tokens::Model, SendOutcome)> = stream::iter(devices)
        .map(|device| {
            let data = &data;
            async move {
                let outcome = sender.send(&device.token, message, data).await;
                (device, outcome)
            }
        })
        .buffer_unordered(SEND_CONCURRENCY)
        .collect()
        .await;

    let mut reached = HashSet::new();
    let mut gone = Vec::new();
    for (device, outcome) in outcomes {
        match outcome {
            SendOutcome::Accepted => {
                reached.insert(device.user_id);
            }
            SendOutcome::Unregistered => {
                tracing::info!(user_id = %device.user_id, kind = notice.kind.as_str(), "push device unregistered, token removed");
                gone.push(device.token);
            }
            SendOutcome::Failed(reason) => {
                tracing::warn!(user_id = %device.user_id, kind = notice.kind.as_str(), %reason, "push failed");
            }
        }
    }
    for chunk in gone.chunks(IDS_PER_STATEMENT) {
        push_tokens::Entity::delete_many()
            .filter(push_tokens::Column::Token.is_in(chunk.iter().cloned()))
            .exec(conn)
            .await?;
    }
    let stamped: Vec<Uuid> =
        journaled.iter().filter(|(user, _)| reached.contains(user)).map(|(_, row)| *row).collect();
    let sent_at = Utc::now();
    for chunk in stamped.chunks(IDS_PER_STATEMENT) {
        notifications::Entity::update_many()
            .col_expr(notifications::Column::SentAt, Expr::value(sent_at))
            .filter(notifications::Column::Id.is_in(chunk.iter().copied()))
            .exec(conn)
            .await?;
    }
    Ok(reached.len())
}
