//! The admin dashboard's figures (not telemetry): the week arithmetic (weeks start on Monday
//! 00:00 UTC) as plain functions, and the handful of aggregate queries behind the figures.

use chrono::{DateTime, Datelike, Duration, NaiveTime, Utc};
use floor_entities::enums::TournamentStatus;
use floor_entities::{results, tournaments, users};
use sea_orm::sea_query::{Alias, Cond, Expr, ExprTrait, Func, Query, SelectStatement};
use sea_orm::{ConnectionTrait, DbErr, QueryResult};

/// Weeks in the dashboard's breakdown.
pub const WEEKS: usize = 8;
/// Length of the headline period.
pub const PERIOD_DAYS: i64 = 30;

/// A half-open span of time `[start, end)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
}

/// Monday 00:00 UTC of the week holding `at`.
pub fn week_start(at: DateTime<Utc>) -> DateTime<Utc> {
    let monday = at.date_naive() - Duration::days(i64::from(at.weekday().num_days_from_monday()));
    monday.and_time(NaiveTime::MIN).and_utc()
}

/// The breakdown's weeks, oldest first: `WEEKS` Monday-to-Monday spans, the last one the
/// current week, cut at `now` (it is still under way).
pub fn weeks(now: DateTime<Utc>) -> Vec<Span> {
    let current = week_start(now);
    (0..WEEKS)
        .rev()
        .map(|back| {
            let start = current - Duration::weeks(i64::try_from(back).unwrap_or_default());
            Span { start, end: std::cmp::min(start + Duration::weeks(1), now + Duration::microseconds(1)) }
        })
        .collect()
}

/// The headline period: the last `PERIOD_DAYS` days up to and including `now`.
pub fn last_days(now: DateTime<Utc>) -> Span {
    Span { start: now - Duration::days(PERIOD_DAYS), end: now + Duration::microseconds(1) }
}

/// One set of figures for one span.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Figures {
    /// Accounts created in the span.
    pub new_players: i64,
    /// Distinct accounts with a result in a tournament finished in the span.
    pub active_players: i64,
    /// Tournaments that moved to `finished` in the span.
    pub finished_tournaments: i64,
}

/// The dashboard: the headline period, the share of its active players who played two or
/// more tournaments in it, and the weekly breakdown.
#[derive(Clone, Debug, PartialEq)]
pub struct Dashboard {
    pub period: Figures,
    /// 0..=1; 0 when nobody played.
    pub retention: f64,
    pub weeks: Vec<(Span, Figures)>,
}

/// `retained / active`, 0 when nobody was active.
pub fn share(retained: i64, active: i64) -> f64 {
    if active <= 0 {
        return 0.0;
    }
    #[allow(clippy::cast_precision_loss)] // counts of people stay far below 2^52
    let ratio = retained as f64 / active as f64;
    ratio.clamp(0.0, 1.0)
}

/// Computes the dashboard at `now` with four aggregate queries, whatever the size of the
/// tables: one per figure, each counting every span at once.
pub async fn dashboard(conn: &impl ConnectionTrait, now: DateTime<Utc>) -> Result<Dashboard, DbErr> {
    let period = last_days(now);
    let weeks = weeks(now);
    let spans: Vec<Span> = std::iter::once(period).chain(weeks.iter().copied()).collect();
    let earliest = spans.iter().map(|span| span.start).min().unwrap_or(period.start);

    let finished_at = || Expr::col((tournaments::Entity, tournaments::Column::FinishedAt));
    let user_id = || Expr::col((results::Entity, results::Column::UserId));

    let mut new_players = Query::select();
    new_players.from(users::Entity).and_where(Expr::col(users::Column::CreatedAt).gte(earliest));
    let new_players =
        counts(conn, new_players, &spans, |span| count_in(Expr::col(users::Column::CreatedAt), span)).await?;

    let mut played = Query::select();
    played
        .from(results::Entity)
        .inner_join(
            tournaments::Entity,
            Expr::col((tournaments::Entity, tournaments::Column::Id))
                .equals((results::Entity, results::Column::TournamentId)),
        )
        .and_where(user_id().is_not_null())
        .and_where(finished_at().gte(earliest));
    let active_players = counts(conn, played.clone(), &spans, |span| {
        Func::count_distinct(Expr::case(within(finished_at(), span), user_id())).into()
    })
    .await?;

    let mut finished = Query::select();
    finished
        .from(tournaments::Entity)
        .and_where(Expr::col(tournaments::Column::Status).eq(TournamentStatus::Finished))
        .and_where(Expr::col(tournaments::Column::FinishedAt).gte(earliest));
    let finished =
        counts(conn, finished, &spans, |span| count_in(Expr::col(tournaments::Column::FinishedAt), span)).await?;

    // Retention: of the players active in the period, those with two or more tournaments.
    let mut per_player = played;
    per_player
        .expr_as(user_id(), Alias::new("player"))
        .expr_as(Func::count_distinct(Expr::col((results::Entity, results::Column::TournamentId))), Alias::new("games"))
        .cond_where(within(finished_at(), &period))
        .group_by_col((results::Entity, results::Column::UserId));
    let mut retained = Query::select();
    retained
        .expr(Func::count(Expr::case(Expr::col(Alias::new("games")).gte(2), 1)))
        .from_subquery(per_player, Alias::new("per_player"));
    let row = conn.query_one(&retained).await?;
    let retained = row.map(|row| row.try_get_by_index::<i64>(0)).transpose()?.unwrap_or_default();

    let figures = |index: usize| Figures {
        new_players: new_players.get(index).copied().unwrap_or_default(),
        active_players: active_players.get(index).copied().unwrap_or_default(),
        finished_tournaments: finished.get(index).copied().unwrap_or_default(),
    };
    let period_figures = figures(0);
    Ok(Dashboard {
        retention: share(retained, period_figures.active_players),
        period: period_figures,
        weeks: weeks.into_iter().enumerate().map(|(index, span)| (span, figures(index + 1))).collect(),
    })
}

/// `start <= column < end`.
fn within(column: Expr, span: &Span) -> Cond {
    Cond::all().add(column.clone().gte(span.start)).add(column.lt(span.end))
}

/// `COUNT(CASE WHEN column in span THEN 1 END)`.
fn count_in(column: Expr, span: &Span) -> Expr {
    Func::count(Expr::case(within(column, span), 1)).into()
}

/// Runs `query` with one counting column per span (`column(span)`), and reads them back in
/// the order of `spans`.
async fn counts(
    conn: &impl ConnectionTrait,
    mut query: SelectStatement,
    spans: &[Span],
    column: impl Fn(&Span) -> Expr,
) -> Result<Vec<i64>, DbErr> {
    for span in spans {
        query.expr(column(span));
    }
    let row: Option<QueryResult> = conn.query_one(&query).await?;
    let Some(row) = row else { return Ok(vec![0; spans.len()]) };
    (0..spans.len()).map(|index| row.try_get_by_index::<i64>(index)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text).map(|t| t.with_timezone(&Utc)).expect("a time")
    }

    #[test]
    fn a_week_starts_on_monday_at_midnight_utc() {
        // 2026-11-22 is a Sunday.
        assert_eq!(week_start(at("2026-11-22T23:59:59Z")), at("2026-11-16T00:00:00Z"));
        assert_eq!(week_start(at("2026-11-23T00:00:00Z")), at("2026-11-23T00:00:00Z"));
        assert_eq!(week_start(at("2026-11-22T23:59:59.999Z")), at("2026-11-16T00:00:00Z"));
        // Across a month and a year.
        assert_eq!(week_start(at("2027-01-01T12:00:00Z")), at("2026-12-28T00:00:00Z"));
    }

    #[test]
    fn a_time_in_another_zone_counts_by_its_utc_day() {
        // Monday 01:00 in Moscow is still Sunday in UTC.
        let moscow = DateTime::parse_from_rfc3339("2026-11-23T01:00:00+03:00").expect("a time").with_timezone(&Utc);
        assert_eq!(week_start(moscow), at("2026-11-16T00:00:00Z"));
    }

    #[test]
    fn eight_weeks_oldest_first_the_last_cut_at_now() {
        let now = at("2026-11-25T10:00:00Z");
        let weeks = weeks(now);
        assert_eq!(weeks.len(), WEEKS);
        assert_eq!(weeks[0].start, at("2026-10-05T00:00:00Z"));
        assert_eq!(weeks[7].start, at("2026-11-23T00:00:00Z"));
        for pair in weeks.windows(2) {
            assert_eq!(pair[0].end, pair[1].start, "the weeks meet");
            assert_eq!(pair[0].start.weekday(), chrono::Weekday::Mon);
        }
        assert!(weeks[7].end > now && weeks[7].end < now + Duration::seconds(1), "the current week ends at now");
    }

    #[test]
    fn on_monday_midnight_the_new_week_is_the_last() {
        let now = at("2026-11-23T00:00:00Z");
        let weeks = weeks(now);
        assert_eq!(weeks[7].start, now);
        assert_eq!(weeks[6].end, now);
    }

    #[test]
    fn the_period_is_thirty_days_up_to_now() {
        let now = at("2026-11-25T10:00:00Z");
        let period = last_days(now);
        assert_eq!(period.start, at("2026-10-26T10:00:00Z"));
        assert!(period.end > now);
    }

    #[test]
    fn retention_is_a_share_and_zero_without_players() {
        assert_eq!(share(0, 0), 0.0);
        assert_eq!(share(1, 4), 0.25);
        assert_eq!(share(3, 3), 1.0);
    }
}
