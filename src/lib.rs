//! Floor: one service that runs offline sport-poker tournaments for many clubs, from
//! registration to a live, server-clocked game day, confirmed results and one rating.
//!
//! The crate is built in layers, each importing only the layers below it (the test
//! `layers::each_layer_imports_only_the_layers_below_it` holds it to that):
//!
//! 1. the command line and the application's assembly: [`cli`], [`startup`] (and `main.rs`);
//! 2. [`http`]: the contract's routes, one module per resource, and the state they share;
//! 3. [`domain`]: what a club, a tournament and a player are and do, the live engine among them;
//! 4. [`infra`]: the database, the bus between nodes, configuration, telemetry and the other
//!    means the domain works through;
//! 5. [`values`]: validated values (a phone number, a local time) that everything above reads.

pub mod cli;
pub mod domain;
pub mod http;
pub mod infra;
pub mod startup;
pub mod values;

pub use http::state::AppState;
pub use infra::config::Config;
pub use startup::Application;
