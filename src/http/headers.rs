//! Headers every answer carries, whatever produced it (the API, a page, a file, an error), and
//! the request id a client may send. A club that runs `floor serve` with no proxy in front gets
//! them as one behind a hardened proxy would.
//!
//! - `X-Content-Type-Options: nosniff`: a browser takes JSON, a feed or an upload as what its
//!   type says, never as a script or a page.
//! - `Referrer-Policy: no-referrer`: a page's address (a share link, the deletion page with a
//!   phone in the form) never leaves with a link followed from it.
//! - `X-Frame-Options: DENY`: no answer is meant to be framed, the venue screen included (it
//!   runs full screen in a browser of its own); the pages' CSP says `frame-ancestors 'none'`
//!   to the browsers that read that instead.
//! - `Strict-Transport-Security` when `PUBLIC_URL` is `https`: browsers keep to https for a year.
//!
//! A header a handler set already (a page's own CSP, say) is left as it is. The answers hyper
//! writes itself, to a request it cannot read (`400`, `414`, `431`), carry them too
//! ([`http::server`](super::server), through the patched hyper of `vendor/`).
//!
//! `X-Request-Id` from a client is kept only when it is a UUID, so a log line never carries what
//! a client chose to write in it; anything else is replaced by a fresh one.

use std::sync::Arc;

use axum::Router;
use axum::http::header::{REFERRER_POLICY, STRICT_TRANSPORT_SECURITY, X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Request};
use axum::response::Response;
use uuid::Uuid;

/// The headers every answer carries, for `PUBLIC_URL` (HSTS only for an https one).
pub fn every_answer(public_url: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    if public_url.starts_with("https://") {
        headers.insert(STRICT_TRANSPORT_SECURITY, HeaderValue::from_static(HSTS));
    }
    headers
}

/// `router` with the answers' common headers ([`every_answer`]).
pub fn on_every_answer(router: Router, public_url: &str) -> Router {
    // One layer for them all: each `Router::layer` is one more boxed service that every
    // request clones whole.
    let headers = Arc::new(every_answer(public_url));
    router.layer(axum::middleware::map_response(move |mut answer: Response| {
        let headers = headers.clone();
        async move {
            for (name, value) in headers.iter() {
                answer.headers_mut().entry(name).or_insert_with(|| value.clone());
            }
            answer
        }
    }))
}

/// A year, as the HSTS preload list asks at least.
const HSTS: &str = "max-age=31536000";

/// Drops a client's `name` header (the request id) unless it is a UUID; the request id layer
/// after it then makes a fresh one.
pub fn keep_only_uuid_request_id<B>(name: HeaderName) -> impl Fn(Request<B>) -> Request<B> + Clone {
    move |mut request: Request<B>| {
        let foreign = request
            .headers()
            .get(&name)
            .is_some_and(|value| value.to_str().ok().and_then(|text| Uuid::parse_str(text).ok()).is_none());
        if foreign {
            request.headers_mut().remove(&name);
        }
        request
    }
}
