//! Journal of every notification, written even when no push is sent.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "notifications")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub user_id: Uuid,
    /// `tournament.reminder`, `waitlist.promoted`, `followee.registered`,
    /// `tournament.results` or `admin_custom`.
    pub kind: String,
    pub payload: Json,
    /// Unique per user when set (kind, tournament and window for reminders), so a repeated
    /// job tick inserts nothing; null never collides.
    pub dedup_key: Option<String>,
    pub created_at: DateTimeUtc,
    /// Stamped when a push was sent to the user's devices; null when none was requested.
    pub sent_at: Option<DateTimeUtc>,
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
