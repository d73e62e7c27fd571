//! Named bands of player levels (fish, grinder, ...), each from a minimum level up.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "level_tiers")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    /// Stable name (`fish`), unique.
    #[sea_orm(unique)]
    pub key: String,
    /// A player is in the tier with the largest `min_level` not above their level.
    pub min_level: i32,
    /// Hex colour `#rrggbb`.
    pub color: String,
    pub picture_url: Option<String>,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(has_many = "super::level_tier_translations::Entity")]
    Translations,
}

impl Related<super::level_tier_translations::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Translations.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
