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

/// The contract's paths served so far, with their methods, by contract number.
const CONTRACT_PATHS: &[(&str, &[&str])] = &[
    ("/auth/otp/request", &["post"]),
    ("/auth/otp/verify", &["post"]),
    ("/auth/refresh", &["post"]),
    ("/auth/me", &["get"]),
    ("/me", &["patch"]),
    ("/admin/admins", &["get", "post"]),
    ("/admin/admins/{userId}/role", &["put"]),
    ("/tournaments", &["get"]),
    ("/search", &["get"]),
    ("/tournaments/{id}", &["get", "patch"]),
    ("/tournaments/{id}/cancel", &["post"]),
    ("/tournaments/{id}/register", &["post"]),
    ("/tournaments/{id}/cancel-registration", &["post"]),
    ("/tournaments/{id}/check-in", &["post"]),
    ("/tournaments/{id}/cancel-check-in", &["post"]),
    ("/tournaments/{id}/walk-in", &["post"]),
    ("/tournaments/{id}/registrations", &["get"]),
    ("/tournaments/{id}/strikes", &["get"]),
    ("/strikes/{id}/forgive", &["post"]),
    ("/tournaments/{id}/live", &["get"]),
    ("/tournaments/{id}/start", &["post"]),
    ("/tournaments/{id}/pause", &["post"]),
    ("/tournaments/{id}/resume", &["post"]),
    ("/tournaments/{id}/level", &["post"]),
    ("/eliminations", &["post"]),
    ("/tournaments/{id}/eliminations/undo", &["post"]),
    ("/tournaments/{id}/eliminations/reorder", &["post"]),
    ("/tournaments/{id}/reseat", &["post"]),
    ("/tournaments/{id}/confirm-results", &["post"]),
    ("/tournaments/{id}/results", &["get"]),
    ("/players/{userId}/results", &["get"]),
    ("/health", &["get"]),
    ("/organizers/mine", &["get"]),
    ("/organizers/{id}", &["get", "patch"]),
    ("/organizers/{id}/members", &["get", "post"]),
    ("/organizers/{id}/members/{memberId}", &["delete"]),
    ("/organizers/{id}/dealer-invites", &["get", "post"]),
    ("/dealer-invites/claim", &["post"]),
    ("/organizers/{id}/locations", &["get", "post"]),
    ("/locations/{id}", &["get", "patch"]),
    ("/locations", &["get"]),
    ("/organizers/{id}/blind-templates", &["get", "post"]),
    ("/organizers/{id}/tournaments", &["get", "post"]),
    ("/tournaments/{id}/dealers", &["get", "post"]),
    ("/tournaments/{id}/dealers/{dealerUserId}", &["patch", "delete"]),
    ("/me/dealer-assignments", &["get"]),
    ("/dealers", &["get"]),
    ("/dealers/{userId}", &["get"]),
    ("/dealers/me", &["patch"]),
    ("/players/{userId}", &["get"]),
    ("/players/{userId}/follow", &["put", "delete"]),
    ("/me/follows", &["get"]),
    ("/cities", &["get"]),
    ("/level-tiers", &["get"]),
    ("/promo-slides", &["get"]),
    ("/me/push-tokens", &["post"]),
    ("/me/push-tokens/{token}", &["delete"]),
    ("/me/notifications", &["get"]),
    ("/admin/organizers", &["get", "post"]),
    ("/admin/organizers/{id}/tournaments", &["post"]),
    ("/admin/tournaments/{id}/recount", &["post"]),
    ("/uploads", &["post"]),
];

#[test]
fn the_document_lists_exactly_the_contract_paths_served_so_far_with_their_methods() {
    let doc = floor::http::openapi();
    let servers = doc.servers.as_ref().expect("servers");
    assert_eq!(servers[0].url, "/api/v1");
    let yaml: serde_json::Value = serde_json::to_value(&doc.paths).expect("paths serialise");
    let paths = yaml["paths"].as_object().cloned().unwrap_or_else(|| yaml.as_object().cloned().expect("an object"));
    for (path, methods) in CONTRACT_PATHS {
        let item = paths.get(*path).unwrap_or_else(|| panic!("{path} missing"));
        for method in *methods {
            assert!(item.get(*method).is_some(), "{method} {path} missing");
        }
    }
    let mut documented: Vec<&String> = paths.keys().collect();
    documented.sort();
    let mut expected: Vec<String> = CONTRACT_PATHS.iter().map(|(path, _)| (*path).to_owned()).collect();
    expected.sort();
    assert_eq!(documented, expected.iter().collect::<Vec<_>>(), "no path beyond the contract");
}

#[tokio::test]
async fn the_reference_page_is_served_at_docs() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let reply = app.client.get(format!("{}/docs", app.base)).send().await.expect("answer");
    assert_eq!(reply.status(), 200);
    let html = reply.text().await.expect("html");
    assert!(html.contains("/auth/otp/request"), "the page embeds the contract");
}
