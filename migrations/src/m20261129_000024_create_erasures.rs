//! How many times a person was erased (an account deleted): one row, moved on in each
//! deletion's own transaction. A kept public answer that names people is filed under the
//! count read after its reader asked, so no node serves a name a deletion already answered
//! for, whatever reached the other nodes. The row is made by the first deletion; until then
//! the count is 0.

use sea_orm_migration::{prelude::*, schema::*};

use crate::drop_tables;

#[derive(DeriveIden)]
enum Erasures {
    Table,
    Id,
    Generation,
}

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Erasures::Table)
                    .col(integer(Erasures::Id).primary_key())
                    .col(big_integer(Erasures::Generation))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        drop_tables(manager, [Erasures::Table]).await
    }
}
