//! The answers of live commands sent with an `Idempotency-Key`, kept for ten minutes: a
//! retry with the same key from the same account gets the first answer instead of applying
//! the command a second time. A row without a status is a first request still running.

use sea_orm_migration::{prelude::*, schema::*};

use crate::{drop_tables, fk, index};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum IdempotencyKeys {
    Table,
    UserId,
    Key,
    Fingerprint,
    StatusCode,
    ResponseBody,
    CreatedAt,
    FinishedAt,
}

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(IdempotencyKeys::Table)
                    .col(uuid(IdempotencyKeys::UserId))
                    .col(text(IdempotencyKeys::Key))
                    .col(text(IdempotencyKeys::Fingerprint))
                    .col(integer_null(IdempotencyKeys::StatusCode))
                    .col(text_null(IdempotencyKeys::ResponseBody))
                    .col(timestamp_with_time_zone(IdempotencyKeys::CreatedAt))
                    .col(timestamp_with_time_zone_null(IdempotencyKeys::FinishedAt))
                    .primary_key(Index::create().col(IdempotencyKeys::UserId).col(IdempotencyKeys::Key))
                    .foreign_key(&mut fk(
                        "fk_idempotency_keys_user",
                        IdempotencyKeys::Table,
                        IdempotencyKeys::UserId,
                        Users::Table,
                        Users::Id,
                        ForeignKeyAction::Cascade,
                    ))
                    .to_owned(),
            )
            .await?;
        // Every claim forgets the expired keys of everyone through this index.
        manager
            .create_index(index("ix_idempotency_keys_created_at", IdempotencyKeys::Table, [IdempotencyKeys::CreatedAt]))
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        drop_tables(manager, [IdempotencyKeys::Table]).await
    }
}
