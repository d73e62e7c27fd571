//! The live game of one tournament as its actor holds it in memory: the clock, the seated
//! players and their eliminations. Each command checks the rules against this model and
//! yields a `Change`; the store persists the change, then the actor applies it here.

use chrono::{DateTime, Utc};
use floor_entities::enums::TournamentStatus;
use uuid::Uuid;

use crate::error::{LiveError, LiveResult, Refusal};
use crate::rules::balance::{BalanceHint, SeatedPlayer, balance_hint};
use crate::rules::clock::{Clock, ClockError, Direction};
use crate::rules::places::{next_elimination_stamp, place_at_elimination};
use crate::rules::seating::{SEATS_PER_TABLE, table_count};
use crate::rules::structure::Segment;

/// A table and a seat at it, both from 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Seat {
    pub table_no: i32,
    pub seat_no: i32,
}

/// A player seated at start. Players who arrive later (walk-ins after start) never appear.
#[derive(Clone, Debug, PartialEq)]
pub struct Player {
    pub registration_id: Uuid,
    /// The nickname when set, else the name; a guest's walk-in name. Never a phone.
    pub name: String,
    /// Where the player sits; an eliminated player keeps the last seat, for undo.
    pub seat: Seat,
    /// Set at elimination (strictly increasing within the tournament), cleared by undo.
    pub eliminated_at: Option<DateTime<Utc>>,
    /// When the registration was made (the tie-break of the place order).
    pub created_at: DateTime<Utc>,
}

impl Player {
    pub fn is_alive(&self) -> bool {
        self.eliminated_at.is_none()
    }
}

/// The whole live game: everything a LiveState shows, rebuildable from the database.
#[derive(Clone, Debug, PartialEq)]
pub struct Game {
    pub tournament_id: Uuid,
    pub status: TournamentStatus,
    /// Grows by one with every change; persisted, so a rebuilt actor continues the sequence.
    pub version: i64,
    /// Present from start on.
    pub clock: Option<Clock>,
    /// The structure the clock runs over (the template's until start, then the copy).
    pub levels: Vec<Segment>,
    pub chips_in_play: i64,
    /// Everyone seated at start, in seating order (table, then seat).
    pub players: Vec<Player>,
}

/// What the clock operation was, for the audit record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockAction {
    Pause,
    Resume,
    Level(Direction),
    /// The segment's time ran out and the actor moved on by itself.
    SegmentEnded,
}

impl ClockAction {
    /// The audit action name.
    pub fn audit_action(self) -> &'static str {
        match self {
            Self::Pause => "tournament.pause",
            Self::Resume => "tournament.resume",
            Self::Level(Direction::Next) => "tournament.level_next",
            Self::Level(Direction::Prev) => "tournament.level_prev",
            Self::SegmentEnded => "tournament.level_elapsed",
        }
    }
}

/// One accepted change of a running game: what the store writes and the actor applies.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    Clock {
        clock: Clock,
        action: ClockAction,
    },
    Eliminate {
        registration_id: Uuid,
        eliminated_at: DateTime<Utc>,
        place: i32,
    },
    /// Brings the last eliminated player back, into `seat`.
    Undo {
        registration_id: Uuid,
        seat: Seat,
    },
    /// New elimination stamps, handed out in the order the club gave.
    Reorder {
        stamps: Vec<(Uuid, DateTime<Utc>)>,
    },
    Reseat {
        registration_id: Uuid,
        seat: Seat,
    },
}

impl Change {
    /// The audit action name.
    pub fn audit_action(&self) -> &'static str {
        match self {
            Self::Clock { action, .. } => action.audit_action(),
            Self::Eliminate { .. } => "tournament.eliminate",
            Self::Undo { .. } => "tournament.undo_elimination",
            Self::Reorder { .. } => "tournament.reorder_eliminations",
            Self::Reseat { .. } => "tournament.reseat",
        }
    }
}

impl Game {
    pub fn alive(&self) -> impl Iterator<Item = &Player> {
        self.players.iter().filter(|player| player.is_alive())
    }

    pub fn remaining(&self) -> usize {
        self.alive().count()
    }

    fn player(&self, registration_id: Uuid) -> LiveResult<&Player> {
        self.players
            .iter()
            .find(|player| player.registration_id == registration_id)
            .ok_or_else(|| LiveError::not_found("seated player with this registration"))
    }

    fn require_running(&self) -> LiveResult<()> {
        if self.status == TournamentStatus::Running { Ok(()) } else { Err(LiveError::not_running()) }
    }

    fn running_clock(&self) -> LiveResult<Clock> {
        self.require_running()?;
        self.clock.ok_or_else(|| LiveError::Internal(anyhow::anyhow!("a running tournament has no clock")))
    }

    /// Pausing a paused clock changes nothing (`None`).
    pub fn pause(&self, now: DateTime<Utc>) -> LiveResult<Option<Change>> {
        let clock = self.running_clock()?;
        Ok(clock.pause(now).map(|clock| Change::Clock { clock, action: ClockAction::Pause }))
    }

    /// Resuming a running clock changes nothing (`None`).
    pub fn resume(&self, now: DateTime<Utc>) -> LiveResult<Option<Change>> {
        let clock = self.running_clock()?;
        Ok(clock.resume(now).map(|clock| Change::Clock { clock, action: ClockAction::Resume }))
    }

    /// Exactly one step; past either end is `INVALID_LEVEL`.
    pub fn step_level(&self, direction: Direction, now: DateTime<Utc>) -> LiveResult<Change> {
        let clock = self.running_clock()?;
        match clock.step(direction, &self.levels, now) {
            Ok(clock) => Ok(Change::Clock { clock, action: ClockAction::Level(direction) }),
            Err(ClockError::InvalidLevel) => {
                Err(LiveError::refused(Refusal::InvalidLevel, "there is no segment in that direction"))
            }
        }
    }

    /// The clock after every segment that ran out by `now`; `None` when nothing ran out.
    pub fn elapsed_segments(&self, now: DateTime<Utc>) -> Option<Change> {
        if self.status != TournamentStatus::Running {
            return None;
        }
        let clock = self.clock.as_ref()?.catch_up(&self.levels, now)?;
        Some(Change::Clock { clock, action: ClockAction::SegmentEnded })
    }

    /// When the current segment runs out, while the clock runs.
    pub fn next_segment_end(&self) -> Option<DateTime<Utc>> {
        if self.status != TournamentStatus::Running {
            return None;
        }
        self.clock.as_ref()?.segment_ends_at(&self.levels)
    }

    /// Eliminates a player still in: place = players in before it.
    pub fn eliminate(&self, registration_id: Uuid, now: DateTime<Utc>) -> LiveResult<Change> {
        self.require_running()?;
        let player = self.player(registration_id)?;
        if !player.is_alive() {
            return Err(LiveError::refused(Refusal::AlreadyEliminated, "the player is already eliminated"));
        }
        let remaining = self.remaining();
        if remaining <= 1 {
            return Err(LiveError::refused(Refusal::InvalidStatus, "the last player in is the winner"));
        }
        let last = self.players.iter().filter_map(|player| player.eliminated_at).max();
        Ok(Change::Eliminate {
            registration_id,
            eliminated_at: next_elimination_stamp(now, last),
            place: place_at_elimination(remaining),
        })
    }

    /// Brings back the last eliminated player: into the old seat when it is free, else the
    /// first free seat of the same table, else of the lowest-numbered table with room.
    pub fn undo(&self) -> LiveResult<Change> {
        self.require_running()?;
        let last = self
            .players
            .iter()
            .filter(|player| player.eliminated_at.is_some())
            .max_by_key(|player| player.eliminated_at)
            .ok_or_else(|| LiveError::refused(Refusal::NothingToUndo, "no elimination to undo"))?;
        let seat = if self.is_free(last.seat) {
            last.seat
        } else {
            std::iter::once(last.seat.table_no)
                .chain(1..=self.table_limit())
                .find_map(|table_no| self.first_free_seat(table_no))
                .ok_or_else(|| LiveError::Internal(anyhow::anyhow!("every table is full")))?
        };
        Ok(Change::Undo { registration_id: last.registration_id, seat })
    }

    /// Hands the eliminated players' stamps, sorted, out in the given order (first =
    /// eliminated earliest); the set of places stays the same.
    pub fn reorder(&self, registration_ids: &[Uuid]) -> LiveResult<Change> {
        self.require_running()?;
        if registration_ids.len() < 2 {
            return Err(LiveError::invalid("registrationIds", "must name at least two eliminated players"));
        }
        let mut seen = std::collections::HashSet::new();
        let mut stamps = Vec::with_capacity(registration_ids.len());
        for id in registration_ids {
            if !seen.insert(*id) {
                return Err(LiveError::invalid("registrationIds", "names a player twice"));
            }
            let player = self.player(*id)?;
            let stamp = player.eliminated_at.ok_or_else(|| {
                LiveError::refused(Refusal::InvalidStatus, "a player in the list is still in the game")
            })?;
            stamps.push(stamp);
        }
        stamps.sort();
        Ok(Change::Reorder { stamps: registration_ids.iter().copied().zip(stamps).collect() })
    }

    /// Moves a player still in to a free seat.
    pub fn reseat(&self, registration_id: Uuid, seat: Seat) -> LiveResult<Option<Change>> {
        self.require_running()?;
        if !(1..=self.table_limit()).contains(&seat.table_no) {
            return Err(LiveError::invalid("tableNo", format!("must be from 1 to {}", self.table_limit())));
        }
        if !(1..=SEATS_PER_TABLE as i32).contains(&seat.seat_no) {
            return Err(LiveError::invalid("seatNo", format!("must be from 1 to {SEATS_PER_TABLE}")));
        }
        let player = self.player(registration_id)?;
        if !player.is_alive() {
            return Err(LiveError::refused(Refusal::AlreadyEliminated, "an eliminated player has no seat"));
        }
        if player.seat == seat {
            return Ok(None);
        }
        if !self.is_free(seat) {
            return Err(LiveError::refused(Refusal::SeatTaken, "another player sits there"));
        }
        Ok(Some(Change::Reseat { registration_id, seat }))
    }

    /// Tables may be numbered up to the count the start opened.
    fn table_limit(&self) -> i32 {
        let opened = table_count(self.players.len()) as i32;
        self.players.iter().map(|player| player.seat.table_no).max().unwrap_or(0).max(opened)
    }

    fn is_free(&self, seat: Seat) -> bool {
        self.alive().all(|player| player.seat != seat)
    }

    fn first_free_seat(&self, table_no: i32) -> Option<Seat> {
        (1..=SEATS_PER_TABLE as i32).map(|seat_no| Seat { table_no, seat_no }).find(|seat| self.is_free(*seat))
    }

    /// The hint after an elimination; the server never moves anyone by itself.
    pub fn balance(&self) -> Option<BalanceHint<Uuid>> {
        let alive: Vec<SeatedPlayer<Uuid>> = self
            .alive()
            .map(|player| SeatedPlayer {
                player: player.registration_id,
                table_no: player.seat.table_no,
                seat_no: player.seat.seat_no,
            })
            .collect();
        balance_hint(&alive)
    }

    /// Applies a persisted change and moves the version on.
    pub fn apply(&mut self, change: &Change) {
        match change {
            Change::Clock { clock, .. } => self.clock = Some(*clock),
            Change::Eliminate { registration_id, eliminated_at, .. } => {
                self.update(*registration_id, |player| player.eliminated_at = Some(*eliminated_at));
            }
            Change::Undo { registration_id, seat } => self.update(*registration_id, |player| {
                player.eliminated_at = None;
                player.seat = *seat;
            }),
            Change::Reorder { stamps } => {
                for (registration_id, stamp) in stamps {
                    self.update(*registration_id, |player| player.eliminated_at = Some(*stamp));
                }
            }
            Change::Reseat { registration_id, seat } => self.update(*registration_id, |player| player.seat = *seat),
        }
        self.version += 1;
    }

    fn update(&mut self, registration_id: Uuid, edit: impl FnOnce(&mut Player)) {
        if let Some(player) = self.players.iter_mut().find(|player| player.registration_id == registration_id) {
            edit(player);
        }
    }

    /// The eliminated players with their places, best place first: the place of a player is
    /// the number of players in when they fell, which the stamp order gives.
    pub fn eliminations(&self) -> Vec<(&Player, i32)> {
        let mut fallen: Vec<&Player> = self.players.iter().filter(|player| !player.is_alive()).collect();
        fallen.sort_by_key(|player| std::cmp::Reverse(player.eliminated_at));
        let remaining = self.remaining();
        fallen.into_iter().enumerate().map(|(index, player)| (player, (remaining + index + 1) as i32)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(minute: i64) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-22T18:00:00Z").map(|t| t.with_timezone(&Utc)).expect("a time")
            + chrono::TimeDelta::minutes(minute)
    }

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    /// A running game of players `1..=count`, seated round-robin over the tables 9 a table.
    fn game(count: u128) -> Game {
        let tables = table_count(count as usize) as i32;
        let players = (1..=count)
            .map(|n| {
                let i = (n - 1) as i32;
                Player {
                    registration_id: id(n),
                    name: format!("P{n}"),
                    seat: Seat { table_no: i % tables + 1, seat_no: i / tables + 1 },
                    eliminated_at: None,
                    created_at: at(0),
                }
            })
            .collect();
        Game {
            tournament_id: id(1000),
            status: TournamentStatus::Running,
            version: 1,
            clock: Some(Clock { current_level_idx: 0, level_started_at: at(0), paused_at: None }),
            levels: vec![Segment::Level { duration_min: 20, small_blind: 100, big_blind: 200, ante: None, note: None }],
            chips_in_play: 1000,
            players,
        }
    }

    fn refused(result: LiveResult<impl std::fmt::Debug>) -> Refusal {
        match result {
            Err(LiveError::Refused { refusal, .. }) => refusal,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    fn eliminate(game: &mut Game, n: u128, minute: i64) -> Change {
        let change = game.eliminate(id(n), at(minute)).expect("eliminated");
        game.apply(&change);
        change
    }

    #[test]
    fn the_place_is_the_players_still_in_and_stamps_strictly_increase() {
        let mut game = game(4);
        let first = eliminate(&mut game, 1, 5);
        let second = eliminate(&mut game, 2, 5);
        let (
            Change::Eliminate { place: p1, eliminated_at: t1, .. },
            Change::Eliminate { place: p2, eliminated_at: t2, .. },
        ) = (first, second)
        else {
            panic!("eliminations")
        };
        assert_eq!((p1, p2), (4, 3));
        assert!(t2 > t1, "the same minute still gives a later stamp");
        assert_eq!(refused(game.eliminate(id(1), at(6))), Refusal::AlreadyEliminated);
        eliminate(&mut game, 3, 7);
        assert_eq!(refused(game.eliminate(id(4), at(8))), Refusal::InvalidStatus, "the last one in is the winner");
        assert_eq!(refused(game.eliminate(id(99), at(8))), Refusal::NotFound);
        let places: Vec<(Uuid, i32)> =
            game.eliminations().iter().map(|(p, place)| (p.registration_id, *place)).collect();
        assert_eq!(places, vec![(id(3), 2), (id(2), 3), (id(1), 4)]);
        assert_eq!(game.version, 4);
    }

    #[test]
    fn nothing_happens_outside_a_running_game() {
        let mut game = game(3);
        game.status = TournamentStatus::Finished;
        assert_eq!(refused(game.eliminate(id(1), at(1))), Refusal::TournamentNotRunning);
        assert_eq!(refused(game.pause(at(1))), Refusal::TournamentNotRunning);
        assert_eq!(refused(game.undo()), Refusal::TournamentNotRunning);
        assert!(game.elapsed_segments(at(100)).is_none());
        assert!(game.next_segment_end().is_none());
    }

    #[test]
    fn undo_returns_the_last_one_to_the_old_seat_or_the_first_free_one() {
        let mut game = game(18);
        assert_eq!(refused(game.undo()), Refusal::NothingToUndo);
        eliminate(&mut game, 1, 1); // table 1, seat 1
        eliminate(&mut game, 3, 2); // table 1, seat 2
        assert_eq!(
            game.undo().expect("undo"),
            Change::Undo { registration_id: id(3), seat: Seat { table_no: 1, seat_no: 2 } }
        );
        // Player 5 (table 1, seat 3) takes seat 2; the undo finds the first free seat: 1.
        let reseat = game.reseat(id(5), Seat { table_no: 1, seat_no: 2 }).expect("free").expect("a move");
        game.apply(&reseat);
        assert_eq!(
            game.undo().expect("undo"),
            Change::Undo { registration_id: id(3), seat: Seat { table_no: 1, seat_no: 1 } }
        );
    }

    #[test]
    fn undo_goes_to_the_lowest_table_with_room_when_its_own_is_full() {
        let mut game = game(18);
        eliminate(&mut game, 1, 1); // table 1, seat 1
        eliminate(&mut game, 2, 2); // table 2, seat 1
        // Table 1 fills up again: player 4 (table 2, seat 2) moves into seat 1 of table 1.
        let reseat = game.reseat(id(4), Seat { table_no: 1, seat_no: 1 }).expect("free").expect("a move");
        game.apply(&reseat);
        let undo = game.undo().expect("undo");
        game.apply(&undo);
        assert_eq!(undo, Change::Undo { registration_id: id(2), seat: Seat { table_no: 2, seat_no: 1 } });
        // Now player 1 comes back: table 1 is full, table 2 has seat 2 free.
        assert_eq!(
            game.undo().expect("undo"),
            Change::Undo { registration_id: id(1), seat: Seat { table_no: 2, seat_no: 2 } }
        );
    }

    #[test]
    fn reorder_hands_the_sorted_stamps_out_in_the_given_order() {
        let mut game = game(4);
        eliminate(&mut game, 1, 1);
        eliminate(&mut game, 2, 2);
        let change = game.reorder(&[id(2), id(1)]).expect("reordered");
        game.apply(&change);
        let places: Vec<(Uuid, i32)> =
            game.eliminations().iter().map(|(p, place)| (p.registration_id, *place)).collect();
        assert_eq!(places, vec![(id(1), 3), (id(2), 4)], "the set of places stays, the holders swap");
        assert!(matches!(game.reorder(&[id(1)]), Err(LiveError::Invalid { .. })));
        assert!(matches!(game.reorder(&[id(1), id(1)]), Err(LiveError::Invalid { .. })));
        assert_eq!(refused(game.reorder(&[id(1), id(3)])), Refusal::InvalidStatus);
        assert_eq!(refused(game.reorder(&[id(1), id(9)])), Refusal::NotFound);
    }

    #[test]
    fn reseat_needs_a_real_free_seat_and_a_player_still_in() {
        let mut game = game(10); // two tables
        assert!(matches!(game.reseat(id(1), Seat { table_no: 3, seat_no: 1 }), Err(LiveError::Invalid { .. })));
        assert!(matches!(game.reseat(id(1), Seat { table_no: 1, seat_no: 0 }), Err(LiveError::Invalid { .. })));
        assert!(matches!(game.reseat(id(1), Seat { table_no: 1, seat_no: 10 }), Err(LiveError::Invalid { .. })));
        assert_eq!(refused(game.reseat(id(1), Seat { table_no: 2, seat_no: 1 })), Refusal::SeatTaken);
        assert_eq!(
            game.reseat(id(1), Seat { table_no: 1, seat_no: 1 }).expect("same seat"),
            None,
            "staying is no change"
        );
        eliminate(&mut game, 2, 1);
        assert_eq!(refused(game.reseat(id(2), Seat { table_no: 1, seat_no: 9 })), Refusal::AlreadyEliminated);
        // The seat of an eliminated player is free.
        assert!(game.reseat(id(1), Seat { table_no: 2, seat_no: 1 }).expect("free").is_some());
    }

    #[test]
    fn the_balance_hint_sees_only_players_still_in() {
        let mut game = game(12); // 6 and 6
        eliminate(&mut game, 2, 1);
        assert_eq!(game.balance(), None);
        eliminate(&mut game, 4, 2);
        assert!(matches!(game.balance(), Some(BalanceHint::Move { .. })));
    }
}
