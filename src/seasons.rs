//! Seasons are calendar quarters. The current one is made on demand, idempotently (the
//! unique `starts_on` makes concurrent first calls converge on one row), and the rollover
//! archives the one that has ended.

use chrono::{Datelike, NaiveDate};
use floor_entities::enums::SeasonStatus;
use floor_entities::seasons;
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, Set};
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
}
