//! LiveState: the one picture of a tournament that every client sees, built from the game
//! at each change. Never a phone.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use floor_entities::enums::TournamentStatus;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::live::game::Game;
use crate::rules::balance::SeatedPlayer;
use crate::rules::structure::Segment;

/// The server clock: clients compute the remaining time from these fields and `serverTime`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClockView {
    pub current_level_idx: usize,
    /// When the current segment started (paused time excluded); null before start.
    pub level_started_at: Option<DateTime<Utc>>,
    /// Set while the clock is paused.
    pub paused_at: Option<DateTime<Utc>>,
    #[schema(value_type = Vec<Object>)]
    pub levels: Vec<Segment>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeatView {
    pub seat_no: i32,
    pub registration_id: Uuid,
    pub name: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TableView {
    pub table_no: i32,
    /// Only players still in, by seat.
    pub seats: Vec<SeatView>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EliminationView {
    pub registration_id: Uuid,
    pub name: String,
    pub place: i32,
    pub eliminated_at: DateTime<Utc>,
}

/// The full live picture of one tournament.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LiveState {
    pub tournament_id: Uuid,
    /// Grows by one with every change.
    pub version: i64,
    pub status: TournamentStatus,
    pub server_time: DateTime<Utc>,
    pub clock: ClockView,
    /// Players still in.
    pub remaining: usize,
    /// Players seated at start.
    pub entrants: usize,
    pub chips_in_play: i64,
    /// Chips in play over players still in (0 when nobody is).
    pub avg_stack: i64,
    pub tables: Vec<TableView>,
    /// Best place first (the latest elimination first).
    pub eliminations: Vec<EliminationView>,
}

impl LiveState {
    /// The players still in, where they sit, as the seating rules take them.
    pub fn seated(&self) -> Vec<SeatedPlayer<Uuid>> {
        self.tables
            .iter()
            .flat_map(|table| {
                table.seats.iter().map(|seat| SeatedPlayer {
                    player: seat.registration_id,
                    table_no: table.table_no,
                    seat_no: seat.seat_no,
                })
            })
            .collect()
    }

    pub fn of(game: &Game, now: DateTime<Utc>) -> Self {
        let remaining = game.remaining();
        let mut tables: Vec<TableView> = Vec::new();
        let mut alive: Vec<_> = game.alive().collect();
        alive.sort_by_key(|player| (player.seat.table_no, player.seat.seat_no));
        for player in alive {
            let seat = SeatView {
                seat_no: player.seat.seat_no,
                registration_id: player.registration_id,
                name: player.name.clone(),
            };
            match tables.last_mut() {
                Some(table) if table.table_no == player.seat.table_no => table.seats.push(seat),
                _ => tables.push(TableView { table_no: player.seat.table_no, seats: vec![seat] }),
            }
        }
        let eliminations = game
            .eliminations()
            .into_iter()
            .filter_map(|(player, place)| {
                Some(EliminationView {
                    registration_id: player.registration_id,
                    name: player.name.clone(),
                    place,
                    eliminated_at: player.eliminated_at?,
                })
            })
            .collect();
        Self {
            tournament_id: game.tournament_id,
            version: game.version,
            status: game.status,
            server_time: now,
            clock: ClockView {
                current_level_idx: game.clock.as_ref().map_or(0, |clock| clock.current_level_idx),
                level_started_at: game.clock.as_ref().map(|clock| clock.level_started_at),
                paused_at: game.clock.as_ref().and_then(|clock| clock.paused_at),
                levels: game.levels.clone(),
            },
            remaining,
            entrants: game.players.len(),
            chips_in_play: game.chips_in_play,
            avg_stack: if remaining == 0 { 0 } else { game.chips_in_play / remaining as i64 },
            tables,
            eliminations,
        }
    }
}

/// The state published after a change, shared by the HTTP reads and the broadcast.
pub type Snapshot = Arc<LiveState>;

/// Whether the change from `before` to `after` began a segment of the clock: the clock started,
/// or it runs another segment than before (a level or a break, by a press or because one ran
/// out). A pause, a resume, an elimination or an undo does not.
pub fn began_segment(before: &LiveState, after: &LiveState) -> bool {
    after.status == TournamentStatus::Running
        && after.clock.level_started_at.is_some()
        && (before.status != TournamentStatus::Running
            || before.clock.current_level_idx != after.clock.current_level_idx)
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;

    fn state(status: TournamentStatus, idx: usize, started: bool, paused: bool) -> LiveState {
        let now = Utc::now();
        LiveState {
            tournament_id: Uuid::nil(),
            version: 1,
            status,
            server_time: now,
            clock: ClockView {
                current_level_idx: idx,
                level_started_at: started.then_some(now),
                paused_at: paused.then_some(now),
                levels: Vec::new(),
            },
            remaining: 2,
            entrants: 2,
            chips_in_play: 0,
            avg_stack: 0,
            tables: Vec::new(),
            eliminations: Vec::new(),
        }
    }

    #[test]
    fn a_segment_begins_at_the_start_and_at_every_change_of_segment_only() {
        use TournamentStatus::{Finished, Registration, Running};
        let waiting = state(Registration, 0, false, false);
        let first = state(Running, 0, true, false);
        assert!(began_segment(&waiting, &first), "the start begins the first level");
        assert!(began_segment(&first, &state(Running, 1, true, false)), "a press or the clock moves on");
        assert!(began_segment(&state(Running, 2, true, false), &state(Running, 1, true, true)), "a press back, paused");
        assert!(!began_segment(&first, &state(Running, 0, true, true)), "a pause");
        assert!(!began_segment(&state(Running, 0, true, true), &first), "a resume");
        assert!(!began_segment(&first, &first.clone()), "an elimination or an undo");
        assert!(!began_segment(&first, &state(Finished, 0, true, false)), "the end");
        assert!(!began_segment(&waiting, &waiting.clone()), "an edit before the start");
    }
}
