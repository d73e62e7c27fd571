//! Validators for reads. Every successful `GET` of the API that names no validator of its own
//! and has a body of 512 bytes or more carries a weak `ETag` made from it, and a request whose `If-None-Match` names it gets
//! `304` without the body: a phone that reloads the agenda, the cities or a leaderboard that
//! did not change downloads nothing. Weak, because the API compresses after this, and a
//! compressed answer has other bytes for the same content.

use utoipa::openapi::path::{ParameterBuilder, ParameterIn};
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{HeaderBuilder, OpenApi as OpenApiDoc, RefOr, Required};

use crate::http::read_cache::weak_tag;
use crate::infra::error::AppError;
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

/// The reads whose answers are streamed: their size is not known before the end, so they are
/// never tagged (and the player's export is `no-store`, never kept to be revalidated).
const STREAMED: [&str; 1] = ["/me/export"];

/// Writes the validators into the contract: every `GET` that answers `200` takes
/// `If-None-Match`, may carry an `ETag` on its `200`, and may answer `304`, except the
/// [`STREAMED`] ones. An operation that documents its own `304` (the live snapshot's version
/// tag) keeps its words for it.
pub fn document(contract: &mut OpenApiDoc) {
    let text = || ObjectBuilder::new().schema_type(Type::String);
    for (path, item) in contract.paths.paths.iter_mut() {
        if STREAMED.contains(&path.as_str()) {
            continue;
        }
        let Some(operation) = item.get.as_mut() else { continue };
        let answers = &mut operation.responses.responses;
        if !answers.contains_key("304") {
            let Some(RefOr::T(ok)) = answers.get_mut("200") else { continue };
            ok.headers.entry("ETag".to_owned()).or_insert_with(|| {
                RefOr::T(
                    HeaderBuilder::new()
                        .schema(Some(text()))
                        .description(Some(
                            "A weak validator of the body (`W/\"…\"`), on answers of 512 bytes or more; it \
                             changes when the content does.",
                        ))
                        .build(),
                )
            });
            let not_modified = ResponseBuilder::new()
                .description(
                    "The `If-None-Match` names the current `ETag` (weak comparison, or `*`): nothing changed, \
                     no body.",
                )
                .header("ETag", HeaderBuilder::new().schema(Some(text())).build())
                .build();
            answers.insert("304".to_owned(), RefOr::T(not_modified));
        }
        let parameter = ParameterBuilder::new()
            .name("If-None-Match")
            .parameter_in(ParameterIn::Header)
            .required(Required::False)
            .description(Some("`ETag`s of an earlier answer (a list, or `*`): `304` while the content is the same."))
            .schema(Some(text()))
            .build();
        operation.parameters.get_or_insert_with(Vec::new).push(RefOr::T(parameter));
    }
}

/// Whether the request's `If-None-Match` names `tag`: its content has not changed.
pub fn unchanged(headers: &axum::http::HeaderMap, tag: &str) -> bool {
    headers.get(IF_NONE_MATCH).and_then(|value| value.to_str().ok()).is_some_and(|sent| matches(sent, tag))
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
