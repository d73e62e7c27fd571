//! Leaderboards: a season's standings and the level board, aggregated in SQL and ranked here.
//! Accounts only (guests have no rating) and never a banned account.

use std::cmp::Ordering;

use floor_entities::enums::UserStatus;
use floor_entities::{player_profiles, results, tournaments, users};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, FromQueryResult, JoinType, Order, QueryFilter, QueryOrder,
    QuerySelect, RelationTrait,
};
use uuid::Uuid;

use crate::infra::error::AppResult;

/// The level board's length (the spec's "top 100").
pub const LEVEL_BOARD_SIZE: u64 = 100;

/// Who a row is about, as the boards show them.
#[derive(Clone, Debug, PartialEq, Eq, FromQueryResult)]
pub struct Player {
    pub user_id: Uuid,
    pub name: Option<String>,
    pub nickname: Option<String>,
    pub avatar_url: Option<String>,
}

/// A player's season so far: the sums of their results in the season's tournaments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeasonStanding {
    pub player: Player,
    pub season_points: i64,
    pub games_played: i64,
    pub wins: i64,
}

/// A player's standing on the level board.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LevelStanding {
    pub player: Player,
    pub xp: i64,
    pub level: i32,
    pub wins: i32,
}

#[derive(FromQueryResult)]
struct SeasonRow {
    user_id: Uuid,
    name: Option<String>,
    nickname: Option<String>,
    avatar_url: Option<String>,
    season_points: i64,
    games_played: i64,
    wins: i64,
}

#[derive(FromQueryResult)]
struct LevelRow {
    user_id: Uuid,
    name: Option<String>,
    nickname: Option<String>,
    avatar_url: Option<String>,
    xp: i64,
    level: i32,
    wins: i32,
}

/// Every account with a result in a tournament of `season_id`, ranked by season points.
pub async fn season_board(conn: &impl ConnectionTrait, season_id: Uuid) -> AppResult<Vec<(i64, SeasonStanding)>> {
    let won = Expr::case(Expr::col((results::Entity, results::Column::Place)).eq(1), 1).finally(0);
    let rows = users::Entity::find()
        .select_only()
        .column_as(users::Column::Id, "user_id")
        .column(users::Column::Name)
        .column(users::Column::Nickname)
        .column(users::Column::AvatarUrl)
        .column_as(Expr::col((results::Entity, results::Column::SeasonPoints)).sum(), "season_points")
        .column_as(Expr::col((results::Entity, results::Column::Id)).count(), "games_played")
        .column_as(won.sum(), "wins")
        .join(JoinType::InnerJoin, users::Relation::Results.def())
        .join(JoinType::InnerJoin, results::Relation::Tournament.def())
        .filter(tournaments::Column::SeasonId.eq(season_id))
        .filter(users::Column::Status.eq(UserStatus::Active))
        // Grouped by the primary key, so PostgreSQL allows the user's other columns.
        .group_by(users::Column::Id)
        .into_model::<SeasonRow>()
        .all(conn)
        .await?;
    let standings = rows.into_iter().map(|row| SeasonStanding {
        player: Player { user_id: row.user_id, name: row.name, nickname: row.nickname, avatar_url: row.avatar_url },
        season_points: row.season_points,
        games_played: row.games_played,
        wins: row.wins,
    });
    Ok(rank(standings.collect(), |s| BoardKey { score: s.season_points, wins: s.wins, player: &s.player }))
}

/// The top of the level board: players who have played, by xp. The database orders and cuts
/// with the same tie rule as [`board_order`], so the cut never splits the order.
pub async fn level_board(conn: &impl ConnectionTrait) -> AppResult<Vec<(i64, LevelStanding)>> {
    // Byte order of names on both databases, as Rust compares strings.
    let name_collated = match conn.get_database_backend() {
        DbBackend::Postgres => r#""users"."name" COLLATE "C""#,
        _ => r#""users"."name" COLLATE BINARY"#,
    };
    let rows = users::Entity::find()
        .select_only()
        .column_as(users::Column::Id, "user_id")
        .column(users::Column::Name)
        .column(users::Column::Nickname)
        .column(users::Column::AvatarUrl)
        .column(player_profiles::Column::Xp)
        .column(player_profiles::Column::Level)
        .column(player_profiles::Column::Wins)
        .join(JoinType::InnerJoin, users::Relation::PlayerProfile.def())
        .filter(player_profiles::Column::GamesPlayed.gt(0))
        .filter(users::Column::Status.eq(UserStatus::Active))
        .order_by_desc(player_profiles::Column::Xp)
        .order_by_desc(player_profiles::Column::Wins)
        .order_by(Expr::cust(r#""users"."name" IS NULL"#), Order::Asc)
        .order_by(Expr::cust(name_collated), Order::Asc)
        .order_by_asc(users::Column::Id)
        .limit(LEVEL_BOARD_SIZE)
        .into_model::<LevelRow>()
        .all(conn)
        .await?;
    let standings = rows.into_iter().map(|row| LevelStanding {
        player: Player { user_id: row.user_id, name: row.name, nickname: row.nickname, avatar_url: row.avatar_url },
        xp: row.xp,
        level: row.level,
        wins: row.wins,
    });
    Ok(rank(standings.collect(), |s| BoardKey { score: s.xp, wins: i64::from(s.wins), player: &s.player }))
}

/// What a board orders a row by.
pub struct BoardKey<'a> {
    /// Points or xp: highest first, and equal scores share a place.
    pub score: i64,
    pub wins: i64,
    pub player: &'a Player,
}

/// Board order: score highest first; within a tie more wins first, then by name (byte order,
/// players without a name last), then by user id, so the order never depends on the query.
pub fn board_order(a: &BoardKey<'_>, b: &BoardKey<'_>) -> Ordering {
    b.score
        .cmp(&a.score)
        .then(b.wins.cmp(&a.wins))
        .then_with(|| match (&a.player.name, &b.player.name) {
            (Some(x), Some(y)) => x.cmp(y),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        })
        .then(a.player.user_id.cmp(&b.player.user_id))
}

/// Sorts `rows` in board order and gives each its place by standard competition ranking:
/// equal scores share the place, and the next score's place counts everyone above it
/// (1, 2, 2, 4).
pub fn rank<T>(mut rows: Vec<T>, key: impl Fn(&T) -> BoardKey<'_>) -> Vec<(i64, T)> {
    rows.sort_by(|a, b| board_order(&key(a), &key(b)));
    let mut ranked: Vec<(i64, T)> = Vec::with_capacity(rows.len());
    let mut previous: Option<(i64, i64)> = None;
    for (index, row) in (1..).zip(rows) {
        let score = key(&row).score;
        let place = match previous {
            Some((previous_score, place)) if previous_score == score => place,
            _ => index,
        };
        previous = Some((score, place));
        ranked.push((place, row));
    }
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn player(id: u128, name: Option<&str>) -> Player {
        Player { user_id: Uuid::from_u128(id), name: name.map(str::to_owned), nickname: None, avatar_url: None }
    }

    /// (score, wins, player)
    type Row = (i64, i64, Player);

    fn ranked(rows: Vec<Row>) -> Vec<(i64, u128)> {
        rank(rows, |(score, wins, player)| BoardKey { score: *score, wins: *wins, player })
            .into_iter()
            .map(|(place, (_, _, player))| (place, player.user_id.as_u128()))
            .collect()
    }

    #[test]
    fn equal_scores_share_a_place_and_the_next_place_counts_everyone_above() {
        let rows = vec![
            (10, 0, player(4, Some("d"))),
            (30, 0, player(1, Some("a"))),
            (20, 0, player(2, Some("b"))),
            (20, 0, player(3, Some("c"))),
        ];
        assert_eq!(ranked(rows), [(1, 1), (2, 2), (2, 3), (4, 4)]);
    }

    #[test]
    fn three_way_ties_skip_two_places() {
        let rows = vec![
            (5, 0, player(1, Some("a"))),
            (5, 0, player(2, Some("b"))),
            (5, 0, player(3, Some("c"))),
            (1, 0, player(4, Some("d"))),
            (1, 0, player(5, Some("e"))),
        ];
        assert_eq!(ranked(rows), [(1, 1), (1, 2), (1, 3), (4, 4), (4, 5)]);
    }

    #[test]
    fn within_a_tie_more_wins_come_first_then_the_name_then_the_id() {
        let rows = vec![
            (20, 0, player(1, Some("Zoe"))),
            (20, 0, player(2, None)),
            (20, 1, player(3, Some("Yan"))),
            (20, 0, player(5, Some("Anna"))),
            (20, 0, player(4, Some("Anna"))),
        ];
        assert_eq!(ranked(rows), [(1, 3), (1, 4), (1, 5), (1, 1), (1, 2)]);
    }

    #[test]
    fn names_compare_by_bytes_so_both_databases_agree() {
        let rows = vec![(1, 0, player(1, Some("ann"))), (1, 0, player(2, Some("Bob"))), (1, 0, player(3, Some("Яна")))];
        assert_eq!(ranked(rows), [(1, 2), (1, 1), (1, 3)]);
    }

    #[test]
    fn an_empty_board_has_no_places() {
        assert!(ranked(Vec::new()).is_empty());
    }
}
