//! Delivery of one-time sign-in codes.
//!
//! This module owns the chain of delivery channels described in the Authentication section of
//! the service spec: the channels are tried in the order of `OTP_CHANNELS` (default
//! `telegram,whatsapp,sms`), the first one that delivers wins, and its name is what the HTTP
//! response reports. Outside production a `fake` channel is appended; it keeps the last code
//! per phone in a [`FakeOutbox`] for tests and, with `OTP_LOG_CODES`, prints `OTP <phone> <code>`
//! on standard output.
//!
//! The real channels are thin HTTP clients, one file each: the Telegram Gateway API
//! (`telegram.rs`), the WhatsApp Cloud API's authentication template (`whatsapp.rs`) and SMS.ru
//! (`sms_ru.rs`), configured by [`ChannelSettings::from_env`], with what they share in
//! `provider.rs`; the fake one is `fake.rs`. A
//! channel whose settings are missing fails at once with "not configured" so the next one is
//! tried. This file is the chain: its order, the attempt at each channel, the failures.
//!
//! Secrets and codes stay out of logs: failure reasons are logged at WARN with the code
//! redacted, and the `Debug` output of settings and the chain never shows tokens.
//! Code generation, hashing, rate limits and verification live elsewhere in `auth`.

mod fake;
mod provider;
mod sms_ru;
mod telegram;
mod whatsapp;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use self::fake::Fake;
pub use self::fake::FakeOutbox;
use self::provider::Attempt;
use self::sms_ru::SmsRu;
use self::telegram::Telegram;
use self::whatsapp::Whatsapp;
use crate::infra::config::channels::ChannelSettings;
use crate::infra::outbound;

/// Chain used when `OTP_CHANNELS` is unset or blank: two messengers, then SMS.
const DEFAULT_ORDER: [Kind; 3] = [Kind::Telegram, Kind::Whatsapp, Kind::Sms];

/// Channel names as written in `OTP_CHANNELS` and reported to clients.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Telegram,
    Whatsapp,
    Sms,
    Fake,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Telegram => "telegram",
            Kind::Whatsapp => "whatsapp",
            Kind::Sms => "sms",
            Kind::Fake => "fake",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        [Kind::Telegram, Kind::Whatsapp, Kind::Sms, Kind::Fake]
            .into_iter()
            .find(|kind| kind.name().eq_ignore_ascii_case(name))
    }
}

/// Bound on connecting and on a whole request, so one slow provider cannot hold a sign-in
/// request for long before the next channel is tried.
const HTTP_TIMEOUT: Duration = Duration::from_secs(5);

/// Stands in for the code wherever a provider's answer echoes it back into a failure reason.
const REDACTED: &str = "<code>";

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// Configuration errors found while building the chain; the server refuses to start on them.
#[derive(Debug, thiserror::Error)]
pub enum ChainError {
    /// `OTP_CHANNELS` names a channel this server does not know.
    #[error("unknown one-time code channel `{0}` in OTP_CHANNELS (known: telegram, whatsapp, sms, fake)")]
    UnknownChannel(String),
    /// `OTP_CHANNELS` lists `fake` while `APP_ENV` is `production`.
    #[error("the `fake` one-time code channel is not allowed in production")]
    FakeInProduction,
    /// In production, no channel of `OTP_CHANNELS` has its credentials: every sign-in would fail.
    #[error(
        "no one-time code channel can send in production: OTP_CHANNELS lists {0} and none has its credentials \
         (telegram: TELEGRAM_GATEWAY_TOKEN; whatsapp: WHATSAPP_ACCESS_TOKEN and WHATSAPP_PHONE_NUMBER_ID; \
         sms: SMSRU_API_ID)"
    )]
    NoChannelConfigured(String),
    /// The shared HTTP client could not be created (for example, no TLS roots could be loaded).
    #[error("cannot create the HTTP client for one-time code delivery: {0}")]
    HttpClient(String),
}

/// Whether channel `kind` has what it needs to send (the fake one always has).
fn can_send(settings: &ChannelSettings, kind: Kind) -> bool {
    match kind {
        Kind::Telegram => settings.telegram.is_some(),
        Kind::Whatsapp => settings.whatsapp.is_some(),
        Kind::Sms => settings.sms.is_some(),
        Kind::Fake => true,
    }
}

/// Why one channel did not deliver a code. The reason never contains the code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelFailure {
    /// Channel name as written in `OTP_CHANNELS`.
    pub channel: &'static str,
    /// Human-readable reason for logs ("not configured", "HTTP 500", ...).
    pub reason: String,
}

impl fmt::Display for ChannelFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.channel, self.reason)
    }
}

/// No channel delivered the code; lists every channel's failure in chain order.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no channel delivered the one-time code ({})", join_failures(.failures))]
pub struct DeliveryFailed {
    /// One entry per channel tried, in chain order.
    pub failures: Vec<ChannelFailure>,
}

fn join_failures(failures: &[ChannelFailure]) -> String {
    failures.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

// ---------------------------------------------------------------------------------------------
// Channels
// ---------------------------------------------------------------------------------------------

/// One link of the chain. An enum rather than a trait object: the set is closed and known at
/// build time, and inherent `async fn` needs no boxing.
enum Channel {
    Telegram(Telegram),
    Whatsapp(Whatsapp),
    Sms(SmsRu),
    Fake(Fake),
}

impl Channel {
    fn name(&self) -> &'static str {
        let kind = match self {
            Channel::Telegram(_) => Kind::Telegram,
            Channel::Whatsapp(_) => Kind::Whatsapp,
            Channel::Sms(_) => Kind::Sms,
            Channel::Fake(_) => Kind::Fake,
        };
        kind.name()
    }

    fn is_configured(&self) -> bool {
        match self {
            Channel::Telegram(c) => c.settings.is_some(),
            Channel::Whatsapp(c) => c.settings.is_some(),
            Channel::Sms(c) => c.settings.is_some(),
            Channel::Fake(_) => true,
        }
    }

    async fn deliver(&self, phone: &str, code: &str) -> Attempt {
        match self {
            Channel::Telegram(c) => c.deliver(phone, code).await,
            Channel::Whatsapp(c) => c.deliver(phone, code).await,
            Channel::Sms(c) => c.deliver(phone, code).await,
            Channel::Fake(c) => {
                c.deliver(phone, code);
                Ok(())
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Chain
// ---------------------------------------------------------------------------------------------

/// The ordered channels one-time codes are delivered through.
///
/// Cheap to clone (shared inside). `Debug` lists channel names and whether each is
/// configured, never a token or a code.
#[derive(Clone)]
pub struct DeliveryChain {
    inner: Arc<Inner>,
}

struct Inner {
    channels: Vec<Channel>,
    outbox: Option<FakeOutbox>,
}

impl DeliveryChain {
    /// Builds the chain.
    ///
    /// `names` is the raw `OTP_CHANNELS` value (comma separated, case and spaces ignored,
    /// repeats kept once); `None` or a blank value means the default order
    /// `telegram,whatsapp,sms`. Outside `production` `fake` is appended unless listed already.
    /// In production `fake` is refused and never appended, so `log_codes` has no effect there.
    /// `log_codes` makes the fake channel print `OTP <phone> <code>` on standard output.
    pub fn build(
        names: Option<&str>,
        settings: ChannelSettings,
        production: bool,
        log_codes: bool,
    ) -> Result<Self, ChainError> {
        let mut order: Vec<Kind> = Vec::new();
        for raw in names.unwrap_or_default().split(',') {
            let raw = raw.trim();
            if raw.is_empty() {
                continue;
            }
            let kind = Kind::parse(raw).ok_or_else(|| ChainError::UnknownChannel(raw.to_owned()))?;
            if kind == Kind::Fake && production {
                return Err(ChainError::FakeInProduction);
            }
            // Trying the same provider twice in a row only doubles the wait.
            if !order.contains(&kind) {
                order.push(kind);
            }
        }
        if order.is_empty() {
            // A blank OTP_CHANNELS would otherwise leave production with no way to sign in.
            order.extend(DEFAULT_ORDER);
        }
        if !production && !order.contains(&Kind::Fake) {
            order.push(Kind::Fake);
        }
        if production && !order.iter().any(|kind| can_send(&settings, *kind)) {
            let listed: Vec<&str> = order.iter().map(|kind| kind.name()).collect();
            return Err(ChainError::NoChannelConfigured(listed.join(", ")));
        }

        // One client for every channel: it pools connections and TLS sessions.
        let http = outbound::client(HTTP_TIMEOUT).map_err(|e| ChainError::HttpClient(e.to_string()))?;

        let fake_outbox = FakeOutbox::default();
        let outbox = order.contains(&Kind::Fake).then(|| fake_outbox.clone());
        let channels = order
            .into_iter()
            .map(|kind| match kind {
                Kind::Telegram => {
                    Channel::Telegram(Telegram { settings: settings.telegram.clone(), http: http.clone() })
                }
                Kind::Whatsapp => {
                    Channel::Whatsapp(Whatsapp { settings: settings.whatsapp.clone(), http: http.clone() })
                }
                Kind::Sms => Channel::Sms(SmsRu { settings: settings.sms.clone(), http: http.clone() }),
                Kind::Fake => Channel::Fake(Fake { outbox: fake_outbox.clone(), log_codes }),
            })
            .collect();

        Ok(Self { inner: Arc::new(Inner { channels, outbox }) })
    }

    /// Tries each channel in order and returns the name of the first that delivered.
    ///
    /// Every failure is logged at WARN with its reason (the code redacted); when none
    /// delivers, [`DeliveryFailed`] lists each channel's reason in chain order.
    pub async fn deliver(&self, phone: &str, code: &str) -> Result<&'static str, DeliveryFailed> {
        let mut failures = Vec::with_capacity(self.inner.channels.len());
        for channel in &self.inner.channels {
            let name = channel.name();
            match channel.deliver(phone, code).await {
                Ok(()) => {
                    tracing::info!(channel = name, "one-time code delivered");
                    return Ok(name);
                }
                Err(reason) => {
                    let reason = redact(reason, code);
                    tracing::warn!(channel = name, %reason, "one-time code delivery failed");
                    failures.push(ChannelFailure { channel: name, reason });
                }
            }
        }
        Err(DeliveryFailed { failures })
    }

    /// Channel names in chain order, for logs and tests.
    pub fn channel_names(&self) -> Vec<&'static str> {
        self.inner.channels.iter().map(Channel::name).collect()
    }

    /// The fake channel's outbox; `None` when the chain has no fake channel (production).
    pub fn fake_outbox(&self) -> Option<FakeOutbox> {
        self.inner.outbox.clone()
    }
}

/// Provider error texts are outside our control and could echo the request; make sure the code
/// never travels on into logs or errors.
fn redact(reason: String, code: &str) -> String {
    if code.is_empty() || !reason.contains(code) { reason } else { reason.replace(code, REDACTED) }
}

impl fmt::Debug for DeliveryChain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct Link<'a>(&'a Channel);
        impl fmt::Debug for Link<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let state = if self.0.is_configured() { "configured" } else { "not configured" };
                write!(f, "{} ({state})", self.0.name())
            }
        }
        f.debug_struct("DeliveryChain")
            .field("channels", &self.inner.channels.iter().map(Link).collect::<Vec<_>>())
            .finish()
    }
}

#[cfg(test)]
mod tests;
