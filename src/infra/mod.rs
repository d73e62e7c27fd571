//! The means the domain works through: the database and its health, the bus between nodes,
//! object storage, outbound calls, configuration, the error type of the contract, metrics and
//! traces, and what is read off a request before the domain sees it (the client's address,
//! JSON objects, counted connection slots). Nothing here knows a tournament.

pub mod bus;
pub mod client_address;
pub mod config;
pub mod connection_slots;
pub mod db;
pub mod db_unreachable;
pub mod db_watch;
pub mod error;
pub mod input;
pub mod metrics;
pub mod node_key;
pub mod objects_only;
pub mod outbound;
pub mod release;
pub mod schema_formats;
pub mod storage;
pub mod telemetry;
pub mod trace_context;
#[cfg(test)]
pub(crate) mod wire_compat;
