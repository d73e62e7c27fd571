//! The contract: the committed `openapi.yaml` is exactly what the code generates, and the
//! reference page is served.

use crate::helpers::{Backend, spawn_app};

#[test]
fn the_committed_openapi_yaml_matches_the_generated_one() {
    let generated = floor::http::openapi().to_yaml().expect("the document renders");
    let committed = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/openapi.yaml"))
        .expect("openapi.yaml is committed at the root");
    assert!(
        committed == generated,
        "openapi.yaml is stale: regenerate it with `cargo run -- openapi > openapi.yaml`"
    );
}

#[test]
fn every_path_is_documented_without_the_version_prefix_under_one_server() {
    let doc = floor::http::openapi();
    let servers = doc.servers.as_ref().expect("servers");
    assert_eq!(servers[0].url, "/api/v1");
    let paths: Vec<&String> = doc.paths.paths.keys().collect();
    for expected in ["/auth/otp/request", "/auth/otp/verify", "/auth/refresh", "/auth/me", "/me",
        "/admin/admins", "/admin/admins/{userId}/role", "/health"] {
        assert!(paths.iter().any(|p| *p == expected), "{expected} missing from {paths:?}");
    }
    assert!(paths.iter().all(|p| !p.starts_with("/api/")));
}

#[tokio::test]
async fn the_reference_page_is_served_at_docs() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let reply = app.client.get(format!("{}/docs", app.base)).send().await.expect("answer");
    assert_eq!(reply.status(), 200);
    let html = reply.text().await.expect("html");
    assert!(html.contains("/auth/otp/request"), "the page embeds the contract");
}
