//! The server under measurement: a fresh `floor serve` in a fresh directory (SQLite, uploads),
//! its sign-in codes caught from its stdout, and its memory and CPU read from `/proc`; or the
//! Node peer it is compared with ([`crate::peer`]), measured the same way.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use crate::peer::Peer;

/// The per-account and per-address caps of a benchmark's server: all of its load comes from
/// one account on one machine.
const BENCH_CAP: &str = "10000000";

/// Linux reports CPU time in `/proc/<pid>/stat` in clock ticks of `USER_HZ`, which the kernel
/// fixes at 100 for user space on every architecture floor runs on (`getconf CLK_TCK`).
const CLOCK_TICKS_PER_SECOND: f64 = 100.0;
/// The abuse limits of a measured server, far above any load of a benchmark (whose load is
/// one address): pass them as `ServerSettings::env`.
pub const UNLIMITED_RATES: [(&str, &str); 6] = [
    ("RATE_LIMIT_PUBLIC_READS", "1000000/1s"),
    ("RATE_LIMIT_CODE_REQUESTS", "1000000/1s"),
    ("RATE_LIMIT_CODE_REQUESTS_GLOBAL", "1000000/1s"),
    ("RATE_LIMIT_CODE_CHECKS", "1000000/1s"),
    ("RATE_LIMIT_REFRESHES", "1000000/1s"),
    ("RATE_LIMIT_REGISTRATIONS", "1000000/1s"),
];
/// The platform admin the tournament is prepared with (the server's `PLATFORM_ADMIN_PHONES`).
pub const ADMIN_PHONE: &str = "+79000000001";

/// What the server is started with.
pub struct ServerSettings<'a> {
    pub floor: &'a Path,
    pub port: u16,
    pub redis_url: Option<&'a str>,
    /// A database of its own (PostgreSQL); a SQLite file in its directory when `None`.
    pub database_url: Option<&'a str>,
    /// More variables, set after (and over) the others.
    pub env: &'a [(&'a str, &'a str)],
}

/// A running `floor serve` (or the Node peer); killed when dropped.
pub struct Server {
    child: Child,
    pid: u32,
    dir: PathBuf,
    /// Its `DATABASE_URL`, for another node to share.
    pub database_url: String,
    /// Sign-in codes as the server prints them, `(phone, code)`.
    codes: mpsc::UnboundedReceiver<(String, String)>,
    /// Everything else it prints: warnings and errors only (`RUST_LOG=warn`).
    log: Arc<Mutex<Vec<String>>>,
}

/// The most log lines kept of one server.
const LOG_LINES_KEPT: usize = 10_000;

impl Server {
    /// Starts floor and waits until its port accepts connections.
    pub async fn start(settings: &ServerSettings<'_>) -> anyhow::Result<Self> {
        let port = settings.port;
        refuse_a_taken_port(port).await?;
        let dir = fresh_dir()?;
        let database_url = settings
            .database_url
            .map_or_else(|| format!("sqlite://{}/db.sqlite?mode=rwc", dir.display()), str::to_owned);
        let mut command = Command::new(settings.floor);
        command
            .arg("serve")
            .current_dir(&dir)
            .env("APP_ENV", "test")
            .env("PORT", port.to_string())
            .env("DATABASE_URL", &database_url)
            .env("OTP_LOG_CODES", "true")
            .env("PLATFORM_ADMIN_PHONES", ADMIN_PHONE)
            .env("JWT_SECRET", "bench-secret-bench-secret-bench-secret")
            .env("STORAGE_URL", format!("file://{}/uploads", dir.display()))
            .env("RUST_LOG", "warn")
            // Every watcher is one account's, from one address: the caps a venue never meets
            // would stop the benchmark at its 21st socket.
            .env("MAX_LIVE_SOCKETS_PER_ACCOUNT", BENCH_CAP)
            .env("MAX_LIVE_SOCKETS_PER_ADDRESS", BENCH_CAP)
            .env("MAX_CONNECTIONS_PER_ADDRESS", BENCH_CAP)
            .env_remove("REDIS_URL");
        if let Some(url) = settings.redis_url {
            command.env("REDIS_URL", url);
        }
        command.envs(settings.env.iter().copied());
        Self::spawn(command, dir, database_url, port, &settings.floor.display().to_string()).await
    }

    /// Starts the Node peer of the shared performance kit ([`Peer`]) with its defaults (no
    /// permessage-deflate), its LiveState sized as `peer` says, and waits until its port
    /// accepts connections.
    pub async fn start_peer(peer: &Peer, port: u16) -> anyhow::Result<Self> {
        refuse_a_taken_port(port).await?;
        let dir = fresh_dir()?;
        let mut command = Command::new("node");
        command
            .arg(peer.script())
            .current_dir(&dir)
            .env("PORT", port.to_string())
            .env("HOST", "127.0.0.1")
            .env("PLAYERS", peer.players.to_string())
            .env("ELIMS", peer.eliminated.to_string())
            .env_remove("PEER_DEFLATE")
            .env_remove("PEER_DEFLATE_NO_CONTEXT");
        Self::spawn(command, dir, String::new(), port, "the Node peer (node)").await
    }

    /// Runs `command` (its output read for sign-in codes and the log) in `dir`, and waits
    /// until `port` accepts connections.
    async fn spawn(
        mut command: Command,
        dir: PathBuf,
        database_url: String,
        port: u16,
        what: &str,
    ) -> anyhow::Result<Self> {
        command.stdin(Stdio::null()).stdout(Stdio::piped()).kill_on_drop(true);
        let mut child = command.spawn().with_context(|| format!("starting {what}"))?;
        let pid = child.id().with_context(|| format!("{what} exited at once"))?;
        let stdout = child.stdout.take().context("the server's stdout")?;
        let (codes_tx, codes) = mpsc::unbounded_channel();
        let log = Arc::new(Mutex::new(Vec::new()));
        let log_tx = log.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                match sign_in_code(&line) {
                    Some((phone, code)) => {
                        let _ = codes_tx.send((phone.to_owned(), code.to_owned()));
                    }
                    None => {
                        let mut log = log_tx.lock().unwrap_or_else(PoisonError::into_inner);
                        if log.len() < LOG_LINES_KEPT {
                            log.push(line);
                        }
                    }
                }
            }
        });
        let server = Self { child, pid, dir, database_url, codes, log };
        server.wait_for_port(port).await
    }

    async fn wait_for_port(mut self, port: u16) -> anyhow::Result<Self> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return Ok(self);
            }
            if let Some(status) = self.child.try_wait()? {
                bail!("the server exited before serving: {status}");
            }
            if Instant::now() > deadline {
                bail!("the server did not serve port {port} within 60 s");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The next sign-in code the server prints for `phone`.
    pub async fn sign_in_code(&mut self, phone: &str) -> anyhow::Result<String> {
        let wait = async {
            while let Some((to, code)) = self.codes.recv().await {
                if to == phone {
                    return Some(code);
                }
            }
            None
        };
        match tokio::time::timeout(Duration::from_secs(10), wait).await {
            Ok(Some(code)) => Ok(code),
            _ => bail!("floor printed no `OTP {phone} <code>` line (is OTP_LOG_CODES honoured?)"),
        }
    }

    /// The sign-in codes the server prints for every phone of `phones` (asked for already),
    /// in whatever order they come.
    pub async fn sign_in_codes(&mut self, phones: &[String]) -> anyhow::Result<HashMap<String, String>> {
        let wanted: HashSet<&str> = phones.iter().map(String::as_str).collect();
        let mut codes = HashMap::with_capacity(phones.len());
        let wait = async {
            while codes.len() < wanted.len() {
                let Some((to, code)) = self.codes.recv().await else { break };
                if wanted.contains(to.as_str()) {
                    codes.insert(to, code);
                }
            }
        };
        if tokio::time::timeout(Duration::from_secs(60), wait).await.is_err() || codes.len() < wanted.len() {
            bail!("floor printed {} of {} sign-in codes", codes.len(), wanted.len());
        }
        Ok(codes)
    }

    /// The process id, for a signal (`SIGSTOP`: a paused host).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// How many lines the server has logged so far.
    pub fn log_len(&self) -> usize {
        self.log.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// The lines the server logged after the first `from`.
    pub fn log_since(&self, from: usize) -> Vec<String> {
        let log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        log.get(from..).unwrap_or_default().to_vec()
    }

    /// The server's resident memory, KiB.
    pub fn rss_kib(&self) -> anyhow::Result<u64> {
        process_rss_kib(self.pid)
    }

    /// The server's CPU time so far (user + system), seconds.
    pub fn cpu_seconds(&self) -> anyhow::Result<f64> {
        process_cpu_seconds(self.pid)
    }

    /// Sends SIGTERM, as a container runtime does, and waits for the graceful shutdown's
    /// exit (40 s at most, the grace of deploy/k8s): its status.
    pub async fn terminate(&mut self) -> anyhow::Result<std::process::ExitStatus> {
        let sent = std::process::Command::new("kill").args(["-TERM", &self.pid.to_string()]).status()?;
        if !sent.success() {
            bail!("kill -TERM {} failed", self.pid);
        }
        match tokio::time::timeout(Duration::from_secs(40), self.child.wait()).await {
            Ok(status) => Ok(status?),
            Err(_) => bail!("floor did not exit within 40 s of SIGTERM"),
        }
    }

    /// Kills the server and removes its directory.
    pub async fn stop(mut self) -> anyhow::Result<()> {
        self.child.start_kill()?;
        self.child.wait().await?;
        Ok(())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // The child is killed by `kill_on_drop`; a file it still holds goes with the directory.
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Fails when something listens on `port` already: a server of another run, which the
/// watchers would measure instead.
async fn refuse_a_taken_port(port: u16) -> anyhow::Result<()> {
    if TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
        bail!("port {port} is already taken: stop what listens there, or pass another --port");
    }
    Ok(())
}

/// A fresh directory for one server (its database, uploads), removed with it.
fn fresh_dir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("floor-bench-{}-{}", std::process::id(), uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// What a `floor` binary says it is (`floor --version`).
pub async fn version_of(floor: &Path) -> anyhow::Result<String> {
    let output =
        Command::new(floor).arg("--version").output().await.with_context(|| format!("running {}", floor.display()))?;
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// Resident memory of a process, KiB.
pub fn process_rss_kib(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).context("reading /proc/<pid>/status")?;
    rss_kib(&status).context("no VmRSS in /proc/<pid>/status")
}

/// CPU time of a process so far (user + system), seconds.
pub fn process_cpu_seconds(pid: impl std::fmt::Display) -> anyhow::Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).context("reading /proc/<pid>/stat")?;
    let ticks = cpu_ticks(&stat).context("an unreadable /proc/<pid>/stat")?;
    Ok(ticks as f64 / CLOCK_TICKS_PER_SECOND)
}

/// `VmRSS` of a `/proc/<pid>/status`, KiB.
fn rss_kib(status: &str) -> Option<u64> {
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// `utime + stime` of a `/proc/<pid>/stat`, ticks. Fields are counted after the command's
/// closing parenthesis, since the command itself may hold spaces and parentheses.
fn cpu_ticks(stat: &str) -> Option<u64> {
    let after_command = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_command.split_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(user + system)
}

/// `(phone, code)` of the line floor prints for a sign-in code with `OTP_LOG_CODES`.
fn sign_in_code(line: &str) -> Option<(&str, &str)> {
    let mut words = line.strip_prefix("OTP ")?.split(' ');
    let (phone, code) = (words.next()?, words.next()?);
    let valid = phone.starts_with('+') && !code.is_empty() && code.bytes().all(|byte| byte.is_ascii_digit());
    (valid && words.next().is_none()).then_some((phone, code))
}

/// This process's open-files limit (soft, hard), from `/proc/self/limits`.
pub fn open_files_limit() -> anyhow::Result<(u64, u64)> {
    let limits = std::fs::read_to_string("/proc/self/limits").context("reading /proc/self/limits")?;
    parse_open_files_limit(&limits).context("no open-files limit in /proc/self/limits")
}

fn parse_open_files_limit(limits: &str) -> Option<(u64, u64)> {
    let line = limits.lines().find_map(|line| line.strip_prefix("Max open files"))?;
    let mut values = line.split_whitespace().map(|word| match word {
        "unlimited" => Some(u64::MAX),
        number => number.parse().ok(),
    });
    Some((values.next()??, values.next()??))
}

/// A `redis-server` of a run's own on `port`, nothing saved; killed when dropped.
pub fn start_redis(port: u16) -> anyhow::Result<Child> {
    Command::new("redis-server")
        .args(["--bind", "127.0.0.1", "--port", &port.to_string(), "--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .context("starting redis-server (Debian's redis-server)")
}

/// Returns once something listens on `port` (10 s at most).
pub async fn wait_for_port(port: u16) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        if Instant::now() > deadline {
            bail!("nothing listens on {port} after 10 s");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(())
}

/// Returns once the node on `port` (the `node`-th, from 0) answers `/ready` (60 s at most).
pub async fn wait_until_ready(port: u16, node: usize) -> anyhow::Result<()> {
    let ready = format!("http://127.0.0.1:{port}/ready");
    let deadline = Instant::now() + Duration::from_secs(60);
    while reqwest::get(&ready).await.map(|answer| answer.status().as_u16()).unwrap_or(0) != 200 {
        if Instant::now() > deadline {
            bail!("node {} was not ready within 60 s", node + 1);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resident_memory_is_read_from_the_status_file() {
        let status = "Name:\tfloor\nVmPeak:\t  900 kB\nVmRSS:\t   45236 kB\nRssAnon:\t 30000 kB\n";
        assert_eq!(rss_kib(status), Some(45_236));
        assert_eq!(rss_kib("Name:\tfloor\n"), None);
    }

    #[test]
    fn cpu_time_is_user_plus_system_counted_after_the_command() {
        let stat = "4242 (tokio (rt) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 31 0 0 20 0 3 0 1000 0 0";
        assert_eq!(cpu_ticks(stat), Some(281));
        assert_eq!(cpu_ticks("4242 (floor) S 1"), None);
    }

    #[test]
    fn only_a_well_formed_otp_line_is_a_sign_in_code() {
        assert_eq!(sign_in_code("OTP +79000000001 123456"), Some(("+79000000001", "123456")));
        assert_eq!(sign_in_code("2026-01-01 WARN OTP +79000000001 123456"), None);
        assert_eq!(sign_in_code("OTP +79000000001 12a456"), None);
        assert_eq!(sign_in_code("OTP +79000000001 123456 extra"), None);
    }

    #[test]
    fn the_open_files_limit_is_soft_then_hard() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max processes             96365                96365                processes\n\
                      Max open files            1024                 20000                files\n";
        assert_eq!(parse_open_files_limit(limits), Some((1024, 20_000)));
        let unlimited = "Max open files            unlimited            unlimited            files\n";
        assert_eq!(parse_open_files_limit(unlimited), Some((u64::MAX, u64::MAX)));
    }
}
