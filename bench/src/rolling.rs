//! `floor-bench rolling`: a rolling restart under load, as an operator runs one. Two nodes
//! behind HAProxy (`deploy/haproxy.cfg` as it is) on a fresh PostgreSQL database and a
//! `redis-server` of the benchmark's own; N watchers over WebSocket through HAProxy, each
//! reconnecting and joining again as the apps do (socket.io-client's backoff: 1 s ± 50 %,
//! doubling up to 5 s); the club pressing pause or resume through HAProxy every 500 ms (one
//! press in flight at a time). The timeline: steady; node 1 restarted (SIGTERM, its exit, then
//! started again until `/ready` answers); node 2 the same; Redis killed for 5 s and started
//! again. Per event: how long after its end until every watcher held the latest version
//! acknowledged by then; the watchers' reconnects; the join acks' latency from the event's
//! start to 5 s after its end (the reconnect burst); the presses' answers by status; the ERROR
//! lines the nodes logged; and the states a watcher heard again (a version it had already).
//! The exit status is 0 when every acknowledged press is in the final state once, every
//! watcher was current within 3 s of each event's end, the restarts logged no ERROR line and
//! nobody heard a state again after Redis was back.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde::Serialize;
use serde_json::Value;
use tokio::process::{Child, Command};
use tokio::sync::Semaphore;
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};

use crate::database::FreshDatabase;
use crate::report::{ms, percentile};
use crate::server::{Server, ServerSettings};
use crate::setup::Api;
use crate::watcher::{self, Report as Heard, Target, Transport};

/// What the run is given.
pub struct Settings {
    pub floor: PathBuf,
    pub watchers: usize,
    pub players: usize,
    pub eliminated: usize,
    /// Handshakes in flight at once while the watchers first connect.
    pub ramp: usize,
    /// Nodes on `port` and `port + 1`, HAProxy on `port + 2`, Redis on `port + 3`.
    pub port: u16,
    pub postgres_url: String,
    pub haproxy: PathBuf,
    pub haproxy_config: PathBuf,
    /// Watchers join compact (a press of the clock reaches them as a small `clock` event).
    pub compact: bool,
}

/// How often the club presses.
const PRESS_EVERY: Duration = Duration::from_millis(500);
/// How long Redis stays dead.
const REDIS_OUTAGE: Duration = Duration::from_secs(5);
/// The steady stretch before the first event and after each.
const STEADY: Duration = Duration::from_secs(5);
/// How long after an event's end the watchers have to be current before the run says who
/// was not.
const CURRENT_WITHIN: Duration = Duration::from_secs(30);
/// The joins counted as the event's reconnect burst: from its start to this long after its end.
const BURST_AFTER: Duration = Duration::from_secs(5);

/// One event's figures.
#[derive(Serialize)]
pub struct Event {
    pub name: &'static str,
    /// From its start (the SIGTERM, the kill) to its end (the node ready again, Redis
    /// listening again).
    pub length_s: f64,
    /// From its end until every watcher held the latest version acknowledged by then; `None`:
    /// not within 30 s.
    pub every_watcher_current_after_s: Option<f64>,
    /// Watchers without that version 30 s after the end (0 when all were current).
    pub behind: usize,
    pub reconnects: usize,
    pub joins_in_burst: usize,
    pub join_ack_p50_ms: Option<f64>,
    pub join_ack_p99_ms: Option<f64>,
    pub join_ack_max_ms: Option<f64>,
    /// Failed connects or joins (a retry follows each).
    pub failed_joins: BTreeMap<String, usize>,
    /// The presses answered during the event and its settling, by status (`0`: no answer),
    /// and the slowest answer.
    pub presses: BTreeMap<u16, usize>,
    pub press_max_ms: Option<f64>,
    pub error_lines: Vec<String>,
    /// Deliveries of a version the watcher had already.
    pub heard_again: usize,
}

/// The whole run's report.
#[derive(Serialize)]
pub struct Report {
    pub watchers: usize,
    pub compact: bool,
    pub live_state_bytes: usize,
    pub connect_wall_s: f64,
    pub events: Vec<Event>,
    pub acknowledged: usize,
    /// Versions the final state moved past the first, and whether every acknowledged press is
    /// in it once.
    pub applied: i64,
    pub none_lost: bool,
    pub ok: bool,
}

/// What the watchers and the presses have told so far.
struct Tally {
    /// Per watcher: the highest version it holds, and whether it is connected and joined.
    holds: Vec<i64>,
    connected: Vec<bool>,
    reconnects: usize,
    /// `(joined at, ack latency)` of every join.
    joins: Vec<(Instant, Duration)>,
    failed: Vec<(Instant, String)>,
    heard_again: Vec<Instant>,
    presses: Vec<Press>,
}

impl Tally {
    fn hear(&mut self, heard: Heard) {
        match heard {
            Heard::Joined { idx, version, at, ack, .. } => {
                self.holds[idx] = self.holds[idx].max(version);
                self.connected[idx] = true;
                self.joins.push((at, ack));
            }
            Heard::Failed { reason } => self.failed.push((Instant::now(), reason)),
            Heard::Closed { idx, .. } => {
                self.connected[idx] = false;
                self.reconnects += 1;
            }
            Heard::Delivered { idx, version, at, .. } => {
                if version <= self.holds[idx] {
                    self.heard_again.push(at);
                }
                self.holds[idx] = self.holds[idx].max(version);
            }
        }
    }

    fn latest_acknowledged(&self) -> Option<i64> {
        self.presses.iter().filter_map(|press| press.version).max()
    }

    fn joined(&self) -> usize {
        self.connected.iter().filter(|connected| **connected).count()
    }
}

/// One press as the club saw it: the status (`0`: no answer), the version of a `200`, and how
/// long it took, tries again included.
struct Press {
    status: u16,
    version: Option<i64>,
    took: Duration,
}

/// The moving parts: the nodes, HAProxy and Redis.
struct Cluster {
    /// `None` only while the event restarts it.
    nodes: [Option<Server>; 2],
    /// Held for its `kill_on_drop`.
    _haproxy: Child,
    redis: Option<Child>,
    settings_port: u16,
}

pub async fn measure(settings: &Settings) -> anyhow::Result<Report> {
    let database = FreshDatabase::make(Some(&settings.postgres_url)).await?;
    let measured = measure_on(settings, database.url.as_deref().context("a PostgreSQL database")?).await;
    database.drop_it().await;
    measured
}

fn redis_url(port: u16) -> String {
    format!("redis://127.0.0.1:{port}/?protocol=resp3")
}

async fn start_node(settings: &Settings, database_url: &str, node: u16) -> anyhow::Result<Server> {
    let redis = redis_url(settings.port + 3);
    let server_settings = ServerSettings {
        floor: &settings.floor,
        port: settings.port + node,
        redis_url: Some(&redis),
        database_url: Some(database_url),
        env: &[],
    };
    let server = Server::start(&server_settings).await.with_context(|| format!("starting node {}", node + 1))?;
    let ready = format!("http://127.0.0.1:{}/ready", settings.port + node);
    let deadline = Instant::now() + Duration::from_secs(60);
    while reqwest::get(&ready).await.map(|answer| answer.status().as_u16()).unwrap_or(0) != 200 {
        if Instant::now() > deadline {
            bail!("node {} was not ready within 60 s", node + 1);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(server)
}

fn start_redis(port: u16) -> anyhow::Result<Child> {
    Command::new("redis-server")
        .args(["--bind", "127.0.0.1", "--port", &port.to_string(), "--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .context("starting redis-server (Debian's redis-server)")
}

async fn wait_for_port(port: u16) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        if Instant::now() > deadline {
            bail!("nothing listens on {port} after 10 s");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

fn start_haproxy(settings: &Settings) -> anyhow::Result<Child> {
    Command::new(&settings.haproxy)
        .arg("-f")
        .arg(&settings.haproxy_config)
        .env("LISTEN", format!("127.0.0.1:{}", settings.port + 2))
        .env("FLOOR_NODE_1", format!("127.0.0.1:{}", settings.port))
        .env("FLOOR_NODE_2", format!("127.0.0.1:{}", settings.port + 1))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", settings.haproxy.display()))
}

async fn measure_on(settings: &Settings, database_url: &str) -> anyhow::Result<Report> {
    let redis = start_redis(settings.port + 3)?;
    wait_for_port(settings.port + 3).await?;
    let mut first = start_node(settings, database_url, 0).await?;
    let second = start_node(settings, database_url, 1).await?;
    let haproxy = start_haproxy(settings)?;
    wait_for_port(settings.port + 2).await?;
    let mut cluster =
        Cluster { nodes: [None, Some(second)], _haproxy: haproxy, redis: Some(redis), settings_port: settings.port };
    let balancer = format!("http://127.0.0.1:{}", settings.port + 2);
    let api = Api::sign_in(&mut first, &format!("http://127.0.0.1:{}", settings.port)).await?;
    cluster.nodes[0] = Some(first);
    let tournament = api.prepare(settings.players, settings.eliminated).await.context("preparing the tournament")?;
    eprintln!("rolling: tournament {} ready, LiveState {} bytes", tournament.id, tournament.live_bytes);

    let target = Arc::new(Target {
        addr: SocketAddr::from(([127, 0, 0, 1], settings.port + 2)),
        base: balancer.clone(),
        transport: Transport::WebSocket,
        http: reqwest::Client::new(),
        token: api.token.clone(),
        tournament_id: tournament.id.clone(),
        compact: settings.compact,
        deflate: false,
    });
    let (reports_tx, mut reports) = mpsc::unbounded_channel();
    let ramp = Arc::new(Semaphore::new(settings.ramp));
    let mut watchers = tokio::task::JoinSet::new();
    let started = Instant::now();
    for idx in 0..settings.watchers {
        let permit = ramp.clone().acquire_owned().await?;
        watchers.spawn(keep_watching(idx, target.clone(), permit, reports_tx.clone()));
    }
    drop(reports_tx);
    let mut tally = Tally {
        holds: vec![i64::MIN; settings.watchers],
        connected: vec![false; settings.watchers],
        reconnects: 0,
        joins: Vec::new(),
        failed: Vec::new(),
        heard_again: Vec::new(),
        presses: Vec::new(),
    };
    let joined_by = Instant::now() + Duration::from_secs(120);
    while tally.joined() < settings.watchers && Instant::now() < joined_by {
        drain(&mut reports, &mut tally, Duration::from_millis(100)).await;
    }
    let connect_wall = started.elapsed();
    eprintln!("rolling: {} watchers joined in {:.1} s", tally.joined(), connect_wall.as_secs_f64());
    if tally.joined() < settings.watchers {
        let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
        for (_, reason) in &tally.failed {
            *reasons.entry(reason.as_str()).or_default() += 1;
        }
        bail!(
            "only {} of {} watchers joined within 2 minutes; failed tries: {reasons:?}",
            tally.joined(),
            settings.watchers
        );
    }
    tally.reconnects = 0;

    let (presses_tx, mut presses) = mpsc::unbounded_channel();
    let stop_pressing = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let pressing = tokio::spawn(press_loop(
        balancer.clone(),
        api.token.clone(),
        tournament.id.clone(),
        presses_tx,
        stop_pressing.clone(),
    ));
    let mut events = Vec::new();
    for name in ["restart node 1", "restart node 2", "kill Redis for 5 s"] {
        settle(&mut reports, &mut presses, &mut tally, STEADY).await;
        let log_from: Vec<usize> = cluster.nodes.iter().map(|node| node.as_ref().map_or(0, Server::log_len)).collect();
        let (reconnects, joins, failed, again, pressed) =
            (tally.reconnects, tally.joins.len(), tally.failed.len(), tally.heard_again.len(), tally.presses.len());
        let start = Instant::now();
        let mut error_lines = Vec::new();
        let event = async {
            match restarted(name) {
                Some(node) => {
                    let mut server = cluster.nodes[node].take().context("a running node")?;
                    let exit = server.terminate().await?;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    error_lines.extend(errors(&server.log_since(log_from[node]), node));
                    if !exit.success() {
                        error_lines.push(format!("node {}: exited {exit}", node + 1));
                    }
                    drop(server);
                    let port_node = u16::try_from(node)?;
                    cluster.nodes[node] = Some(start_node(settings, database_url, port_node).await?);
                }
                None => {
                    if let Some(mut redis) = cluster.redis.take() {
                        redis.kill().await.ok();
                    }
                    tokio::time::sleep(REDIS_OUTAGE).await;
                    cluster.redis = Some(start_redis(cluster.settings_port + 3)?);
                    wait_for_port(cluster.settings_port + 3).await?;
                }
            }
            anyhow::Ok(())
        };
        // The watchers' and presses' reports keep coming while the event runs.
        {
            let mut event = std::pin::pin!(event);
            loop {
                tokio::select! {
                    done = &mut event => { done?; break; }
                    () = drain_both(&mut reports, &mut presses, &mut tally, Duration::from_millis(50)) => {}
                }
            }
        }
        let ended = Instant::now();
        let latest = tally.latest_acknowledged().unwrap_or(tournament.version);
        let mut current_after = None;
        while ended.elapsed() < CURRENT_WITHIN {
            if tally.holds.iter().all(|holds| *holds >= latest) {
                current_after = Some(ended.elapsed());
                break;
            }
            drain_both(&mut reports, &mut presses, &mut tally, Duration::from_millis(10)).await;
        }
        let behind = tally.holds.iter().filter(|holds| **holds < latest).count();
        let burst_ends = ended + BURST_AFTER;
        while Instant::now() < burst_ends {
            drain_both(&mut reports, &mut presses, &mut tally, Duration::from_millis(50)).await;
        }
        for (node, server) in cluster.nodes.iter().enumerate() {
            if let Some(server) = server {
                // A node the event started again logs from its first line.
                let from = if restarted(name) == Some(node) { 0 } else { log_from[node] };
                error_lines.extend(errors(&server.log_since(from), node));
            }
        }
        let mut acks: Vec<f64> = tally.joins[joins..].iter().map(|(_, ack)| ms(*ack)).collect();
        acks.sort_by(f64::total_cmp);
        let mut failed_joins = BTreeMap::new();
        for (_, reason) in &tally.failed[failed..] {
            *failed_joins.entry(reason.clone()).or_default() += 1;
        }
        let mut statuses = BTreeMap::new();
        for press in &tally.presses[pressed..] {
            *statuses.entry(press.status).or_default() += 1;
        }
        let press_max_ms = tally.presses[pressed..].iter().map(|press| ms(press.took)).max_by(f64::total_cmp);
        let event = Event {
            name,
            length_s: (ended - start).as_secs_f64(),
            every_watcher_current_after_s: current_after.map(|after| after.as_secs_f64()),
            behind,
            reconnects: tally.reconnects - reconnects,
            joins_in_burst: acks.len(),
            join_ack_p50_ms: percentile(&acks, 50.0),
            join_ack_p99_ms: percentile(&acks, 99.0),
            join_ack_max_ms: acks.last().copied(),
            failed_joins,
            presses: statuses,
            press_max_ms,
            error_lines,
            heard_again: tally.heard_again.len() - again,
        };
        eprintln!("{}", event.text());
        events.push(event);
    }
    settle(&mut reports, &mut presses, &mut tally, STEADY).await;
    // The press in flight is answered first: one applied and never told would look lost.
    stop_pressing.store(true, std::sync::atomic::Ordering::SeqCst);
    pressing.await.ok();
    while let Ok(press) = presses.try_recv() {
        tally.presses.push(press);
    }
    watchers.abort_all();

    let mut acknowledged: Vec<i64> = tally.presses.iter().filter_map(|press| press.version).collect();
    acknowledged.sort_unstable();
    let distinct = {
        let mut distinct = acknowledged.clone();
        distinct.dedup();
        distinct.len()
    };
    let live = api.at(&balancer).live_version(&tournament.id).await?;
    let unknown = tally.presses.iter().filter(|press| press.status == 500 || press.status == 0).count();
    let applied = live - tournament.version;
    let kept = i64::try_from(acknowledged.len())?;
    let none_lost = distinct == acknowledged.len()
        && acknowledged.last().is_none_or(|last| *last <= live)
        && (kept..=kept + i64::try_from(unknown)?).contains(&applied);
    // Losing Redis is an error to tell; a node's orderly restart is not. A watcher may hear
    // the version its join's ack carried once more (a change between joining the room and
    // reading the state); after Redis is back, nobody hears a state again.
    let ok = none_lost
        && events.iter().all(|event| {
            let orderly = restarted(event.name).is_none() || event.error_lines.is_empty();
            let fresh = restarted(event.name).is_some() || event.heard_again == 0;
            event.behind == 0 && event.every_watcher_current_after_s.is_some_and(|s| s <= 3.0) && orderly && fresh
        });
    drop(cluster);
    Ok(Report {
        watchers: settings.watchers,
        compact: settings.compact,
        live_state_bytes: tournament.live_bytes,
        connect_wall_s: connect_wall.as_secs_f64(),
        events,
        acknowledged: acknowledged.len(),
        applied,
        none_lost,
        ok,
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

/// The ERROR lines among `lines`, named by their node.
fn errors(lines: &[String], node: usize) -> Vec<String> {
    lines.iter().filter(|line| line.contains(" ERROR ")).map(|line| format!("node {}: {line}", node + 1)).collect()
}

/// Takes in reports for `wait`.
async fn drain(reports: &mut UnboundedReceiver<Heard>, tally: &mut Tally, wait: Duration) {
    let until = tokio::time::Instant::now() + wait;
    while let Ok(Some(heard)) = tokio::time::timeout_at(until, reports.recv()).await {
        tally.hear(heard);
    }
}

/// Takes in the watchers' and the presses' reports for `wait`.
async fn drain_both(
    reports: &mut UnboundedReceiver<Heard>,
    presses: &mut UnboundedReceiver<Press>,
    tally: &mut Tally,
    wait: Duration,
) {
    while let Ok(press) = presses.try_recv() {
        tally.presses.push(press);
    }
    drain(reports, tally, wait).await;
}

async fn settle(
    reports: &mut UnboundedReceiver<Heard>,
    presses: &mut UnboundedReceiver<Press>,
    tally: &mut Tally,
    length: Duration,
) {
    let until = Instant::now() + length;
    while Instant::now() < until {
        drain_both(reports, presses, tally, Duration::from_millis(50)).await;
    }
}

/// One watcher as an app runs it: connects and joins, follows, and when the connection ends
/// (or a join fails) tries again after socket.io-client's delay: 1 s ± 50 %, doubling up to 5 s.
async fn keep_watching(
    idx: usize,
    target: Arc<Target>,
    permit: tokio::sync::OwnedSemaphorePermit,
    reports: UnboundedSender<Heard>,
) {
    let mut permit = Some(permit);
    let mut attempt: u32 = 0;
    loop {
        match watcher::join(&target).await {
            Ok((link, version, ack)) => {
                permit.take();
                attempt = 0;
                let joined = Heard::Joined { idx, version, at: Instant::now(), deflate: link.deflate(), ack };
                if reports.send(joined).is_err() {
                    return;
                }
                let reason = watcher::follow(idx, link, &reports).await;
                if reports.send(Heard::Closed { idx, reason }).is_err() {
                    return;
                }
            }
            Err(reason) => {
                permit.take();
                if reports.send(Heard::Failed { reason }).is_err() {
                    return;
                }
            }
        }
        let delay = Duration::from_millis(1000 * 2u64.pow(attempt.min(3))).min(Duration::from_secs(5));
        let jitter = 0.5 + rand::random::<f64>();
        attempt += 1;
        tokio::time::sleep(delay.mul_f64(jitter)).await;
    }
}

/// Presses pause or resume (whichever the last answer calls for) every [`PRESS_EVERY`], one
/// in flight at a time, each with its own `Idempotency-Key`, tried again with it on a refused
/// connection as a client does.
async fn press_loop(
    balancer: String,
    token: String,
    tournament: String,
    presses: UnboundedSender<Press>,
    stop: Arc<std::sync::atomic::AtomicBool>,
) {
    let http = match reqwest::Client::builder().timeout(Duration::from_secs(30)).build() {
        Ok(http) => http,
        Err(_) => return,
    };
    let mut paused = false;
    let mut tick = tokio::time::interval(PRESS_EVERY);
    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
        tick.tick().await;
        let trigger = if paused { "resume" } else { "pause" };
        let url = format!("{balancer}/api/v1/tournaments/{tournament}/{trigger}");
        let key = uuid::Uuid::new_v4().to_string();
        let sent = Instant::now();
        let mut answer = (0, None);
        for _ in 0..5 {
            let answered = http.post(&url).bearer_auth(&token).header("idempotency-key", &key).send().await;
            match answered {
                Ok(response) => {
                    let status = response.status().as_u16();
                    let body: Value = response.json().await.unwrap_or(Value::Null);
                    let version = body["version"].as_i64().filter(|_| status == 200);
                    if status == 200 {
                        paused = body["clock"]["pausedAt"].is_string();
                    } else if status == 409 {
                        // Another state than thought (a press of unknown outcome): the other.
                        paused = !paused;
                    }
                    answer = (status, version);
                    break;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
        if presses.send(Press { status: answer.0, version: answer.1, took: sent.elapsed() }).is_err() {
            return;
        }
    }
}

impl Event {
    pub fn text(&self) -> String {
        let figure = |value: Option<f64>| value.map_or_else(|| "-".to_owned(), |value| format!("{value:.0}"));
        format!(
            "{:<20} {:>5.1} s; every watcher current {} after its end ({} behind); {} reconnects; \
             {} joins, ack p50 {} / p99 {} / max {} ms; failed joins {:?}; presses {:?}, slowest \
             {} ms; heard again {}; ERROR lines {}{}",
            self.name,
            self.length_s,
            self.every_watcher_current_after_s.map_or_else(|| "never".to_owned(), |s| format!("{s:.2} s")),
            self.behind,
            self.reconnects,
            self.joins_in_burst,
            figure(self.join_ack_p50_ms),
            figure(self.join_ack_p99_ms),
            figure(self.join_ack_max_ms),
            self.failed_joins,
            self.presses,
            figure(self.press_max_ms),
            self.heard_again,
            self.error_lines.len(),
            self.error_lines.iter().take(5).map(|line| format!("\n    {line}")).collect::<String>(),
        )
    }
}

impl Report {
    pub fn text(&self) -> String {
        let mut text = format!(
            "rolling restart, {} {}watchers through HAProxy, LiveState {} bytes, connected in {:.1} s\n",
            self.watchers,
            if self.compact { "compact " } else { "" },
            self.live_state_bytes,
            self.connect_wall_s
        );
        for event in &self.events {
            text.push_str(&event.text());
            text.push('\n');
        }
        text.push_str(&format!(
            "{} presses acknowledged, the state moved {} versions; none lost: {}; ok: {}\n",
            self.acknowledged, self.applied, self.none_lost, self.ok
        ));
        text
    }
}
