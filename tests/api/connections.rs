//! A bare `floor serve` facing a hostile client over HTTP: connections that send nothing or
//! trickle their head are closed at the header timeout (so is an idle keep-alive), a body
//! slower than the minimum rate is answered `408`, connections past the cap of an address or
//! of the node are refused `429`/`503` in the contract's shape, and so are the venue screens'
//! event streams past theirs; every refusal is counted in `/metrics`.

use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::helpers::{Backend, TestApp, spawn_app_with};

async fn connect(app: &TestApp) -> TcpStream {
    TcpStream::connect(app.base.trim_start_matches("http://")).await.expect("a connection")
}

/// How long the server took to close `stream` (reading and dropping whatever it sends), or
/// `None` when it stayed open for `wait`.
async fn closed_within(stream: &mut TcpStream, wait: Duration) -> Option<Duration> {
    let started = Instant::now();
    let deadline = tokio::time::Instant::now() + wait;
    let mut buffer = [0_u8; 4096];
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buffer)).await {
            Err(_) => return None,
            Ok(Ok(0) | Err(_)) => return Some(started.elapsed()),
            Ok(Ok(_)) => continue,
        }
    }
}

/// Sends `request` and reads the answer until the server closes or `wait` passes.
async fn exchange(stream: &mut TcpStream, request: &[u8], wait: Duration) -> String {
    stream.write_all(request).await.expect("the request is written");
    let mut answer = Vec::new();
    let deadline = tokio::time::Instant::now() + wait;
    let mut buffer = [0_u8; 4096];
    while let Ok(Ok(read)) = tokio::time::timeout_at(deadline, stream.read(&mut buffer)).await {
        if read == 0 {
            break;
        }
        answer.extend_from_slice(&buffer[..read]);
        if complete(&answer) {
            break;
        }
    }
    String::from_utf8_lossy(&answer).into_owned()
}

/// Whether `answer` holds a whole HTTP answer with a `content-length` body.
fn complete(answer: &[u8]) -> bool {
    let text = String::from_utf8_lossy(answer);
    let Some((head, body)) = text.split_once("\r\n\r\n") else { return false };
    let length = head
        .lines()
        .find_map(|line| line.to_ascii_lowercase().strip_prefix("content-length:").map(|n| n.trim().to_owned()))
        .and_then(|n| n.parse::<usize>().ok());
    length.is_some_and(|length| body.len() >= length)
}

/// The JSON body of an answer read by [`exchange`].
fn body_of(answer: &str) -> Value {
    answer.split_once("\r\n\r\n").and_then(|(_, body)| serde_json::from_str(body).ok()).unwrap_or(Value::Null)
}

const HEALTH: &[u8] = b"GET /api/v1/health HTTP/1.1\r\nHost: floor\r\n\r\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_trickling_and_idle_connections_are_closed_at_the_header_timeout() {
    let Some(app) = spawn_app_with(Backend::Sqlite, &[("HTTP_HEADER_TIMEOUT", "2s")]).await else { return };
    let limit = Duration::from_secs(5);

    let silent = async {
        let mut stream = connect(&app).await;
        closed_within(&mut stream, limit).await
    };
    let trickling = async {
        let mut stream = connect(&app).await;
        let (mut reading, mut writing) = stream.split();
        let trickle = async {
            for byte in HEALTH.iter().take(HEALTH.len() - 2) {
                if writing.write_all(&[*byte]).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        };
        let started = Instant::now();
        let closed = async {
            let mut buffer = [0_u8; 1024];
            loop {
                match reading.read(&mut buffer).await {
                    Ok(0) | Err(_) => return started.elapsed(),
                    Ok(_) => continue,
                }
            }
        };
        tokio::select! {
            took = closed => Some(took),
            () = async { trickle.await; tokio::time::sleep(limit).await } => None,
        }
    };
    let idle_after_a_request = async {
        let mut stream = connect(&app).await;
        let answer = exchange(&mut stream, HEALTH, limit).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        closed_within(&mut stream, limit).await
    };
    let (silent, trickling, idle) = tokio::join!(silent, trickling, idle_after_a_request);
    for (what, took) in [("silent", silent), ("trickling its head", trickling), ("idle keep-alive", idle)] {
        let took = took.unwrap_or_else(|| panic!("a {what} connection was still open after {limit:?}"));
        assert!(took >= Duration::from_millis(1500), "a {what} connection was closed early: {took:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_slower_than_the_minimum_rate_is_answered_408_and_a_steady_one_is_read() {
    let settings = [("HTTP_HEADER_TIMEOUT", "2s"), ("HTTP_BODY_MIN_RATE", "1000")];
    let Some(app) = spawn_app_with(Backend::Sqlite, &settings).await else { return };
    // 100 MB announced, 8 bytes sent: the answer comes at the end of the grace, not never.
    let mut stream = connect(&app).await;
    let started = Instant::now();
    let head = "POST /api/v1/auth/otp/request HTTP/1.1\r\nHost: floor\r\nContent-Type: application/json\r\n\
                Content-Length: 104857600\r\n\r\n{\"phone\"";
    let answer = exchange(&mut stream, head.as_bytes(), Duration::from_secs(8)).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert_eq!(body_of(&answer)["error"]["code"], "REQUEST_TIMEOUT", "{answer}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());

    // A small body sent in two halves a second apart is well within the rate.
    let mut stream = connect(&app).await;
    let body = br#"{"phone": "+79990001234"}"#;
    let head = format!(
        "POST /api/v1/auth/otp/request HTTP/1.1\r\nHost: floor\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.expect("head");
    stream.write_all(&body[..10]).await.expect("a half");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let answer = exchange(&mut stream, &body[10..], Duration::from_secs(5)).await;
    assert!(answer.starts_with("HTTP/1.1 2"), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_an_address_s_cap_get_429_and_past_the_node_s_503() {
    let Some(app) = spawn_app_with(Backend::Sqlite, &[("MAX_CONNECTIONS_PER_ADDRESS", "3")]).await else { return };
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(connect(&app).await);
    }
    let mut fourth = connect(&app).await;
    let answer = exchange(&mut fourth, HEALTH, Duration::from_secs(5)).await;
    assert!(answer.starts_with("HTTP/1.1 429"), "{answer}");
    assert!(answer.to_ascii_lowercase().contains("retry-after: "), "{answer}");
    assert_eq!(body_of(&answer)["error"]["code"], "RATE_LIMITED", "{answer}");
    held.pop();
    // The place is given back when the server sees the connection close.
    let mut again = None;
    for _ in 0..50 {
        let mut stream = connect(&app).await;
        let answer = exchange(&mut stream, HEALTH, Duration::from_secs(5)).await;
        if answer.starts_with("HTTP/1.1 200") {
            again = Some(answer);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(again.is_some(), "a closed connection gives its place back");
    drop(held);
    assert!(app.refusals("connections_per_address").await >= 1);

    let Some(node) = spawn_app_with(Backend::Sqlite, &[("MAX_CONNECTIONS", "3")]).await else { return };
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(connect(&node).await);
    }
    let mut fourth = connect(&node).await;
    let answer = exchange(&mut fourth, HEALTH, Duration::from_secs(5)).await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert_eq!(body_of(&answer)["error"]["code"], "SERVICE_UNAVAILABLE", "{answer}");
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusted_proxy_speaks_for_many_clients_and_has_no_cap_of_its_own() {
    let settings = [("MAX_CONNECTIONS_PER_ADDRESS", "2"), ("TRUSTED_PROXIES", "127.0.0.1")];
    let Some(app) = spawn_app_with(Backend::Sqlite, &settings).await else { return };
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(connect(&app).await);
    }
    let mut fifth = connect(&app).await;
    let answer = exchange(&mut fifth, HEALTH, Duration::from_secs(5)).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_screens_event_streams_are_capped_per_address_and_per_tournament() {
    let settings = [
        ("MAX_SCREEN_STREAMS_PER_ADDRESS", "2"),
        ("MAX_SCREEN_STREAMS_PER_TOURNAMENT", "3"),
        // The test names its clients through a proxy it trusts.
        ("TRUSTED_PROXIES", "127.0.0.1"),
    ];
    let Some(app) = spawn_app_with(Backend::Sqlite, &settings).await else { return };
    let club = app.create_club("Streams", "+79990007100").await;
    let tournament = app.create_tournament(&club, 20, chrono::Duration::days(1)).await;
    let client = reqwest::Client::new();
    let open = |from: &'static str| {
        client.get(format!("{}/screen/{tournament}/events", app.base)).header("x-forwarded-for", from).send()
    };
    let first = open("10.0.0.1").await.expect("an answer");
    let second = open("10.0.0.1").await.expect("an answer");
    assert_eq!((first.status().as_u16(), second.status().as_u16()), (200, 200));
    let third = open("10.0.0.1").await.expect("an answer");
    assert_eq!(third.status().as_u16(), 429);
    let body: Value = third.json().await.expect("json");
    assert_eq!(body["error"]["code"], "RATE_LIMITED");

    let other = open("10.0.0.2").await.expect("an answer");
    assert_eq!(other.status().as_u16(), 200, "another address has its own streams");
    let past_the_tournament = open("10.0.0.3").await.expect("an answer");
    assert_eq!(past_the_tournament.status().as_u16(), 503);
    let body: Value = past_the_tournament.json().await.expect("json");
    assert_eq!(body["error"]["code"], "SERVICE_UNAVAILABLE");

    // The server sees a stream's client gone at its next write: a keep-alive comes every 15 s.
    drop(first);
    let mut reopened = None;
    for _ in 0..250 {
        let answer = open("10.0.0.3").await.expect("an answer");
        if answer.status().as_u16() == 200 {
            reopened = Some(answer);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(reopened.is_some(), "a closed stream gives its places back");
    assert!(app.refusals("screen_streams_per_address").await >= 1);
    assert!(app.refusals("screen_streams_per_tournament").await >= 1);
    drop((second, other));
}
