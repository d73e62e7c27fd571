//! A stand-in for Google: the OAuth2 token endpoint and FCM's `messages:send`, on 127.0.0.1,
//! with a service-account file whose RSA key is generated for the test.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::routing::post;
use axum::{Form, Json, Router};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use rsa::pkcs1::EncodeRsaPublicKey;
use rsa::pkcs8::{EncodePrivateKey, LineEnding};
use serde::Deserialize;
use serde_json::{Value, json};

pub const PROJECT: &str = "floor-test";
const CLIENT_EMAIL: &str = "push@floor-test.iam.gserviceaccount.com";

/// What the fake was asked, and how it answers devices.
#[derive(Default)]
struct Recorded {
    token_requests: usize,
    /// Every message FCM accepted or refused, as sent.
    messages: Vec<Value>,
    /// Devices answered 404 UNREGISTERED.
    unregistered: HashSet<String>,
    /// Devices answered 500.
    broken: HashSet<String>,
    /// Bumped by a revocation: only the access token of the current generation is valid.
    generation: usize,
}

fn access_token(generation: usize) -> String {
    format!("fake-access-token-{generation}")
}

#[derive(Clone)]
struct Shared {
    recorded: Arc<Mutex<Recorded>>,
    public_key: Arc<DecodingKey>,
    token_url: String,
}

pub struct FakeFcm {
    base: String,
    recorded: Arc<Mutex<Recorded>>,
    folder: tempfile::TempDir,
}

impl FakeFcm {
    pub async fn start() -> Self {
        let key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048).expect("an RSA key");
        let public_der = key.to_public_key().to_pkcs1_der().expect("public key DER");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind the fake");
        let base = format!("http://{}", listener.local_addr().expect("an address"));
        let recorded = Arc::new(Mutex::new(Recorded::default()));
        let shared = Shared {
            recorded: recorded.clone(),
            public_key: Arc::new(DecodingKey::from_rsa_der(public_der.as_bytes())),
            token_url: format!("{base}/token"),
        };
        let app = Router::new()
            .route("/token", post(issue_token))
            .route("/v1/projects/{project}/messages:send", post(send_message))
            .with_state(shared);
        tokio::spawn(async move { axum::serve(listener, app).await });

        let folder = tempfile::tempdir().expect("a folder");
        let account = json!({
            "type": "service_account",
            "project_id": PROJECT,
            "private_key_id": "test-key-1",
            "private_key": key.to_pkcs8_pem(LineEnding::LF).expect("PEM").to_string(),
            "client_email": CLIENT_EMAIL,
            "token_uri": "https://oauth2.googleapis.com/token",
        });
        std::fs::write(folder.path().join("service-account.json"), account.to_string()).expect("written");
        Self { base, recorded, folder }
    }

    /// The environment that points the app at this fake.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            (
                "FCM_SERVICE_ACCOUNT_JSON".to_owned(),
                self.folder.path().join("service-account.json").display().to_string(),
            ),
            ("FCM_API_URL".to_owned(), self.base.clone()),
            ("FCM_TOKEN_URL".to_owned(), format!("{}/token", self.base)),
        ]
    }

    pub fn answer_unregistered(&self, device: &str) {
        self.recorded.lock().expect("lock").unregistered.insert(device.to_owned());
    }

    pub fn answer_broken(&self, device: &str) {
        self.recorded.lock().expect("lock").broken.insert(device.to_owned());
    }

    /// Every access token issued so far stops working, as when Google revokes one early.
    pub fn revoke_access_tokens(&self) {
        self.recorded.lock().expect("lock").generation += 1;
    }

    pub fn token_requests(&self) -> usize {
        self.recorded.lock().expect("lock").token_requests
    }

    pub fn messages(&self) -> Vec<Value> {
        self.recorded.lock().expect("lock").messages.clone()
    }
}

#[derive(Deserialize)]
struct AssertionClaims {
    scope: String,
}

/// Checks the service-account assertion as Google does: signature, issuer, audience, scope.
async fn issue_token(
    State(shared): State<Shared>,
    Form(form): Form<HashMap<String, String>>,
) -> (StatusCode, Json<Value>) {
    let generation = {
        let mut recorded = shared.recorded.lock().expect("lock");
        recorded.token_requests += 1;
        recorded.generation
    };
    let refuse =
        |why: &str| (StatusCode::BAD_REQUEST, Json(json!({"error": "invalid_grant", "error_description": why})));
    if form.get("grant_type").map(String::as_str) != Some("urn:ietf:params:oauth:grant-type:jwt-bearer") {
        return refuse("grant_type");
    }
    let Some(assertion) = form.get("assertion") else { return refuse("no assertion") };
    let mut validation = Validation::new(Algorithm::RS256);
    validation.set_audience(&[shared.token_url.as_str()]);
    validation.set_issuer(&[CLIENT_EMAIL]);
    validation.set_required_spec_claims(&["exp", "iat", "aud", "iss"]);
    match jsonwebtoken::decode::<AssertionClaims>(assertion, &shared.public_key, &validation) {
        Ok(data) if data.claims.scope == "https://www.googleapis.com/auth/firebase.messaging" => (
            StatusCode::OK,
            Json(json!({"access_token": access_token(generation), "expires_in": 3599, "token_type": "Bearer"})),
        ),
        Ok(_) => refuse("scope"),
        Err(err) => refuse(&err.to_string()),
    }
}

async fn send_message(
    State(shared): State<Shared>,
    Path(project): Path<String>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    let bearer = headers.get(header::AUTHORIZATION).and_then(|value| value.to_str().ok());
    let mut recorded = shared.recorded.lock().expect("lock");
    let expected = format!("Bearer {}", access_token(recorded.generation));
    if bearer != Some(expected.as_str()) || project != PROJECT {
        return (StatusCode::UNAUTHORIZED, Json(json!({"error": {"code": 401, "status": "UNAUTHENTICATED"}})));
    }
    let device = body["message"]["token"].as_str().unwrap_or_default().to_owned();
    recorded.messages.push(body["message"].clone());
    if recorded.unregistered.contains(&device) {
        return (
            StatusCode::NOT_FOUND,
            Json(json!({"error": {"code": 404, "message": "Requested entity was not found.", "status": "NOT_FOUND",
                "details": [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "UNREGISTERED"}]}})),
        );
    }
    if recorded.broken.contains(&device) {
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({"error": {"code": 500, "message": "Internal error", "status": "INTERNAL"}})),
        );
    }
    (StatusCode::OK, Json(json!({"name": format!("projects/{PROJECT}/messages/{}", recorded.messages.len())})))
}
