//! Name of a city per locale (`ru`, `en`).

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "city_translations")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub city_id: Uuid,
    /// `ru` or `en`.
    #[sea_orm(primary_key, auto_increment = false)]
    pub locale: String,
    pub name: String,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::cities::Entity",
        from = "Column::CityId",
        to = "super::cities::Column::Id",
        on_delete = "Cascade"
    )]
    City,
}

impl Related<super::cities::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::City.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
