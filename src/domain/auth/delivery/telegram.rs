//! The Telegram Gateway channel: `sendVerificationMessage` with the code and its lifetime.

use serde::Deserialize;
use serde_json::json;

use super::provider::{Attempt, CODE_TTL_SECS, send, with_detail};
use crate::infra::config::channels::TelegramSettings;

pub(super) struct Telegram {
    pub(super) settings: Option<TelegramSettings>,
    pub(super) http: reqwest::Client,
}

impl Telegram {
    pub(super) async fn deliver(&self, phone: &str, code: &str) -> Attempt {
        let Some(settings) = &self.settings else {
            return Err("not configured (TELEGRAM_GATEWAY_TOKEN is unset)".to_owned());
        };
        let request =
            self.http.post(format!("{}/sendVerificationMessage", settings.url)).bearer_auth(&settings.token).json(
                &json!({
                    "phone_number": phone,
                    "code": code,
                    "ttl": CODE_TTL_SECS,
                }),
            );
        let (status, body) = send(request).await?;

        // Gateway answers {"ok": true, "result": ...} or {"ok": false, "error": "..."}.
        #[derive(Deserialize)]
        struct Answer {
            #[serde(default)]
            ok: bool,
            error: Option<String>,
        }
        let answer: Option<Answer> = serde_json::from_str(&body).ok();
        match answer {
            Some(Answer { ok: true, .. }) if status.is_success() => Ok(()),
            Some(Answer { error, .. }) => Err(with_detail(format!("HTTP {}, ok is not true", status.as_u16()), error)),
            None => Err(format!("HTTP {}, body is not a Gateway answer", status.as_u16())),
        }
    }
}
