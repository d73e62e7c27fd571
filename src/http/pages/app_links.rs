//! `GET /.well-known/apple-app-site-association` and `GET /.well-known/assetlinks.json`: the
//! files iOS and Android fetch before they let the apps open share links (`/t/{id}`) instead of
//! the share page. Built once from the settings (`config::app_links`); a file whose settings
//! are unset is not routed, so it answers the `404` of any unknown path.

use axum::Router;
use axum::body::Bytes;
use axum::http::HeaderName;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::routing::{MethodRouter, get};
use serde_json::{Value, json};

use crate::infra::config::AppLinkSettings;

pub const APPLE_PATH: &str = "/.well-known/apple-app-site-association";
pub const ANDROID_PATH: &str = "/.well-known/assetlinks.json";

/// The links the apps open: the share page's paths (`tournaments::share_path`).
const SHARED_PATHS: &str = "/t/*";

/// Both files are JSON to Apple and Google alike, sent as `application/json` with no charset
/// (Apple's association file has no extension to tell its type). They change only with a
/// restart; devices and Apple's CDN fetch them rarely, so an hour of caching is plenty.
const HEADERS: [(HeaderName, &str); 2] = [(CONTENT_TYPE, "application/json"), (CACHE_CONTROL, "public, max-age=3600")];

/// The files the settings ask for, each at its one path (no redirect, no trailing slash).
pub fn app_links_router(settings: &AppLinkSettings) -> Router {
    let mut router = Router::new();
    if let Some(file) = apple_app_site_association(settings) {
        router = router.route(APPLE_PATH, serve(&file));
    }
    if let Some(file) = asset_links(settings) {
        router = router.route(ANDROID_PATH, serve(&file));
    }
    router
}

/// `GET` (and so `HEAD`) answering `file`, serialised once here.
fn serve(file: &Value) -> MethodRouter {
    let body = Bytes::from(file.to_string());
    get(move || {
        let body = body.clone();
        async move { (HEADERS, body) }
    })
}

/// Apple's "Supporting associated domains", universal links only, in the iOS 13+ form
/// (`appIDs`, `components`). The legacy keys (`"apps": []`, an `appID` and `paths` per app) are
/// left out: only iOS 12 and older read them (iOS 13+ ignores `paths` beside `components`), and
/// without them such a phone opens the share page in Safari, as every phone did before.
fn apple_app_site_association(settings: &AppLinkSettings) -> Option<Value> {
    if settings.apple_app_ids.is_empty() {
        return None;
    }
    Some(json!({
        "applinks": {
            "details": [{
                "appIDs": settings.apple_app_ids,
                "components": [{"/": SHARED_PATHS, "comment": "A tournament's public page, behind the links the apps share."}],
            }],
        },
    }))
}

/// Google's Digital Asset Links statement list for Android App Links. It names no paths: the
/// app's intent filter (`/t/` under this host) says which links it opens.
fn asset_links(settings: &AppLinkSettings) -> Option<Value> {
    let android = settings.android.as_ref()?;
    Some(json!([{
        "relation": ["delegate_permission/common.handle_all_urls"],
        "target": {
            "namespace": "android_app",
            "package_name": android.package,
            "sha256_cert_fingerprints": android.cert_sha256,
        },
    }]))
}

#[cfg(test)]
mod tests {
    use uuid::Uuid;

    use super::*;
    use crate::domain::tournaments::share_path;

    #[test]
    fn the_apple_pattern_covers_every_share_link() {
        let prefix = SHARED_PATHS.strip_suffix('*').expect("a prefix pattern");
        assert!(share_path(Uuid::now_v7()).starts_with(prefix));
    }

    #[test]
    fn nothing_set_routes_neither_file() {
        let settings = AppLinkSettings::default();
        assert!(apple_app_site_association(&settings).is_none());
        assert!(asset_links(&settings).is_none());
    }
}
