//! Background jobs: their schedules inside `floor serve`, and one manual run for
//! `floor job <name>`.

use std::time::Duration;

use chrono::{DateTime, NaiveTime, Utc};
use sea_orm::DatabaseConnection;

use crate::app::AppState;
use crate::cli::JobName;
use crate::seasons;

/// `5 0 * * *` UTC: the season rollover's daily time.
const SEASON_ROLLOVER_AT: NaiveTime = match NaiveTime::from_hms_opt(0, 5, 0) {
    Some(time) => time,
    None => NaiveTime::MIN,
};

/// Runs `job` once, now.
pub async fn run_once(db: &DatabaseConnection, job: JobName) -> anyhow::Result<()> {
    match job {
        JobName::SeasonRollover => {
            let season = seasons::roll_over(db, Utc::now().date_naive()).await?;
            tracing::info!(season = %season.id, starts_on = %season.starts_on, "season rollover done");
        }
    }
    Ok(())
}

/// Starts every job on its schedule; they live as long as the runtime.
pub fn spawn_schedules(state: AppState) {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(until_next(Utc::now(), SEASON_ROLLOVER_AT)).await;
            if let Err(err) = run_once(&state.db, JobName::SeasonRollover).await {
                tracing::error!(error = ?err, "season rollover failed; the next tick retries");
            }
        }
    });
}

/// How long from `now` until the next `at` (UTC), today or tomorrow.
fn until_next(now: DateTime<Utc>, at: NaiveTime) -> Duration {
    let today = now.date_naive().and_time(at).and_utc();
    let next = if today > now { today } else { today + chrono::Duration::days(1) };
    (next - now).to_std().unwrap_or(Duration::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn the_next_rollover_is_today_before_five_past_midnight_and_tomorrow_after() {
        let before = Utc.with_ymd_and_hms(2026, 11, 22, 0, 1, 0).single().expect("time");
        assert_eq!(until_next(before, SEASON_ROLLOVER_AT), Duration::from_secs(4 * 60));
        let after = Utc.with_ymd_and_hms(2026, 11, 22, 0, 5, 0).single().expect("time");
        assert_eq!(until_next(after, SEASON_ROLLOVER_AT), Duration::from_secs(24 * 3600));
    }
}
