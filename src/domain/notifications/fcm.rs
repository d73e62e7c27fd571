//! Push delivery through Firebase Cloud Messaging's HTTP v1 API.
//!
//! The service account's private key signs a JWT assertion (RS256); Google's token endpoint
//! trades it for an OAuth2 access token, which is cached until shortly before it expires;
//! every device token then gets its own `POST /v1/projects/{project}/messages:send`.
//! Configured by [`FcmSettings`]; a bad service-account file stops the server at
//! startup ([`PushConfigError`]). Device tokens and keys never reach logs or `Debug` output.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::infra::config::FcmSettings;
use crate::infra::outbound::{self, transport_reason};

/// The text of a push, in Russian (the interface language).
#[derive(Clone, Debug)]
pub struct PushMessage {
    pub title: String,
    pub body: String,
}

/// Google's OAuth2 token endpoint, when the service-account file names none.
pub const DEFAULT_TOKEN_URL: &str = "https://oauth2.googleapis.com/token";
/// The one scope FCM sends need.
const SCOPE: &str = "https://www.googleapis.com/auth/firebase.messaging";
const JWT_BEARER_GRANT: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// Google accepts assertions of at most an hour.
const ASSERTION_LIFETIME_SECS: i64 = 3600;
/// A cached access token is renewed this long before it expires, so a send never carries
/// one that dies in flight.
const RENEWAL_MARGIN: Duration = Duration::from_secs(120);
/// What a token answer without `expires_in` is assumed to live (Google's usual hour).
const DEFAULT_TOKEN_LIFETIME_SECS: u64 = 3600;
/// Bound on one request, so a slow FCM cannot hold the event that pushes for long.
const HTTP_TIMEOUT: Duration = Duration::from_secs(10);

/// Why push delivery cannot be set up; the server refuses to start on it.
#[derive(Debug, thiserror::Error)]
pub enum PushConfigError {
    #[error("FCM_SERVICE_ACCOUNT_JSON: cannot read {path}: {reason}")]
    Unreadable { path: String, reason: String },
    #[error("FCM_SERVICE_ACCOUNT_JSON is not a Google service-account JSON: {0}")]
    NotServiceAccount(String),
    #[error("FCM_SERVICE_ACCOUNT_JSON: private_key is not an RSA private key in PEM: {0}")]
    BadKey(String),
    #[error("FCM_PROJECT_ID is unset and the service-account file has no project_id")]
    NoProject,
    #[error("cannot create the HTTP client for push delivery: {0}")]
    HttpClient(String),
}

/// The fields of a service-account key file that the JWT flow needs.
#[derive(Deserialize)]
struct ServiceAccount {
    #[serde(rename = "type")]
    kind: Option<String>,
    project_id: Option<String>,
    private_key_id: Option<String>,
    private_key: String,
    client_email: String,
    token_uri: Option<String>,
}

// ---------------------------------------------------------------------------------------------
// Sender
// ---------------------------------------------------------------------------------------------

/// What FCM said about one device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SendOutcome {
    Accepted,
    /// The app was uninstalled or the token expired: the token should be forgotten.
    Unregistered,
    /// Anything else; the reason is for logs.
    Failed(String),
}

/// An access token and when to stop using it.
struct CachedToken {
    value: String,
    renew_at: Instant,
}

/// Sends pushes to single devices through FCM. Shared by every notification; the access
/// token cache is behind a lock, so concurrent sends fetch one token between them.
pub struct FcmSender {
    http: reqwest::Client,
    send_url: String,
    token_url: String,
    client_email: String,
    key_id: Option<String>,
    key: EncodingKey,
    token: Mutex<Option<CachedToken>>,
}

impl fmt::Debug for FcmSender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FcmSender")
            .field("send_url", &self.send_url)
            .field("token_url", &self.token_url)
            .field("client_email", &self.client_email)
            .finish_non_exhaustive()
    }
}

#[derive(Serialize)]
struct AssertionClaims<'a> {
    iss: &'a str,
    scope: &'a str,
    aud: &'a str,
    iat: i64,
    exp: i64,
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    expires_in: Option<u64>,
}

impl FcmSender {
    /// Reads and checks the service account: the file, its fields and its key.
    pub fn from_settings(settings: &FcmSettings) -> Result<Self, PushConfigError> {
        let text = if settings.service_account_is_inline() {
            settings.service_account.clone()
        } else {
            std::fs::read_to_string(&settings.service_account).map_err(|err| PushConfigError::Unreadable {
                path: settings.service_account.clone(),
                reason: err.to_string(),
            })?
        };
        let account: ServiceAccount =
            serde_json::from_str(&text).map_err(|err| PushConfigError::NotServiceAccount(err.to_string()))?;
        if let Some(kind) = account.kind.as_deref().filter(|kind| *kind != "service_account") {
            return Err(PushConfigError::NotServiceAccount(format!("its type is {kind:?}, not \"service_account\"")));
        }
        if account.client_email.trim().is_empty() {
            return Err(PushConfigError::NotServiceAccount("client_email is empty".to_owned()));
        }
        let key = rsa_encoding_key(&account.private_key)?;
        let project = settings.project_id.clone().or(account.project_id).ok_or(PushConfigError::NoProject)?;
        let token_url =
            settings.token_url.clone().or(account.token_uri).unwrap_or_else(|| DEFAULT_TOKEN_URL.to_owned());
        let http = outbound::client(HTTP_TIMEOUT).map_err(|err| PushConfigError::HttpClient(err.to_string()))?;
        Ok(Self {
            http,
            send_url: format!("{}/v1/projects/{project}/messages:send", settings.api_url),
            token_url,
            client_email: account.client_email,
            key_id: account.private_key_id,
            key,
            token: Mutex::new(None),
        })
    }

    /// Sends one notification to one device. Never fails: what went wrong is the outcome.
    pub async fn send(&self, device_token: &str, push: &PushMessage, data: &BTreeMap<String, String>) -> SendOutcome {
        let body = json!({
            "message": {
                "token": device_token,
                "notification": { "title": push.title, "body": push.body },
                "data": data,
            }
        });
        // A second try only after a 401: the cached token was revoked or expired early.
        let mut retried = false;
        loop {
            let access_token = match self.access_token().await {
                Ok(token) => token,
                Err(reason) => return SendOutcome::Failed(format!("no access token: {reason}")),
            };
            let response = match self.http.post(&self.send_url).bearer_auth(&access_token).json(&body).send().await {
                Ok(response) => response,
                Err(err) => return SendOutcome::Failed(transport_reason(err)),
            };
            let status = response.status();
            if status.is_success() {
                return SendOutcome::Accepted;
            }
            if status == reqwest::StatusCode::UNAUTHORIZED && !retried {
                retried = true;
                self.forget_token(&access_token).await;
                continue;
            }
            let text = response.text().await.unwrap_or_default();
            return classify_failure(status.as_u16(), &text);
        }
    }

    /// The cached access token, or a fresh one when it is missing or due for renewal.
    async fn access_token(&self) -> Result<String, String> {
        let mut cached = self.token.lock().await;
        if let Some(token) = cached.as_ref().filter(|token| Instant::now() < token.renew_at) {
            return Ok(token.value.clone());
        }
        let fresh = self.fetch_token().await?;
        let value = fresh.value.clone();
        *cached = Some(fresh);
        Ok(value)
    }

    /// Drops `rejected` from the cache, unless another send already replaced it.
    async fn forget_token(&self, rejected: &str) {
        let mut cached = self.token.lock().await;
        if cached.as_ref().is_some_and(|token| token.value == rejected) {
            *cached = None;
        }
    }

    /// The service-account JWT flow: a signed assertion for an access token.
    async fn fetch_token(&self) -> Result<CachedToken, String> {
        let now = chrono::Utc::now().timestamp();
        let claims = AssertionClaims {
            iss: &self.client_email,
            scope: SCOPE,
            aud: &self.token_url,
            iat: now,
            exp: now + ASSERTION_LIFETIME_SECS,
        };
        let mut header = Header::new(Algorithm::RS256);
        header.kid = self.key_id.clone();
        let assertion =
            jsonwebtoken::encode(&header, &claims, &self.key).map_err(|err| format!("signing the assertion: {err}"))?;
        let response = self
            .http
            .post(&self.token_url)
            .form(&[("grant_type", JWT_BEARER_GRANT), ("assertion", assertion.as_str())])
            .send()
            .await
            .map_err(transport_reason)?;
        let status = response.status();
        let text = response.text().await.map_err(transport_reason)?;
        if !status.is_success() {
            // OAuth errors are {"error": "invalid_grant", "error_description": "..."}: no secrets.
            return Err(format!("token endpoint answered HTTP {}: {}", status.as_u16(), short(&text)));
        }
        let answer: TokenAnswer =
            serde_json::from_str(&text).map_err(|err| format!("token endpoint answer is not a token: {err}"))?;
        Ok(CachedToken {
            value: answer.access_token,
            renew_at: Instant::now() + renewal_delay(answer.expires_in.unwrap_or(DEFAULT_TOKEN_LIFETIME_SECS)),
        })
    }
}

/// Parses the key of a service-account file (PKCS#8, as Google issues them; PKCS#1 too).
fn rsa_encoding_key(pem: &str) -> Result<EncodingKey, PushConfigError> {
    use rsa::pkcs1::{DecodeRsaPrivateKey, EncodeRsaPrivateKey};
    use rsa::pkcs8::DecodePrivateKey;

    let key = rsa::RsaPrivateKey::from_pkcs8_pem(pem)
        .or_else(|pkcs8| rsa::RsaPrivateKey::from_pkcs1_pem(pem).map_err(|_| pkcs8.to_string()))
        .map_err(PushConfigError::BadKey)?;
    let der = key.to_pkcs1_der().map_err(|err| PushConfigError::BadKey(err.to_string()))?;
    Ok(EncodingKey::from_rsa_der(der.as_bytes()))
}

/// How long a token that lives `expires_in` seconds is used before it is renewed.
fn renewal_delay(expires_in: u64) -> Duration {
    Duration::from_secs(expires_in).saturating_sub(RENEWAL_MARGIN)
}

/// Reads an FCM error answer. The device is gone only when FCM says `UNREGISTERED`: a bare
/// 404, even in FCM's error shape, is also what a wrong project id or `FCM_API_URL` gives,
/// and must not wipe every token.
fn classify_failure(status: u16, body: &str) -> SendOutcome {
    #[derive(Deserialize)]
    struct Answer {
        error: FcmError,
    }
    #[derive(Deserialize)]
    struct FcmError {
        message: Option<String>,
        #[serde(default)]
        details: Vec<Value>,
    }
    let Ok(Answer { error }) = serde_json::from_str::<Answer>(body) else {
        return SendOutcome::Failed(format!("HTTP {status}"));
    };
    let unregistered = error.details.iter().any(|detail| detail["errorCode"] == "UNREGISTERED");
    if unregistered {
        return SendOutcome::Unregistered;
    }
    match error.message {
        Some(message) => SendOutcome::Failed(format!("HTTP {status}: {}", short(&message))),
        None => SendOutcome::Failed(format!("HTTP {status}")),
    }
}

/// A provider's text, cut to a log line.
fn short(text: &str) -> String {
    const LIMIT: usize = 200;
    let text = text.trim();
    match text.char_indices().nth(LIMIT) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// FCM `data` takes string values only: the notification's kind, then each payload field,
/// strings as they are and anything else as its JSON text. A payload that is not an object
/// travels whole under `payload`.
pub fn message_data(kind: &str, payload: &Value) -> BTreeMap<String, String> {
    let mut data = BTreeMap::new();
    match payload {
        Value::Object(fields) => {
            for (key, value) in fields {
                let text = match value {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                data.insert(key.clone(), text);
            }
        }
        Value::Null => {}
        other => {
            data.insert("payload".to_owned(), other.to_string());
        }
    }
    data.insert("kind".to_owned(), kind.to_owned());
    data
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn settings(vars: &[(&str, &str)]) -> Result<Option<FcmSettings>, crate::infra::config::ConfigError> {
        let vars: HashMap<&str, &str> = vars.iter().copied().collect();
        FcmSettings::from_env(|name| vars.get(name).map(|value| (*value).to_owned()))
    }

    /// A real 2048-bit key in PKCS#8 PEM, as Google issues them.
    fn generated_key_pem() -> String {
        use rsa::pkcs8::{EncodePrivateKey, LineEnding};
        let key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048).expect("a key");
        key.to_pkcs8_pem(LineEnding::LF).expect("PEM").to_string()
    }

    fn inline_account(private_key: &str) -> String {
        json!({
            "type": "service_account",
            "project_id": "floor-test",
            "private_key_id": "kid-1",
            "private_key": private_key,
            "client_email": "push@floor-test.iam.gserviceaccount.com",
        })
        .to_string()
    }

    #[test]
    fn a_missing_file_fails_naming_the_variable_and_the_path() {
        let settings = settings(&[("FCM_SERVICE_ACCOUNT_JSON", "/nonexistent/sa.json")]).expect("ok").expect("on");
        let err = FcmSender::from_settings(&settings).expect_err("refused");
        let text = err.to_string();
        assert!(text.starts_with("FCM_SERVICE_ACCOUNT_JSON: cannot read /nonexistent/sa.json"), "{text}");
    }

    #[test]
    fn a_file_that_is_not_a_service_account_is_refused() {
        let settings =
            settings(&[("FCM_SERVICE_ACCOUNT_JSON", r#"{"type": "authorized_user"}"#)]).expect("ok").expect("on");
        let err = FcmSender::from_settings(&settings).expect_err("refused");
        assert!(matches!(err, PushConfigError::NotServiceAccount(_)), "{err}");
    }

    #[test]
    fn a_key_that_is_not_pem_is_refused_without_echoing_it() {
        let account = inline_account("-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n");
        let settings = settings(&[("FCM_SERVICE_ACCOUNT_JSON", &account)]).expect("ok").expect("on");
        let err = FcmSender::from_settings(&settings).expect_err("refused");
        assert!(matches!(err, PushConfigError::BadKey(_)), "{err}");
        assert!(!err.to_string().contains("bm90IGEga2V5"));
    }

    #[test]
    fn a_valid_account_builds_with_the_project_of_the_file_unless_overridden() {
        let account = inline_account(&generated_key_pem());
        let from_file = settings(&[("FCM_SERVICE_ACCOUNT_JSON", &account)]).expect("ok").expect("on");
        let sender = FcmSender::from_settings(&from_file).expect("builds");
        assert_eq!(sender.send_url, "https://fcm.googleapis.com/v1/projects/floor-test/messages:send");
        assert_eq!(sender.token_url, DEFAULT_TOKEN_URL);

        let overridden = settings(&[
            ("FCM_SERVICE_ACCOUNT_JSON", &account),
            ("FCM_PROJECT_ID", "other"),
            ("FCM_API_URL", "http://127.0.0.1:9/"),
            ("FCM_TOKEN_URL", "http://127.0.0.1:9/token"),
        ])
        .expect("ok")
        .expect("on");
        let sender = FcmSender::from_settings(&overridden).expect("builds");
        assert_eq!(sender.send_url, "http://127.0.0.1:9/v1/projects/other/messages:send");
        assert_eq!(sender.token_url, "http://127.0.0.1:9/token");
        let printed = format!("{overridden:?} {sender:?}");
        assert!(!printed.contains("PRIVATE KEY"), "{printed}");
    }

    #[test]
    fn a_token_is_renewed_two_minutes_before_it_expires() {
        assert_eq!(renewal_delay(3600), Duration::from_secs(3480));
        assert_eq!(renewal_delay(60), Duration::ZERO);
    }

    #[test]
    fn only_unregistered_forgets_the_device() {
        let unregistered = r#"{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND",
            "details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"UNREGISTERED"}]}}"#;
        assert_eq!(classify_failure(404, unregistered), SendOutcome::Unregistered);
        let bare = r#"{"error":{"code":404,"message":"Requested entity was not found.","status":"NOT_FOUND"}}"#;
        assert_eq!(
            classify_failure(404, bare),
            SendOutcome::Failed("HTTP 404: Requested entity was not found.".to_owned())
        );
        assert_eq!(classify_failure(404, "<html>Not Found</html>"), SendOutcome::Failed("HTTP 404".to_owned()));
        let quota = r#"{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}"#;
        assert_eq!(classify_failure(429, quota), SendOutcome::Failed("HTTP 429: Quota exceeded".to_owned()));
    }

    #[test]
    fn data_carries_the_kind_and_every_payload_field_as_text() {
        let data = message_data(
            "tournament.results",
            &json!({"tournamentId": "t-1", "place": 2, "points": 31, "final": true, "extra": {"a": 1}}),
        );
        let expected: BTreeMap<String, String> = [
            ("kind", "tournament.results"),
            ("tournamentId", "t-1"),
            ("place", "2"),
            ("points", "31"),
            ("final", "true"),
            ("extra", r#"{"a":1}"#),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        assert_eq!(data, expected);
        assert_eq!(message_data("admin_custom", &Value::Null).len(), 1);
        assert_eq!(message_data("admin_custom", &json!([1])).get("payload").map(String::as_str), Some("[1]"));
    }
}
