//! Promo carousel slides of the player app, each opening a tournament or an address.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

use crate::enums::PromoTarget;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "promo_slides")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub picture_url: String,
    /// Which of `target_tournament_id` and `target_url` the slide opens.
    pub target_kind: PromoTarget,
    /// Cleared when the tournament is deleted.
    pub target_tournament_id: Option<Uuid>,
    pub target_url: Option<String>,
    /// Display window; an open end means no limit on that side.
    pub starts_at: Option<DateTimeUtc>,
    pub ends_at: Option<DateTimeUtc>,
    /// Ascending display order.
    pub sort_order: i32,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::tournaments::Entity",
        from = "Column::TargetTournamentId",
        to = "super::tournaments::Column::Id",
        on_delete = "SetNull"
    )]
    TargetTournament,
    #[sea_orm(has_many = "super::promo_slide_translations::Entity")]
    Translations,
}

impl Related<super::tournaments::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::TargetTournament.def()
    }
}

impl Related<super::promo_slide_translations::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Translations.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
