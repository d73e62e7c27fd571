//! The headers every answer carries (`src/http/headers.rs`), and the request id a client may
//! send.

use reqwest::header::HeaderMap;
use uuid::Uuid;

use crate::helpers::{Backend, TestApp, spawn_app, spawn_app_with};

async fn headers_of(app: &TestApp, path: &str, request_id: Option<&str>) -> (u16, HeaderMap) {
    let mut request = app.client.get(format!("{}{path}", app.url("").trim_end_matches("/api/v1")));
    if let Some(id) = request_id {
        request = request.header("X-Request-Id", id);
    }
    let answer = request.send().await.expect("an answer");
    (answer.status().as_u16(), answer.headers().clone())
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

#[tokio::test]
async fn every_kind_of_answer_forbids_sniffing_framing_and_referrers() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let tournament = Uuid::now_v7();
    for (path, status) in [
        ("/api/v1/health", 200),
        ("/api/v1/cities", 200),
        ("/api/v1/no-such-path", 404),
        ("/api/v1/auth/me", 401),
        ("/docs", 200),
        ("/ready", 200),
        ("/metrics", 200),
        ("/account/delete", 200),
        (&format!("/t/{tournament}") as &str, 404),
        (&format!("/screen/{tournament}") as &str, 404),
        ("/files/0199a000-0000-7000-8000-000000000000.png", 404),
        ("/socket.io/?EIO=4&transport=polling", 200),
        ("/socket.io/?EIO=4&transport=polling&sid=nonsense", 400),
    ] {
        let (got, headers) = headers_of(&app, path, None).await;
        assert_eq!(got, status, "{path}");
        assert_eq!(header(&headers, "x-content-type-options"), Some("nosniff"), "{path}");
        assert_eq!(header(&headers, "referrer-policy"), Some("no-referrer"), "{path}");
        assert_eq!(header(&headers, "x-frame-options"), Some("DENY"), "{path}");
        assert_eq!(header(&headers, "strict-transport-security"), None, "{path}: no HSTS over http");
        if let Some(policy) = header(&headers, "content-security-policy") {
            assert!(policy.contains("frame-ancestors 'none'"), "{path}: {policy}");
        }
    }
}

#[tokio::test]
async fn an_https_public_url_asks_browsers_to_keep_to_https() {
    let Some(app) = spawn_app_with(Backend::Sqlite, &[("PUBLIC_URL", "https://floor.example.org")]).await else {
        return;
    };
    let (_, headers) = headers_of(&app, "/api/v1/health", None).await;
    assert_eq!(header(&headers, "strict-transport-security"), Some("max-age=31536000"));
}

#[tokio::test]
async fn a_clients_request_id_is_kept_only_when_it_is_a_uuid() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let own = Uuid::now_v7().to_string();
    let (_, headers) = headers_of(&app, "/api/v1/health", Some(&own)).await;
    assert_eq!(header(&headers, "x-request-id"), Some(own.as_str()));
    for foreign in ["not-a-uuid", "<script>alert(1)</script>", "a fake log line"] {
        let (_, headers) = headers_of(&app, "/api/v1/health", Some(foreign)).await;
        let given = header(&headers, "x-request-id").expect("a request id");
        assert_ne!(given, foreign);
        assert!(Uuid::parse_str(given).is_ok(), "a fresh UUID instead of {foreign:?}: {given}");
    }
}
