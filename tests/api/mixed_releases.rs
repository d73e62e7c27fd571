//! Nodes of two releases side by side (a rolling deploy, a rollback): a node passes over what
//! a newer release sends that it does not know, and counts it, rather than misreading it.

use std::time::Duration;

use uuid::Uuid;

use crate::helpers::{Backend, spawn_app_with, test_redis_url};

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
