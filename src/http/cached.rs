//! Answers kept ready to send ([`crate::http::read_cache`]): sending one (its validator, a `304`
//! to a matching `If-None-Match`, its gzip to a client that takes it), and the one place that
//! drops them, after every write of the API.

use axum::extract::{Request, State};
use axum::http::header::{ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_TYPE, ETAG, VARY};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::etag;
use crate::http::read_cache::{Answer, Renewal};
use crate::http::state::AppState;
use crate::infra::error::AppResult;

/// The answer under `key`, built by `build` when the cache has none, sent as `headers` ask.
pub async fn answer(
    app: &AppState,
    headers: &HeaderMap,
    key: String,
    build: impl Future<Output = AppResult<Answer>>,
) -> AppResult<Response> {
    let answer = app.read_cache.get_or_build(key, build).await?;
    Ok(send(&answer, headers))
}

/// [`answer`] for an answer that names people (a leaderboard): kept under the count of
/// erasures read after the request came ([`crate::domain::erasures`]), so once an account's deletion
/// is answered no node sends an answer built before it, nor `304` to its tag, whether or not
/// the bus told it. Costs the request a wait for one indexed read, shared with the requests
/// that came meanwhile.
pub async fn answer_naming_people(
    app: &AppState,
    headers: &HeaderMap,
    key: String,
    build: impl Future<Output = AppResult<Answer>>,
) -> AppResult<Response> {
    let erasures = app.erasures.count().await;
    answer(app, headers, format!("{key} erasures:{erasures}"), build).await
}

/// The answer under `key`, built by `renewal` when the cache has none (and again by each
/// registration desk's commit that changes what it shows), sent as `headers` ask.
pub async fn renewed_answer(app: &AppState, headers: &HeaderMap, key: String, renewal: Renewal) -> AppResult<Response> {
    let answer = app.read_cache.get_or_renew(key, renewal).await?;
    Ok(send(&answer, headers))
}

/// `answer` as a response: `304` when `If-None-Match` names it, gzip when the client takes
/// it (made once per answer), else the JSON as it is.
pub fn send(answer: &Answer, headers: &HeaderMap) -> Response {
    let validators = [(ETAG, answer.etag.clone()), (VARY, HeaderValue::from_static("accept-encoding"))];
    if etag::unchanged(headers, answer.etag.to_str().unwrap_or_default()) {
        return (StatusCode::NOT_MODIFIED, validators).into_response();
    }
    let json = [(CONTENT_TYPE, HeaderValue::from_static("application/json"))];
    if let Some(gzipped) = takes_gzip(headers).then(|| answer.gzip()).flatten() {
        let gzip = [(CONTENT_ENCODING, HeaderValue::from_static("gzip"))];
        return (validators, json, gzip, gzipped.clone()).into_response();
    }
    (validators, json, answer.body.clone()).into_response()
}

/// The middleware: after a request that may have changed data (any method but the safe
/// ones) drops the cached reads here and on every node. A refusal (4xx) changed nothing, so
/// it drops nothing: a stream of bad requests cannot keep the cache empty. Nor does a `503`:
/// the database was out of reach and nothing was written, and the kept reads are what still
/// answers while it is. Nor does an answer marked [`ReadsRenewed`].
pub async fn drop_on_change(State(app): State<AppState>, request: Request, next: Next) -> Response {
    if request.method().is_safe() {
        return next.run(request).await;
    }
    let response = next.run(request).await;
    let status = response.status();
    let renewed = response.extensions().get::<ReadsRenewed>().is_some();
    if !renewed && !status.is_client_error() && status != StatusCode::SERVICE_UNAVAILABLE {
        app.reads_changed();
    }
    response
}

/// Marks an answer whose change has renewed the cached reads already (a registration desk
/// renews them once for its whole group), so the middleware leaves them be.
#[derive(Clone, Copy, Debug)]
pub struct ReadsRenewed;

/// Whether the request's `Accept-Encoding` takes gzip.
pub fn takes_gzip(headers: &HeaderMap) -> bool {
    accepts_gzip(headers.get(ACCEPT_ENCODING).and_then(|value| value.to_str().ok()))
}

/// Whether an `Accept-Encoding` takes gzip (named, or `*`, with a weight above 0). A client
/// that prefers br but takes gzip gets gzip: these answers are compressed once, in gzip.
fn accepts_gzip(accept_encoding: Option<&str>) -> bool {
    accept_encoding.is_some_and(|accepted| {
        accepted.split(',').any(|entry| {
            let mut parts = entry.split(';').map(str::trim);
            let coding = parts.next().unwrap_or_default();
            let weight = parts
                .find_map(|parameter| parameter.strip_prefix("q=").or_else(|| parameter.strip_prefix("Q=")))
                .map_or(Some(1.0), |weight| weight.trim().parse::<f32>().ok());
            (coding.eq_ignore_ascii_case("gzip") || coding == "*") && weight.is_some_and(|weight| weight > 0.0)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::accepts_gzip;

    #[test]
    fn gzip_is_taken_when_named_or_starred_with_a_weight_above_zero() {
        for taken in ["gzip", "br, gzip", "gzip;q=0.5", "br;q=1.0, gzip; q=0.1", "GZIP", "*", "deflate, *;q=0.2"] {
            assert!(accepts_gzip(Some(taken)), "{taken}");
        }
        for refused in ["", "br", "identity", "gzip;q=0", "gzip;q=0.0, br", "gzip;q=nonsense", "gzipx", "x-gzip"] {
            assert!(!accepts_gzip(Some(refused)), "{refused}");
        }
        assert!(!accepts_gzip(None));
    }
}
