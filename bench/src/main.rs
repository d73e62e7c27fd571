//! floor's fan-out benchmark: how fast one LiveState change reaches N Socket.IO watchers of a
//! tournament, and what that costs the server.
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
//! ```
//!
//! (`--bin floor-bench` alone is not found: the root package is the default.)
//!
//! The server and the watchers share the machine, so the watchers read as little as they
//! can: only a packet's first bytes are looked at (see `engineio`, `frame`). Both processes
//! need an open-files limit above N (`ulimit -n $(ulimit -Hn)`); serve below the ephemeral
//! port range (`--port`, default 29125).

mod engineio;
mod frame;
mod polling;
mod report;
mod run;
mod server;
mod setup;
mod tally;
mod watcher;
mod ws;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Parser;

use crate::run::Settings;
use crate::watcher::Transport;

/// floor's fan-out benchmark (see the crate's documentation).
#[derive(Parser)]
#[command(name = "floor-bench", version)]
struct Cli {
    /// The floor binary [default: `floor` beside this executable].
    #[arg(long)]
    floor: Option<PathBuf>,
    /// How many watchers, one fresh server for each.
    #[arg(long, value_delimiter = ',', default_value = "1000,10000")]
    watchers: Vec<usize>,
    /// Changes triggered per N (alternately pause and resume).
    #[arg(long, default_value_t = 20)]
    rounds: usize,
    /// Walk-ins seated in the tournament.
    #[arg(long, default_value_t = 470)]
    players: usize,
    /// Of them, eliminated before the watchers connect.
    #[arg(long, default_value_t = 100)]
    eliminated: usize,
    /// The most handshakes (connect to join's ack) in flight at once.
    #[arg(long, default_value_t = 500)]
    ramp: usize,
    #[arg(long, value_enum, default_value_t = Transport::WebSocket)]
    transport: Transport,
    /// Run floor with socketioxide's Redis adapter on this Redis.
    #[arg(long)]
    redis_url: Option<String>,
    /// Watchers join as compact: a clock change comes as a small `clock` event.
    #[arg(long)]
    compact: bool,
    /// Also write the reports to this file, as one JSON array.
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

/// Runs every N; whether all were perfect.
async fn bench(cli: Cli) -> anyhow::Result<bool> {
    let settings = settings(&cli)?;
    let mut reports = Vec::with_capacity(cli.watchers.len());
    for &n in &cli.watchers {
        let report = run::measure(&settings, n).await.with_context(|| format!("N={n}"))?;
        print!("{}", report.text());
        reports.push(report);
        if let Some(path) = &cli.json {
            // Rewritten after each N, so a later failure keeps the earlier figures.
            let json = serde_json::to_string_pretty(&reports)?;
            std::fs::write(path, json + "\n").with_context(|| format!("writing {}", path.display()))?;
        }
    }
    Ok(reports.iter().all(|report| report.ok))
}

fn settings(cli: &Cli) -> anyhow::Result<Settings> {
    if cli.watchers.is_empty() || cli.watchers.contains(&0) {
        bail!("--watchers wants numbers above 0");
    }
    if cli.rounds == 0 || cli.ramp == 0 {
        bail!("--rounds and --ramp want numbers above 0");
    }
    if cli.eliminated >= cli.players {
        bail!("--eliminated must leave players in the tournament");
    }
    let floor = match &cli.floor {
        Some(floor) => floor.clone(),
        None => std::env::current_exe()?.with_file_name("floor"),
    };
    if !floor.is_file() {
        bail!("no floor binary at {}: build it (cargo build --release --bin floor) or pass --floor", floor.display());
    }
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
        players: cli.players,
        eliminated: cli.eliminated,
        ramp: cli.ramp,
        transport: cli.transport,
        redis_url: cli.redis_url.clone(),
        compact: cli.compact,
        port: cli.port,
    })
}
