//! A merged duplicate remembers the account it was merged into, and stays banned for good.
//! No foreign key: SQLite adds one only inline with a new column and then cannot drop the
//! column again; accounts are never deleted, and only a merge writes the column.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::uuid_null;

#[derive(DeriveIden)]
enum Users {
    Table,
    MergedIntoUserId,
}

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(Table::alter().table(Users::Table).add_column(uuid_null(Users::MergedIntoUserId)).to_owned())
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.alter_table(Table::alter().table(Users::Table).drop_column(Users::MergedIntoUserId).to_owned()).await
    }
}
