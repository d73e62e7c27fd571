//! Device push tokens, a row per account and token: an account that registers a token
//! another account holds gets a row of its own and never takes or removes the other's. A
//! device signed into two accounts gets both accounts' pushes until one removes its row.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

use crate::enums::PushPlatform;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "push_tokens")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub user_id: Uuid,
    #[sea_orm(primary_key, auto_increment = false)]
    pub token: String,
    pub platform: PushPlatform,
    pub created_at: DateTimeUtc,
    /// When this account last registered the token: the oldest goes first past the cap.
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
