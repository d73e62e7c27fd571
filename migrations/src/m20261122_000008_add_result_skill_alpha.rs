//! Each result keeps the skill smoothing it was awarded under, so rebuilding a profile
//! replays old results as they were awarded: configuration changes apply to new awards only.
//! Results from before this migration get the smoothing configured now, which is what their
//! rebuilds used until then.

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
            .await?;
        manager
            .get_connection()
            .execute_unprepared(
                "UPDATE results SET skill_alpha = COALESCE((SELECT skill_alpha FROM rating_config LIMIT 1), 0.1)",
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager.alter_table(Table::alter().table(Results::Table).drop_column(Results::SkillAlpha).to_owned()).await
    }
}
