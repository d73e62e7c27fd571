//! Everything Floor keeps about a player, as one JSON document (`GET /me/export`): the
//! account, consent and its history, places, results, strikes, follows, devices, sessions,
//! notifications, the calendar link, club roles, dealing, guest places taken over, the audit
//! records by or about the account, and what the account did as club staff or admin
//! (tournaments, announcements, rating settings, forgiven strikes), and merges.
//!
//! [`Section`] names every source and which columns holding a user's id it answers for; with
//! [`WITHHELD`] they account for every such column of the schema, and a test holds that
//! against the live database, so a new table with a user column fails it until the export
//! takes it in or withholds it with a reason.
//!
//! Never exported: secrets (refresh token hashes, push tokens, the calendar link's secret hash,
//! dealer invite code hashes), other people's phones and names (a follower is an id; a dealer
//! invite made for someone else, and the audit record of making it, do not show their phone),
//! and who acted on the account (the admin of a ban, the td who forgave a strike). Sign-in
//! codes (`otp_codes`) are kept by phone, not by account, and forgotten ten minutes after they
//! are made (at the next code request or check): they hold no user column and are not listed.
//!
//! The document is read in one snapshot of the database and streamed: sections in order, long
//! lists a page at a time ([`document`]). The first section is read before the answer starts,
//! so a database that fails at once is still a clean error; a failure after that ends the body
//! cut short (the client gets no valid JSON) and the log says why.

mod account;
mod document;
mod playing;
mod reading;
mod schema;
mod sections;
mod staff;

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};
use floor_entities::users;
use futures_util::{Stream, StreamExt, stream};
use sea_orm::{DatabaseConnection, DatabaseTransaction, EntityTrait};
use tracing::Instrument;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, Schema, Type};
use utoipa::{PartialSchema, ToSchema};
use uuid::Uuid;

pub use self::document::Chunk;
use self::document::{Cut, Document};
use self::reading::Reading;
use self::schema::{Named, text};
pub use self::sections::{Section, UserColumn};
use crate::infra::db;
use crate::infra::error::{AppError, AppResult, ErrorCode};

/// User columns deliberately left out of the export, with why.
pub const WITHHELD: &[(&str, &str, &str)] = &[(
    "idempotency_keys",
    "user_id",
    // A live command's first answer, kept so that a retry gets it again (ten minutes; six
    // hours for a command made offline, whose queue may come late): a technical record of a
    // request the player already has the answer to, gone before an export could matter.
    "technical: the first answer of a live command, replayed to a retry and forgotten after ten minutes \
     (six hours for a command made offline)",
)];

/// How long an export may take. A client reading slower than this loses the rest rather than
/// hold a connection of the pool, and an old snapshot of the database, for longer.
const TIME_LIMIT: Duration = Duration::from_secs(5 * 60);

/// Starts the export of `user_id` as of `now`: opens a snapshot on `reads`, writes the first
/// section, and returns the body, which a task of its own writes on. An error here (the
/// database out of reach, the account gone) comes before any byte of the answer.
pub async fn export(
    reads: &DatabaseConnection,
    user_id: Uuid,
    now: DateTime<Utc>,
) -> AppResult<impl Stream<Item = Chunk> + Send + 'static> {
    let slot = Slot::take(user_id)?;
    let tx = db::begin_snapshot(reads).await?;
    let me = users::Entity::find_by_id(user_id)
        .one(&tx)
        .await?
        .ok_or_else(|| AppError::unauthorized("the account of this token no longer exists"))?;
    let mut doc = Document::new();
    let mut sections = Section::ALL.iter().copied();
    let first = async {
        doc.key("exportedAt")?;
        doc.value(&now)?;
        if let Some(section) = sections.next() {
            write_section(&mut doc, &Reading { tx: &tx, me: &me }, section).await?;
        }
        Ok::<_, Cut>(())
    };
    match first.await {
        Ok(()) => {}
        Err(Cut::Failed(err)) => return Err(err),
        Err(Cut::ClientLeft) => return Err(AppError::Internal(anyhow::anyhow!("nothing was sent yet"))),
    }
    let head = doc.take();
    let rest = doc.hand_on();
    tokio::spawn(write_rest(doc, tx, me, sections, slot).instrument(tracing::Span::current()));
    // Fused: a body wrapper may ask once more after the end (the compression layer does), and
    // an ended `unfold` must not be asked again.
    Ok(stream::once(async move { Ok(head) }).chain(rest).fuse())
}

async fn write_section(doc: &mut Document, reading: &Reading<'_>, section: Section) -> Result<(), Cut> {
    doc.key(section.key())?;
    section.write(doc, reading).await?;
    doc.flush().await
}

/// Writes the sections after the first and ends the document, or says in the log why it
/// stopped (the body then ends cut short by itself).
async fn write_rest(
    mut doc: Document,
    tx: DatabaseTransaction,
    me: users::Model,
    sections: impl Iterator<Item = Section>,
    _slot: Slot,
) {
    let reading = Reading { tx: &tx, me: &me };
    let written = tokio::time::timeout(TIME_LIMIT, async {
        for section in sections {
            write_section(&mut doc, &reading, section).await?;
        }
        doc.finish().await
    })
    .await;
    match written {
        Ok(Ok(())) => {
            // A snapshot that only read has nothing to keep; ending it can only fail with the
            // connection, after the document went out whole.
            if let Err(err) = tx.commit().await {
                tracing::debug!(error = %err, "ending the export's snapshot");
            }
        }
        Ok(Err(Cut::ClientLeft)) => tracing::info!(user_id = %me.id, "the client left before its export was whole"),
        Ok(Err(Cut::Failed(err))) => {
            tracing::error!(user_id = %me.id, error = ?err, "the export was cut short: a read failed");
        }
        Err(_) => {
            tracing::warn!(user_id = %me.id, limit_s = TIME_LIMIT.as_secs(), "the export was cut short: it took too long");
        }
    }
}

/// At most this many exports are written at once on a node: each holds a read connection and
/// a snapshot for as long as its client takes to read it (up to [`TIME_LIMIT`]), so a few
/// slow clients must not take the pool the apps' reads need.
pub const AT_ONCE: usize = 4;

static WRITING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(AT_ONCE);
/// The accounts whose export is being written: one at a time each.
static EXPORTING: Mutex<BTreeSet<Uuid>> = Mutex::new(BTreeSet::new());

/// A place among the exports being written, given back when dropped (the document written,
/// or given up).
struct Slot {
    user_id: Uuid,
    _permit: tokio::sync::SemaphorePermit<'static>,
}

impl Slot {
    /// `RATE_LIMITED` while the account's last export is still being written, or while
    /// [`AT_ONCE`] are.
    fn take(user_id: Uuid) -> AppResult<Self> {
        let mut exporting = EXPORTING.lock().unwrap_or_else(PoisonError::into_inner);
        if exporting.contains(&user_id) {
            return Err(AppError::new(
                ErrorCode::RateLimited,
                "your export is still being written: try again once it has arrived",
            ));
        }
        let permit = WRITING.try_acquire().map_err(|_| {
            AppError::new(ErrorCode::RateLimited, "too many exports are being written now: try again in a minute")
        })?;
        exporting.insert(user_id);
        Ok(Self { user_id, _permit: permit })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        EXPORTING.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.user_id);
    }
}

/// The export's JSON document, as the contract describes it: `exportedAt`, then each
/// [`Section`] under its key. Never built: the export is streamed; this only names its shape.
pub struct ExportDocument;

impl ExportDocument {
    fn described(named: &mut Named) -> RefOr<Schema> {
        let mut document = ObjectBuilder::new()
            .description(Some("Everything Floor keeps about the caller, as of `exportedAt`."))
            .property("exportedAt", text(KnownFormat::DateTime, Type::String.into()))
            .required("exportedAt");
        for section in Section::ALL {
            document = document.property(section.key(), section.schema(named)).required(section.key());
        }
        document.into()
    }
}

impl PartialSchema for ExportDocument {
    fn schema() -> RefOr<Schema> {
        Self::described(&mut Named::default())
    }
}

impl ToSchema for ExportDocument {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        let mut named = Named::default();
        Self::described(&mut named);
        schemas.extend(named.0);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    fn refused(taken: AppResult<Slot>) -> bool {
        matches!(taken, Err(err) if err.code() == ErrorCode::RateLimited)
    }

    #[test]
    fn one_export_at_a_time_for_an_account_and_a_few_at_once_on_a_node() {
        let anna = Uuid::now_v7();
        let first = Slot::take(anna).expect("a free slot");
        assert!(refused(Slot::take(anna)), "Anna's second export waits for her first");
        let others: Vec<Slot> = (1..AT_ONCE).map(|_| Slot::take(Uuid::now_v7()).expect("a free slot")).collect();
        assert!(refused(Slot::take(Uuid::now_v7())), "no more than AT_ONCE at once");
        drop(first);
        let again = Slot::take(anna).expect("Anna's slot came back with her first export");
        drop((again, others));
    }

    #[test]
    fn sections_have_distinct_keys_and_exported_at_is_none_of_them() {
        let keys: HashSet<&str> = Section::ALL.iter().map(|section| section.key()).collect();
        assert_eq!(keys.len(), Section::ALL.len());
        assert!(!keys.contains("exportedAt"));
    }

    #[test]
    fn no_column_is_both_exported_and_withheld() {
        let exported: HashSet<UserColumn> =
            Section::ALL.iter().flat_map(|section| section.columns().iter().copied()).collect();
        for (table, column, reason) in WITHHELD {
            assert!(!exported.contains(&(*table, *column)), "{table}.{column} is exported and withheld");
            assert!(!reason.is_empty(), "{table}.{column} is withheld without a reason");
        }
    }

    #[test]
    fn the_schema_names_every_section_and_its_entries() {
        let mut named = Named::default();
        let schema = serde_json::to_value(ExportDocument::described(&mut named)).expect("a schema");
        let properties = schema["properties"].as_object().expect("properties");
        assert_eq!(properties.len(), Section::ALL.len() + 1);
        for section in Section::ALL {
            assert!(properties.contains_key(section.key()), "{section:?}");
        }
        let names: HashSet<&str> = named.0.iter().map(|(name, _)| name.as_str()).collect();
        for name in ["ExportProfile", "ExportPlayer", "ExportRegistration", "ExportSeat", "ExportFollow", "UserStatus"]
        {
            assert!(names.contains(name), "{name} is among the components");
        }
    }
}
