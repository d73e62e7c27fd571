//! Rating state of a user as a player: one row per user, rebuilt from results, never patched.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "player_profiles")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub user_id: Uuid,
    /// Sum of awarded xp (equal to season points of every confirmed result).
    pub xp: i64,
    /// Largest level whose threshold `xp` reaches; recomputed with `xp`.
    pub level: i32,
    /// Raw skill in 0..=1, exponentially smoothed in chronological result order;
    /// displayed as `1 + 9 * skill`.
    pub skill: f64,
    pub games_played: i32,
    pub wins: i32,
    /// Registration is refused until this moment; set and lifted with strikes.
    pub ban_until: Option<DateTimeUtc>,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::users::Entity",
        from = "Column::UserId",
        to = "super::users::Column::Id",
        on_delete = "Cascade"
    )]
    User,
}

impl Related<super::users::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::User.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
