//! Title and subtitle of a tournament per locale (`ru`, `en`).

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "tournament_translations")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub tournament_id: Uuid,
    /// `ru` or `en`.
    #[sea_orm(primary_key, auto_increment = false)]
    pub locale: String,
    pub title: String,
    pub subtitle: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::tournaments::Entity",
        from = "Column::TournamentId",
        to = "super::tournaments::Column::Id",
        on_delete = "Cascade"
    )]
    Tournament,
}

impl Related<super::tournaments::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Tournament.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
