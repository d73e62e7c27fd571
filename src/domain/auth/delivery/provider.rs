//! What the real channels' clients share: one attempt's result, one request sent and its
//! answer read, the reason a failure gives.

use crate::infra::outbound::transport_reason;

/// Lifetime of a code in seconds (5 minutes, per the spec); Telegram stops delivering after it.
pub(super) const CODE_TTL_SECS: u64 = 300;

/// Result of one delivery attempt: `Err` carries the reason, which may still contain the code
/// if a provider echoed it; the chain redacts it before it goes anywhere.
pub(super) type Attempt = Result<(), String>;

/// Sends a prepared request and returns the status and body text; transport errors become a
/// reason.
pub(super) async fn send(request: reqwest::RequestBuilder) -> Result<(reqwest::StatusCode, String), String> {
    let response = request.send().await.map_err(transport_reason)?;
    let status = response.status();
    let body = response.text().await.map_err(transport_reason)?;
    Ok((status, body))
}

/// Numbers arrive as `+<digits>`; WhatsApp and SMS.ru want the digits alone.
pub(super) fn digits_only(phone: &str) -> &str {
    phone.trim_start_matches('+')
}

/// A provider's failure: its summary, and the detail it gave when there was one.
pub(super) fn with_detail(summary: String, detail: Option<String>) -> String {
    match detail {
        Some(detail) if !detail.trim().is_empty() => format!("{summary}: {}", detail.trim()),
        _ => summary,
    }
}
