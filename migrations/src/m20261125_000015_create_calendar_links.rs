//! The secret addresses of players' calendar feeds: one row per user, holding only the
//! SHA-256 of the secret in the address, so a copy of the database cannot read anyone's
//! calendar. A new link replaces the row; revoking deletes it.

use sea_orm_migration::{prelude::*, schema::*};

use crate::m20261122_000002_create_accounts::Users;
use crate::{drop_tables, fk, unique};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum CalendarLinks {
    Table,
    UserId,
    SecretHash,
    CreatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(CalendarLinks::Table)
                    .col(uuid(CalendarLinks::UserId).primary_key())
                    .col(text(CalendarLinks::SecretHash))
                    .col(timestamp_with_time_zone(CalendarLinks::CreatedAt))
                    .foreign_key(&mut fk(
                        "fk_calendar_links_user_id",
                        CalendarLinks::Table,
                        CalendarLinks::UserId,
                        Users::Table,
                        Users::Id,
                        ForeignKeyAction::Cascade,
                    ))
                    .to_owned(),
            )
            .await?;
        // Every fetch of a feed finds its owner by the hash of the secret it presents.
        manager
            .create_index(unique("ux_calendar_links_secret_hash", CalendarLinks::Table, [CalendarLinks::SecretHash]))
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        drop_tables(manager, [CalendarLinks::Table]).await
    }
}
