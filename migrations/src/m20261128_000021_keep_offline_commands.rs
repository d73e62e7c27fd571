//! Commands made offline (`occurredAt`): each tournament keeps the moment its latest command
//! was applied as of, so a command stated to have happened before it is refused as a
//! conflict; and a key of such a command is kept as long as an `occurredAt` may be old (six
//! hours), not ten minutes, so a queue replayed hours later is still known.
//!
//! A tournament started before this migration takes its last change as its latest command:
//! no command came after it, so nothing is wrongly refused by it, and nothing earlier can be
//! rewound past.

use sea_orm_migration::prelude::*;

#[derive(DeriveIden)]
enum Tournaments {
    Table,
    LastCommandAt,
}

#[derive(DeriveIden)]
enum IdempotencyKeys {
    Table,
    KeptUntil,
}

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Tournaments::Table)
                    .add_column(ColumnDef::new(Tournaments::LastCommandAt).timestamp_with_time_zone().null())
                    .to_owned(),
            )
            .await?;
        manager
            .get_connection()
            .execute_unprepared(
                "UPDATE tournaments SET last_command_at = updated_at WHERE level_started_at IS NOT NULL",
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(IdempotencyKeys::Table)
                    .add_column(ColumnDef::new(IdempotencyKeys::KeptUntil).timestamp_with_time_zone().null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter().table(IdempotencyKeys::Table).drop_column(IdempotencyKeys::KeptUntil).to_owned(),
            )
            .await?;
        manager
            .alter_table(Table::alter().table(Tournaments::Table).drop_column(Tournaments::LastCommandAt).to_owned())
            .await
    }
}
