//! The reads benchmark: how fast floor answers the reads every phone in a venue makes (the
//! agenda, a tournament's card, the reference lists, the live snapshot), each beside
//! `GET /health` on the same server, and whether a burst of registrations into one tournament
//! fills exactly its seats while the agenda is read.
//!
//! Per database: a fresh `floor serve` (SQLite in its directory, or a fresh PostgreSQL
//! database, dropped after), the abuse limits out of the way, a running tournament of
//! `--players` with `--eliminated` out (~65 KB of LiveState) and 49 more open for
//! registration (an agenda of 50 cards). Each route is loaded by `--connections` keep-alive
//! connections for `--seconds` after a second's warm-up ([`crate::http_load`]).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use futures_util::StreamExt;
use serde::Serialize;

use crate::database::FreshDatabase;
use crate::http_load::{self, Load, Request, Until};
use crate::server::{Server, ServerSettings, UNLIMITED_RATES};
use crate::setup::Api;

/// What every database's run shares.
pub struct Settings {
    pub floor: PathBuf,
    pub port: u16,
    pub connections: usize,
    pub seconds: u64,
    pub players: usize,
    pub eliminated: usize,
    /// The Node peer's origin, whose `GET …/live` is measured beside floor's.
    pub peer: Option<String>,
    /// The nginx binary that serves the bytes of floor's live snapshot and agenda, measured
    /// beside them `nginx_reps` times in turn.
    pub nginx: Option<PathBuf>,
    pub nginx_reps: usize,
    /// The burst: players registering, clients at once, seats, agenda readers meanwhile.
    pub burst: Burst,
    /// With a Redis: the burst again, split between two nodes.
    pub redis_url: Option<String>,
    /// The routes served by a node of several (through `redis_url`), whose live reads check
    /// the stored version first.
    pub routes_on_a_cluster: bool,
}

#[derive(Clone, Copy, Serialize)]
pub struct Burst {
    pub players: usize,
    pub clients: usize,
    pub capacity: usize,
    pub readers: usize,
}

/// Where floor keeps its data for a run.
#[derive(Clone)]
pub enum Database {
    Sqlite,
    /// A fresh database made through this server's administration URL.
    Postgres {
        admin_url: String,
    },
}

impl Database {
    /// The administration URL a fresh database is made through; `None` for SQLite.
    pub fn admin_url(&self) -> Option<&str> {
        match self {
            Self::Sqlite => None,
            Self::Postgres { admin_url } => Some(admin_url),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Self::Sqlite => "sqlite",
            Self::Postgres { .. } => "postgres",
        }
    }
}

/// One route under load.
#[derive(Serialize)]
pub struct RouteLoad {
    pub route: String,
    #[serde(flatten)]
    pub load: Load,
    /// Its req/s over `GET /health`'s on the same server.
    pub to_health: f64,
    /// The server's CPU time over the measured window (1.0 = one core busy).
    pub server_cores: f64,
}

/// The burst of registrations, and the agenda read meanwhile.
#[derive(Serialize)]
pub struct BurstReport {
    #[serde(flatten)]
    pub settings: Burst,
    pub seconds: f64,
    pub registrations_per_second: f64,
    pub registration_p50_ms: f64,
    pub registration_p99_ms: f64,
    pub registration_max_ms: f64,
    /// The nodes the registrations were sent to, in turn.
    pub nodes: usize,
    /// Transactions the registration desks committed for the burst, on every node.
    pub transactions: u64,
    /// Answers by status.
    pub statuses: BTreeMap<u16, usize>,
    /// Answers by the registration's status (`registered`, `waitlist`).
    pub outcomes: BTreeMap<String, usize>,
    /// Answers that mention a locked database.
    pub locked: usize,
    pub agenda: Load,
    /// Whether exactly `capacity` got a seat, the rest the waitlist, and nothing failed.
    pub ok: bool,
}

/// One database's run.
#[derive(Serialize)]
pub struct Report {
    pub database: &'static str,
    /// Whether the routes were served by a node of several.
    pub on_a_cluster: bool,
    pub live_bytes: usize,
    pub routes: Vec<RouteLoad>,
    /// Routes against nginx serving their bytes (with `--nginx`).
    pub against_nginx: Vec<AgainstNginx>,
    pub burst: BurstReport,
    /// The burst again, split between two nodes (with `--redis-url`).
    pub two_nodes: Option<BurstReport>,
}

/// A route against nginx serving the same bytes from a file ([`crate::nginx`]), in turn.
#[derive(Serialize)]
pub struct AgainstNginx {
    pub route: String,
    pub body_bytes: usize,
    pub reps: Vec<NginxRep>,
}

/// One repetition: floor's route, then nginx.
#[derive(Serialize)]
pub struct NginxRep {
    pub floor: Load,
    pub nginx: Load,
    /// Floor's req/s over nginx's.
    pub ratio: f64,
}

/// The Node peer's figures, measured with the same load.
#[derive(Serialize)]
pub struct PeerReport {
    pub route: String,
    #[serde(flatten)]
    pub load: Load,
}

const WARM_UP: Duration = Duration::from_secs(1);
/// Tournaments open for registration beside the running one: an agenda of 50 cards.
const SCHEDULED: usize = 49;

/// Measures the Node peer's `GET …/live` (its tournament is `perf-t1`).
pub async fn measure_peer(settings: &Settings, origin: &str) -> anyhow::Result<PeerReport> {
    let addr = address_of(origin)?;
    let route = "/api/v1/tournaments/perf-t1/live".to_owned();
    let load = load(Request::get(addr, &route, &[]), settings.connections, settings.seconds).await?;
    Ok(PeerReport { route: format!("node peer: GET {route}"), load })
}

/// Runs the routes and the burst on `database`.
pub async fn measure(settings: &Settings, database: &Database) -> anyhow::Result<Report> {
    let made = FreshDatabase::make(database.admin_url()).await?;
    let server_settings = ServerSettings {
        floor: &settings.floor,
        port: settings.port,
        redis_url: settings.redis_url.as_deref().filter(|_| settings.routes_on_a_cluster),
        database_url: made.url.as_deref(),
        env: &UNLIMITED_RATES,
    };
    let on_a_cluster = server_settings.redis_url.is_some();
    let mut server = Server::start(&server_settings).await?;
    let origin = format!("http://127.0.0.1:{}", settings.port);
    let addr = address_of(&origin)?;
    let api = Api::sign_in(&mut server, &origin).await.context("signing the admin in")?;
    let live = api.prepare(settings.players, settings.eliminated).await.context("preparing the live tournament")?;
    let mut scheduled = Vec::with_capacity(SCHEDULED);
    for n in 0..SCHEDULED {
        let starts_in = chrono::Duration::hours(24 + n as i64);
        scheduled.push(api.schedule(&live.venue, starts_in, 100, &format!("Турнир выходного дня №{n}")).await?);
    }

    let agenda = "/api/v1/tournaments".to_owned();
    let live_path = format!("/api/v1/tournaments/{}/live", live.id);
    let agenda_tag = api.etag("/tournaments").await?;
    let live_tag = api.etag(&format!("/tournaments/{}/live", live.id)).await?;
    let gzip = [("Accept-Encoding", "gzip")];
    let routes: Vec<(String, Request)> = vec![
        ("GET /api/v1/health".into(), Request::get(addr, "/api/v1/health", &[])),
        ("GET /tournaments (agenda, 50 cards)".into(), Request::get(addr, &agenda, &[])),
        ("GET /tournaments (agenda, 1 card)".into(), Request::get(addr, &format!("{agenda}?status=running"), &[])),
        ("GET /tournaments (50 cards, gzip)".into(), Request::get(addr, &agenda, &gzip)),
        ("GET /tournaments (50 cards, 304)".into(), Request::get(addr, &agenda, &[("If-None-Match", &agenda_tag)])),
        ("GET /tournaments/{id}".into(), Request::get(addr, &format!("{agenda}/{}", scheduled[0]), &[])),
        ("GET /cities".into(), Request::get(addr, "/api/v1/cities", &[])),
        ("GET /leaderboards/level".into(), Request::get(addr, "/api/v1/leaderboards/level", &[])),
        ("GET /tournaments/{id}/live".into(), Request::get(addr, &live_path, &[])),
        ("GET /tournaments/{id}/live (gzip)".into(), Request::get(addr, &live_path, &gzip)),
        ("GET /tournaments/{id}/live (304)".into(), Request::get(addr, &live_path, &[("If-None-Match", &live_tag)])),
    ];
    let mut measured = Vec::with_capacity(routes.len());
    for (route, request) in routes {
        let cpu_before = server.cpu_seconds()?;
        let load = load(request, settings.connections, settings.seconds).await?;
        // The warm-up is in the CPU time too: share it out over the whole run.
        let server_cores = (server.cpu_seconds()? - cpu_before) / (load.seconds + WARM_UP.as_secs_f64());
        measured.push((route, load, server_cores));
    }
    let health = measured.first().map(|(_, load, _)| load.per_second).unwrap_or_default();
    let routes = measured
        .into_iter()
        .map(|(route, load, server_cores)| RouteLoad {
            to_health: if health > 0.0 { load.per_second / health } else { 0.0 },
            route,
            load,
            server_cores,
        })
        .collect();

    let mut against_nginx = Vec::new();
    if let Some(binary) = &settings.nginx {
        for (route, path) in
            [("GET /tournaments/{id}/live", &live_path), ("GET /tournaments (agenda, 50 cards)", &agenda)]
        {
            let compared = against_nginx_of(settings, binary, addr, route, path).await;
            against_nginx.push(compared.with_context(|| format!("{route} against nginx"))?);
        }
    }

    let burst = burst(&api, &mut server, &live.venue, &[addr], settings.burst).await.context("the burst")?;
    server.stop().await?;
    made.drop_it().await;
    let two_nodes = match &settings.redis_url {
        Some(redis_url) => {
            Some(burst_on_two_nodes(settings, database, redis_url).await.context("the burst on two nodes")?)
        }
        None => None,
    };
    Ok(Report {
        database: database.name(),
        on_a_cluster,
        live_bytes: live.live_bytes,
        routes,
        against_nginx,
        burst,
        two_nodes,
    })
}

/// `path` of floor at `addr` and nginx serving its answer's bytes, each loaded in turn
/// `settings.nginx_reps` times.
async fn against_nginx_of(
    settings: &Settings,
    binary: &std::path::Path,
    addr: SocketAddr,
    route: &str,
    path: &str,
) -> anyhow::Result<AgainstNginx> {
    let answer = reqwest::get(format!("http://{addr}{path}")).await?.error_for_status()?;
    let body = answer.bytes().await?;
    let nginx = crate::nginx::Nginx::serve(binary, &body)?;
    let mut reps = Vec::with_capacity(settings.nginx_reps);
    for _ in 0..settings.nginx_reps {
        let floor = load(Request::get(addr, path, &[]), settings.connections, settings.seconds).await?;
        let nginx = load(Request::get(nginx.addr, "/", &[]), settings.connections, settings.seconds).await?;
        let ratio = if nginx.per_second > 0.0 { floor.per_second / nginx.per_second } else { 0.0 };
        reps.push(NginxRep { floor, nginx, ratio });
    }
    Ok(AgainstNginx { route: route.to_owned(), body_bytes: body.len(), reps })
}

/// The burst again, on a fresh database shared by two nodes (and Redis), the registrations
/// sent to each in turn.
async fn burst_on_two_nodes(settings: &Settings, database: &Database, redis_url: &str) -> anyhow::Result<BurstReport> {
    let made = FreshDatabase::make(database.admin_url()).await?;
    let node = |port: u16, database_url: Option<String>| async move {
        let settings = ServerSettings {
            floor: &settings.floor,
            port,
            redis_url: Some(redis_url),
            database_url: database_url.as_deref(),
            env: &UNLIMITED_RATES,
        };
        Server::start(&settings).await
    };
    let mut first = node(settings.port, made.url.clone()).await?;
    let second = node(settings.port + 1, Some(first.database_url.clone())).await?;
    let origin = format!("http://127.0.0.1:{}", settings.port);
    let api = Api::sign_in(&mut first, &origin).await.context("signing the admin in")?;
    let venue = api.venue().await?;
    for n in 0..SCHEDULED {
        let starts_in = chrono::Duration::hours(24 + n as i64);
        api.schedule(&venue, starts_in, 100, &format!("Турнир выходного дня №{n}")).await?;
    }
    let addrs = [address_of(&origin)?, address_of(&format!("http://127.0.0.1:{}", settings.port + 1))?];
    let burst = burst(&api, &mut first, &venue, &addrs, settings.burst).await;
    second.stop().await?;
    first.stop().await?;
    made.drop_it().await;
    burst
}

async fn load(request: Request, connections: usize, seconds: u64) -> anyhow::Result<Load> {
    let until = Until::Elapsed(Duration::from_secs(seconds));
    tokio::task::spawn_blocking(move || http_load::run(request, connections, WARM_UP, until)).await?
}

/// `burst.players` players register into a tournament of `burst.capacity` seats,
/// `burst.clients` at a time, while `burst.readers` connections read the agenda.
async fn burst(
    api: &Api,
    server: &mut Server,
    venue: &crate::setup::Venue,
    nodes: &[SocketAddr],
    burst: Burst,
) -> anyhow::Result<BurstReport> {
    let addr = *nodes.first().context("a node to send the burst to")?;
    let tournament = api.schedule(venue, chrono::Duration::days(30), burst.capacity, "Пятничный наплыв").await?;
    let phones: Vec<String> = (0..burst.players).map(|n| format!("+7991{n:07}")).collect();
    let tokens = api.sign_in_players(server, &phones).await.context("signing the players in")?;
    let readers = AgendaReaders::start(addr, burst.readers).await;

    let client = reqwest::Client::builder().pool_max_idle_per_host(burst.clients).build()?;
    let urls: Vec<String> =
        nodes.iter().map(|node| format!("http://{node}/api/v1/tournaments/{tournament}/register")).collect();
    let groups_before = committed_groups(&client, nodes).await?;
    let started = Instant::now();
    let answers = register(&client, &urls, &tokens, burst.clients).await;
    let seconds = started.elapsed().as_secs_f64();
    let agenda = readers.stop().await?;
    let transactions = committed_groups(&client, nodes).await?.saturating_sub(groups_before);

    let tallied = Answers::of(&answers);
    let ok = tallied.exact(burst) && agenda.statuses.keys().all(|status| *status == 200);
    Ok(BurstReport {
        settings: burst,
        seconds,
        registrations_per_second: answers.len() as f64 / seconds,
        registration_p50_ms: tallied.at(0.50),
        registration_p99_ms: tallied.at(0.99),
        registration_max_ms: tallied.at(1.0),
        nodes: nodes.len(),
        transactions,
        statuses: tallied.statuses,
        outcomes: tallied.outcomes,
        locked: tallied.locked,
        agenda,
        ok,
    })
}

/// The connections reading the agenda during the burst, on a thread of their own.
struct AgendaReaders {
    done: Arc<AtomicBool>,
    reading: tokio::task::JoinHandle<anyhow::Result<Load>>,
}

impl AgendaReaders {
    /// Starts `readers` connections reading the agenda at `addr`, and returns once they read.
    async fn start(addr: SocketAddr, readers: usize) -> Self {
        let done = Arc::new(AtomicBool::new(false));
        let agenda = Request::get(addr, "/api/v1/tournaments", &[]);
        let until = Until::Flag(done.clone());
        let readers_started = Instant::now();
        let reading = tokio::task::spawn_blocking(move || http_load::run(agenda, readers, Duration::ZERO, until));
        // The readers are connected and reading before the first registration.
        tokio::time::sleep(Duration::from_millis(200).saturating_sub(readers_started.elapsed())).await;
        Self { done, reading }
    }

    /// Stops the readers: what they saw.
    async fn stop(self) -> anyhow::Result<Load> {
        self.done.store(true, Ordering::Release);
        self.reading.await?
    }
}

/// Each of `tokens` registers through `urls` in turn, `clients` at a time: every answer's
/// status (`0`: none), body (or error) and latency.
async fn register(
    client: &reqwest::Client,
    urls: &[String],
    tokens: &[String],
    clients: usize,
) -> Vec<(u16, String, Duration)> {
    futures_util::stream::iter(tokens.iter().enumerate())
        .map(|(n, token)| {
            let request = client.post(&urls[n % urls.len()]).bearer_auth(token).json(&serde_json::json!({}));
            async move {
                let sent = Instant::now();
                match request.send().await {
                    Ok(response) => {
                        let status = response.status().as_u16();
                        let body = response.text().await.unwrap_or_default();
                        (status, body, sent.elapsed())
                    }
                    Err(err) => (0, err.to_string(), sent.elapsed()),
                }
            }
        })
        .buffer_unordered(clients)
        .collect()
        .await
}

/// The registrations' answers, counted.
struct Answers {
    statuses: BTreeMap<u16, usize>,
    /// By the registration's status (`registered`, `waitlist`; `-`: none).
    outcomes: BTreeMap<String, usize>,
    /// Sorted.
    latencies: Vec<Duration>,
    /// Answers that mention a locked database.
    locked: usize,
}

impl Answers {
    fn of(answers: &[(u16, String, Duration)]) -> Self {
        let mut statuses = BTreeMap::new();
        let mut outcomes = BTreeMap::new();
        let mut latencies: Vec<Duration> = Vec::with_capacity(answers.len());
        let mut locked = 0;
        for (status, body, latency) in answers {
            *statuses.entry(*status).or_default() += 1;
            latencies.push(*latency);
            if body.contains("locked") {
                locked += 1;
            }
            let outcome = serde_json::from_str::<serde_json::Value>(body)
                .ok()
                .and_then(|answer| answer["status"].as_str().map(str::to_owned))
                .unwrap_or_else(|| "-".to_owned());
            *outcomes.entry(outcome).or_default() += 1;
        }
        latencies.sort_unstable();
        Self { statuses, outcomes, latencies, locked }
    }

    /// The latency (ms) below which `fraction` of the answers came (nearest rank).
    fn at(&self, fraction: f64) -> f64 {
        let latencies = &self.latencies;
        let index = ((latencies.len() as f64 * fraction).ceil() as usize).clamp(1, latencies.len().max(1));
        latencies.get(index - 1).map_or(0.0, |latency| latency.as_secs_f64() * 1000.0)
    }

    /// Whether exactly `burst.capacity` got a seat, the rest the waitlist, and every answer
    /// was a `200` without a locked database.
    fn exact(&self, burst: Burst) -> bool {
        let registered = self.outcomes.get("registered").copied().unwrap_or_default();
        let waitlisted = self.outcomes.get("waitlist").copied().unwrap_or_default();
        registered == burst.capacity
            && waitlisted == burst.players - burst.capacity
            && self.statuses.get(&200) == Some(&burst.players)
            && self.locked == 0
    }
}

/// The registration groups the desks of `nodes` have committed so far, read off `/metrics`.
async fn committed_groups(client: &reqwest::Client, nodes: &[SocketAddr]) -> anyhow::Result<u64> {
    let mut groups = 0;
    for node in nodes {
        let text = client.get(format!("http://{node}/metrics")).send().await?.error_for_status()?.text().await?;
        groups += text
            .lines()
            .filter(|line| line.starts_with("floor_registration_groups_total{outcome=\"committed\"}"))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<u64>().ok())
            .sum::<u64>();
    }
    Ok(groups)
}

fn address_of(origin: &str) -> anyhow::Result<SocketAddr> {
    let host = origin.trim_start_matches("http://").trim_end_matches('/');
    let host = host.replace("localhost", "127.0.0.1");
    host.parse().with_context(|| format!("{origin} is not http://<ip>:<port>"))
}

impl Report {
    /// The figures as a text table.
    pub fn text(&self) -> String {
        let node = if self.on_a_cluster { ", a node of several" } else { "" };
        let mut text = format!("== reads on {}{node} (LiveState {} bytes)\n", self.database, self.live_bytes);
        text.push_str(&format!(
            "{:<38} {:>10} {:>9} {:>9} {:>8} {:>9} {:>7}  {}\n",
            "route", "req/s", "p50 ms", "p99 ms", "/health", "bytes", "cores", "statuses"
        ));
        for route in &self.routes {
            text.push_str(&format!(
                "{:<38} {:>10.0} {:>9.2} {:>9.2} {:>7.2}x {:>9} {:>7.2}  {}\n",
                route.route,
                route.load.per_second,
                route.load.p50_ms,
                route.load.p99_ms,
                route.to_health,
                route.load.body_bytes,
                route.server_cores,
                statuses(&route.load.statuses),
            ));
        }
        for compared in &self.against_nginx {
            text.push_str(&compared.text());
        }
        text.push_str(&self.burst.text());
        if let Some(two_nodes) = &self.two_nodes {
            text.push_str(&two_nodes.text());
        }
        text
    }
}

impl BurstReport {
    /// The burst's figures as text.
    pub fn text(&self) -> String {
        let on = if self.nodes == 1 { "one node".to_owned() } else { format!("{} nodes", self.nodes) };
        let mut text = format!(
            "burst on {on}: {} registrations from {} clients into {} seats in {:.2} s ({:.0}/s, p50 {:.1} ms, \
             p99 {:.1} ms, max {:.1} ms, {} transactions): {:?}, statuses {:?}, {} locked -> {}\n",
            self.settings.players,
            self.settings.clients,
            self.settings.capacity,
            self.seconds,
            self.registrations_per_second,
            self.registration_p50_ms,
            self.registration_p99_ms,
            self.registration_max_ms,
            self.transactions,
            self.outcomes,
            self.statuses,
            self.locked,
            if self.ok { "exact" } else { "WRONG" },
        );
        text.push_str(&format!(
            "  agenda meanwhile ({} connections): {:.0} req/s, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms, {}\n",
            self.settings.readers,
            self.agenda.per_second,
            self.agenda.p50_ms,
            self.agenda.p99_ms,
            self.agenda.max_ms,
            statuses(&self.agenda.statuses),
        ));
        text
    }
}

impl AgainstNginx {
    /// Each repetition's ratio, then its req/s.
    pub fn text(&self) -> String {
        let ratios: Vec<String> = self.reps.iter().map(|rep| format!("{:.2}x", rep.ratio)).collect();
        let rates: Vec<String> =
            self.reps.iter().map(|rep| format!("{:.0}/{:.0}", rep.floor.per_second, rep.nginx.per_second)).collect();
        format!(
            "{} against nginx serving its {} bytes: {} (req/s floor/nginx: {})\n",
            self.route,
            self.body_bytes,
            ratios.join(" "),
            rates.join(" ")
        )
    }
}

impl PeerReport {
    pub fn text(&self) -> String {
        format!(
            "== {}: {:.0} req/s, p50 {:.2} ms, p99 {:.2} ms, {} bytes, {}\n",
            self.route,
            self.load.per_second,
            self.load.p50_ms,
            self.load.p99_ms,
            self.load.body_bytes,
            statuses(&self.load.statuses)
        )
    }
}

fn statuses(statuses: &BTreeMap<u16, u64>) -> String {
    statuses.iter().map(|(status, count)| format!("{status}:{count}")).collect::<Vec<_>>().join(" ")
}
