//! Abuse limits over the API: per client address for code requests, code checks, refreshes and
//! public reads, plus one budget of code requests for everyone together, so a script cycling
//! phones or addresses cannot run up the SMS bill. The calendar feeds at the bare origin spend
//! the public reads' budget too, so nobody can try secrets at will, and the forms of the
//! deletion page spend the code budgets as the API's code requests and checks do. Which
//! operations are limited, how a client is told (`429 RATE_LIMITED` with `Retry-After`), who
//! the client is, and how the contract documents it all live here.
//!
//! The client is the TCP peer, or, when the peer is a trusted proxy, the right-most
//! `X-Forwarded-For` address that is not itself a trusted proxy. IPv6 clients are counted by
//! their /64, the block one subscriber gets. Limits are kept in memory, per node.

use std::collections::BTreeSet;
use std::convert::Infallible;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::header::RETRY_AFTER;
use axum::http::{HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::middleware::NoOpMiddleware;
use ipnet::IpNet;
use tower::{Layer, Service};
use tower_governor::governor::{GovernorConfig, GovernorConfigBuilder, SharedRateLimiter};
use tower_governor::key_extractor::{GlobalKeyExtractor, KeyExtractor};
use tower_governor::{GovernorError, GovernorLayer};
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{ContentBuilder, OpenApi as OpenApiDoc, Ref, RefOr, ResponseBuilder, header::Header};

use super::API_PREFIX;
use crate::config::{LimitSettings, Rate};
use crate::error::{AppError, ErrorCode};
use crate::players::calendar::FEED_ROUTE as CALENDAR_FEED_ROUTE;
use crate::players::deletion::PAGE_ROUTE as DELETION_PAGE_ROUTE;

const X_FORWARDED_FOR: &str = "x-forwarded-for";

/// The health check is never limited: a load balancer's probes must not take a node out.
const HEALTH_PATH: &str = "/health";
const CODE_REQUEST_PATH: &str = "/auth/otp/request";
const CODE_CHECK_PATH: &str = "/auth/otp/verify";
/// A deletion spends a code too: it is a code check.
const DELETION_PATH: &str = "/me/delete";
const REFRESH_PATH: &str = "/auth/refresh";
/// The field whose presence makes a form of the deletion page its second step, a code check.
const CODE_FIELD: &str = "code";
/// The most a form of the deletion page may weigh: a phone and a code are a few dozen bytes.
const MOST_FORM_BYTES: usize = 1024;

/// What a limited request is, and so which budgets it spends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Limited {
    CodeRequest,
    CodeCheck,
    Refresh,
    PublicRead,
    /// A form of the deletion page: a code check when it carries a code, else a code request.
    CodeForm,
}

impl Limited {
    /// The end of the `429` message and of its OpenAPI description.
    fn what(self) -> &'static str {
        match self {
            Self::CodeRequest => "too many code requests from this address",
            Self::CodeCheck => "too many code checks from this address",
            Self::Refresh => "too many token refreshes from this address",
            Self::PublicRead => "too many reads from this address",
            Self::CodeForm => "too many code requests or checks from this address",
        }
    }
}

/// How often the addresses whose budgets are full again are forgotten.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// The abuse limits of one node, with their budgets; the state of [`limit_abuse`].
pub struct AbuseLimits {
    /// API paths (as routed, under [`API_PREFIX`]) whose `GET` anyone may call.
    public_reads: BTreeSet<String>,
    code_requests: GovernorLayer<ClientAddress, NoOpMiddleware, Body>,
    code_requests_global: GovernorLayer<GlobalKeyExtractor, NoOpMiddleware, Body>,
    code_checks: GovernorLayer<ClientAddress, NoOpMiddleware, Body>,
    refreshes: GovernorLayer<ClientAddress, NoOpMiddleware, Body>,
    public_read_budget: GovernorLayer<ClientAddress, NoOpMiddleware, Body>,
    /// The per-address budgets' stores, swept of addresses that are owed nothing.
    per_client_budgets: Vec<SharedRateLimiter<IpAddr, NoOpMiddleware>>,
}

impl AbuseLimits {
    /// Fresh budgets for `settings`; the public reads are the ones `contract` lets anyone make.
    pub fn new(settings: &LimitSettings, contract: &OpenApiDoc) -> Self {
        let client = ClientAddress { trusted_proxies: settings.trusted_proxies.clone().into() };
        let mut per_client_budgets = Vec::new();
        let mut per_client = |rate: Rate, limited: Limited| {
            let (layer, budget) = governor_layer(rate, client.clone(), limited.what());
            per_client_budgets.push(budget);
            layer
        };
        let code_requests = per_client(settings.code_requests, Limited::CodeRequest);
        let code_checks = per_client(settings.code_checks, Limited::CodeCheck);
        let refreshes = per_client(settings.refreshes, Limited::Refresh);
        let public_read_budget = per_client(settings.public_reads, Limited::PublicRead);
        let (code_requests_global, _) = governor_layer(
            settings.code_requests_global,
            GlobalKeyExtractor,
            "too many sign-in codes are being requested right now",
        );
        Self {
            public_reads: public_reads(contract).into_iter().map(|path| format!("{API_PREFIX}{path}")).collect(),
            code_requests,
            code_requests_global,
            code_checks,
            refreshes,
            public_read_budget,
            per_client_budgets,
        }
    }

    /// Forgets the addresses whose budgets are full again (they would start full anyway), so
    /// a stream of ever new addresses does not hold memory for good.
    pub fn forget_idle_clients(&self) {
        for budget in &self.per_client_budgets {
            budget.retain_recent();
            budget.shrink_to_fit();
        }
    }

    /// Sweeps idle addresses every minute for as long as these limits are in use.
    pub fn spawn_sweeper(self: &Arc<Self>) {
        let limits = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(SWEEP_EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                every.tick().await;
                let Some(limits) = limits.upgrade() else { break };
                limits.forget_idle_clients();
            }
        });
    }

    /// What the routed request `method path` is limited as, if at all.
    fn classify(&self, method: &Method, path: &str) -> Option<Limited> {
        if path == CALENDAR_FEED_ROUTE {
            return matches!(*method, Method::GET | Method::HEAD).then_some(Limited::PublicRead);
        }
        if path == DELETION_PAGE_ROUTE {
            // Its GET reads nothing, like the share page's.
            return (*method == Method::POST).then_some(Limited::CodeForm);
        }
        let api_path = path.strip_prefix(API_PREFIX)?;
        match (method, api_path) {
            (&Method::POST, CODE_REQUEST_PATH) => Some(Limited::CodeRequest),
            (&Method::POST, CODE_CHECK_PATH | DELETION_PATH) => Some(Limited::CodeCheck),
            (&Method::POST, REFRESH_PATH) => Some(Limited::Refresh),
            (&Method::GET | &Method::HEAD, _) if self.public_reads.contains(path) => Some(Limited::PublicRead),
            _ => None,
        }
    }
}

/// The middleware, for `route_layer` (it reads the routed path): spends the budgets of a
/// limited request, refusing it with `429 RATE_LIMITED` once one is empty. A code request
/// spends its address's budget first, so a single noisy address is refused before it eats into
/// everyone's.
pub async fn limit_abuse(State(limits): State<Arc<AbuseLimits>>, request: Request, next: Next) -> Response {
    let limited =
        request.extensions().get::<MatchedPath>().and_then(|path| limits.classify(request.method(), path.as_str()));
    // A form of the deletion page is a code check or a code request, as its body says.
    let (request, limited) = match limited {
        Some(Limited::CodeForm) => match read_code_form(request).await {
            Ok((request, true)) => (request, Some(Limited::CodeCheck)),
            Ok((request, false)) => (request, Some(Limited::CodeRequest)),
            Err(refused) => return refused,
        },
        other => (request, other),
    };
    match limited {
        None => next.run(request).await,
        Some(Limited::CodeRequest | Limited::CodeForm) => {
            serve(limits.code_requests.layer(limits.code_requests_global.layer(next)), request).await
        }
        Some(Limited::CodeCheck) => serve(limits.code_checks.layer(next), request).await,
        Some(Limited::Refresh) => serve(limits.refreshes.layer(next), request).await,
        Some(Limited::PublicRead) => serve(limits.public_read_budget.layer(next), request).await,
    }
}

/// Whether a form of the deletion page carries a [`CODE_FIELD`], and so is a code check rather
/// than a code request, as the page itself tells its two steps apart. The body is read here
/// (it is tiny; one past [`MOST_FORM_BYTES`] is refused) and handed on whole.
async fn read_code_form(request: Request) -> Result<(Request, bool), Response> {
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MOST_FORM_BYTES).await else {
        let refusal = AppError::new(ErrorCode::PayloadTooLarge, "the form is larger than a phone and a code");
        return Err(refusal.into_response());
    };
    let carries_code = url::form_urlencoded::parse(&bytes).any(|(name, _)| name == CODE_FIELD);
    Ok((Request::from_parts(parts, Body::from(bytes)), carries_code))
}

async fn serve<S>(mut service: S, request: Request) -> Response
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    let answer = match std::future::poll_fn(|cx| service.poll_ready(cx)).await {
        Ok(()) => service.call(request).await,
        Err(never) => Err(never),
    };
    answer.unwrap_or_else(|never| match never {})
}

/// A layer spending one budget of `rate` per key, answering `429` in the contract's shape, and
/// the store of those budgets.
fn governor_layer<K: KeyExtractor>(
    rate: Rate,
    key: K,
    what: &'static str,
) -> (GovernorLayer<K, NoOpMiddleware, Body>, SharedRateLimiter<K::Key, NoOpMiddleware>) {
    // Clamped so the builder's only refusal (a zero burst or period) cannot happen.
    let config: GovernorConfig<K, NoOpMiddleware> = GovernorConfigBuilder::default()
        .period(rate.interval().max(Duration::from_nanos(1)))
        .burst_size(rate.count.max(1))
        .key_extractor(key)
        .finish()
        .expect("a non-zero burst and period always make a governor configuration");
    let budgets = config.limiter().clone();
    (GovernorLayer::new(config).error_handler(move |error| refusal(error, what)), budgets)
}

/// `429 RATE_LIMITED` with `Retry-After` in whole seconds, rounded up so that a client waiting
/// that long finds its budget back.
fn refusal(error: GovernorError, what: &str) -> Response {
    match error {
        GovernorError::TooManyRequests { wait_time, .. } => {
            let seconds = wait_time.saturating_add(1);
            let message = format!("{what}: try again in {seconds} seconds");
            let mut response = AppError::new(ErrorCode::RateLimited, message).into_response();
            response.headers_mut().insert(RETRY_AFTER, HeaderValue::from(seconds));
            response
        }
        // Only when the server runs without its peer addresses (`ConnectInfo`): a wiring bug.
        other => AppError::Internal(anyhow::anyhow!("the abuse limits could not run: {other}")).into_response(),
    }
}

/// The key of the per-address budgets: the client address as [`client_address`] finds it,
/// IPv6 reduced to its /64.
#[derive(Clone, Debug)]
pub struct ClientAddress {
    trusted_proxies: Arc<[IpNet]>,
}

impl KeyExtractor for ClientAddress {
    type Key = IpAddr;

    fn extract<T>(&self, request: &axum::http::Request<T>) -> Result<IpAddr, GovernorError> {
        let ConnectInfo(peer) =
            request.extensions().get::<ConnectInfo<SocketAddr>>().ok_or(GovernorError::UnableToExtractKey)?;
        // A value that is not text cannot be an address: it stops the walk like any other junk.
        let forwarded = request.headers().get_all(X_FORWARDED_FOR).iter().map(|value| value.to_str().unwrap_or("?"));
        Ok(budget_key(client_address(peer.ip(), forwarded, &self.trusted_proxies)))
    }
}

/// Who the client is. From an untrusted peer the peer itself, whatever its headers say. From a
/// trusted proxy, `X-Forwarded-For` (all its lines, in order) is read from the right, where
/// our own proxies appended what they saw: the first address that is not a trusted proxy is
/// the client. An entry that is not an address ends the walk at the last hop a trusted proxy
/// vouched for; so does running out of entries.
pub fn client_address<'a>(
    peer: IpAddr,
    forwarded_for: impl IntoIterator<Item = &'a str>,
    trusted_proxies: &[IpNet],
) -> IpAddr {
    let trusted = |address: &IpAddr| trusted_proxies.iter().any(|network| network.contains(address));
    let peer = peer.to_canonical();
    if !trusted(&peer) {
        return peer;
    }
    let entries: Vec<&str> = forwarded_for.into_iter().flat_map(|line| line.split(',')).collect();
    let mut client = peer;
    for entry in entries.into_iter().rev() {
        let Some(address) = parse_hop(entry) else { break };
        client = address;
        if !trusted(&address) {
            break;
        }
    }
    client
}

/// One `X-Forwarded-For` entry: an address, or an address with a port as some proxies write.
fn parse_hop(entry: &str) -> Option<IpAddr> {
    let entry = entry.trim();
    let address = entry.parse::<IpAddr>().ok().or_else(|| entry.parse::<SocketAddr>().ok().map(|hop| hop.ip()))?;
    Some(address.to_canonical())
}

/// IPv6 addresses are counted by /64: one subscriber gets a whole /64 and could otherwise
/// spend a fresh budget on every address in it.
fn budget_key(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V4(_) => address,
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !(u64::MAX as u128))),
    }
}

/// The public reads: the `GET`s the contract lets anyone make (no security requirement, or an
/// optional one), except the health check. Paths as the contract writes them.
fn public_reads(contract: &OpenApiDoc) -> BTreeSet<String> {
    contract
        .paths
        .paths
        .iter()
        .filter(|(path, item)| {
            let public = item.get.as_ref().is_some_and(|operation| match &operation.security {
                None => true,
                Some(requirements) => requirements.iter().any(|requirement| *requirement == Default::default()),
            });
            public && path.as_str() != HEALTH_PATH
        })
        .map(|(path, _)| path.clone())
        .collect()
}

/// Documents the `429` of every limited operation in `contract`, beside any `429` it already
/// has (a code request's `OTP_RATE_LIMITED`).
pub fn document(contract: &mut OpenApiDoc) {
    let public = public_reads(contract);
    for (path, item) in contract.paths.paths.iter_mut() {
        let (kind, operation) = match path.as_str() {
            CODE_REQUEST_PATH => (Limited::CodeRequest, item.post.as_mut()),
            CODE_CHECK_PATH | DELETION_PATH => (Limited::CodeCheck, item.post.as_mut()),
            REFRESH_PATH => (Limited::Refresh, item.post.as_mut()),
            _ if public.contains(path) => (Limited::PublicRead, item.get.as_mut()),
            _ => continue,
        };
        if let Some(operation) = operation {
            let mut description = format!("RATE_LIMITED: {}", kind.what());
            if kind == Limited::CodeRequest {
                description.push_str(", or from everyone together");
            }
            description.push_str("; try again after `Retry-After` seconds");
            let responses = &mut operation.responses.responses;
            if let Some(RefOr::T(existing)) = responses.get("429") {
                description = format!("{}; {description}", existing.description);
            }
            responses.insert("429".to_owned(), RefOr::T(too_many_requests(description)));
        }
    }
}

fn too_many_requests(description: String) -> utoipa::openapi::Response {
    let seconds = ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(1));
    ResponseBuilder::new()
        .description(description)
        .header("Retry-After", {
            let mut header = Header::new(seconds);
            header.description = Some("Seconds until the budget allows this request again.".to_owned());
            header
        })
        .content("application/json", ContentBuilder::new().schema(Some(Ref::from_schema_name("ErrorBody"))).build())
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("an address")
    }

    fn nets(list: &[&str]) -> Vec<IpNet> {
        list.iter().map(|net| net.parse().expect("a network")).collect()
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_forwards() {
        let trusted = nets(&["10.0.0.0/8"]);
        assert_eq!(client_address(ip("198.51.100.9"), ["203.0.113.7"], &trusted), ip("198.51.100.9"));
        assert_eq!(client_address(ip("198.51.100.9"), [], &[]), ip("198.51.100.9"));
        assert_eq!(client_address(ip("127.0.0.1"), ["203.0.113.7"], &[]), ip("127.0.0.1"));
    }

    #[test]
    fn a_trusted_proxy_names_the_client_in_the_right_most_entry() {
        let trusted = nets(&["10.0.0.0/8"]);
        assert_eq!(client_address(ip("10.0.0.2"), ["203.0.113.7"], &trusted), ip("203.0.113.7"));
        // A client may send its own X-Forwarded-For: the proxy appends, so the left is a lie.
        assert_eq!(client_address(ip("10.0.0.2"), ["1.1.1.1, 203.0.113.7"], &trusted), ip("203.0.113.7"));
    }

    #[test]
    fn trusted_hops_are_skipped_from_the_right_across_header_lines() {
        let trusted = nets(&["10.0.0.0/8", "192.168.0.1/32"]);
        let forwarded = ["6.6.6.6, 203.0.113.7", "192.168.0.1, 10.1.2.3"];
        assert_eq!(client_address(ip("10.0.0.2"), forwarded, &trusted), ip("203.0.113.7"));
    }

    #[test]
    fn a_trusted_proxy_without_a_forwarded_address_is_the_client() {
        let trusted = nets(&["10.0.0.0/8"]);
        assert_eq!(client_address(ip("10.0.0.2"), [], &trusted), ip("10.0.0.2"));
        assert_eq!(client_address(ip("10.0.0.2"), ["10.0.0.3"], &trusted), ip("10.0.0.3"));
    }

    #[test]
    fn junk_ends_the_walk_at_the_last_vouched_hop() {
        let trusted = nets(&["10.0.0.0/8"]);
        assert_eq!(client_address(ip("10.0.0.2"), ["203.0.113.7, unknown"], &trusted), ip("10.0.0.2"));
        assert_eq!(client_address(ip("10.0.0.2"), ["203.0.113.7, , 10.0.0.5"], &trusted), ip("10.0.0.5"));
        assert_eq!(client_address(ip("10.0.0.2"), ["?"], &trusted), ip("10.0.0.2"));
    }

    #[test]
    fn forwarded_entries_may_carry_ports_and_mapped_addresses() {
        let trusted = nets(&["10.0.0.0/8"]);
        assert_eq!(client_address(ip("10.0.0.2"), ["203.0.113.7:51234"], &trusted), ip("203.0.113.7"));
        assert_eq!(client_address(ip("10.0.0.2"), ["[2001:db8::1]:443"], &trusted), ip("2001:db8::1"));
        // A dual-stack socket reports an IPv4 peer as ::ffff:a.b.c.d; the IPv4 list still applies.
        assert_eq!(client_address(ip("::ffff:10.0.0.2"), ["::ffff:203.0.113.7"], &trusted), ip("203.0.113.7"));
    }

    #[test]
    fn ipv6_clients_share_the_budget_of_their_64() {
        assert_eq!(budget_key(ip("2001:db8:1:2:aaaa::1")), ip("2001:db8:1:2::"));
        assert_eq!(budget_key(ip("2001:db8:1:2:ffff:ffff:ffff:ffff")), ip("2001:db8:1:2::"));
        assert_ne!(budget_key(ip("2001:db8:1:3::1")), budget_key(ip("2001:db8:1:2::1")));
        assert_eq!(budget_key(ip("203.0.113.7")), ip("203.0.113.7"));
    }

    #[test]
    fn only_the_limited_operations_are_classified() {
        let limits = AbuseLimits {
            public_reads: [format!("{API_PREFIX}/tournaments/{{id}}")].into(),
            ..AbuseLimits::new(&LimitSettings::default(), &OpenApiDoc::default())
        };
        let at = |path: &str| format!("{API_PREFIX}{path}");
        assert_eq!(limits.classify(&Method::POST, &at("/auth/otp/request")), Some(Limited::CodeRequest));
        assert_eq!(limits.classify(&Method::POST, &at("/auth/otp/verify")), Some(Limited::CodeCheck));
        assert_eq!(limits.classify(&Method::POST, &at("/auth/refresh")), Some(Limited::Refresh));
        assert_eq!(limits.classify(&Method::GET, &at("/tournaments/{id}")), Some(Limited::PublicRead));
        assert_eq!(limits.classify(&Method::HEAD, &at("/tournaments/{id}")), Some(Limited::PublicRead));
        assert_eq!(limits.classify(&Method::PATCH, &at("/tournaments/{id}")), None);
        assert_eq!(limits.classify(&Method::GET, &at("/auth/me")), None);
        assert_eq!(limits.classify(&Method::POST, "/auth/otp/request"), None);
        assert_eq!(limits.classify(&Method::GET, "/calendar/{file}"), Some(Limited::PublicRead));
        assert_eq!(limits.classify(&Method::HEAD, "/calendar/{file}"), Some(Limited::PublicRead));
        assert_eq!(limits.classify(&Method::POST, "/account/delete"), Some(Limited::CodeForm));
        assert_eq!(limits.classify(&Method::GET, "/account/delete"), None);
    }

    #[test]
    fn sweeping_idle_clients_keeps_every_spent_budget() {
        let settings = LimitSettings { code_requests: Rate::new(1, Duration::from_secs(3600)), ..Default::default() };
        let limits = AbuseLimits::new(&settings, &OpenApiDoc::default());
        let code_requests = &limits.per_client_budgets[0];
        let client = ip("203.0.113.7");
        assert!(code_requests.check_key(&client).is_ok());
        limits.forget_idle_clients();
        assert_eq!(code_requests.len(), 1, "an address still owed time is remembered");
        assert!(code_requests.check_key(&client).is_err(), "sweeping gives no budget back");
    }

    #[test]
    fn public_reads_are_the_contracts_gets_without_a_required_token_except_health() {
        let reads = public_reads(&crate::http::openapi());
        for path in ["/tournaments", "/tournaments/{id}", "/tournaments/{id}/live", "/cities", "/players/{userId}"] {
            assert!(reads.contains(path), "{path} is a public read");
        }
        for path in ["/health", "/auth/me", "/me/notifications", "/admin/users", "/organizers/mine"] {
            assert!(!reads.contains(path), "{path} is not a public read");
        }
    }
}
