//! Settings of the real one-time-code channels (Telegram Gateway, WhatsApp Cloud API, SMS.ru),
//! read from their own variables; the chain that uses them is `auth::delivery`.

use std::fmt;

const DEFAULT_TELEGRAM_GATEWAY_URL: &str = "https://gatewayapi.telegram.org";
const DEFAULT_WHATSAPP_API_URL: &str = "https://graph.facebook.com/v21.0";
const DEFAULT_WHATSAPP_TEMPLATE: &str = "floor_otp";
const DEFAULT_WHATSAPP_LANGUAGE: &str = "ru";
const DEFAULT_SMSRU_URL: &str = "https://sms.ru";

/// Settings of the real channels, read from the environment.
///
/// Each channel's settings are `None` when its required variables are missing or blank; such a
/// channel stays in the chain and fails with "not configured". `Debug` never prints tokens.
#[derive(Clone, Default)]
pub struct ChannelSettings {
    pub telegram: Option<TelegramSettings>,
    pub whatsapp: Option<WhatsappSettings>,
    pub sms: Option<SmsRuSettings>,
}

/// The Telegram Gateway API.
#[derive(Clone)]
pub struct TelegramSettings {
    pub token: String,
    pub url: String,
}

/// The WhatsApp Cloud API, with an authentication template.
#[derive(Clone)]
pub struct WhatsappSettings {
    pub access_token: String,
    pub phone_number_id: String,
    pub template: String,
    pub language: String,
    pub url: String,
}

/// SMS.ru.
#[derive(Clone)]
pub struct SmsRuSettings {
    pub api_id: String,
    pub url: String,
}

impl ChannelSettings {
    /// Reads the settings of every real channel.
    ///
    /// `get` reads one environment variable (production passes `|k| std::env::var(k).ok()`,
    /// tests pass a map). Blank values count as unset, so `VAR=` in a compose file does not
    /// configure a channel with an empty token.
    ///
    /// | variable | default |
    /// |---|---|
    /// | `TELEGRAM_GATEWAY_TOKEN` | required for `telegram` |
    /// | `TELEGRAM_GATEWAY_URL` | `https://gatewayapi.telegram.org` |
    /// | `WHATSAPP_ACCESS_TOKEN`, `WHATSAPP_PHONE_NUMBER_ID` | both required for `whatsapp` |
    /// | `WHATSAPP_TEMPLATE` | `floor_otp` |
    /// | `WHATSAPP_LANGUAGE` | `ru` |
    /// | `WHATSAPP_API_URL` | `https://graph.facebook.com/v21.0` |
    /// | `SMSRU_API_ID` | required for `sms` |
    /// | `SMSRU_URL` | `https://sms.ru` |
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Self {
        let var = |name: &str| get(name).map(|value| value.trim().to_owned()).filter(|value| !value.is_empty());
        // Base URLs are joined with "/path", so a trailing slash would double it.
        let url = |name: &str, default: &str| {
            var(name).unwrap_or_else(|| default.to_owned()).trim_end_matches('/').to_owned()
        };

        let telegram = var("TELEGRAM_GATEWAY_TOKEN")
            .map(|token| TelegramSettings { token, url: url("TELEGRAM_GATEWAY_URL", DEFAULT_TELEGRAM_GATEWAY_URL) });
        let whatsapp = match (var("WHATSAPP_ACCESS_TOKEN"), var("WHATSAPP_PHONE_NUMBER_ID")) {
            (Some(access_token), Some(phone_number_id)) => Some(WhatsappSettings {
                access_token,
                phone_number_id,
                template: var("WHATSAPP_TEMPLATE").unwrap_or_else(|| DEFAULT_WHATSAPP_TEMPLATE.to_owned()),
                language: var("WHATSAPP_LANGUAGE").unwrap_or_else(|| DEFAULT_WHATSAPP_LANGUAGE.to_owned()),
                url: url("WHATSAPP_API_URL", DEFAULT_WHATSAPP_API_URL),
            }),
            _ => None,
        };
        let sms = var("SMSRU_API_ID").map(|api_id| SmsRuSettings { api_id, url: url("SMSRU_URL", DEFAULT_SMSRU_URL) });

        Self { telegram, whatsapp, sms }
    }
}

impl fmt::Debug for ChannelSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChannelSettings")
            .field("telegram", &self.telegram)
            .field("whatsapp", &self.whatsapp)
            .field("sms", &self.sms)
            .finish()
    }
}

// Hand-written so that a `{:?}` anywhere (startup logs, panics) cannot leak a credential.
impl fmt::Debug for TelegramSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TelegramSettings").field("token", &"<redacted>").field("url", &self.url).finish()
    }
}

impl fmt::Debug for WhatsappSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WhatsappSettings")
            .field("access_token", &"<redacted>")
            .field("phone_number_id", &self.phone_number_id)
            .field("template", &self.template)
            .field("language", &self.language)
            .field("url", &self.url)
            .finish()
    }
}

impl fmt::Debug for SmsRuSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SmsRuSettings").field("api_id", &"<redacted>").field("url", &self.url).finish()
    }
}
