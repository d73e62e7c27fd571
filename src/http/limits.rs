//! Abuse limits over the API: per client address for code requests, code checks, refreshes and
//! public reads, plus one budget of code requests for everyone together, so a script cycling
//! phones or addresses cannot run up the SMS bill. The calendar feeds at the bare origin spend
//! the public reads' budget too, so nobody can try secrets at will, and the forms of the
//! deletion page spend the code budgets as the API's code requests and checks do. Registrations
//! and cancellations count per account instead, so one token cannot keep desks busy while a
//! rush of players behind one carrier's address still gets in. Which operations are limited,
//! how a client is told (`429 RATE_LIMITED` with `Retry-After`), who the client is, and how the
//! contract documents it all live here.
//!
//! The client is the TCP peer, or, when the peer is a trusted proxy, the right-most
//! `X-Forwarded-For` address that is not itself a trusted proxy. IPv6 clients are counted by
//! their /64, the block one subscriber gets. The account is the subject of a valid access
//! token. Limits are kept in memory, per node.

use std::collections::BTreeSet;
use std::hash::Hash;
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::header::{AUTHORIZATION, RETRY_AFTER};
use axum::http::{HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::Clock;
use governor::{DefaultDirectRateLimiter, DefaultKeyedRateLimiter, Quota, RateLimiter};
use ipnet::IpNet;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{ContentBuilder, OpenApi as OpenApiDoc, Ref, RefOr, ResponseBuilder, header::Header};
use uuid::Uuid;

use super::api_prefix::API_PREFIX;
use crate::domain::auth::tokens::JwtKeys;
use crate::domain::players::calendar::FEED_ROUTE as CALENDAR_FEED_ROUTE;
use crate::domain::players::deletion::PAGE_ROUTE as DELETION_PAGE_ROUTE;
use crate::infra::client_address::client_key;
use crate::infra::config::{LimitSettings, Rate};
use crate::infra::error::{AppError, ErrorCode};

/// The health check is never limited: a load balancer's probes must not take a node out.
const HEALTH_PATH: &str = "/health";
const CODE_REQUEST_PATH: &str = "/auth/otp/request";
const CODE_CHECK_PATH: &str = "/auth/otp/verify";
/// A deletion spends a code too: it is a code check.
const DELETION_PATH: &str = "/me/delete";
const REFRESH_PATH: &str = "/auth/refresh";
/// Each takes a place in the tournament's registration desk.
const REGISTER_PATH: &str = "/tournaments/{id}/register";
const CANCEL_REGISTRATION_PATH: &str = "/tournaments/{id}/cancel-registration";
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
    /// A registration or its cancellation, counted per account.
    Registration,
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
            Self::Registration => "too many registrations and cancellations from this account",
        }
    }
}

/// How often the addresses whose budgets are full again are forgotten.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// One budget of requests per client (an address, or an account), and what a client refused
/// by it is told.
struct PerClient<K: Hash + Eq + Clone = IpAddr> {
    /// Each client's budget, kept while it is owed time ([`AbuseLimits::forget_idle_clients`]).
    budgets: DefaultKeyedRateLimiter<K>,
    /// What a refused client is told it did too often.
    what: &'static str,
}

impl<K: Hash + Eq + Clone> PerClient<K> {
    /// Full budgets of `rate` for every client, refusing as `limited`.
    fn new(rate: Rate, limited: Limited) -> Self {
        Self { budgets: RateLimiter::keyed(quota(rate)), what: limited.what() }
    }

    /// Spends one request of `client`'s budget, or says why not.
    fn spend(&self, client: &K) -> Result<(), Refused> {
        let now = || self.budgets.clock().now();
        self.budgets.check_key(client).map_err(|empty| Refused { what: self.what, wait: empty.wait_time_from(now()) })
    }

    /// Forgets the clients whose budgets are full again.
    fn forget_idle(&self) {
        self.budgets.retain_recent();
        self.budgets.shrink_to_fit();
    }
}

/// One budget of requests for everyone together, and what a request refused by it is told.
struct Shared {
    /// The one budget every request of its kind spends.
    budget: DefaultDirectRateLimiter,
    /// What a refused client is told is happening.
    what: &'static str,
}

impl Shared {
    /// Spends one request of the budget, or says why not.
    fn spend(&self) -> Result<(), Refused> {
        let now = || self.budget.clock().now();
        self.budget.check().map_err(|empty| Refused { what: self.what, wait: empty.wait_time_from(now()) })
    }
}

/// The abuse limits of one node, with their budgets; the state of [`limit_abuse`].
pub struct AbuseLimits {
    /// API paths (as routed, under [`API_PREFIX`]) whose `GET` anyone may call.
    public_reads: BTreeSet<String>,
    /// The proxies whose `X-Forwarded-For` says who the client is ([`client_key`]).
    trusted_proxies: Arc<[IpNet]>,
    /// What names the account of a request's access token.
    tokens: Arc<JwtKeys>,
    code_requests: PerClient,
    code_requests_global: Shared,
    code_checks: PerClient,
    refreshes: PerClient,
    public_read_budget: PerClient,
    registrations: PerClient<Uuid>,
}

impl AbuseLimits {
    /// Fresh budgets for `settings`; the public reads are the ones `contract` lets anyone make,
    /// and `tokens` check the access tokens whose accounts have budgets.
    pub fn new(settings: &LimitSettings, contract: &OpenApiDoc, tokens: Arc<JwtKeys>) -> Self {
        Self {
            public_reads: public_reads(contract).into_iter().map(|path| format!("{API_PREFIX}{path}")).collect(),
            trusted_proxies: settings.trusted_proxies.clone().into(),
            tokens,
            code_requests: PerClient::new(settings.code_requests, Limited::CodeRequest),
            code_requests_global: Shared {
                budget: RateLimiter::direct(quota(settings.code_requests_global)),
                what: "too many sign-in codes are being requested right now",
            },
            code_checks: PerClient::new(settings.code_checks, Limited::CodeCheck),
            refreshes: PerClient::new(settings.refreshes, Limited::Refresh),
            public_read_budget: PerClient::new(settings.public_reads, Limited::PublicRead),
            registrations: PerClient::new(settings.registrations, Limited::Registration),
        }
    }

    /// Forgets the addresses and accounts whose budgets are full again (they would start full
    /// anyway), so a stream of ever new ones does not hold memory for good.
    pub fn forget_idle_clients(&self) {
        for per_client in [&self.code_requests, &self.code_checks, &self.refreshes, &self.public_read_budget] {
            per_client.forget_idle();
        }
        self.registrations.forget_idle();
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
            (&Method::POST, REGISTER_PATH | CANCEL_REGISTRATION_PATH) => Some(Limited::Registration),
            (&Method::GET | &Method::HEAD, _) if self.public_reads.contains(path) => Some(Limited::PublicRead),
            _ => None,
        }
    }

    /// Spends the budgets of a `limited` request from `client` (whose token is in `headers`),
    /// or says why not. A code request spends its address's budget first, so a single noisy
    /// address is refused before it eats into everyone's.
    fn spend(&self, limited: Limited, client: IpAddr, headers: &HeaderMap) -> Result<(), Refused> {
        match limited {
            Limited::CodeRequest | Limited::CodeForm => {
                self.code_requests.spend(&client).and_then(|()| self.code_requests_global.spend())
            }
            Limited::CodeCheck => self.code_checks.spend(&client),
            Limited::Refresh => self.refreshes.spend(&client),
            Limited::PublicRead => self.public_read_budget.spend(&client),
            // Without a valid token there is no account to count: its handler refuses the
            // request `401` before any desk or read.
            Limited::Registration => self.account(headers).map_or(Ok(()), |account| self.registrations.spend(&account)),
        }
    }

    /// The account of the request's valid access token, if it sends one.
    fn account(&self, headers: &HeaderMap) -> Option<Uuid> {
        let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
        let token = value.strip_prefix("Bearer ").or_else(|| value.strip_prefix("bearer "))?;
        self.tokens.verify(token.trim()).map(|claims| claims.sub)
    }
}

/// The middleware, for `route_layer` (it reads the routed path): spends the budgets of a
/// limited request, refusing it with `429 RATE_LIMITED` once one is empty.
pub async fn limit_abuse(State(limits): State<Arc<AbuseLimits>>, request: Request, next: Next) -> Response {
    let limited =
        request.extensions().get::<MatchedPath>().and_then(|path| limits.classify(request.method(), path.as_str()));
    // A form of the deletion page is a code check or a code request, as its body says.
    let (request, limited) = match limited {
        None => return next.run(request).await,
        Some(Limited::CodeForm) => match read_code_form(request).await {
            Ok((request, true)) => (request, Limited::CodeCheck),
            Ok((request, false)) => (request, Limited::CodeRequest),
            Err(refused) => return refused,
        },
        Some(other) => (request, other),
    };
    let Some(ConnectInfo(peer)) = request.extensions().get::<ConnectInfo<SocketAddr>>() else {
        // Only when the server runs without its peer addresses: a wiring bug.
        let cause = anyhow::anyhow!("the abuse limits could not run: no peer address");
        return AppError::Internal(cause).into_response();
    };
    let client = client_key(peer.ip(), request.headers(), &limits.trusted_proxies);
    match limits.spend(limited, client, request.headers()) {
        Ok(()) => next.run(request).await,
        Err(refused) => refused.into_response(),
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

/// A budget of `rate`: `count` requests at once, one more back every `window / count`.
fn quota(rate: Rate) -> Quota {
    // Clamped so the quota's only refusal (a zero period) cannot happen.
    let period = rate.interval().max(Duration::from_nanos(1));
    let burst = NonZeroU32::new(rate.count).unwrap_or(NonZeroU32::MIN);
    Quota::with_period(period).expect("a period of a nanosecond or more makes a quota").allow_burst(burst)
}

/// A request turned away by an empty budget.
struct Refused {
    /// What the client is told it did too often.
    what: &'static str,
    /// How long until the budget has room for it again.
    wait: Duration,
}

impl IntoResponse for Refused {
    /// `429 RATE_LIMITED` with `Retry-After` in whole seconds, rounded up so that a client
    /// waiting that long finds its budget back.
    fn into_response(self) -> Response {
        let seconds = self.wait.as_secs().saturating_add(1);
        let message = format!("{}: try again in {seconds} seconds", self.what);
        let mut response = AppError::new(ErrorCode::RateLimited, message).into_response();
        response.headers_mut().insert(RETRY_AFTER, HeaderValue::from(seconds));
        response
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
            REGISTER_PATH | CANCEL_REGISTRATION_PATH => (Limited::Registration, item.post.as_mut()),
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
    use chrono::Utc;

    use super::*;
    use crate::infra::config::Secret;

    fn keys() -> Arc<JwtKeys> {
        Arc::new(JwtKeys::new(&Secret::new("0123456789abcdef0123456789abcdef")))
    }

    /// The headers of a request carrying `token`.
    fn bearing(token: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(AUTHORIZATION, HeaderValue::from_str(&format!("Bearer {token}")).expect("a header"));
        headers
    }

    #[test]
    fn only_the_limited_operations_are_classified() {
        let limits = AbuseLimits {
            public_reads: [format!("{API_PREFIX}/tournaments/{{id}}")].into(),
            ..AbuseLimits::new(&LimitSettings::default(), &OpenApiDoc::default(), keys())
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
        let register = at("/tournaments/{id}/register");
        assert_eq!(limits.classify(&Method::POST, &register), Some(Limited::Registration));
        assert_eq!(
            limits.classify(&Method::POST, &at("/tournaments/{id}/cancel-registration")),
            Some(Limited::Registration)
        );
        assert_eq!(
            limits.classify(&Method::POST, &at("/tournaments/{id}/check-in")),
            None,
            "the club's door is not limited"
        );
        assert_eq!(limits.classify(&Method::GET, &register), None);
    }

    #[test]
    fn registrations_count_per_account_whatever_the_address() {
        let settings = LimitSettings { registrations: Rate::new(2, Duration::from_secs(3600)), ..Default::default() };
        let keys = keys();
        let limits = AbuseLimits::new(&settings, &OpenApiDoc::default(), keys.clone());
        let token = |account: Uuid| keys.issue(account, false, Utc::now()).expect("a token").0;
        let (one, other) = (bearing(&token(Uuid::now_v7())), bearing(&token(Uuid::now_v7())));
        let addresses: [IpAddr; 3] =
            ["203.0.113.7", "198.51.100.1", "2001:db8::1"].map(|a| a.parse().expect("an address"));
        assert!(limits.spend(Limited::Registration, addresses[0], &one).is_ok());
        assert!(limits.spend(Limited::Registration, addresses[1], &one).is_ok());
        let refused = limits.spend(Limited::Registration, addresses[2], &one).expect_err("a third from a new address");
        assert!(refused.wait > Duration::from_secs(60) && refused.what.contains("account"), "{:?}", refused.wait);
        assert!(
            limits.spend(Limited::Registration, addresses[0], &other).is_ok(),
            "another account from the same address"
        );
    }

    #[test]
    fn a_registration_without_a_valid_token_spends_no_budget() {
        let settings = LimitSettings { registrations: Rate::new(1, Duration::from_secs(3600)), ..Default::default() };
        let limits = AbuseLimits::new(&settings, &OpenApiDoc::default(), keys());
        let client: IpAddr = "203.0.113.7".parse().expect("an address");
        let forged = bearing(
            &JwtKeys::new(&Secret::new("another-secret-another-secret-xx"))
                .issue(Uuid::now_v7(), false, Utc::now())
                .expect("a token")
                .0,
        );
        for headers in [HeaderMap::new(), bearing("not-a-token"), forged] {
            for _ in 0..3 {
                assert!(limits.spend(Limited::Registration, client, &headers).is_ok(), "left to the handler's 401");
            }
        }
        assert_eq!(limits.registrations.budgets.len(), 0, "nothing remembered");
    }

    #[test]
    fn sweeping_idle_clients_keeps_every_spent_budget() {
        let settings = LimitSettings { code_requests: Rate::new(1, Duration::from_secs(3600)), ..Default::default() };
        let limits = AbuseLimits::new(&settings, &OpenApiDoc::default(), keys());
        let code_requests = &limits.code_requests.budgets;
        let client: IpAddr = "203.0.113.7".parse().expect("an address");
        assert!(code_requests.check_key(&client).is_ok());
        limits.forget_idle_clients();
        assert_eq!(code_requests.len(), 1, "an address still owed time is remembered");
        assert!(code_requests.check_key(&client).is_err(), "sweeping gives no budget back");
    }

    #[test]
    fn registrations_and_cancellations_document_their_429() {
        let contract = crate::http::openapi();
        for path in [REGISTER_PATH, CANCEL_REGISTRATION_PATH] {
            let operation = contract.paths.paths.get(path).and_then(|item| item.post.as_ref()).expect(path);
            let Some(RefOr::T(refused)) = operation.responses.responses.get("429") else { panic!("{path}: no 429") };
            assert!(refused.description.contains("from this account"), "{path}: {}", refused.description);
        }
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
