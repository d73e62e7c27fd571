//! Breaking a table: as players fall, the floor closes a table and spreads its players over
//! the others. This proposes which table and where each of its players goes; the club applies
//! it (or its own version) as one batch of moves. The server never moves anyone by itself,
//! and the balance hint after an elimination stays the rule of the specification.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::balance::{Move, SeatedPlayer, move_to};
use super::seating::SEATS_PER_TABLE;

/// What [`propose_table_break`] found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum TableBreak<Id> {
    /// Break `table_no`: each of its players moves as listed.
    Break { table_no: i32, moves: Vec<Move<Id>> },
    /// One table or none is in play: there is nothing to break.
    OneTable,
    /// The other tables have too few free seats for the smallest table's players.
    NoRoom { table_no: i32, players: usize, free_seats: usize },
}

/// The table to break is the one with the fewest players (ties go to the highest number).
/// Its players, in seat order, go one by one to the then-emptiest other table (ties to the
/// lowest number), each to that table's lowest free seat, so the tables end up as even as
/// the moves allow. Only tables with someone at them count.
pub fn propose_table_break<Id: Copy>(alive: &[SeatedPlayer<Id>]) -> TableBreak<Id> {
    let mut tables: BTreeMap<i32, Vec<&SeatedPlayer<Id>>> = BTreeMap::new();
    for player in alive {
        tables.entry(player.table_no).or_default().push(player);
    }
    if tables.len() < 2 {
        return TableBreak::OneTable;
    }
    // Descending table numbers and a strict comparison: a tie keeps the higher number.
    let Some((broken, _)) =
        tables.iter().rev().fold(None, |fewest: Option<(i32, usize)>, (table, players)| match fewest {
            Some((_, least)) if least <= players.len() => fewest,
            _ => Some((*table, players.len())),
        })
    else {
        return TableBreak::OneTable;
    };
    let mut leaving: Vec<&SeatedPlayer<Id>> = tables.remove(&broken).unwrap_or_default();
    leaving.sort_by_key(|player| player.seat_no);
    let mut taken: BTreeMap<i32, BTreeSet<i32>> =
        tables.iter().map(|(table, players)| (*table, players.iter().map(|player| player.seat_no).collect())).collect();
    let free_seats: usize = taken.values().map(|seats| SEATS_PER_TABLE.saturating_sub(seats.len())).sum();
    if free_seats < leaving.len() {
        return TableBreak::NoRoom { table_no: broken, players: leaving.len(), free_seats };
    }
    let mut moves = Vec::with_capacity(leaving.len());
    for player in leaving {
        // Ascending numbers and a strict comparison: a tie keeps the lower number.
        let emptiest = taken.iter().filter(|(_, seats)| seats.len() < SEATS_PER_TABLE).fold(
            None,
            |emptiest: Option<(i32, usize)>, (table, seats)| match emptiest {
                Some((_, least)) if least <= seats.len() => emptiest,
                _ => Some((*table, seats.len())),
            },
        );
        // Counted above: every player of the broken table has a free seat somewhere.
        let Some((table_no, _)) = emptiest else { break };
        let seats = taken.entry(table_no).or_default();
        let Some(seat_no) = (1..=SEATS_PER_TABLE as i32).find(|seat| !seats.contains(seat)) else { break };
        seats.insert(seat_no);
        moves.push(move_to(player, table_no, seat_no));
    }
    TableBreak::Break { table_no: broken, moves }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::test_seats::{at, moved};

    fn broken(proposal: &TableBreak<i32>) -> (i32, &[Move<i32>]) {
        match proposal {
            TableBreak::Break { table_no, moves } => (*table_no, moves),
            other => panic!("expected a break, got {other:?}"),
        }
    }

    #[test]
    fn nothing_breaks_with_one_table_or_none() {
        assert_eq!(propose_table_break::<i32>(&[]), TableBreak::OneTable);
        assert_eq!(propose_table_break(&at(3, 1..=9)), TableBreak::OneTable);
    }

    #[test]
    fn the_table_with_the_fewest_players_breaks() {
        let alive = [at(1, 1..=7), at(2, [2, 5]), at(3, 1..=6)].concat();
        let proposal = propose_table_break(&alive);
        let (table, moves) = broken(&proposal);
        assert_eq!(table, 2);
        // Table 3 (6) is emptier than table 1 (7): the first goes there, then they are even
        // at 7 and the lower number takes the second.
        assert_eq!(moves, [moved(202, (2, 2), (3, 7)), moved(205, (2, 5), (1, 8))]);
    }

    #[test]
    fn a_tie_for_the_fewest_breaks_the_highest_number() {
        let alive = [at(1, 1..=3), at(2, 1..=5), at(4, 1..=3)].concat();
        let proposal = propose_table_break(&alive);
        let (table, moves) = broken(&proposal);
        assert_eq!(table, 4);
        assert_eq!(moves.len(), 3);
        assert!(moves.iter().all(|m| m.from_table == 4));
    }

    #[test]
    fn players_go_to_the_emptiest_tables_first_into_their_first_free_seats() {
        // Table 1 has seats 1, 2 and 4 free; table 2 has seats 3 and 9 free.
        let alive = [at(1, [3, 5, 6, 7, 8, 9]), at(2, [1, 2, 4, 5, 6, 7, 8]), at(3, [1, 4, 9])].concat();
        let proposal = propose_table_break(&alive);
        let (table, moves) = broken(&proposal);
        assert_eq!(table, 3);
        assert_eq!(moves, [moved(301, (3, 1), (1, 1)), moved(304, (3, 4), (1, 2)), moved(309, (3, 9), (2, 3))]);
    }

    #[test]
    fn every_player_of_the_broken_table_gets_a_distinct_free_seat() {
        for small in 1..=4 {
            let alive = [at(1, 1..=6), at(2, 1..=7), at(3, 1..=small)].concat();
            let proposal = propose_table_break(&alive);
            let (table, moves) = broken(&proposal);
            assert_eq!(table, 3);
            assert_eq!(moves.len(), small as usize);
            let mut seats: Vec<(i32, i32)> = alive
                .iter()
                .filter(|player| player.table_no != 3)
                .map(|player| (player.table_no, player.seat_no))
                .collect();
            seats.extend(moves.iter().map(|m| (m.to_table, m.to_seat)));
            let distinct: BTreeSet<(i32, i32)> = seats.iter().copied().collect();
            assert_eq!(distinct.len(), seats.len(), "{small}: no two players share a seat");
            assert!(moves.iter().all(|m| m.to_table != 3 && (1..=9).contains(&m.to_seat)));
        }
    }

    #[test]
    fn the_tables_end_as_even_as_the_moves_allow() {
        let alive = [at(1, 1..=5), at(2, 1..=8), at(3, 1..=4)].concat();
        let proposal = propose_table_break(&alive);
        let (_, moves) = broken(&proposal);
        let to_one = moves.iter().filter(|m| m.to_table == 1).count();
        let to_two = moves.iter().filter(|m| m.to_table == 2).count();
        // 5 + 8 + 4 = 17 players at two tables: 9 and 8.
        assert_eq!((5 + to_one, 8 + to_two), (9, 8));
    }

    #[test]
    fn no_room_is_said_so_and_moves_nobody() {
        let alive = [at(1, 1..=9), at(2, 1..=8), at(3, 1..=8)].concat();
        assert_eq!(propose_table_break(&alive), TableBreak::NoRoom { table_no: 3, players: 8, free_seats: 1 });
    }

    #[test]
    fn table_numbers_need_not_be_contiguous() {
        let alive = [at(2, 1..=8), at(5, [1])].concat();
        let proposal = propose_table_break(&alive);
        assert_eq!(broken(&proposal), (5, &[moved(501, (5, 1), (2, 9))][..]));
    }
}
