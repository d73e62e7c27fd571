//! Audit records found by who did them (`actor_user_id`): a player's data export lists what
//! they did, and PostgreSQL indexes no foreign key by itself, so the export read the whole
//! log. Only adds an index: the release before runs on it.

use sea_orm_migration::prelude::*;

use crate::index;

#[derive(DeriveIden)]
enum AuditLog {
    Table,
    ActorUserId,
}

const NAME: &str = "ix_audit_log_actor_user_id";

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.create_index(index(NAME, AuditLog::Table, [AuditLog::ActorUserId])).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.drop_index(Index::drop().name(NAME).table(AuditLog::Table).to_owned()).await
    }
}
