//! Name of a level tier per locale (`ru`, `en`).

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "level_tier_translations")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub tier_id: Uuid,
    /// `ru` or `en`.
    #[sea_orm(primary_key, auto_increment = false)]
    pub locale: String,
    pub name: String,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::level_tiers::Entity",
        from = "Column::TierId",
        to = "super::level_tiers::Column::Id",
        on_delete = "Cascade"
    )]
    Tier,
}

impl Related<super::level_tiers::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Tier.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
