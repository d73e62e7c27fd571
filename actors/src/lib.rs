//! The live side of Floor: one supervised actor per live tournament (the live-engine issue
//! builds it), and the pure rules of the game that the actors and the HTTP layer share.

pub mod rules;
