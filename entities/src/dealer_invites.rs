//! One-time codes a club hands to a future dealer; only the hash of the code is stored.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "dealer_invites")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub organizer_id: Uuid,
    /// E.164; only the signed-in user with this phone may claim the invite.
    pub phone: String,
    /// Hex SHA-256 of the one-time code, unique.
    #[sea_orm(unique)]
    pub code_hash: String,
    pub expires_at: DateTimeUtc,
    /// Stamped when claimed; a claimed invite is spent.
    pub claimed_at: Option<DateTimeUtc>,
    pub claimed_by_user_id: Option<Uuid>,
    pub created_by_user_id: Option<Uuid>,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::organizers::Entity",
        from = "Column::OrganizerId",
        to = "super::organizers::Column::Id",
        on_delete = "Cascade"
    )]
    Organizer,
    #[sea_orm(
        belongs_to = "super::users::Entity",
        from = "Column::ClaimedByUserId",
        to = "super::users::Column::Id",
        on_delete = "SetNull"
    )]
    ClaimedBy,
    #[sea_orm(
        belongs_to = "super::users::Entity",
        from = "Column::CreatedByUserId",
        to = "super::users::Column::Id",
        on_delete = "SetNull"
    )]
    CreatedBy,
}

impl Related<super::organizers::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Organizer.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
