//! The live engine: one supervised actor per live tournament, the game it owns, the
//! LiveState it publishes, and the ports it persists and broadcasts through.

pub mod actor;
pub mod command;
pub mod fanout;
pub mod game;
pub mod keys;
pub mod ports;
pub mod registry;
pub mod state;

#[cfg(test)]
mod clock_tests;
#[cfg(test)]
mod keys_tests;
#[cfg(test)]
mod ownership_tests;
#[cfg(test)]
mod registry_tests;

pub use actor::{Outcome, TournamentActor, TournamentMsg, Traced};
pub use command::{Command, Order, Timed};
pub use fanout::Fanout;
pub use game::{Change, ClockAction, Game, Made, Player, Seat};
pub use keys::{Answer, Elimination, First, KeyRecord, Recorded};
pub use ports::{Broadcaster, Keys, LiveStore, Owner, Persisted, Settled};
pub use registry::{CHECK_WITHIN, Registry};
pub use state::{LiveState, Snapshot};
