//! What each applied migration asks of the code that runs on it: the oldest release of floor
//! whose code still works once it is applied (see [`crate::compat`]). Written by the binary
//! that migrates, read by an older one that finds migrations it does not know (a rollback, or
//! an old node restarted during a rolling deploy), so it knows whether it may serve.

use sea_orm_migration::{prelude::*, schema::*};

use crate::drop_tables;

#[derive(DeriveIden)]
enum SchemaCompat {
    Table,
    Migration,
    OldestRelease,
    AppliedBy,
}

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(SchemaCompat::Table)
                    .col(string(SchemaCompat::Migration).primary_key())
                    .col(string(SchemaCompat::OldestRelease))
                    .col(string(SchemaCompat::AppliedBy))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        drop_tables(manager, [SchemaCompat::Table]).await
    }
}
