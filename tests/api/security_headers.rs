//! The headers every answer carries (`src/http/headers.rs`), hyper's own answers to requests
//! it cannot read included; the request id a client may send; and who `/metrics` answers.

use reqwest::header::HeaderMap;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
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

/// What the server answers to `request` written as it is on a connection of its own: the
/// status line and the headers, lowercased.
async fn raw_answer(app: &TestApp, request: &[u8]) -> (String, String) {
    let address = app.base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address).await.expect("a connection");
    stream.write_all(request).await.expect("sent");
    let mut answer = Vec::new();
    let read = tokio::time::timeout(std::time::Duration::from_secs(5), stream.read_to_end(&mut answer)).await;
    read.expect("the server answers and closes").expect("read");
    let text = String::from_utf8_lossy(&answer).to_string();
    let head = text.split("\r\n\r\n").next().unwrap_or_default().to_owned();
    let (status, headers) = head.split_once("\r\n").unwrap_or((&head, ""));
    (status.to_owned(), headers.to_ascii_lowercase())
}

#[tokio::test]
async fn a_request_the_server_cannot_read_is_answered_with_the_same_headers() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let long_path = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(70_000));
    let big_header = format!("GET / HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n", "b".repeat(500_000));
    for (request, status) in [
        (&b"GARBAGE\r\n\r\n"[..], "400"),
        (b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\nbad header line\r\n\r\n", "400"),
        (b"GET /api/v1/health HTTP/9.9\r\nHost: x\r\n\r\n", "400"),
        (long_path.as_bytes(), "414"),
        (big_header.as_bytes(), "431"),
    ] {
        let (line, headers) = raw_answer(&app, request).await;
        assert!(line.starts_with(&format!("HTTP/1.1 {status}")), "{line}");
        for header in ["x-content-type-options: nosniff", "referrer-policy: no-referrer", "x-frame-options: deny"] {
            assert!(headers.contains(header), "{line}: {header} missing from\n{headers}");
        }
    }
}

#[tokio::test]
async fn metrics_answer_the_scrapers_networks_and_nobody_else() {
    let scrape = |app: &TestApp, forwarded_for: Option<&str>| {
        let mut request = app.client.get(format!("{}/metrics", app.base));
        if let Some(address) = forwarded_for {
            request = request.header("X-Forwarded-For", address);
        }
        async move {
            let answer = request.send().await.expect("an answer");
            let status = answer.status().as_u16();
            let body: serde_json::Value = answer.json().await.unwrap_or_default();
            (status, body)
        }
    };
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    assert_eq!(scrape(&app, None).await.0, 200, "this host scrapes");
    let (status, body) = scrape(&app, Some("203.0.113.9")).await;
    assert_eq!(status, 404, "forwarded by a proxy the node does not know");
    assert_eq!(body["error"]["code"], "NOT_FOUND", "as any path that does not exist: {body}");

    let Some(elsewhere) = spawn_app_with(Backend::Sqlite, &[("METRICS_ALLOW", "10.0.0.0/8")]).await else { return };
    assert_eq!(scrape(&elsewhere, None).await.0, 404, "this host is not the scrapers' network");

    let proxied = [("TRUSTED_PROXIES", "127.0.0.1/32")];
    let Some(behind) = spawn_app_with(Backend::Sqlite, &proxied).await else { return };
    assert_eq!(scrape(&behind, Some("203.0.113.9")).await.0, 404, "a client on the internet");
    assert_eq!(scrape(&behind, Some("10.1.2.3")).await.0, 200, "a scraper inside, through the proxy");
}
