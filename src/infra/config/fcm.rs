//! Where the push credentials are (`FCM_*`); the sender that uses them is
//! `notifications::fcm`.

use std::fmt;

use super::error::{ConfigError, invalid};
use super::variables::{read, value_of};

/// The variables of the pushes.
#[derive(clap::Args)]
pub struct FcmVariables {
    /// A Google service-account JSON file: a path, or the JSON itself when it starts with `{`.
    /// Set: notifications are pushed through FCM HTTP v1; unset: only journaled.
    #[arg(long, env = "FCM_SERVICE_ACCOUNT_JSON")]
    pub fcm_service_account_json: Option<String>,
    /// The Firebase project that sends the pushes.
    ///
    /// Default: the file's `project_id`
    #[arg(long, env = "FCM_PROJECT_ID")]
    pub fcm_project_id: Option<String>,
    /// FCM's base URL (tests point it at a local fake).
    #[arg(long, env = "FCM_API_URL", default_value = "https://fcm.googleapis.com")]
    pub fcm_api_url: String,
    /// The OAuth2 token endpoint of the service account; without it or the file's, Google's
    /// own.
    ///
    /// Default: the file's `token_uri`
    #[arg(long, env = "FCM_TOKEN_URL")]
    pub fcm_token_url: Option<String>,
}

/// The variables that mean nothing without `FCM_SERVICE_ACCOUNT_JSON`.
const COMPANIONS: [&str; 3] = ["FCM_PROJECT_ID", "FCM_API_URL", "FCM_TOKEN_URL"];

/// Where the push credentials are, read from the environment.
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
    /// a half-done setup and refused. Blank values count as unset.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, ConfigError> {
        Self::from_variables(read(&get)?, &get)
    }

    /// `get` tells a companion that was set from one at its default.
    pub(super) fn from_variables(
        variables: FcmVariables,
        get: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, ConfigError> {
        let Some(service_account) = variables.fcm_service_account_json else {
            for name in COMPANIONS {
                if let Some(value) = value_of(get, name) {
                    return Err(invalid(
                        name,
                        &value,
                        "nothing while FCM_SERVICE_ACCOUNT_JSON is unset (pushes are off)",
                    ));
                }
            }
            return Ok(None);
        };
        let url = |value: String| value.trim_end_matches('/').to_owned();
        Ok(Some(Self {
            service_account,
            project_id: variables.fcm_project_id,
            api_url: url(variables.fcm_api_url),
            token_url: variables.fcm_token_url.map(url),
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
