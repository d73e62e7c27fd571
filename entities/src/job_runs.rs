//! Claimed ticks of the scheduled background jobs: the node whose insert of `(job, tick_at)`
//! went through runs that tick; the others skip it.

use sea_orm::entity::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, Serialize, Deserialize)]
#[sea_orm(table_name = "job_runs")]
pub struct Model {
    /// The job's command-line name (`tournament-reminders`, `season-rollover`).
    #[sea_orm(primary_key, auto_increment = false)]
    pub job: String,
    /// The scheduled time of the tick (a match of the job's cron expression).
    #[sea_orm(primary_key, auto_increment = false)]
    pub tick_at: DateTimeUtc,
    /// When a node claimed the tick and began running it.
    pub claimed_at: DateTimeUtc,
    /// Stamped when the run ended, well or not; null while running (or when the node died).
    pub finished_at: Option<DateTimeUtc>,
    /// Why the run failed; null when it succeeded or has not ended.
    pub failure: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
