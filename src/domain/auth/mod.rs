//! Authentication: one-time codes, their delivery, tokens, sessions, permissions.

pub mod delivery;
pub mod otp;
pub mod permissions;
pub mod sessions;
pub mod tokens;

use std::sync::Arc;

use self::delivery::DeliveryChain;
use self::tokens::JwtKeys;
use crate::values::Phone;

/// What signing in needs besides the database.
pub struct SignIn {
    /// Signs and checks access tokens.
    pub jwt: Arc<JwtKeys>,
    /// The chain of one-time-code delivery channels.
    pub codes: DeliveryChain,
    /// `PLATFORM_ADMIN_PHONES`: these phones get `super_admin` at every sign-in.
    pub platform_admin_phones: Vec<Phone>,
}
