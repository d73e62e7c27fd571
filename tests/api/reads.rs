//! Reads at the speed of a cache: the public reads are kept ready to send until a change
//! drops them (here, on another node, and when a slide's window opens), and on the embedded
//! database a read never waits for a write transaction.

use std::io::Read;
use std::time::Duration as StdDuration;

use axum::http::Method;
use chrono::{Duration, Utc};
use sea_orm::ConnectionTrait;
use serde_json::{Value, json};

use crate::helpers::{Backend, Reply, TestApp, on_both_databases, spawn_app, spawn_app_with, test_redis_url};

on_both_databases!(reads_never_wait_for_a_write_transaction, every_public_read_shows_a_change_in_the_next_answer);

/// How long a read may take here before it counts as stuck behind the write (the pool's
/// own wait is 30 seconds).
const STUCK: StdDuration = StdDuration::from_secs(10);

async fn within(what: &str, read: impl Future<Output = Reply>) -> Reply {
    tokio::time::timeout(STUCK, read).await.unwrap_or_else(|_| panic!("{what} waited for the write transaction"))
}

fn etag(reply: &Reply) -> String {
    reply.headers.get("etag").and_then(|tag| tag.to_str().ok()).expect("an ETag").to_owned()
}

fn card(agenda: &Reply, id: uuid::Uuid) -> &Value {
    agenda.body["items"]
        .as_array()
        .and_then(|items| items.iter().find(|card| card["id"] == id.to_string()))
        .expect("the tournament is on the agenda")
}

async fn reads_never_wait_for_a_write_transaction(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990003300").await;
    let tournament = app.create_tournament(&club, 50, Duration::days(1)).await;
    let player = app.sign_in("+79990003301").await;

    // A write transaction that holds its locks: on SQLite the write lock of the file and the
    // one writer connection, on PostgreSQL the tournament's row.
    let writing = floor::infra::db::begin_write(app.db()).await.expect("a write transaction");
    let title = format!(
        "UPDATE tournament_translations SET title = 'Being edited' WHERE tournament_id = {}",
        app.uuid_literal(tournament)
    );
    writing.execute_unprepared(&title).await.expect("the row is written");

    // Fresh filters, so the agenda is read from the database rather than the cache.
    let agenda = within("the agenda", app.get("/tournaments?status=registration", None)).await;
    assert_eq!(card(&agenda, tournament)["translations"]["en"]["title"], "Weekend tournament", "the last commit");
    within("a tournament's card", app.get(&format!("/tournaments/{tournament}"), Some(&player.access_token)))
        .await
        .assert_ok();
    within("the signed-in caller", app.get("/auth/me", Some(&player.access_token))).await.assert_ok();
    within("the health check", app.get("/health", None)).await.assert_ok();
    within("a club's list", app.get(&format!("/organizers/{}/tournaments", club.id), Some(&club.owner.access_token)))
        .await
        .assert_ok();

    writing.commit().await.expect("committed");
    app.state.reads_changed();
    let agenda = app.get("/tournaments?status=registration", None).await;
    assert_eq!(card(&agenda, tournament)["translations"]["en"]["title"], "Being edited");
}

async fn every_public_read_shows_a_change_in_the_next_answer(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Aces", "+79990003310").await;
    let tournament = app.create_tournament(&club, 50, Duration::days(1)).await;
    let player = app.sign_in("+79990003311").await;
    let detail_path = format!("/tournaments/{tournament}");

    let agenda = app.get("/tournaments", None).await;
    assert_eq!(card(&agenda, tournament)["registeredCount"], 0);
    let anonymous = app.get(&detail_path, None).await;
    assert_eq!(anonymous.body["myRegistration"], Value::Null);
    let mine = app.get(&detail_path, Some(&player.access_token)).await;
    assert_eq!(mine.body["myRegistration"], Value::Null, "not registered yet");
    assert_eq!(app.get("/tournaments", None).await.body, agenda.body, "kept: the same answer again");

    app.post(&format!("/tournaments/{tournament}/register"), Some(&player.access_token), json!({})).await.assert_ok();
    let after = app.call_with(Method::GET, "/tournaments", None, None, &[("If-None-Match", &etag(&agenda))]).await;
    assert_eq!(after.status, 200, "the old validator no longer matches");
    assert_eq!(card(&after, tournament)["registeredCount"], 1);
    let anonymous = app.get(&detail_path, None).await;
    assert_eq!(anonymous.body["registeredCount"], 1);
    assert_eq!(anonymous.body["myRegistration"], Value::Null, "nobody's registration for everyone");
    let mine = app.get(&detail_path, Some(&player.access_token)).await;
    assert_eq!(mine.body["myRegistration"]["status"], "registered");
    assert_eq!(mine.body["registeredCount"], 1);
    let mut without_mine = mine.body.clone();
    without_mine["myRegistration"] = Value::Null;
    assert_eq!(without_mine, anonymous.body, "the same card, with the caller's own registration");

    let renamed = json!({"translations": {"en": {"title": "Renamed"}}});
    app.patch(&detail_path, Some(&club.owner.access_token), renamed).await.assert_ok();
    assert_eq!(app.get(&detail_path, None).await.body["translations"]["en"]["title"], "Renamed");
    assert_eq!(card(&app.get("/tournaments", None).await, tournament)["translations"]["en"]["title"], "Renamed");

    let admin = app.platform_admin().await;
    let cities = app.get("/cities", None).await;
    let city = json!({"slug": "tula", "translations": {"ru": {"name": "Тула"}, "en": {"name": "Tula"}}});
    app.post("/admin/cities", Some(&admin.access_token), city).await.assert_ok();
    let more = app.get("/cities", None).await;
    let slugs = more.body["items"].as_array().expect("items").iter().map(|c| c["slug"].clone()).collect::<Vec<_>>();
    assert!(slugs.contains(&json!("tula")), "{slugs:?}");
    assert_ne!(etag(&more), etag(&cities));

    let board = app.get("/leaderboards/level", None).await;
    board.assert_ok();
    assert_eq!(app.get("/level-tiers", None).await.body["items"][1]["color"], "#81C784");
    let tiers = app.get("/admin/level-tiers", Some(&admin.access_token)).await;
    let tier_id = tiers.body["items"][1]["id"].as_str().expect("a tier").to_owned();
    app.patch(&format!("/admin/level-tiers/{tier_id}"), Some(&admin.access_token), json!({"color": "#123456"}))
        .await
        .assert_ok();
    assert_eq!(app.get("/level-tiers", None).await.body["items"][1]["color"], "#123456");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_write_keeps_the_answers() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let club = app.create_club("Aces", "+79990003320").await;
    let tournament = app.create_tournament(&club, 50, Duration::days(1)).await;
    let player = app.sign_in("+79990003321").await;
    let agenda = app.get("/tournaments", None).await;
    // Changed behind the API's back, and not announced: the kept agenda does not know.
    let quiet = format!("UPDATE tournaments SET capacity = 77 WHERE id = {}", app.uuid_literal(tournament));
    app.db().execute_unprepared(&quiet).await.expect("updated");

    // Refusals change nothing, so a stream of them cannot keep the cache empty.
    let capacity = json!({"capacity": 1});
    app.patch(&format!("/tournaments/{tournament}"), Some(&player.access_token), capacity).await;
    app.post(&format!("/tournaments/{tournament}/register"), Some("not-a-token"), json!({})).await;
    app.post("/auth/otp/verify", None, json!({"phone": "+79990003322", "code": "000000"})).await;
    let kept = app.get("/tournaments", None).await;
    assert_eq!(kept.body, agenda.body, "no refusal dropped the kept agenda");

    app.post(&format!("/tournaments/{tournament}/register"), Some(&player.access_token), json!({})).await.assert_ok();
    let fresh = app.get("/tournaments", None).await;
    assert_eq!(card(&fresh, tournament)["capacity"], 77, "a write that went through dropped it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_answer_goes_out_in_gzip_and_answers_304() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let club = app.create_club("Aces", "+79990003330").await;
    for days in 1..=5 {
        app.create_tournament(&club, 50, Duration::days(days)).await;
    }
    let plain = app.client.get(app.url("/tournaments")).send().await.expect("an answer");
    let tag = plain.headers().get("etag").cloned().expect("an ETag");
    assert_eq!(plain.headers().get("vary").and_then(|vary| vary.to_str().ok()), Some("accept-encoding"));
    let plain = plain.bytes().await.expect("a body");

    for accepted in ["gzip", "br;q=1.0, gzip;q=0.8"] {
        let gzipped =
            app.client.get(app.url("/tournaments")).header("accept-encoding", accepted).send().await.expect("answer");
        assert_eq!(gzipped.headers().get("content-encoding").and_then(|v| v.to_str().ok()), Some("gzip"), "{accepted}");
        assert_eq!(gzipped.headers().get("etag"), Some(&tag), "one validator for both forms");
        let body = gzipped.bytes().await.expect("a body");
        assert!(body.len() < plain.len() / 3, "{} of {} bytes", body.len(), plain.len());
        let mut unzipped = Vec::new();
        flate2::read::GzDecoder::new(body.as_ref()).read_to_end(&mut unzipped).expect("valid gzip");
        assert_eq!(unzipped, plain.as_ref());
    }

    let again = app
        .client
        .get(app.url("/tournaments"))
        .header("if-none-match", tag.clone())
        .header("accept-encoding", "gzip")
        .send()
        .await
        .expect("an answer");
    assert_eq!(again.status(), 304);
    assert_eq!(again.headers().get("etag"), Some(&tag));
    assert!(again.bytes().await.expect("no body").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slide_comes_on_show_when_its_window_opens_with_nothing_else_changing() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let marketing = app.sign_in_as_admin("+79990003340", "marketing").await;
    let opens = Utc::now() + Duration::milliseconds(1500);
    let slide = json!({
        "pictureUrl": "https://cdn.example.org/a.png",
        "target": {"kind": "url", "url": "https://floor.example.org/news"},
        "startsAt": opens.to_rfc3339(),
        "translations": {"ru": {"title": "Скоро"}, "en": {"title": "Soon"}},
    });
    app.post("/admin/promo-slides", Some(&marketing.access_token), slide).await.assert_ok();
    assert_eq!(app.get("/promo-slides", None).await.body["items"], json!([]), "not yet on show");

    let wait = (opens - Utc::now()).to_std().unwrap_or_default() + StdDuration::from_millis(200);
    tokio::time::sleep(wait).await;
    let on_show = app.get("/promo-slides", None).await;
    assert_eq!(on_show.body["items"][0]["translations"]["en"]["title"], "Soon", "{on_show:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_node_drops_its_kept_reads_when_this_one_changes_something() {
    let Some(redis) = test_redis_url().await else { return };
    let Some(first) = spawn_app_with(Backend::Postgres, &[("REDIS_URL", redis)]).await else { return };
    let second = first.second_node(&[("REDIS_URL", redis)]).await;
    let club = first.create_club("Aces", "+79990003350").await;
    let tournament = first.create_tournament(&club, 50, Duration::days(1)).await;
    let player = first.sign_in("+79990003351").await;
    let detail = format!("/tournaments/{tournament}");
    assert_eq!(registered_on(&second, &detail).await, 0, "kept on the second node");

    first.post(&format!("{detail}/register"), Some(&player.access_token), json!({})).await.assert_ok();
    let mut seen = registered_on(&second, &detail).await;
    for _ in 0..100 {
        if seen == 1 {
            break;
        }
        tokio::time::sleep(StdDuration::from_millis(20)).await;
        seen = registered_on(&second, &detail).await;
    }
    assert_eq!(seen, 1, "the second node still showed the card from before the registration");
}

async fn registered_on(node: &TestApp, detail: &str) -> i64 {
    node.get(detail, None).await.body["registeredCount"].as_i64().expect("a count")
}
