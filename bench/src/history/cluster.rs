//! The cluster under the history run and its nemeses: two `floor serve` nodes on one fresh
//! PostgreSQL database reached through the fault proxy, sharing a `redis-server` of the run's
//! own; the second node's clock read through libfaketime, whose offset the run moves. Each
//! nemesis breaks one thing for a window and heals it.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use sea_orm::{ConnectionTrait, DatabaseConnection, Statement};
use tokio::process::{Child, Command};
use uuid::Uuid;

use super::workload::Shared;
use crate::fault_proxy::{Cut, FaultProxy};
use crate::server::{Server, ServerSettings, UNLIMITED_RATES, start_redis, wait_for_port, wait_until_ready};

/// Debian's libfaketime (package `libfaketime`), the variant for threaded programs.
pub const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";
/// PostgreSQL's address, which the proxy stands in front of.
const POSTGRES: (&str, u16) = ("127.0.0.1", 5432);

/// What breaks, one at a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nemesis {
    /// Clients cut their requests at random moments and send them again.
    ClientCuts,
    /// The node owning most tournaments is stopped (`SIGSTOP`), then continued.
    OwnerPaused,
    /// Every byte from PostgreSQL 2.5 s late: each statement takes 2.5 s more.
    SlowDatabase,
    /// Transactions of the tournaments cut at their `COMMIT`, before or after it reaches
    /// PostgreSQL.
    CommitCut,
    /// Redis killed, then started again.
    RedisDown,
    /// The second node's clock 2 s ahead.
    ClockOff,
    /// Each node in turn stopped (`SIGTERM`) and started again.
    RollingRestart,
}

impl Nemesis {
    pub const ALL: [Self; 7] = [
        Self::ClientCuts,
        Self::OwnerPaused,
        Self::SlowDatabase,
        Self::CommitCut,
        Self::RedisDown,
        Self::ClockOff,
        Self::RollingRestart,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::ClientCuts => "client cuts",
            Self::OwnerPaused => "owner paused",
            Self::SlowDatabase => "PostgreSQL slow",
            Self::CommitCut => "cut at COMMIT",
            Self::RedisDown => "Redis down",
            Self::ClockOff => "clock 2 s off",
            Self::RollingRestart => "rolling restart",
        }
    }
}

/// The running cluster.
pub struct Cluster {
    /// The binary the nodes start on now.
    floor: PathBuf,
    /// The binary the next rolling restart starts them on (then the two swap).
    other: Option<PathBuf>,
    /// The releases the nodes ran, in turn.
    pub releases: Vec<String>,
    port: u16,
    nodes: [Option<Server>; 2],
    redis: Option<Child>,
    pub proxy: FaultProxy,
    /// The nodes' `DATABASE_URL` (through the proxy).
    database_url: String,
    /// A connection of the run's own, past the proxy.
    pub db: DatabaseConnection,
    /// libfaketime's offset of the second node, read from this file.
    clock_file: PathBuf,
    _dir: tempfile_dir::Dir,
}

/// A folder of the run's own, removed when dropped.
mod tempfile_dir {
    pub struct Dir(pub std::path::PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            std::fs::remove_dir_all(&self.0).ok();
        }
    }
}

impl Cluster {
    /// Starts Redis on `port + 3` and nodes on `port` and `port + 1` of `floor`, on
    /// `database_url`; each rolling restart then starts them on `restart_as` and `floor` in turn.
    pub async fn start(floor: &Path, restart_as: Option<&Path>, port: u16, database_url: &str) -> anyhow::Result<Self> {
        if !Path::new(LIBFAKETIME).exists() {
            bail!("{LIBFAKETIME} is missing (Debian's libfaketime): the clock nemesis needs it");
        }
        let dir = std::env::temp_dir().join(format!("floor-history-{}", Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).context("a folder for the run")?;
        let clock_file = dir.join("offset");
        std::fs::write(&clock_file, "+0").context("the clock's offset")?;
        let proxy = FaultProxy::start(&format!("{}:{}", POSTGRES.0, POSTGRES.1)).await;
        let proxied = proxy.in_front_of_postgres(database_url, POSTGRES.1);
        let db = sea_orm::Database::connect(database_url).await.context("connecting to the run's database")?;
        let redis = start_redis(port + 3)?;
        wait_for_port(port + 3).await?;
        let mut cluster = Self {
            floor: floor.to_owned(),
            other: restart_as.map(Path::to_owned),
            releases: vec![crate::server::version_of(floor).await?],
            port,
            nodes: [None, None],
            redis: Some(redis),
            proxy,
            database_url: proxied,
            db,
            clock_file,
            _dir: tempfile_dir::Dir(dir),
        };
        for node in 0..2 {
            cluster.nodes[node] = Some(cluster.start_node(node).await?);
        }
        Ok(cluster)
    }

    /// `http://127.0.0.1:port` of each node.
    pub fn bases(&self) -> Vec<String> {
        (0..2u16).map(|node| format!("http://127.0.0.1:{}", self.port + node)).collect()
    }

    /// The first node, for the preparation (its sign-in codes).
    pub fn first(&mut self) -> anyhow::Result<&mut Server> {
        self.nodes[0].as_mut().context("the first node runs")
    }

    async fn start_node(&self, node: usize) -> anyhow::Result<Server> {
        let port = self.port + u16::try_from(node)?;
        let base = format!("http://127.0.0.1:{port}");
        let redis = format!("redis://127.0.0.1:{}/?protocol=resp3", self.port + 3);
        let clock = self.clock_file.display().to_string();
        let mut env: Vec<(&str, &str)> = UNLIMITED_RATES.to_vec();
        env.push(("NODE_URL", &base));
        if node == 1 {
            env.extend([
                ("LD_PRELOAD", LIBFAKETIME),
                ("FAKETIME_TIMESTAMP_FILE", clock.as_str()),
                ("FAKETIME_CACHE_DURATION", "1"),
                ("FAKETIME_DONT_FAKE_MONOTONIC", "1"),
            ]);
        }
        let settings = ServerSettings {
            floor: &self.floor,
            port,
            redis_url: Some(&redis),
            database_url: Some(&self.database_url),
            env: &env,
        };
        let server = Server::start(&settings).await.with_context(|| format!("starting node {}", node + 1))?;
        wait_until_ready(port, node).await?;
        Ok(server)
    }

    /// Breaks what `nemesis` breaks for `window` (a restart: as long as it takes), then heals
    /// it. `games`: the tournaments whose commits are cut. Returns what the cluster saw of the
    /// nemesis biting: the commits cut; Redis refusing connections (1); the second node's
    /// clock found ahead (1); 0 for the nemeses only the clients' requests tell of.
    pub async fn inflict(
        &mut self,
        nemesis: Nemesis,
        shared: &Shared,
        window: Duration,
        games: &[Uuid],
    ) -> anyhow::Result<usize> {
        let mut bit = 0;
        match nemesis {
            Nemesis::ClientCuts => {
                shared.cutting.store(true, Ordering::Relaxed);
                tokio::time::sleep(window).await;
                shared.cutting.store(false, Ordering::Relaxed);
            }
            Nemesis::OwnerPaused => {
                let owner = self.owner().await?;
                let pid = self.nodes[owner].as_ref().context("the owner runs")?.pid();
                signal(pid, "STOP").await?;
                tokio::time::sleep(window).await;
                signal(pid, "CONT").await?;
            }
            Nemesis::SlowDatabase => {
                self.proxy.delay(Duration::from_millis(2500));
                tokio::time::sleep(window).await;
                self.proxy.heal();
            }
            Nemesis::CommitCut => {
                // On a busy machine a window may see no commit of the armed game: it stays on
                // (up to three windows more) until it has cut one, or it tested nothing.
                let (until, cuts) = (Instant::now() + window, self.proxy.cuts());
                let at_most = until + window * 3;
                while Instant::now() < until || (self.proxy.cuts() == cuts && Instant::now() < at_most) {
                    let game = games[rand::random_range(0..games.len())];
                    let cut = if rand::random::<bool>() { Cut::AfterCommit } else { Cut::BeforeCommit };
                    self.proxy.cut_at_commit(game, cut);
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                self.proxy.disarm();
                bit = self.proxy.cuts() - cuts;
            }
            Nemesis::RedisDown => {
                if let Some(mut redis) = self.redis.take() {
                    redis.kill().await.ok();
                }
                tokio::time::sleep(window).await;
                bit = usize::from(tokio::net::TcpStream::connect(("127.0.0.1", self.port + 3)).await.is_err());
                self.redis = Some(start_redis(self.port + 3)?);
                wait_for_port(self.port + 3).await?;
            }
            Nemesis::ClockOff => {
                std::fs::write(&self.clock_file, "+2").context("the clock's offset")?;
                tokio::time::sleep(window).await;
                bit = usize::from(self.clock_ahead(shared).await >= 1);
                std::fs::write(&self.clock_file, "+0").context("the clock's offset")?;
            }
            Nemesis::RollingRestart => {
                if let Some(other) = self.other.as_mut() {
                    std::mem::swap(&mut self.floor, other);
                    self.releases.push(crate::server::version_of(&self.floor).await?);
                }
                for node in 0..2 {
                    if let Some(mut server) = self.nodes[node].take() {
                        server.terminate().await?;
                    }
                    self.nodes[node] = Some(self.start_node(node).await?);
                }
            }
        }
        Ok(bit)
    }

    /// How many seconds the second node's clock is ahead of this one's, as its HTTP `Date`
    /// header tells (to the second).
    async fn clock_ahead(&self, shared: &Shared) -> i64 {
        let base = &self.bases()[1];
        let Ok(answer) = shared.http.get(format!("{base}/health")).send().await else { return 0 };
        let told = answer.headers().get("date").and_then(|date| date.to_str().ok()).map(str::to_owned);
        let Some(told) = told.and_then(|date| chrono::DateTime::parse_from_rfc2822(&date).ok()) else { return 0 };
        (told.with_timezone(&chrono::Utc) - chrono::Utc::now()).num_seconds()
    }

    /// The node holding the most tournaments' leases now (the first when none holds any).
    async fn owner(&self) -> anyhow::Result<usize> {
        let sql = "SELECT node_url FROM tournament_leases WHERE expires_at > now() \
                   GROUP BY node_url ORDER BY count(*) DESC LIMIT 1";
        let backend = self.db.get_database_backend();
        let row = self.db.query_one_raw(Statement::from_string(backend, sql.to_owned())).await?;
        let url: Option<String> = row.and_then(|row| row.try_get_by_index(0).ok());
        Ok(url.and_then(|url| self.bases().iter().position(|base| *base == url)).unwrap_or(0))
    }

    /// Stops the nodes (`SIGTERM`) and Redis.
    pub async fn stop(mut self) {
        for server in self.nodes.iter_mut().filter_map(Option::take) {
            server.stop().await.ok();
        }
        if let Some(mut redis) = self.redis.take() {
            redis.kill().await.ok();
        }
        self.db.close().await.ok();
    }
}

async fn signal(pid: u32, signal: &str) -> anyhow::Result<()> {
    let status = Command::new("kill").arg(format!("-{signal}")).arg(pid.to_string()).status().await?;
    if !status.success() {
        bail!("kill -{signal} {pid}: {status}");
    }
    Ok(())
}
