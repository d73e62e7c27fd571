//! Validators for reads. Every successful `GET` of the API that names no validator of its own
//! and has a body of 512 bytes or more carries a weak `ETag` made from it, and a request whose `If-None-Match` names it gets
//! `304` without the body: a phone that reloads the agenda, the cities or a leaderboard that
//! did not change downloads nothing. Weak, because the API compresses after this, and a
//! compressed answer has other bytes for the same content.

use crate::error::AppError;
use crate::read_cache::weak_tag;
use axum::body::{Body, HttpBody};
use axum::extract::Request;
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// Bodies up to this size are tagged (an agenda of 50 cards is a few dozen KB).
const MOST_TAGGED: u64 = 4 << 20;

/// Smaller bodies are not: a `304` would save a few dozen bytes, and reading the body to
/// tag it cost `/health` a tenth of its throughput.
const LEAST_TAGGED: u64 = 512;

/// The middleware: tags successful reads and answers `304` to a matching `If-None-Match`.
pub async fn tag_reads(request: Request, next: Next) -> Response {
    if request.method() != Method::GET {
        return next.run(request).await;
    }
    let if_none_match = request.headers().get(IF_NONE_MATCH).and_then(|value| value.to_str().ok()).map(str::to_owned);
    let response = next.run(request).await;
    if response.status() != StatusCode::OK || response.headers().contains_key(ETAG) {
        return response;
    }
    if response.body().size_hint().exact().is_none_or(|size| !(LEAST_TAGGED..=MOST_TAGGED).contains(&size)) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let bytes = match axum::body::to_bytes(body, MOST_TAGGED as usize).await {
        Ok(bytes) => bytes,
        Err(err) => return AppError::Internal(anyhow::anyhow!("reading an answer to tag it: {err}")).into_response(),
    };
    let tag = weak_tag(&bytes);
    let Ok(tag_header) = HeaderValue::from_str(&tag) else { return Response::from_parts(parts, Body::from(bytes)) };
    parts.headers.insert(ETAG, tag_header);
    if if_none_match.as_deref().is_some_and(|sent| matches(sent, &tag)) {
        parts.status = StatusCode::NOT_MODIFIED;
        parts.headers.remove(CONTENT_LENGTH);
        parts.headers.remove(CONTENT_TYPE);
        return Response::from_parts(parts, Body::empty());
    }
    Response::from_parts(parts, Body::from(bytes))
}

/// Whether an `If-None-Match` names `tag`, by the weak comparison `GET` uses (RFC 9110
/// 13.1.2): `*`, or any listed tag equal to it once `W/` is set aside.
pub fn matches(if_none_match: &str, tag: &str) -> bool {
    let opaque = |tag: &str| tag.trim().trim_start_matches("W/").to_owned();
    let wanted = opaque(tag);
    if_none_match.split(',').any(|candidate| candidate.trim() == "*" || opaque(candidate) == wanted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_none_match_compares_weakly_in_a_list_or_as_a_star() {
        let tag = "W/\"abc\"";
        for sent in ["W/\"abc\"", "\"abc\"", "\"x\", W/\"abc\"", " W/\"abc\" ", "*"] {
            assert!(matches(sent, tag), "{sent}");
        }
        for sent in ["", "W/\"abd\"", "\"ab\"", "abc", "W/\"x\", \"y\""] {
            assert!(!matches(sent, tag), "{sent}");
        }
    }
}
