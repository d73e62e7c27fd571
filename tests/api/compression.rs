//! Compressed answers: the API's JSON over 1 KB in gzip or br when the client accepts it;
//! the LiveState's gzip made once per change.

use std::io::Read;

use serde_json::{Value, json};

use crate::helpers::{Backend, TestApp, spawn_app};
use crate::live::{ready, staff};

/// The raw answer to `GET path` with `Accept-Encoding: accept` (none when empty).
async fn fetch(app: &TestApp, path: &str, accept: &str) -> (Option<String>, Option<String>, Vec<u8>) {
    let mut request = app.client.get(app.url(path));
    if !accept.is_empty() {
        request = request.header("Accept-Encoding", accept);
    }
    let response = request.send().await.expect("an answer");
    assert!(response.status().is_success(), "{path}: {}", response.status());
    let header = |name: &str| response.headers().get(name).and_then(|value| value.to_str().ok()).map(str::to_owned);
    let (encoding, vary) = (header("content-encoding"), header("vary"));
    (encoding, vary, response.bytes().await.expect("a body").to_vec())
}

pub(crate) fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(bytes).read_to_end(&mut plain).expect("gzip");
    plain
}

pub(crate) fn unbrotli(bytes: &[u8]) -> Vec<u8> {
    let mut plain = Vec::new();
    brotli::Decompressor::new(bytes, 4096).read_to_end(&mut plain).expect("br");
    plain
}

/// The LiveState without the moment of its answer.
fn timeless(bytes: &[u8]) -> Value {
    let mut state: Value = serde_json::from_slice(bytes).expect("a LiveState");
    state["serverTime"] = Value::Null;
    state
}

#[tokio::test]
async fn a_live_state_is_compressed_for_clients_that_accept_it() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let game = ready(&app, "+79990001100", 701, 6).await;
    staff(&app, &game.club, &format!("/tournaments/{}/start", game.id), json!({})).await.assert_ok();
    let path = format!("/tournaments/{}/live", game.id);

    let (encoding, _, plain) = fetch(&app, &path, "").await;
    assert_eq!(encoding, None, "compressed for a client that did not ask");
    assert!(plain.len() > 1024, "a LiveState of {} bytes is too small for this test", plain.len());

    let (encoding, vary, gzipped) = fetch(&app, &path, "gzip").await;
    assert_eq!(encoding.as_deref(), Some("gzip"));
    assert!(vary.is_some_and(|vary| vary.to_ascii_lowercase().contains("accept-encoding")));
    assert!(gzipped.len() * 2 < plain.len(), "gzip: {} of {} bytes", gzipped.len(), plain.len());
    assert_eq!(timeless(&gunzip(&gzipped)), timeless(&plain));

    // The LiveState's gzip is made once per change, so a client that also takes gzip gets it.
    let (encoding, _, preferred) = fetch(&app, &path, "br, gzip;q=0.5").await;
    assert_eq!(encoding.as_deref(), Some("gzip"));
    assert_eq!(timeless(&gunzip(&preferred)), timeless(&plain));

    let (encoding, _, brotlied) = fetch(&app, &path, "br").await;
    assert_eq!(encoding.as_deref(), Some("br"));
    assert!(brotlied.len() * 3 < plain.len(), "br: {} of {} bytes", brotlied.len(), plain.len());
    assert_eq!(timeless(&unbrotli(&brotlied)), timeless(&plain));
}

#[tokio::test]
async fn small_answers_go_out_as_they_are() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let (encoding, _, body) = fetch(&app, "/health", "gzip, br").await;
    assert_eq!(encoding, None, "a {}-byte answer was compressed", body.len());
    let health: Value = serde_json::from_slice(&body).expect("plain JSON");
    assert_eq!(health["status"], "ok");
}
