//! The document's parts, each described once: its key, the user columns it answers for, how
//! it is written and how its schema reads. Adding a section is adding its entry to
//! [`Section::ALL`] (and its reader, in the file of its kind).

use futures_util::future::BoxFuture;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ArrayBuilder, KnownFormat, Schema, SchemaType, Type};

use super::account::{self, *};
use super::document::{Cut, Document};
use super::playing::{self, *};
use super::reading::Reading;
use super::schema::{Named, nullable, object, text};
use super::staff::{self, *};

/// A column of the schema that holds a user's id: `(table, column)`.
pub type UserColumn = (&'static str, &'static str);

/// Writes a section's value, its key written already. Boxed, so that every section's reader,
/// each a future of its own type, fits the one table.
type Write = for<'a> fn(&'a mut Document, &'a Reading<'a>) -> BoxFuture<'a, Result<(), Cut>>;

/// A section's reader as a [`Write`].
macro_rules! boxed {
    ($reader:path) => {
        |doc, reading| Box::pin($reader(doc, reading))
    };
}

/// One part of the document, under its own top-level key.
#[derive(Clone, Copy)]
pub struct Section {
    /// The section's key in the document.
    key: &'static str,
    /// The user columns whose rows the section exports (the account's own row, `users.id`,
    /// is the profile).
    columns: &'static [UserColumn],
    /// Writes the section's value.
    write: Write,
    /// The schema of the section's value; the schemas it names go to the [`Named`].
    schema: fn(&mut Named) -> RefOr<Schema>,
}

impl Section {
    /// Every section, in the document's order.
    pub const ALL: &[Self] = &[
        Self {
            key: "profile",
            columns: &[("player_profiles", "user_id")],
            write: boxed!(account::profile),
            schema: |named| named.one::<ExportProfile>(),
        },
        Self {
            key: "consent",
            columns: &[("consent_changes", "user_id")],
            write: boxed!(account::consent),
            schema: |named| named.one::<ExportConsent>(),
        },
        Self {
            key: "registrations",
            columns: &[("registrations", "user_id")],
            write: boxed!(playing::registrations),
            schema: |named| named.list::<ExportRegistration>(),
        },
        Self {
            key: "results",
            columns: &[("results", "user_id")],
            write: boxed!(playing::results),
            schema: |named| named.list::<ExportResult>(),
        },
        Self {
            key: "strikes",
            columns: &[("strikes", "user_id")],
            write: boxed!(playing::strikes),
            schema: |named| named.list::<ExportStrike>(),
        },
        Self {
            key: "follows",
            columns: &[("follows", "follower_id"), ("follows", "followee_id")],
            write: boxed!(playing::follows),
            schema: |named| {
                object([("following", named.list::<ExportFollow>()), ("followers", named.list::<ExportFollow>())])
            },
        },
        Self {
            key: "devices",
            columns: &[("push_tokens", "user_id")],
            write: boxed!(account::devices),
            schema: |named| named.list::<ExportDevice>(),
        },
        Self {
            key: "sessions",
            columns: &[("refresh_tokens", "user_id")],
            write: boxed!(account::sessions),
            schema: |named| named.list::<ExportSession>(),
        },
        Self {
            key: "notifications",
            columns: &[("notifications", "user_id")],
            write: boxed!(account::notifications),
            schema: |named| named.list::<ExportNotification>(),
        },
        Self {
            key: "calendarLink",
            columns: &[("calendar_links", "user_id")],
            write: boxed!(account::calendar_link),
            schema: |named| named.one::<ExportCalendarLink>(),
        },
        Self {
            key: "memberships",
            columns: &[("organizer_members", "user_id")],
            write: boxed!(staff::memberships),
            schema: |named| named.list::<ExportMembership>(),
        },
        Self {
            key: "dealer",
            columns: &[
                ("dealer_profiles", "user_id"),
                ("dealer_invites", "claimed_by_user_id"),
                ("dealer_invites", "created_by_user_id"),
                ("tournament_dealers", "dealer_user_id"),
            ],
            write: boxed!(staff::dealer),
            schema: |named| {
                object([
                    ("profile", nullable(named.one::<ExportDealerProfile>())),
                    ("invites", named.list::<ExportDealerInvite>()),
                    ("assignments", named.list::<ExportDealerAssignment>()),
                ])
            },
        },
        Self {
            key: "guestPlaces",
            columns: &[("guest_players", "claimed_by_user_id")],
            write: boxed!(playing::guest_places),
            schema: |named| named.list::<ExportGuestPlace>(),
        },
        Self {
            key: "auditEntries",
            columns: &[("audit_log", "actor_user_id")],
            write: boxed!(staff::audit_entries),
            schema: |named| named.list::<ExportAuditEntry>(),
        },
        Self {
            key: "createdTournaments",
            columns: &[("tournaments", "created_by_user_id")],
            write: boxed!(staff::created_tournaments),
            schema: |named| named.list::<ExportTournament>(),
        },
        Self {
            key: "announcements",
            columns: &[("tournament_announcements", "created_by_user_id")],
            write: boxed!(staff::announcements),
            schema: |named| named.list::<ExportAnnouncement>(),
        },
        Self {
            key: "ratingConfigUpdates",
            columns: &[("rating_config", "updated_by_user_id")],
            write: boxed!(staff::rating_config_updates),
            schema: |named| named.list::<ExportRatingConfigUpdate>(),
        },
        Self {
            key: "forgivenStrikes",
            columns: &[("strikes", "forgiven_by_user_id")],
            write: boxed!(staff::forgiven_strikes),
            schema: |named| named.list::<ExportForgivenStrike>(),
        },
        Self {
            key: "mergedInto",
            columns: &[("users", "merged_into_user_id")],
            write: boxed!(account::merged_into),
            schema: |_| text(KnownFormat::Uuid, SchemaType::from_iter([Type::String, Type::Null])),
        },
        Self {
            key: "mergedFrom",
            columns: &[("users", "merged_into_user_id")],
            write: boxed!(account::merged_from),
            schema: |_| ArrayBuilder::new().items(text(KnownFormat::Uuid, Type::String.into())).into(),
        },
    ];

    /// The section's key in the document.
    pub const fn key(self) -> &'static str {
        self.key
    }

    /// The user columns whose rows the section exports (the account's own row, `users.id`,
    /// is the profile).
    pub const fn columns(self) -> &'static [UserColumn] {
        self.columns
    }

    /// Writes the section's value (its key is written already).
    pub(super) fn write<'a>(self, doc: &'a mut Document, reading: &'a Reading<'a>) -> BoxFuture<'a, Result<(), Cut>> {
        (self.write)(doc, reading)
    }

    /// The schema of the section's value; the schemas it names go to `named`.
    pub(super) fn schema(self, named: &mut Named) -> RefOr<Schema> {
        (self.schema)(named)
    }
}

impl std::fmt::Debug for Section {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Section").field(&self.key).finish()
    }
}
