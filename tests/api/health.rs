//! The operations endpoints: `GET /api/v1/health` (public, reports the database and Redis),
//! `GET /ready` and `GET /metrics` at the bare origin.

use serde_json::json;

use crate::helpers::{Backend, on_both_databases, spawn_app, spawn_app_with, test_redis_url};

on_both_databases!(health_is_public_and_reports_the_database);

async fn health_is_public_and_reports_the_database(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let reply = app.get("/health", None).await;
    assert_eq!(reply.assert_ok(), &json!({"status": "ok", "db": "ok", "redis": "off"}));
}

#[tokio::test]
async fn health_reports_redis_when_it_is_configured() {
    let Some(redis_url) = test_redis_url().await else { return };
    let Some(app) = spawn_app_with(Backend::Sqlite, &[("REDIS_URL", redis_url)]).await else { return };
    let reply = app.get("/health", None).await;
    assert_eq!(reply.assert_ok(), &json!({"status": "ok", "db": "ok", "redis": "ok"}));
}

/// A node starts while its Redis is unreachable: it serves its own clients (alive, ready,
/// degraded) and says which dependency is down; it joins the other nodes when Redis answers
/// (`redis_outage.rs`).
#[tokio::test]
async fn a_node_that_cannot_reach_its_redis_starts_degraded() {
    let Some(app) = spawn_app_with(Backend::Sqlite, &[("REDIS_URL", "redis://127.0.0.1:1/")]).await else { return };
    let reply = app.get("/health", None).await;
    assert_eq!(reply.assert_ok(), &json!({"status": "degraded", "db": "ok", "redis": "error"}));
    let ready = app.client.get(format!("{}/ready", app.base)).send().await.expect("an answer");
    assert_eq!(ready.status(), 200, "a node without Redis still serves its clients");
    let body: serde_json::Value = ready.json().await.expect("json");
    assert_eq!(
        body,
        json!({"status": "degraded", "db": "ok", "redis": "error", "dbAnswersElsewhere": false, "shuttingDown": false})
    );
    let metrics = app.client.get(format!("{}/metrics", app.base)).send().await.expect("an answer");
    let text = metrics.text().await.expect("text");
    assert!(text.lines().any(|line| line == "floor_bus_up 0"), "{text}");
    let build = format!(
        "floor_build_info{{release=\"{}\",commit=\"{}\"}} 1",
        floor::infra::release::VERSION,
        floor::infra::release::COMMIT
    );
    assert!(text.lines().any(|line| line == build), "the scrape names the node's release: {text}");
}

/// `GET /ready` at the bare origin: ready while the database answers and no shutdown has
/// begun; a graceful shutdown turns it away at once, so a load balancer stops sending work.
#[tokio::test]
async fn ready_answers_until_a_shutdown_begins() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let ready = app.client.get(format!("{}/ready", app.base)).send().await.expect("an answer");
    assert_eq!(ready.status(), 200);
    let body: serde_json::Value = ready.json().await.expect("json");
    assert_eq!(
        body,
        json!({"status": "ready", "db": "ok", "redis": "off", "dbAnswersElsewhere": false, "shuttingDown": false})
    );

    app.state.shutdown.cancel();
    let leaving = app.client.get(format!("{}/ready", app.base)).send().await.expect("an answer");
    assert_eq!(leaving.status(), 503);
    let body: serde_json::Value = leaving.json().await.expect("json");
    assert_eq!(
        body,
        json!({"status": "not_ready", "db": "ok", "redis": "off", "dbAnswersElsewhere": false, "shuttingDown": true})
    );
    // Liveness is another question: the node is still alive while it drains.
    app.get("/health", None).await.assert_ok();
}

/// `GET /metrics`: requests by route and status, live commands by outcome, broadcasts, the
/// node's sockets, actors and database connections, in OpenMetrics text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_requests_commands_broadcasts_sockets_and_actors() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let game = crate::live::ready(&app, "+79990006600", 660, 2).await;
    game.start(&app).await;
    let owner = Some(game.club.owner.access_token.as_str());
    app.post(&game.path("pause"), owner, json!({})).await.assert_ok();
    app.post(&game.path("level"), owner, json!({"direction": "prev"})).await.assert_error(409, "INVALID_LEVEL");
    let watcher = app.watcher(&game.club.owner.access_token).await;

    let scrape = app.client.get(format!("{}/metrics", app.base)).send().await.expect("an answer");
    assert_eq!(scrape.status(), 200);
    let kind = scrape.headers().get("content-type").and_then(|kind| kind.to_str().ok()).unwrap_or_default();
    assert!(kind.starts_with("application/openmetrics-text"), "{kind}");
    let text = scrape.text().await.expect("text");
    let value = |series: &str| -> f64 {
        text.lines()
            .find_map(|line| line.strip_prefix(series).and_then(|rest| rest.strip_prefix(' ')))
            .and_then(|value| value.parse().ok())
            .unwrap_or_else(|| panic!("no {series} in:\n{text}"))
    };
    let pause = r#"floor_http_requests_total{method="POST",route="/api/v1/tournaments/{id}/pause",status="200"}"#;
    assert_eq!(value(pause), 1.0);
    assert_eq!(value(r#"floor_live_commands_total{command="pause",outcome="ok"}"#), 1.0);
    assert_eq!(value(r#"floor_live_commands_total{command="level",outcome="INVALID_LEVEL"}"#), 1.0);
    assert_eq!(value(r#"floor_live_commands_total{command="start",outcome="ok"}"#), 1.0);
    assert!(value("floor_broadcast_duration_seconds_count") >= 2.0, "the start and the pause were broadcast");
    assert_eq!(value("floor_live_actors"), 1.0, "one running tournament, one actor here");
    assert_eq!(value("floor_live_sockets"), 1.0);
    assert!(value(r#"floor_db_connections{pool="readers",state="open"}"#) >= 1.0);
    assert_eq!(value(r#"floor_db_connections{pool="writer",state="open"}"#), 1.0, "SQLite's one writer");
    assert!(!text.contains(&game.id.to_string()), "ids never make a series");
    drop(watcher);
}
