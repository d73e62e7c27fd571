//! A registration desk's group, written in the group's own transaction: present exactly when
//! the group committed, for a desk whose `COMMIT` lost its connection to look up.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "registration_groups")]
pub struct Model {
    /// Chosen by the desk before the group's transaction begins.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    pub tournament_id: Uuid,
    /// When the group was decided, by the deciding node's clock; old rows are deleted by it.
    pub decided_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
