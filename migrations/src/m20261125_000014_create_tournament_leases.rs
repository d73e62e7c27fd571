//! Who runs a tournament's actor when Floor runs as several nodes: one row per tournament
//! that some node owns, until `expires_at` unless that node renews it. `epoch` grows at every
//! change of hands, and a write of the live game names the epoch it was decided under, so a
//! node that lost its lease without noticing cannot write.

use sea_orm_migration::{prelude::*, schema::*};

use crate::{drop_tables, fk, index};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum TournamentLeases {
    Table,
    TournamentId,
    NodeId,
    NodeUrl,
    Epoch,
    ExpiresAt,
}

#[derive(DeriveIden)]
enum Tournaments {
    Table,
    Id,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(TournamentLeases::Table)
                    .col(uuid(TournamentLeases::TournamentId).primary_key())
                    .col(uuid(TournamentLeases::NodeId))
                    .col(text(TournamentLeases::NodeUrl))
                    .col(big_integer(TournamentLeases::Epoch))
                    .col(timestamp_with_time_zone(TournamentLeases::ExpiresAt))
                    .foreign_key(&mut fk(
                        "fk_tournament_leases_tournament",
                        TournamentLeases::Table,
                        TournamentLeases::TournamentId,
                        Tournaments::Table,
                        Tournaments::Id,
                        ForeignKeyAction::Cascade,
                    ))
                    .to_owned(),
            )
            .await?;
        // Each node renews and hands over its own leases through this index.
        manager
            .create_index(index("ix_tournament_leases_node_id", TournamentLeases::Table, [TournamentLeases::NodeId]))
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        drop_tables(manager, [TournamentLeases::Table]).await
    }
}
