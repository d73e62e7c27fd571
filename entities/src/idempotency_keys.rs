//! A live command's idempotency key (the `Idempotency-Key` header, or a queued command's
//! `idempotencyKey`), per account and key, written in the command's own transaction with what
//! the command came to: a retry is answered by it instead of a second change.

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
    /// A digest of the tournament and the command: the key may only be sent again with the same.
    /// (Rows kept before the key moved into the command's transaction digest the method, path
    /// and body.)
    pub fingerprint: String,
    /// The HTTP status of what the command came to; null on a row of an older version whose
    /// first request never ended.
    pub status_code: Option<i32>,
    /// What the command came to, as JSON (`floor_actors::live::Recorded`; on a row of an older
    /// version, the first HTTP answer's body).
    pub response_body: Option<String>,
    /// When the command was kept: the key expires ten minutes later, unless `kept_until`.
    pub created_at: DateTimeUtc,
    /// Set for a command made offline (`occurredAt`): the key is kept until then, as long as
    /// its command may still be replayed.
    pub kept_until: Option<DateTimeUtc>,
    pub finished_at: Option<DateTimeUtc>,
    /// The tournament the command was for; null on a row of an older version.
    pub tournament_id: Option<Uuid>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
