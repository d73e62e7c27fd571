//! The player's one home, as [`crate::tournaments`] is the tournament's: an account made for a
//! phone ([`signup`]) and found again ([`accounts`]), whom it follows ([`follows`]), two
//! accounts of one person made one ([`merge`]), the calendar it subscribes to ([`calendar`]).

pub mod calendar;
pub mod follows;
pub mod merge;
pub mod signup;
