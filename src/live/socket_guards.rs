//! What a `/live` socket may hold and for how long: the caps of sockets per account and per
//! client address, the end of its access token (renewed with `auth`, else `expired` and
//! closed), and the pace of its `join`s. The handlers in `socket.rs` consult these.

use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ConnectInfo;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use ipnet::IpNet;
use socketioxide::adapter::Adapter;
use socketioxide::extract::SocketRef;
use uuid::Uuid;

use super::events::{ConnectRefused, ServerEvent, SessionExpired};
use crate::client_address::client_key;
use crate::config::ConnectionSettings;
use crate::error::ErrorCode;
use crate::metrics::Metrics;
use crate::places::{Place, Places};

/// How often the sockets are checked for a token that ran out: a socket outlives its token
/// by this much at most.
pub const EXPIRY_SWEEP: Duration = Duration::from_secs(2);
/// `join`s a socket may send at once, then [`JOINS_PER_SECOND`]: an app joins a tournament
/// or two; a burst of random ids is a probe.
const JOIN_BURST: NonZeroU32 = NonZeroU32::new(20).expect("not zero");
const JOINS_PER_SECOND: NonZeroU32 = NonZeroU32::new(2).expect("not zero");

/// The caps of this node's `/live` sockets.
pub struct SocketGuards {
    per_account: Places<Uuid>,
    per_address: Places<IpAddr>,
    trusted_proxies: Arc<[IpNet]>,
    pub metrics: Arc<Metrics>,
}

impl SocketGuards {
    pub fn new(settings: &ConnectionSettings, trusted_proxies: &[IpNet], metrics: Arc<Metrics>) -> Self {
        Self {
            per_account: Places::new(settings.max_live_sockets_per_account),
            per_address: Places::new(settings.max_live_sockets_per_address),
            trusted_proxies: trusted_proxies.into(),
            metrics,
        }
    }

    /// Admits a socket of `account` (its places go in the socket's extensions, given back
    /// when it disconnects), or refuses it `RATE_LIMITED`.
    pub fn admit<A: Adapter>(&self, socket: &SocketRef<A>, account: Uuid) -> Result<(), ConnectRefused> {
        let parts = socket.req_parts();
        let address = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(peer)| client_key(peer.ip(), &parts.headers, &self.trusted_proxies));
        let Some(of_account) = self.per_account.take(account) else {
            self.metrics.refused("live_sockets_per_account");
            return Err(ConnectRefused::RateLimited);
        };
        let of_address = match address {
            None => None,
            Some(address) => match self.per_address.take(address) {
                Some(place) => Some(place),
                None => {
                    self.metrics.refused("live_sockets_per_address");
                    return Err(ConnectRefused::RateLimited);
                }
            },
        };
        socket.extensions.insert(Held(Arc::new(HeldPlaces { _account: of_account, _address: of_address })));
        socket.extensions.insert(Account(account));
        Ok(())
    }
}

/// The places a socket holds, shared so that the extensions (which clone) can carry them.
#[derive(Clone)]
struct Held(#[allow(dead_code)] Arc<HeldPlaces>);

struct HeldPlaces {
    _account: Place<Uuid>,
    _address: Option<Place<IpAddr>>,
}

/// Gives the socket's places back (also done when the socket is dropped; this is sooner).
pub fn release<A: Adapter>(socket: &SocketRef<A>) {
    socket.extensions.remove::<Held>();
}

/// The account a socket signed in as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Account(pub Uuid);

/// When a socket's access token runs out (seconds since the epoch, its `exp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionEnds(pub i64);

/// Whether a socket whose token ends at `ends` is over at `now` (both in seconds).
pub fn is_over(ends: SessionEnds, now: i64) -> bool {
    now >= ends.0
}

/// Tells each socket whose token ran out `expired` and closes it; the sockets of `sockets`
/// are this node's.
pub async fn close_expired<A: Adapter>(sockets: Vec<SocketRef<A>>, metrics: &Metrics) {
    let now = chrono::Utc::now().timestamp();
    for socket in sockets {
        let Some(ends) = socket.extensions.get::<SessionEnds>() else { continue };
        if !is_over(ends, now) {
            continue;
        }
        let event = ServerEvent::Expired(SessionExpired {
            code: ErrorCode::Unauthorized,
            message: "the access token ran out; refresh it and connect again, or renew it with `auth` in time"
                .to_owned(),
        });
        let _ = socket.emit(event.name(), &event);
        metrics.refused("live_session_expired");
        // `disconnect` fails only for a socket already gone.
        let _ = socket.disconnect();
    }
}

/// The pace of one socket's `join`s.
#[derive(Clone)]
struct JoinPace(Arc<DefaultDirectRateLimiter>);

/// Whether the socket may `join` now; the first `join` sets its pace up.
pub fn may_join<A: Adapter>(socket: &SocketRef<A>) -> bool {
    let pace = socket.extensions.get::<JoinPace>().unwrap_or_else(|| {
        let pace = JoinPace(Arc::new(RateLimiter::direct(Quota::per_second(JOINS_PER_SECOND).allow_burst(JOIN_BURST))));
        socket.extensions.insert(pace.clone());
        pace
    });
    pace.0.check().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_over_from_its_token_s_exp() {
        assert!(!is_over(SessionEnds(100), 99));
        assert!(is_over(SessionEnds(100), 100));
        assert!(is_over(SessionEnds(100), 101));
    }

    #[test]
    fn joins_come_in_a_burst_then_at_a_pace() {
        let pace = RateLimiter::direct(Quota::per_second(JOINS_PER_SECOND).allow_burst(JOIN_BURST));
        let allowed = (0..100).filter(|_| pace.check().is_ok()).count();
        assert_eq!(allowed, 20, "the burst, then nothing at once");
    }
}
