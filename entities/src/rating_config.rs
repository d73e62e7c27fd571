//! The single row (id 1) of platform-wide rating and sanction settings.
//! A change applies to new awards only; existing results are not recomputed.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "rating_config")]
pub struct Model {
    /// Always 1.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: i32,
    /// Multiplier of the season points formula.
    pub points_base: f64,
    /// Points for mere participation (the floor of the formula).
    pub min_points: i32,
    /// Base of the level threshold `round(base * (L - 1) ^ exponent)`.
    pub xp_level_base: f64,
    pub xp_level_exponent: f64,
    /// Smoothing factor of the skill update.
    pub skill_alpha: f64,
    /// Raw skill of a new player (0.4444 is displayed as 5.0).
    pub skill_initial: f64,
    /// Unforgiven strikes within the window that cause a ban.
    pub strikes_to_ban: i32,
    pub strike_window_days: i32,
    /// Length of a registration ban.
    pub ban_days: i32,
    pub updated_at: DateTimeUtc,
    pub updated_by_user_id: Option<Uuid>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::users::Entity",
        from = "Column::UpdatedByUserId",
        to = "super::users::Column::Id",
        on_delete = "SetNull"
    )]
    UpdatedBy,
}

impl Related<super::users::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::UpdatedBy.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
