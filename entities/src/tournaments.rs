//! Tournaments, including the persisted state of the server clock while one runs.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

use crate::enums::{TournamentStatus, TournamentType};

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "tournaments")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub organizer_id: Uuid,
    pub location_id: Uuid,
    /// Season the results count towards (the one containing `starts_at`).
    pub season_id: Uuid,
    /// Template the structure came from; its levels are copied to `clock_levels` at start.
    pub blind_template_id: Uuid,
    pub tournament_type: TournamentType,
    pub starts_at: DateTimeUtc,
    /// Seats for `registered` + `checked_in`; walk-ins may exceed it.
    pub capacity: i32,
    pub status: TournamentStatus,
    /// Free text shown on the card; there is no money flow.
    pub prizes: Option<String>,
    /// External chat address.
    pub chat_link: Option<String>,
    pub banner_url: Option<String>,
    /// Always 0, never read (no money flow).
    pub entry_fee: i32,
    /// Always `not_required`.
    pub payment_status: String,
    /// The blind levels copied from the template at start; the clock runs over this list.
    pub clock_levels: Option<Json>,
    /// Index into `clock_levels` of the running segment; changed by the level operations.
    pub current_level_idx: i32,
    /// When the current segment started (shifted on resume so that paused time does not count).
    pub level_started_at: Option<DateTimeUtc>,
    /// Set while the clock is paused, null while it runs.
    pub paused_at: Option<DateTimeUtc>,
    /// The moment the latest live command was applied as of (its `occurredAt`, or its
    /// arrival); a command stated to have happened before it is refused as a conflict.
    pub last_command_at: Option<DateTimeUtc>,
    /// Starting stack times checked-in players, set at start.
    pub chips_in_play: i64,
    /// Version of the last broadcast LiveState; bumped on every change and persisted so that
    /// a rebuilt actor continues the sequence.
    pub live_version: i64,
    pub started_at: Option<DateTimeUtc>,
    /// Stamped when the results are confirmed.
    pub finished_at: Option<DateTimeUtc>,
    pub cancelled_at: Option<DateTimeUtc>,
    pub created_by_user_id: Option<Uuid>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::organizers::Entity",
        from = "Column::OrganizerId",
        to = "super::organizers::Column::Id",
        on_delete = "Restrict"
    )]
    Organizer,
    #[sea_orm(
        belongs_to = "super::locations::Entity",
        from = "Column::LocationId",
        to = "super::locations::Column::Id",
        on_delete = "Restrict"
    )]
    Location,
    #[sea_orm(
        belongs_to = "super::seasons::Entity",
        from = "Column::SeasonId",
        to = "super::seasons::Column::Id",
        on_delete = "Restrict"
    )]
    Season,
    #[sea_orm(
        belongs_to = "super::blind_templates::Entity",
        from = "Column::BlindTemplateId",
        to = "super::blind_templates::Column::Id",
        on_delete = "Restrict"
    )]
    BlindTemplate,
    #[sea_orm(
        belongs_to = "super::users::Entity",
        from = "Column::CreatedByUserId",
        to = "super::users::Column::Id",
        on_delete = "SetNull"
    )]
    CreatedBy,
    #[sea_orm(has_many = "super::tournament_translations::Entity")]
    Translations,
    #[sea_orm(has_many = "super::tournament_dealers::Entity", via_rel = "Relation::Tournament")]
    Dealers,
    #[sea_orm(has_many = "super::registrations::Entity", via_rel = "Relation::Tournament")]
    Registrations,
    #[sea_orm(has_many = "super::table_seats::Entity", via_rel = "Relation::Tournament")]
    TableSeats,
    #[sea_orm(has_many = "super::results::Entity", via_rel = "Relation::Tournament")]
    Results,
    #[sea_orm(has_many = "super::strikes::Entity", via_rel = "Relation::Tournament")]
    Strikes,
    #[sea_orm(has_many = "super::promo_slides::Entity", via_rel = "Relation::TargetTournament")]
    PromoSlides,
}

impl Related<super::organizers::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Organizer.def()
    }
}

impl Related<super::locations::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Location.def()
    }
}

impl Related<super::seasons::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Season.def()
    }
}

impl Related<super::blind_templates::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::BlindTemplate.def()
    }
}

impl Related<super::tournament_translations::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Translations.def()
    }
}

impl Related<super::tournament_dealers::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Dealers.def()
    }
}

impl Related<super::registrations::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Registrations.def()
    }
}

impl Related<super::table_seats::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::TableSeats.def()
    }
}

impl Related<super::results::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Results.def()
    }
}

impl Related<super::strikes::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Strikes.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
