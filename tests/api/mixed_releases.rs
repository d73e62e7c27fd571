//! Nodes of two releases side by side (a rolling deploy, a rollback): a node passes over what
//! a newer release sends that it does not know, and counts it, rather than misreading it.

use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use uuid::Uuid;

use crate::helpers::{Backend, spawn_app_with, test_redis_url};
use crate::own_redis::OwnRedis;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_note_of_a_newer_release_s_kind_is_passed_over_and_counted() {
    let Some(redis_url) = test_redis_url().await else { return };
    let Some(app) = spawn_app_with(Backend::Sqlite, &[("REDIS_URL", redis_url)]).await else { return };
    let client = redis::Client::open(redis_url).expect("a URL");
    let mut redis = client.get_multiplexed_async_connection().await.expect("Redis");
    let newer = serde_json::json!({
        "kind": "seatsChanged",
        "tournamentId": Uuid::new_v4(),
        "node": Uuid::new_v4(),
        "release": "9.0.0",
    });
    let count = |reason: &str| {
        let (client, url) = (app.client.clone(), format!("{}/metrics", app.base));
        let line = format!("floor_bus_notes_ignored_total{{reason=\"{reason}\"}} ");
        async move {
            let text = client.get(url).send().await.ok()?.text().await.ok()?;
            text.lines().find_map(|found| found.strip_prefix(line.as_str())).and_then(|value| value.parse::<f64>().ok())
        }
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    // The node subscribes as it starts; a note sent before then is not heard, so send again.
    while count("unknown_kind").await.is_none() || count("unreadable").await.is_none() {
        assert!(tokio::time::Instant::now() < deadline, "the node counts what it passed over");
        redis::cmd("PUBLISH").arg("floor:changes").arg(newer.to_string()).query_async::<i64>(&mut redis).await.ok();
        redis::cmd("PUBLISH").arg("floor:changes").arg("{not a note").query_async::<i64>(&mut redis).await.ok();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let health = app.get("/health", None).await;
    assert_eq!(health.status, 200, "and serves on");
}

/// The kinds of the notes heard on `notes` within `within`.
async fn kinds_heard(notes: &mut redis::aio::PubSubStream, within: Duration) -> Vec<String> {
    let mut kinds = Vec::new();
    let until = tokio::time::Instant::now() + within;
    while let Ok(Some(message)) = tokio::time::timeout_at(until, notes.next()).await {
        let Ok(payload) = message.get_payload::<String>() else { continue };
        if let Ok(note) = serde_json::from_str::<serde_json::Value>(&payload)
            && let Some(kind) = note["kind"].as_str()
        {
            kinds.push(kind.to_owned());
        }
    }
    kinds
}

/// A desk's commit tells the other nodes to build again the reads it changed (`renewed`), a
/// kind 0.2.0 passes over: while a node that says no release (0.2.0) listens, it sends `reads`
/// instead, which every release acts on; once every listener runs 0.3.0, `renewed`; and after a
/// rollback brings an old node back, `reads` again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kind_older_releases_pass_over_is_sent_only_while_every_listener_reads_it() {
    let Some(redis) = OwnRedis::start() else { return };
    let url = redis.url();
    let Some(app) = spawn_app_with(Backend::Sqlite, &[("REDIS_URL", url.as_str())]).await else { return };
    let client = redis::Client::open(format!("redis://127.0.0.1:{}/", redis.port)).expect("a URL");
    // An older node: it listens on the bus and says nothing of its release.
    let mut listener = client.get_async_pubsub().await.expect("Redis");
    listener.subscribe("floor:changes").await.expect("subscribed");
    let mut notes = listener.into_on_message();
    let mut redis = client.get_multiplexed_async_connection().await.expect("Redis");
    // The node reads who listens once a second: until its first reading after the old node
    // subscribed it knows only itself, and rightly sends `renewed`.
    tokio::time::sleep(Duration::from_millis(2500)).await;

    let club = app.create_club("Mixed club", "+79990088300").await;
    let tournament = app.create_tournament(&club, 50, chrono::Duration::days(2)).await;
    let mut players = app.sign_in_players(883, 40).await.into_iter();
    let mut register_until = async |wanted: &str, unwanted: &str| {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
        loop {
            assert!(tokio::time::Instant::now() < deadline, "a desk's commit sent {wanted}");
            let player = players.next().expect("a player left");
            let path = format!("/tournaments/{tournament}/register");
            app.post(&path, Some(&player.access_token), json!({})).await.assert_ok();
            let kinds = kinds_heard(&mut notes, Duration::from_millis(700)).await;
            if kinds.iter().any(|kind| kind == wanted) {
                assert!(!kinds.iter().any(|kind| kind == unwanted), "{kinds:?}");
                return;
            }
        }
    };
    register_until("reads", "renewed").await;
    // Still `reads` a few seconds on: the node keeps reading who listens.
    tokio::time::sleep(Duration::from_secs(2)).await;
    register_until("reads", "renewed").await;

    // The old node is replaced by one of 0.3.0, which says its release as every node does.
    let node = Uuid::new_v4().to_string();
    let key = format!("floor:release:{node}");
    redis::cmd("SET").arg(&key).arg("0.3.0").arg("PX").arg(60_000).query_async::<()>(&mut redis).await.expect("said");
    redis::cmd("SADD").arg("floor:releases").arg(&node).query_async::<()>(&mut redis).await.expect("said");
    register_until("renewed", "reads").await;

    // Rolled back: a node listens again that says nothing. Its word expires; the node stops
    // reading it.
    redis::cmd("DEL").arg(&key).query_async::<()>(&mut redis).await.expect("gone");
    register_until("reads", "renewed").await;
    let nodes: Vec<String> = redis::cmd("SMEMBERS").arg("floor:releases").query_async(&mut redis).await.expect("read");
    assert!(!nodes.contains(&node), "a node whose word expired is no longer read: {nodes:?}");
}
