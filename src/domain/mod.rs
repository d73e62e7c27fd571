//! The domain: clubs, tournaments, players and their accounts, the live game day, ratings,
//! notifications and the background jobs. It speaks to the database and the other nodes
//! through [`crate::infra`] and never to HTTP: the routes in [`crate::http`] call it.

pub mod accounts;
pub mod audit;
pub mod auth;
pub mod clubs;
pub mod dashboard;
pub mod erasures;
pub mod jobs;
pub mod leaderboards;
pub mod live;
pub mod notifications;
pub mod players;
pub mod rating;
pub mod seasons;
pub mod seed;
pub mod strikes;
pub mod tournaments;
pub mod uploads;
