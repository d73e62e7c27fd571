//! The player's one home, as [`crate::domain::tournaments`] is the tournament's: signing in, and the
//! account made for a phone the first time ([`signup`]), the consent it gives ([`consent`]),
//! whom it follows ([`follows`]), the devices its pushes go to ([`devices`]), two accounts of
//! one person made one ([`merge`]), the calendar it subscribes to ([`calendar`]), everything
//! kept about it, as one document ([`export`]), and its deletion ([`deletion`]).

pub mod calendar;
pub mod consent;
pub mod deletion;
pub mod devices;
pub mod export;
pub mod follows;
pub mod merge;
pub mod signup;
