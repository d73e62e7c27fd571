//! One measurement of N watchers: a fresh server and tournament, the watchers connected and
//! joined, the rounds triggered and timed, the deliveries judged.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::sync::Semaphore;
use tokio::sync::mpsc::{self, UnboundedReceiver};
use tokio::task::JoinSet;
use tokio::time::timeout_at;

use crate::database::FreshDatabase;
use crate::peer::{self, Peer};
use crate::report::{self, Report, Round};
use crate::server::{self, Server, ServerSettings};
use crate::setup::Api;
use crate::tally::{self, Counts};
use crate::watcher::{self, Report as Heard, Target, Transport};

/// What every run shares (the command line less the list of N).
pub struct Settings {
    pub floor: PathBuf,
    pub rounds: usize,
    pub players: usize,
    pub eliminated: usize,
    pub ramp: usize,
    pub transport: Transport,
    pub redis_url: Option<String>,
    pub compact: bool,
    /// Watchers offer permessage-deflate.
    pub deflate: bool,
    pub port: u16,
    /// Nodes of floor, on ports `port`, `port + 1`, …; watchers go to them in turn and the
    /// presses to the first. More than one needs `redis_url` and `postgres_url`.
    pub nodes: usize,
    /// The node (from 0) the presses go to; the first runs the tournament.
    pub press_node: usize,
    /// Run on a fresh PostgreSQL database made through this URL instead of a SQLite file.
    pub postgres_url: Option<String>,
}

/// A round waits this long for every joined watcher to have the change…
const ROUND_TIMEOUT: Duration = Duration::from_secs(30);
/// …then this long more, for duplicates to show.
const SETTLE: Duration = Duration::from_millis(300);
/// The longest the joins may take all together (each watcher gives up after 30 s itself).
const JOINS_TIMEOUT: Duration = Duration::from_secs(600);

/// What the watchers have told so far.
struct Watchers {
    /// Per watcher: the version its join's ack carried, once joined.
    joined_version: Vec<Option<i64>>,
    /// Per watcher: the versions it read after joining, in order.
    received: Vec<Vec<i64>>,
    /// Per watcher: whether it has the current round's version.
    has_current: Vec<bool>,
    failures: BTreeMap<String, usize>,
    closed: BTreeMap<String, usize>,
    clock_events: u64,
    last_join: Option<Instant>,
    /// Joined watchers whose connection negotiated permessage-deflate.
    deflating: usize,
    /// The size on the wire of every delivery.
    wire: Vec<usize>,
}

impl Watchers {
    fn new(n: usize) -> Self {
        Self {
            joined_version: vec![None; n],
            received: vec![Vec::new(); n],
            has_current: vec![false; n],
            failures: BTreeMap::new(),
            closed: BTreeMap::new(),
            clock_events: 0,
            last_join: None,
            deflating: 0,
            wire: Vec::new(),
        }
    }

    fn joined(&self) -> usize {
        self.joined_version.iter().flatten().count()
    }

    /// Judges what every joined watcher received against the versions the triggers `made`.
    fn judge(&self, made: &[i64]) -> Counts {
        let mut correctness = Counts::default();
        for (joined_version, received) in self.joined_version.iter().zip(&self.received) {
            if let Some(joined_version) = joined_version {
                correctness.add(&tally::judge(*joined_version, received, made));
            }
        }
        correctness
    }

    /// Takes in one report; `Some((watcher, at))` when it is the first delivery of `current`
    /// to its watcher.
    fn hear(&mut self, heard: Heard, current: Option<i64>) -> Option<(usize, Instant)> {
        match heard {
            Heard::Joined { idx, version, at, deflate, .. } => {
                self.joined_version[idx] = Some(version);
                self.deflating += usize::from(deflate);
                self.last_join = Some(self.last_join.map_or(at, |last| last.max(at)));
            }
            Heard::Failed { reason, .. } | Heard::Stranded { reason, .. } => {
                *self.failures.entry(reason).or_default() += 1;
            }
            Heard::Closed { reason, .. } => *self.closed.entry(reason).or_default() += 1,
            Heard::Delivered { idx, version, clock, at, wire } => {
                self.received[idx].push(version);
                self.wire.push(wire);
                self.clock_events += u64::from(clock);
                if current == Some(version) && !self.has_current[idx] {
                    self.has_current[idx] = true;
                    return Some((idx, at));
                }
            }
        }
        None
    }
}

/// Measures N watchers against fresh servers (one per node) on a fresh database.
pub async fn measure(settings: &Settings, n: usize) -> anyhow::Result<Report> {
    let database = FreshDatabase::make(settings.postgres_url.as_deref()).await?;
    let measured = measure_on(settings, n, database.url.as_deref()).await;
    database.drop_it().await;
    measured
}

/// Measures N watchers against a fresh Node peer, as [`measure`] does floor.
pub async fn measure_peer(settings: &Settings, n: usize, peer: &Peer) -> anyhow::Result<Report> {
    let server = Server::start_peer(peer, settings.port).await?;
    let origin = format!("http://127.0.0.1:{}", settings.port);
    let api = Api::holding(&origin, peer::TOKEN)?;
    let room = Room::read(&api, peer::TOURNAMENT).await.context("reading the peer's LiveState")?;
    eprintln!("N={n}: the Node peer's LiveState {} bytes; connecting", room.live_bytes);
    let measured = measure_started(settings, n, vec![server], &api, &api, &room).await?;
    Ok(measured.report(settings, &Measuring::Peer(peer)))
}

async fn measure_on(settings: &Settings, n: usize, database_url: Option<&str>) -> anyhow::Result<Report> {
    let mut servers = start_nodes(settings, database_url).await?;
    let origin = format!("http://127.0.0.1:{}", settings.port);
    let api = Api::sign_in(&mut servers[0], &origin).await.context("signing the admin in")?;
    let tournament = api.prepare(settings.players, settings.eliminated).await.context("preparing the tournament")?;
    eprintln!("N={n}: tournament {} ready, LiveState {} bytes; connecting", tournament.id, tournament.live_bytes);
    let presses = api.at(&format!("http://127.0.0.1:{}", node_port(settings, settings.press_node)?));
    let room = Room { id: tournament.id, live_bytes: tournament.live_bytes, version: tournament.version };
    let measured = measure_started(settings, n, servers, &api, &presses, &room).await?;
    Ok(measured.report(settings, &Measuring::Floor))
}

/// The room the watchers join: its tournament, the size of its LiveState, its version before
/// the rounds.
struct Room {
    id: String,
    live_bytes: usize,
    version: i64,
}

impl Room {
    async fn read(api: &Api, id: &str) -> anyhow::Result<Self> {
        let (live_bytes, version) = api.live(id).await?;
        Ok(Self { id: id.to_owned(), live_bytes, version })
    }
}

/// Which server a run measured.
enum Measuring<'a> {
    Floor,
    Peer(&'a Peer),
}

/// Connects N watchers to `servers`, plays the rounds through `presses`, and stops the servers.
async fn measure_started(
    settings: &Settings,
    n: usize,
    servers: Vec<Server>,
    api: &Api,
    presses: &Api,
    room: &Room,
) -> anyhow::Result<Measured> {
    let log_from: Vec<usize> = servers.iter().map(Server::log_len).collect();
    let rss_before = total(&servers, Server::rss_kib)?;
    let targets = targets(settings, servers.len(), api, &room.id)?;
    let mut crowd = Crowd::connect(settings, n, &targets).await?;
    let joined = crowd.watchers.joined();
    let connect_wall = crowd.watchers.last_join.map_or(Duration::ZERO, |last| last - crowd.first_attempt);
    let rss_connected = total(&servers, Server::rss_kib)?;
    eprintln!("N={n}: {joined} joined in {:.2} s; {} rounds", connect_wall.as_secs_f64(), settings.rounds);

    let played = play_rounds(settings, &servers, presses, room, &mut crowd, joined).await?;
    let rss_after_rounds = total(&servers, Server::rss_kib)?;
    let watchers = crowd.stop().await;
    let server_log = server_log(&servers, &log_from);
    for server in servers {
        server.stop().await?;
    }
    Ok(Measured {
        n,
        live_state_bytes: room.live_bytes,
        joined,
        connect_wall,
        rss: Rss { before: rss_before, connected: rss_connected, after_rounds: rss_after_rounds },
        watchers,
        played,
        server_log,
    })
}

/// Starts a fresh server per node, on `database_url` (a SQLite file each when `None`).
async fn start_nodes(settings: &Settings, database_url: Option<&str>) -> anyhow::Result<Vec<Server>> {
    let mut servers = Vec::with_capacity(settings.nodes);
    for node in 0..settings.nodes {
        let port = node_port(settings, node)?;
        let server_settings = ServerSettings {
            floor: &settings.floor,
            port,
            redis_url: settings.redis_url.as_deref(),
            database_url,
            env: &[],
        };
        servers.push(Server::start(&server_settings).await.with_context(|| format!("starting node {}", node + 1))?);
    }
    Ok(servers)
}

/// Where the watchers connect: the tournament's room on each of the `nodes`.
fn targets(settings: &Settings, nodes: usize, api: &Api, tournament_id: &str) -> anyhow::Result<Vec<Arc<Target>>> {
    let http = reqwest::Client::builder().build()?;
    (0..nodes)
        .map(|node| {
            let port = node_port(settings, node)?;
            Ok(Arc::new(Target {
                addr: SocketAddr::from(([127, 0, 0, 1], port)),
                base: format!("http://127.0.0.1:{port}"),
                transport: settings.transport,
                http: http.clone(),
                token: api.token.clone(),
                tournament_id: tournament_id.to_owned(),
                compact: settings.compact,
                deflate: settings.deflate,
            }))
        })
        .collect()
}

/// The watchers at work: their tasks, where they report, and what they told so far.
struct Crowd {
    tasks: JoinSet<()>,
    reports: UnboundedReceiver<Heard>,
    watchers: Watchers,
    /// When the first watcher started connecting.
    first_attempt: Instant,
}

impl Crowd {
    /// Starts `n` watchers, to the targets in turn, `settings.ramp` handshakes at a time, and
    /// takes in their reports until each has joined or failed.
    async fn connect(settings: &Settings, n: usize, targets: &[Arc<Target>]) -> anyhow::Result<Self> {
        let (reports_tx, reports) = mpsc::unbounded_channel();
        let ramp = Arc::new(Semaphore::new(settings.ramp));
        let mut tasks = JoinSet::new();
        let watchers = Watchers::new(n);
        let first_attempt = Instant::now();
        for idx in 0..n {
            let permit = ramp.clone().acquire_owned().await?;
            tasks.spawn(watcher::watch(idx, targets[idx % targets.len()].clone(), permit, reports_tx.clone()));
        }
        drop(reports_tx);
        let mut crowd = Self { tasks, reports, watchers, first_attempt };
        crowd.take_joins(n).await;
        Ok(crowd)
    }

    /// Takes in reports until each of the `n` watchers has joined or failed, or
    /// [`JOINS_TIMEOUT`] has passed.
    async fn take_joins(&mut self, n: usize) {
        let joins_deadline = tokio::time::Instant::now() + JOINS_TIMEOUT;
        while self.watchers.joined() + self.watchers.failures.values().sum::<usize>() < n {
            match timeout_at(joins_deadline, self.reports.recv()).await {
                Ok(Some(heard)) => {
                    self.watchers.hear(heard, None);
                }
                Ok(None) | Err(_) => break,
            }
        }
    }

    /// Stops the watchers: what they told, to the last report.
    async fn stop(mut self) -> Watchers {
        self.tasks.abort_all();
        while self.tasks.join_next().await.is_some() {}
        // Watchers whose connection ended before the abort have reported it.
        while let Ok(heard) = self.reports.try_recv() {
            self.watchers.hear(heard, None);
        }
        self.watchers
    }
}

/// The rounds played: each one's figures, the versions the triggers made, and how many of
/// those were not the previous one plus one.
struct Played {
    rounds: Vec<Round>,
    made: Vec<i64>,
    version_gaps: usize,
}

/// Plays `settings.rounds` rounds: the presses pause and resume in turn, and every round is
/// timed until the `joined` watchers have its version.
async fn play_rounds(
    settings: &Settings,
    servers: &[Server],
    presses: &Api,
    room: &Room,
    crowd: &mut Crowd,
    joined: usize,
) -> anyhow::Result<Played> {
    let mut played = Played {
        rounds: Vec::with_capacity(settings.rounds),
        made: Vec::with_capacity(settings.rounds),
        version_gaps: 0,
    };
    let mut previous = room.version;
    for i in 0..settings.rounds {
        let trigger = if i % 2 == 0 { "pause" } else { "resume" };
        let path = format!("/tournaments/{}/{trigger}", room.id);
        crowd.watchers.has_current.fill(false);
        let (server_cpu, bench_cpu) = (total(servers, Server::cpu_seconds)?, server::process_cpu_seconds("self")?);
        let sent = Instant::now();
        let (version, answered) = presses.trigger(&path).await?;
        let answer = answered - sent;
        played.made.push(version);
        played.version_gaps += usize::from(version != previous + 1);
        previous = version;
        let deliveries = collect_round(&mut crowd.reports, &mut crowd.watchers, version, sent, joined).await;
        let mut round = Round::new(
            trigger,
            version,
            answer,
            deliveries.iter().map(|(_, ms)| *ms).collect(),
            total(servers, Server::cpu_seconds)? - server_cpu,
            server::process_cpu_seconds("self")? - bench_cpu,
        );
        if servers.len() > 1 {
            round.p99_by_node_ms = p99_by_node(&deliveries, servers.len());
        }
        played.rounds.push(round);
    }
    Ok(played)
}

/// Per node, the 99th percentile of the deliveries to its watchers (watcher `idx` is on node
/// `idx % nodes`).
fn p99_by_node(deliveries: &[(usize, f64)], nodes: usize) -> Vec<Option<f64>> {
    (0..nodes)
        .map(|node| {
            let mut mine: Vec<f64> =
                deliveries.iter().filter(|(idx, _)| idx % nodes == node).map(|(_, ms)| *ms).collect();
            mine.sort_by(f64::total_cmp);
            report::percentile(&mine, 99.0)
        })
        .collect()
}

/// What the servers logged from `log_from` on, each line named by its node when there are
/// several.
fn server_log(servers: &[Server], log_from: &[usize]) -> Vec<String> {
    let several = servers.len() > 1;
    servers
        .iter()
        .zip(log_from)
        .enumerate()
        .flat_map(|(node, (server, from))| {
            server
                .log_since(*from)
                .into_iter()
                .map(move |line| if several { format!("node {}: {line}", node + 1) } else { line })
        })
        .collect()
}

/// The servers' resident memory along the run, KiB.
struct Rss {
    before: u64,
    connected: u64,
    after_rounds: u64,
}

/// What one measurement found, before it is a report.
struct Measured {
    n: usize,
    live_state_bytes: usize,
    joined: usize,
    connect_wall: Duration,
    rss: Rss,
    watchers: Watchers,
    played: Played,
    server_log: Vec<String>,
}

impl Measured {
    /// The report, its deliveries judged and its medians filled.
    fn report(self, settings: &Settings, measuring: &Measuring<'_>) -> Report {
        let Self { n, live_state_bytes, joined, connect_wall, rss, watchers, played, server_log } = self;
        let correctness = watchers.judge(&played.made);
        let ok = joined == n && watchers.closed.is_empty() && correctness.is_perfect() && correctness.expected > 0;
        let (server, nodes, database, adapter, players, eliminated) = match measuring {
            Measuring::Floor => (
                "floor",
                settings.nodes,
                if settings.postgres_url.is_some() { "postgres" } else { "sqlite" },
                if settings.redis_url.is_some() { "redis" } else { "local" },
                settings.players,
                settings.eliminated,
            ),
            Measuring::Peer(peer) => ("node peer", 1, "none", "local", peer.players, peer.eliminated),
        };
        let mut report = Report {
            server,
            watchers: n,
            nodes,
            database,
            transport: settings.transport,
            adapter,
            compact: settings.compact,
            deflate_offered: settings.deflate,
            deflating: watchers.deflating,
            median_wire_bytes: median_wire_bytes(&watchers.wire),
            players,
            eliminated,
            live_state_bytes,
            joined,
            lost: n - joined,
            failures: watchers.failures,
            closed: watchers.closed,
            connect_wall_s: connect_wall.as_secs_f64(),
            rss_before_mib: mib(rss.before),
            rss_connected_mib: mib(rss.connected),
            rss_per_connection_kib: (joined > 0).then(|| (rss.connected as f64 - rss.before as f64) / joined as f64),
            rss_after_rounds_mib: mib(rss.after_rounds),
            median_first_ms: None,
            median_p50_ms: None,
            median_p99_ms: None,
            median_p99_by_node_ms: Vec::new(),
            median_last_ms: None,
            median_server_cpu_s: None,
            median_bench_cpu_s: None,
            answer_p50_ms: None,
            answer_max_ms: None,
            version_gaps: played.version_gaps,
            clock_events: watchers.clock_events,
            server_log,
            correctness,
            rounds: played.rounds,
            ok,
        };
        report.summarise();
        report
    }
}

/// The median size on the wire of a delivery.
fn median_wire_bytes(wire: &[usize]) -> Option<f64> {
    let mut wire: Vec<f64> = wire.iter().map(|&bytes| bytes as f64).collect();
    wire.sort_by(f64::total_cmp);
    report::percentile(&wire, 50.0)
}

/// The port of node `node` (counted from 0).
fn node_port(settings: &Settings, node: usize) -> anyhow::Result<u16> {
    u16::try_from(node).ok().and_then(|node| settings.port.checked_add(node)).context("a node's port is past 65535")
}

/// A figure of every server, added up.
fn total<T: std::iter::Sum>(servers: &[Server], figure: fn(&Server) -> anyhow::Result<T>) -> anyhow::Result<T> {
    servers.iter().map(figure).sum()
}

/// Takes in reports until every joined watcher has `version` or the round times out, then
/// for [`SETTLE`] more; the delivery times of `version` (ms after `sent`), each with its watcher.
async fn collect_round(
    reports: &mut UnboundedReceiver<Heard>,
    watchers: &mut Watchers,
    version: i64,
    sent: Instant,
    joined: usize,
) -> Vec<(usize, f64)> {
    let mut deliveries = Vec::with_capacity(joined);
    let mut deadline = tokio::time::Instant::from_std(sent + ROUND_TIMEOUT);
    let mut settling = false;
    loop {
        if !settling && deliveries.len() >= joined {
            settling = true;
            deadline = tokio::time::Instant::now() + SETTLE;
        }
        match timeout_at(deadline, reports.recv()).await {
            Ok(Some(heard)) => {
                if let Some((idx, at)) = watchers.hear(heard, Some(version)) {
                    deliveries.push((idx, report::ms(at.saturating_duration_since(sent))));
                }
            }
            Ok(None) => return deliveries,
            Err(_) if settling => return deliveries,
            Err(_) => {
                settling = true;
                deadline = tokio::time::Instant::now() + SETTLE;
            }
        }
    }
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}
