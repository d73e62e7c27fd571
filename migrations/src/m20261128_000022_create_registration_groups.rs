//! The registration desks' groups, one row each, written inside the group's own transaction:
//! the row is there exactly when the group committed. A desk whose `COMMIT` lost its
//! connection reads it to learn whether the group was written, and answers accordingly. Rows
//! are kept only for that look: a desk deletes its tournament's old ones when it ends.

use sea_orm_migration::{prelude::*, schema::*};

use crate::{drop_tables, index};

#[derive(DeriveIden)]
enum RegistrationGroups {
    Table,
    Id,
    TournamentId,
    DecidedAt,
}

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(RegistrationGroups::Table)
                    .col(uuid(RegistrationGroups::Id).primary_key())
                    .col(uuid(RegistrationGroups::TournamentId))
                    .col(timestamp_with_time_zone(RegistrationGroups::DecidedAt))
                    .to_owned(),
            )
            .await?;
        // A desk's end deletes its tournament's rows older than a look takes.
        manager
            .create_index(index(
                "ix_registration_groups_tournament",
                RegistrationGroups::Table,
                [RegistrationGroups::TournamentId, RegistrationGroups::DecidedAt],
            ))
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        drop_tables(manager, [RegistrationGroups::Table]).await
    }
}
