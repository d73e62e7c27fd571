//! A live command's idempotency key is written in the same transaction as the command's
//! effect, by the tournament's actor, bound to the tournament it was used on: a key without a
//! row was never applied, and a key of one tournament never answers for another.
//!
//! Rows written before this migration keep no tournament (`NULL`): their answer, when they have
//! one, is read as it was kept (the first HTTP answer).

use sea_orm_migration::prelude::*;

#[derive(DeriveIden)]
enum IdempotencyKeys {
    Table,
    TournamentId,
}

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(IdempotencyKeys::Table)
                    .add_column(ColumnDef::new(IdempotencyKeys::TournamentId).uuid().null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter().table(IdempotencyKeys::Table).drop_column(IdempotencyKeys::TournamentId).to_owned(),
            )
            .await
    }
}
