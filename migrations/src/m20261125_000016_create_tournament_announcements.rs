//! What a club announced to a tournament's room: kept so the venue screen shows the latest
//! and the one-a-minute limit holds on every node.

use sea_orm_migration::{prelude::*, schema::*};

use crate::{drop_tables, fk, index};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum TournamentAnnouncements {
    Table,
    Id,
    TournamentId,
    Text,
    CreatedByUserId,
    CreatedAt,
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
                    .table(TournamentAnnouncements::Table)
                    .col(uuid(TournamentAnnouncements::Id).primary_key())
                    .col(uuid(TournamentAnnouncements::TournamentId))
                    .col(text(TournamentAnnouncements::Text))
                    .col(uuid_null(TournamentAnnouncements::CreatedByUserId))
                    .col(timestamp_with_time_zone(TournamentAnnouncements::CreatedAt))
                    .foreign_key(&mut fk(
                        "fk_tournament_announcements_tournament",
                        TournamentAnnouncements::Table,
                        TournamentAnnouncements::TournamentId,
                        Tournaments::Table,
                        Tournaments::Id,
                        ForeignKeyAction::Cascade,
                    ))
                    .to_owned(),
            )
            .await?;
        // The latest announcement of a tournament: the screen's read and the limit's check.
        manager
            .create_index(index(
                "ix_tournament_announcements_tournament_created",
                TournamentAnnouncements::Table,
                [TournamentAnnouncements::TournamentId, TournamentAnnouncements::CreatedAt],
            ))
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        drop_tables(manager, [TournamentAnnouncements::Table]).await
    }
}
