//! Seasons are calendar quarters. The current one is made on demand, idempotently (the
//! unique `starts_on` makes concurrent first calls converge on one row), and the rollover
//! archives the one that has ended.

use chrono::{Datelike, NaiveDate};
use floor_entities::enums::SeasonStatus;
use floor_entities::seasons;
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, Set};
use uuid::Uuid;

/// The first and last day of the calendar quarter holding `date`.
pub fn quarter_of(date: NaiveDate) -> (NaiveDate, NaiveDate) {
    let first_month = (date.month0() / 3) * 3 + 1;
    let start = NaiveDate::from_ymd_opt(date.year(), first_month, 1).unwrap_or(date);
    let next_start = if first_month == 10 {
        NaiveDate::from_ymd_opt(date.year() + 1, 1, 1)
    } else {
        NaiveDate::from_ymd_opt(date.year(), first_month + 3, 1)
    };
    let end = next_start.and_then(|next| next.pred_opt()).unwrap_or(date);
    (start, end)
}

/// Archives every current season that ended before `today` and makes sure the quarter of
/// `today` has its season. Safe to run any number of times, from any number of nodes at once.
pub async fn roll_over(conn: &impl ConnectionTrait, today: NaiveDate) -> Result<seasons::Model, DbErr> {
    seasons::Entity::update_many()
        .col_expr(seasons::Column::Status, Expr::value(SeasonStatus::Archived))
        .filter(seasons::Column::Status.eq(SeasonStatus::Current))
        .filter(seasons::Column::EndsOn.lt(today))
        .exec(conn)
        .await?;
    ensure_season(conn, today).await
}

/// The season of the quarter holding `date`, created when missing. Concurrent first calls
/// converge on one row through the unique `starts_on`. A season is `current` until its
/// quarter has ended (also when made ahead of its quarter, for a tournament scheduled then).
pub async fn ensure_season(conn: &impl ConnectionTrait, date: NaiveDate) -> Result<seasons::Model, DbErr> {
    let (starts_on, ends_on) = quarter_of(date);
    let season = seasons::ActiveModel {
        id: Set(Uuid::now_v7()),
        starts_on: Set(starts_on),
        ends_on: Set(ends_on),
        status: Set(SeasonStatus::Current),
        created_at: Set(chrono::Utc::now()),
    };
    seasons::Entity::insert(season)
        .on_conflict(OnConflict::column(seasons::Column::StartsOn).do_nothing().to_owned())
        .exec_without_returning(conn)
        .await?;
    seasons::Entity::find()
        .filter(seasons::Column::StartsOn.eq(starts_on))
        .one(conn)
        .await?
        .ok_or_else(|| DbErr::RecordNotFound(format!("season starting {starts_on}")))
}

/// The season of today's quarter (UTC), created when missing.
pub async fn current_season(conn: &impl ConnectionTrait) -> Result<seasons::Model, DbErr> {
    ensure_season(conn, chrono::Utc::now().date_naive()).await
}

/// [`current_season`] for a read: found through `reads`, and made through `writes` only by
/// the first read of a quarter, so reading a leaderboard or the seasons takes no write.
pub async fn current_season_for_read(
    reads: &impl ConnectionTrait,
    writes: &impl ConnectionTrait,
) -> Result<seasons::Model, DbErr> {
    let today = chrono::Utc::now().date_naive();
    let (starts_on, _) = quarter_of(today);
    match seasons::Entity::find().filter(seasons::Column::StartsOn.eq(starts_on)).one(reads).await? {
        Some(season) => Ok(season),
        None => ensure_season(writes, today).await,
    }
}

/// Every season, newest first.
pub async fn all_seasons(conn: &impl ConnectionTrait) -> Result<Vec<seasons::Model>, DbErr> {
    seasons::Entity::find().order_by_desc(seasons::Column::StartsOn).all(conn).await
}

/// Whether `date` is the first day of a calendar quarter, as a season's start must be.
pub fn starts_a_quarter(date: NaiveDate) -> bool {
    quarter_of(date).0 == date
}

/// The status a season gets when made on `today`: `current` until its quarter has ended.
pub fn status_on(ends_on: NaiveDate, today: NaiveDate) -> SeasonStatus {
    if ends_on < today { SeasonStatus::Archived } else { SeasonStatus::Current }
}

/// Creates the season starting `starts_on` (the first day of a quarter), with its status as
/// of `today`. `None` when that quarter already has its season.
pub async fn create_season(
    conn: &impl ConnectionTrait,
    starts_on: NaiveDate,
    today: NaiveDate,
) -> Result<Option<seasons::Model>, DbErr> {
    let (starts_on, ends_on) = quarter_of(starts_on);
    let season = seasons::ActiveModel {
        id: Set(Uuid::now_v7()),
        starts_on: Set(starts_on),
        ends_on: Set(ends_on),
        status: Set(status_on(ends_on, today)),
        created_at: Set(chrono::Utc::now()),
    };
    let inserted = seasons::Entity::insert(season)
        .on_conflict(OnConflict::column(seasons::Column::StartsOn).do_nothing().to_owned())
        .exec_without_returning(conn)
        .await?;
    if inserted == 0 {
        return Ok(None);
    }
    seasons::Entity::find().filter(seasons::Column::StartsOn.eq(starts_on)).one(conn).await
}

/// Whether a season may be made `current` again on `today`: only while its quarter lasts
/// (or is still to come). An ended quarter would be archived again by the next rollover.
pub fn may_reopen(season: &seasons::Model, today: NaiveDate) -> bool {
    status_on(season.ends_on, today) == SeasonStatus::Current
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).expect("a real date")
    }

    #[test]
    fn each_quarter_starts_and_ends_on_its_calendar_bounds() {
        assert_eq!(quarter_of(day(2026, 1, 1)), (day(2026, 1, 1), day(2026, 3, 31)));
        assert_eq!(quarter_of(day(2026, 3, 31)), (day(2026, 1, 1), day(2026, 3, 31)));
        assert_eq!(quarter_of(day(2026, 4, 1)), (day(2026, 4, 1), day(2026, 6, 30)));
        assert_eq!(quarter_of(day(2026, 8, 15)), (day(2026, 7, 1), day(2026, 9, 30)));
        assert_eq!(quarter_of(day(2026, 11, 22)), (day(2026, 10, 1), day(2026, 12, 31)));
        assert_eq!(quarter_of(day(2026, 12, 31)), (day(2026, 10, 1), day(2026, 12, 31)));
    }

    #[test]
    fn a_leap_february_stays_in_the_first_quarter() {
        assert_eq!(quarter_of(day(2028, 2, 29)), (day(2028, 1, 1), day(2028, 3, 31)));
    }

    #[test]
    fn only_the_first_day_of_a_quarter_starts_a_season() {
        for start in [day(2026, 1, 1), day(2026, 4, 1), day(2026, 7, 1), day(2026, 10, 1)] {
            assert!(starts_a_quarter(start), "{start}");
        }
        for other in [day(2026, 2, 1), day(2026, 1, 2), day(2026, 3, 31), day(2026, 12, 31)] {
            assert!(!starts_a_quarter(other), "{other}");
        }
    }

    #[test]
    fn a_season_is_current_through_its_last_day_and_archived_after() {
        let ends_on = day(2026, 12, 31);
        assert_eq!(status_on(ends_on, day(2026, 10, 1)), SeasonStatus::Current);
        assert_eq!(status_on(ends_on, day(2026, 12, 31)), SeasonStatus::Current);
        assert_eq!(status_on(ends_on, day(2027, 1, 1)), SeasonStatus::Archived);
        assert_eq!(status_on(ends_on, day(2026, 5, 1)), SeasonStatus::Current, "a season ahead is current");
    }

    #[test]
    fn an_ended_quarter_cannot_be_reopened() {
        let season = seasons::Model {
            id: Uuid::nil(),
            starts_on: day(2026, 7, 1),
            ends_on: day(2026, 9, 30),
            status: SeasonStatus::Archived,
            created_at: chrono::Utc::now(),
        };
        assert!(may_reopen(&season, day(2026, 9, 30)));
        assert!(may_reopen(&season, day(2026, 1, 15)));
        assert!(!may_reopen(&season, day(2026, 10, 1)));
    }
}
