//! Where the push credentials are (`FCM_*`); the sender that uses them is
//! `notifications::fcm`.

use std::fmt;

use super::ConfigError;

/// Base of the FCM HTTP v1 API.
pub const DEFAULT_FCM_API_URL: &str = "https://fcm.googleapis.com";

/// Where the push credentials are, read from the environment.
///
/// | variable | default |
/// |---|---|
/// | `FCM_SERVICE_ACCOUNT_JSON` | unset: pushes are off (journal only). A path to the Google service-account JSON file, or the JSON itself when it starts with `{` |
/// | `FCM_PROJECT_ID` | the file's `project_id` |
/// | `FCM_API_URL` | `https://fcm.googleapis.com` |
/// | `FCM_TOKEN_URL` | the file's `token_uri`, else `https://oauth2.googleapis.com/token` |
#[derive(Clone)]
pub struct FcmSettings {
    /// A path, or inline JSON holding the private key.
    pub service_account: String,
    pub project_id: Option<String>,
    pub api_url: String,
    pub token_url: Option<String>,
}

impl FcmSettings {
    /// `None` when `FCM_SERVICE_ACCOUNT_JSON` is unset; another `FCM_*` variable without it is
    /// a half-done setup and refused. `get` already treats blank values as unset.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, ConfigError> {
        let Some(service_account) = get("FCM_SERVICE_ACCOUNT_JSON") else {
            for name in ["FCM_PROJECT_ID", "FCM_API_URL", "FCM_TOKEN_URL"] {
                if let Some(value) = get(name) {
                    return Err(ConfigError::Invalid {
                        name,
                        value,
                        expected: "nothing while FCM_SERVICE_ACCOUNT_JSON is unset (pushes are off)",
                    });
                }
            }
            return Ok(None);
        };
        let url = |value: String| value.trim_end_matches('/').to_owned();
        Ok(Some(Self {
            service_account,
            project_id: get("FCM_PROJECT_ID"),
            api_url: get("FCM_API_URL").map_or_else(|| DEFAULT_FCM_API_URL.to_owned(), url),
            token_url: get("FCM_TOKEN_URL").map(url),
        }))
    }

    /// Whether `service_account` is the JSON itself rather than a path to it.
    pub fn service_account_is_inline(&self) -> bool {
        self.service_account.trim_start().starts_with('{')
    }
}

impl fmt::Debug for FcmSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let source = if self.service_account_is_inline() { "<inline JSON>" } else { self.service_account.as_str() };
        f.debug_struct("FcmSettings")
            .field("service_account", &source)
            .field("project_id", &self.project_id)
            .field("api_url", &self.api_url)
            .field("token_url", &self.token_url)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn settings(vars: &[(&str, &str)]) -> Result<Option<FcmSettings>, ConfigError> {
        let vars: HashMap<&str, &str> = vars.iter().copied().collect();
        FcmSettings::from_env(|name| vars.get(name).map(|value| (*value).to_owned()))
    }

    #[test]
    fn no_service_account_means_pushes_are_off() {
        assert!(settings(&[]).expect("accepted").is_none());
    }

    #[test]
    fn a_project_id_without_a_service_account_is_refused() {
        let err = settings(&[("FCM_PROJECT_ID", "floor")]).expect_err("refused");
        assert!(err.to_string().starts_with("FCM_PROJECT_ID"), "{err}");
    }
}
