//! The SMS.ru channel: one text message, the number's own status read from the answer.

use std::collections::HashMap;

use serde::Deserialize;

use super::provider::{Attempt, digits_only, send, with_detail};
use crate::infra::config::channels::SmsRuSettings;

pub(super) struct SmsRu {
    pub(super) settings: Option<SmsRuSettings>,
    pub(super) http: reqwest::Client,
}

impl SmsRu {
    pub(super) async fn deliver(&self, phone: &str, code: &str) -> Attempt {
        let Some(settings) = &self.settings else {
            return Err("not configured (SMSRU_API_ID is unset)".to_owned());
        };
        let to = digits_only(phone);
        let msg = format!("Код входа в Floor: {code}");
        let request = self.http.post(format!("{}/sms/send", settings.url)).form(&[
            ("api_id", settings.api_id.as_str()),
            ("to", to),
            ("msg", msg.as_str()),
            ("json", "1"),
        ]);
        let (status, body) = send(request).await?;
        if !status.is_success() {
            return Err(format!("HTTP {}", status.as_u16()));
        }

        // {"status":"OK","status_code":100,"sms":{"79991234567":{"status":"OK",...}},...}
        // or, for a request-level error, {"status":"ERROR","status_code":200,"status_text":".."}.
        #[derive(Deserialize)]
        struct Status {
            status: Option<String>,
            status_text: Option<String>,
        }
        #[derive(Deserialize)]
        struct Answer {
            #[serde(flatten)]
            overall: Status,
            #[serde(default)]
            sms: HashMap<String, Status>,
        }
        let Ok(answer) = serde_json::from_str::<Answer>(&body) else {
            return Err(format!("HTTP {}, body is not an SMS.ru answer", status.as_u16()));
        };
        if answer.overall.status.as_deref() != Some("OK") {
            return Err(with_detail("request refused".to_owned(), answer.overall.status_text));
        }
        // One number was sent, so a single entry under a differently formatted key is still
        // ours; SMS.ru normalises numbers and we should not lose a sent SMS over formatting.
        let entry = match answer.sms.get(to) {
            Some(entry) => Some(entry),
            None if answer.sms.len() == 1 => answer.sms.values().next(),
            None => None,
        };
        match entry {
            Some(Status { status: Some(s), .. }) if s == "OK" => Ok(()),
            Some(entry) => Err(with_detail("number refused".to_owned(), entry.status_text.clone())),
            None => Err("no status for the number in the answer".to_owned()),
        }
    }
}
