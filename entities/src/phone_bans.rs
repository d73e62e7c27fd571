//! A registration ban kept past the deletion of the account it was on, for the phone that
//! account had: an account signing up with the phone starts under it. Only the phone's
//! SHA-256 is kept, and only until the ban ends.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "phone_bans")]
pub struct Model {
    /// Hex SHA-256 of the phone in E.164.
    #[sea_orm(primary_key, auto_increment = false)]
    pub phone_hash: String,
    /// When the ban ends; the row is deleted after it.
    pub ban_until: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
