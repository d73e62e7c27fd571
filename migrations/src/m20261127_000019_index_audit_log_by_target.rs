//! Audit records found by what they were done to (`target_type`, `target_id`): an account's
//! deletion finds the records of the invitations sent to its phone this way, instead of
//! reading the whole log's details inside its transaction.

use sea_orm_migration::prelude::*;

use crate::index;

#[derive(DeriveIden)]
enum AuditLog {
    Table,
    TargetType,
    TargetId,
}

const NAME: &str = "ix_audit_log_target";

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.create_index(index(NAME, AuditLog::Table, [AuditLog::TargetType, AuditLog::TargetId])).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_index(Index::drop().name(NAME).table(AuditLog::Table).to_owned()).await
    }
}
