//! Rating seasons: calendar quarters, one of them current.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

use crate::enums::SeasonStatus;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "seasons")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    /// First day of the quarter; unique, so creating the current season on demand is idempotent.
    #[sea_orm(unique)]
    pub starts_on: Date,
    /// Last day of the quarter (inclusive).
    pub ends_on: Date,
    /// `current` until the daily rollover archives the expired quarter.
    pub status: SeasonStatus,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(has_many = "super::tournaments::Entity", via_rel = "Relation::Season")]
    Tournaments,
}

impl Related<super::tournaments::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Tournaments.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
