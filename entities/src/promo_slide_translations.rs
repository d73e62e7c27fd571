//! Title and subtitle of a promo slide per locale (`ru`, `en`).

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "promo_slide_translations")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub slide_id: Uuid,
    /// `ru` or `en`.
    #[sea_orm(primary_key, auto_increment = false)]
    pub locale: String,
    pub title: String,
    pub subtitle: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::promo_slides::Entity",
        from = "Column::SlideId",
        to = "super::promo_slides::Column::Id",
        on_delete = "Cascade"
    )]
    Slide,
}

impl Related<super::promo_slides::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Slide.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
