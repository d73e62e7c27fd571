//! The live side of Floor: one supervised actor per live tournament, and the pure rules of
//! the game that the actors and the HTTP layer share.

pub mod error;
pub mod live;
pub mod rounds;
pub mod rules;
