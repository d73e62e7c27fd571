//! Settings of the real one-time-code channels (Telegram Gateway, WhatsApp Cloud API, SMS.ru),
//! read from their own variables; the chain that uses them is `auth::delivery`.

use std::fmt;

use super::error::ConfigError;
use super::variables::read;

/// The variables of the real channels. A channel whose required variables are unset stays in
/// the chain and fails with "not configured".
#[derive(clap::Args)]
pub struct ChannelVariables {
    /// The `telegram` channel's (Telegram Gateway) token; required for `telegram`.
    #[arg(long, env = "TELEGRAM_GATEWAY_TOKEN")]
    pub telegram_gateway_token: Option<String>,
    /// The Telegram Gateway's base URL.
    #[arg(long, env = "TELEGRAM_GATEWAY_URL", default_value = "https://gatewayapi.telegram.org")]
    pub telegram_gateway_url: String,
    /// The `whatsapp` channel's (WhatsApp Cloud API) token; required for `whatsapp`, with
    /// `WHATSAPP_PHONE_NUMBER_ID`.
    #[arg(long, env = "WHATSAPP_ACCESS_TOKEN")]
    pub whatsapp_access_token: Option<String>,
    /// The WhatsApp number the codes are sent from; required for `whatsapp`, with
    /// `WHATSAPP_ACCESS_TOKEN`.
    #[arg(long, env = "WHATSAPP_PHONE_NUMBER_ID")]
    pub whatsapp_phone_number_id: Option<String>,
    /// The WhatsApp authentication template the code is sent in.
    #[arg(long, env = "WHATSAPP_TEMPLATE", default_value = "floor_otp")]
    pub whatsapp_template: String,
    /// The language of that template.
    #[arg(long, env = "WHATSAPP_LANGUAGE", default_value = "ru")]
    pub whatsapp_language: String,
    /// The WhatsApp Cloud API's base URL.
    #[arg(long, env = "WHATSAPP_API_URL", default_value = "https://graph.facebook.com/v21.0")]
    pub whatsapp_api_url: String,
    /// The `sms` channel's (SMS.ru) key; required for `sms`.
    #[arg(long, env = "SMSRU_API_ID")]
    pub smsru_api_id: Option<String>,
    /// SMS.ru's base URL.
    #[arg(long, env = "SMSRU_URL", default_value = "https://sms.ru")]
    pub smsru_url: String,
}

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
    /// Reads the settings of every real channel through `get` (a map in tests). Blank values
    /// count as unset, so `VAR=` in a compose file does not configure a channel with an empty
    /// token.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        Ok(Self::from_variables(read(&get)?))
    }

    pub(super) fn from_variables(variables: ChannelVariables) -> Self {
        // Base URLs are joined with "/path", so a trailing slash would double it.
        let url = |url: String| url.trim_end_matches('/').to_owned();
        let telegram = variables
            .telegram_gateway_token
            .map(|token| TelegramSettings { token, url: url(variables.telegram_gateway_url) });
        let whatsapp = match (variables.whatsapp_access_token, variables.whatsapp_phone_number_id) {
            (Some(access_token), Some(phone_number_id)) => Some(WhatsappSettings {
                access_token,
                phone_number_id,
                template: variables.whatsapp_template,
                language: variables.whatsapp_language,
                url: url(variables.whatsapp_api_url),
            }),
            _ => None,
        };
        let sms = variables.smsru_api_id.map(|api_id| SmsRuSettings { api_id, url: url(variables.smsru_url) });
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
