//! What a `/live` socket may hold and for how long: the caps of sockets per account and per
//! client address, the end of its access token (renewed with `auth`, else `expired` and
//! closed), and the pace of its `join`s. The handlers in `socket/handlers.rs` consult these.

use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use axum::extract::ConnectInfo;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use ipnet::IpNet;
use socketioxide::adapter::Adapter;
use socketioxide::extract::SocketRef;
use uuid::Uuid;

use super::events::{ConnectRefused, ServerEvent, SessionExpired};
use crate::infra::client_address::client_key;
use crate::infra::config::ConnectionSettings;
use crate::infra::connection_slots::{Slot, Slots};
use crate::infra::error::ErrorCode;
use crate::infra::metrics::Metrics;

/// How often the sockets are checked for a token that ran out: a socket outlives its token
/// by this much at most.
pub const EXPIRY_SWEEP: Duration = Duration::from_secs(2);
/// `join`s a socket may send at once, then [`JOINS_PER_SECOND`]: an app joins a tournament
/// or two; a burst of random ids is a probe.
const JOIN_BURST: NonZeroU32 = NonZeroU32::new(20).expect("not zero");
const JOINS_PER_SECOND: NonZeroU32 = NonZeroU32::new(2).expect("not zero");

/// The caps of this node's `/live` sockets.
pub struct SocketGuards {
    per_account: Slots<Uuid>,
    per_address: Slots<IpAddr>,
    trusted_proxies: Arc<[IpNet]>,
    pub metrics: Arc<Metrics>,
}

impl SocketGuards {
    pub fn new(settings: &ConnectionSettings, trusted_proxies: &[IpNet], metrics: Arc<Metrics>) -> Self {
        Self {
            per_account: Slots::new(settings.max_live_sockets_per_account),
            per_address: Slots::new(settings.max_live_sockets_per_address),
            trusted_proxies: trusted_proxies.into(),
            metrics,
        }
    }

    /// Admits a socket of `account` whose token runs out at `ends` within the caps: its
    /// [`Session`] goes in the socket's extensions (its slots given back when it
    /// disconnects); else it is refused `RATE_LIMITED`.
    pub fn admit<A: Adapter>(
        &self,
        socket: &SocketRef<A>,
        account: Uuid,
        ends: SessionEnds,
    ) -> Result<(), ConnectRefused> {
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
                Some(slot) => Some(slot),
                None => {
                    self.metrics.refused("live_sockets_per_address");
                    return Err(ConnectRefused::RateLimited);
                }
            },
        };
        let session = SessionState {
            account,
            ends: AtomicI64::new(ends.0),
            slots: Mutex::new(Some(HeldSlots { _account: of_account, _address: of_address })),
            pace: OnceLock::new(),
        };
        socket.extensions.insert(Session(Arc::new(session)));
        Ok(())
    }
}

/// What a socket holds for its life, in one extension (each extension is an allocation of
/// every socket's): its account, its token's end, its slots and the pace of its joins.
#[derive(Clone)]
pub struct Session(Arc<SessionState>);

struct SessionState {
    account: Uuid,
    /// Seconds since the epoch: the `exp` of the token it connected or last renewed with.
    ends: AtomicI64,
    /// Taken (given back) when the socket disconnects.
    slots: Mutex<Option<HeldSlots>>,
    /// Set up at the first `join`.
    pace: OnceLock<DefaultDirectRateLimiter>,
}

struct HeldSlots {
    _account: Slot<Uuid>,
    _address: Option<Slot<IpAddr>>,
}

impl Session {
    /// The session of a socket admitted by [`SocketGuards::admit`].
    pub fn of<A: Adapter>(socket: &SocketRef<A>) -> Option<Self> {
        socket.extensions.get::<Self>()
    }

    /// Moves the end to that of a fresh token of the same account; `false` (and nothing
    /// changes) for another account's.
    pub fn renew(&self, account: Uuid, ends: SessionEnds) -> bool {
        if account != self.0.account {
            return false;
        }
        self.0.ends.store(ends.0, Ordering::Relaxed);
        true
    }

    pub fn ends(&self) -> SessionEnds {
        SessionEnds(self.0.ends.load(Ordering::Relaxed))
    }

    /// Whether the socket may `join` now.
    pub fn may_join(&self) -> bool {
        let pace = self
            .0
            .pace
            .get_or_init(|| RateLimiter::direct(Quota::per_second(JOINS_PER_SECOND).allow_burst(JOIN_BURST)));
        pace.check().is_ok()
    }

    /// Gives the socket's slots back (also done when the socket is dropped; this is sooner).
    pub fn release(&self) {
        self.0.slots.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take();
    }
}

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
        let Some(session) = Session::of(&socket) else { continue };
        if !is_over(session.ends(), now) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_over_from_its_token_s_exp() {
        assert!(!is_over(SessionEnds(100), 99));
        assert!(is_over(SessionEnds(100), 100));
        assert!(is_over(SessionEnds(100), 101));
    }

    fn session(account: Uuid, slots: &Slots<Uuid>) -> Session {
        let held = HeldSlots { _account: slots.take(account).expect("a slot"), _address: None };
        Session(Arc::new(SessionState {
            account,
            ends: AtomicI64::new(100),
            slots: Mutex::new(Some(held)),
            pace: OnceLock::new(),
        }))
    }

    #[test]
    fn only_a_token_of_the_same_account_moves_the_end() {
        let (account, slots) = (Uuid::now_v7(), Slots::new(1));
        let session = session(account, &slots);
        assert!(!session.renew(Uuid::now_v7(), SessionEnds(900)));
        assert_eq!(session.ends(), SessionEnds(100));
        assert!(session.renew(account, SessionEnds(900)));
        assert_eq!(session.ends(), SessionEnds(900));
    }

    #[test]
    fn joins_come_in_a_burst_then_at_a_pace() {
        let slots = Slots::new(1);
        let session = session(Uuid::now_v7(), &slots);
        let allowed = (0..100).filter(|_| session.may_join()).count();
        assert_eq!(allowed, 20, "the burst, then nothing at once");
    }

    #[test]
    fn a_released_session_gives_its_places_back_at_once() {
        let (account, slots) = (Uuid::now_v7(), Slots::new(1));
        let session = session(account, &slots);
        assert_eq!(slots.held(&account), 1);
        session.release();
        assert_eq!(slots.held(&account), 0);
    }
}
