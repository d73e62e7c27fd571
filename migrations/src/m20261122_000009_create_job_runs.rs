//! The claims of scheduled job ticks: one row per job and tick time, so that of several
//! `floor serve` nodes sharing the database exactly one runs each tick (the one whose insert
//! went through); the row then keeps how that run ended.

use sea_orm_migration::{prelude::*, schema::*};

use crate::drop_tables;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum JobRuns {
    Table,
    Job,
    TickAt,
    ClaimedAt,
    FinishedAt,
    Failure,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(JobRuns::Table)
                    .col(text(JobRuns::Job))
                    .col(timestamp_with_time_zone(JobRuns::TickAt))
                    .col(timestamp_with_time_zone(JobRuns::ClaimedAt))
                    .col(timestamp_with_time_zone_null(JobRuns::FinishedAt))
                    .col(text_null(JobRuns::Failure))
                    // Claiming a tick forgets the job's old claims through this key too.
                    .primary_key(Index::create().col(JobRuns::Job).col(JobRuns::TickAt))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        drop_tables(manager, [JobRuns::Table]).await
    }
}
