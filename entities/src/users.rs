//! Accounts: one row per person (phone), whatever club and platform roles they hold.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

use crate::enums::{AdminRole, UserStatus};

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "users")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    /// E.164; the sign-in identity, unique.
    #[sea_orm(unique)]
    pub phone: String,
    pub name: Option<String>,
    pub nickname: Option<String>,
    pub avatar_url: Option<String>,
    /// Home city; follows a slug rename, cleared when the city is deleted.
    pub city_slug: Option<String>,
    /// When the user consented to personal data processing; null until then, and again once
    /// withdrawn.
    pub consent_accepted_at: Option<DateTimeUtc>,
    /// `CONSENT_VERSION` of the text the user accepted; null while there is no consent.
    pub consent_version: Option<String>,
    /// Platform role in the admin app; null for everyone without one.
    pub admin_role: Option<AdminRole>,
    /// Set by platform admins through a guarded update; a banned account cannot sign in.
    pub status: UserStatus,
    /// The account this one was merged into: set by a merge, which leaves it banned for good.
    pub merged_into_user_id: Option<Uuid>,
    /// When the owner deleted the account (status `deleted`): the phone, names, avatar and
    /// city were erased then, and the row stays for the results others rely on.
    pub deleted_at: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::cities::Entity",
        from = "Column::CitySlug",
        to = "super::cities::Column::Slug",
        on_update = "Cascade",
        on_delete = "SetNull"
    )]
    City,
    #[sea_orm(has_one = "super::player_profiles::Entity")]
    PlayerProfile,
    #[sea_orm(has_one = "super::dealer_profiles::Entity")]
    DealerProfile,
    #[sea_orm(has_many = "super::guest_players::Entity", via_rel = "Relation::ClaimedBy")]
    ClaimedGuests,
    #[sea_orm(has_many = "super::refresh_tokens::Entity", via_rel = "Relation::User")]
    RefreshTokens,
    #[sea_orm(has_many = "super::organizer_members::Entity", via_rel = "Relation::User")]
    Memberships,
    #[sea_orm(has_many = "super::dealer_invites::Entity", via_rel = "Relation::ClaimedBy")]
    ClaimedDealerInvites,
    #[sea_orm(has_many = "super::dealer_invites::Entity", via_rel = "Relation::CreatedBy")]
    CreatedDealerInvites,
    #[sea_orm(has_many = "super::tournaments::Entity", via_rel = "Relation::CreatedBy")]
    CreatedTournaments,
    #[sea_orm(has_many = "super::tournament_dealers::Entity", via_rel = "Relation::Dealer")]
    DealerAssignments,
    #[sea_orm(has_many = "super::registrations::Entity", via_rel = "Relation::User")]
    Registrations,
    #[sea_orm(has_many = "super::results::Entity", via_rel = "Relation::User")]
    Results,
    #[sea_orm(has_many = "super::strikes::Entity", via_rel = "Relation::User")]
    Strikes,
    #[sea_orm(has_many = "super::strikes::Entity", via_rel = "Relation::ForgivenBy")]
    ForgivenStrikes,
    #[sea_orm(has_many = "super::rating_config::Entity", via_rel = "Relation::UpdatedBy")]
    RatingConfigUpdates,
    #[sea_orm(has_many = "super::follows::Entity", via_rel = "Relation::Follower")]
    Following,
    #[sea_orm(has_many = "super::follows::Entity", via_rel = "Relation::Followee")]
    Followers,
    #[sea_orm(has_many = "super::push_tokens::Entity", via_rel = "Relation::User")]
    PushTokens,
    #[sea_orm(has_many = "super::notifications::Entity", via_rel = "Relation::User")]
    Notifications,
    #[sea_orm(has_many = "super::audit_log::Entity", via_rel = "Relation::Actor")]
    AuditEntries,
    #[sea_orm(has_many = "super::consent_changes::Entity")]
    ConsentChanges,
}

impl Related<super::cities::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::City.def()
    }
}

impl Related<super::player_profiles::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::PlayerProfile.def()
    }
}

impl Related<super::dealer_profiles::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::DealerProfile.def()
    }
}

impl Related<super::organizer_members::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Memberships.def()
    }
}

/// The clubs a user belongs to, through `organizer_members`.
impl Related<super::organizers::Entity> for Entity {
    fn to() -> RelationDef {
        super::organizer_members::Relation::Organizer.def()
    }

    fn via() -> Option<RelationDef> {
        Some(super::organizer_members::Relation::User.def().rev())
    }
}

impl Related<super::registrations::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Registrations.def()
    }
}

impl Related<super::results::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Results.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
