//! The balance hint after an elimination: which player the floor should move so tables stay
//! even, or who goes to the final table. Only a hint: the server never moves anyone itself.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::seating::SEATS_PER_TABLE;

/// A player still in the tournament, where they sit now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeatedPlayer<Id> {
    pub player: Id,
    pub table_no: i32,
    pub seat_no: i32,
}

/// One suggested move of a player (named by their registration) to a free seat.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Move<Id> {
    pub registration_id: Id,
    pub from_table: i32,
    pub from_seat: i32,
    pub to_table: i32,
    pub to_seat: i32,
}

/// What the floor is told to do: `{"kind": "move", "moves": [...]}` to even out two tables,
/// or `{"kind": "finalTable", "moves": [...]}` to bring everyone left to one table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum BalanceHint<Id> {
    Move { moves: Vec<Move<Id>> },
    FinalTable { moves: Vec<Move<Id>> },
}

/// The hint for the players still in, or `None` when the tables are fine as they are.
///
/// Only tables with someone at them count. With nine players or fewer spread over more than
/// one table, everyone goes to the largest table (the lower number on a tie), in order of
/// (table, seat), each to the then-lowest free seat. Otherwise, when the largest table has
/// two or more players more than the smallest, the player in the largest table's highest
/// seat moves to the smallest table's lowest free seat (ties again go to the lower number).
pub fn balance_hint<Id: Copy>(alive: &[SeatedPlayer<Id>]) -> Option<BalanceHint<Id>> {
    let mut tables: BTreeMap<i32, Vec<&SeatedPlayer<Id>>> = BTreeMap::new();
    for player in alive {
        tables.entry(player.table_no).or_default().push(player);
    }
    // Ascending table numbers and strict comparisons: ties keep the lower number.
    let mut largest: Option<(i32, usize)> = None;
    let mut smallest: Option<(i32, usize)> = None;
    for (table, players) in &tables {
        let size = players.len();
        if largest.is_none_or(|(_, most)| size > most) {
            largest = Some((*table, size));
        }
        if smallest.is_none_or(|(_, least)| size < least) {
            smallest = Some((*table, size));
        }
    }
    let ((large_table, large_size), (small_table, small_size)) = (largest?, smallest?);

    if alive.len() <= SEATS_PER_TABLE && tables.len() > 1 {
        let mut taken = seats_at(&tables, large_table);
        let mut moving: Vec<&SeatedPlayer<Id>> = alive.iter().filter(|player| player.table_no != large_table).collect();
        moving.sort_by_key(|player| (player.table_no, player.seat_no));
        let mut moves = Vec::with_capacity(moving.len());
        for player in moving {
            // Nine players at most: the final table always has a seat for each.
            let Some(seat) = first_free_seat(&taken) else { break };
            taken.insert(seat);
            moves.push(move_to(player, large_table, seat));
        }
        return Some(BalanceHint::FinalTable { moves });
    }

    if large_size >= small_size + 2 {
        let mover = tables.get(&large_table)?.iter().max_by_key(|player| player.seat_no)?;
        let seat = first_free_seat(&seats_at(&tables, small_table))?;
        return Some(BalanceHint::Move { moves: vec![move_to(mover, small_table, seat)] });
    }
    None
}

/// The seats held at `table`.
fn seats_at<Id>(tables: &BTreeMap<i32, Vec<&SeatedPlayer<Id>>>, table: i32) -> BTreeSet<i32> {
    tables.get(&table).map(|players| players.iter().map(|player| player.seat_no).collect()).unwrap_or_default()
}

/// The lowest seat of a table that nobody holds.
fn first_free_seat(taken: &BTreeSet<i32>) -> Option<i32> {
    (1..=SEATS_PER_TABLE as i32).find(|seat| !taken.contains(seat))
}

/// The move of `player` from where they sit to `to_table`, `to_seat`.
pub(crate) fn move_to<Id: Copy>(player: &SeatedPlayer<Id>, to_table: i32, to_seat: i32) -> Move<Id> {
    Move { registration_id: player.player, from_table: player.table_no, from_seat: player.seat_no, to_table, to_seat }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::rules::test_seats::{at, moved};

    fn tables(layout: &[(i32, &[i32])]) -> Vec<SeatedPlayer<i32>> {
        layout.iter().flat_map(|(table, seats)| at(*table, seats.iter().copied())).collect()
    }

    #[test]
    fn tables_within_one_player_of_each_other_stay() {
        let alive = [at(1, 1..=9), at(2, 1..=8), at(3, 1..=8)].concat();
        assert_eq!(balance_hint(&alive), None);
    }

    #[test]
    fn a_spread_of_two_moves_one_player() {
        let alive = [at(1, 1..=9), at(2, 1..=9), at(3, 1..=7)].concat();
        assert_eq!(balance_hint(&alive), Some(BalanceHint::Move { moves: vec![moved(109, (1, 9), (3, 8))] }));
    }

    #[test]
    fn the_highest_seat_of_the_largest_table_moves_to_the_smallest() {
        let alive = [at(1, 1..=9), at(2, 1..=8), at(3, 1..=6)].concat();
        assert_eq!(balance_hint(&alive), Some(BalanceHint::Move { moves: vec![moved(109, (1, 9), (3, 7))] }));
    }

    #[test]
    fn the_mover_takes_the_lowest_free_seat_not_the_seat_after_the_count() {
        // Nine and seven, the seven with gaps at seats 2 and 5.
        let alive = tables(&[(1, &[1, 2, 3, 4, 5, 6, 7, 8, 9]), (2, &[1, 3, 4, 6, 7, 8, 9])]);
        assert_eq!(balance_hint(&alive), Some(BalanceHint::Move { moves: vec![moved(109, (1, 9), (2, 2))] }));
        // Eight and six: the mover is the highest seat, not the eighth; seat 1 is the gap.
        let alive = tables(&[(1, &[1, 2, 3, 4, 6, 7, 8, 9]), (2, &[2, 3, 4, 5, 6, 7])]);
        assert_eq!(balance_hint(&alive), Some(BalanceHint::Move { moves: vec![moved(109, (1, 9), (2, 1))] }));
    }

    #[test]
    fn on_equally_large_or_small_tables_the_lower_number_is_chosen() {
        // Largest: tables 2 and 4 (8 each); smallest: tables 3 and 5 (6 each).
        let alive = [at(5, 1..=6), at(4, 1..=8), at(3, 1..=6), at(2, 1..=8)].concat();
        assert_eq!(balance_hint(&alive), Some(BalanceHint::Move { moves: vec![moved(208, (2, 8), (3, 7))] }));
    }

    #[test]
    fn ten_players_at_six_and_four_move_one() {
        let alive = [at(1, 1..=6), at(2, 1..=4)].concat();
        assert_eq!(balance_hint(&alive), Some(BalanceHint::Move { moves: vec![moved(106, (1, 6), (2, 5))] }));
    }

    #[test]
    fn ten_players_at_five_and_five_stay() {
        let alive = [at(1, 1..=5), at(2, 1..=5)].concat();
        assert_eq!(balance_hint(&alive), None);
    }

    #[test]
    fn nine_players_over_two_tables_go_to_the_larger() {
        let alive = [at(1, 1..=4), at(2, 1..=5)].concat();
        assert_eq!(
            balance_hint(&alive),
            Some(BalanceHint::FinalTable {
                moves: vec![
                    moved(101, (1, 1), (2, 6)),
                    moved(102, (1, 2), (2, 7)),
                    moved(103, (1, 3), (2, 8)),
                    moved(104, (1, 4), (2, 9)),
                ]
            })
        );
    }

    #[test]
    fn nine_or_fewer_players_go_to_the_final_table_even_when_one_move_would_even_them() {
        let alive = [at(1, 1..=6), at(2, 1..=2)].concat();
        assert_eq!(
            balance_hint(&alive),
            Some(BalanceHint::FinalTable { moves: vec![moved(201, (2, 1), (1, 7)), moved(202, (2, 2), (1, 8))] })
        );
    }

    #[test]
    fn the_final_table_on_equal_sizes_is_the_lower_number() {
        let alive = [at(3, 1..=3), at(2, 1..=3)].concat();
        assert_eq!(
            balance_hint(&alive),
            Some(BalanceHint::FinalTable {
                moves: vec![moved(301, (3, 1), (2, 4)), moved(302, (3, 2), (2, 5)), moved(303, (3, 3), (2, 6))]
            })
        );
    }

    #[test]
    fn the_final_table_fills_its_gaps_in_order() {
        // Target table 2 holds seats 2, 5, 9; movers come in (table, seat) order from tables 1 and 3.
        let alive = tables(&[(3, &[4]), (2, &[2, 5, 9]), (1, &[7, 3])]);
        assert_eq!(
            balance_hint(&alive),
            Some(BalanceHint::FinalTable {
                moves: vec![moved(103, (1, 3), (2, 1)), moved(107, (1, 7), (2, 3)), moved(304, (3, 4), (2, 4))]
            })
        );
    }

    #[test]
    fn everyone_at_one_table_needs_nothing() {
        assert_eq!(balance_hint(&at(4, 1..=9)), None);
        assert_eq!(balance_hint(&at(4, [2, 7])), None);
    }

    #[test]
    fn nobody_left_needs_nothing() {
        assert_eq!(balance_hint::<i32>(&[]), None);
    }

    #[test]
    fn hints_serialise_with_their_kind() {
        let hint = BalanceHint::Move { moves: vec![moved(7, (1, 9), (3, 7))] };
        assert_eq!(
            serde_json::to_value(&hint).expect("serialises"),
            json!({"kind": "move", "moves": [
                {"registrationId": 7, "fromTable": 1, "fromSeat": 9, "toTable": 3, "toSeat": 7}
            ]})
        );
        let hint: BalanceHint<i32> = BalanceHint::FinalTable { moves: vec![] };
        assert_eq!(serde_json::to_value(&hint).expect("serialises"), json!({"kind": "finalTable", "moves": []}));
    }
}
