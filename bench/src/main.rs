//! floor's benchmarks. `floor-bench [fan-out options]`: how fast one LiveState change reaches
//! N Socket.IO watchers of a tournament, and what that costs the server. `floor-bench reads`:
//! the reads every phone makes (the agenda, a card, the reference lists, the live snapshot)
//! beside `GET /health`, and a burst of registrations, on SQLite and PostgreSQL (see `reads`).
//!
//! For each N in `--watchers`, it starts a fresh `floor serve` (SQLite in a temporary
//! directory, or socketioxide's Redis adapter with `--redis-url`), prepares a tournament over
//! the API (`--players` walk-ins seated and started, `--eliminated` of them out: ~65 KB of
//! LiveState with the defaults), then connects N watchers to `/live` (raw WebSocket or
//! Engine.IO long-polling, `--ramp` handshakes at a time), each joining the tournament's
//! room. Then `--rounds` rounds: the admin pauses or resumes the clock over HTTP, and the
//! benchmark times, per watcher, the moment it has read the whole `state` event (with
//! `--compact`, the `clock` event) of the new version. Per round: first, p50, p99 and last
//! delivery, the trigger's answer time, the server's CPU; per N: RSS per connection and
//! after the rounds, connect time, and whether every watcher got every change exactly once
//! and in order. The exit status is 0 only if every watcher joined and did.
//!
//! ```sh
//! cargo build --release -p floor -p floor-bench --bin floor --bin floor-bench
//! target/release/floor-bench --watchers 1000,10000    # $CARGO_TARGET_DIR/release/… if set
//! target/release/floor-bench reads --databases sqlite,postgres
//! target/release/floor-bench replay
//! ```
//!
//! (`--bin floor-bench` alone is not found: the root package is the default.)
//!
//! The server and the watchers share the machine, so the watchers read as little as they
//! can: only a packet's first bytes are looked at (see `engineio`, `frame`). Both processes
//! need an open-files limit above N (`ulimit -n $(ulimit -Hn)`); serve below the ephemeral
//! port range (`--port`, default 29125).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Parser;

use floor_bench::peer::Peer;
use floor_bench::ratios::{self, Ratios};
use floor_bench::run::Settings;
use floor_bench::watcher::Transport;
use floor_bench::{cost, history, reads, replay, rolling, run, server};

/// floor's benchmarks (see the crate's documentation).
#[derive(Parser)]
#[command(name = "floor-bench", version, args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    mode: Option<Mode>,
    #[command(flatten)]
    fanout: Fanout,
}

#[derive(clap::Subcommand)]
enum Mode {
    /// The reads of the apps beside `GET /health`, and a burst of registrations.
    Reads(Reads),
    /// A rolling restart of two nodes behind HAProxy, and Redis killed, under N watchers.
    Rolling(Rolling),
    /// What a running and a registering tournament cost a node's memory.
    Cost(Cost),
    /// An organizer's offline queue of 50 commands replayed in one request, against the same
    /// commands sent live one at a time.
    Replay(Replay),
    /// Jepsen-style: clients over two nodes record every operation under nemeses, and a
    /// checker holds the history to the database (`floor_bench::history`).
    History(History),
}

/// The history run's options (see `floor_bench::history`).
#[derive(clap::Args)]
struct History {
    /// The floor binary [default: `floor` beside this executable].
    #[arg(long)]
    floor: Option<PathBuf>,
    /// Where a fresh PostgreSQL database is made (and dropped after).
    #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432/postgres")]
    postgres_url: String,
    /// Operations to record at least (the nemeses' schedule repeats until then).
    #[arg(long, default_value_t = 10_000)]
    operations: usize,
    /// Running tournaments, two game clients each.
    #[arg(long, default_value_t = 6)]
    games: usize,
    /// Desk clients, 8 players each.
    #[arg(long, default_value_t = 4)]
    desks: usize,
    /// Seconds each nemesis lasts.
    #[arg(long, default_value_t = 5)]
    window: u64,
    /// Each rolling restart starts the nodes on this binary and `--floor` in turn: an upgrade
    /// and a rollback (or the reverse) under the whole workload.
    #[arg(long)]
    restart_as: Option<PathBuf>,
    /// Also write the report to this file, as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// The first node's port (the second's is the next, Redis's the third after).
    #[arg(long, default_value_t = 29125)]
    port: u16,
}

/// The databases a benchmark runs on, one fresh server each.
#[derive(clap::Args)]
struct Databases {
    /// `sqlite`, `postgres`, or both.
    #[arg(long, value_delimiter = ',', default_value = "sqlite,postgres")]
    databases: Vec<String>,
    /// Where a fresh PostgreSQL database is made (and dropped after).
    #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432/postgres")]
    postgres_url: String,
}

impl Databases {
    /// The databases named on the command line.
    fn chosen(&self) -> anyhow::Result<Vec<reads::Database>> {
        self.databases
            .iter()
            .map(|name| match name.as_str() {
                "sqlite" => Ok(reads::Database::Sqlite),
                "postgres" => Ok(reads::Database::Postgres { admin_url: self.postgres_url.clone() }),
                other => bail!("--databases: {other} is neither sqlite nor postgres"),
            })
            .collect()
    }
}

/// The replay benchmark's options (see `replay`).
#[derive(clap::Args)]
struct Replay {
    /// The floor binary [default: `floor` beside this executable].
    #[arg(long)]
    floor: Option<PathBuf>,
    #[command(flatten)]
    databases: Databases,
    /// Running tournaments: half replay their queue, half get it sent live.
    #[arg(long, default_value_t = 200)]
    tournaments: usize,
    /// Walk-ins seated in each.
    #[arg(long, default_value_t = 27)]
    players: usize,
    #[arg(long, default_value_t = 29125)]
    port: u16,
    /// Also write the reports to this file, as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// The memory cost's options (see `cost`).
#[derive(clap::Args)]
struct Cost {
    /// The floor binary [default: `floor` beside this executable].
    #[arg(long)]
    floor: Option<PathBuf>,
    /// Running tournaments.
    #[arg(long, default_value_t = 500)]
    running: usize,
    /// Walk-ins seated in each running tournament.
    #[arg(long, default_value_t = 9)]
    players: usize,
    /// Tournaments in registration.
    #[arg(long, default_value_t = 100)]
    registering: usize,
    /// Players registering into each of them (their seats).
    #[arg(long, default_value_t = 200)]
    places: usize,
    #[arg(long, default_value_t = 29125)]
    port: u16,
    /// Also write the report to this file, as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// The rolling restart's options (see `rolling`).
#[derive(clap::Args)]
struct Rolling {
    /// The floor binary [default: `floor` beside this executable].
    #[arg(long)]
    floor: Option<PathBuf>,
    /// Watchers, through HAProxy, reconnecting as the apps do.
    #[arg(long, default_value_t = 10_000)]
    watchers: usize,
    /// Of the watchers, this many run the official socket.io-client 4.x (half starting on
    /// long-polling, through the first balancer); 0 for none. They need `node` and
    /// `npm ci --prefix tests/contract`.
    #[arg(long, default_value_t = 1_000)]
    official: usize,
    /// At most this many official watchers share one Node process (one thread, where a phone
    /// has a processor of its own).
    #[arg(long, default_value_t = 500)]
    official_per_process: usize,
    /// The script that runs the official watchers.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/contract/drain-watchers.mjs"))]
    official_script: PathBuf,
    /// HAProxy processes, each running the same configuration, the watchers spread over
    /// them as over a DNS name with several balancers [default: as many as the open-file
    /// limit needs: HAProxy holds two open files per connection].
    #[arg(long)]
    balancers: Option<usize>,
    #[command(flatten)]
    crowd: Crowd,
    /// Where the fresh PostgreSQL database is made (and dropped after).
    #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432/postgres")]
    postgres_url: String,
    #[arg(long, default_value = "/usr/sbin/haproxy")]
    haproxy: PathBuf,
    /// The balancer's configuration, run as it is.
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/haproxy.cfg"))]
    haproxy_config: PathBuf,
    /// The first node's port; the second node, HAProxy and Redis take the next three, and
    /// further balancers the ones after.
    #[arg(long, default_value_t = 29125)]
    port: u16,
    /// Watchers join compact: the presses (pause, resume) reach them as a small `clock` event.
    #[arg(long)]
    compact: bool,
    /// Start each restarted node on this binary instead of `--floor`: the run is then an
    /// upgrade (a newer release) or a rollback (an older one), node by node.
    #[arg(long)]
    restart_as: Option<PathBuf>,
    /// Also write the report to this file, as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// The fan-out benchmark's options (the default mode).
#[derive(clap::Args)]
struct Fanout {
    /// The floor binary [default: `floor` beside this executable].
    #[arg(long)]
    floor: Option<PathBuf>,
    /// How many watchers, one fresh server for each.
    #[arg(long, value_delimiter = ',', default_value = "1000,10000")]
    watchers: Vec<usize>,
    /// Changes triggered per N (alternately pause and resume).
    #[arg(long, default_value_t = 20)]
    rounds: usize,
    #[command(flatten)]
    crowd: Crowd,
    #[arg(long, value_enum, default_value_t = Transport::WebSocket)]
    transport: Transport,
    /// Run floor with socketioxide's Redis adapter on this Redis.
    #[arg(long)]
    redis_url: Option<String>,
    /// Watchers join as compact: a clock change comes as a small `clock` event.
    #[arg(long)]
    compact: bool,
    /// Watchers offer permessage-deflate as Chrome does (WebSocket), and inflate the head of
    /// each compressed message; the report gives the bytes on the wire.
    #[arg(long)]
    deflate: bool,
    /// Nodes of floor (ports `--port` and up): the watchers go to them in turn, the presses to
    /// the first. Two or more run on PostgreSQL and need `--redis-url`.
    #[arg(long, default_value_t = 1)]
    nodes: usize,
    /// Send the presses to this node (from 1) instead: the first node runs the tournament, so
    /// any other measures a press handed to its owner.
    #[arg(long, default_value_t = 1)]
    press_node: usize,
    /// Run on a fresh PostgreSQL database (made and dropped through `--postgres-url`) instead
    /// of a SQLite file; implied by `--nodes 2` and more.
    #[arg(long)]
    postgres: bool,
    #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432/postgres")]
    postgres_url: String,
    /// Also write the reports to this file, as one JSON array.
    #[arg(long)]
    json: Option<PathBuf>,
    /// The port floor serves on (the first node's).
    #[arg(long, default_value_t = 29125)]
    port: u16,
    /// Also measure the Node peer (its folder: `bench/peer-node`, a copy of the shared kit's): for
    /// each N and repetition a fresh floor, then a fresh peer (plain socket.io defaults), and
    /// floor's figures as ratios to the peer's. Packages it lacks are installed in a copy.
    #[arg(long)]
    peer: Option<PathBuf>,
    /// The peer's LiveState: players (500 and 100 out give 64 KB, floor's 470 and 100 65 KB).
    #[arg(long, default_value_t = 500)]
    peer_players: usize,
    #[arg(long, default_value_t = 100)]
    peer_eliminated: usize,
    /// Measure each N this many times (with `--peer`, floor then the peer each time).
    #[arg(long, default_value_t = 1)]
    reps: usize,
}

/// The tournament the watchers watch, and how they first connect.
#[derive(clap::Args)]
struct Crowd {
    /// Walk-ins seated in the tournament.
    #[arg(long, default_value_t = 470)]
    players: usize,
    /// Of them, eliminated before the watchers connect.
    #[arg(long, default_value_t = 100)]
    eliminated: usize,
    /// The most handshakes (connect to join's ack) in flight at once.
    #[arg(long, default_value_t = 500)]
    ramp: usize,
}

impl Crowd {
    fn check(&self) -> anyhow::Result<()> {
        if self.ramp == 0 {
            bail!("--ramp wants a number above 0");
        }
        if self.eliminated >= self.players {
            bail!("--eliminated must leave players in the tournament");
        }
        Ok(())
    }
}

/// The reads benchmark's options.
#[derive(clap::Args)]
struct Reads {
    /// The floor binary [default: `floor` beside this executable].
    #[arg(long)]
    floor: Option<PathBuf>,
    #[command(flatten)]
    databases: Databases,
    /// Keep-alive connections loading each route (as `wrk -c`).
    #[arg(long, default_value_t = 64)]
    connections: usize,
    /// Seconds each route is measured, after a second's warm-up.
    #[arg(long, default_value_t = 5)]
    seconds: u64,
    /// Walk-ins seated in the running tournament (its LiveState is `GET …/live`).
    #[arg(long, default_value_t = 470)]
    players: usize,
    /// Of them, eliminated.
    #[arg(long, default_value_t = 100)]
    eliminated: usize,
    /// The origin of the Node peer (`bench/peer-node`), whose `GET …/live` is
    /// measured the same way first.
    #[arg(long)]
    peer: Option<String>,
    /// nginx (Debian's `nginx` package: `/usr/sbin/nginx`), which serves the bytes of the live
    /// snapshot and of the agenda from a file, measured in turn with floor's routes: the
    /// machine's limit for those reads.
    #[arg(long)]
    nginx: Option<PathBuf>,
    /// Turns of floor and nginx for each of those routes.
    #[arg(long, default_value_t = 3)]
    nginx_reps: usize,
    /// The burst: players registering into one tournament.
    #[arg(long, default_value_t = 1000)]
    burst_players: usize,
    /// The burst: registrations in flight at once.
    #[arg(long, default_value_t = 200)]
    burst_clients: usize,
    /// The burst: seats of the tournament.
    #[arg(long, default_value_t = 100)]
    burst_capacity: usize,
    /// The burst: connections reading the agenda meanwhile.
    #[arg(long, default_value_t = 16)]
    burst_readers: usize,
    /// The burst again, split between two nodes sharing the database and this Redis
    /// (`--burst-redis-url ''` skips it).
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    burst_redis_url: String,
    /// Serve the routes from a node of several (with `--burst-redis-url`): its live reads
    /// each check the stored version first, as on any node of a cluster.
    #[arg(long)]
    routes_on_a_cluster: bool,
    /// Also write the reports to this file, as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// The port floor serves on.
    #[arg(long, default_value_t = 29125)]
    port: u16,
}

#[tokio::main]
async fn main() -> ExitCode {
    match bench(Cli::parse()).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(err) => {
            eprintln!("floor-bench: {err:#}");
            ExitCode::from(2)
        }
    }
}

async fn bench(cli: Cli) -> anyhow::Result<bool> {
    match cli.mode {
        Some(Mode::Reads(reads)) => bench_reads(reads).await,
        Some(Mode::Rolling(rolling)) => bench_rolling(rolling).await,
        Some(Mode::Cost(cost)) => bench_cost(cost).await,
        Some(Mode::Replay(replay)) => bench_replay(replay).await,
        Some(Mode::History(history)) => bench_history(history).await,
        None => bench_fanout(cli.fanout).await,
    }
}

/// Runs every N, `--reps` times each (floor, then the peer with `--peer`); whether all were
/// perfect.
async fn bench_fanout(cli: Fanout) -> anyhow::Result<bool> {
    let settings = settings(&cli)?;
    let peer = match &cli.peer {
        Some(dir) => {
            if cli.nodes > 1 || cli.compact {
                bail!("--peer compares one node's fan-out of whole states: not with --nodes or --compact");
            }
            Some(Peer::prepare(dir, cli.peer_players, cli.peer_eliminated)?)
        }
        None => None,
    };
    let mut reports = Vec::new();
    let mut ratios = Vec::new();
    for &n in &cli.watchers {
        for rep in 1..=cli.reps {
            let report = run::measure(&settings, n).await.with_context(|| format!("N={n}"))?;
            print!("{}", report.text());
            let theirs = match &peer {
                Some(peer) => {
                    let theirs =
                        run::measure_peer(&settings, n, peer).await.with_context(|| format!("the peer at N={n}"))?;
                    print!("{}", theirs.text());
                    let these = Ratios::of(&report, &theirs, rep);
                    print!("{}", these.text());
                    ratios.push(these);
                    Some(theirs)
                }
                None => None,
            };
            reports.push(report);
            reports.extend(theirs);
            if let Some(path) = &cli.json {
                // Rewritten after each run, so a later failure keeps the earlier figures.
                match peer {
                    Some(_) => write_json(path, &serde_json::json!({ "reports": reports, "ratios": ratios }))?,
                    None => write_json(path, &reports)?,
                }
            }
        }
    }
    if peer.is_some() {
        print!("{}", ratios::summary(&ratios));
    }
    Ok(reports.iter().all(|report| report.ok))
}

/// What the tournaments cost; always true once measured.
async fn bench_cost(cli: Cost) -> anyhow::Result<bool> {
    if cli.running == 0 || cli.registering == 0 || cli.players < 2 || cli.places == 0 {
        bail!("--running, --registering and --places want numbers above 0, --players 2 or more");
    }
    let settings = cost::Settings {
        floor: floor_binary(cli.floor.as_ref())?,
        port: cli.port,
        running: cli.running,
        players: cli.players,
        registering: cli.registering,
        places: cli.places,
    };
    let report = cost::measure(&settings).await?;
    print!("{}", report.text());
    if let Some(path) = &cli.json {
        write_json(path, &report)?;
    }
    Ok(true)
}

/// Replays the queues on every database; whether every command was applied exactly once.
async fn bench_replay(cli: Replay) -> anyhow::Result<bool> {
    let settings = replay::Settings {
        floor: floor_binary(cli.floor.as_ref())?,
        port: cli.port,
        tournaments: cli.tournaments,
        players: cli.players,
    };
    let databases = cli.databases.chosen()?;
    let mut reports = Vec::with_capacity(databases.len());
    for database in &databases {
        let report =
            replay::measure(&settings, database).await.with_context(|| format!("replay on {}", database.name()))?;
        print!("{}", report.text());
        reports.push(report);
        if let Some(path) = &cli.json {
            write_json(path, &reports)?;
        }
    }
    Ok(reports.iter().all(|report| report.ok))
}

/// Runs the reads on every database; whether every burst came out exact.
async fn bench_reads(cli: Reads) -> anyhow::Result<bool> {
    let settings = reads::Settings {
        floor: floor_binary(cli.floor.as_ref())?,
        port: cli.port,
        connections: cli.connections,
        seconds: cli.seconds,
        players: cli.players,
        eliminated: cli.eliminated,
        peer: cli.peer.clone(),
        nginx: cli.nginx.clone(),
        nginx_reps: cli.nginx_reps,
        burst: reads::Burst {
            players: cli.burst_players,
            clients: cli.burst_clients,
            capacity: cli.burst_capacity,
            readers: cli.burst_readers,
        },
        redis_url: Some(cli.burst_redis_url.clone()).filter(|url| !url.is_empty()),
        routes_on_a_cluster: cli.routes_on_a_cluster,
    };
    if cli.routes_on_a_cluster && settings.redis_url.is_none() {
        bail!("--routes-on-a-cluster needs --burst-redis-url: a node of several meets the others in Redis");
    }
    if cli.connections == 0 || cli.seconds == 0 || cli.burst_clients == 0 || cli.burst_readers == 0 {
        bail!("--connections, --seconds, --burst-clients and --burst-readers want numbers above 0");
    }
    if cli.burst_capacity < 2 || cli.burst_capacity > cli.burst_players {
        bail!("--burst-capacity wants 2 seats or more, and no more than --burst-players");
    }
    if cli.eliminated >= cli.players {
        bail!("--eliminated must leave players in the tournament");
    }
    let databases = cli.databases.chosen()?;
    let peer = match &settings.peer {
        Some(origin) => {
            let peer = reads::measure_peer(&settings, origin).await.context("the Node peer")?;
            print!("{}", peer.text());
            Some(peer)
        }
        None => None,
    };
    let mut reports = Vec::with_capacity(databases.len());
    for database in &databases {
        let report =
            reads::measure(&settings, database).await.with_context(|| format!("reads on {}", database.name()))?;
        print!("{}", report.text());
        reports.push(report);
        if let Some(path) = &cli.json {
            write_json(path, &serde_json::json!({ "peer": peer, "runs": reports }))?;
        }
    }
    Ok(reports.iter().all(|report| report.burst.ok && report.two_nodes.as_ref().is_none_or(|burst| burst.ok)))
}

/// The rolling restart; whether every watcher caught up after each event, nothing
/// acknowledged was lost, no node logged an ERROR and no watcher heard a state again.
async fn bench_rolling(cli: Rolling) -> anyhow::Result<bool> {
    let (soft, _) = server::open_files_limit()?;
    if (cli.watchers as u64).saturating_add(100) > soft {
        bail!(
            "the open-files limit is {soft}, too low for {} watchers: run `ulimit -n $(ulimit -Hn)` first",
            cli.watchers
        );
    }
    cli.crowd.check()?;
    if cli.watchers == 0 {
        bail!("--watchers wants a number above 0");
    }
    if cli.official > cli.watchers {
        bail!("--official counts among --watchers: at most {}", cli.watchers);
    }
    if cli.official_per_process == 0 {
        bail!("--official-per-process wants a number above 0");
    }
    // Each balancer holds two open files per watcher it carries, and some of its own.
    let balancers = cli
        .balancers
        .unwrap_or_else(|| usize::try_from((2 * cli.watchers as u64 + 200).div_ceil(soft.max(1))).unwrap_or(1).max(1));
    if balancers == 0 {
        bail!("--balancers wants a number above 0");
    }
    let settings = rolling::Settings {
        floor: floor_binary(cli.floor.as_ref())?,
        watchers: cli.watchers,
        official: cli.official,
        official_processes: cli.official.div_ceil(cli.official_per_process),
        official_script: cli.official_script,
        balancers,
        players: cli.crowd.players,
        eliminated: cli.crowd.eliminated,
        ramp: cli.crowd.ramp,
        port: cli.port,
        postgres_url: cli.postgres_url,
        haproxy: cli.haproxy,
        haproxy_config: cli.haproxy_config,
        compact: cli.compact,
        restart_as: cli.restart_as,
    };
    let report = rolling::measure(&settings).await?;
    print!("{}", report.text());
    if let Some(path) = &cli.json {
        write_json(path, &report)?;
    }
    Ok(report.ok)
}

fn write_json(path: &std::path::Path, value: &impl serde::Serialize) -> anyhow::Result<()> {
    let json = serde_json::to_string_pretty(value)?;
    std::fs::write(path, json + "\n").with_context(|| format!("writing {}", path.display()))
}

/// Runs the history run; whether it found no anomaly and left nothing unknown, and every
/// nemesis bit.
async fn bench_history(cli: History) -> anyhow::Result<bool> {
    let settings = history::Settings {
        floor: floor_binary(cli.floor.as_ref())?,
        restart_as: cli.restart_as.as_ref().map(|floor| floor_binary(Some(floor))).transpose()?,
        port: cli.port,
        postgres_url: cli.postgres_url,
        operations: cli.operations,
        games: cli.games,
        desks: cli.desks,
        window: std::time::Duration::from_secs(cli.window),
    };
    let report = history::run(&settings).await?;
    print!("{}", report.text());
    if let Some(path) = &cli.json {
        write_json(path, &report.json())?;
    }
    Ok(report.anomalies.is_empty() && report.unresolved == 0 && report.toothless().is_empty())
}

/// The floor binary to measure: `chosen`, or `floor` beside this executable.
fn floor_binary(chosen: Option<&PathBuf>) -> anyhow::Result<PathBuf> {
    let floor = match chosen {
        Some(floor) => floor.clone(),
        None => std::env::current_exe()?.with_file_name("floor"),
    };
    if !floor.is_file() {
        bail!("no floor binary at {}: build it (cargo build --release --bin floor) or pass --floor", floor.display());
    }
    Ok(floor)
}

fn settings(cli: &Fanout) -> anyhow::Result<Settings> {
    if cli.watchers.is_empty() || cli.watchers.contains(&0) {
        bail!("--watchers wants numbers above 0");
    }
    cli.crowd.check()?;
    if cli.rounds == 0 {
        bail!("--rounds wants a number above 0");
    }
    if cli.reps == 0 {
        bail!("--reps wants a number above 0");
    }
    if cli.nodes == 0 {
        bail!("--nodes wants a number above 0");
    }
    if cli.press_node == 0 || cli.press_node > cli.nodes {
        bail!("--press-node wants a node from 1 to --nodes ({})", cli.nodes);
    }
    if cli.nodes > 1 && cli.redis_url.is_none() {
        bail!("--nodes {} needs --redis-url: the nodes' rooms meet in Redis", cli.nodes);
    }
    let floor = floor_binary(cli.floor.as_ref())?;
    let most = cli.watchers.iter().max().copied().unwrap_or_default();
    let (soft, hard) = server::open_files_limit()?;
    // Each watcher is a socket here and one in floor, which inherits this limit. Over
    // long-polling too: a watcher sends its `POST`s between its `GET`s, one request at a time,
    // so the pool's keep-alive connections number about the watchers.
    let needed = (most as u64).saturating_add(100);
    if needed > hard {
        bail!("the open-files hard limit is {hard}, too low for {most} watchers: use fewer, or raise it as root");
    }
    if needed > soft {
        bail!("the open-files limit is {soft}, too low for {most} watchers: run `ulimit -n {hard}` first");
    }
    Ok(Settings {
        floor,
        rounds: cli.rounds,
        players: cli.crowd.players,
        eliminated: cli.crowd.eliminated,
        ramp: cli.crowd.ramp,
        transport: cli.transport,
        redis_url: cli.redis_url.clone(),
        compact: cli.compact,
        deflate: cli.deflate,
        port: cli.port,
        nodes: cli.nodes,
        press_node: cli.press_node - 1,
        postgres_url: (cli.postgres || cli.nodes > 1).then(|| cli.postgres_url.clone()),
    })
}
