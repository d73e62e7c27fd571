//! Why the service refuses to start, in the one line an operator sees.

/// The shortest `JWT_SECRET` accepted in production: 256 bits of HS256 key.
pub const MIN_JWT_SECRET_LEN: usize = 32;

/// Why the service refuses to start. Its text is the one line an operator sees.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{name} has an invalid value {value:?}: {expected}")]
    Invalid { name: String, value: String, expected: &'static str },
    #[error("{set} is set but {missing} is not: {why}")]
    Unpaired { set: &'static str, missing: &'static str, why: &'static str },
    #[error("JWT_SECRET must be set to at least {MIN_JWT_SECRET_LEN} characters in production")]
    WeakJwtSecret,
    #[error("OTP_LOG_CODES must not be on in production: it prints sign-in codes")]
    OtpLogCodesInProduction,
    #[error("DATABASE_URL must not be an in-memory SQLite database in production: data would vanish on restart")]
    InMemoryDatabaseInProduction,
    /// A declaration clap cannot read; the tests of the declarations keep it from happening.
    #[error("the configuration cannot be read: {0}")]
    Unreadable(String),
}

pub(super) fn invalid(name: &str, value: &str, expected: &'static str) -> ConfigError {
    ConfigError::Invalid { name: name.to_owned(), value: value.to_owned(), expected }
}
