//! Calls to the outside world's HTTP APIs (the code channels, FCM): a client whose every
//! request is bounded in time, and a failed request described for an operator.

use std::time::Duration;

/// A client that pools connections and TLS sessions, and gives up on connecting and on a
/// whole request after `timeout`, so a slow provider cannot hold the request that called it.
pub fn client(timeout: Duration) -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder().connect_timeout(timeout).timeout(timeout).build()
}

/// Why a request did not get an answer: the kind of failure and its source chain (such as
/// "Connection refused"), without the URL.
pub fn transport_reason(error: reqwest::Error) -> String {
    let kind = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "connection failed"
    } else {
        "request failed"
    };
    // The URL holds no secret, but dropping it keeps the reason short; the source chain
    // (e.g. "Connection refused") is what an operator needs.
    let error = error.without_url();
    let mut detail = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(inner) = source {
        detail.push_str(": ");
        detail.push_str(&inner.to_string());
        source = inner.source();
    }
    format!("{kind}: {detail}")
}
