//! Reference data edited by admins: cities and level tiers, with their translations.

use sea_orm_migration::{prelude::*, schema::*};

use crate::{drop_tables, fk, unique};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
pub enum Cities {
    Table,
    Id,
    Slug,
    IsActive,
    SortOrder,
    CreatedAt,
}

#[derive(DeriveIden)]
enum CityTranslations {
    Table,
    CityId,
    Locale,
    Name,
}

#[derive(DeriveIden)]
enum LevelTiers {
    Table,
    Id,
    Key,
    MinLevel,
    Color,
    PictureUrl,
    CreatedAt,
}

#[derive(DeriveIden)]
enum LevelTierTranslations {
    Table,
    TierId,
    Locale,
    Name,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Cities::Table)
                    .col(pk_uuid(Cities::Id))
                    .col(text(Cities::Slug))
                    .col(boolean(Cities::IsActive).default(true))
                    .col(integer(Cities::SortOrder).default(0))
                    .col(timestamp_with_time_zone(Cities::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager.create_index(unique("ux_cities_slug", Cities::Table, [Cities::Slug])).await?;

        manager
            .create_table(
                Table::create()
                    .table(CityTranslations::Table)
                    .col(uuid(CityTranslations::CityId))
                    .col(text(CityTranslations::Locale))
                    .col(text(CityTranslations::Name))
                    .primary_key(Index::create().col(CityTranslations::CityId).col(CityTranslations::Locale))
                    .foreign_key(&mut fk(
                        "fk_city_translations_city_id",
                        CityTranslations::Table,
                        CityTranslations::CityId,
                        Cities::Table,
                        Cities::Id,
                        ForeignKeyAction::Cascade,
                    ))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(LevelTiers::Table)
                    .col(pk_uuid(LevelTiers::Id))
                    .col(text(LevelTiers::Key))
                    .col(integer(LevelTiers::MinLevel))
                    .col(text(LevelTiers::Color))
                    .col(text_null(LevelTiers::PictureUrl))
                    .col(timestamp_with_time_zone(LevelTiers::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager.create_index(unique("ux_level_tiers_key", LevelTiers::Table, [LevelTiers::Key])).await?;

        manager
            .create_table(
                Table::create()
                    .table(LevelTierTranslations::Table)
                    .col(uuid(LevelTierTranslations::TierId))
                    .col(text(LevelTierTranslations::Locale))
                    .col(text(LevelTierTranslations::Name))
                    .primary_key(Index::create().col(LevelTierTranslations::TierId).col(LevelTierTranslations::Locale))
                    .foreign_key(&mut fk(
                        "fk_level_tier_translations_tier_id",
                        LevelTierTranslations::Table,
                        LevelTierTranslations::TierId,
                        LevelTiers::Table,
                        LevelTiers::Id,
                        ForeignKeyAction::Cascade,
                    ))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        drop_tables(
            manager,
            [
                LevelTierTranslations::Table.into_iden(),
                LevelTiers::Table.into_iden(),
                CityTranslations::Table.into_iden(),
                Cities::Table.into_iden(),
            ],
        )
        .await
    }
}
