//! Audit records of live actions, broadcasts and admin operations.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "audit_log")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    /// Who acted; null for the system or a since deleted user.
    pub actor_user_id: Option<Uuid>,
    /// Dotted verb such as `tournament.start` or `admin.push`.
    pub action: String,
    /// Kind of the object acted on (`tournament`, `user`, ...).
    pub target_type: Option<String>,
    /// Id of that object as text, so any key type fits.
    pub target_id: Option<String>,
    pub details: Json,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::users::Entity",
        from = "Column::ActorUserId",
        to = "super::users::Column::Id",
        on_delete = "SetNull"
    )]
    Actor,
}

impl Related<super::users::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Actor.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
