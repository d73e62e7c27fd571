//! One-time sign-in codes; only the hash of a code is stored.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "otp_codes")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: Uuid,
    /// E.164 phone the code was sent to (not a foreign key: the account may not exist yet).
    pub phone: String,
    /// Hex SHA-256 of the six-digit code.
    pub code_hash: String,
    pub expires_at: DateTimeUtc,
    /// Wrong verifications so far; the code is dead at 5.
    pub attempts: i32,
    /// Stamped by the successful verification; a consumed code never verifies again.
    pub consumed_at: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
