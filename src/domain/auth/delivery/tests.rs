//! The chain built from its settings, each channel against a mock of its provider, and the code
//! kept out of every log and error.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::json;

use super::*;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri, header};

const PHONE: &str = "+79991234567";
const CODE: &str = "482913";

/// One request as a provider mock saw it.
#[derive(Clone, Debug)]
struct Received {
    path: String,
    authorization: Option<String>,
    content_type: Option<String>,
    body: String,
}

impl Received {
    fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).expect("mock received a JSON body")
    }

    /// Decodes an `application/x-www-form-urlencoded` body through `Url`'s query parser,
    /// which uses the same encoding.
    fn form(&self) -> HashMap<String, String> {
        let url =
            reqwest::Url::parse(&format!("http://form.invalid/?{}", self.body)).expect("form body parses as a query");
        url.query_pairs().into_owned().collect()
    }
}

#[derive(Clone)]
struct MockState {
    received: Arc<Mutex<Vec<Received>>>,
    status: StatusCode,
    body: String,
}

/// A provider stand-in: a real axum server on 127.0.0.1 that records every request and
/// answers each with the same status and body.
struct Mock {
    url: String,
    received: Arc<Mutex<Vec<Received>>>,
}

impl Mock {
    async fn start(status: u16, body: &str) -> Self {
        let received = Arc::new(Mutex::new(Vec::new()));
        let state = MockState {
            received: received.clone(),
            status: StatusCode::from_u16(status).expect("valid status"),
            body: body.to_owned(),
        };
        let app = Router::new().fallback(record).with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind mock");
        let addr = listener.local_addr().expect("mock address");
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { url: format!("http://{addr}"), received }
    }

    fn requests(&self) -> Vec<Received> {
        self.received.lock().expect("mock lock").clone()
    }
}

async fn record(
    State(state): State<MockState>,
    uri: Uri,
    headers: HeaderMap,
    body: String,
) -> (StatusCode, [(header::HeaderName, &'static str); 1], String) {
    let text = |name: header::HeaderName| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    state.received.lock().expect("mock lock").push(Received {
        path: uri.path().to_owned(),
        authorization: text(header::AUTHORIZATION),
        content_type: text(header::CONTENT_TYPE),
        body,
    });
    (state.status, [(header::CONTENT_TYPE, "application/json")], state.body)
}

fn settings(vars: &[(&str, &str)]) -> ChannelSettings {
    let vars: HashMap<String, String> = vars.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
    ChannelSettings::from_env(|name| vars.get(name).cloned()).expect("the channels' variables read")
}

fn chain(names: &str, settings: ChannelSettings, production: bool) -> DeliveryChain {
    DeliveryChain::build(Some(names), settings, production, false).expect("chain builds")
}

fn failed_channels(error: &DeliveryFailed) -> Vec<&'static str> {
    error.failures.iter().map(|f| f.channel).collect()
}

const TELEGRAM_OK: &str = r#"{"ok":true,"result":{"request_id":"r1","phone_number":"+79991234567"}}"#;
const SMSRU_OK: &str = r#"{"status":"OK","status_code":100,"sms":{"79991234567":{"status":"OK","status_code":100,"sms_id":"000000-10000000"}},"balance":4122.56}"#;

// --- building the chain -------------------------------------------------------------

#[test]
fn the_default_chain_is_telegram_whatsapp_sms_then_fake_outside_production() {
    let chain = DeliveryChain::build(None, ChannelSettings::default(), false, false).expect("chain builds");
    assert_eq!(chain.channel_names(), ["telegram", "whatsapp", "sms", "fake"]);
    assert!(chain.fake_outbox().is_some());
}

#[test]
fn the_production_chain_has_no_fake_channel_and_no_outbox() {
    let sms = settings(&[("SMSRU_API_ID", "sms-id")]);
    let chain = DeliveryChain::build(None, sms, true, true).expect("chain builds");
    assert_eq!(chain.channel_names(), ["telegram", "whatsapp", "sms"]);
    assert!(chain.fake_outbox().is_none());
}

#[test]
fn production_needs_a_listed_channel_with_its_credentials() {
    let none = DeliveryChain::build(None, ChannelSettings::default(), true, false);
    match none {
        Err(ChainError::NoChannelConfigured(listed)) => assert_eq!(listed, "telegram, whatsapp, sms"),
        other => panic!("expected NoChannelConfigured, got {other:?}"),
    }
    // Credentials of a channel that is not listed do not count.
    let unlisted = DeliveryChain::build(Some("telegram"), settings(&[("SMSRU_API_ID", "sms-id")]), true, false);
    assert!(matches!(unlisted, Err(ChainError::NoChannelConfigured(listed)) if listed == "telegram"));
    // Half of WhatsApp's is none of it.
    let half = DeliveryChain::build(Some("whatsapp"), settings(&[("WHATSAPP_ACCESS_TOKEN", "t")]), true, false);
    assert!(matches!(half, Err(ChainError::NoChannelConfigured(_))));
    let one = settings(&[("TELEGRAM_GATEWAY_TOKEN", "tg-token")]);
    assert!(DeliveryChain::build(Some("sms,telegram"), one, true, false).is_ok(), "one listed channel that can send");
    // Outside production the fake channel signs everyone in.
    assert!(DeliveryChain::build(None, ChannelSettings::default(), false, false).is_ok());
}

#[test]
fn fake_listed_in_production_is_a_configuration_error() {
    let result = DeliveryChain::build(Some("sms,fake"), ChannelSettings::default(), true, false);
    assert!(matches!(result, Err(ChainError::FakeInProduction)));
}

#[test]
fn an_unknown_channel_name_is_a_configuration_error_naming_it() {
    let result = DeliveryChain::build(Some("telegram,pigeon"), ChannelSettings::default(), false, false);
    match result {
        Err(ChainError::UnknownChannel(name)) => assert_eq!(name, "pigeon"),
        other => panic!("expected UnknownChannel, got {other:?}"),
    }
}

#[test]
fn names_are_trimmed_case_insensitive_and_kept_once_in_their_order() {
    let chain = chain(" SMS, telegram,,sms ", ChannelSettings::default(), false);
    assert_eq!(chain.channel_names(), ["sms", "telegram", "fake"]);
}

#[test]
fn a_listed_fake_channel_keeps_its_place_and_is_not_appended_again() {
    let chain = chain("fake,sms", ChannelSettings::default(), false);
    assert_eq!(chain.channel_names(), ["fake", "sms"]);
    assert!(chain.fake_outbox().is_some());
}

#[test]
fn a_blank_channel_list_means_the_default_order() {
    let chain = chain(" , ", settings(&[("SMSRU_API_ID", "sms-id")]), true);
    assert_eq!(chain.channel_names(), ["telegram", "whatsapp", "sms"]);
}

// --- settings -----------------------------------------------------------------------

#[test]
fn settings_use_documented_defaults_and_treat_blank_values_as_unset() {
    let s = settings(&[
        ("TELEGRAM_GATEWAY_TOKEN", "tg-token"),
        ("WHATSAPP_ACCESS_TOKEN", "wa-token"),
        ("WHATSAPP_PHONE_NUMBER_ID", "  "),
        ("SMSRU_API_ID", "sms-id"),
        ("SMSRU_URL", "http://127.0.0.1:9/"),
    ]);
    let telegram = s.telegram.expect("telegram configured");
    assert_eq!(telegram.url, "https://gatewayapi.telegram.org");
    assert!(s.whatsapp.is_none(), "a blank phone number id leaves whatsapp unconfigured");
    let sms = s.sms.expect("sms configured");
    assert_eq!(sms.url, "http://127.0.0.1:9", "trailing slash is trimmed");

    let s = settings(&[("WHATSAPP_ACCESS_TOKEN", "wa-token"), ("WHATSAPP_PHONE_NUMBER_ID", "1234")]);
    let whatsapp = s.whatsapp.expect("whatsapp configured");
    assert_eq!(whatsapp.template, "floor_otp");
    assert_eq!(whatsapp.language, "ru");
    assert_eq!(whatsapp.url, "https://graph.facebook.com/v21.0");
    assert!(s.telegram.is_none() && s.sms.is_none());
}

#[test]
fn debug_of_settings_and_chain_never_prints_tokens() {
    let s = settings(&[
        ("TELEGRAM_GATEWAY_TOKEN", "secret-telegram-token"),
        ("WHATSAPP_ACCESS_TOKEN", "secret-whatsapp-token"),
        ("WHATSAPP_PHONE_NUMBER_ID", "1234"),
        ("SMSRU_API_ID", "secret-smsru-id"),
    ]);
    let chain = chain("telegram,whatsapp,sms", s.clone(), false);
    let printed = format!("{s:?} {chain:?} {:#?}", chain.fake_outbox());
    for secret in ["secret-telegram-token", "secret-whatsapp-token", "secret-smsru-id"] {
        assert!(!printed.contains(secret), "{secret} leaked in {printed}");
    }
    assert!(printed.contains("telegram (configured)"), "{printed}");
}

// --- delivery -----------------------------------------------------------------------

#[tokio::test]
async fn with_nothing_configured_every_real_channel_is_skipped_and_fake_delivers() {
    let chain = DeliveryChain::build(None, ChannelSettings::default(), false, false).expect("chain builds");
    assert_eq!(chain.deliver(PHONE, CODE).await, Ok("fake"));
}

#[tokio::test]
async fn an_unconfigured_channel_is_skipped_and_the_next_configured_one_delivers() {
    let smsru = Mock::start(200, SMSRU_OK).await;
    let s = settings(&[("SMSRU_API_ID", "sms-id"), ("SMSRU_URL", &smsru.url)]);
    let chain = chain("telegram,sms", s, true);

    assert_eq!(chain.deliver(PHONE, CODE).await, Ok("sms"));
    assert_eq!(smsru.requests().len(), 1);
}

#[tokio::test]
async fn telegram_answering_ok_delivers_and_the_request_carried_the_bearer_token_and_code() {
    let gateway = Mock::start(200, TELEGRAM_OK).await;
    let s = settings(&[("TELEGRAM_GATEWAY_TOKEN", "tg-token"), ("TELEGRAM_GATEWAY_URL", &gateway.url)]);
    let chain = chain("telegram", s, false);

    assert_eq!(chain.deliver(PHONE, CODE).await, Ok("telegram"));
    let requests = gateway.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.path, "/sendVerificationMessage");
    assert_eq!(request.authorization.as_deref(), Some("Bearer tg-token"));
    assert_eq!(request.content_type.as_deref(), Some("application/json"));
    assert_eq!(request.json(), json!({"phone_number": PHONE, "code": CODE, "ttl": 300}));
}

#[tokio::test]
async fn telegram_answering_500_falls_through_to_the_next_channel() {
    let gateway = Mock::start(500, r#"{"ok":false,"error":"INTERNAL"}"#).await;
    let s = settings(&[("TELEGRAM_GATEWAY_TOKEN", "tg-token"), ("TELEGRAM_GATEWAY_URL", &gateway.url)]);
    let chain = chain("telegram", s, false);

    assert_eq!(chain.deliver(PHONE, CODE).await, Ok("fake"));
    assert_eq!(gateway.requests().len(), 1);
}

#[tokio::test]
async fn telegram_answering_ok_false_with_status_200_falls_through_to_the_next_channel() {
    let gateway = Mock::start(200, r#"{"ok":false,"error":"PHONE_NUMBER_INVALID"}"#).await;
    let s = settings(&[("TELEGRAM_GATEWAY_TOKEN", "tg-token"), ("TELEGRAM_GATEWAY_URL", &gateway.url)]);
    let chain = chain("telegram", s, true);

    let failed = chain.deliver(PHONE, CODE).await.expect_err("ok:false is a failure");
    assert_eq!(failed_channels(&failed), ["telegram"]);
    assert!(failed.failures[0].reason.contains("PHONE_NUMBER_INVALID"), "{failed}");
}

#[tokio::test]
async fn whatsapp_sends_the_authentication_template_with_the_code_in_body_and_button() {
    let graph = Mock::start(200, r#"{"messages":[{"id":"wamid.1"}]}"#).await;
    let s = settings(&[
        ("WHATSAPP_ACCESS_TOKEN", "wa-token"),
        ("WHATSAPP_PHONE_NUMBER_ID", "1234"),
        ("WHATSAPP_TEMPLATE", "club_code"),
        ("WHATSAPP_LANGUAGE", "en"),
        ("WHATSAPP_API_URL", &graph.url),
    ]);
    let chain = chain("whatsapp", s, false);

    assert_eq!(chain.deliver(PHONE, CODE).await, Ok("whatsapp"));
    let requests = graph.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.path, "/1234/messages");
    assert_eq!(request.authorization.as_deref(), Some("Bearer wa-token"));
    assert_eq!(
        request.json(),
        json!({
            "messaging_product": "whatsapp",
            "to": "79991234567",
            "type": "template",
            "template": {
                "name": "club_code",
                "language": {"code": "en"},
                "components": [
                    {"type": "body", "parameters": [{"type": "text", "text": CODE}]},
                    {"type": "button", "sub_type": "url", "index": "0",
                     "parameters": [{"type": "text", "text": CODE}]},
                ],
            },
        })
    );
}

#[tokio::test]
async fn whatsapp_answering_an_error_status_falls_through_with_the_graph_message() {
    let graph =
        Mock::start(401, r#"{"error":{"message":"Invalid OAuth access token.","type":"OAuthException","code":190}}"#)
            .await;
    let s = settings(&[
        ("WHATSAPP_ACCESS_TOKEN", "wa-token"),
        ("WHATSAPP_PHONE_NUMBER_ID", "1234"),
        ("WHATSAPP_API_URL", &graph.url),
    ]);

    assert_eq!(chain("whatsapp", s.clone(), false).deliver(PHONE, CODE).await, Ok("fake"));
    let failed = chain("whatsapp", s, true).deliver(PHONE, CODE).await.expect_err("401 is a failure");
    assert_eq!(failed.failures[0].reason, "HTTP 401: Invalid OAuth access token.");
    assert_eq!(graph.requests().len(), 2);
}

#[tokio::test]
async fn smsru_receives_the_form_and_delivers_when_the_number_status_is_ok() {
    let smsru = Mock::start(200, SMSRU_OK).await;
    let s = settings(&[("SMSRU_API_ID", "sms-id"), ("SMSRU_URL", &smsru.url)]);
    let chain = chain("sms", s, false);

    assert_eq!(chain.deliver(PHONE, CODE).await, Ok("sms"));
    let requests = smsru.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.path, "/sms/send");
    assert_eq!(request.content_type.as_deref(), Some("application/x-www-form-urlencoded"));
    let form = request.form();
    assert_eq!(form.get("api_id").map(String::as_str), Some("sms-id"));
    assert_eq!(form.get("to").map(String::as_str), Some("79991234567"));
    assert_eq!(form.get("msg").map(String::as_str), Some("Код входа в Floor: 482913"));
    assert_eq!(form.get("json").map(String::as_str), Some("1"));
}

#[tokio::test]
async fn smsru_per_number_failure_falls_through_to_the_next_channel() {
    let smsru = Mock::start(
        200,
        r#"{"status":"OK","status_code":100,"sms":{"79991234567":{"status":"ERROR","status_code":207,"status_text":"На этот номер нельзя отправлять сообщения"}},"balance":1.0}"#,
    )
    .await;
    let s = settings(&[("SMSRU_API_ID", "sms-id"), ("SMSRU_URL", &smsru.url)]);

    assert_eq!(chain("sms", s.clone(), false).deliver(PHONE, CODE).await, Ok("fake"));
    let failed = chain("sms", s, true).deliver(PHONE, CODE).await.expect_err("per-number ERROR is a failure");
    assert_eq!(failed.failures[0].reason, "number refused: На этот номер нельзя отправлять сообщения");
}

#[tokio::test]
async fn smsru_request_level_error_falls_through() {
    let smsru = Mock::start(200, r#"{"status":"ERROR","status_code":200,"status_text":"Неправильный api_id"}"#).await;
    let s = settings(&[("SMSRU_API_ID", "sms-id"), ("SMSRU_URL", &smsru.url)]);

    let failed = chain("sms", s, true).deliver(PHONE, CODE).await.expect_err("status ERROR is a failure");
    assert_eq!(failed.failures[0].reason, "request refused: Неправильный api_id");
}

#[tokio::test]
async fn smsru_single_number_under_a_reformatted_key_still_counts() {
    let smsru = Mock::start(
        200,
        r#"{"status":"OK","status_code":100,"sms":{"7 999 123-45-67":{"status":"OK","status_code":100}}}"#,
    )
    .await;
    let s = settings(&[("SMSRU_API_ID", "sms-id"), ("SMSRU_URL", &smsru.url)]);

    assert_eq!(chain("sms", s, true).deliver(PHONE, CODE).await, Ok("sms"));
}

#[tokio::test]
async fn all_channels_failing_gives_delivery_failed_listing_every_channel_in_order() {
    let gateway = Mock::start(200, r#"{"ok":false,"error":"ACCESS_TOKEN_INVALID"}"#).await;
    let graph = Mock::start(500, "oops").await;
    let smsru = Mock::start(503, "").await;
    let s = settings(&[
        ("TELEGRAM_GATEWAY_TOKEN", "tg-token"),
        ("TELEGRAM_GATEWAY_URL", &gateway.url),
        ("WHATSAPP_ACCESS_TOKEN", "wa-token"),
        ("WHATSAPP_PHONE_NUMBER_ID", "1234"),
        ("WHATSAPP_API_URL", &graph.url),
        ("SMSRU_API_ID", "sms-id"),
        ("SMSRU_URL", &smsru.url),
    ]);
    let chain = DeliveryChain::build(None, s, true, false).expect("chain builds");

    let failed = chain.deliver(PHONE, CODE).await.expect_err("nothing delivers");
    assert_eq!(failed_channels(&failed), ["telegram", "whatsapp", "sms"]);
    assert_eq!(
        failed.to_string(),
        "no channel delivered the one-time code (telegram: HTTP 200, ok is not true: \
         ACCESS_TOKEN_INVALID; whatsapp: HTTP 500; sms: HTTP 503)"
    );
    // Each provider was asked exactly once.
    for mock in [&gateway, &graph, &smsru] {
        assert_eq!(mock.requests().len(), 1);
    }
}

#[tokio::test]
async fn unconfigured_channels_fail_with_not_configured_and_send_nothing() {
    // Production starts with one channel that can send; the others stay in the chain.
    let smsru = Mock::start(503, "").await;
    let sms_only = settings(&[("SMSRU_API_ID", "sms-id"), ("SMSRU_URL", &smsru.url)]);
    let chain = DeliveryChain::build(None, sms_only, true, false).expect("chain builds");
    let failed = chain.deliver(PHONE, CODE).await.expect_err("nothing delivers");
    assert_eq!(failed_channels(&failed), ["telegram", "whatsapp", "sms"]);
    let reasons: Vec<&str> = failed.failures.iter().map(|f| f.reason.as_str()).collect();
    assert!(reasons[..2].iter().all(|reason| reason.starts_with("not configured")), "{failed}");
    assert_eq!(reasons[2], "HTTP 503");
}

#[tokio::test]
async fn an_unreachable_provider_fails_fast_as_a_connection_failure() {
    // Bind and drop a listener to get a local port nobody listens on.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("address").port()
    };
    let s = settings(&[("SMSRU_API_ID", "sms-id"), ("SMSRU_URL", &format!("http://127.0.0.1:{port}"))]);
    let failed = chain("sms", s, true).deliver(PHONE, CODE).await.expect_err("nothing listens");
    assert!(failed.failures[0].reason.starts_with("connection failed"), "{failed}");
}

#[tokio::test]
async fn the_fake_outbox_holds_the_last_code_sent_to_each_phone() {
    let chain = chain("fake", ChannelSettings::default(), false);
    let outbox = chain.fake_outbox().expect("outbox outside production");
    assert_eq!(outbox.last_code(PHONE), None);

    assert_eq!(chain.deliver(PHONE, "111111").await, Ok("fake"));
    assert_eq!(chain.deliver(PHONE, CODE).await, Ok("fake"));
    assert_eq!(chain.deliver("+15550001111", "222222").await, Ok("fake"));

    assert_eq!(outbox.last_code(PHONE).as_deref(), Some(CODE));
    assert_eq!(outbox.last_code("+15550001111").as_deref(), Some("222222"));
    // A clone of the chain shares the same outbox.
    let again = chain.clone().fake_outbox().expect("outbox");
    assert_eq!(again.last_code(PHONE).as_deref(), Some(CODE));
    assert!(!format!("{outbox:?}").contains(CODE));
}

/// Collects everything a `fmt` subscriber writes, for asserting on log output.
#[derive(Clone, Default)]
struct LogBuffer(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for LogBuffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log lock").extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One process-wide capture: a thread-local subscriber misses events whose callsite
/// interest another test thread cached at the same moment, which made this test flaky.
fn captured_logs() -> &'static LogBuffer {
    static LOGS: std::sync::OnceLock<LogBuffer> = std::sync::OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = LogBuffer::default();
        let writer = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("no other test installs a global subscriber");
        logs
    })
}

#[tokio::test]
async fn a_provider_echoing_the_code_never_gets_it_into_logs_or_errors() {
    let logs = captured_logs();

    let gateway = Mock::start(400, &format!(r#"{{"ok":false,"error":"bad code {CODE}"}}"#)).await;
    let s = settings(&[("TELEGRAM_GATEWAY_TOKEN", "tg-token"), ("TELEGRAM_GATEWAY_URL", &gateway.url)]);
    let failed = chain("telegram,sms", s, true).deliver(PHONE, CODE).await.expect_err("nothing delivers");

    assert_eq!(failed.failures[0].reason, "HTTP 400, ok is not true: bad code <code>");
    assert!(!failed.to_string().contains(CODE));
    let logs = String::from_utf8(logs.0.lock().expect("log lock").clone()).expect("utf-8");
    assert!(logs.contains("WARN"), "{logs}");
    assert!(logs.contains("channel=\"telegram\""), "{logs}");
    assert!(logs.contains("channel=\"sms\""), "{logs}");
    assert!(!logs.contains(CODE), "code leaked into logs: {logs}");
    assert!(!logs.contains("tg-token"), "token leaked into logs: {logs}");
}

#[test]
fn the_default_order_is_the_one_otp_channels_is_documented_with() {
    let documented = crate::infra::config::documented_variables();
    let channels = documented.iter().find(|variable| variable.name == "OTP_CHANNELS").expect("declared");
    let order: Vec<&str> = DEFAULT_ORDER.iter().map(|kind| kind.name()).collect();
    assert_eq!(channels.default, format!("`{}`", order.join(",")));
}
