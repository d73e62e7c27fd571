//! The channel every node listens on: the bus's notes go out on it, and the releases count
//! its listeners to know every node has spoken.

/// The channel every node listens on.
pub(super) const CHANNEL: &str = "floor:changes";
