//! The contract: the committed `openapi.yaml` is exactly what the code generates, and the
//! reference page is served with both documents.

use crate::helpers::{Backend, spawn_app};

#[test]
fn the_committed_openapi_yaml_matches_the_generated_one() {
    let generated = floor::http::openapi().to_yaml().expect("the document renders");
    let committed = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/openapi.yaml"))
        .expect("openapi.yaml is committed at the root");
    assert!(committed == generated, "openapi.yaml is stale: regenerate it with `cargo run -- openapi > openapi.yaml`");
}

/// The contract's 83 paths with their methods, by contract number.
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
    ("/leaderboards/season", &["get"]),
    ("/leaderboards/season/summary", &["get"]),
    ("/leaderboards/level", &["get"]),
    ("/seasons/current", &["get"]),
    ("/seasons", &["get"]),
    ("/admin/rating-config", &["get", "put"]),
    ("/cities", &["get"]),
    ("/level-tiers", &["get"]),
    ("/promo-slides", &["get"]),
    ("/me/push-tokens", &["post"]),
    ("/me/push-tokens/{token}", &["delete"]),
    ("/me/notifications", &["get"]),
    ("/admin/users", &["get"]),
    ("/admin/users/{id}", &["patch"]),
    ("/admin/users/{id}/merge", &["post"]),
    ("/admin/metrics", &["get"]),
    ("/admin/push", &["post"]),
    ("/admin/organizers", &["get", "post"]),
    ("/admin/organizers/{id}/tournaments", &["post"]),
    ("/admin/tournaments/{id}/recount", &["post"]),
    ("/admin/tournaments", &["get"]),
    ("/admin/tournaments/{id}", &["patch"]),
    ("/admin/seasons", &["get", "post"]),
    ("/admin/seasons/{id}", &["patch"]),
    ("/admin/cities", &["get", "post"]),
    ("/admin/cities/{id}", &["patch", "delete"]),
    ("/admin/level-tiers", &["get", "post"]),
    ("/admin/level-tiers/{id}", &["patch", "delete"]),
    ("/admin/promo-slides", &["get", "post"]),
    ("/admin/promo-slides/{id}", &["patch", "delete"]),
    ("/uploads", &["post"]),
];

/// The operations Floor adds beyond the specification (api-contract.md, "Extensions beyond
/// the specification"), each tagged `extension`.
const EXTENSION_PATHS: &[(&str, &[&str])] = &[
    ("/tournaments/{id}/table-break", &["get"]),
    ("/tournaments/{id}/reseat-batch", &["post"]),
    ("/tournaments/{id}/announcements", &["post"]),
    ("/me/registrations", &["get"]),
    ("/tournaments/{id}/registrations.csv", &["get"]),
    ("/tournaments/{id}/results.csv", &["get"]),
    ("/me/calendar-link", &["post", "delete"]),
    ("/me/delete", &["post"]),
    ("/me/export", &["get"]),
    ("/tournaments/{id}/replay", &["post"]),
];

#[test]
fn the_document_lists_exactly_the_83_contract_paths_and_the_extensions_with_their_methods() {
    assert_eq!(CONTRACT_PATHS.len(), 83, "the contract has 83 paths");
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
    for (path, methods) in EXTENSION_PATHS {
        let item = paths.get(*path).unwrap_or_else(|| panic!("extension {path} missing"));
        for method in *methods {
            let tags = &item[*method]["tags"];
            let tagged = tags.as_array().is_some_and(|tags| tags.iter().any(|tag| tag == "extension"));
            assert!(tagged, "{method} {path} is an extension and must be tagged so, has {tags}");
        }
    }
    let mut documented: Vec<&String> = paths.keys().collect();
    documented.sort();
    let mut expected: Vec<String> =
        CONTRACT_PATHS.iter().chain(EXTENSION_PATHS).map(|(path, _)| (*path).to_owned()).collect();
    expected.sort();
    assert_eq!(documented, expected.iter().collect::<Vec<_>>(), "no path beyond the contract and its extensions");
    for (path, item) in &paths {
        let contract = CONTRACT_PATHS.iter().find(|(known, _)| known == path);
        for (method, operation) in item.as_object().expect("a path item") {
            let tagged = operation["tags"].as_array().is_some_and(|tags| tags.iter().any(|tag| tag == "extension"));
            let in_contract = contract.is_some_and(|(_, methods)| methods.contains(&method.as_str()));
            if ["get", "post", "put", "patch", "delete"].contains(&method.as_str()) {
                assert_eq!(tagged, !in_contract, "{method} {path}: tagged extension exactly when beyond the contract");
            }
        }
    }
}

/// The live commands the contract says accept `Idempotency-Key` (its "Headers").
const IDEMPOTENT_COMMANDS: &[&str] = &[
    "/tournaments/{id}/start",
    "/tournaments/{id}/pause",
    "/tournaments/{id}/resume",
    "/tournaments/{id}/level",
    "/eliminations",
    "/tournaments/{id}/eliminations/undo",
    "/tournaments/{id}/eliminations/reorder",
    "/tournaments/{id}/reseat",
    "/tournaments/{id}/reseat-batch",
    "/tournaments/{id}/confirm-results",
];

/// Exactly the contract's live commands document the header, each marked where it is declared
/// (`x-idempotency-key`); a replay's queue carries a key per command instead.
#[test]
fn exactly_the_contracts_live_commands_take_an_idempotency_key() {
    let doc = serde_json::to_value(floor::http::openapi()).expect("the document serialises");
    let paths = doc["paths"].as_object().expect("paths");
    let mut taking: Vec<&str> = Vec::new();
    for (path, item) in paths {
        for (method, operation) in item.as_object().expect("a path item") {
            let parameters = operation["parameters"].as_array().cloned().unwrap_or_default();
            let documented = parameters.iter().any(|parameter| parameter["name"] == "Idempotency-Key");
            let marked = operation["x-idempotency-key"] == true;
            assert_eq!(documented, marked, "{method} {path}: the header documented exactly where it is marked");
            if documented {
                assert_eq!(method, "post", "{path}");
                taking.push(path);
            }
        }
    }
    taking.sort_unstable();
    let mut expected = IDEMPOTENT_COMMANDS.to_vec();
    expected.sort_unstable();
    assert_eq!(taking, expected);
}

#[test]
fn every_operation_documents_its_errors_in_the_contracts_shape() {
    let doc = serde_json::to_value(floor::http::openapi()).expect("the document serialises");
    let paths = doc["paths"].as_object().expect("paths");
    let mut operations = 0;
    for (path, item) in paths {
        for (method, operation) in item.as_object().expect("a path item") {
            if !["get", "post", "put", "patch", "delete"].contains(&method.as_str()) {
                continue;
            }
            operations += 1;
            let responses = operation["responses"].as_object().expect("responses");
            let errors: Vec<&String> =
                responses.keys().filter(|code| code.starts_with('4') || code.starts_with('5')).collect();
            assert!(!errors.is_empty(), "{method} {path} documents no error response");
            for code in errors {
                if path == "/health" && code == "503" {
                    continue; // a node that is down still answers its health report, not an error
                }
                let schema = &responses[code]["content"]["application/json"]["schema"]["$ref"];
                assert_eq!(schema, "#/components/schemas/ErrorBody", "{method} {path} {code} is not an ErrorBody");
            }
        }
    }
    assert!(operations >= 83, "every path has at least one operation");
}

#[tokio::test]
async fn the_reference_page_is_served_at_docs_with_both_documents() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let reply = app.client.get(format!("{}/docs", app.base)).send().await.expect("answer");
    assert_eq!(reply.status(), 200, "/docs leads to the page");
    let policy = reply.headers()["content-security-policy"].to_str().expect("text").to_owned();
    assert!(policy.starts_with("default-src 'self'"), "nothing from another host: {policy}");
    let html = reply.text().await.expect("html");
    assert!(html.contains("swagger-ui-bundle.js"), "the page loads Swagger UI from the server: {html}");
    assert!(!html.contains("http://") && !html.contains("https://"), "nothing from another host: {html}");
    let script = app.client.get(format!("{}/docs/swagger-ui-bundle.js", app.base)).send().await.expect("answer");
    assert_eq!(script.status(), 200, "Swagger UI's files come from the binary");

    let openapi = app.client.get(format!("{}/docs/openapi.json", app.base)).send().await.expect("answer");
    assert_eq!(openapi.status(), 200);
    let served: serde_json::Value = openapi.json().await.expect("json");
    assert_eq!(served, serde_json::to_value(floor::http::openapi()).expect("json"), "the generated contract");

    let asyncapi = app.client.get(format!("{}/docs/asyncapi.yaml", app.base)).send().await.expect("answer");
    assert_eq!(asyncapi.status(), 200);
    assert_eq!(asyncapi.headers()["content-type"], "application/yaml");
    let served = asyncapi.text().await.expect("text");
    assert_eq!(served, floor::domain::live::asyncapi::asyncapi().to_yaml().expect("renders"), "the generated contract");
}

#[test]
fn the_description_links_both_documents() {
    let doc = floor::http::openapi();
    let description = doc.info.description.expect("a description");
    for link in ["(/docs/openapi.json)", "(/docs/asyncapi.yaml)"] {
        assert!(description.contains(link), "{link} in {description}");
    }
}
