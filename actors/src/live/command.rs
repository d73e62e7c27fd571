//! The live commands, and when they happened. A command made offline states the moment it
//! happened (`occurredAt`) and is applied as of that moment: the clock as it stood then, the
//! elimination stamped then. The rules here are pure: the actor hands in the time.

use chrono::{DateTime, TimeDelta, Utc};
use uuid::Uuid;

use crate::error::{LiveError, LiveResult, Refusal};
use crate::live::game::{Change, Game, Made, Seat};
use crate::rules::clock::{Direction, to_millis};

/// How far ahead of the server's clock an `occurredAt` may be: a device clock corrected by the
/// server time it last saw is off by a round trip or so.
pub const AHEAD_AT_MOST: TimeDelta = TimeDelta::seconds(5);
/// How old an `occurredAt` may be: a game day's evening without a connection.
pub const BACK_AT_MOST: TimeDelta = TimeDelta::hours(6);
/// The most commands one replayed queue may carry.
pub const QUEUE_AT_MOST: usize = 200;

/// The live commands of the contract, sent by `owner` or `td` (and handed between nodes in
/// this JSON form).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", content = "args", rename_all = "camelCase")]
pub enum Command {
    Start,
    Pause,
    Resume,
    Level(Direction),
    Eliminate(Uuid),
    Undo,
    Reorder(Vec<Uuid>),
    Reseat(Uuid, Seat),
    /// Several moves at once, all or none (a table broken).
    ReseatBatch(Vec<(Uuid, Seat)>),
    ConfirmResults,
}

impl Command {
    /// The command's name, as metrics and logs call it.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Start => "start",
            Self::Pause => "pause",
            Self::Resume => "resume",
            Self::Level(_) => "level",
            Self::Eliminate(_) => "eliminate",
            Self::Undo => "undo",
            Self::Reorder(_) => "reorder",
            Self::Reseat(..) => "reseat",
            Self::ReseatBatch(_) => "reseat_batch",
            Self::ConfirmResults => "confirm_results",
        }
    }
}

/// A command and the moment it happened, when its sender says (made offline); `None` means
/// as it arrives.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Timed {
    pub command: Command,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub occurred_at: Option<DateTime<Utc>>,
    /// The sender's idempotency key, kept with the command's outcome ([`crate::live::keys`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
}

impl Timed {
    /// `command`, made when `occurred_at` says (now when `None`), sent without a key.
    pub fn at(command: Command, occurred_at: Option<DateTime<Utc>>) -> Self {
        Self { command, occurred_at, key: None }
    }

    /// The same command sent with `key`.
    pub fn keyed(self, key: Option<String>) -> Self {
        Self { key, ..self }
    }
}

impl From<Command> for Timed {
    fn from(command: Command) -> Self {
        Self::at(command, None)
    }
}

/// What a tournament's actor is asked to do in one turn: one command, or a queue made
/// offline, applied in order and broadcast once.
#[derive(Clone, Debug, PartialEq)]
pub enum Order {
    One(Timed),
    Queue(Vec<Timed>),
}

impl Order {
    /// The order's name, as metrics and traces call it.
    pub fn name(&self) -> &'static str {
        match self {
            Self::One(timed) => timed.command.name(),
            Self::Queue(_) => "replay",
        }
    }
}

impl From<Command> for Order {
    fn from(command: Command) -> Self {
        Self::One(command.into())
    }
}

/// The moment a command is applied as of, at `now` on the server: its `occurredAt`, at most
/// `now` (a device a little ahead is taken as now), or `now` when it has none. Too far ahead
/// or too old is a bad field, refused before anything is decided.
pub fn applied_as_of(occurred_at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> LiveResult<DateTime<Utc>> {
    let Some(at) = occurred_at else { return Ok(now) };
    if at > now + AHEAD_AT_MOST {
        return Err(LiveError::invalid(
            "occurredAt",
            "is more than 5 seconds ahead of the server's clock; correct the device's clock by the server time",
        ));
    }
    if at < now - BACK_AT_MOST {
        return Err(LiveError::invalid("occurredAt", "is more than 6 hours old"));
    }
    Ok(to_millis(at.min(now)))
}

/// The change `timed` makes to `game` at `now` and who made it, or `None` with its maker
/// when it changes nothing (a pause while paused). A command stated to have happened earlier
/// than the last command applied conflicts with it (`CONFLICTING_CHANGE`); otherwise it is
/// decided on the game as it stood at that moment, and a clock it changes then runs on to
/// `now` as the timer would have moved it.
pub fn decide(game: &Game, timed: &Timed, by: Uuid, now: DateTime<Utc>) -> LiveResult<(Option<Change>, Made)> {
    let at = applied_as_of(timed.occurred_at, now)?;
    let made = Made { by, at, stated: timed.occurred_at.is_some() };
    if made.stated && game.last_command_at.is_some_and(|last| at < last) {
        return Err(LiveError::refused(
            Refusal::ConflictingChange,
            "another command was applied to the tournament after the moment this one happened; see the current state",
        ));
    }
    let then = game.as_of(at);
    let change = match &timed.command {
        Command::Pause => then.pause(at)?,
        Command::Resume => then.resume(at)?,
        Command::Level(direction) => Some(then.step_level(*direction, at)?),
        Command::Eliminate(registration_id) => Some(then.eliminate(*registration_id, at)?),
        Command::Undo => Some(then.undo()?),
        Command::Reorder(ids) => Some(then.reorder(ids)?),
        Command::Reseat(registration_id, seat) => then.reseat(*registration_id, *seat)?,
        Command::ReseatBatch(moves) => then.reseat_batch(moves)?,
        Command::Start | Command::ConfirmResults => None,
    };
    let change = change.map(|change| match change {
        Change::Clock { clock, action } => {
            Change::Clock { clock: clock.catch_up(&game.levels, now).unwrap_or(clock), action }
        }
        other => other,
    });
    Ok((change, made))
}

#[cfg(test)]
mod tests {
    use floor_entities::enums::TournamentStatus;

    use super::*;
    use crate::live::game::Player;
    use crate::rules::clock::Clock;
    use crate::rules::structure::Segment;

    fn at(minute: i64) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-28T18:00:00Z").map(|t| t.with_timezone(&Utc)).expect("a time")
            + TimeDelta::minutes(minute)
    }

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    /// 20-minute level, 10-minute break, 20-minute level, started at minute 0.
    fn game() -> Game {
        let level = |small_blind| Segment::Level {
            duration_min: 20,
            small_blind,
            big_blind: 2 * small_blind,
            ante: None,
            note: None,
        };
        let players = (1..=4)
            .map(|n| Player {
                registration_id: id(n),
                name: format!("P{n}"),
                seat: Seat { table_no: 1, seat_no: n as i32 },
                eliminated_at: None,
                created_at: at(-60),
            })
            .collect();
        Game {
            tournament_id: id(1000),
            status: TournamentStatus::Running,
            version: 1,
            clock: Some(Clock::start(at(0))),
            levels: vec![level(100), Segment::Break { duration_min: 10, note: None }, level(200)],
            chips_in_play: 4000,
            players,
            last_command_at: Some(at(0)),
        }
    }

    fn timed(command: Command, occurred_at: Option<DateTime<Utc>>) -> Timed {
        Timed::at(command, occurred_at)
    }

    /// Applies `commands` as they come, each decided at `now`; the clock's own moves are made
    /// before each, as the actor's timer makes them.
    fn run(game: &mut Game, commands: &[(Command, Option<i64>)], now: DateTime<Utc>) {
        for (command, minute) in commands {
            if let Some(moved) = game.elapsed_segments(now) {
                game.apply(&moved);
            }
            let (change, made) = decide(game, &timed(command.clone(), minute.map(at)), id(9), now).expect("applied");
            if let Some(change) = change {
                game.apply(&change);
                game.record(made);
            }
        }
    }

    #[test]
    fn a_pause_made_offline_lands_as_if_it_had_arrived_at_once() {
        // Pressed at 18:15, arrived at 18:27: the break that began at 18:20 is taken back.
        let mut late = game();
        run(&mut late, &[(Command::Pause, Some(15))], at(27));
        let mut at_once = game();
        run(&mut at_once, &[(Command::Pause, None)], at(15));
        assert_eq!(late.clock, at_once.clock);
        assert_eq!(late.clock, Some(Clock { current_level_idx: 0, level_started_at: at(0), paused_at: Some(at(15)) }));
        assert_eq!(late.last_command_at, Some(at(15)));
    }

    #[test]
    fn a_queue_lands_as_its_commands_would_have_at_their_times() {
        let queue = [
            (Command::Pause, 5),
            (Command::Resume, 8),
            (Command::Eliminate(id(2)), 12),
            (Command::Level(Direction::Next), 14),
            (Command::Eliminate(id(3)), 31),
            (Command::Undo, 33),
            (Command::Reseat(id(3), Seat { table_no: 1, seat_no: 9 }), 34),
            (Command::Pause, 52),
        ];
        let mut live = game();
        for (command, minute) in &queue {
            run(&mut live, &[(command.clone(), None)], at(*minute));
        }
        if let Some(moved) = live.elapsed_segments(at(70)) {
            live.apply(&moved);
        }
        let mut replayed = game();
        let stated: Vec<(Command, Option<i64>)> = queue.iter().map(|(c, m)| (c.clone(), Some(*m))).collect();
        run(&mut replayed, &stated, at(70));
        assert_eq!(replayed.clock, live.clock);
        assert_eq!(replayed.players, live.players);
        assert_eq!(replayed.last_command_at, live.last_command_at);
    }

    #[test]
    fn a_resume_made_offline_runs_the_clock_on_to_now() {
        let mut game = game();
        run(&mut game, &[(Command::Pause, None)], at(5));
        // Resumed at 10 (the level now ends at 25), arrived at 31: the break ran 25 to 35.
        run(&mut game, &[(Command::Resume, Some(10))], at(31));
        assert_eq!(game.clock, Some(Clock { current_level_idx: 1, level_started_at: at(25), paused_at: None }));
    }

    #[test]
    fn an_elimination_made_offline_is_stamped_when_it_happened() {
        let mut game = game();
        run(&mut game, &[(Command::Eliminate(id(1)), Some(12))], at(40));
        assert_eq!(game.players[0].eliminated_at, Some(at(12)));
        // A second stated at the same moment still comes after it, in the order of arrival.
        run(&mut game, &[(Command::Eliminate(id(2)), Some(12))], at(40));
        assert!(game.players[1].eliminated_at > game.players[0].eliminated_at);
        let places: Vec<(Uuid, i32)> =
            game.eliminations().iter().map(|(p, place)| (p.registration_id, *place)).collect();
        assert_eq!(places, vec![(id(2), 3), (id(1), 4)]);
    }

    #[test]
    fn a_command_that_happened_before_the_last_one_applied_conflicts() {
        let mut game = game();
        run(&mut game, &[(Command::Pause, None)], at(10));
        let refused = decide(&game, &timed(Command::Level(Direction::Next), Some(at(9))), id(9), at(11));
        assert!(matches!(refused, Err(LiveError::Refused { refusal: Refusal::ConflictingChange, .. })), "{refused:?}");
        // The same moment is not earlier; nor is a command without a stated moment.
        assert!(decide(&game, &timed(Command::Resume, Some(at(10))), id(9), at(11)).is_ok());
        assert!(decide(&game, &timed(Command::Resume, None), id(9), at(11)).is_ok());
    }

    #[test]
    fn the_clocks_own_moves_are_no_commands_to_conflict_with() {
        let mut game = game();
        if let Some(moved) = game.elapsed_segments(at(25)) {
            game.apply(&moved);
        }
        assert_eq!(game.last_command_at, Some(at(0)));
        assert!(decide(&game, &timed(Command::Pause, Some(at(19))), id(9), at(25)).is_ok());
    }

    #[test]
    fn times_too_far_ahead_or_too_old_are_bad_fields() {
        let now = at(100);
        let field = |occurred_at| match applied_as_of(Some(occurred_at), now) {
            Err(LiveError::Invalid { field, .. }) => Some(field),
            _ => None,
        };
        assert_eq!(field(now + TimeDelta::seconds(6)).as_deref(), Some("occurredAt"));
        assert_eq!(field(now - TimeDelta::hours(6) - TimeDelta::seconds(1)).as_deref(), Some("occurredAt"));
        assert_eq!(
            applied_as_of(Some(now + TimeDelta::seconds(5)), now).ok(),
            Some(now),
            "a device a little ahead is now"
        );
        assert_eq!(applied_as_of(Some(now - TimeDelta::hours(6)), now).ok(), Some(now - TimeDelta::hours(6)));
        assert_eq!(applied_as_of(None, now).ok(), Some(now));
    }

    #[test]
    fn a_refused_command_changes_nothing() {
        let mut game = game();
        let before = game.clone();
        assert!(decide(&game, &timed(Command::Level(Direction::Prev), Some(at(3))), id(9), at(5)).is_err());
        run(&mut game, &[(Command::Pause, Some(3)), (Command::Pause, Some(4))], at(5));
        assert_eq!(game.version, before.version + 1, "a second pause changes nothing");
    }
}
