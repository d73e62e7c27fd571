//! Which node runs a tournament's actor, while Floor runs as several nodes: held until
//! `expires_at` unless renewed; `epoch` counts the changes of hands.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "tournament_leases")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub tournament_id: Uuid,
    /// The holder: a node's id, new at every start of the process.
    pub node_id: Uuid,
    /// Where the other nodes reach the holder to hand it a command.
    pub node_url: String,
    pub epoch: i64,
    pub expires_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
