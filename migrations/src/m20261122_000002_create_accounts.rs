//! People: accounts, their player and dealer profiles, guests, and sign-in secrets.

use sea_orm_migration::{prelude::*, schema::*};

use crate::m20261122_000001_create_reference_data::Cities;
use crate::{drop_tables, fk, index, unique};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
pub enum Users {
    Table,
    Id,
    Phone,
    Name,
    Nickname,
    AvatarUrl,
    CitySlug,
    ConsentAcceptedAt,
    AdminRole,
    Status,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum PlayerProfiles {
    Table,
    UserId,
    Xp,
    Level,
    Skill,
    GamesPlayed,
    Wins,
    BanUntil,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum DealerProfiles {
    Table,
    UserId,
    PhotoUrl,
    Bio,
    ExperienceYears,
    GamesDealt,
    UpdatedAt,
}

#[derive(DeriveIden)]
pub enum GuestPlayers {
    Table,
    Id,
    Phone,
    Name,
    ClaimedByUserId,
    CreatedAt,
}

#[derive(DeriveIden)]
enum OtpCodes {
    Table,
    Id,
    Phone,
    CodeHash,
    ExpiresAt,
    Attempts,
    ConsumedAt,
    CreatedAt,
}

#[derive(DeriveIden)]
enum RefreshTokens {
    Table,
    Id,
    UserId,
    FamilyId,
    TokenHash,
    ExpiresAt,
    RevokedAt,
    CreatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Users::Table)
                    .col(pk_uuid(Users::Id))
                    .col(text(Users::Phone))
                    .col(text_null(Users::Name))
                    .col(text_null(Users::Nickname))
                    .col(text_null(Users::AvatarUrl))
                    .col(text_null(Users::CitySlug))
                    .col(timestamp_with_time_zone_null(Users::ConsentAcceptedAt))
                    .col(text_null(Users::AdminRole))
                    .col(text(Users::Status).default("active"))
                    .col(timestamp_with_time_zone(Users::CreatedAt))
                    .col(timestamp_with_time_zone(Users::UpdatedAt))
                    .foreign_key(
                        fk(
                            "fk_users_city_slug",
                            Users::Table,
                            Users::CitySlug,
                            Cities::Table,
                            Cities::Slug,
                            ForeignKeyAction::SetNull,
                        )
                        .on_update(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager.create_index(unique("ux_users_phone", Users::Table, [Users::Phone])).await?;

        manager
            .create_table(
                Table::create()
                    .table(PlayerProfiles::Table)
                    .col(pk_uuid(PlayerProfiles::UserId))
                    .col(big_integer(PlayerProfiles::Xp).default(0))
                    .col(integer(PlayerProfiles::Level).default(1))
                    .col(double(PlayerProfiles::Skill).default(0.4444))
                    .col(integer(PlayerProfiles::GamesPlayed).default(0))
                    .col(integer(PlayerProfiles::Wins).default(0))
                    .col(timestamp_with_time_zone_null(PlayerProfiles::BanUntil))
                    .col(timestamp_with_time_zone(PlayerProfiles::UpdatedAt))
                    .foreign_key(&mut fk(
                        "fk_player_profiles_user_id",
                        PlayerProfiles::Table,
                        PlayerProfiles::UserId,
                        Users::Table,
                        Users::Id,
                        ForeignKeyAction::Cascade,
                    ))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(DealerProfiles::Table)
                    .col(pk_uuid(DealerProfiles::UserId))
                    .col(text_null(DealerProfiles::PhotoUrl))
                    .col(text_null(DealerProfiles::Bio))
                    .col(integer_null(DealerProfiles::ExperienceYears))
                    .col(integer(DealerProfiles::GamesDealt).default(0))
                    .col(timestamp_with_time_zone(DealerProfiles::UpdatedAt))
                    .foreign_key(&mut fk(
                        "fk_dealer_profiles_user_id",
                        DealerProfiles::Table,
                        DealerProfiles::UserId,
                        Users::Table,
                        Users::Id,
                        ForeignKeyAction::Cascade,
                    ))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(GuestPlayers::Table)
                    .col(pk_uuid(GuestPlayers::Id))
                    .col(text(GuestPlayers::Phone))
                    .col(text(GuestPlayers::Name))
                    .col(uuid_null(GuestPlayers::ClaimedByUserId))
                    .col(timestamp_with_time_zone(GuestPlayers::CreatedAt))
                    .foreign_key(&mut fk(
                        "fk_guest_players_claimed_by_user_id",
                        GuestPlayers::Table,
                        GuestPlayers::ClaimedByUserId,
                        Users::Table,
                        Users::Id,
                        ForeignKeyAction::SetNull,
                    ))
                    .to_owned(),
            )
            .await?;
        manager.create_index(unique("ux_guest_players_phone", GuestPlayers::Table, [GuestPlayers::Phone])).await?;

        manager
            .create_table(
                Table::create()
                    .table(OtpCodes::Table)
                    .col(pk_uuid(OtpCodes::Id))
                    .col(text(OtpCodes::Phone))
                    .col(text(OtpCodes::CodeHash))
                    .col(timestamp_with_time_zone(OtpCodes::ExpiresAt))
                    .col(integer(OtpCodes::Attempts).default(0))
                    .col(timestamp_with_time_zone_null(OtpCodes::ConsumedAt))
                    .col(timestamp_with_time_zone(OtpCodes::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(index(
                "ix_otp_codes_phone_created_at",
                OtpCodes::Table,
                [OtpCodes::Phone, OtpCodes::CreatedAt],
            ))
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(RefreshTokens::Table)
                    .col(pk_uuid(RefreshTokens::Id))
                    .col(uuid(RefreshTokens::UserId))
                    .col(uuid(RefreshTokens::FamilyId))
                    .col(text(RefreshTokens::TokenHash))
                    .col(timestamp_with_time_zone(RefreshTokens::ExpiresAt))
                    .col(timestamp_with_time_zone_null(RefreshTokens::RevokedAt))
                    .col(timestamp_with_time_zone(RefreshTokens::CreatedAt))
                    .foreign_key(&mut fk(
                        "fk_refresh_tokens_user_id",
                        RefreshTokens::Table,
                        RefreshTokens::UserId,
                        Users::Table,
                        Users::Id,
                        ForeignKeyAction::Cascade,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(unique("ux_refresh_tokens_token_hash", RefreshTokens::Table, [RefreshTokens::TokenHash]))
            .await?;
        manager
            .create_index(index("ix_refresh_tokens_family_id", RefreshTokens::Table, [RefreshTokens::FamilyId]))
            .await?;
        manager.create_index(index("ix_refresh_tokens_user_id", RefreshTokens::Table, [RefreshTokens::UserId])).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        drop_tables(
            manager,
            [
                RefreshTokens::Table.into_iden(),
                OtpCodes::Table.into_iden(),
                GuestPlayers::Table.into_iden(),
                DealerProfiles::Table.into_iden(),
                PlayerProfiles::Table.into_iden(),
                Users::Table.into_iden(),
            ],
        )
        .await
    }
}
