//! Configuration, read once from the environment: exactly the contract's variables, each with
//! a working default outside production, and a refusal to start on an unsafe production setup.
//!
//! Every variable is declared once, with clap's derive: its name, default, format and range in
//! its `#[arg]`, its meaning in its doc comment ([`Variables`] and the group of each file
//! here). [`Config`] is built from them; the README's and docs/operations.md's tables of
//! variables are checked against them ([`documented_variables`]).

pub mod app_links;
pub mod channels;
pub mod connections;
mod error;
pub mod fcm;
pub mod limits;
pub mod telemetry;
mod variables;

use std::cell::RefCell;
use std::fmt;
use std::time::Duration;

pub use self::app_links::{AppLinkSettings, AppLinkVariables};
pub use self::channels::{ChannelSettings, ChannelVariables};
pub use self::connections::ConnectionSettings;
use self::error::invalid;
pub use self::error::{ConfigError, MIN_JWT_SECRET_LEN};
pub use self::fcm::{FcmSettings, FcmVariables};
pub use self::limits::{LimitSettings, Rate};
pub use self::telemetry::{TelemetryConfig, TelemetryVariables};
pub use self::variables::DocumentedVariable;
use self::variables::{Refused, comma_separated, flag};
use crate::values::Phone;

/// Where the service runs. Production tightens every default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppEnv {
    Development,
    Test,
    Production,
}

/// Signing key used outside production when `JWT_SECRET` is unset, so that a bare
/// `floor serve` works and tokens survive restarts on a developer machine.
const DEVELOPMENT_JWT_SECRET: &str = "floor-development-secret-never-use-in-production";

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

/// The variables of the service as a whole; each other file of this folder declares its own
/// group, flattened in here. A doc comment is the variable's help; a doc comment's last
/// paragraph `Default: …` writes a default that is no value of its own.
#[derive(clap::Args)]
pub struct Variables {
    /// `development`, `test` or `production`; production tightens every default.
    #[arg(long, env = "APP_ENV", default_value = "development", value_parser = app_env)]
    pub app_env: AppEnv,
    /// HTTP and Socket.IO port; 0 binds a random free port (tests).
    #[arg(long, env = "PORT", default_value = "8080", value_parser = port)]
    pub port: u16,
    /// A SQLite file (its folder is created) or `postgres://…`; PostgreSQL for several nodes
    /// (a single node may keep the SQLite file in production).
    #[arg(long, env = "DATABASE_URL", default_value = "sqlite://./data/floor.db?mode=rwc")]
    pub database_url: String,
    /// The longest a statement runs on PostgreSQL before the server cancels it
    /// (`statement_timeout`); a server that does not answer within half a second more (frozen,
    /// partitioned) has its connection given up. With several nodes it also bounds how long a
    /// press handed to the tournament's owner may take there
    /// ([`crate::domain::live::forward`]), so the nodes share it.
    // A statement of a request or a live command takes milliseconds, a burst's wait for a
    // lock a second or two.
    #[arg(long, env = "DATABASE_DEADLINE", default_value = "3s", value_parser = database_deadline)]
    pub database_deadline: Duration,
    /// Unset: a single node with in-process broadcasts; set (RESP3 is needed): several nodes.
    #[arg(long, env = "REDIS_URL")]
    pub redis_url: Option<String>,
    /// The origin people open in a browser (the venue screen and share links the tournament
    /// detail names).
    ///
    /// Default: `http://localhost:<PORT>`
    #[arg(long, env = "PUBLIC_URL", value_parser = http_origin)]
    pub public_url: Option<String>,
    /// Where the other nodes reach this one to hand it a command of a tournament it runs.
    ///
    /// Default: `http://<this machine's address>:<PORT>`
    #[arg(long, env = "NODE_URL", value_parser = http_origin)]
    pub node_url: Option<String>,
    /// The HS256 signing key of access tokens, and of the nodes' internal calls; required in
    /// production, at least [`MIN_JWT_SECRET_LEN`] characters.
    ///
    /// Default: a development key
    #[arg(long, env = "JWT_SECRET")]
    pub jwt_secret: Option<String>,
    /// The sign-in code's delivery chain, comma separated, in order.
    ///
    /// Default: `telegram,whatsapp,sms`
    // The order itself is `auth::delivery`'s, which a test there holds to this text.
    #[arg(long, env = "OTP_CHANNELS")]
    pub otp_channels: Option<String>,
    /// The fake channel prints `OTP <phone> <code>`; refused in production.
    #[arg(long, env = "OTP_LOG_CODES", default_value = "false", value_parser = flag, action = clap::ArgAction::Set)]
    pub otp_log_codes: bool,
    /// Comma-separated phones that get `super_admin` at every sign-in.
    // `std::vec::Vec`, spelled out, is one value to clap: the list is one variable.
    #[arg(long, env = "PLATFORM_ADMIN_PHONES", default_value = "", value_parser = phones)]
    pub platform_admin_phones: std::vec::Vec<Phone>,
    /// Object storage for uploads: `file:///path` or `s3://bucket[/prefix]?options`.
    ///
    /// Default: `./data/uploads`
    // The folder is `storage::DEFAULT_UPLOADS_DIR`, which a test below holds to this text.
    #[arg(long, env = "STORAGE_URL")]
    pub storage_url: Option<String>,
    /// The version of the consent text the player app shows, kept with each consent given.
    #[arg(long, env = "CONSENT_VERSION", default_value = "1")]
    pub consent_version: String,
    #[command(flatten)]
    pub telemetry: TelemetryVariables,
    #[command(flatten)]
    pub channels: ChannelVariables,
    #[command(flatten)]
    pub fcm: FcmVariables,
    #[command(flatten)]
    pub limits: LimitSettings,
    #[command(flatten)]
    pub connections: ConnectionSettings,
    #[command(flatten)]
    pub app_links: AppLinkVariables,
}

/// What `DATABASE_DEADLINE` may be.
const DATABASE_DEADLINES: std::ops::RangeInclusive<Duration> = Duration::from_secs(1)..=Duration::from_secs(60);

/// Everything the service reads from its environment, checked and put together: what the rest
/// of the crate uses. Each field's variables, defaults and formats are those of [`Variables`].
#[derive(Clone, Debug)]
pub struct Config {
    /// `APP_ENV` ([`Variables::app_env`]).
    pub env: AppEnv,
    /// `PORT` ([`Variables::port`]).
    pub port: u16,
    /// `DATABASE_URL` ([`Variables::database_url`]).
    pub database_url: String,
    /// `DATABASE_DEADLINE` ([`Variables::database_deadline`]).
    pub database_deadline: Duration,
    /// `REDIS_URL`: unset means a single node with in-process broadcasts.
    pub redis_url: Option<String>,
    /// `PUBLIC_URL`, without a trailing slash, its default made from the port.
    pub public_url: String,
    /// `NODE_URL`, without a trailing slash; unset means `http://<this machine's address>:<port>`.
    pub node_url: Option<String>,
    /// `JWT_SECRET`: the HS256 signing key of access tokens.
    pub jwt_secret: Secret,
    /// `OTP_CHANNELS`: the delivery chain, comma separated; unset means the default order.
    pub otp_channels: Option<String>,
    /// `OTP_LOG_CODES` ([`Variables::otp_log_codes`]).
    pub otp_log_codes: bool,
    /// `PLATFORM_ADMIN_PHONES` ([`Variables::platform_admin_phones`]).
    pub platform_admin_phones: Vec<Phone>,
    /// `STORAGE_URL`: object storage for uploads; unset means a local folder.
    pub storage_url: Option<Secret>,
    /// `LOG_FORMAT`, `RUST_LOG`, `OTEL_EXPORTER_OTLP_ENDPOINT` and `OTEL_TRACES_SAMPLER*`: the
    /// log lines' form and filter, and which traces go to a collector.
    pub telemetry: TelemetryConfig,
    /// Settings of the real one-time-code channels (their own variables).
    pub channels: ChannelSettings,
    /// `FCM_SERVICE_ACCOUNT_JSON` and its companions: unset means notifications are journaled
    /// but never pushed.
    pub fcm: Option<FcmSettings>,
    /// `RATE_LIMIT_*`, `TRUSTED_PROXIES` and `METRICS_ALLOW`: the abuse limits and who may name
    /// the client.
    pub limits: LimitSettings,
    /// `HTTP_HEADER_TIMEOUT`, `MAX_CONNECTIONS*` and the like: what one client may hold open.
    pub connections: ConnectionSettings,
    /// `CONSENT_VERSION` ([`Variables::consent_version`]).
    pub consent_version: String,
    /// `APPLE_APP_IDS`, `ANDROID_APP_PACKAGE` and `ANDROID_CERT_SHA256`: the apps that open the
    /// share links; unset means the links open in a browser.
    pub app_links: AppLinkSettings,
}

impl Config {
    /// Reads the process environment. A value that is not Unicode refuses to start, naming
    /// its variable, rather than counting as unset.
    pub fn from_env() -> Result<Self, ConfigError> {
        let not_unicode = RefCell::new(None);
        let config = Self::from_lookup(|name| match std::env::var(name) {
            Ok(value) => Some(value),
            Err(std::env::VarError::NotPresent) => None,
            Err(std::env::VarError::NotUnicode(value)) => {
                not_unicode.borrow_mut().get_or_insert_with(|| invalid(name, &value.to_string_lossy(), "valid UTF-8"));
                None
            }
        });
        not_unicode.into_inner().map_or(config, Err)
    }

    /// Reads through `get` alone, never the process environment, so tests can pass a map.
    /// Blank values count as unset.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let variables = variables::read::<Variables>(&get)?;
        Self::from_variables(variables, &get)
    }

    /// Checks what no single variable can and puts the groups together; `get` tells the
    /// variables that were set from those at their default.
    fn from_variables(variables: Variables, get: &dyn Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let production = variables.app_env == AppEnv::Production;
        if production && is_in_memory_sqlite(&variables.database_url) {
            return Err(ConfigError::InMemoryDatabaseInProduction);
        }
        let jwt_secret = match variables.jwt_secret {
            Some(secret) if secret.len() >= MIN_JWT_SECRET_LEN || !production => secret,
            Some(_) => return Err(ConfigError::WeakJwtSecret),
            None if production => return Err(ConfigError::WeakJwtSecret),
            None => DEVELOPMENT_JWT_SECRET.to_owned(),
        };
        if production && variables.otp_log_codes {
            return Err(ConfigError::OtpLogCodesInProduction);
        }
        let port = variables.port;
        Ok(Self {
            env: variables.app_env,
            port,
            database_url: variables.database_url,
            database_deadline: variables.database_deadline,
            redis_url: variables.redis_url,
            public_url: variables.public_url.unwrap_or_else(|| format!("http://localhost:{port}")),
            node_url: variables.node_url,
            jwt_secret: Secret::new(jwt_secret),
            otp_channels: variables.otp_channels,
            otp_log_codes: variables.otp_log_codes,
            platform_admin_phones: variables.platform_admin_phones,
            storage_url: variables.storage_url.map(Secret::new),
            telemetry: TelemetryConfig::from_variables(variables.telemetry, production)?,
            channels: ChannelSettings::from_variables(variables.channels),
            fcm: FcmSettings::from_variables(variables.fcm, get)?,
            limits: variables.limits,
            connections: variables.connections,
            consent_version: variables.consent_version,
            app_links: AppLinkSettings::from_variables(variables.app_links)?,
        })
    }

    /// `PORT` alone, for `floor healthcheck`, which must work whatever the other variables say.
    pub fn port_from_env() -> Result<u16, ConfigError> {
        let port = |name: &str| if name == "PORT" { std::env::var(name).ok() } else { None };
        Ok(variables::read::<Variables>(&port)?.port)
    }

    pub fn is_production(&self) -> bool {
        self.env == AppEnv::Production
    }
}

/// Every variable the configuration reads, with its default as the README and
/// docs/operations.md write it (`tests/api/config_docs.rs` holds them to it).
pub fn documented_variables() -> Vec<DocumentedVariable> {
    variables::documented::<Variables>()
}

fn app_env(text: &str) -> Result<AppEnv, Refused> {
    match text {
        "development" => Ok(AppEnv::Development),
        "test" => Ok(AppEnv::Test),
        "production" => Ok(AppEnv::Production),
        _ => Err(Refused::expected("development, test or production")),
    }
}

fn port(text: &str) -> Result<u16, Refused> {
    text.parse().map_err(|_| Refused::expected("a port number"))
}

fn database_deadline(text: &str) -> Result<Duration, Refused> {
    limits::parse_duration(text)
        .filter(|deadline| DATABASE_DEADLINES.contains(deadline))
        .ok_or(Refused::expected("a duration from 1s to 60s (3s, 10s, 1m)"))
}

fn phones(list: &str) -> Result<Vec<Phone>, Refused> {
    comma_separated(list, "comma-separated phones in E.164", |item| Phone::parse(item).ok())
}

/// An `http://` or `https://` address, without a trailing slash.
fn http_origin(url: &str) -> Result<String, Refused> {
    match reqwest::Url::parse(url) {
        Ok(parsed) if parsed.scheme().starts_with("http") => Ok(url.trim_end_matches('/').to_owned()),
        _ => Err(Refused::expected("an http:// or https:// address")),
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
        assert_eq!(config.database_url, "sqlite://./data/floor.db?mode=rwc");
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

    #[test]
    fn every_declaration_has_a_name_a_variable_and_one_default() {
        assert_eq!(variables::malformed::<Variables>(), Vec::<String>::new());
        let documented = documented_variables();
        let mut names: Vec<&str> = documented.iter().map(|variable| variable.name.as_str()).collect();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count, "a variable declared twice");
    }

    #[test]
    fn the_documented_defaults_are_written_as_the_documents_write_them() {
        let documented = documented_variables();
        let default = |name: &str| {
            documented.iter().find(|variable| variable.name == name).map(|variable| variable.default.as_str())
        };
        assert_eq!(default("PORT"), Some("`8080`"));
        assert_eq!(default("RATE_LIMIT_CODE_CHECKS"), Some("`30/10m`"));
        assert_eq!(default("HTTP_HEADER_TIMEOUT"), Some("`10s`"));
        assert_eq!(default("TRUSTED_PROXIES"), Some("empty"));
        assert_eq!(default("REDIS_URL"), Some("unset"));
        assert_eq!(default("PUBLIC_URL"), Some("`http://localhost:<PORT>`"));
        assert_eq!(default("LOG_FORMAT"), Some("`json` in production, else `text`"));
        assert_eq!(default("PATH"), None);
    }

    #[test]
    fn the_uploads_folder_is_the_one_storage_url_is_documented_with() {
        let documented = documented_variables();
        let storage = documented.iter().find(|variable| variable.name == "STORAGE_URL").expect("declared");
        assert_eq!(storage.default, format!("`{}`", crate::infra::storage::DEFAULT_UPLOADS_DIR));
    }

    /// Set in the environment of the child process of the test below.
    const CHILD: &str = "FLOOR_CONFIG_TEST_CHILD";

    /// `from_lookup` reads nothing but its lookup, whatever the process environment holds,
    /// while `from_env` reads the environment and refuses a value that is not Unicode. The
    /// test runs itself again in a child process with such an environment (setting variables
    /// in this process is unsafe while other tests run).
    #[test]
    fn from_lookup_reads_only_its_lookup_and_from_env_the_process_environment() {
        if std::env::var_os(CHILD).is_some() {
            let config = Config::from_lookup(|_| None).expect("the defaults, as no variable is given");
            assert_eq!((config.env, config.port), (AppEnv::Development, 8080));
            assert_eq!(Config::port_from_env(), Ok(1234), "PORT alone, production or not");
            let err = Config::from_env().expect_err("a value that is no Unicode");
            assert!(err.to_string().starts_with("CONSENT_VERSION has an invalid value"), "{err}");
            return;
        }
        use std::os::unix::ffi::OsStringExt;
        let test =
            format!("{}::from_lookup_reads_only_its_lookup_and_from_env_the_process_environment", module_path!());
        let test = test.split_once("::").map_or(test.as_str(), |(_, path)| path);
        let output = std::process::Command::new(std::env::current_exe().expect("the test binary"))
            .args([test, "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            .env("APP_ENV", "production")
            .env("PORT", "1234")
            .env("RATE_LIMIT_CODE_CHECKS", "lots")
            .env("CONSENT_VERSION", std::ffi::OsString::from_vec(vec![0x66, 0xff]))
            .output()
            .expect("the test binary runs");
        let said = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && said.contains("1 passed"),
            "{said}{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
