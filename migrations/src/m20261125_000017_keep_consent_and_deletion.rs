//! Consent as a record, and accounts their owners deleted. The account keeps the version of
//! the consent text it accepted; each change of consent is a row of its own with its time,
//! for the player's export. A deleted account keeps its row (results and eliminations of
//! played tournaments point at it) with the moment it was deleted.

use sea_orm_migration::{prelude::*, schema::*};

use crate::{drop_tables, fk, index};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
    ConsentVersion,
    DeletedAt,
}

#[derive(DeriveIden)]
enum ConsentChanges {
    Table,
    Id,
    UserId,
    Accepted,
    Version,
    ChangedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        // SQLite adds one column a statement.
        manager
            .alter_table(Table::alter().table(Users::Table).add_column(text_null(Users::ConsentVersion)).to_owned())
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Users::Table)
                    .add_column(timestamp_with_time_zone_null(Users::DeletedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(ConsentChanges::Table)
                    .col(uuid(ConsentChanges::Id).primary_key())
                    .col(uuid(ConsentChanges::UserId))
                    .col(boolean(ConsentChanges::Accepted))
                    .col(text_null(ConsentChanges::Version))
                    .col(timestamp_with_time_zone(ConsentChanges::ChangedAt))
                    .foreign_key(&mut fk(
                        "fk_consent_changes_user",
                        ConsentChanges::Table,
                        ConsentChanges::UserId,
                        Users::Table,
                        Users::Id,
                        ForeignKeyAction::Cascade,
                    ))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(index(
                "ix_consent_changes_user_changed",
                ConsentChanges::Table,
                [ConsentChanges::UserId, ConsentChanges::ChangedAt],
            ))
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        drop_tables(manager, [ConsentChanges::Table]).await?;
        manager.alter_table(Table::alter().table(Users::Table).drop_column(Users::DeletedAt).to_owned()).await?;
        manager.alter_table(Table::alter().table(Users::Table).drop_column(Users::ConsentVersion).to_owned()).await
    }
}
