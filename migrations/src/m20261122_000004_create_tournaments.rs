//! Game: seasons, tournaments with their translations and dealers, registrations and seats.

use sea_orm_migration::{prelude::*, schema::*};

use crate::m20261122_000002_create_accounts::{GuestPlayers, Users};
use crate::m20261122_000003_create_clubs::{BlindTemplates, Locations, Organizers};
use crate::{drop_tables, fk, index, unique};

#[derive(DeriveMigrationName)]
pub struct Migration;

/// Occupied seats must be distinct; an eliminated player's row (`active = false`) keeps its
/// seat for undo while another player may be moved into it. Partial indexes are not in the
/// schema builder; this text runs unchanged on SQLite and PostgreSQL.
const OCCUPIED_SEATS_INDEX: &str = "CREATE UNIQUE INDEX ux_table_seats_occupied \
     ON table_seats (tournament_id, table_no, seat_no) WHERE active";

#[derive(DeriveIden)]
pub enum Seasons {
    Table,
    Id,
    StartsOn,
    EndsOn,
    Status,
    CreatedAt,
}

#[derive(DeriveIden)]
pub enum Tournaments {
    Table,
    Id,
    OrganizerId,
    LocationId,
    SeasonId,
    BlindTemplateId,
    TournamentType,
    StartsAt,
    Capacity,
    Status,
    Prizes,
    ChatLink,
    BannerUrl,
    EntryFee,
    PaymentStatus,
    ClockLevels,
    CurrentLevelIdx,
    LevelStartedAt,
    PausedAt,
    ChipsInPlay,
    LiveVersion,
    StartedAt,
    FinishedAt,
    CancelledAt,
    CreatedByUserId,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum TournamentTranslations {
    Table,
    TournamentId,
    Locale,
    Title,
    Subtitle,
}

#[derive(DeriveIden)]
enum TournamentDealers {
    Table,
    Id,
    TournamentId,
    DealerUserId,
    TableNo,
    CreatedAt,
}

#[derive(DeriveIden)]
pub enum Registrations {
    Table,
    Id,
    TournamentId,
    UserId,
    GuestId,
    Status,
    Source,
    SeatedFromWaitlist,
    EliminatedAt,
    CheckedInAt,
    CancelledAt,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum TableSeats {
    Table,
    Id,
    TournamentId,
    RegistrationId,
    TableNo,
    SeatNo,
    Active,
    CreatedAt,
    UpdatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Seasons::Table)
                    .col(pk_uuid(Seasons::Id))
                    .col(date(Seasons::StartsOn))
                    .col(date(Seasons::EndsOn))
                    .col(text(Seasons::Status))
                    .col(timestamp_with_time_zone(Seasons::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager.create_index(unique("ux_seasons_starts_on", Seasons::Table, [Seasons::StartsOn])).await?;

        manager
            .create_table(
                Table::create()
                    .table(Tournaments::Table)
                    .col(pk_uuid(Tournaments::Id))
                    .col(uuid(Tournaments::OrganizerId))
                    .col(uuid(Tournaments::LocationId))
                    .col(uuid(Tournaments::SeasonId))
                    .col(uuid(Tournaments::BlindTemplateId))
                    .col(text(Tournaments::TournamentType))
                    .col(timestamp_with_time_zone(Tournaments::StartsAt))
                    .col(integer(Tournaments::Capacity))
                    .col(text(Tournaments::Status))
                    .col(text_null(Tournaments::Prizes))
                    .col(text_null(Tournaments::ChatLink))
                    .col(text_null(Tournaments::BannerUrl))
                    .col(integer(Tournaments::EntryFee).default(0))
                    .col(text(Tournaments::PaymentStatus).default("not_required"))
                    .col(json_null(Tournaments::ClockLevels))
                    .col(integer(Tournaments::CurrentLevelIdx).default(0))
                    .col(timestamp_with_time_zone_null(Tournaments::LevelStartedAt))
                    .col(timestamp_with_time_zone_null(Tournaments::PausedAt))
                    .col(big_integer(Tournaments::ChipsInPlay).default(0))
                    .col(big_integer(Tournaments::LiveVersion).default(0))
                    .col(timestamp_with_time_zone_null(Tournaments::StartedAt))
                    .col(timestamp_with_time_zone_null(Tournaments::FinishedAt))
                    .col(timestamp_with_time_zone_null(Tournaments::CancelledAt))
                    .col(uuid_null(Tournaments::CreatedByUserId))
                    .col(timestamp_with_time_zone(Tournaments::CreatedAt))
                    .col(timestamp_with_time_zone(Tournaments::UpdatedAt))
                    .foreign_key(&mut fk(
                        "fk_tournaments_organizer_id",
                        Tournaments::Table,
                        Tournaments::OrganizerId,
                        Organizers::Table,
                        Organizers::Id,
                        ForeignKeyAction::Restrict,
                    ))
                    .foreign_key(&mut fk(
                        "fk_tournaments_location_id",
                        Tournaments::Table,
                        Tournaments::LocationId,
                        Locations::Table,
                        Locations::Id,
                        ForeignKeyAction::Restrict,
                    ))
                    .foreign_key(&mut fk(
                        "fk_tournaments_season_id",
                        Tournaments::Table,
                        Tournaments::SeasonId,
                        Seasons::Table,
                        Seasons::Id,
                        ForeignKeyAction::Restrict,
                    ))
                    .foreign_key(&mut fk(
                        "fk_tournaments_blind_template_id",
                        Tournaments::Table,
                        Tournaments::BlindTemplateId,
                        BlindTemplates::Table,
                        BlindTemplates::Id,
                        ForeignKeyAction::Restrict,
                    ))
                    .foreign_key(&mut fk(
                        "fk_tournaments_created_by_user_id",
                        Tournaments::Table,
                        Tournaments::CreatedByUserId,
                        Users::Table,
                        Users::Id,
                        ForeignKeyAction::SetNull,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(index(
                "ix_tournaments_status_starts_at",
                Tournaments::Table,
                [Tournaments::Status, Tournaments::StartsAt],
            ))
            .await?;
        manager
            .create_index(index("ix_tournaments_organizer_id", Tournaments::Table, [Tournaments::OrganizerId]))
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(TournamentTranslations::Table)
                    .col(uuid(TournamentTranslations::TournamentId))
                    .col(text(TournamentTranslations::Locale))
                    .col(text(TournamentTranslations::Title))
                    .col(text_null(TournamentTranslations::Subtitle))
                    .primary_key(
                        Index::create().col(TournamentTranslations::TournamentId).col(TournamentTranslations::Locale),
                    )
                    .foreign_key(&mut fk(
                        "fk_tournament_translations_tournament_id",
                        TournamentTranslations::Table,
                        TournamentTranslations::TournamentId,
                        Tournaments::Table,
                        Tournaments::Id,
                        ForeignKeyAction::Cascade,
                    ))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(TournamentDealers::Table)
                    .col(pk_uuid(TournamentDealers::Id))
                    .col(uuid(TournamentDealers::TournamentId))
                    .col(uuid(TournamentDealers::DealerUserId))
                    .col(integer_null(TournamentDealers::TableNo))
                    .col(timestamp_with_time_zone(TournamentDealers::CreatedAt))
                    .foreign_key(&mut fk(
                        "fk_tournament_dealers_tournament_id",
                        TournamentDealers::Table,
                        TournamentDealers::TournamentId,
                        Tournaments::Table,
                        Tournaments::Id,
                        ForeignKeyAction::Cascade,
                    ))
                    .foreign_key(&mut fk(
                        "fk_tournament_dealers_dealer_user_id",
                        TournamentDealers::Table,
                        TournamentDealers::DealerUserId,
                        Users::Table,
                        Users::Id,
                        ForeignKeyAction::Cascade,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(unique(
                "ux_tournament_dealers_tournament_dealer",
                TournamentDealers::Table,
                [TournamentDealers::TournamentId, TournamentDealers::DealerUserId],
            ))
            .await?;
        manager
            .create_index(index(
                "ix_tournament_dealers_dealer_user_id",
                TournamentDealers::Table,
                [TournamentDealers::DealerUserId],
            ))
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Registrations::Table)
                    .col(pk_uuid(Registrations::Id))
                    .col(uuid(Registrations::TournamentId))
                    .col(uuid_null(Registrations::UserId))
                    .col(uuid_null(Registrations::GuestId))
                    .col(text(Registrations::Status))
                    .col(text(Registrations::Source))
                    .col(boolean(Registrations::SeatedFromWaitlist).default(false))
                    .col(timestamp_with_time_zone_null(Registrations::EliminatedAt))
                    .col(timestamp_with_time_zone_null(Registrations::CheckedInAt))
                    .col(timestamp_with_time_zone_null(Registrations::CancelledAt))
                    .col(timestamp_with_time_zone(Registrations::CreatedAt))
                    .col(timestamp_with_time_zone(Registrations::UpdatedAt))
                    .foreign_key(&mut fk(
                        "fk_registrations_tournament_id",
                        Registrations::Table,
                        Registrations::TournamentId,
                        Tournaments::Table,
                        Tournaments::Id,
                        ForeignKeyAction::Cascade,
                    ))
                    .foreign_key(&mut fk(
                        "fk_registrations_user_id",
                        Registrations::Table,
                        Registrations::UserId,
                        Users::Table,
                        Users::Id,
                        ForeignKeyAction::Restrict,
                    ))
                    .foreign_key(&mut fk(
                        "fk_registrations_guest_id",
                        Registrations::Table,
                        Registrations::GuestId,
                        GuestPlayers::Table,
                        GuestPlayers::Id,
                        ForeignKeyAction::Restrict,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(unique(
                "ux_registrations_tournament_user",
                Registrations::Table,
                [Registrations::TournamentId, Registrations::UserId],
            ))
            .await?;
        manager
            .create_index(unique(
                "ux_registrations_tournament_guest",
                Registrations::Table,
                [Registrations::TournamentId, Registrations::GuestId],
            ))
            .await?;
        manager
            .create_index(index(
                "ix_registrations_tournament_status_created_at",
                Registrations::Table,
                [Registrations::TournamentId, Registrations::Status, Registrations::CreatedAt],
            ))
            .await?;
        manager.create_index(index("ix_registrations_user_id", Registrations::Table, [Registrations::UserId])).await?;
        manager
            .create_index(index("ix_registrations_guest_id", Registrations::Table, [Registrations::GuestId]))
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(TableSeats::Table)
                    .col(pk_uuid(TableSeats::Id))
                    .col(uuid(TableSeats::TournamentId))
                    .col(uuid(TableSeats::RegistrationId))
                    .col(integer(TableSeats::TableNo))
                    .col(integer(TableSeats::SeatNo))
                    .col(boolean(TableSeats::Active).default(true))
                    .col(timestamp_with_time_zone(TableSeats::CreatedAt))
                    .col(timestamp_with_time_zone(TableSeats::UpdatedAt))
                    .foreign_key(&mut fk(
                        "fk_table_seats_tournament_id",
                        TableSeats::Table,
                        TableSeats::TournamentId,
                        Tournaments::Table,
                        Tournaments::Id,
                        ForeignKeyAction::Cascade,
                    ))
                    .foreign_key(&mut fk(
                        "fk_table_seats_registration_id",
                        TableSeats::Table,
                        TableSeats::RegistrationId,
                        Registrations::Table,
                        Registrations::Id,
                        ForeignKeyAction::Cascade,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(unique(
                "ux_table_seats_tournament_registration",
                TableSeats::Table,
                [TableSeats::TournamentId, TableSeats::RegistrationId],
            ))
            .await?;
        manager.get_connection().execute_unprepared(OCCUPIED_SEATS_INDEX).await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        drop_tables(
            manager,
            [
                TableSeats::Table.into_iden(),
                Registrations::Table.into_iden(),
                TournamentDealers::Table.into_iden(),
                TournamentTranslations::Table.into_iden(),
                Tournaments::Table.into_iden(),
                Seasons::Table.into_iden(),
            ],
        )
        .await
    }
}
