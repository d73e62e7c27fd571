//! The WhatsApp Cloud API channel: the authentication template, the code in its body and in
//! its copy-code button.

use serde::Deserialize;
use serde_json::json;

use super::provider::{Attempt, digits_only, send, with_detail};
use crate::infra::config::channels::WhatsappSettings;

pub(super) struct Whatsapp {
    pub(super) settings: Option<WhatsappSettings>,
    pub(super) http: reqwest::Client,
}

impl Whatsapp {
    pub(super) async fn deliver(&self, phone: &str, code: &str) -> Attempt {
        let Some(settings) = &self.settings else {
            return Err("not configured (WHATSAPP_ACCESS_TOKEN and WHATSAPP_PHONE_NUMBER_ID are required)".to_owned());
        };
        // Authentication templates take the code twice: in the body and in the copy-code
        // button's URL parameter.
        let request = self
            .http
            .post(format!("{}/{}/messages", settings.url, settings.phone_number_id))
            .bearer_auth(&settings.access_token)
            .json(&json!({
                "messaging_product": "whatsapp",
                "to": digits_only(phone),
                "type": "template",
                "template": {
                    "name": settings.template,
                    "language": { "code": settings.language },
                    "components": [
                        {
                            "type": "body",
                            "parameters": [{ "type": "text", "text": code }],
                        },
                        {
                            "type": "button",
                            "sub_type": "url",
                            "index": "0",
                            "parameters": [{ "type": "text", "text": code }],
                        },
                    ],
                },
            }));
        let (status, body) = send(request).await?;
        if status.is_success() {
            return Ok(());
        }

        // Graph API errors look like {"error": {"message": "...", "code": 190, ...}}.
        #[derive(Deserialize)]
        struct Answer {
            error: Option<GraphError>,
        }
        #[derive(Deserialize)]
        struct GraphError {
            message: Option<String>,
        }
        let message =
            serde_json::from_str::<Answer>(&body).ok().and_then(|answer| answer.error).and_then(|error| error.message);
        Err(with_detail(format!("HTTP {}", status.as_u16()), message))
    }
}
