//! Claiming a scheduled tick in the database. Several `floor serve` nodes share one database
//! and each wakes for every tick; the one whose insert of `(job, tick_at)` goes through runs
//! it, the others skip it. A conflicting insert does nothing, on SQLite and PostgreSQL alike,
//! so the losers neither wait on a lock nor see an error.

use chrono::{DateTime, Duration, Utc};
use floor_entities::job_runs;
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, Set};

/// How long claims are kept, for looking back at what ran and how it ended; older ones are
/// deleted by the next claim of the same job.
const KEEP: Duration = Duration::days(7);

/// Claims the tick of `job` scheduled at `tick_at`: true when this call made the claim, and so
/// must run the tick.
pub async fn claim(
    conn: &impl ConnectionTrait,
    job: &str,
    tick_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<bool, DbErr> {
    job_runs::Entity::delete_many()
        .filter(job_runs::Column::Job.eq(job))
        .filter(job_runs::Column::TickAt.lt(tick_at - KEEP))
        .exec(conn)
        .await?;
    let claim = job_runs::ActiveModel {
        job: Set(job.to_owned()),
        tick_at: Set(tick_at),
        claimed_at: Set(now),
        finished_at: Set(None),
        failure: Set(None),
    };
    let inserted = job_runs::Entity::insert(claim)
        .on_conflict(OnConflict::columns([job_runs::Column::Job, job_runs::Column::TickAt]).do_nothing().to_owned())
        .exec_without_returning(conn)
        .await?;
    Ok(inserted == 1)
}

/// Records how the claimed run of `job` at `tick_at` ended: `failure` is `None` on success.
pub async fn finish(
    conn: &impl ConnectionTrait,
    job: &str,
    tick_at: DateTime<Utc>,
    failure: Option<String>,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    job_runs::Entity::update_many()
        .col_expr(job_runs::Column::FinishedAt, Expr::value(now))
        .col_expr(job_runs::Column::Failure, Expr::value(failure))
        .filter(job_runs::Column::Job.eq(job))
        .filter(job_runs::Column::TickAt.eq(tick_at))
        .exec(conn)
        .await?;
    Ok(())
}
