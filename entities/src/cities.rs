//! Reference list of cities; the slug is the stable key that users and venues point at.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "cities")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    /// Stable key (`moscow`), never changed once made; the foreign keys of `users.city_slug` and
    /// `locations.city_slug` still cascade, should an operator ever have to fix one by hand.
    #[sea_orm(unique)]
    pub slug: String,
    /// Inactive cities stay referenced but are not offered for selection.
    pub is_active: bool,
    /// Ascending display order in pickers.
    pub sort_order: i32,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(has_many = "super::city_translations::Entity")]
    Translations,
    #[sea_orm(has_many = "super::users::Entity", via_rel = "Relation::City")]
    Users,
    #[sea_orm(has_many = "super::locations::Entity", via_rel = "Relation::City")]
    Locations,
}

impl Related<super::city_translations::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Translations.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
