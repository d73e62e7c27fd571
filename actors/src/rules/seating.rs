//! The opening draw: players shuffled and dealt round-robin over the fewest tables of nine.

use rand::Rng;
use rand::seq::SliceRandom;

/// Seats at one table.
pub const SEATS_PER_TABLE: usize = 9;

/// The fewest tables that seat `players` (none for nobody).
pub fn table_count(players: usize) -> usize {
    players.div_ceil(SEATS_PER_TABLE)
}

/// Where the draw put one player; tables and seats count from 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeatAssignment<Id> {
    pub player: Id,
    pub table_no: i32,
    pub seat_no: i32,
}

/// The draw: a shuffled copy of `players` dealt one per table in turn (table 1 seat 1,
/// table 2 seat 1, ..., table 1 seat 2, ...), so table sizes differ by at most one.
/// The result is in the shuffled order.
pub fn seat_players<Id: Copy, R: Rng + ?Sized>(players: &[Id], rng: &mut R) -> Vec<SeatAssignment<Id>> {
    let mut shuffled = players.to_vec();
    shuffled.shuffle(rng);
    let tables = table_count(shuffled.len()).max(1);
    shuffled
        .into_iter()
        .enumerate()
        .map(|(index, player)| SeatAssignment {
            player,
            table_no: number(index % tables),
            seat_no: number(index / tables),
        })
        .collect()
}

/// The 1-based number of a 0-based index.
fn number(index: usize) -> i32 {
    i32::try_from(index).map_or(i32::MAX, |index| index.saturating_add(1))
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;

    fn draw(players: usize, seed: u64) -> Vec<SeatAssignment<usize>> {
        let ids: Vec<usize> = (0..players).collect();
        seat_players(&ids, &mut StdRng::seed_from_u64(seed))
    }

    #[test]
    fn tables_are_the_fewest_that_seat_everyone() {
        assert_eq!(table_count(0), 0);
        assert_eq!(table_count(1), 1);
        assert_eq!(table_count(9), 1);
        assert_eq!(table_count(10), 2);
        assert_eq!(table_count(18), 2);
        assert_eq!(table_count(19), 3);
        assert_eq!(table_count(100), 12);
    }

    #[test]
    fn every_field_size_gets_even_tables_with_seats_one_to_size() {
        for players in 0..=200 {
            let seating = draw(players, players as u64);
            assert_eq!(seating.len(), players, "{players} players");

            let seated: BTreeSet<usize> = seating.iter().map(|seat| seat.player).collect();
            assert_eq!(seated, (0..players).collect(), "{players} players each seated once");

            let mut tables: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
            for seat in &seating {
                tables.entry(seat.table_no).or_default().push(seat.seat_no);
            }
            let numbers: Vec<i32> = tables.keys().copied().collect();
            let expected: Vec<i32> = (1..=table_count(players)).map(|n| n as i32).collect();
            assert_eq!(numbers, expected, "{players} players: tables 1..=count");

            let sizes: Vec<usize> = tables.values().map(Vec::len).collect();
            let (smallest, largest) = (sizes.iter().min(), sizes.iter().max());
            if let (Some(smallest), Some(largest)) = (smallest, largest) {
                assert!(largest - smallest <= 1, "{players} players: sizes {sizes:?}");
                assert!(*largest <= SEATS_PER_TABLE, "{players} players: sizes {sizes:?}");
            }
            for (table, seats) in &mut tables {
                seats.sort_unstable();
                let expected: Vec<i32> = (1..=seats.len()).map(|n| n as i32).collect();
                assert_eq!(*seats, expected, "{players} players: seats at table {table}");
            }
        }
    }

    #[test]
    fn a_fixed_seed_gives_a_fixed_layout() {
        assert_eq!(draw(30, 7), draw(30, 7));
        // StdRng's stream is pinned by Cargo.lock; a rand upgrade may change this layout.
        let layout: Vec<(usize, i32, i32)> =
            draw(11, 42).into_iter().map(|seat| (seat.player, seat.table_no, seat.seat_no)).collect();
        assert_eq!(
            layout,
            [
                (8, 1, 1),
                (6, 2, 1),
                (3, 1, 2),
                (2, 2, 2),
                (1, 1, 3),
                (5, 2, 3),
                (10, 1, 4),
                (7, 2, 4),
                (4, 1, 5),
                (0, 2, 5),
                (9, 1, 6),
            ]
        );
    }

    #[test]
    fn different_seeds_give_different_orders() {
        let order = |seed| draw(20, seed).into_iter().map(|seat| seat.player).collect::<Vec<_>>();
        assert_ne!(order(1), order(2));
    }

    #[test]
    fn players_are_dealt_one_per_table_in_turn() {
        let seating = draw(12, 3);
        let places: Vec<(i32, i32)> = seating.iter().map(|seat| (seat.table_no, seat.seat_no)).collect();
        assert_eq!(
            places,
            [(1, 1), (2, 1), (1, 2), (2, 2), (1, 3), (2, 3), (1, 4), (2, 4), (1, 5), (2, 5), (1, 6), (2, 6)]
        );
    }
}
