//! Each result keeps the skill smoothing it was awarded under, so rebuilding a profile
//! replays old results as they were awarded: configuration changes apply to new awards only.
//! Results from before this migration were awarded under the default (0.1).

use sea_orm_migration::prelude::*;

#[derive(DeriveIden)]
enum Results {
    Table,
    SkillAlpha,
}

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Results::Table)
                    .add_column(ColumnDef::new(Results::SkillAlpha).double().not_null().default(0.1))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.alter_table(Table::alter().table(Results::Table).drop_column(Results::SkillAlpha).to_owned()).await
    }
}
