//! Notifications: the one entry point every event goes through. It always writes the
//! journal row (one per recipient); when a push is asked for, it sends it to all the
//! recipients' device tokens and stamps `sentAt`. Pushes travel through FCM ([`fcm`]) when
//! `FCM_SERVICE_ACCOUNT_JSON` is set; without it the journal is all there is.
//!
//! A notice about a change is journaled in the change's own transaction
//! ([`Notifier::journal`]), so the change and its journal rows commit or vanish together; its
//! pushes go out only after that commit ([`Notifier::push_in_background`], or
//! [`Notifier::push_journaled`] to wait for them), so a push never announces a rolled-back
//! change. A job with no transaction of its own calls [`Notifier::notify`], which does both.

pub mod fcm;

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use chrono::Utc;
use floor_entities::{notifications, push_tokens};
use futures_util::{StreamExt, stream};
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter, Set};
use serde_json::Value;
use tracing::Instrument as _;
use uuid::Uuid;

pub use self::fcm::PushMessage;
use self::fcm::{FcmSender, PushConfigError, SendOutcome};
use crate::infra::config::FcmSettings;
use crate::infra::db::{self, IDS_PER_STATEMENT};
use crate::infra::error::AppResult;

/// The kinds of the spec's event table and the ones Floor adds (api-contract.md); the
/// journal stores their wire names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoticeKind {
    TournamentReminder,
    WaitlistPromoted,
    FolloweeRegistered,
    TournamentResults,
    AdminCustom,
    TournamentCancelled,
    TournamentChanged,
    TournamentSeated,
    SeatMoved,
    TournamentAnnouncement,
}

impl NoticeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::TournamentReminder => "tournament.reminder",
            Self::WaitlistPromoted => "waitlist.promoted",
            Self::FolloweeRegistered => "followee.registered",
            Self::TournamentResults => "tournament.results",
            Self::AdminCustom => "admin_custom",
            Self::TournamentCancelled => "tournament.cancelled",
            Self::TournamentChanged => "tournament.changed",
            Self::TournamentSeated => "tournament.seated",
            Self::SeatMoved => "seat.moved",
            Self::TournamentAnnouncement => "tournament.announcement",
        }
    }
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

/// A notice journaled by [`Notifier::journal`], with the pushes it still owes once the
/// transaction that wrote it commits.
#[derive(Clone, Debug)]
#[must_use = "push it once the transaction that journaled it has committed"]
pub struct Journaled {
    notice: Notice,
    /// (recipient, id of the journal row written for them)
    rows: Vec<(Uuid, Uuid)>,
}

impl Journaled {
    /// Journal rows written (recipients not deduplicated away).
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
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

    /// Journals `notice` for each recipient and, when it asks for a push, pushes it, for a
    /// caller with no transaction of its own (a job). It is [`Self::journal`] then
    /// [`Self::push_journaled`].
    pub async fn notify(&self, conn: &impl ConnectionTrait, notice: Notice) -> AppResult<Delivery> {
        let journaled = self.journal(conn, notice).await?;
        let pushed = self.push_journaled(conn, &journaled).await?;
        Ok(Delivery { journaled: journaled.len(), pushed })
    }

    /// Writes the journal row of `notice` for each distinct recipient, in `conn` (which may be
    /// the caller's transaction); sends nothing. A notice without a dedup key is written
    /// in multi-row statements ([`db::insert_chunked`]). With a key, a recipient who already has a row
    /// with it gets none (`ON CONFLICT DO NOTHING`, one statement per recipient, so exactly
    /// the rows written are known and pushed even when a concurrent writer raced us).
    #[tracing::instrument(name = "notify.journal", skip_all, fields(kind = notice.kind.as_str(), recipients = notice.recipients.len()))]
    pub async fn journal(&self, conn: &impl ConnectionTrait, notice: Notice) -> AppResult<Journaled> {
        let now = Utc::now();
        let mut seen = HashSet::new();
        let row = |recipient: Uuid, id: Uuid| notifications::ActiveModel {
            id: Set(id),
            user_id: Set(recipient),
            kind: Set(notice.kind.as_str().to_owned()),
            payload: Set(notice.payload.clone()),
            dedup_key: Set(notice.dedup_key.clone()),
            created_at: Set(now),
            sent_at: Set(None),
        };
        let planned: Vec<(Uuid, Uuid)> = notice
            .recipients
            .iter()
            .copied()
            .filter(|id| seen.insert(*id))
            .map(|recipient| (recipient, Uuid::now_v7()))
            .collect();
        if notice.dedup_key.is_none() {
            let rows: Vec<notifications::ActiveModel> =
                planned.iter().map(|(recipient, id)| row(*recipient, *id)).collect();
            db::insert_chunked(conn, rows).await?;
            return Ok(Journaled { notice, rows: planned });
        }
        let mut rows = Vec::with_capacity(planned.len());
        for (recipient, id) in planned {
            let inserted = notifications::Entity::insert(row(recipient, id))
                .on_conflict(
                    OnConflict::columns([notifications::Column::UserId, notifications::Column::DedupKey])
                        .do_nothing()
                        .to_owned(),
                )
                .exec_without_returning(conn)
                .await?;
            if inserted > 0 {
                rows.push((recipient, id));
            }
        }
        Ok(Journaled { notice, rows })
    }

    /// When the journaled notice asks for a push and pushes are configured, pushes it to every
    /// device token of every recipient journaled (a deduplicated recipient gets nothing again);
    /// the rows of recipients with at least one accepting device get `sent_at`. A device FCM
    /// no longer knows is forgotten, by every account that registered it. A failed send is
    /// logged and never fails the call: the journal row stays. Call it after the journal has
    /// committed. Returns how many recipients a device accepted the push for.
    pub async fn push_journaled(&self, conn: &impl ConnectionTrait, journaled: &Journaled) -> AppResult<usize> {
        match (&self.push, &journaled.notice.push) {
            (Some(sender), Some(message)) if !journaled.is_empty() => {
                push(conn, sender, &journaled.notice, message, &journaled.rows).await
            }
            _ => Ok(0),
        }
    }

    /// Sends the pushes of notices journaled in a transaction that has now committed, in the
    /// background: the answer to the change never waits for a push, and a failed push is
    /// only logged (its journal row stays).
    pub fn push_in_background(&self, db: &DatabaseConnection, journaled: Vec<Journaled>) {
        if journaled.is_empty() || self.push.is_none() {
            return;
        }
        let (notifier, db) = (self.clone(), db.clone());
        // In the trace of the change that journaled them, after it.
        let span = tracing::info_span!("notify.push", notices = journaled.len());
        tokio::spawn(
            async move {
                for journaled in journaled {
                    if let Err(err) = notifier.push_journaled(&db, &journaled).await {
                        tracing::warn!(error = %err, kind = journaled.notice.kind.as_str(), "could not push a notification");
                    }
                }
            }
            .instrument(span),
        );
    }
}

/// Sends `message` to every device of the `journaled` recipients; stamps the rows of those
/// reached and forgets unregistered devices (every account's row of the token: the device is
/// gone for all). Returns how many recipients were reached.
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
    // A token two recipients registered is answered twice.
    gone.sort_unstable();
    gone.dedup();
    for chunk in gone.chunks(IDS_PER_STATEMENT) {
        push_tokens::Entity::delete_many()
            .filter(push_tokens::Column::Token.is_in(chunk.iter().cloned()))
            .exec(conn)
            .await?;
    }
    let stamped: Vec<Uuid> = journaled.iter().filter(|(user, _)| reached.contains(user)).map(|(_, row)| *row).collect();
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
