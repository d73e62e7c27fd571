//! People seated by phone without an account; their history waits for them.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "guest_players")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    /// E.164, unique; an account created with this phone claims the guest.
    #[sea_orm(unique)]
    pub phone: String,
    pub name: String,
    /// The account that claimed this guest at sign-up; null while unclaimed.
    pub claimed_by_user_id: Option<Uuid>,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::users::Entity",
        from = "Column::ClaimedByUserId",
        to = "super::users::Column::Id",
        on_delete = "SetNull"
    )]
    ClaimedBy,
    #[sea_orm(has_many = "super::registrations::Entity", via_rel = "Relation::Guest")]
    Registrations,
    #[sea_orm(has_many = "super::results::Entity", via_rel = "Relation::Guest")]
    Results,
}

impl Related<super::users::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::ClaimedBy.def()
    }
}

impl Related<super::registrations::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Registrations.def()
    }
}

impl Related<super::results::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Results.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
