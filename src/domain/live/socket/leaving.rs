//! A leaving node's door for the Socket.IO transports: from the start of its graceful shutdown
//! it opens no new Engine.IO session, and answers the request that would open one with a
//! `503 SERVICE_UNAVAILABLE` and `Retry-After`, before any namespace is involved.
//!
//! socket.io-client 4.x retries a transport that failed, an HTTP error on the handshake
//! included, with its backoff (1 s doubling, at most 5 s); a namespace's refusal
//! (`connect_error`) it never retries. A node that let a client open a session while it drained,
//! then lost its namespace before the client's `CONNECT` arrived, answered "Invalid namespace"
//! and stranded that phone until its app restarted (issue 48: 10 and 3 of 2,000 watchers in a
//! rolling deploy). Refused here, the phone comes back through the load balancer to a node that
//! stays.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio_util::sync::CancellationToken;

use super::server::ENGINE_IO_PATH;
use crate::infra::error::{AppError, ErrorCode};

/// Passes `request` on, unless `leaving` is cancelled and it would open an Engine.IO session.
pub(super) async fn refuse_new_sessions(leaving: CancellationToken, request: Request, next: Next) -> Response {
    if leaving.is_cancelled() && opens_a_session(request.uri()) {
        return AppError::new(ErrorCode::ServiceUnavailable, "this node is leaving; connect again to reach another")
            .into_response();
    }
    next.run(request).await
}

/// Whether a request to `uri` would open an Engine.IO session: a request of the Socket.IO
/// transports naming no session (`sid`), the polling handshake or a WebSocket opened directly.
/// Requests of a session already open (its polls, its upgrade) go on to it.
fn opens_a_session(uri: &axum::http::Uri) -> bool {
    let path = uri.path();
    let engine_io = path.strip_prefix(ENGINE_IO_PATH).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
    let names_a_session = uri
        .query()
        .is_some_and(|query| query.split('&').any(|pair| pair.split_once('=').map_or(pair, |(name, _)| name) == "sid"));
    engine_io && !names_a_session
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opens(uri: &str) -> bool {
        opens_a_session(&uri.parse().expect("a URI"))
    }

    #[test]
    fn a_handshake_opens_a_session_and_a_request_naming_one_does_not() {
        assert!(opens("/socket.io/?EIO=4&transport=polling&t=P1x"));
        assert!(opens("/socket.io/?EIO=4&transport=websocket"));
        assert!(opens("/socket.io/"));
        assert!(!opens("/socket.io/?EIO=4&transport=polling&sid=abc"));
        assert!(!opens("/socket.io/?sid=abc&EIO=4&transport=websocket"));
        assert!(!opens("/api/v1/health"), "the API is not the door's");
        assert!(!opens("/socket.iox/?EIO=4"), "another path");
        assert!(opens("/socket.io/?EIO=4&transport=polling&sidx=1"), "only `sid` names a session");
    }
}
