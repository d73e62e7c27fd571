//! Registration bans that outlive a deleted account: while the ban of an account deleted
//! during it runs, the SHA-256 of its phone is kept with the ban's end, and an account that
//! signs up with that phone starts under the same ban. The phone itself is not kept, and a
//! row goes once its ban has ended.

use sea_orm_migration::{prelude::*, schema::*};

use crate::{drop_tables, index};

#[derive(DeriveIden)]
enum PhoneBans {
    Table,
    PhoneHash,
    BanUntil,
}

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(PhoneBans::Table)
                    .col(text(PhoneBans::PhoneHash).primary_key())
                    .col(timestamp_with_time_zone(PhoneBans::BanUntil))
                    .to_owned(),
            )
            .await?;
        // Ended bans are deleted by their end.
        manager.create_index(index("ix_phone_bans_ban_until", PhoneBans::Table, [PhoneBans::BanUntil])).await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        drop_tables(manager, [PhoneBans::Table]).await
    }
}
