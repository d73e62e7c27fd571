//! `GET /health`: public, reports the database and Redis.

use serde_json::json;

use crate::helpers::{Backend, on_both_databases, spawn_app, spawn_app_with, test_config, test_redis_url};

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

/// With `REDIS_URL` set, broadcasts must reach every node: a node that cannot reach Redis at
/// start refuses to start rather than serve its own sockets alone.
#[tokio::test]
async fn a_node_that_cannot_reach_its_redis_does_not_start() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let database_url = format!("sqlite://{}?mode=rwc", folder.path().join("floor.db").display());
    let config = test_config(&database_url, &[("REDIS_URL", "redis://127.0.0.1:1/")]);
    let Err(err) = floor::Application::build(config).await else { panic!("the node started without its Redis") };
    assert!(format!("{err:#}").contains("Redis"), "{err:#}");
}

/// `GET /ready` at the bare origin: ready while the database answers and no shutdown has
/// begun; a graceful shutdown turns it away at once, so a load balancer stops sending work.
#[tokio::test]
async fn ready_answers_until_a_shutdown_begins() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let ready = app.client.get(format!("{}/ready", app.base)).send().await.expect("an answer");
    assert_eq!(ready.status(), 200);
    let body: serde_json::Value = ready.json().await.expect("json");
    assert_eq!(body, json!({"status": "ready", "db": "ok", "redis": "off", "shuttingDown": false}));

    app.state.shutdown.cancel();
    let leaving = app.client.get(format!("{}/ready", app.base)).send().await.expect("an answer");
    assert_eq!(leaving.status(), 503);
    let body: serde_json::Value = leaving.json().await.expect("json");
    assert_eq!(body, json!({"status": "not_ready", "db": "ok", "redis": "off", "shuttingDown": true}));
    // Liveness is another question: the node is still alive while it drains.
    app.get("/health", None).await.assert_ok();
}
