//! Clubs: independent organisers that run tournaments in their own venues.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

use crate::enums::OrganizerStatus;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "organizers")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub name: String,
    pub status: OrganizerStatus,
    /// A player cancelling later than this many hours before the start gets a strike;
    /// also the moment of the second reminder. The only club setting.
    pub cancel_deadline_hours: i32,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(has_many = "super::organizer_members::Entity", via_rel = "Relation::Organizer")]
    Members,
    #[sea_orm(has_many = "super::dealer_invites::Entity", via_rel = "Relation::Organizer")]
    DealerInvites,
    #[sea_orm(has_many = "super::locations::Entity", via_rel = "Relation::Organizer")]
    Locations,
    #[sea_orm(has_many = "super::blind_templates::Entity", via_rel = "Relation::Organizer")]
    BlindTemplates,
    #[sea_orm(has_many = "super::tournaments::Entity", via_rel = "Relation::Organizer")]
    Tournaments,
}

impl Related<super::organizer_members::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Members.def()
    }
}

impl Related<super::dealer_invites::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::DealerInvites.def()
    }
}

impl Related<super::locations::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Locations.def()
    }
}

impl Related<super::blind_templates::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::BlindTemplates.def()
    }
}

impl Related<super::tournaments::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Tournaments.def()
    }
}

/// The people of a club, through `organizer_members`.
impl Related<super::users::Entity> for Entity {
    fn to() -> RelationDef {
        super::organizer_members::Relation::User.def()
    }

    fn via() -> Option<RelationDef> {
        Some(super::organizer_members::Relation::Organizer.def().rev())
    }
}

impl ActiveModelBehavior for ActiveModel {}
