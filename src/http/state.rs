//! The application's shared state: everything a request handler may reach, built once at
//! startup and shared by every request.

use std::ops::Deref;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use sea_orm::DatabaseConnection;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::domain::auth::SignIn;
use crate::domain::erasures::Erasures;
use crate::domain::live::engine::Live;
use crate::domain::live::json::LiveJson;
use crate::domain::live::socket::SocketBroadcaster;
use crate::domain::notifications::Notifier;
use crate::domain::tournaments::desk::Desks;
use crate::http::read_cache::ReadCache;
use crate::infra::bus::{Bus, Change, Link};
use crate::infra::config::Config;
use crate::infra::db_watch::DbWatch;
use crate::infra::metrics::Metrics;
use crate::infra::storage::Storage;

/// Everything a request handler may need, built once.
pub struct App {
    pub config: Config,
    /// Writes, and the reads inside them (on SQLite its one connection serialises writers).
    pub db: DatabaseConnection,
    /// Reads outside a write: on SQLite a pool of read-only connections that never wait for
    /// the writer (WAL); on PostgreSQL the same pool as `db`. A handler that only reads
    /// uses this.
    pub reads: DatabaseConnection,
    /// What the kept public reads (the agenda, a card) are built on: on a SQLite file a few
    /// read-only connections of their own, which no burst of requests holds; else `reads`.
    pub kept_reads: DatabaseConnection,
    /// Token keys, code channels and the platform's admin phones.
    pub sign_in: SignIn,
    /// This node's connection to Redis, present when `REDIS_URL` is set.
    pub link: Option<Link>,
    /// Whether the database answers, as last asked.
    pub db_watch: DbWatch,
    /// The one entry point for notifications: journal, then push.
    pub notifier: Notifier,
    /// The live engine: finds or starts the actor of a live tournament, or hands its commands
    /// to the node that runs it.
    pub live: Live,
    /// The Socket.IO side of the live engine, for closing a banned account's connections.
    pub live_sockets: Arc<SocketBroadcaster>,
    /// The LiveState's JSON for HTTP reads, serialised once per published state.
    pub live_json: LiveJson,
    /// Where uploaded files are kept (`STORAGE_URL`).
    pub storage: Storage,
    /// The public reads kept ready to send, until the data behind them changes.
    pub read_cache: Arc<ReadCache>,
    /// The count of erasures (deleted accounts), read before a kept answer that names people
    /// is served.
    pub erasures: Erasures,
    /// Which tournament ids exist, asked before an actor (a live read, a `join`) or a
    /// registration desk may start for one.
    pub known_tournaments: Arc<crate::domain::live::known::KnownTournaments>,
    /// The caps of the venue screens' event streams.
    pub screen_streams: crate::domain::live::screen_feed::ScreenStreams,
    /// With several nodes (`REDIS_URL`): where this node tells the others what it changed.
    pub bus: Option<Arc<Bus>>,
    /// Cancelled when a graceful shutdown begins: from then on the node is not ready.
    pub shutdown: CancellationToken,
    /// What the node measures of itself (`GET /metrics`).
    pub metrics: Arc<Metrics>,
    /// The registration desks: where the changes of who takes part are decided, a group at
    /// a time per tournament.
    pub desks: Desks,
}

/// Drops the cached public reads here at once, and tells the other nodes to drop theirs.
pub fn drop_reads(read_cache: &ReadCache, bus: Option<&Arc<Bus>>) {
    read_cache.invalidate();
    tell_others(bus, Change::Reads);
}

/// Tells the other nodes of `change`, without waiting for Redis (a Redis that stopped
/// answering must not hold a write's answer).
fn tell_others(bus: Option<&Arc<Bus>>, change: Change) {
    if let Some(bus) = bus {
        let bus = bus.clone();
        tokio::spawn(async move { bus.announce(change).await });
    }
}

/// What the node does when a registration desk's group ends: the reads it changed are
/// built again here (and dropped on the other nodes) once for the group, or dropped everywhere
/// when the database cannot say what they should show; and the group is counted.
pub struct DeskCommits {
    pub read_cache: Arc<ReadCache>,
    pub bus: Option<Arc<Bus>>,
    pub metrics: Arc<Metrics>,
}

impl crate::domain::tournaments::desk::Committed for DeskCommits {
    fn renew(&self, tournament_id: Uuid) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            tell_others(self.bus.as_ref(), Change::Renewed { tournament_id });
            self.read_cache.renew(tournament_id).await;
        })
    }

    fn drop_reads(&self) {
        drop_reads(&self.read_cache, self.bus.as_ref());
    }

    fn count(&self, outcome: &'static str, changes: usize) {
        self.metrics.registration_group(outcome, changes);
    }
}

impl App {
    /// The data behind the public reads changed: drops this node's cached reads at once, and
    /// tells the other nodes to drop theirs without waiting for Redis (a Redis that stopped
    /// answering must not hold every write's answer).
    pub fn reads_changed(&self) {
        drop_reads(&self.read_cache, self.bus.as_ref());
    }

    /// The pictures of these tournaments changed in the database outside any game (a deleted
    /// player's name), each to the version given: what this node holds of them is read again
    /// before this returns (its watchers told where it runs them), and the other nodes are
    /// told to do the same.
    pub async fn restated(&self, tournaments: &[(Uuid, i64)]) {
        for &(tournament_id, version) in tournaments {
            if let Err(err) = self.live.registry().restate(tournament_id).await {
                tracing::warn!(%tournament_id, error = %err, "could not read a restated tournament again");
            }
            if let Some(bus) = &self.bus {
                bus.announce(Change::Restated { tournament_id, version }).await;
            }
        }
    }
}

/// The handle handlers receive; cheap to clone.
#[derive(Clone)]
pub struct AppState(pub Arc<App>);

impl Deref for AppState {
    type Target = App;
    fn deref(&self) -> &App {
        &self.0
    }
}
