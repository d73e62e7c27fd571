//! Claiming a scheduled tick in the database. Several `floor serve` nodes share one database
//! and each wakes for every tick; the one whose insert of `(job, tick_at)` goes through runs
//! it, the others skip it. A conflicting insert does nothing, on SQLite and PostgreSQL alike,
//! so the losers neither wait on a lock nor see an error.

use chrono::{DateTime, Duration, Utc};
use floor_entities::job_runs;
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{ColumnTrait, Condition, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, Set};

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

/// Which unended or failed claims a node takes over to run them again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leftovers {
    /// Claims left unfinished by a node that died: no end stamped and claimed before the
    /// given time. Checked before every tick.
    Abandoned,
    /// Those, and runs that ended in failure (after their retries): checked at boot, which is
    /// when an operator has usually just fixed what made them fail.
    AbandonedOrFailed,
}

/// Takes over the claims of `job` ticked at or after `since` that `leftovers` names and that
/// were claimed before `claimed_before`; returns the ticks this call took, which this node
/// must now run. The takeover restamps `claimed_at` only where it still holds the value read,
/// so of several nodes taking over at once each claim goes to exactly one.
pub async fn take_over(
    conn: &impl ConnectionTrait,
    job: &str,
    since: DateTime<Utc>,
    claimed_before: DateTime<Utc>,
    leftovers: Leftovers,
    now: DateTime<Utc>,
) -> Result<Vec<DateTime<Utc>>, DbErr> {
    let abandoned = Condition::all()
        .add(job_runs::Column::FinishedAt.is_null())
        .add(job_runs::Column::ClaimedAt.lt(claimed_before));
    let wanted = match leftovers {
        Leftovers::Abandoned => abandoned,
        Leftovers::AbandonedOrFailed => Condition::any().add(abandoned).add(job_runs::Column::Failure.is_not_null()),
    };
    let candidates = job_runs::Entity::find()
        .filter(job_runs::Column::Job.eq(job))
        .filter(job_runs::Column::TickAt.gte(since))
        .filter(wanted)
        .order_by_asc(job_runs::Column::TickAt)
        .all(conn)
        .await?;
    let mut taken = Vec::new();
    for claim in candidates {
        let restamped = job_runs::Entity::update_many()
            .col_expr(job_runs::Column::ClaimedAt, Expr::value(now))
            .col_expr(job_runs::Column::FinishedAt, Expr::value(Option::<DateTime<Utc>>::None))
            .col_expr(job_runs::Column::Failure, Expr::value(Option::<String>::None))
            .filter(job_runs::Column::Job.eq(job))
            .filter(job_runs::Column::TickAt.eq(claim.tick_at))
            .filter(job_runs::Column::ClaimedAt.eq(claim.claimed_at))
            .exec(conn)
            .await?;
        if restamped.rows_affected == 1 {
            taken.push(claim.tick_at);
        }
    }
    Ok(taken)
}
