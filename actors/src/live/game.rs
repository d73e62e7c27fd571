//! The live game of one tournament as its actor holds it in memory: the clock, the seated
//! players and their eliminations. Each command checks the rules against this model and
//! yields a `Change`; the store persists the change, then the actor applies it here.

use std::borrow::Cow;

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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
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
    /// The moment the latest command was applied as of (its `occurredAt`, or its arrival); the
    /// clock's own moves do not count. A command stated to have happened earlier conflicts.
    pub last_command_at: Option<DateTime<Utc>>,
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

/// Who made a change and the moment it is applied as of; `None` for the clock's own moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Made {
    pub by: Uuid,
    pub at: DateTime<Utc>,
    /// Whether the sender stated the moment (`occurredAt`), rather than it being the arrival.
    pub stated: bool,
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
    /// Several players moved at once (a table broken): every move or none.
    ReseatBatch {
        moves: Vec<(Uuid, Seat)>,
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
            Self::ReseatBatch { .. } => "tournament.reseat_batch",
        }
    }

    /// The players this change seats elsewhere, each with where they sat and where they go
    /// now, as judged against `before`, the game it was decided on. An undo moves its player
    /// only when they come back to another seat than the one they left.
    pub fn moves(&self, before: &Game) -> Vec<(Uuid, Seat, Seat)> {
        let moved = |registration_id: Uuid, to: Seat| {
            let from = before.player(registration_id).ok()?.seat;
            (from != to).then_some((registration_id, from, to))
        };
        match self {
            Self::Undo { registration_id, seat } | Self::Reseat { registration_id, seat } => {
                moved(*registration_id, *seat).into_iter().collect()
            }
            Self::ReseatBatch { moves } => moves.iter().filter_map(|(id, seat)| moved(*id, *seat)).collect(),
            Self::Clock { .. } | Self::Eliminate { .. } | Self::Reorder { .. } => Vec::new(),
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
        self.check_seat(seat, "")?;
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

    /// Moves several players still in at once: all of them or none. Each player and each
    /// destination appears once; a destination may be a seat another player of the batch
    /// leaves (two players may swap). A move to the seat a player already holds is dropped;
    /// `None` when nothing is left to move.
    pub fn reseat_batch(&self, moves: &[(Uuid, Seat)]) -> LiveResult<Option<Change>> {
        self.require_running()?;
        if moves.is_empty() {
            return Err(LiveError::invalid("moves", "must name at least one move"));
        }
        let (mut players, mut seats) = (std::collections::HashSet::new(), std::collections::HashSet::new());
        for (index, (registration_id, seat)) in moves.iter().enumerate() {
            self.check_seat(*seat, &format!("moves[{index}]."))?;
            if !players.insert(*registration_id) {
                return Err(LiveError::invalid(format!("moves[{index}].registrationId"), "names a player twice"));
            }
            if !seats.insert(*seat) {
                return Err(LiveError::invalid(format!("moves[{index}]"), "sends two players to one seat"));
            }
            if !self.player(*registration_id)?.is_alive() {
                return Err(LiveError::refused(Refusal::AlreadyEliminated, "an eliminated player has no seat"));
            }
        }
        let moving: Vec<(Uuid, Seat)> = moves
            .iter()
            .copied()
            .filter(|(registration_id, seat)| self.player(*registration_id).is_ok_and(|player| player.seat != *seat))
            .collect();
        // A destination is free when nobody still in sits there, or its player leaves it in this batch.
        let leaving: std::collections::HashSet<Uuid> = moving.iter().map(|(id, _)| *id).collect();
        for (_, seat) in &moving {
            if self.alive().any(|player| player.seat == *seat && !leaving.contains(&player.registration_id)) {
                return Err(LiveError::refused(
                    Refusal::SeatTaken,
                    format!("table {} seat {} is taken by a player who stays", seat.table_no, seat.seat_no),
                ));
            }
        }
        Ok((!moving.is_empty()).then_some(Change::ReseatBatch { moves: moving }))
    }

    /// A seat of a table the tournament has; `prefix` names the request's field.
    fn check_seat(&self, seat: Seat, prefix: &str) -> LiveResult<()> {
        if !(1..=self.table_limit()).contains(&seat.table_no) {
            return Err(LiveError::invalid(
                format!("{prefix}tableNo"),
                format!("must be from 1 to {}", self.table_limit()),
            ));
        }
        if !(1..=SEATS_PER_TABLE as i32).contains(&seat.seat_no) {
            return Err(LiveError::invalid(format!("{prefix}seatNo"), format!("must be from 1 to {SEATS_PER_TABLE}")));
        }
        Ok(())
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

    /// The players still in, where they sit, as the seating rules take them.
    fn seated(&self) -> Vec<SeatedPlayer<Uuid>> {
        self.alive()
            .map(|player| SeatedPlayer {
                player: player.registration_id,
                table_no: player.seat.table_no,
                seat_no: player.seat.seat_no,
            })
            .collect()
    }

    /// The hint after an elimination; the server never moves anyone by itself.
    pub fn balance(&self) -> Option<BalanceHint<Uuid>> {
        balance_hint(&self.seated())
    }

    /// The game as it stood at `at`, for a command stated to have happened then: the clock
    /// without the segments it moved on to since (see [`Clock::as_of`]). Borrowed when that is
    /// the game as it is (a command of now, or of a moment in the segment running now).
    pub fn as_of(&self, at: DateTime<Utc>) -> Cow<'_, Game> {
        let clock = self.clock.map(|clock| clock.as_of(&self.levels, at));
        if clock == self.clock { Cow::Borrowed(self) } else { Cow::Owned(Game { clock, ..self.clone() }) }
    }

    /// Notes the command a persisted change came from.
    pub fn record(&mut self, made: Made) {
        self.last_command_at = Some(self.last_command_at.map_or(made.at, |last| last.max(made.at)));
    }

    /// Applies persisted changes in order, each with the command it came from, if any.
    pub fn apply_all(&mut self, changes: &[(Change, Option<Made>)]) {
        for (change, made) in changes {
            self.apply(change);
            if let Some(made) = made {
                self.record(*made);
            }
        }
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
            Change::ReseatBatch { moves } => {
                for (registration_id, seat) in moves {
                    self.update(*registration_id, |player| player.seat = *seat);
                }
            }
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
            last_command_at: Some(at(0)),
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

    fn seat(table_no: i32, seat_no: i32) -> Seat {
        Seat { table_no, seat_no }
    }

    #[test]
    fn a_batch_moves_everyone_it_names_in_one_change() {
        // 18 players: table 1 holds 1, 3, 5, … (seats 1-9), table 2 holds 2, 4, 6, ….
        let mut game = game(18);
        eliminate(&mut game, 2, 1);
        eliminate(&mut game, 4, 2);
        let change =
            game.reseat_batch(&[(id(1), seat(2, 1)), (id(3), seat(2, 2))]).expect("free seats").expect("moves");
        assert_eq!(change.moves(&game), vec![(id(1), seat(1, 1), seat(2, 1)), (id(3), seat(1, 2), seat(2, 2))]);
        game.apply(&change);
        assert_eq!(game.player(id(1)).expect("seated").seat, seat(2, 1));
        assert_eq!(game.player(id(3)).expect("seated").seat, seat(2, 2));
        assert_eq!(game.version, 4, "one version for the whole batch");
    }

    #[test]
    fn a_batch_may_swap_two_players() {
        let game = game(18);
        let change = game.reseat_batch(&[(id(1), seat(2, 1)), (id(2), seat(1, 1))]).expect("a swap").expect("moves");
        assert_eq!(change, Change::ReseatBatch { moves: vec![(id(1), seat(2, 1)), (id(2), seat(1, 1))] });
    }

    #[test]
    fn a_batch_is_refused_whole_when_one_move_is_wrong() {
        let mut game = game(18);
        eliminate(&mut game, 2, 1);
        // Player 1 to a free seat, player 3 to the seat of player 4, who stays.
        let taken = game.reseat_batch(&[(id(1), seat(2, 1)), (id(3), seat(2, 2))]);
        assert_eq!(refused(taken), Refusal::SeatTaken);
        assert_eq!(refused(game.reseat_batch(&[(id(2), seat(1, 1))])), Refusal::AlreadyEliminated);
        assert_eq!(refused(game.reseat_batch(&[(id(99), seat(2, 1))])), Refusal::NotFound);
        let invalid = |moves: &[(Uuid, Seat)]| matches!(game.reseat_batch(moves), Err(LiveError::Invalid { .. }));
        assert!(invalid(&[]), "an empty batch");
        assert!(invalid(&[(id(1), seat(2, 1)), (id(1), seat(2, 1))]), "a player twice");
        assert!(invalid(&[(id(1), seat(2, 1)), (id(3), seat(2, 1))]), "two players to one seat");
        assert!(invalid(&[(id(1), seat(3, 1))]), "a table the tournament does not have");
        assert!(invalid(&[(id(1), seat(2, 10))]), "a seat past nine");
    }

    #[test]
    fn a_batch_that_moves_nobody_changes_nothing() {
        let game = game(18);
        assert_eq!(game.reseat_batch(&[(id(1), seat(1, 1))]).expect("no move"), None);
    }

    #[test]
    fn an_undo_moves_its_player_only_into_another_seat() {
        let mut game = game(18);
        eliminate(&mut game, 1, 1);
        let undo = game.undo().expect("undo");
        assert!(undo.moves(&game).is_empty(), "back into the seat they left");
        let reseat = game.reseat(id(3), seat(1, 1)).expect("free").expect("a move");
        game.apply(&reseat);
        let undo = game.undo().expect("undo");
        assert_eq!(undo.moves(&game), vec![(id(1), seat(1, 1), seat(1, 2))]);
    }
}
