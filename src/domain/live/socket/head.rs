//! Request-head copying: a Socket.IO request keeps its URI and headers for the connection's
//! life, so it gets its own small copy of them rather than holding hyper's read buffer.

use axum::extract::{OriginalUri, Request};
use axum::http::{HeaderName, HeaderValue, Uri, header};

use super::server::ENGINE_IO_PATH;

/// Gives a request its own copy of its URI and headers. hyper parses them as slices of the
/// connection's read buffer (16 KiB), and engineioxide keeps a connection's request head for
/// the connection's life: without the copy, every live connection holds that whole buffer. The
/// router has already put a clone of the URI in the extensions (`OriginalUri`), so that one is
/// replaced too (a heap profile of 2,000 connections showed 16 KiB each held through it). The
/// copy is a few hundred bytes; requests of the API pass through untouched. Without `deflate`
/// (`LIVE_DEFLATE=false`) the copy leaves out the client's `Sec-WebSocket-Extensions`.
pub(super) async fn detach_head(mut request: Request, deflate: bool) -> Request {
    if !request.uri().path().starts_with(ENGINE_IO_PATH) {
        return request;
    }
    let headers = request.headers().iter().filter_map(|(name, value)| {
        // `LIVE_DEFLATE=false`: no offer of permessage-deflate reaches the handshake.
        if !deflate && name == header::SEC_WEBSOCKET_EXTENSIONS {
            return None;
        }
        // Names outside the standard set are slices of the buffer too.
        let name = HeaderName::from_bytes(name.as_str().as_bytes()).ok()?;
        let value = HeaderValue::from_bytes(value.as_bytes()).ok()?;
        Some((name, value))
    });
    *request.headers_mut() = headers.collect();
    if let Some(uri) = detached(request.uri()) {
        *request.uri_mut() = uri;
    }
    if let Some(OriginalUri(original)) = request.extensions_mut().get_mut::<OriginalUri>()
        && let Some(uri) = detached(original)
    {
        *original = uri;
    }
    request
}

/// A URI that owns its text.
fn detached(uri: &Uri) -> Option<Uri> {
    Uri::try_from(uri.to_string()).ok()
}
