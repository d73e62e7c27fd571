//! Validators for reads: a successful `GET` with a body of 512 bytes or more carries a weak
//! `ETag` of it, and a matching `If-None-Match` gets `304` without one, until the content
//! changes.

use axum::http::Method;
use chrono::Duration;
use serde_json::json;

use crate::helpers::{Backend, on_both_databases, spawn_app};

on_both_databases!(the_agenda_answers_304_until_it_changes);

async fn the_agenda_answers_304_until_it_changes(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990002200").await;
    app.create_tournament(&club, 50, Duration::days(1)).await;
    app.create_tournament(&club, 40, Duration::days(3)).await;

    let first = app.get("/tournaments", None).await;
    first.assert_ok();
    let tag = first.headers.get("etag").and_then(|tag| tag.to_str().ok()).expect("an ETag").to_owned();
    assert!(tag.starts_with("W/\""), "{tag}");

    let again = app.call_with(Method::GET, "/tournaments", None, None, &[("If-None-Match", &tag)]).await;
    assert_eq!(again.status, 304);
    assert_eq!(again.body, serde_json::Value::Null, "a 304 has no body");
    assert_eq!(again.headers.get("etag").and_then(|tag| tag.to_str().ok()), Some(tag.as_str()));

    // Another tag in the list, or none that matches: the whole answer.
    let other = app.call_with(Method::GET, "/tournaments", None, None, &[("If-None-Match", "W/\"other\"")]).await;
    assert_eq!(other.body, first.body);

    app.create_tournament(&club, 60, Duration::days(2)).await;
    let changed = app.call_with(Method::GET, "/tournaments", None, None, &[("If-None-Match", &tag)]).await;
    assert_eq!(changed.status, 200, "the agenda changed");
    assert_ne!(changed.headers.get("etag").and_then(|tag| tag.to_str().ok()), Some(tag.as_str()));
}

#[tokio::test]
async fn writes_errors_and_small_answers_carry_no_etag() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let health = app.get("/health", None).await;
    health.assert_ok();
    assert!(health.headers.get("etag").is_none(), "a 50-byte answer was tagged");
    let missing = app.get(&format!("/tournaments/{}", uuid::Uuid::new_v4()), None).await;
    assert_eq!(missing.status, 404);
    assert!(missing.headers.get("etag").is_none());
    let requested = app.post("/auth/otp/request", None, json!({"phone": "+79990002201"})).await;
    assert!(requested.status.is_success(), "{}", requested.status);
    assert!(requested.headers.get("etag").is_none());
}

/// Reads streamed as they are written: no size is known to tag, and the player's export is
/// `no-store`, never kept to be revalidated.
const STREAMED: [&str; 1] = ["/me/export"];

#[test]
fn the_contract_documents_validators_on_every_read() {
    let contract = floor::http::openapi();
    let mut reads = 0;
    for (path, item) in &contract.paths.paths {
        let Some(read) = &item.get else { continue };
        reads += 1;
        let answers = &read.responses.responses;
        let takes_if_none_match = read
            .parameters
            .iter()
            .flatten()
            .any(|parameter| matches!(parameter, utoipa::openapi::RefOr::T(p) if p.name == "If-None-Match"));
        if STREAMED.contains(&path.as_str()) {
            assert!(!answers.contains_key("304") && !takes_if_none_match, "GET {path} is streamed, never tagged");
            continue;
        }
        assert!(answers.contains_key("304"), "GET {path} does not document 304");
        assert!(takes_if_none_match, "GET {path} does not take If-None-Match");
    }
    assert!(reads > 30, "{reads} reads in the contract");
}
