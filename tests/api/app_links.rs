//! The app-link files at the bare origin: what iOS and Android fetch before they let the apps
//! open share links, as their documentation requires it, and the `404` of any unknown path
//! without the settings.

use reqwest::redirect::Policy;
use serde_json::{Value, json};

use crate::cli::floor;
use crate::helpers::{Backend, TestApp, spawn_app, spawn_app_with};

const APPLE: &str = "/.well-known/apple-app-site-association";
const ANDROID: &str = "/.well-known/assetlinks.json";
const FINGERPRINT: &str =
    "14:6D:E9:83:C5:73:06:50:D8:EE:B9:95:2F:34:FC:64:16:A0:83:42:E6:1D:BE:A8:8A:04:96:B2:3F:CF:44:E5";
const SECOND_FINGERPRINT: &str =
    "AB:CD:B5:5D:42:85:22:C0:BD:91:16:AA:7C:97:C8:2D:70:58:D7:AA:00:F6:2F:DB:70:EF:18:C4:65:3B:1A:DC";

/// Apple and Google fetch without following redirects: neither should this.
fn verifier() -> reqwest::Client {
    reqwest::Client::builder().redirect(Policy::none()).build().expect("a client")
}

/// Status, content type, cache control and JSON body of `GET path` at the bare origin.
async fn fetch(app: &TestApp, path: &str) -> (u16, String, String, Value) {
    let answer = verifier().get(format!("{}{path}", app.base)).send().await.expect("an answer");
    let header = |name: &str| {
        answer.headers().get(name).map(|value| value.to_str().expect("text").to_owned()).unwrap_or_default()
    };
    let (status, kind, cache) = (answer.status().as_u16(), header("content-type"), header("cache-control"));
    let body = answer.json().await.expect("a JSON body");
    (status, kind, cache, body)
}

#[tokio::test]
async fn with_the_settings_both_files_are_served_as_json_covering_the_share_links() {
    let settings = [
        ("APPLE_APP_IDS", "ABCDE12345.club.floor.player, ABCDE12345.club.floor.player-beta"),
        ("ANDROID_APP_PACKAGE", "club.floor.player"),
        // Lowercase and without colons, as keytool's raw output may be copied: written back as
        // Google writes fingerprints.
        ("ANDROID_CERT_SHA256", &format!("{FINGERPRINT}, {}", SECOND_FINGERPRINT.replace(':', "").to_lowercase())),
    ];
    let Some(app) = spawn_app_with(Backend::Sqlite, &settings).await else { return };

    let (status, kind, cache, body) = fetch(&app, APPLE).await;
    assert_eq!((status, kind.as_str(), cache.as_str()), (200, "application/json", "public, max-age=3600"));
    assert_eq!(
        body,
        json!({"applinks": {"details": [{
            "appIDs": ["ABCDE12345.club.floor.player", "ABCDE12345.club.floor.player-beta"],
            "components": [{"/": "/t/*", "comment": "A tournament's public page, behind the links the apps share."}],
        }]}})
    );

    let (status, kind, cache, body) = fetch(&app, ANDROID).await;
    assert_eq!((status, kind.as_str(), cache.as_str()), (200, "application/json", "public, max-age=3600"));
    assert_eq!(
        body,
        json!([{
            "relation": ["delegate_permission/common.handle_all_urls"],
            "target": {
                "namespace": "android_app",
                "package_name": "club.floor.player",
                "sha256_cert_fingerprints": [FINGERPRINT, SECOND_FINGERPRINT],
            },
        }])
    );

    for path in [APPLE, ANDROID] {
        let head = verifier().head(format!("{}{path}", app.base)).send().await.expect("an answer");
        assert_eq!(head.status(), 200, "HEAD {path}");
        assert_eq!(head.headers()["content-type"], "application/json", "HEAD {path}");
    }
    // Each file at its one path: nothing redirects to it from a trailing slash or an extension.
    for near in [format!("{APPLE}/"), format!("{APPLE}.json"), format!("{ANDROID}/")] {
        let answer = verifier().get(format!("{}{near}", app.base)).send().await.expect("an answer");
        assert_eq!(answer.status(), 404, "{near}");
    }
}

#[tokio::test]
async fn without_the_settings_both_paths_answer_as_any_unknown_path() {
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let unknown = fetch(&app, "/.well-known/no-such-file").await;
    assert_eq!((unknown.0, unknown.1.as_str()), (404, "application/json"));
    assert_eq!(unknown.3["error"]["code"], "NOT_FOUND");
    for path in [APPLE, ANDROID] {
        assert_eq!(fetch(&app, path).await, unknown, "{path}");
    }
}

#[tokio::test]
async fn apple_settings_alone_serve_the_apple_file_alone() {
    let Some(app) = spawn_app_with(Backend::Sqlite, &[("APPLE_APP_IDS", "ABCDE12345.club.floor.player")]).await else {
        return;
    };
    let (status, _, _, body) = fetch(&app, APPLE).await;
    assert_eq!(status, 200);
    assert_eq!(body["applinks"]["details"][0]["appIDs"], json!(["ABCDE12345.club.floor.player"]));
    let (status, _, _, body) = fetch(&app, ANDROID).await;
    assert_eq!((status, &body["error"]["code"]), (404, &json!("NOT_FOUND")));
}

#[test]
fn a_half_android_setup_or_a_bad_app_id_refuses_to_start_in_one_line() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    for (name, value, refusal) in [
        ("ANDROID_APP_PACKAGE", "club.floor.player", "ANDROID_APP_PACKAGE is set but ANDROID_CERT_SHA256 is not"),
        ("ANDROID_CERT_SHA256", FINGERPRINT, "ANDROID_CERT_SHA256 is set but ANDROID_APP_PACKAGE is not"),
        ("APPLE_APP_IDS", "club.floor.player", "APPLE_APP_IDS has an invalid value \"club.floor.player\""),
    ] {
        let output = floor().arg("migrate").env(name, value).current_dir(folder.path()).output().expect("floor runs");
        assert_eq!(output.status.code(), Some(2), "{name}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(refusal), "{stderr}");
    }
}
