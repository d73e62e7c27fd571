//! Authentication: one-time codes, their delivery, tokens, sessions, permissions.

pub mod delivery;
pub mod otp;
pub mod permissions;
pub mod sessions;
pub mod tokens;
