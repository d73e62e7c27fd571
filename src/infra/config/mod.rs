//! Configuration, read once from the environment: exactly the contract's variables, each with
//! a working default outside production, and a refusal to start on an unsafe production setup.

pub mod app_links;
pub mod channels;
pub mod connections;
pub mod fcm;
pub mod limits;
pub mod telemetry;

use std::fmt;

pub use self::app_links::AppLinkSettings;
pub use self::channels::ChannelSettings;
pub use self::connections::ConnectionSettings;
pub use self::fcm::FcmSettings;
pub use self::limits::{LimitSettings, Rate};
pub use self::telemetry::TelemetryConfig;
use crate::values::Phone;

/// Where the service runs. Production tightens every default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppEnv {
    Development,
    Test,
    Production,
}

/// The shortest `JWT_SECRET` accepted in production: 256 bits of HS256 key.
pub const MIN_JWT_SECRET_LEN: usize = 32;

/// Signing key used outside production when `JWT_SECRET` is unset, so that a bare
/// `floor serve` works and tokens survive restarts on a developer machine.
const DEVELOPMENT_JWT_SECRET: &str = "floor-development-secret-never-use-in-production";

/// The default database: a SQLite file under `./data`, created if missing.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://./data/floor.db?mode=rwc";

/// A secret that never shows in logs or `Debug` output.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// The version of the consent text when `CONSENT_VERSION` is unset.
pub const DEFAULT_CONSENT_VERSION: &str = "1";

/// The database's deadline unless `DATABASE_DEADLINE` says otherwise: a statement of a
/// request or a live command takes milliseconds, a burst's wait for a lock a second or two.
pub const DEFAULT_DATABASE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(3);
/// What `DATABASE_DEADLINE` may be.
const DATABASE_DEADLINES: std::ops::RangeInclusive<std::time::Duration> =
    std::time::Duration::from_secs(1)..=std::time::Duration::from_secs(60);

/// Everything the service reads from its environment.
#[derive(Clone, Debug)]
pub struct Config {
    /// `APP_ENV`: development (default), test or production.
    pub env: AppEnv,
    /// `PORT`: 8080 by default; 0 binds a random free port (tests).
    pub port: u16,
    /// `DATABASE_URL`: SQLite file under `./data` by default; PostgreSQL for several
    /// nodes (a single node may keep the SQLite file in production).
    pub database_url: String,
    /// `DATABASE_DEADLINE`: the longest a statement runs on PostgreSQL before the server
    /// cancels it (`statement_timeout`); a server that does not answer within half a second more
    /// (frozen, partitioned) has its connection given up. 3 s by default. With several nodes it
    /// also bounds how long a press handed to the tournament's owner may take there
    /// ([`crate::domain::live::forward`]), so the nodes share it.
    pub database_deadline: std::time::Duration,
    /// `REDIS_URL`: unset means a single node with in-process broadcasts.
    pub redis_url: Option<String>,
    /// `PUBLIC_URL`: the origin people open in a browser (the venue screen and share links
    /// the tournament detail names); `http://localhost:<port>` by default.
    pub public_url: String,
    /// `NODE_URL`: where the other nodes reach this one to hand it a command of a tournament
    /// it runs; unset means `http://<this machine's address>:<port>`.
    pub node_url: Option<String>,
    /// `JWT_SECRET`: the HS256 signing key of access tokens.
    pub jwt_secret: Secret,
    /// `OTP_CHANNELS`: the delivery chain, comma separated; unset means the default order.
    pub otp_channels: Option<String>,
    /// `OTP_LOG_CODES`: the fake channel prints `OTP <phone> <code>`; refused in production.
    pub otp_log_codes: bool,
    /// `PLATFORM_ADMIN_PHONES`: these phones get `super_admin` at every sign-in.
    pub platform_admin_phones: Vec<Phone>,
    /// `STORAGE_URL`: object storage for uploads; unset means a local folder.
    pub storage_url: Option<Secret>,
    /// `LOG_FORMAT`, `OTEL_EXPORTER_OTLP_ENDPOINT` and `OTEL_TRACES_SAMPLER*`: the log lines'
    /// form and which traces go to a collector.
    pub telemetry: TelemetryConfig,
    /// Settings of the real one-time-code channels (their own variables).
    pub channels: ChannelSettings,
    /// `FCM_SERVICE_ACCOUNT_JSON` and its companions: unset means notifications are journaled
    /// but never pushed.
    pub fcm: Option<FcmSettings>,
    /// `RATE_LIMIT_*` and `TRUSTED_PROXIES`: the abuse limits and who may name the client.
    pub limits: LimitSettings,
    /// `HTTP_HEADER_TIMEOUT`, `MAX_CONNECTIONS*` and the like: what one client may hold open.
    pub connections: ConnectionSettings,
    /// `CONSENT_VERSION`: the version of the consent text the player app shows, kept with each
    /// consent given; `1` by default.
    pub consent_version: String,
    /// `APPLE_APP_IDS`, `ANDROID_APP_PACKAGE` and `ANDROID_CERT_SHA256`: the apps that open the
    /// share links; unset means the links open in a browser.
    pub app_links: AppLinkSettings,
}

/// Why the service refuses to start. Its text is the one line an operator sees.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{name} has an invalid value {value:?}: {expected}")]
    Invalid { name: &'static str, value: String, expected: &'static str },
    #[error("{set} is set but {missing} is not: {why}")]
    Unpaired { set: &'static str, missing: &'static str, why: &'static str },
    #[error("JWT_SECRET must be set to at least {MIN_JWT_SECRET_LEN} characters in production")]
    WeakJwtSecret,
    #[error("OTP_LOG_CODES must not be on in production: it prints sign-in codes")]
    OtpLogCodesInProduction,
    #[error("DATABASE_URL must not be an in-memory SQLite database in production: data would vanish on restart")]
    InMemoryDatabaseInProduction,
}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads through `get`, so tests can pass a map. Empty values count as unset.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = |name: &str| get(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());

        let env = match get("APP_ENV").as_deref() {
            None | Some("development") => AppEnv::Development,
            Some("test") => AppEnv::Test,
            Some("production") => AppEnv::Production,
            Some(other) => {
                return Err(invalid("APP_ENV", other, "development, test or production"));
            }
        };
        let production = env == AppEnv::Production;

        let port = match get("PORT") {
            None => 8080,
            Some(text) => text.parse().map_err(|_| invalid("PORT", &text, "a port number"))?,
        };

        let database_url = get("DATABASE_URL").unwrap_or_else(|| DEFAULT_DATABASE_URL.to_owned());
        if production && is_in_memory_sqlite(&database_url) {
            return Err(ConfigError::InMemoryDatabaseInProduction);
        }

        let jwt_secret = match get("JWT_SECRET") {
            Some(secret) if secret.len() >= MIN_JWT_SECRET_LEN || !production => secret,
            Some(_) => return Err(ConfigError::WeakJwtSecret),
            None if production => return Err(ConfigError::WeakJwtSecret),
            None => DEVELOPMENT_JWT_SECRET.to_owned(),
        };

        let otp_log_codes = match get("OTP_LOG_CODES").as_deref() {
            None => false,
            Some(text) => parse_flag(text).ok_or_else(|| invalid("OTP_LOG_CODES", text, "true or false"))?,
        };
        if production && otp_log_codes {
            return Err(ConfigError::OtpLogCodesInProduction);
        }

        let platform_admin_phones = match get("PLATFORM_ADMIN_PHONES") {
            None => Vec::new(),
            Some(list) => list
                .split(',')
                .map(str::trim)
                .filter(|item| !item.is_empty())
                .map(|item| {
                    Phone::parse(item)
                        .map_err(|_| invalid("PLATFORM_ADMIN_PHONES", item, "comma-separated phones in E.164"))
                })
                .collect::<Result<_, _>>()?,
        };

        Ok(Self {
            env,
            port,
            database_url,
            redis_url: get("REDIS_URL"),
            public_url: http_origin("PUBLIC_URL", get("PUBLIC_URL"))?
                .unwrap_or_else(|| format!("http://localhost:{port}")),
            node_url: http_origin("NODE_URL", get("NODE_URL"))?,
            jwt_secret: Secret::new(jwt_secret),
            otp_channels: get("OTP_CHANNELS"),
            otp_log_codes,
            platform_admin_phones,
            storage_url: get("STORAGE_URL").map(Secret::new),
            telemetry: TelemetryConfig::from_env(get, production)?,
            channels: ChannelSettings::from_env(get),
            fcm: FcmSettings::from_env(get)?,
            limits: LimitSettings::from_env(get)?,
            connections: ConnectionSettings::from_env(get)?,
            database_deadline: match get("DATABASE_DEADLINE") {
                None => DEFAULT_DATABASE_DEADLINE,
                Some(text) => limits::parse_duration(&text)
                    .filter(|deadline| DATABASE_DEADLINES.contains(deadline))
                    .ok_or_else(|| invalid("DATABASE_DEADLINE", &text, "a duration from 1s to 60s (3s, 10s, 1m)"))?,
            },
            consent_version: get("CONSENT_VERSION").unwrap_or_else(|| DEFAULT_CONSENT_VERSION.to_owned()),
            app_links: AppLinkSettings::from_env(get)?,
        })
    }

    pub fn is_production(&self) -> bool {
        self.env == AppEnv::Production
    }
}

/// An `http://` or `https://` address given as `name`, without a trailing slash.
fn http_origin(name: &'static str, value: Option<String>) -> Result<Option<String>, ConfigError> {
    match value {
        Some(url) if reqwest::Url::parse(&url).is_ok_and(|parsed| parsed.scheme().starts_with("http")) => {
            Ok(Some(url.trim_end_matches('/').to_owned()))
        }
        Some(url) => Err(invalid(name, &url, "an http:// or https:// address")),
        None => Ok(None),
    }
}

fn invalid(name: &'static str, value: &str, expected: &'static str) -> ConfigError {
    ConfigError::Invalid { name, value: value.to_owned(), expected }
}

fn parse_flag(text: &str) -> Option<bool> {
    match text.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// `sqlite::memory:`, `sqlite://:memory:` and `?mode=memory` all lose everything on restart.
fn is_in_memory_sqlite(url: &str) -> bool {
    url.starts_with("sqlite:") && (url.contains(":memory:") || url.contains("mode=memory"))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        Config::from_lookup(|name| map.get(name).cloned())
    }

    const STRONG: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn no_environment_at_all_gives_a_working_development_setup() {
        let config = config(&[]).expect("defaults work");
        assert_eq!(config.env, AppEnv::Development);
        assert_eq!(config.port, 8080);
        assert_eq!(config.database_url, DEFAULT_DATABASE_URL);
        assert!(config.redis_url.is_none());
        assert!(!config.otp_log_codes);
        assert!(config.platform_admin_phones.is_empty());
        assert_eq!(config.limits, LimitSettings::default());
        assert_eq!(config.app_links, AppLinkSettings::default());
    }

    #[test]
    fn production_refuses_a_missing_jwt_secret() {
        let err = config(&[("APP_ENV", "production")]).expect_err("refused");
        assert_eq!(err, ConfigError::WeakJwtSecret);
    }

    #[test]
    fn production_refuses_a_short_jwt_secret() {
        let err = config(&[("APP_ENV", "production"), ("JWT_SECRET", "short")]).expect_err("refused");
        assert_eq!(err, ConfigError::WeakJwtSecret);
    }

    #[test]
    fn production_refuses_logged_codes() {
        let err = config(&[("APP_ENV", "production"), ("JWT_SECRET", STRONG), ("OTP_LOG_CODES", "true")])
            .expect_err("refused");
        assert_eq!(err, ConfigError::OtpLogCodesInProduction);
    }

    #[test]
    fn production_refuses_an_in_memory_database() {
        for url in ["sqlite::memory:", "sqlite://:memory:", "sqlite://floor.db?mode=memory"] {
            let err = config(&[("APP_ENV", "production"), ("JWT_SECRET", STRONG), ("DATABASE_URL", url)])
                .expect_err("refused");
            assert_eq!(err, ConfigError::InMemoryDatabaseInProduction, "{url}");
        }
    }

    #[test]
    fn production_with_a_strong_secret_starts() {
        let config =
            config(&[("APP_ENV", "production"), ("JWT_SECRET", STRONG), ("DATABASE_URL", "postgres://floor@db/floor")])
                .expect("accepted");
        assert!(config.is_production());
    }

    #[test]
    fn development_accepts_logged_codes_and_a_short_secret() {
        let config = config(&[("OTP_LOG_CODES", "true"), ("JWT_SECRET", "dev")]).expect("accepted");
        assert!(config.otp_log_codes);
        assert_eq!(config.jwt_secret.expose(), "dev");
    }

    #[test]
    fn admin_phones_are_parsed_and_normalised() {
        let config = config(&[("PLATFORM_ADMIN_PHONES", "+7 999 000-00-01, +79990000002")]).expect("ok");
        let phones: Vec<&str> = config.platform_admin_phones.iter().map(Phone::as_str).collect();
        assert_eq!(phones, ["+79990000001", "+79990000002"]);
    }

    #[test]
    fn bad_values_name_their_variable() {
        let err = config(&[("PORT", "eighty")]).expect_err("refused");
        assert!(err.to_string().starts_with("PORT"));
        let err = config(&[("APP_ENV", "staging")]).expect_err("refused");
        assert!(err.to_string().starts_with("APP_ENV"));
        let err = config(&[("PLATFORM_ADMIN_PHONES", "admin")]).expect_err("refused");
        assert!(err.to_string().starts_with("PLATFORM_ADMIN_PHONES"));
        let err = config(&[("RATE_LIMIT_CODE_REQUESTS", "lots")]).expect_err("refused");
        assert!(err.to_string().starts_with("RATE_LIMIT_CODE_REQUESTS"));
        let err = config(&[("TRUSTED_PROXIES", "the-load-balancer")]).expect_err("refused");
        assert!(err.to_string().starts_with("TRUSTED_PROXIES"));
        let err = config(&[("APPLE_APP_IDS", "club.floor.player")]).expect_err("refused");
        assert!(err.to_string().starts_with("APPLE_APP_IDS"));
        let err = config(&[("ANDROID_APP_PACKAGE", "club.floor.player")]).expect_err("refused");
        assert!(err.to_string().starts_with("ANDROID_APP_PACKAGE"));
        for bad in ["3", "0s", "61s", "2m", "soon"] {
            let err = config(&[("DATABASE_DEADLINE", bad)]).expect_err(bad);
            assert!(err.to_string().starts_with("DATABASE_DEADLINE"), "{bad}: {err}");
        }
    }

    #[test]
    fn the_database_deadline_is_three_seconds_unless_set() {
        assert_eq!(config(&[]).expect("ok").database_deadline, std::time::Duration::from_secs(3));
        assert_eq!(config(&[("DATABASE_DEADLINE", "10s")]).expect("ok").database_deadline.as_secs(), 10);
        assert_eq!(config(&[("DATABASE_DEADLINE", "1m")]).expect("ok").database_deadline.as_secs(), 60);
    }

    #[test]
    fn the_secret_never_prints() {
        let config = config(&[("JWT_SECRET", STRONG)]).expect("ok");
        assert!(!format!("{config:?}").contains(STRONG));
    }
}
