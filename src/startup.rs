//! Startup: building the application from a configuration into a bound server (the port is
//! known before serving, so tests bind port 0), and serving it until shutdown.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use sea_orm::DatabaseConnection;
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::domain::auth::SignIn;
use crate::domain::auth::delivery::DeliveryChain;
use crate::domain::auth::tokens::JwtKeys;
use crate::domain::erasures::Erasures;
use crate::domain::live::engine::{Live, Nodes};
use crate::domain::live::forward::Forwarder;
use crate::domain::live::json::LiveJson;
use crate::domain::live::known::KnownTournaments;
use crate::domain::live::leases::Leases;
use crate::domain::live::screen_feed::{ScreenEvent, ScreenStreams};
use crate::domain::live::socket::{LiveSetup, SocketBroadcaster};
use crate::domain::live::socket_guards::SocketGuards;
use crate::domain::notifications::Notifier;
use crate::domain::tournaments::desk::Desks;
use crate::domain::{jobs, live, seed};
use crate::http;
use crate::http::read_cache::ReadCache;
use crate::http::server::Door;
use crate::http::state::{App, AppState, DeskCommits};
use crate::infra::bus::link::with_resp3;
use crate::infra::bus::{Bus, Change, Hearer, Link};
use crate::infra::config::{Config, Secret};
use crate::infra::db;
use crate::infra::db_watch::DbWatch;
use crate::infra::metrics::Metrics;
use crate::infra::node_key::node_key;
use crate::infra::storage::Storage;

/// A built application bound to its port, not yet serving.
pub struct Application {
    listener: TcpListener,
    router: axum::Router,
    state: AppState,
    /// The background jobs' schedules: waited for at shutdown, not detached.
    tasks: TaskTracker,
}

impl Application {
    /// Checks what needs no database (a production without a code channel that can send
    /// refuses here), connects, migrates and seeds the database, then binds `config.port`.
    pub async fn build(config: Config) -> anyhow::Result<Self> {
        let codes = DeliveryChain::build(
            config.otp_channels.as_deref(),
            config.channels.clone(),
            config.is_production(),
            config.otp_log_codes,
        )?;
        tracing::info!(channels = ?codes.channel_names(), "one-time code channels");
        // Migrated and seeded with no deadline (an index built on a large table takes its
        // time), then served through connections that have one.
        let schema = db::connect(&config.database_url).await?;
        let report = db::with_schema_lock(&schema, async {
            db::migrate(&schema).await.context("migrating the database")?;
            seed::seed(&schema).await.context("seeding reference data")
        })
        .await?;
        tracing::info!(?report, "reference data seeded");
        let db_watch = DbWatch::default();
        let db = if db::is_sqlite(&config.database_url) {
            // A SQLite database has no deadline to add, and an in-memory one lives in its one
            // connection.
            schema
        } else {
            schema.close().await.ok();
            db::connect_serving(&config.database_url, config.database_deadline, &db_watch).await?
        };
        Self::assemble(config, db, db_watch, codes).await
    }

    /// Builds on a database that is migrated and seeded.
    async fn assemble(
        config: Config,
        db: DatabaseConnection,
        db_watch: DbWatch,
        codes: DeliveryChain,
    ) -> anyhow::Result<Self> {
        let reads = db::connect_readers(&config.database_url, &db).await?;
        let kept_reads = db::connect_kept_reads(&config.database_url, &reads).await?;
        let sign_in = SignIn {
            jwt: Arc::new(JwtKeys::new(&config.jwt_secret)),
            codes,
            platform_admin_phones: config.platform_admin_phones.clone(),
        };
        let link = connect_redis(&config).await?;
        let notifier = Notifier::from_settings(config.fcm.as_ref())?;
        tracing::info!(enabled = notifier.pushes_enabled(), "push notifications through FCM");
        let storage = Storage::open(config.storage_url.as_ref().map(Secret::expose))?;
        tracing::info!(?storage, "uploads storage");
        let metrics = Arc::new(Metrics::new(link.is_some()));
        let address = SocketAddr::from(([0, 0, 0, 0], config.port));
        let listener = listen(address).with_context(|| format!("binding {address}"))?;
        let port = listener.local_addr().map(|addr| addr.port()).unwrap_or(config.port);
        let nodes = join_the_nodes(&config, port, &db, &metrics)?;
        let several_nodes = nodes.is_some();
        let (live, broadcaster) = live::start(&db, &kept_reads, notifier.clone(), metrics.clone(), nodes, link.clone())
            .await
            .context("starting the live engine")?;
        let read_cache = Arc::new(ReadCache::default());
        let bus = start_bus(link.as_ref(), &live, &read_cache, &broadcaster, &metrics).await;
        let shutdown = CancellationToken::new();
        watch_the_database(&db_watch, &db, link.as_ref(), &shutdown).await;
        let known_tournaments = Arc::new(KnownTournaments::new(reads.clone()));
        let erasures = Erasures::new(kept_reads.clone(), several_nodes);
        let desk_commits = DeskCommits { read_cache: read_cache.clone(), bus: bus.clone(), metrics: metrics.clone() };
        let desks = Desks::new(db.clone(), notifier.clone(), Arc::new(desk_commits));
        let screen_streams = ScreenStreams::new(&config.connections);
        let state = AppState(Arc::new(App {
            config,
            db,
            reads,
            kept_reads,
            sign_in,
            link: link.clone(),
            db_watch,
            notifier,
            live,
            live_sockets: broadcaster.clone(),
            live_json: LiveJson::default(),
            storage,
            read_cache,
            erasures,
            known_tournaments,
            screen_streams,
            bus,
            shutdown,
            metrics,
            desks,
        }));
        let router = route_everything(&state, &broadcaster, link.as_ref()).await?;
        live::resume_running(&state.live, &state.db).await.context("resuming the running tournaments")?;
        Ok(Self { listener, router, state, tasks: TaskTracker::new() })
    }

    /// The port actually bound.
    pub fn port(&self) -> u16 {
        self.listener.local_addr().map(|addr| addr.port()).unwrap_or_default()
    }

    pub fn state(&self) -> AppState {
        self.state.clone()
    }

    /// Starts the background jobs on their schedules; they live as long as the runtime.
    pub fn spawn_jobs(&self) {
        jobs::spawn_schedules(
            &self.state.db,
            &self.state.notifier,
            &self.state.metrics,
            &self.tasks,
            &self.state.shutdown,
        );
    }

    /// Serves until `shutdown` completes, then shuts down gracefully, [`SHUTDOWN_GRACE`] at
    /// most: `GET /ready` answers `503` at once, a request that would open a Socket.IO session
    /// gets a `503` the client retries elsewhere, and the job schedules start no tick; with
    /// several nodes this node hands its tournaments over (its actors finish the commands they
    /// took, their leases go, the other nodes take them at once) and closes its live
    /// connections so their clients reconnect elsewhere; then it accepts no connection, and
    /// the requests in flight (those on a handed-over tournament go to its new owner) and the
    /// job ticks under way finish.
    pub async fn run_until(self, shutdown: impl Future<Output = ()> + Send + 'static) -> anyhow::Result<()> {
        tracing::info!(
            port = self.port(),
            release = crate::infra::release::VERSION,
            commit = crate::infra::release::COMMIT,
            "serving"
        );
        let token = self.state.shutdown.clone();
        self.tasks.spawn(live::keeper::keep(self.state.live.clone(), token.clone()));
        let state = self.state.clone();
        let limit = Arc::new(std::sync::OnceLock::new());
        let begun = {
            let limit = limit.clone();
            async move {
                shutdown.await;
                limit.get_or_init(|| tokio::time::Instant::now() + SHUTDOWN_GRACE);
                token.cancel();
                hand_over(&state).await;
            }
        };
        let door = Door::new(
            &self.state.config.connections,
            &self.state.config.limits.trusted_proxies,
            http::headers::every_answer(&self.state.config.public_url),
            self.state.metrics.clone(),
        );
        let serving = http::server::serve(self.listener, self.router, door, begun);
        let token = self.state.shutdown.clone();
        let cut = async {
            token.cancelled().await;
            tokio::time::sleep_until(limit.get().copied().unwrap_or_else(tokio::time::Instant::now)).await;
        };
        tokio::select! {
            served = serving => served.context("serving HTTP")?,
            () = cut => tracing::warn!("requests were still running at the shutdown's limit; they are cut"),
        }
        self.state.live.shutdown();
        self.tasks.close();
        let until = limit.get().copied().unwrap_or_else(|| tokio::time::Instant::now() + SHUTDOWN_GRACE);
        if tokio::time::timeout_at(until, self.tasks.wait()).await.is_err() {
            tracing::warn!("a job tick was still running at the shutdown's limit; another node takes its claim over");
        }
        Ok(())
    }
}

/// The longest a graceful shutdown takes from its signal: requests in flight and job ticks
/// under way get this long (a container runtime kills at 30 s).
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(25);

/// Hands this node's tournaments to the other nodes and tells them, then closes its live
/// connections, whose clients reconnect through the load balancer to a node that stays.
async fn hand_over(state: &AppState) {
    let handed = state.live.hand_over().await;
    if let Some(bus) = &state.bus {
        bus.announce(Change::HandedOver).await;
    }
    tracing::info!(tournaments = handed, "handed the tournaments over; closing the live connections");
    state.live_sockets.close_all().await;
}

/// The connection to Redis when one is configured. It is made in the background: a node
/// starts while Redis is unreachable, serves its own watchers, and joins the others when Redis
/// answers.
async fn connect_redis(config: &Config) -> anyhow::Result<Option<Link>> {
    let Some(url) = config.redis_url.as_deref() else { return Ok(None) };
    let client = redis::Client::open(with_resp3(url)).context("REDIS_URL is not a valid Redis URL")?;
    Ok(Some(Link::start(client).await?))
}

/// This node's part among several (with Redis, they share the tournaments: each runs those it
/// holds a lease of), addressed by `NODE_URL` or else by its outward address and bound `port`;
/// `None` for a node alone.
fn join_the_nodes(
    config: &Config,
    port: u16,
    db: &DatabaseConnection,
    metrics: &Arc<Metrics>,
) -> anyhow::Result<Option<Arc<Nodes>>> {
    if config.redis_url.is_none() {
        return Ok(None);
    }
    let node_url = config.node_url.clone().unwrap_or_else(|| format!("http://{}:{port}", outward_address()));
    tracing::info!(%node_url, "this node of several");
    Ok(Some(Arc::new(Nodes {
        leases: Arc::new(Leases::new(db.clone(), node_url, metrics.clone())),
        forwarder: Forwarder::new(node_key(config.jwt_secret.expose()), config.database_deadline)?,
        keeper: Notify::new(),
    })))
}

/// The bus to the other nodes over `link`, heard by this node's live engine, cached reads and
/// sockets; `None` without Redis.
async fn start_bus(
    link: Option<&Link>,
    live: &Live,
    read_cache: &Arc<ReadCache>,
    broadcaster: &Arc<SocketBroadcaster>,
    metrics: &Arc<Metrics>,
) -> Option<Arc<Bus>> {
    let link = link?;
    let hearer =
        Arc::new(NodeHearer { live: live.clone(), read_cache: read_cache.clone(), sockets: broadcaster.clone() });
    Some(Arc::new(Bus::start(link.clone(), hearer, metrics.clone()).await))
}

/// Starts watching the database until `shutdown`, and with other nodes (`link`) compares
/// which database each one serves, so readiness can tell a node pointed elsewhere.
async fn watch_the_database(
    db_watch: &DbWatch,
    db: &DatabaseConnection,
    link: Option<&Link>,
    shutdown: &CancellationToken,
) {
    db_watch.keep_watch(db.clone(), shutdown.clone());
    let Some(link) = link else { return };
    match db::identity(db).await {
        Ok(Some(database)) => db_watch.compare_with_other_nodes(&database, link.clone(), shutdown.clone()),
        Ok(None) => {}
        Err(err) => {
            tracing::warn!(error = %err, "could not tell the database apart: readiness never compares notes")
        }
    }
}

/// The whole router: the HTTP API with the Socket.IO transports beside it, the headers every
/// answer carries, and (with Redis) the live sockets' recovery after an outage.
async fn route_everything(
    state: &AppState,
    broadcaster: &Arc<SocketBroadcaster>,
    link: Option<&Link>,
) -> anyhow::Result<axum::Router> {
    let setup = LiveSetup {
        live: state.live.registry().clone(),
        jwt: state.sign_in.jwt.clone(),
        reads: state.reads.clone(),
        bus: state.bus.clone(),
        guards: Arc::new(SocketGuards::new(
            &state.config.connections,
            &state.config.limits.trusted_proxies,
            state.metrics.clone(),
        )),
        tournaments: state.known_tournaments.clone(),
        settings: &state.config.connections,
        leaving: state.shutdown.clone(),
    };
    let router = live::socket::serve_beside(http::router(state.clone()), broadcaster, setup).await?;
    // Outermost, so the Socket.IO transports' answers carry them too.
    let router = http::headers::on_every_answer(router, &state.config.public_url);
    if let Some(link) = link {
        live::socket::recover_after_outages(broadcaster.clone(), state.live.registry().clone(), link);
    }
    Ok(router)
}

/// This machine's address as the other machines see it: the local end of a route to a public
/// address (no packet is sent); the loopback address when there is no route.
fn outward_address() -> std::net::IpAddr {
    std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|socket| {
            socket.connect("192.0.2.1:9")?;
            socket.local_addr()
        })
        .map_or(std::net::IpAddr::from([127, 0, 0, 1]), |address| address.ip())
}

/// What this node does with the other nodes' notes: what it holds of a tournament changed
/// elsewhere reads the change, its cached reads go when the data behind them changed, its
/// keeper takes the running tournaments a node handed over, and its venue screens hear the
/// other nodes' room events.
struct NodeHearer {
    live: Live,
    read_cache: Arc<ReadCache>,
    sockets: Arc<SocketBroadcaster>,
}

impl Hearer for NodeHearer {
    fn heard(&self, change: Change) {
        match change {
            Change::Tournament { tournament_id, version } => {
                // Its state came before the note, on the same connection: this node's watchers have it.
                self.sockets.heard(tournament_id, version);
                self.live.catch_up(tournament_id, version);
            }
            Change::Missed { tournament_id, .. } => {
                let (sockets, live) = (self.sockets.clone(), self.live.registry().clone());
                tokio::spawn(async move { sockets.catch_up_missed(&live, tournament_id).await });
            }
            Change::Restated { tournament_id, .. } => {
                let live = self.live.clone();
                tokio::spawn(async move {
                    if let Err(err) = live.registry().restate(tournament_id).await {
                        tracing::warn!(%tournament_id, error = %err, "could not read a restated tournament again");
                    }
                });
            }
            Change::Reads => self.read_cache.invalidate(),
            Change::Renewed { tournament_id } => {
                let read_cache = self.read_cache.clone();
                tokio::spawn(async move { read_cache.renew(tournament_id).await });
            }
            Change::Screen { tournament_id, event, data } => {
                self.sockets.screens().send(ScreenEvent { tournament_id, name: event, data: data.into() });
            }
            Change::HandedOver => {
                if let Some(nodes) = self.live.nodes() {
                    nodes.keeper.notify_one();
                }
            }
            // The bus passes these over before they reach a hearer.
            Change::Unknown => {}
        }
    }

    fn missed_some(&self) {
        self.live.catch_up_all();
        self.read_cache.invalidate();
    }
}

/// How many connections may wait to be accepted (the kernel caps it at `net.core.somaxconn`).
/// tokio's `bind` asks for 1,024: a venue's phones reconnecting at once (10,000 in a burst of
/// 500 at a time) overflowed it thousands of times, and every dropped SYN costs its client a
/// one-second retransmit.
const ACCEPT_BACKLOG: u32 = 8192;

fn listen(address: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if address.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(address)?;
    socket.listen(ACCEPT_BACKLOG)
}
