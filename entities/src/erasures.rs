//! How many times a person was erased from the public reads (an account deleted): one row,
//! `id` 1, made by the first deletion and moved on by each one in its own transaction.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "erasures")]
pub struct Model {
    /// Always [`ROW`].
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: i32,
    /// The deletions committed so far.
    pub generation: i64,
}

/// The one row's id.
pub const ROW: i32 = 1;

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
