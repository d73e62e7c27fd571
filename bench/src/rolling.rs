//! `floor-bench rolling`: a rolling restart under load, as an operator runs one. Two nodes
//! behind HAProxy (`deploy/haproxy.cfg` as it is) on a fresh PostgreSQL database and a
//! `redis-server` of the benchmark's own; N watchers through HAProxy (through several HAProxy
//! processes of that configuration when one cannot hold them all): the benchmark's own over
//! WebSocket, each reconnecting and joining again as the apps do with socket.io-client 4.x (its
//! backoff: 1 s doubling, ± 50 %, at most 5 s, after a failed transport or an HTTP error on the
//! handshake; a namespace's `connect_error`, or the server's disconnect from the namespace, is
//! final, and the watcher is counted stranded), and a share of them the official
//! socket.io-client itself, half starting on long-polling (`official`); the club pressing pause
//! or resume through HAProxy every 500 ms (one press in flight at a time). The timeline:
//! steady; node 1 restarted (SIGTERM, its exit, then started again until `/ready` answers, on
//! `--restart-as` when given: an upgrade or a rollback); node 2 the same; Redis killed for 5 s and started again. Per event: how long after its end
//! until every watcher held the latest version acknowledged by then (the official ones apart);
//! the watchers' reconnects; the join acks' latency from the event's start to 5 s after its end
//! (the reconnect burst); the presses' answers by status; the ERROR lines the nodes logged; and
//! the states a watcher heard again (a version it had already). The exit status is 0 when
//! every acknowledged press is in the final state once, no watcher of either kind was stranded
//! or refused "Invalid namespace", every watcher was current within 3 s of each event's end,
//! the restarts logged no ERROR line and nobody heard a state again after Redis was back.
//!
//! The run's steps are here; beside them, in `rolling/`: the cluster (nodes, HAProxy, Redis),
//! the watchers, the official watchers, the presses, the tally of what they told, one event's
//! measurement, and the report's text.

mod cluster;
mod event;
mod official;
mod presses;
mod tally;
mod text;
mod watchers;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use serde::Serialize;

use self::cluster::Cluster;
use self::event::Event;
use self::official::Official;
use self::presses::{Applied, Pressing};
use self::tally::{Inbox, Tally};
use self::watchers::Watchers;
use crate::database::FreshDatabase;
use crate::setup::{Api, Tournament};
use crate::watcher::{Target, Transport};

/// What the run is given.
pub struct Settings {
    pub floor: PathBuf,
    /// Every watcher, the official ones included.
    pub watchers: usize,
    /// Of them, the official socket.io-client's, through the first balancer.
    pub official: usize,
    /// Node processes the official watchers are spread over.
    pub official_processes: usize,
    /// `tests/contract/drain-watchers.mjs`, which runs them.
    pub official_script: PathBuf,
    pub players: usize,
    pub eliminated: usize,
    /// Handshakes in flight at once while the watchers first connect.
    pub ramp: usize,
    /// HAProxy processes of the same configuration; watcher `i` goes through balancer
    /// `i % balancers`, the presses through the first.
    pub balancers: usize,
    /// Nodes on `port` and `port + 1`, HAProxy on `port + 2`, Redis on `port + 3`, further
    /// balancers on `port + 4` on (see [`Settings::balancer_port`]).
    pub port: u16,
    pub postgres_url: String,
    pub haproxy: PathBuf,
    pub haproxy_config: PathBuf,
    /// Watchers join compact (a press of the clock reaches them as a small `clock` event).
    pub compact: bool,
    /// The binary each restarted node runs (an upgrade or a rollback); `floor` when `None`.
    pub restart_as: Option<PathBuf>,
}

impl Settings {
    /// Where balancer `n` (from 0) listens.
    pub fn balancer_port(&self, n: usize) -> u16 {
        let after_redis = u16::try_from(n).unwrap_or(u16::MAX).saturating_add(3);
        if n == 0 { self.port + 2 } else { self.port.saturating_add(after_redis) }
    }
}

/// The steady stretch before the first event and after each.
const STEADY: Duration = Duration::from_secs(5);
/// The events, in their order on the timeline.
const EVENTS: [&str; 3] = ["restart node 1", "restart node 2", "kill Redis for 5 s"];

/// The whole run's report.
#[derive(Serialize)]
pub struct Report {
    /// What the nodes ran at first and after their restart (`floor --version`).
    pub started_as: String,
    pub restarted_as: String,
    pub watchers: usize,
    pub official_watchers: usize,
    pub balancers: usize,
    pub compact: bool,
    pub live_state_bytes: usize,
    pub connect_wall_s: f64,
    pub events: Vec<Event>,
    pub acknowledged: usize,
    /// Versions the final state moved past the first, and whether every acknowledged press is
    /// in it once.
    pub applied: i64,
    pub none_lost: bool,
    /// Watchers refused by the namespace (or disconnected from it by the server) during the
    /// run, which socket.io-client never retries: the benchmark's own, and the official ones.
    pub stranded: usize,
    pub official_stranded: usize,
    pub ok: bool,
}

pub async fn measure(settings: &Settings) -> anyhow::Result<Report> {
    let database = FreshDatabase::make(Some(&settings.postgres_url)).await?;
    let measured = measure_on(settings, database.url.as_deref().context("a PostgreSQL database")?).await;
    database.drop_it().await;
    measured
}

async fn measure_on(settings: &Settings, database_url: &str) -> anyhow::Result<Report> {
    let mut cluster = Cluster::start(settings, database_url).await?;
    let balancer = format!("http://127.0.0.1:{}", settings.balancer_port(0));
    let first_node = cluster.nodes[0].as_mut().context("a running node")?;
    let api = Api::sign_in(first_node, &format!("http://127.0.0.1:{}", settings.port)).await?;
    let tournament = api.prepare(settings.players, settings.eliminated).await.context("preparing the tournament")?;
    eprintln!("rolling: tournament {} ready, LiveState {} bytes", tournament.id, tournament.live_bytes);

    let targets = (0..settings.balancers).map(|n| watch_target(settings, n, &api, &tournament)).collect();
    let own = settings.watchers.saturating_sub(settings.official);
    let mut tally = Tally::new(own);
    let Watchers { mut tasks, reports, connect_wall } = watchers::connect(settings, own, targets, &mut tally).await?;
    tally.reconnects = 0;
    let mut official = match settings.official {
        0 => None,
        watchers => {
            let crowd = official::Crowd {
                script: &settings.official_script,
                origin: &balancer,
                token: &api.token,
                tournament_id: &tournament.id,
                watchers,
                processes: settings.official_processes,
                compact: settings.compact,
            };
            let started = std::time::Instant::now();
            let official = Official::start(&crowd, Duration::from_secs(120)).await?;
            eprintln!("rolling: {watchers} official watchers joined in {:.1} s", started.elapsed().as_secs_f64());
            Some(official)
        }
    };
    let (pressing, presses) = Pressing::start(balancer.clone(), api.token.clone(), tournament.id.clone());
    let mut inbox = Inbox::new(reports, presses, tally);
    let mut events = Vec::new();
    for name in EVENTS {
        inbox.settle(STEADY).await;
        let event = event::measure(name, &mut cluster, &mut inbox, official.as_mut(), tournament.version).await?;
        eprintln!("{}", event.text());
        events.push(event);
    }
    inbox.settle(STEADY).await;
    // The press in flight is answered first: one applied and never told would look lost.
    pressing.stop().await;
    inbox.take_presses();
    tasks.abort_all();

    let live = api.at(&balancer).live_version(&tournament.id).await?;
    let Applied { acknowledged, applied, none_lost } = Applied::judge(&inbox.tally.presses, tournament.version, live)?;
    let stranded = inbox.tally.stranded();
    let official_stranded = match official.as_mut() {
        Some(official) => official.report().await?.stranded,
        None => 0,
    };
    let ok = none_lost && stranded == 0 && official_stranded == 0 && events.iter().all(Event::passed);
    drop(cluster);
    let restarted = settings.restart_as.as_ref().unwrap_or(&settings.floor);
    Ok(Report {
        started_as: crate::server::version_of(&settings.floor).await?,
        restarted_as: crate::server::version_of(restarted).await?,
        watchers: settings.watchers,
        official_watchers: settings.official,
        balancers: settings.balancers,
        compact: settings.compact,
        live_state_bytes: tournament.live_bytes,
        connect_wall_s: connect_wall.as_secs_f64(),
        events,
        acknowledged,
        applied,
        none_lost,
        stranded,
        official_stranded,
        ok,
    })
}

/// Where the watchers of balancer `n` connect: the tournament's room, through that HAProxy,
/// over WebSocket.
fn watch_target(settings: &Settings, n: usize, api: &Api, tournament: &Tournament) -> Arc<Target> {
    let addr = SocketAddr::from(([127, 0, 0, 1], settings.balancer_port(n)));
    Arc::new(Target {
        addr,
        base: format!("http://{addr}"),
        transport: Transport::WebSocket,
        http: reqwest::Client::new(),
        token: api.token.clone(),
        tournament_id: tournament.id.clone(),
        compact: settings.compact,
        deflate: false,
    })
}

/// The node (from 0) the event restarts, if it restarts one.
fn restarted(name: &str) -> Option<usize> {
    match name {
        "restart node 1" => Some(0),
        "restart node 2" => Some(1),
        _ => None,
    }
}

/// How many times each key comes.
fn counted<K: Ord>(keys: impl IntoIterator<Item = K>) -> BTreeMap<K, usize> {
    let mut counts = BTreeMap::new();
    for key in keys {
        *counts.entry(key).or_default() += 1;
    }
    counts
}
