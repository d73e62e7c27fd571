//! What a game day leaves behind: results, strikes, and the rating configuration row.

use sea_orm_migration::{prelude::*, schema::*};

use crate::m20261122_000002_create_accounts::{GuestPlayers, Users};
use crate::m20261122_000004_create_tournaments::{Registrations, Tournaments};
use crate::{drop_tables, fk, index, unique};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Results {
    Table,
    Id,
    TournamentId,
    RegistrationId,
    UserId,
    GuestId,
    Place,
    SeasonPoints,
    Xp,
    SkillBefore,
    SkillAfter,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Strikes {
    Table,
    Id,
    UserId,
    TournamentId,
    RegistrationId,
    Reason,
    CreatedAt,
    ForgivenAt,
    ForgivenByUserId,
}

#[derive(DeriveIden)]
enum RatingConfig {
    Table,
    Id,
    PointsBase,
    MinPoints,
    XpLevelBase,
    XpLevelExponent,
    SkillAlpha,
    SkillInitial,
    StrikesToBan,
    StrikeWindowDays,
    BanDays,
    UpdatedAt,
    UpdatedByUserId,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Results::Table)
                    .col(pk_uuid(Results::Id))
                    .col(uuid(Results::TournamentId))
                    .col(uuid(Results::RegistrationId))
                    .col(uuid_null(Results::UserId))
                    .col(uuid_null(Results::GuestId))
                    .col(integer(Results::Place))
                    .col(integer(Results::SeasonPoints))
                    .col(integer(Results::Xp))
                    .col(double_null(Results::SkillBefore))
                    .col(double_null(Results::SkillAfter))
                    .col(timestamp_with_time_zone(Results::CreatedAt))
                    .foreign_key(&mut fk(
                        "fk_results_tournament_id",
                        Results::Table,
                        Results::TournamentId,
                        Tournaments::Table,
                        Tournaments::Id,
                        ForeignKeyAction::Cascade,
                    ))
                    // NO ACTION rather than RESTRICT: deleting a tournament cascades to both
                    // its registrations and its results, and RESTRICT would fire in between.
                    .foreign_key(&mut fk(
                        "fk_results_registration_id",
                        Results::Table,
                        Results::RegistrationId,
                        Registrations::Table,
                        Registrations::Id,
                        ForeignKeyAction::NoAction,
                    ))
                    .foreign_key(&mut fk(
                        "fk_results_user_id",
                        Results::Table,
                        Results::UserId,
                        Users::Table,
                        Users::Id,
                        ForeignKeyAction::Restrict,
                    ))
                    .foreign_key(&mut fk(
                        "fk_results_guest_id",
                        Results::Table,
                        Results::GuestId,
                        GuestPlayers::Table,
                        GuestPlayers::Id,
                        ForeignKeyAction::Restrict,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(unique(
                "ux_results_tournament_place",
                Results::Table,
                [Results::TournamentId, Results::Place],
            ))
            .await?;
        manager.create_index(index("ix_results_user_id", Results::Table, [Results::UserId])).await?;
        manager.create_index(index("ix_results_registration_id", Results::Table, [Results::RegistrationId])).await?;

        manager
            .create_table(
                Table::create()
                    .table(Strikes::Table)
                    .col(pk_uuid(Strikes::Id))
                    .col(uuid(Strikes::UserId))
                    .col(uuid(Strikes::TournamentId))
                    .col(uuid(Strikes::RegistrationId))
                    .col(text(Strikes::Reason))
                    .col(timestamp_with_time_zone(Strikes::CreatedAt))
                    .col(timestamp_with_time_zone_null(Strikes::ForgivenAt))
                    .col(uuid_null(Strikes::ForgivenByUserId))
                    .foreign_key(&mut fk(
                        "fk_strikes_user_id",
                        Strikes::Table,
                        Strikes::UserId,
                        Users::Table,
                        Users::Id,
                        ForeignKeyAction::Cascade,
                    ))
                    .foreign_key(&mut fk(
                        "fk_strikes_tournament_id",
                        Strikes::Table,
                        Strikes::TournamentId,
                        Tournaments::Table,
                        Tournaments::Id,
                        ForeignKeyAction::Cascade,
                    ))
                    .foreign_key(&mut fk(
                        "fk_strikes_registration_id",
                        Strikes::Table,
                        Strikes::RegistrationId,
                        Registrations::Table,
                        Registrations::Id,
                        ForeignKeyAction::Cascade,
                    ))
                    .foreign_key(&mut fk(
                        "fk_strikes_forgiven_by_user_id",
                        Strikes::Table,
                        Strikes::ForgivenByUserId,
                        Users::Table,
                        Users::Id,
                        ForeignKeyAction::SetNull,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(index("ix_strikes_user_id_created_at", Strikes::Table, [Strikes::UserId, Strikes::CreatedAt]))
            .await?;
        manager
            .create_index(unique(
                "ux_strikes_registration_reason",
                Strikes::Table,
                [Strikes::RegistrationId, Strikes::Reason],
            ))
            .await?;
        manager.create_index(index("ix_strikes_tournament_id", Strikes::Table, [Strikes::TournamentId])).await?;

        manager
            .create_table(
                Table::create()
                    .table(RatingConfig::Table)
                    .col(integer(RatingConfig::Id).primary_key())
                    .col(double(RatingConfig::PointsBase))
                    .col(integer(RatingConfig::MinPoints))
                    .col(double(RatingConfig::XpLevelBase))
                    .col(double(RatingConfig::XpLevelExponent))
                    .col(double(RatingConfig::SkillAlpha))
                    .col(double(RatingConfig::SkillInitial))
                    .col(integer(RatingConfig::StrikesToBan))
                    .col(integer(RatingConfig::StrikeWindowDays))
                    .col(integer(RatingConfig::BanDays))
                    .col(timestamp_with_time_zone(RatingConfig::UpdatedAt))
                    .col(uuid_null(RatingConfig::UpdatedByUserId))
                    .foreign_key(&mut fk(
                        "fk_rating_config_updated_by_user_id",
                        RatingConfig::Table,
                        RatingConfig::UpdatedByUserId,
                        Users::Table,
                        Users::Id,
                        ForeignKeyAction::SetNull,
                    ))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        drop_tables(manager, [RatingConfig::Table.into_iden(), Strikes::Table.into_iden(), Results::Table.into_iden()])
            .await
    }
}
