//! The players' rows a run of live changes leaves behind, written in a few statements however
//! many changes the run holds: a queue made offline with a dozen eliminations is three
//! `UPDATE`s, not two per elimination. What is written is the difference between the game
//! before the run and after it, row by row, so the order of the changes inside the run cannot
//! trip the seat index.

use chrono::{DateTime, Utc};
use floor_actors::live::{Game, Seat};
use floor_entities::{registrations, table_seats};
use sea_orm::sea_query::{CaseStatement, Expr};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};
use uuid::Uuid;

use crate::infra::db::{IDS_PER_STATEMENT, padded};
use crate::infra::error::{AppResult, ErrorCode, OnUniqueViolation};

/// How the players' rows must change to go from one game to another.
#[derive(Debug, Default, PartialEq)]
pub struct RowChanges {
    /// Registrations whose elimination moment changed, with the new one (`None`: back in).
    pub stamps: Vec<(Uuid, Option<DateTime<Utc>>)>,
    /// Seat rows to mark free first: the players who fell, and, when several players sit down
    /// elsewhere, those too, so that none of them sits in a seat another is still marked in.
    pub freed: Vec<Uuid>,
    /// Seat rows taken, at their seat: players who moved or came back.
    pub seated: Vec<(Uuid, Seat)>,
}

impl RowChanges {
    /// The rows that differ between `before` and `after` (the same tournament, its players
    /// seated at start). A player's seat row is where they sit, taken while they are alive.
    pub fn between(before: &Game, after: &Game) -> Self {
        let mut changes = Self::default();
        for (was, is) in before.players.iter().zip(&after.players) {
            debug_assert_eq!(was.registration_id, is.registration_id, "the same players in the same order");
            let id = is.registration_id;
            if was.eliminated_at != is.eliminated_at {
                changes.stamps.push((id, is.eliminated_at));
            }
            match (was.is_alive(), is.is_alive()) {
                (true, false) => changes.freed.push(id),
                (was_alive, true) if !was_alive || was.seat != is.seat => changes.seated.push((id, is.seat)),
                _ => {}
            }
        }
        if changes.seated.len() > 1 {
            changes.freed.extend(changes.seated.iter().map(|(id, _)| *id));
        }
        changes
    }

    pub fn is_empty(&self) -> bool {
        self.stamps.is_empty() && self.freed.is_empty() && self.seated.is_empty()
    }

    /// Writes them: the stamps, then the freed seats, then the taken ones, each a statement per
    /// [`IDS_PER_STATEMENT`] rows. A seat taken twice is `SEAT_TAKEN`.
    pub async fn write(&self, conn: &impl ConnectionTrait, now: DateTime<Utc>) -> AppResult<()> {
        for chunk in self.stamps.chunks(IDS_PER_STATEMENT) {
            let chunk = padded(chunk);
            let ids = chunk.iter().map(|(id, _)| *id);
            let at = by_row(registrations::Column::Id, chunk.iter().map(|(id, at)| (*id, Expr::value(*at))));
            registrations::Entity::update_many()
                .col_expr(registrations::Column::EliminatedAt, at)
                .col_expr(registrations::Column::UpdatedAt, Expr::value(now))
                .filter(registrations::Column::Id.is_in(ids))
                .exec(conn)
                .await?;
        }
        for chunk in self.freed.chunks(IDS_PER_STATEMENT) {
            table_seats::Entity::update_many()
                .col_expr(table_seats::Column::Active, Expr::value(false))
                .col_expr(table_seats::Column::UpdatedAt, Expr::value(now))
                .filter(table_seats::Column::RegistrationId.is_in(padded(chunk)))
                .exec(conn)
                .await?;
        }
        for chunk in self.seated.chunks(IDS_PER_STATEMENT) {
            let chunk = padded(chunk);
            let rows = |part: fn(&Seat) -> i32| {
                by_row(
                    table_seats::Column::RegistrationId,
                    chunk.iter().map(move |(id, seat)| (*id, Expr::value(part(seat)))),
                )
            };
            table_seats::Entity::update_many()
                .col_expr(table_seats::Column::TableNo, rows(|seat| seat.table_no))
                .col_expr(table_seats::Column::SeatNo, rows(|seat| seat.seat_no))
                .col_expr(table_seats::Column::Active, Expr::value(true))
                .col_expr(table_seats::Column::UpdatedAt, Expr::value(now))
                .filter(table_seats::Column::RegistrationId.is_in(chunk.iter().map(|(id, _)| *id)))
                .exec(conn)
                .await
                .on_unique_violation(ErrorCode::SeatTaken, "another player sits there")?;
        }
        Ok(())
    }
}

/// `CASE WHEN key = id THEN value … END`: each row's own value in one statement. Only for a
/// chunk of rows, never empty.
fn by_row(key: impl ColumnTrait, rows: impl Iterator<Item = (Uuid, Expr)>) -> Expr {
    rows.fold(CaseStatement::new(), |case, (id, value)| case.case(key.eq(id), value)).into()
}

#[cfg(test)]
mod tests {
    use floor_actors::live::Player;
    use floor_entities::enums::TournamentStatus;

    use super::*;

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    fn at(second: i64) -> DateTime<Utc> {
        DateTime::<Utc>::UNIX_EPOCH + chrono::TimeDelta::seconds(1_800_000_000 + second)
    }

    fn seat(table_no: i32, seat_no: i32) -> Seat {
        Seat { table_no, seat_no }
    }

    fn game(players: &[(u128, Seat, Option<i64>)]) -> Game {
        Game {
            tournament_id: id(99),
            status: TournamentStatus::Running,
            version: 1,
            clock: None,
            levels: Vec::new(),
            chips_in_play: 0,
            players: players
                .iter()
                .map(|&(n, seat, eliminated)| Player {
                    registration_id: id(n),
                    name: format!("P{n}"),
                    seat,
                    eliminated_at: eliminated.map(at),
                    created_at: at(0),
                })
                .collect(),
            last_command_at: None,
        }
    }

    #[test]
    fn the_same_game_changes_no_row() {
        let same = game(&[(1, seat(1, 1), None), (2, seat(1, 2), Some(5))]);
        assert!(RowChanges::between(&same, &same).is_empty());
    }

    #[test]
    fn a_fall_stamps_the_registration_and_frees_the_seat_where_it_was() {
        let before = game(&[(1, seat(1, 1), None), (2, seat(1, 2), None)]);
        let after = game(&[(1, seat(1, 1), Some(7)), (2, seat(1, 2), None)]);
        let changes = RowChanges::between(&before, &after);
        assert_eq!(changes, RowChanges { stamps: vec![(id(1), Some(at(7)))], freed: vec![id(1)], seated: vec![] });
    }

    #[test]
    fn a_player_back_elsewhere_is_unstamped_and_seated_at_the_new_seat() {
        let before = game(&[(1, seat(1, 1), Some(3)), (2, seat(1, 2), None)]);
        let after = game(&[(1, seat(2, 4), None), (2, seat(1, 2), None)]);
        let changes = RowChanges::between(&before, &after);
        assert_eq!(
            changes,
            RowChanges { stamps: vec![(id(1), None)], freed: vec![], seated: vec![(id(1), seat(2, 4))] }
        );
    }

    #[test]
    fn a_restamped_order_touches_no_seat() {
        let before = game(&[(1, seat(1, 1), Some(3)), (2, seat(1, 2), Some(4))]);
        let after = game(&[(1, seat(1, 1), Some(4)), (2, seat(1, 2), Some(3))]);
        let changes = RowChanges::between(&before, &after);
        assert_eq!(changes.stamps, vec![(id(1), Some(at(4))), (id(2), Some(at(3)))]);
        assert!(changes.freed.is_empty() && changes.seated.is_empty());
    }

    #[test]
    fn one_player_moving_is_one_seat_taken_with_nothing_freed() {
        let before = game(&[(1, seat(1, 1), None), (2, seat(1, 2), None)]);
        let after = game(&[(1, seat(3, 9), None), (2, seat(1, 2), None)]);
        let changes = RowChanges::between(&before, &after);
        assert_eq!(changes, RowChanges { stamps: vec![], freed: vec![], seated: vec![(id(1), seat(3, 9))] });
    }

    #[test]
    fn players_swapping_seats_are_all_freed_before_any_sits_down() {
        let before = game(&[(1, seat(1, 1), None), (2, seat(1, 2), None), (3, seat(1, 3), None)]);
        let after = game(&[(1, seat(1, 2), None), (2, seat(1, 1), None), (3, seat(1, 3), None)]);
        let changes = RowChanges::between(&before, &after);
        assert_eq!(changes.freed, vec![id(1), id(2)]);
        assert_eq!(changes.seated, vec![(id(1), seat(1, 2)), (id(2), seat(1, 1))]);
    }

    #[test]
    fn a_player_moving_into_the_seat_of_one_who_fell_finds_it_freed_first() {
        let before = game(&[(1, seat(1, 1), None), (2, seat(2, 1), None)]);
        let after = game(&[(1, seat(1, 1), Some(9)), (2, seat(1, 1), None)]);
        let changes = RowChanges::between(&before, &after);
        assert_eq!(changes.freed, vec![id(1)]);
        assert_eq!(changes.seated, vec![(id(2), seat(1, 1))]);
    }
}
