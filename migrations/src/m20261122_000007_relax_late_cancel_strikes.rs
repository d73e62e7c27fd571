//! A re-registration reuses its cancelled row, so one registration may earn a late-cancel
//! strike more than once (register, cancel late, register, cancel late). Only the no-show
//! strike stays unique per registration: a tournament starts once.

use sea_orm_migration::prelude::*;

const NO_SHOW_ONCE: &str = "CREATE UNIQUE INDEX ux_strikes_registration_no_show \
     ON strikes (registration_id) WHERE reason = 'no_show'";
const ONE_PER_REASON: &str = "CREATE UNIQUE INDEX ux_strikes_registration_reason \
     ON strikes (registration_id, reason)";

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(Index::drop().name("ux_strikes_registration_reason").table(Alias::new("strikes")).to_owned())
            .await?;
        manager.get_connection().execute_unprepared(NO_SHOW_ONCE).await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(Index::drop().name("ux_strikes_registration_no_show").table(Alias::new("strikes")).to_owned())
            .await?;
        // Late-cancel strikes repeated on one registration would break the older rule.
        manager
            .get_connection()
            .execute_unprepared(
                "DELETE FROM strikes WHERE reason = 'late_cancel' AND EXISTS (SELECT 1 FROM strikes AS earlier \
                 WHERE earlier.registration_id = strikes.registration_id AND earlier.reason = 'late_cancel' \
                 AND earlier.created_at < strikes.created_at)",
            )
            .await?;
        manager.get_connection().execute_unprepared(ONE_PER_REASON).await?;
        Ok(())
    }
}
