//! Seatings for the seating rules' tests, written as tables of seat numbers.

use super::balance::{Move, SeatedPlayer};

/// Players at `table`, one per listed seat; ids are `table * 100 + seat`.
pub fn at(table: i32, seats: impl IntoIterator<Item = i32>) -> Vec<SeatedPlayer<i32>> {
    seats.into_iter().map(|seat_no| SeatedPlayer { player: table * 100 + seat_no, table_no: table, seat_no }).collect()
}

/// The move of `player` from (table, seat) to (table, seat).
pub fn moved(player: i32, from: (i32, i32), to: (i32, i32)) -> Move<i32> {
    Move { registration_id: player, from_table: from.0, from_seat: from.1, to_table: to.0, to_seat: to.1 }
}
