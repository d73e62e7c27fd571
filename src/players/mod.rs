//! The player's one home, as [`crate::tournaments`] is the tournament's: signing in, and the
//! account made for a phone the first time ([`signup`]), the consent it gives ([`consent`]),
//! whom it follows ([`follows`]), two accounts of one person made one ([`merge`]), the
//! calendar it subscribes to ([`calendar`]), and everything kept about it, as one document
//! ([`export`]).

pub mod calendar;
pub mod consent;
pub mod export;
pub mod follows;
pub mod merge;
pub mod signup;
