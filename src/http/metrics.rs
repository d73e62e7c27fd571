//! `GET /metrics` at the bare origin (an operations endpoint, not part of the API), and the
//! middleware that counts and times every request of the API by its route.
//!
//! The scrape answers only the networks of `METRICS_ALLOW` (by default this host and the
//! private networks a cluster runs in), the client read through `TRUSTED_PROXIES`; anyone
//! else, and a request some other proxy forwarded, gets `404` as for a path that does not
//! exist. A `floor serve` facing the internet with no proxy in front tells nobody outside
//! how busy it is, and the deploy files' proxies refuse the path at the edge as well.

use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::http::state::AppState;
use crate::infra::client_address::client_address;
use crate::infra::config::LimitSettings;
use crate::infra::db;
use crate::infra::error::{AppError, ErrorCode};
use crate::infra::metrics::{NodeState, PoolUse};

/// The scrape's content type: OpenMetrics text, which Prometheus reads.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

pub fn metrics_router(state: AppState) -> axum::Router {
    axum::Router::new().route("/metrics", get(scrape)).with_state(state)
}

/// The headers by which a proxy says whom it forwards.
const FORWARDING: [&str; 3] = ["x-forwarded-for", "forwarded", "x-real-ip"];

/// Whether the client of a request from `peer` with `headers` may read the metrics: a peer
/// that forwards for someone must be a trusted proxy (another could be passing the internet's
/// requests on, from its own private address), and the client it names, or the peer itself,
/// must stand in `METRICS_ALLOW`.
fn may_scrape(limits: &LimitSettings, peer: IpAddr, headers: &HeaderMap) -> bool {
    let peer = peer.to_canonical();
    let forwarded = FORWARDING.iter().any(|name| headers.contains_key(*name));
    if forwarded && !limits.trusted_proxies.iter().any(|network| network.contains(&peer)) {
        return false;
    }
    let hops = headers.get_all("x-forwarded-for").iter().map(|value| value.to_str().unwrap_or("?"));
    let client = client_address(peer, hops, &limits.trusted_proxies);
    limits.metrics_readers.iter().any(|network| network.contains(&client))
}

async fn scrape(
    State(app): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Response {
    if !may_scrape(&app.config.limits, peer.ip(), &headers) {
        return AppError::new(ErrorCode::NotFound, "no such path").into_response();
    }
    let pool = |db: &sea_orm::DatabaseConnection| {
        let (open, idle) = db::pool_use(db);
        PoolUse { open, idle }
    };
    let now = NodeState {
        sockets: app.live_sockets.connected_sockets(),
        live_actors: app.live.actor_count(),
        registration_desks: app.desks.open_count(),
        writer: pool(&app.db),
        readers: db::has_own_readers(&app.config.database_url).then(|| pool(&app.reads)),
        db_up: app.db_watch.is_up(),
        bus_up: app.link.as_ref().map(crate::infra::bus::Link::is_up),
    };
    match app.metrics.render(now) {
        Ok(text) => ([(CONTENT_TYPE, HeaderValue::from_static(OPENMETRICS))], text).into_response(),
        Err(err) => {
            tracing::error!(error = %err, "could not render the metrics");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// The middleware, for `route_layer` (it reads the matched route): one count and one
/// duration per answered request, labelled by the route's pattern, never by its ids.
pub async fn measure_requests(State(app): State<AppState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    // A clone of the matched route is a reference count, not a copy of the text.
    let route = request.extensions().get::<MatchedPath>().cloned();
    if let Some(route) = &route {
        super::request_span::name_by_route(&method, route.as_str());
    }
    let response = next.run(request).await;
    if let Some(route) = route {
        app.metrics.request(method.as_str(), route.as_str(), response.status().as_u16(), started.elapsed());
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(trusted_proxies: &[&str], readers: &[&str]) -> LimitSettings {
        let networks = |list: &[&str]| list.iter().map(|network| network.parse().expect("a network")).collect();
        LimitSettings {
            trusted_proxies: networks(trusted_proxies),
            metrics_readers: networks(readers),
            ..LimitSettings::default()
        }
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.append(*name, value.parse().expect("a header value"));
        }
        headers
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    #[test]
    fn a_scraper_on_an_allowed_network_reads_and_the_internet_does_not() {
        let defaults = LimitSettings::default();
        assert!(may_scrape(&defaults, ip("127.0.0.1"), &HeaderMap::new()));
        assert!(may_scrape(&defaults, ip("10.244.1.7"), &HeaderMap::new()), "a pod of the cluster");
        assert!(may_scrape(&defaults, ip("::ffff:192.168.1.2"), &HeaderMap::new()), "IPv4 mapped into IPv6");
        assert!(!may_scrape(&defaults, ip("203.0.113.7"), &HeaderMap::new()));
        assert!(!may_scrape(&limits(&[], &["10.0.0.0/8"]), ip("127.0.0.1"), &HeaderMap::new()));
    }

    #[test]
    fn a_forwarded_request_reads_only_through_a_trusted_proxy_for_an_allowed_client() {
        let from_outside = headers(&[("x-forwarded-for", "203.0.113.7")]);
        // A proxy this node does not know, on the same host or network: it may be the internet's.
        assert!(!may_scrape(&LimitSettings::default(), ip("127.0.0.1"), &from_outside));
        assert!(!may_scrape(&LimitSettings::default(), ip("10.0.0.2"), &headers(&[("forwarded", "for=10.0.0.9")])));
        assert!(!may_scrape(&LimitSettings::default(), ip("10.0.0.2"), &headers(&[("x-real-ip", "10.0.0.9")])));
        let behind = limits(&["10.0.0.2/32"], &["10.0.0.0/8"]);
        assert!(!may_scrape(&behind, ip("10.0.0.2"), &from_outside), "the client is on the internet");
        assert!(may_scrape(&behind, ip("10.0.0.2"), &headers(&[("x-forwarded-for", "10.1.2.3")])));
    }
}
