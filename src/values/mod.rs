//! Validated values of the domain, parsed once at the edge.
pub mod local_time;
pub mod phone;

pub use phone::Phone;
