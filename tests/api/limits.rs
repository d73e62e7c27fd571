//! Abuse limits: per client address (the peer, or what a trusted proxy forwards) and the
//! global budget of code requests, answered `429 RATE_LIMITED` with `Retry-After`, and per
//! account for registrations. Quotas are small with hour-long windows, so nothing refills
//! while a test runs, but where a test keeps a production default.

use chrono::Duration;
use serde_json::{Value, json};

use crate::helpers::{Backend, Reply, TestApp, on_both_databases, spawn_app_with};

on_both_databases!(
    the_code_request_past_an_addresss_budget_is_429_with_retry_after_and_sends_nothing,
    a_trusted_proxy_gets_a_budget_per_forwarded_address,
    an_untrusted_peers_forwarded_for_is_ignored,
    the_global_code_budget_refuses_once_spent_even_across_addresses,
    code_checks_and_refreshes_have_budgets_of_their_own,
    public_reads_have_a_ceiling_that_spares_the_health_check_and_signed_in_reads,
    one_account_past_the_default_registration_budget_is_429_and_changes_nothing,
);

/// A limit of `n` per hour: nothing comes back during a test.
fn per_hour(n: u32) -> String {
    format!("{n}/1h")
}

/// A reply with its `Retry-After`, when it has one.
struct Answer {
    reply: Reply,
    retry_after: Option<String>,
}

impl Answer {
    /// The contract's `429 RATE_LIMITED`, with a `Retry-After` in whole seconds within the hour.
    #[track_caller]
    fn assert_rate_limited(&self) {
        self.reply.assert_error(429, "RATE_LIMITED");
        let error = self.reply.body["error"].as_object().expect("an error object");
        assert!(error.keys().all(|key| key == "code" || key == "message"), "the contract's body: {:?}", self.reply);
        let seconds: u64 = self
            .retry_after
            .as_deref()
            .and_then(|value| value.parse().ok())
            .unwrap_or_else(|| panic!("Retry-After in seconds: {:?}", self.retry_after));
        assert!((1..=3600).contains(&seconds), "Retry-After {seconds} within the window");
    }
}

/// `POST path` with `body`, sent as if through a proxy that forwards `forwarded_for`.
async fn post_from(app: &TestApp, path: &str, forwarded_for: Option<&str>, body: Value) -> Answer {
    let mut request = app.client.post(app.url(path)).json(&body);
    if let Some(forwarded_for) = forwarded_for {
        request = request.header("X-Forwarded-For", forwarded_for);
    }
    answer(request).await
}

async fn get_with(app: &TestApp, path: &str, token: Option<&str>) -> Answer {
    let mut request = app.client.get(app.url(path));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    answer(request).await
}

async fn answer(request: reqwest::RequestBuilder) -> Answer {
    let reply = Reply::read(request.send().await.expect("the server answers")).await;
    let retry_after = reply.headers.get("retry-after").and_then(|value| value.to_str().ok()).map(str::to_owned);
    Answer { reply, retry_after }
}

async fn request_code_from(app: &TestApp, phone: &str, forwarded_for: Option<&str>) -> Answer {
    post_from(app, "/auth/otp/request", forwarded_for, json!({"phone": phone})).await
}

async fn the_code_request_past_an_addresss_budget_is_429_with_retry_after_and_sends_nothing(backend: Backend) {
    let limit = per_hour(2);
    let Some(app) = spawn_app_with(backend, &[("RATE_LIMIT_CODE_REQUESTS", limit.as_str())]).await else { return };
    // Different phones: the per-phone limit never comes into it.
    request_code_from(&app, "+79990002001", None).await.reply.assert_ok();
    request_code_from(&app, "+79990002002", None).await.reply.assert_ok();
    let refused = request_code_from(&app, "+79990002003", None).await;
    refused.assert_rate_limited();
    assert!(app.outbox.last_code("+79990002003").is_none(), "a refused request sends no code");
    assert_eq!(app.count("SELECT COUNT(*) FROM otp_codes").await, 2);
}

async fn a_trusted_proxy_gets_a_budget_per_forwarded_address(backend: Backend) {
    let limit = per_hour(1);
    let extra = [("TRUSTED_PROXIES", "10.0.0.0/8, 127.0.0.1"), ("RATE_LIMIT_CODE_REQUESTS", limit.as_str())];
    let Some(app) = spawn_app_with(backend, &extra).await else { return };
    request_code_from(&app, "+79990003001", Some("203.0.113.1")).await.reply.assert_ok();
    request_code_from(&app, "+79990003002", Some("203.0.113.1")).await.assert_rate_limited();
    // Another client behind the same proxy has its own budget.
    request_code_from(&app, "+79990003003", Some("203.0.113.2")).await.reply.assert_ok();
    // What the client itself wrote in front does not change who it is; trusted hops are skipped.
    request_code_from(&app, "+79990003004", Some("198.51.100.77, 203.0.113.2")).await.assert_rate_limited();
    request_code_from(&app, "+79990003005", Some("203.0.113.2, 10.1.2.3")).await.assert_rate_limited();
    // The proxy's own requests (health checks, no header) are the proxy's.
    request_code_from(&app, "+79990003006", None).await.reply.assert_ok();
}

async fn an_untrusted_peers_forwarded_for_is_ignored(backend: Backend) {
    let limit = per_hour(1);
    let extra = [("TRUSTED_PROXIES", "10.0.0.0/8"), ("RATE_LIMIT_CODE_REQUESTS", limit.as_str())];
    let Some(app) = spawn_app_with(backend, &extra).await else { return };
    request_code_from(&app, "+79990004001", Some("203.0.113.1")).await.reply.assert_ok();
    // The test client (127.0.0.1) is no trusted proxy: a fresh forwarded address is no new budget.
    request_code_from(&app, "+79990004002", Some("203.0.113.2")).await.assert_rate_limited();
    request_code_from(&app, "+79990004003", None).await.assert_rate_limited();
}

async fn the_global_code_budget_refuses_once_spent_even_across_addresses(backend: Backend) {
    let limit = per_hour(2);
    let extra = [("TRUSTED_PROXIES", "127.0.0.1"), ("RATE_LIMIT_CODE_REQUESTS_GLOBAL", limit.as_str())];
    let Some(app) = spawn_app_with(backend, &extra).await else { return };
    request_code_from(&app, "+79990005001", Some("203.0.113.1")).await.reply.assert_ok();
    request_code_from(&app, "+79990005002", Some("203.0.113.2")).await.reply.assert_ok();
    let refused = request_code_from(&app, "+79990005003", Some("203.0.113.3")).await;
    refused.assert_rate_limited();
    assert!(app.outbox.last_code("+79990005003").is_none(), "a refused request sends no code");
    request_code_from(&app, "+79990005004", Some("2001:db8::1")).await.assert_rate_limited();
}

async fn code_checks_and_refreshes_have_budgets_of_their_own(backend: Backend) {
    let (checks, refreshes) = (per_hour(2), per_hour(1));
    let extra = [("RATE_LIMIT_CODE_CHECKS", checks.as_str()), ("RATE_LIMIT_REFRESHES", refreshes.as_str())];
    let Some(app) = spawn_app_with(backend, &extra).await else { return };
    let phone = "+79990006001";
    app.request_code(phone).await.assert_ok();
    let check = || post_from(&app, "/auth/otp/verify", None, json!({"phone": phone, "code": "000000"}));
    assert_eq!(check().await.reply.status, 400, "a wrong code is still judged");
    assert_eq!(check().await.reply.status, 400);
    check().await.assert_rate_limited();

    let refresh = || post_from(&app, "/auth/refresh", None, json!({"refreshToken": "not-a-token"}));
    refresh().await.reply.assert_error(401, "INVALID_REFRESH_TOKEN");
    refresh().await.assert_rate_limited();

    // The code requests' budget is untouched by both.
    app.request_code("+79990006002").await.assert_ok();
}

async fn public_reads_have_a_ceiling_that_spares_the_health_check_and_signed_in_reads(backend: Backend) {
    let limit = per_hour(2);
    let Some(app) = spawn_app_with(backend, &[("RATE_LIMIT_PUBLIC_READS", limit.as_str())]).await else { return };
    let session = app.sign_in("+79990007001").await;
    get_with(&app, "/cities", None).await.reply.assert_ok();
    get_with(&app, "/tournaments", None).await.reply.assert_ok();
    let unknown_tournament = format!("/tournaments/{}", uuid::Uuid::new_v4());
    get_with(&app, &unknown_tournament, None).await.assert_rate_limited();
    // One budget per address, whoever asks: a token does not open a public read again.
    get_with(&app, "/cities", Some(&session.access_token)).await.assert_rate_limited();
    // A load balancer's probes are never refused; reads that need a token are not public reads.
    for _ in 0..3 {
        get_with(&app, "/health", None).await.reply.assert_ok();
        get_with(&app, "/auth/me", Some(&session.access_token)).await.reply.assert_ok();
    }
}

/// The production default (30 a minute, one back every 2 s): a player registering and
/// cancelling in a loop is refused within a few requests past 30, while another account from
/// the same address is not.
async fn one_account_past_the_default_registration_budget_is_429_and_changes_nothing(backend: Backend) {
    const DEFAULT_BURST: usize = 30;
    let Some(app) = spawn_app_with(backend, &[("RATE_LIMIT_REGISTRATIONS", "")]).await else { return };
    let club = app.create_club("Aces", "+79990009001").await;
    let id = app.create_tournament(&club, 10, Duration::days(2)).await;
    let players = app.sign_in_players(309, 2).await;
    let (looping, other) = (&players[0], &players[1]);
    let change = |n: usize| if n.is_multiple_of(2) { "register" } else { "cancel-registration" };
    let send = |n: usize| {
        let request = app.client.post(app.url(&format!("/tournaments/{id}/{}", change(n)))).json(&json!({}));
        answer(request.bearer_auth(&looping.access_token))
    };
    for n in 0..DEFAULT_BURST {
        send(n).await.reply.assert_ok();
    }
    // A refill every 2 s: ten more cannot all pass unless they took 20 s.
    let mut refused = None;
    for n in DEFAULT_BURST..DEFAULT_BURST + 10 {
        let answer = send(n).await;
        if answer.reply.status == 429 {
            refused = Some((n, answer));
            break;
        }
        answer.reply.assert_ok();
    }
    let (n, refused) = refused.expect("the budget bites past 30");
    refused.assert_rate_limited();
    let status = if change(n) == "register" { "cancelled" } else { "registered" };
    let rows = format!(
        "SELECT COUNT(*) FROM registrations WHERE user_id = {} AND status = '{status}'",
        app.uuid_literal(looping.user_id)
    );
    assert_eq!(app.count(&rows).await, 1, "the refused {} changed nothing", change(n));
    let path = format!("/tournaments/{id}/register");
    app.post(&path, Some(&other.access_token), json!({})).await.assert_ok();
}
