//! Background jobs: what each job is and when it runs, one manual run for `floor job <name>`,
//! and the schedules inside `floor serve`, where of all the nodes sharing the database exactly
//! one runs each tick ([`claims`]).

mod claims;
pub mod reminders;

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use croner::Cron;
use sea_orm::DatabaseConnection;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use crate::domain::notifications::Notifier;
use crate::domain::seasons;
use crate::infra::db;
use crate::infra::metrics::Metrics;
pub use claims::Leftovers;

/// Every job `floor serve` schedules.
/// The background jobs a manual run can name.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobName {
    /// Remind the players holding a seat 24 hours before a tournament and at its cancel
    /// deadline.
    TournamentReminders,
    /// Archive the expired season and make the current quarter's season.
    SeasonRollover,
}

const JOBS: [JobName; 2] = [JobName::TournamentReminders, JobName::SeasonRollover];

/// A claim still unfinished this long after it was made belongs to a node that died: a run
/// takes seconds, and its retries ([`RETRY_DELAYS`]) add under a minute.
pub const ABANDONED_AFTER: chrono::Duration = chrono::Duration::minutes(15);

/// The job's name on the command line, in logs and in the claims of its ticks.
pub fn name(job: JobName) -> &'static str {
    match job {
        JobName::TournamentReminders => "tournament-reminders",
        JobName::SeasonRollover => "season-rollover",
    }
}

/// How far back a job catches up: ticks that fell while no node ran (at boot) or during a
/// slow run, and claims abandoned by a node that died, are run when younger than this and
/// skipped when older. A reminder is still worth sending hours late (the tournament is a day
/// or its deadline away), one a whole day late is noise; a missed rollover must run even
/// after a weekend's outage.
pub fn catch_up(job: JobName) -> chrono::Duration {
    match job {
        JobName::TournamentReminders => chrono::Duration::hours(6),
        JobName::SeasonRollover => chrono::Duration::days(3),
    }
}

/// The job's schedule: a cron expression read in UTC (the spec's table of jobs).
pub fn schedule(job: JobName) -> &'static str {
    match job {
        JobName::TournamentReminders => "*/5 * * * *",
        JobName::SeasonRollover => "5 0 * * *",
    }
}

/// Runs `job` once as of `now`. A manual run always runs: a reminder a tick already sent is
/// not sent again (the journal's dedup keys), and the rollover is idempotent.
pub async fn run_once(
    db: &DatabaseConnection,
    notifier: &Notifier,
    job: JobName,
    now: DateTime<Utc>,
) -> anyhow::Result<()> {
    match job {
        JobName::TournamentReminders => {
            let report = reminders::send_reminders(db, notifier, now).await?;
            tracing::info!(due = report.due, journaled = report.journaled, "tournament reminders done");
        }
        JobName::SeasonRollover => {
            let season = seasons::roll_over(db, now.date_naive()).await?;
            tracing::info!(season = %season.id, starts_on = %season.starts_on, "season rollover done");
        }
    }
    Ok(())
}

/// What a scheduled tick came to on this node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tick {
    /// This node claimed the tick and ran it.
    Ran,
    /// Another node claimed it first; nothing was done here.
    ClaimedElsewhere,
}

/// How long a scheduled tick that failed waits before each new try. No other tick covers a
/// tick's window, so a passing database error must not lose its reminders; trying again is
/// safe because the work is idempotent (the journal's dedup keys, the rollover's upserts).
pub const RETRY_DELAYS: [Duration; 3] = [Duration::from_secs(2), Duration::from_secs(10), Duration::from_secs(30)];

/// Runs the tick of `job` scheduled at `tick_at` when this node claims it first, trying a
/// failed run again after each of `retry_delays`. The run is as of `tick_at`, so what it
/// covers does not depend on how late the timer fired. How the run ended is kept with the
/// claim; a failure is also returned.
pub async fn run_tick(
    db: &DatabaseConnection,
    notifier: &Notifier,
    job: JobName,
    tick_at: DateTime<Utc>,
    retry_delays: &[Duration],
) -> anyhow::Result<Tick> {
    claim_and_run(db, notifier, job, tick_at, Utc::now(), retry_delays).await
}

/// [`run_tick`] with the claim stamped `claimed_at`.
async fn claim_and_run(
    db: &DatabaseConnection,
    notifier: &Notifier,
    job: JobName,
    tick_at: DateTime<Utc>,
    claimed_at: DateTime<Utc>,
    retry_delays: &[Duration],
) -> anyhow::Result<Tick> {
    if !claims::claim(db, name(job), tick_at, claimed_at).await? {
        return Ok(Tick::ClaimedElsewhere);
    }
    run_claimed(db, notifier, job, tick_at, retry_delays).await.map(|()| Tick::Ran)
}

/// Runs the tick of `job` at `tick_at` that this node holds the claim of, trying a failed run
/// again after each of `retry_delays`, and records on the claim how it ended.
async fn run_claimed(
    db: &DatabaseConnection,
    notifier: &Notifier,
    job: JobName,
    tick_at: DateTime<Utc>,
    retry_delays: &[Duration],
) -> anyhow::Result<()> {
    let mut outcome = run_once(db, notifier, job, tick_at).await;
    for delay in retry_delays {
        let Err(err) = &outcome else { break };
        tracing::warn!(error = %format!("{err:#}"), retry_in = ?delay, "the job failed; it is tried again");
        tokio::time::sleep(*delay).await;
        outcome = run_once(db, notifier, job, tick_at).await;
    }
    let failure = outcome.as_ref().err().map(|err| format!("{err:#}"));
    if let Err(err) = claims::finish(db, name(job), tick_at, failure, Utc::now()).await {
        tracing::warn!(error = %err, "could not record how the tick ended");
    }
    outcome
}

/// Runs, as of `now`, what of `job` no node has run: the claims other nodes abandoned
/// (`leftovers` says whether failed runs are taken too) and then, at boot, every tick of the
/// last [`catch_up`] that nobody claimed and that fell after the database was made (before
/// it, no node could have run, nor had anything to do). Each is taken by exactly one node.
/// Returns the ticks this node ran, oldest first; a run that failed is logged and kept on its
/// claim.
pub async fn catch_up_with(
    db: &DatabaseConnection,
    notifier: &Notifier,
    job: JobName,
    now: DateTime<Utc>,
    leftovers: Leftovers,
    retry_delays: &[Duration],
) -> anyhow::Result<Vec<DateTime<Utc>>> {
    let since = now - catch_up(job);
    // What this node claims is stamped no earlier than `now`, so that no node catching up as of
    // the same moment takes it for abandoned while it runs.
    let claimed_at = now.max(Utc::now());
    let mut ran = Vec::new();
    let taken = claims::take_over(db, name(job), since, now - ABANDONED_AFTER, leftovers, claimed_at).await?;
    for tick_at in taken {
        tracing::warn!(job = name(job), %tick_at, "a tick no node finished is run again");
        log_failure(job, tick_at, run_claimed(db, notifier, job, tick_at, retry_delays).await);
        ran.push(tick_at);
    }
    if leftovers == Leftovers::AbandonedOrFailed {
        let cron = cron_of(job)?;
        let made = db::created_at(db).await?.unwrap_or(now);
        let mut last = since.max(made);
        let mut late = Vec::new();
        while let Some(tick_at) = next_tick(&cron, job, last, now).filter(|tick_at| *tick_at <= now) {
            last = tick_at;
            match claim_and_run(db, notifier, job, tick_at, claimed_at, retry_delays).await {
                Ok(Tick::ClaimedElsewhere) => {}
                outcome => {
                    tracing::debug!(job = name(job), %tick_at, "a tick that fell while no node ran is run late");
                    log_failure(job, tick_at, outcome.map(|_| ()));
                    late.push(tick_at);
                }
            }
        }
        // One line for the lot: a day's outage catches up dozens of ticks.
        if let (Some(first), Some(last)) = (late.first(), late.last()) {
            tracing::warn!(job = name(job), ticks = late.len(), %first, %last, "ticks that fell while no node ran were run late");
        }
        ran.extend(late);
    }
    ran.sort();
    Ok(ran)
}

fn log_failure(job: JobName, tick_at: DateTime<Utc>, outcome: anyhow::Result<()>) {
    if let Err(err) = outcome {
        tracing::error!(job = name(job), %tick_at, error = ?err, "the job failed");
    }
}

/// Starts every job on its schedule, in `tasks`, until `shutdown`: a tick under way then
/// finishes (its claim ends as done or failed, never abandoned) and no new one starts. How
/// each tick ends on this node is counted in `metrics`.
pub fn spawn_schedules(
    db: &DatabaseConnection,
    notifier: &Notifier,
    metrics: &Arc<Metrics>,
    tasks: &TaskTracker,
    shutdown: &CancellationToken,
) {
    for job in JOBS {
        tasks.spawn(run_on_schedule(db.clone(), notifier.clone(), metrics.clone(), job, shutdown.clone()));
    }
}

/// Runs the ticks of `job` one after another, so a run never overlaps the next one here. A
/// failed or panicking run is logged and the schedule goes on.
async fn run_on_schedule(
    db: DatabaseConnection,
    notifier: Notifier,
    metrics: Arc<Metrics>,
    job: JobName,
    shutdown: CancellationToken,
) {
    let cron = match cron_of(job) {
        Ok(cron) => cron,
        Err(err) => {
            tracing::error!(job = name(job), error = %err, "the job's schedule does not parse; it will not run");
            return;
        }
    };
    let mut last = Utc::now();
    catch_up_in_task(&db, &notifier, &metrics, job, last, Leftovers::AbandonedOrFailed).await;
    loop {
        let Some(tick_at) = next_tick(&cron, job, last, Utc::now()) else {
            tracing::error!(job = name(job), "the job's schedule has no next tick; it stops");
            return;
        };
        let until_tick = tokio::time::sleep((tick_at - Utc::now()).to_std().unwrap_or(Duration::ZERO));
        tokio::select! {
            () = until_tick => {}
            () = shutdown.cancelled() => return,
        }
        catch_up_in_task(&db, &notifier, &metrics, job, Utc::now(), Leftovers::Abandoned).await;
        let span = tracing::info_span!("job", job = name(job), %tick_at);
        // Its own task, so that even a panic only ends this run.
        let run = tokio::spawn({
            let (db, notifier) = (db.clone(), notifier.clone());
            async move { run_tick(&db, &notifier, job, tick_at, &RETRY_DELAYS).await }.instrument(span.clone())
        });
        let outcome = match run.await {
            Ok(Ok(Tick::Ran)) => "ran",
            Ok(Ok(Tick::ClaimedElsewhere)) => {
                tracing::debug!(parent: &span, "another node runs this tick");
                "claimed_elsewhere"
            }
            Ok(Err(err)) => {
                tracing::error!(parent: &span, error = ?err, "the job failed; the schedule goes on");
                "failed"
            }
            Err(err) => {
                tracing::error!(parent: &span, error = %err, "the job panicked; the schedule goes on");
                "panicked"
            }
        };
        metrics.job_run(name(job), outcome);
        last = tick_at;
    }
}

/// [`catch_up_with`] in its own task, so that neither its failure nor a panic stops the schedule.
async fn catch_up_in_task(
    db: &DatabaseConnection,
    notifier: &Notifier,
    metrics: &Metrics,
    job: JobName,
    now: DateTime<Utc>,
    leftovers: Leftovers,
) {
    let span = tracing::info_span!("catch-up", job = name(job), ?leftovers);
    let run = tokio::spawn({
        let (db, notifier) = (db.clone(), notifier.clone());
        async move { catch_up_with(&db, &notifier, job, now, leftovers, &RETRY_DELAYS).await }.instrument(span.clone())
    });
    match run.await {
        Ok(Ok(ran)) if ran.is_empty() => {}
        Ok(Ok(ran)) => {
            tracing::info!(parent: &span, ticks = ran.len(), "caught up");
            for _ in &ran {
                metrics.job_run(name(job), "caught_up");
            }
        }
        Ok(Err(err)) => tracing::error!(parent: &span, error = ?err, "could not catch up; the schedule goes on"),
        Err(err) => tracing::error!(parent: &span, error = %err, "the catch-up panicked; the schedule goes on"),
    }
}

fn cron_of(job: JobName) -> anyhow::Result<Cron> {
    Ok(Cron::from_str(schedule(job))?)
}

/// The tick to wait for after the one at `last`: the next match of `cron`, but none older
/// than the job's [`catch_up`] before `now`.
fn next_tick(cron: &Cron, job: JobName, last: DateTime<Utc>, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    cron.find_next_occurrence(&last.max(now - catch_up(job)), false).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(day: u32, hour: u32, minute: u32, second: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, day, hour, minute, second).single().expect("a real time")
    }

    fn cron(job: JobName) -> Cron {
        cron_of(job).expect("the schedule parses")
    }

    #[test]
    fn reminders_tick_on_every_fifth_minute() {
        let (job, cron) = (JobName::TournamentReminders, cron(JobName::TournamentReminders));
        let now = at(22, 15, 57, 42);
        assert_eq!(next_tick(&cron, job, now, now), Some(at(22, 16, 0, 0)));
        assert_eq!(next_tick(&cron, job, at(22, 16, 0, 0), now), Some(at(22, 16, 5, 0)));
    }

    #[test]
    fn the_rollover_ticks_at_five_past_midnight_utc() {
        let (job, cron) = (JobName::SeasonRollover, cron(JobName::SeasonRollover));
        let before = at(22, 0, 1, 0);
        assert_eq!(next_tick(&cron, job, before, before), Some(at(22, 0, 5, 0)));
        let after = at(22, 0, 5, 0);
        assert_eq!(next_tick(&cron, job, after, after), Some(at(23, 0, 5, 0)));
    }

    #[test]
    fn ticks_missed_during_a_slow_run_follow_at_once() {
        let (job, cron) = (JobName::TournamentReminders, cron(JobName::TournamentReminders));
        // The 16:00 run ended at 16:12: 16:05 and 16:10 are still due, in order.
        assert_eq!(next_tick(&cron, job, at(22, 16, 0, 0), at(22, 16, 12, 0)), Some(at(22, 16, 5, 0)));
        assert_eq!(next_tick(&cron, job, at(22, 16, 5, 0), at(22, 16, 12, 0)), Some(at(22, 16, 10, 0)));
    }

    #[test]
    fn ticks_missed_longer_ago_than_the_catch_up_are_skipped() {
        let (job, cron) = (JobName::TournamentReminders, cron(JobName::TournamentReminders));
        assert_eq!(next_tick(&cron, job, at(22, 4, 0, 0), at(22, 16, 2, 0)), Some(at(22, 10, 5, 0)));
    }

    #[test]
    fn a_rollover_missed_over_a_weekend_is_still_run() {
        let (job, cron) = (JobName::SeasonRollover, cron(JobName::SeasonRollover));
        // Down from Friday evening to Monday morning: Saturday's, Sunday's and Monday's are due.
        assert_eq!(next_tick(&cron, job, at(20, 18, 0, 0), at(23, 9, 0, 0)), Some(at(21, 0, 5, 0)));
        assert_eq!(next_tick(&cron, job, at(16, 18, 0, 0), at(23, 9, 0, 0)), Some(at(21, 0, 5, 0)), "not older");
    }

    #[test]
    fn a_job_claims_its_ticks_under_its_command_line_name() {
        use clap::ValueEnum;
        for job in JobName::value_variants() {
            let on_the_command_line = job.to_possible_value().map(|value| value.get_name().to_owned());
            assert_eq!(on_the_command_line.as_deref(), Some(name(*job)));
        }
    }

    #[test]
    fn serve_schedules_every_job() {
        use clap::ValueEnum;
        assert_eq!(JOBS.len(), JobName::value_variants().len());
    }
}
