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

mod document;
mod sections;

use std::collections::BTreeSet;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};
use floor_entities::users;
use futures_util::{Stream, StreamExt, stream};
use sea_orm::{DatabaseConnection, DatabaseTransaction, EntityTrait};
use tracing::Instrument;
use utoipa::openapi::schema::{
    ArrayBuilder, KnownFormat, ObjectBuilder, OneOfBuilder, Schema, SchemaFormat, SchemaType, Type,
};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};
use uuid::Uuid;

pub use self::document::Chunk;
use self::document::{Cut, Document};
use self::sections::*;
use crate::db;
use crate::error::{AppError, AppResult, ErrorCode};

/// A column of the schema that holds a user's id: `(table, column)`.
pub type UserColumn = (&'static str, &'static str);

/// The document's parts, in the order they are written, each one top-level key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::VariantArray)]
pub enum Section {
    Profile,
    Consent,
    Registrations,
    Results,
    Strikes,
    Follows,
    Devices,
    Sessions,
    Notifications,
    CalendarLink,
    Memberships,
    Dealer,
    GuestPlaces,
    AuditEntries,
    CreatedTournaments,
    Announcements,
    RatingConfigUpdates,
    ForgivenStrikes,
    MergedInto,
    MergedFrom,
}

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

impl Section {
    /// Every section, derived so that none can be missing; the document's order.
    pub const ALL: &[Self] = <Self as strum::VariantArray>::VARIANTS;

    /// The section's key in the document.
    pub const fn key(self) -> &'static str {
        match self {
            Self::Profile => "profile",
            Self::Consent => "consent",
            Self::Registrations => "registrations",
            Self::Results => "results",
            Self::Strikes => "strikes",
            Self::Follows => "follows",
            Self::Devices => "devices",
            Self::Sessions => "sessions",
            Self::Notifications => "notifications",
            Self::CalendarLink => "calendarLink",
            Self::Memberships => "memberships",
            Self::Dealer => "dealer",
            Self::GuestPlaces => "guestPlaces",
            Self::AuditEntries => "auditEntries",
            Self::CreatedTournaments => "createdTournaments",
            Self::Announcements => "announcements",
            Self::RatingConfigUpdates => "ratingConfigUpdates",
            Self::ForgivenStrikes => "forgivenStrikes",
            Self::MergedInto => "mergedInto",
            Self::MergedFrom => "mergedFrom",
        }
    }

    /// The user columns whose rows the section exports (the account's own row, `users.id`,
    /// is the profile).
    pub const fn columns(self) -> &'static [UserColumn] {
        match self {
            Self::Profile => &[("player_profiles", "user_id")],
            Self::Consent => &[("consent_changes", "user_id")],
            Self::Registrations => &[("registrations", "user_id")],
            Self::Results => &[("results", "user_id")],
            Self::Strikes => &[("strikes", "user_id")],
            Self::Follows => &[("follows", "follower_id"), ("follows", "followee_id")],
            Self::Devices => &[("push_tokens", "user_id")],
            Self::Sessions => &[("refresh_tokens", "user_id")],
            Self::Notifications => &[("notifications", "user_id")],
            Self::CalendarLink => &[("calendar_links", "user_id")],
            Self::Memberships => &[("organizer_members", "user_id")],
            Self::Dealer => &[
                ("dealer_profiles", "user_id"),
                ("dealer_invites", "claimed_by_user_id"),
                ("dealer_invites", "created_by_user_id"),
                ("tournament_dealers", "dealer_user_id"),
            ],
            Self::GuestPlaces => &[("guest_players", "claimed_by_user_id")],
            Self::AuditEntries => &[("audit_log", "actor_user_id")],
            Self::CreatedTournaments => &[("tournaments", "created_by_user_id")],
            Self::Announcements => &[("tournament_announcements", "created_by_user_id")],
            Self::RatingConfigUpdates => &[("rating_config", "updated_by_user_id")],
            Self::ForgivenStrikes => &[("strikes", "forgiven_by_user_id")],
            Self::MergedInto | Self::MergedFrom => &[("users", "merged_into_user_id")],
        }
    }

    /// Writes the section's value (its key is written already).
    async fn write(self, doc: &mut Document, reading: &Reading<'_>) -> Result<(), Cut> {
        match self {
            Self::Profile => profile(doc, reading).await,
            Self::Consent => consent(doc, reading).await,
            Self::Registrations => registrations(doc, reading).await,
            Self::Results => results(doc, reading).await,
            Self::Strikes => strikes(doc, reading).await,
            Self::Follows => follows(doc, reading).await,
            Self::Devices => devices(doc, reading).await,
            Self::Sessions => sessions(doc, reading).await,
            Self::Notifications => notifications(doc, reading).await,
            Self::CalendarLink => calendar_link(doc, reading).await,
            Self::Memberships => memberships(doc, reading).await,
            Self::Dealer => dealer(doc, reading).await,
            Self::GuestPlaces => guest_places(doc, reading).await,
            Self::AuditEntries => audit_entries(doc, reading).await,
            Self::CreatedTournaments => created_tournaments(doc, reading).await,
            Self::Announcements => announcements(doc, reading).await,
            Self::RatingConfigUpdates => rating_config_updates(doc, reading).await,
            Self::ForgivenStrikes => forgiven_strikes(doc, reading).await,
            Self::MergedInto => merged_into(doc, reading),
            Self::MergedFrom => merged_from(doc, reading).await,
        }
    }

    /// The schema of the section's value; the schemas it names go to `named`.
    fn schema(self, named: &mut Named) -> RefOr<Schema> {
        match self {
            Self::Profile => named.one::<ExportProfile>(),
            Self::Consent => named.one::<ExportConsent>(),
            Self::Registrations => named.list::<ExportRegistration>(),
            Self::Results => named.list::<ExportResult>(),
            Self::Strikes => named.list::<ExportStrike>(),
            Self::Follows => {
                object([("following", named.list::<ExportFollow>()), ("followers", named.list::<ExportFollow>())])
            }
            Self::Devices => named.list::<ExportDevice>(),
            Self::Sessions => named.list::<ExportSession>(),
            Self::Notifications => named.list::<ExportNotification>(),
            Self::CalendarLink => named.one::<ExportCalendarLink>(),
            Self::Memberships => named.list::<ExportMembership>(),
            Self::Dealer => object([
                ("profile", nullable(named.one::<ExportDealerProfile>())),
                ("invites", named.list::<ExportDealerInvite>()),
                ("assignments", named.list::<ExportDealerAssignment>()),
            ]),
            Self::GuestPlaces => named.list::<ExportGuestPlace>(),
            Self::AuditEntries => named.list::<ExportAuditEntry>(),
            Self::CreatedTournaments => named.list::<ExportTournament>(),
            Self::Announcements => named.list::<ExportAnnouncement>(),
            Self::RatingConfigUpdates => named.list::<ExportRatingConfigUpdate>(),
            Self::ForgivenStrikes => named.list::<ExportForgivenStrike>(),
            Self::MergedInto => text(KnownFormat::Uuid, SchemaType::from_iter([Type::String, Type::Null])),
            Self::MergedFrom => ArrayBuilder::new().items(text(KnownFormat::Uuid, Type::String.into())).into(),
        }
    }
}

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

/// The named schemas a description refers to, gathered for the contract's components.
#[derive(Default)]
struct Named(Vec<(String, RefOr<Schema>)>);

impl Named {
    /// A reference to `T`'s schema, which (with those it names) joins the components.
    fn one<T: ToSchema>(&mut self) -> RefOr<Schema> {
        self.0.push((T::name().into_owned(), T::schema()));
        T::schemas(&mut self.0);
        Ref::from_schema_name(T::name()).into()
    }

    /// An array of `T`.
    fn list<T: ToSchema>(&mut self) -> RefOr<Schema> {
        ArrayBuilder::new().items(self.one::<T>()).into()
    }
}

/// An object of these properties, every one required.
fn object<const N: usize>(properties: [(&str, RefOr<Schema>); N]) -> RefOr<Schema> {
    let mut object = ObjectBuilder::new();
    for (name, schema) in properties {
        object = object.property(name, schema).required(name);
    }
    object.into()
}

/// A string of `format`, of `types` (a string, or a string or null).
fn text(format: KnownFormat, types: SchemaType) -> RefOr<Schema> {
    ObjectBuilder::new().schema_type(types).format(Some(SchemaFormat::KnownFormat(format))).into()
}

/// `schema` or null.
fn nullable(schema: RefOr<Schema>) -> RefOr<Schema> {
    OneOfBuilder::new().item(schema).item(ObjectBuilder::new().schema_type(Type::Null)).into()
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
