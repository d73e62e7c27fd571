//! Floor: one service that runs offline sport-poker tournaments for many clubs, from
//! registration to a live, server-clocked game day, confirmed results and one rating.

pub mod accounts;
pub mod app;
pub mod audit;
pub mod auth;
pub mod bus;
pub mod cli;
pub mod client_address;
pub mod clubs;
pub mod config;
pub mod dashboard;
pub mod db;
pub mod db_unreachable;
pub mod db_watch;
pub mod domain;
pub mod erasures;
pub mod error;
pub mod http;
pub mod input;
pub mod jobs;
pub mod leaderboards;
pub mod live;
pub mod metrics;
pub mod notifications;
pub mod objects_only;
pub mod outbound;
pub mod places;
pub mod players;
pub mod rating;
pub mod read_cache;
pub mod release;
pub mod schema_formats;
pub mod seasons;
pub mod seed;
pub mod startup;
pub mod storage;
pub mod strikes;
pub mod telemetry;
pub mod tournaments;
pub mod trace_context;
pub mod uploads;
#[cfg(test)]
mod wire_compat;

pub use app::AppState;
pub use config::Config;
pub use startup::Application;
