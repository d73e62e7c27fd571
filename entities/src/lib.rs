//! sea-orm entities: one module a table, plus the enumerations stored as text.
//!
//! Ids are UUIDs chosen by the application, timestamps are `DateTimeUtc` set by the
//! application (no database defaults, so every row carries one clock and one text format on
//! SQLite), JSON columns are `Json`.

pub mod enums;

pub mod audit_log;
pub mod blind_templates;
pub mod calendar_links;
pub mod cities;
pub mod city_translations;
pub mod consent_changes;
pub mod dealer_invites;
pub mod dealer_profiles;
pub mod erasures;
pub mod follows;
pub mod guest_players;
pub mod idempotency_keys;
pub mod job_runs;
pub mod level_tier_translations;
pub mod level_tiers;
pub mod locations;
pub mod notifications;
pub mod organizer_members;
pub mod organizers;
pub mod otp_codes;
pub mod phone_bans;
pub mod player_profiles;
pub mod promo_slide_translations;
pub mod promo_slides;
pub mod push_tokens;
pub mod rating_config;
pub mod refresh_tokens;
pub mod registration_groups;
pub mod registrations;
pub mod results;
pub mod seasons;
pub mod strikes;
pub mod table_seats;
pub mod tournament_announcements;
pub mod tournament_dealers;
pub mod tournament_leases;
pub mod tournament_translations;
pub mod tournaments;
pub mod users;

/// The entities under their table names in CamelCase, and the enumerations.
pub mod prelude {
    pub use super::audit_log::Entity as AuditLog;
    pub use super::blind_templates::Entity as BlindTemplates;
    pub use super::calendar_links::Entity as CalendarLinks;
    pub use super::cities::Entity as Cities;
    pub use super::city_translations::Entity as CityTranslations;
    pub use super::consent_changes::Entity as ConsentChanges;
    pub use super::dealer_invites::Entity as DealerInvites;
    pub use super::dealer_profiles::Entity as DealerProfiles;
    pub use super::enums::*;
    pub use super::erasures::Entity as Erasures;
    pub use super::follows::Entity as Follows;
    pub use super::guest_players::Entity as GuestPlayers;
    pub use super::idempotency_keys::Entity as IdempotencyKeys;
    pub use super::job_runs::Entity as JobRuns;
    pub use super::level_tier_translations::Entity as LevelTierTranslations;
    pub use super::level_tiers::Entity as LevelTiers;
    pub use super::locations::Entity as Locations;
    pub use super::notifications::Entity as Notifications;
    pub use super::organizer_members::Entity as OrganizerMembers;
    pub use super::organizers::Entity as Organizers;
    pub use super::otp_codes::Entity as OtpCodes;
    pub use super::phone_bans::Entity as PhoneBans;
    pub use super::player_profiles::Entity as PlayerProfiles;
    pub use super::promo_slide_translations::Entity as PromoSlideTranslations;
    pub use super::promo_slides::Entity as PromoSlides;
    pub use super::push_tokens::Entity as PushTokens;
    pub use super::rating_config::Entity as RatingConfig;
    pub use super::refresh_tokens::Entity as RefreshTokens;
    pub use super::registration_groups::Entity as RegistrationGroups;
    pub use super::registrations::Entity as Registrations;
    pub use super::results::Entity as Results;
    pub use super::seasons::Entity as Seasons;
    pub use super::strikes::Entity as Strikes;
    pub use super::table_seats::Entity as TableSeats;
    pub use super::tournament_announcements::Entity as TournamentAnnouncements;
    pub use super::tournament_dealers::Entity as TournamentDealers;
    pub use super::tournament_leases::Entity as TournamentLeases;
    pub use super::tournament_translations::Entity as TournamentTranslations;
    pub use super::tournaments::Entity as Tournaments;
    pub use super::users::Entity as Users;
}
