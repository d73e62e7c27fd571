//! The first answer of a live command sent with an `Idempotency-Key`, per account and key,
//! replayed to a retry within ten minutes.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "idempotency_keys")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub user_id: Uuid,
    /// The header's value, as sent.
    #[sea_orm(primary_key, auto_increment = false)]
    pub key: String,
    /// A digest of the method, path and body: the key may only be sent again with the same.
    pub fingerprint: String,
    /// The first answer's HTTP status; null while the first request runs.
    pub status_code: Option<i32>,
    /// The first answer's JSON body.
    pub response_body: Option<String>,
    /// When the first request came: the key expires ten minutes later, unless `kept_until`.
    pub created_at: DateTimeUtc,
    /// Set for a command made offline (`occurredAt`): the key is kept until then, as long as
    /// its command may still be replayed.
    pub kept_until: Option<DateTimeUtc>,
    pub finished_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
