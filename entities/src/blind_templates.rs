//! Blind structures a tournament is created from: the club's own or the platform's.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "blind_templates")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    /// Owning club; null for a platform template usable by every club.
    pub organizer_id: Option<Uuid>,
    pub name: String,
    /// Ordered segments, each `{"kind":"level","durationMin","smallBlind","bigBlind","ante"}`
    /// or `{"kind":"break","durationMin"}`.
    pub levels: Json,
    pub starting_stack: i64,
    /// Level until which late registration is meant to stay open; stored and returned, but no
    /// rule checks it.
    pub late_reg_level: Option<i32>,
    pub created_at: DateTimeUtc,
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
    #[sea_orm(has_many = "super::tournaments::Entity", via_rel = "Relation::BlindTemplate")]
    Tournaments,
}

impl Related<super::organizers::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Organizer.def()
    }
}

impl Related<super::tournaments::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Tournaments.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
