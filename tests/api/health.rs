//! `GET /health`: public, reports the database and Redis.

use serde_json::json;

use crate::helpers::{Backend, on_both_databases, spawn_app, spawn_app_with};

on_both_databases!(health_is_public_and_reports_the_database);

async fn health_is_public_and_reports_the_database(backend: Backend) {
    let Some(app) = spawn_app(backend).await else { return };
    let reply = app.get("/health", None).await;
    assert_eq!(reply.assert_ok(), &json!({"status": "ok", "db": "ok", "redis": "off"}));
}

#[tokio::test]
async fn health_reports_redis_when_it_is_configured() {
    let redis_url = "redis://127.0.0.1:6379/?protocol=resp3";
    let reachable = match redis::Client::open(redis_url) {
        Ok(client) => client.get_multiplexed_async_connection().await.is_ok(),
        Err(_) => false,
    };
    if !reachable {
        assert!(std::env::var_os("CI").is_none(), "Redis must be reachable in CI");
        eprintln!("skipping: Redis is unreachable and CI is not set");
        return;
    }
    let Some(app) = spawn_app_with(Backend::Sqlite, &[("REDIS_URL", redis_url)]).await else { return };
    let reply = app.get("/health", None).await;
    assert_eq!(reply.assert_ok(), &json!({"status": "ok", "db": "ok", "redis": "ok"}));

    let Some(app) = spawn_app_with(Backend::Sqlite, &[("REDIS_URL", "redis://127.0.0.1:1/")]).await else { return };
    let reply = app.get("/health", None).await;
    assert_eq!(reply.status, 503);
    assert_eq!(reply.body, json!({"status": "degraded", "db": "ok", "redis": "error"}));
}
