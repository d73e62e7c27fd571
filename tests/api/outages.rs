//! PostgreSQL going away under running `floor serve` nodes, as a restart or a failover of the
//! database does. A request that needs it is answered `503 SERVICE_UNAVAILABLE` with
//! `Retry-After` within seconds, never held for half a minute nor answered `500`; presses keep
//! coming every 200 ms and each is answered in time, none acknowledged unless it was kept;
//! what is kept in memory (a running tournament's LiveState, the agenda) and liveness still
//! answer; and within seconds of PostgreSQL being back the presses go through again. The
//! tests run a PostgreSQL of their own (initdb and pg_ctl, as the `postgres` user when run as
//! root) to stop and start it, never the machine's.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use sea_orm::{ConnectionTrait, Database};
use serde_json::{Value, json};
use tokio::task::JoinSet;
use uuid::Uuid;

use crate::fault_proxy::FaultProxy;
use crate::helpers::{Reply, TestApp, spawn_on, test_redis_url};
use crate::live::{Ready, ready, version};
use crate::nodes::{Node, live_actors, send_press};
use crate::staffing::id_of;

/// How often the club presses.
const PRESS_EVERY: Duration = Duration::from_millis(200);
/// The longest any press may wait for its answer, outage or not.
const ANSWERED_WITHIN: Duration = Duration::from_secs(4);
/// How long PostgreSQL stays down: three leases.
const OUTAGE: Duration = Duration::from_secs(15);
/// How soon after PostgreSQL is back a press goes through again.
const RECOVERED_WITHIN: Duration = Duration::from_secs(5);
/// The structure's levels, an hour each: no segment runs out during a test.
const LEVELS: usize = 50;
/// The level the presses swing around, next and prev in turn: far from both ends, in whatever
/// order the presses in flight at once are applied.
const MIDDLE: usize = 25;

/// A PostgreSQL server of the test's own, in a temporary folder on a free port; stopped, and
/// its files removed, when dropped.
struct OwnPostgres {
    bin: PathBuf,
    folder: tempfile::TempDir,
    port: u16,
    /// The tests run as root, which initdb and the server refuse: they run as `postgres`.
    as_postgres: bool,
}

impl OwnPostgres {
    /// Creates the cluster, starts it and makes the database `floor` (trust authentication,
    /// 127.0.0.1 only). `None` outside CI when PostgreSQL's server programs are not installed.
    async fn start() -> Option<Self> {
        let Some(bin) = server_programs() else {
            assert!(std::env::var_os("CI").is_none(), "PostgreSQL's initdb and pg_ctl must be installed in CI");
            eprintln!("skipping: no initdb and pg_ctl (Debian's postgresql package) and CI is not set");
            return None;
        };
        let folder = tempfile::tempdir().expect("a folder for the cluster");
        let as_postgres = is_root();
        if as_postgres {
            run(Command::new("chown").args(["-R", "postgres:postgres"]).arg(folder.path()));
        }
        let server = Self { bin, folder, port: free_port(), as_postgres };
        let data = server.data();
        run(&mut server.command(
            "initdb",
            &["-D", &data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"],
        ));
        server.resume().await;
        let admin = Database::connect(format!("postgres://postgres@127.0.0.1:{}/postgres", server.port))
            .await
            .expect("the new server answers");
        admin.execute_unprepared("CREATE DATABASE floor").await.expect("the database made");
        admin.close().await.ok();
        Some(server)
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/floor", self.port)
    }

    fn data(&self) -> String {
        self.folder.path().join("data").display().to_string()
    }

    /// `program` of PostgreSQL's server programs with `args`, as the user who owns the cluster.
    fn command(&self, program: &str, args: &[&str]) -> Command {
        let program = self.bin.join(program);
        let mut command = if self.as_postgres {
            let mut runuser = Command::new("runuser");
            runuser.args(["-u", "postgres", "--"]).arg(program);
            runuser
        } else {
            Command::new(program)
        };
        command.args(args);
        command
    }

    /// Starts the server (again, on the same port) and returns once it accepts connections.
    async fn resume(&self) {
        let options =
            format!("-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off", self.port, self.folder.path().display());
        let log = self.folder.path().join("server.log").display().to_string();
        let mut start =
            self.command("pg_ctl", &["-D", &self.data(), "-l", &log, "-o", &options, "-w", "-t", "60", "start"]);
        tokio::task::spawn_blocking(move || run(&mut start)).await.expect("pg_ctl ran");
    }

    /// Stops the server as an operator's fast shutdown does: every client is cut off at once.
    async fn stop(&self) {
        let mut stop = self.command("pg_ctl", &["-D", &self.data(), "-m", "fast", "-w", "stop"]);
        tokio::task::spawn_blocking(move || run(&mut stop)).await.expect("pg_ctl ran");
    }

    /// Sends `signal` to the postmaster and every process it started.
    fn signal(&self, signal: &str) {
        let pid_file = std::fs::read_to_string(self.folder.path().join("data").join("postmaster.pid"))
            .expect("the server's pid file");
        let postmaster: u32 = pid_file.lines().next().and_then(|pid| pid.trim().parse().ok()).expect("a pid");
        let mut pids = vec![postmaster];
        for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<u32>().ok()) else { continue };
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            // `pid (name) state ppid …`: the parent is the second field after the name.
            let parent = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse().ok());
            if parent == Some(postmaster) {
                pids.push(pid);
            }
        }
        run(Command::new("kill").arg(format!("-{signal}")).args(pids.iter().map(u32::to_string)));
    }
}

/// Something that stops PostgreSQL answering without closing a connection, and lets it go on.
trait Freezes {
    fn freeze(&self);
    fn thaw(&self);
}

impl Freezes for OwnPostgres {
    /// Freezes every process of the server (SIGSTOP), as a stalled host or a failover in
    /// progress does: its connections stay open and nothing answers, a new connection included.
    fn freeze(&self) {
        self.signal("STOP");
    }

    /// Lets the frozen server go on from where it stood (SIGCONT).
    fn thaw(&self) {
        self.signal("CONT");
    }
}

impl Freezes for FaultProxy {
    /// Blackholes the node's connections (a partition): open, and nothing passes.
    fn freeze(&self) {
        self.blackhole();
    }

    fn thaw(&self) {
        self.heal();
    }
}

impl Drop for OwnPostgres {
    fn drop(&mut self) {
        // It may be stopped already; the folder goes with `folder`.
        let _ = self.command("pg_ctl", &["-D", &self.data(), "-m", "immediate", "-w", "stop"]).output();
    }
}

/// The folder of initdb and pg_ctl: Debian's newest `/usr/lib/postgresql/<version>/bin`, or
/// wherever `PATH` finds them.
fn server_programs() -> Option<PathBuf> {
    let has_both = |folder: &PathBuf| folder.join("initdb").is_file() && folder.join("pg_ctl").is_file();
    let mut debian: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| Some((entry.file_name().to_str()?.parse().ok()?, entry.path().join("bin"))))
        .filter(|(_, folder)| has_both(folder))
        .collect();
    debian.sort();
    if let Some((_, folder)) = debian.pop() {
        return Some(folder);
    }
    std::env::split_paths(&std::env::var_os("PATH")?).find(has_both)
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free port")
}

#[track_caller]
fn run(command: &mut Command) {
    let out = command.output().expect("the command runs");
    assert!(
        out.status.success(),
        "{command:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A tournament of two players whose structure is [`LEVELS`] hour-long levels, started on
/// `node` and pressed on to level [`MIDDLE`]: the game, and its version then.
pub(crate) async fn started_in_the_middle(
    setup: &TestApp,
    node: &Node,
    client: &reqwest::Client,
    phone: &str,
) -> (Ready, i64) {
    let game = ready(setup, phone, 910, 2).await;
    let owner = Some(game.club.owner.access_token.as_str());
    let levels: Vec<Value> = (1..=LEVELS)
        .map(|n| json!({"kind": "level", "durationMin": 60, "smallBlind": 100 * n, "bigBlind": 200 * n}))
        .collect();
    let body = json!({"name": "Deep", "startingStack": 10000, "levels": levels});
    let template = setup.post(&format!("/organizers/{}/blind-templates", game.club.id), owner, body).await;
    let template_id = id_of(&template.assert_ok()["id"]);
    setup.patch(&format!("/tournaments/{}", game.id), owner, json!({"blindTemplateId": template_id})).await.assert_ok();
    let started = send_press(client, node, &game, &game.path("start"), json!({}), "start").await.expect("sent");
    let mut state = started.assert_ok().clone();
    let level = game.path("level");
    for _ in 0..MIDDLE {
        let key = Uuid::new_v4().to_string();
        let next = send_press(client, node, &game, &level, json!({"direction": "next"}), &key).await;
        state = next.expect("sent").assert_ok().clone();
    }
    assert_eq!(state["clock"]["currentLevelIdx"], MIDDLE, "{state}");
    (game, version(&state))
}

/// A `503` as the contract has it: `SERVICE_UNAVAILABLE`, saying the database is unreachable,
/// with `Retry-After` in whole seconds.
#[track_caller]
fn assert_unavailable(reply: &Reply, what: &str) {
    reply.assert_error(503, "SERVICE_UNAVAILABLE");
    let message = reply.body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("unreachable"), "{what}: {message}");
    let retry_after = reply.headers.get("retry-after").and_then(|value| value.to_str().ok()?.parse::<u64>().ok());
    assert!(retry_after.is_some_and(|seconds| (1..=10).contains(&seconds)), "{what}: Retry-After {retry_after:?}");
}

/// PostgreSQL blinks while nothing happens: the kept reads answer from memory at once, a press
/// and a sign-in are `503` within seconds, liveness stays `200` and readiness `200`, degraded
/// (every node lost it: the balancer has nowhere better to send a client).
async fn a_quiet_blink(pg: &OwnPostgres, nodes: &[&Node], game: &Ready, client: &reqwest::Client) {
    for node in nodes {
        client.get(node.url("/tournaments")).send().await.expect("the agenda").error_for_status().expect("kept");
        client.get(node.url(&game.path("live"))).send().await.expect("live").error_for_status().expect("read");
    }
    pg.stop().await;
    for node in nodes {
        for path in ["/tournaments".to_owned(), game.path("live")] {
            let asked = Instant::now();
            let read = Reply::read(client.get(node.url(&path)).send().await.expect("an answer")).await;
            assert_eq!(read.status, 200, "{path} is kept in memory: {read:?}");
            assert!(asked.elapsed() < Duration::from_millis(500), "{path} took {:?}", asked.elapsed());
        }
        // The probes read what the node's lookout last found: it notices within a second or two.
        // Every node lost it: each stays in the balancer's rotation, degraded.
        let noticed = Instant::now() + Duration::from_secs(3);
        loop {
            let health = Reply::read(client.get(node.url("/health")).send().await.expect("an answer")).await;
            assert_eq!(health.status, 200, "liveness: {health:?}");
            let ready = Reply::read(client.get(format!("{}/ready", node.base)).send().await.expect("an answer")).await;
            assert_eq!(ready.status, 200, "a shared outage takes no node out: {ready:?}");
            if health.body["db"] == "error" && ready.body["status"] == "degraded" {
                assert_eq!(ready.body["dbAnswersElsewhere"], false, "{ready:?}");
                break;
            }
            assert!(Instant::now() < noticed, "the node says its database is down: {health:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }

        let asked = Instant::now();
        let key = Uuid::new_v4().to_string();
        let level = game.path("level");
        let pressed = send_press(client, node, game, &level, json!({"direction": "next"}), &key).await;
        let pressed = pressed.expect("an answer");
        let took = asked.elapsed();
        assert_unavailable(&pressed, "a press");
        let asked = Instant::now();
        let code = client.post(node.url("/auth/otp/request")).json(&json!({"phone": "+79990009199"})).send();
        let code = Reply::read(code.await.expect("an answer")).await;
        let code_took = asked.elapsed();
        assert_unavailable(&code, "a code request");
        eprintln!("quiet blink at {}: a press answered 503 in {took:?}, a code request in {code_took:?}", node.base);
        assert!(took < Duration::from_secs(3) && code_took < Duration::from_secs(3));
    }
    pg.resume().await;
}

/// One press of the loop, as the client saw it.
#[derive(Debug)]
struct Press {
    n: usize,
    /// When it was sent and answered, from the start of the loop.
    sent: Duration,
    took: Duration,
    reply: Reply,
}

impl Press {
    fn answered(&self) -> Duration {
        self.sent + self.took
    }
}

/// Presses the level next and prev in turn every [`PRESS_EVERY`], each with a fresh
/// `Idempotency-Key`, round the `bases` in turn, until `pressing` goes false; every press is
/// its own request, so a slow answer holds up none of the next.
async fn press_loop(
    bases: Vec<String>,
    path: String,
    token: String,
    pressing: Arc<AtomicBool>,
    t0: Instant,
) -> Vec<Press> {
    let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().expect("a client");
    let mut tick = tokio::time::interval(PRESS_EVERY);
    let mut presses = JoinSet::new();
    let mut n = 0;
    while pressing.load(Ordering::SeqCst) {
        tick.tick().await;
        let direction = if n % 2 == 0 { "next" } else { "prev" };
        let request = client
            .post(format!("{}/api/v1{path}", bases[n % bases.len()]))
            .bearer_auth(&token)
            .header("idempotency-key", Uuid::new_v4().to_string())
            .json(&json!({"direction": direction}));
        presses.spawn(async move {
            let sent = t0.elapsed();
            let reply = Reply::read(request.send().await.expect("every press is answered")).await;
            Press { n, sent, took: t0.elapsed() - sent, reply }
        });
        n += 1;
    }
    let mut presses = presses.join_all().await;
    presses.sort_by_key(|press| press.n);
    presses
}

/// One read of the loop: what was read, when (from the traffic's start), its status and how
/// long it took.
struct Read {
    url: String,
    sent: Duration,
    status: u16,
    took: Duration,
}

impl Read {
    /// Fails the test unless the read answered `200` within `within`, saying when it was made.
    fn assert_answered_within(&self, within: Duration) {
        let Self { url, sent, status, took } = self;
        let at = seconds(*sent);
        assert_eq!(*status, 200, "{url}, read at {at} s, answered {status} after {took:?}");
        assert!(*took < within, "{url}, read at {at} s, took {took:?}");
    }
}

/// Reads of `path` on every node every 250 ms until `reading` goes false.
async fn read_loop(urls: Vec<String>, reading: Arc<AtomicBool>, t0: Instant) -> Vec<Read> {
    let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().expect("a client");
    let mut reads = Vec::new();
    while reading.load(Ordering::SeqCst) {
        for url in &urls {
            let asked = Instant::now();
            let status = client.get(url).send().await.map_or(0, |answer| answer.status().as_u16());
            reads.push(Read { url: url.clone(), sent: asked - t0, status, took: asked.elapsed() });
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    reads
}

/// The club pressing every [`PRESS_EVERY`] and a reader of the live state and liveness on
/// every node, from when it starts until [`Traffic::stop`].
struct Traffic {
    t0: Instant,
    pressing: Arc<AtomicBool>,
    presses: tokio::task::JoinHandle<Vec<Press>>,
    reading: Arc<AtomicBool>,
    reads: tokio::task::JoinHandle<Vec<Read>>,
}

impl Traffic {
    fn start(nodes: &[&Node], game: &Ready) -> Self {
        let t0 = Instant::now();
        let pressing = Arc::new(AtomicBool::new(true));
        let bases: Vec<String> = nodes.iter().map(|node| node.base.clone()).collect();
        let token = game.club.owner.access_token.clone();
        let presses = tokio::spawn(press_loop(bases, game.path("level"), token, pressing.clone(), t0));
        let reading = Arc::new(AtomicBool::new(true));
        let urls = nodes.iter().flat_map(|node| [node.url(&game.path("live")), node.url("/health")]).collect();
        let reads = tokio::spawn(read_loop(urls, reading.clone(), t0));
        Self { t0, pressing, presses, reading, reads }
    }

    /// How long it has run.
    fn elapsed(&self) -> Duration {
        self.t0.elapsed()
    }

    /// Stops both loops once every press sent is answered: the presses, in order, and the reads.
    async fn stop(self) -> (Vec<Press>, Vec<Read>) {
        self.pressing.store(false, Ordering::SeqCst);
        self.reading.store(false, Ordering::SeqCst);
        let presses = self.presses.await.expect("the presses");
        for press in &presses {
            let version = press.reply.body["version"].as_i64().map_or_else(String::new, |v| format!(" v{v}"));
            eprintln!(
                "press {:3} sent {:>6} s answered {} in {:>5} ms{version}",
                press.n,
                seconds(press.sent),
                press.reply.status.as_u16(),
                press.took.as_millis()
            );
        }
        (presses, self.reads.await.expect("the reads"))
    }
}

/// The versions the presses answered `200` with, in order.
fn acknowledged_versions(presses: &[Press]) -> Vec<i64> {
    let mut acknowledged: Vec<i64> =
        presses.iter().filter(|press| press.reply.status == 200).map(|press| version(&press.reply.body)).collect();
    acknowledged.sort_unstable();
    acknowledged
}

/// A moment of a test, in seconds from its start.
fn seconds(at: Duration) -> String {
    format!("{:.2}", at.as_secs_f64())
}

/// The presses of the loop while PostgreSQL is stopped for [`OUTAGE`] and started again, on
/// `nodes` in turn, checked against everything this file promises.
async fn ride_out_an_outage(pg: &OwnPostgres, nodes: &[&Node], game: &Ready, acknowledged_before: i64) {
    let traffic = Traffic::start(nodes, game);
    tokio::time::sleep(Duration::from_secs(2)).await;
    pg.stop().await;
    let down = traffic.elapsed();
    tokio::time::sleep(OUTAGE).await;
    let restarting = traffic.elapsed();
    pg.resume().await;
    let back = traffic.elapsed();
    tokio::time::sleep(RECOVERED_WITHIN + Duration::from_secs(3)).await;
    eprintln!(
        "PostgreSQL stopped at {} s, started again at {} s, accepting at {} s",
        seconds(down),
        seconds(restarting),
        seconds(back)
    );
    let (presses, reads) = traffic.stop().await;

    // Every press answered in time, 200 or a 503 as the contract has it.
    for press in &presses {
        assert!(press.took < ANSWERED_WITHIN, "press {} took {:?}", press.n, press.took);
        match press.reply.status.as_u16() {
            200 => {}
            503 => assert_unavailable(&press.reply, &format!("press {}", press.n)),
            _ => panic!("press {} answered {:?}", press.n, press.reply),
        }
    }
    // While PostgreSQL was down, nothing went through. (It accepts connections a little before
    // pg_ctl, polling, says so.)
    let during: Vec<&Press> =
        presses.iter().filter(|press| press.sent >= down && press.answered() <= restarting).collect();
    assert!(during.len() >= 50, "{} presses met the outage", during.len());
    assert!(during.iter().all(|press| press.reply.status == 503), "a press went through without PostgreSQL");
    let slowest = during.iter().map(|press| press.took).max().unwrap_or_default();
    let mean = during.iter().map(|press| press.took).sum::<Duration>() / u32::try_from(during.len()).unwrap_or(1);
    eprintln!("{} presses during the outage, each 503 in {mean:?} on average, {slowest:?} at most", during.len());

    // Back within seconds, and for good.
    let first_through = presses
        .iter()
        .filter(|press| press.reply.status == 200 && press.answered() > restarting)
        .map(Press::answered)
        .min()
        .expect("a press went through after the outage");
    eprintln!(
        "the first press went through at {} s: {:?} after pg_ctl start began, {:?} after it reported ready",
        seconds(first_through),
        first_through - restarting,
        first_through.saturating_sub(back)
    );
    assert!(first_through < back + RECOVERED_WITHIN, "recovered at {first_through:?}, PostgreSQL at {back:?}");
    for press in presses.iter().filter(|press| press.sent > back + RECOVERED_WITHIN) {
        assert_eq!(press.reply.status, 200, "press {} after the recovery: {:?}", press.n, press.reply);
    }

    // Every press acknowledged is kept, once; none refused was applied.
    let acknowledged = acknowledged_versions(&presses);
    let expected: Vec<i64> =
        (1..=i64::try_from(acknowledged.len()).expect("a count")).map(|n| acknowledged_before + n).collect();
    assert_eq!(acknowledged, expected, "one version per acknowledged press, none lost, none doubled");
    let client = reqwest::Client::new();
    for node in nodes {
        let live = Reply::read(client.get(node.url(&game.path("live"))).send().await.expect("an answer")).await;
        assert_eq!(version(live.assert_ok()), expected.last().copied().unwrap_or(acknowledged_before), "{}", node.base);
        eprintln!("{} runs {:?} tournament actors", node.base, live_actors(&client, node).await);
    }

    // Reads kept in memory and liveness answered throughout.
    for read in &reads {
        // The live state is read from memory; liveness says how the database is, after a probe
        // that gives up with the pool's acquire timeout.
        let within = if read.url.ends_with("/live") { Duration::from_secs(1) } else { Duration::from_secs(3) };
        read.assert_answered_within(within);
    }
    eprintln!("{} reads of the live state and liveness, every one 200", reads.len());
}

/// How many times a node's log reports the database unreachable.
fn unreachable_reports(logs: &std::path::Path, name: &str) -> usize {
    let log = std::fs::read_to_string(logs.join(format!("{name}.log"))).unwrap_or_default();
    log.lines().filter(|line| line.contains("the database is unreachable")).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_turns_requests_away_fast_while_postgresql_is_down_and_loses_no_acknowledged_press() {
    let Some(pg) = OwnPostgres::start().await else { return };
    let setup = spawn_on(&pg.url()).await;
    let logs = tempfile::tempdir().expect("a folder for the logs");
    let node = Node::start(&pg.url(), None, logs.path(), "alone").await;
    let client = reqwest::Client::new();
    let (game, version) = started_in_the_middle(&setup, &node, &client, "+79990009100").await;

    a_quiet_blink(&pg, &[&node], &game, &client).await;
    ride_out_an_outage(&pg, &[&node], &game, version).await;
    eprintln!("the node reported the outages in {} log lines", unreachable_reports(logs.path(), "alone"));
}

/// With several nodes the outage outlives the tournament's lease: once PostgreSQL is back, a
/// node (the one that ran it, or the other) runs it again and presses to either go through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_ride_out_a_postgresql_outage_longer_than_a_lease() {
    let Some(redis) = test_redis_url().await else { return };
    let Some(pg) = OwnPostgres::start().await else { return };
    let setup = spawn_on(&pg.url()).await;
    let logs = tempfile::tempdir().expect("a folder for the logs");
    let first = Node::start(&pg.url(), Some(redis), logs.path(), "first").await;
    let second = Node::start(&pg.url(), Some(redis), logs.path(), "second").await;
    let client = reqwest::Client::new();
    let (game, version) = started_in_the_middle(&setup, &first, &client, "+79990009200").await;
    assert_eq!(live_actors(&client, &first).await, Some(1.0), "the node that started it runs it");

    a_quiet_blink(&pg, &[&first, &second], &game, &client).await;
    ride_out_an_outage(&pg, &[&first, &second], &game, version).await;
    let actors = (live_actors(&client, &first).await, live_actors(&client, &second).await);
    assert!(
        matches!(actors, (Some(1.0), Some(0.0)) | (Some(0.0), Some(1.0))),
        "one owner after the outage: {actors:?}"
    );
}

/// How soon after a frozen PostgreSQL goes on a press goes through again.
const THAWED_WITHIN: Duration = Duration::from_secs(2);

/// The presses of the loop while PostgreSQL is frozen for [`OUTAGE`] and thawed: each
/// answered within [`ANSWERED_WITHIN`] (`200`; `503` with `Retry-After`; or, for a press whose
/// transaction was under way when the server froze, `500`, its outcome unknown), through again
/// within [`THAWED_WITHIN`] of the thaw, every acknowledged press kept once, the reads from
/// memory and liveness answered throughout.
async fn ride_out_a_freeze(pg: &dyn Freezes, nodes: &[&Node], game: &Ready, acknowledged_before: i64) {
    let traffic = Traffic::start(nodes, game);
    tokio::time::sleep(Duration::from_secs(2)).await;
    pg.freeze();
    let frozen = traffic.elapsed();
    tokio::time::sleep(OUTAGE).await;
    pg.thaw();
    let thawed = traffic.elapsed();
    tokio::time::sleep(THAWED_WITHIN + Duration::from_secs(3)).await;
    eprintln!("PostgreSQL frozen at {} s, thawed at {} s", seconds(frozen), seconds(thawed));
    let (presses, reads) = traffic.stop().await;

    // Every press answered in time: through, refused as the contract has it, or (under way as
    // the server froze) of unknown outcome.
    let under_way = |press: &Press| press.sent <= frozen && press.answered() >= frozen;
    let mut unknown = 0;
    for press in &presses {
        assert!(press.took < ANSWERED_WITHIN, "press {} took {:?}", press.n, press.took);
        match press.reply.status.as_u16() {
            200 => {}
            503 => assert_unavailable(&press.reply, &format!("press {}", press.n)),
            500 if under_way(press) => unknown += 1,
            _ => panic!("press {} answered {:?}", press.n, press.reply),
        }
    }
    let during: Vec<&Press> = presses.iter().filter(|press| press.sent > frozen && press.answered() < thawed).collect();
    assert!(during.len() >= 50, "{} presses met the freeze", during.len());
    assert!(during.iter().all(|press| press.reply.status == 503), "a press went through a frozen PostgreSQL");
    let slowest = during.iter().map(|press| press.took).max().unwrap_or_default();
    let mean = during.iter().map(|press| press.took).sum::<Duration>() / u32::try_from(during.len()).unwrap_or(1);
    eprintln!("{} presses during the freeze, each 503 in {mean:?} on average, {slowest:?} at most", during.len());

    let first_through = presses
        .iter()
        .filter(|press| press.reply.status == 200 && press.sent >= thawed)
        .map(Press::answered)
        .min()
        .expect("a press went through after the thaw");
    eprintln!("the first press sent after the thaw went through {:?} after it", first_through - thawed);
    assert!(first_through < thawed + THAWED_WITHIN, "through again at {first_through:?}, thawed at {thawed:?}");
    for press in presses.iter().filter(|press| press.sent > thawed + THAWED_WITHIN) {
        assert_eq!(press.reply.status, 200, "press {} after the thaw: {:?}", press.n, press.reply);
    }

    // Every press acknowledged is kept, once; a press of unknown outcome may have been applied.
    let mut acknowledged = acknowledged_versions(&presses);
    acknowledged.dedup();
    assert_eq!(acknowledged.len(), presses.iter().filter(|press| press.reply.status == 200).count(), "none doubled");
    let last = acknowledged.last().copied().unwrap_or(acknowledged_before);
    let client = reqwest::Client::new();
    for node in nodes {
        let live = Reply::read(client.get(node.url(&game.path("live"))).send().await.expect("an answer")).await;
        let now = version(live.assert_ok());
        let applied = now - acknowledged_before;
        let kept = i64::try_from(acknowledged.len()).expect("a count");
        assert!(
            now >= last && (kept..=kept + unknown).contains(&applied),
            "{}: version {now}, {kept} acknowledged, {unknown} of unknown outcome",
            node.base
        );
    }

    for read in &reads {
        read.assert_answered_within(Duration::from_secs(1));
    }
    eprintln!("{} reads of the live state and liveness, every one 200", reads.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_answers_every_press_in_time_while_postgresql_is_frozen() {
    let Some(pg) = OwnPostgres::start().await else { return };
    let setup = spawn_on(&pg.url()).await;
    let logs = tempfile::tempdir().expect("a folder for the logs");
    let node = Node::start(&pg.url(), None, logs.path(), "alone").await;
    let client = reqwest::Client::new();
    let (game, version) = started_in_the_middle(&setup, &node, &client, "+79990009300").await;

    ride_out_a_freeze(&pg, &[&node], &game, version).await;
}

/// A partition between the node and PostgreSQL (its connections through a proxy that
/// blackholes them: open, and nothing passes either way) is ridden out as a freeze is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_answers_every_press_in_time_while_its_postgresql_connections_are_blackholed() {
    let Some(far) = BehindAProxy::start("+79990009400").await else { return };
    ride_out_a_freeze(&far.proxy, &[&far.node], &far.game, far.version).await;
}

/// One node reaching a PostgreSQL of the test's own through a [`FaultProxy`], with a game
/// started in the middle of its levels.
struct BehindAProxy {
    node: Node,
    game: Ready,
    /// The game's version once started.
    version: i64,
    proxy: FaultProxy,
    _logs: tempfile::TempDir,
    _pg: OwnPostgres,
}

impl BehindAProxy {
    async fn start(phone: &str) -> Option<Self> {
        let pg = OwnPostgres::start().await?;
        let setup = spawn_on(&pg.url()).await;
        let proxy = FaultProxy::start(&format!("127.0.0.1:{}", pg.port)).await;
        let logs = tempfile::tempdir().expect("a folder for the logs");
        let node = Node::start(&proxy.in_front_of(&pg.url(), pg.port), None, logs.path(), "proxied").await;
        let (game, version) = started_in_the_middle(&setup, &node, &reqwest::Client::new(), phone).await;
        Some(Self { node, game, version, proxy, _logs: logs, _pg: pg })
    }
}

/// PostgreSQL 300 ms away (each answer held that long by the proxy, as a database in another
/// region is): every press still goes through, applied once, and the probes stay green; the
/// presses' times are reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn presses_go_through_with_postgresql_300_ms_away() {
    let Some(far) = BehindAProxy::start("+79990009500").await else { return };
    let (node, game, before) = (&far.node, &far.game, far.version);
    let client = reqwest::Client::new();

    far.proxy.delay(Duration::from_millis(300));
    let level = game.path("level");
    let mut took = Vec::new();
    for n in 0..12 {
        let direction = if n % 2 == 0 { "next" } else { "prev" };
        let key = Uuid::new_v4().to_string();
        let asked = Instant::now();
        let pressed = send_press(&client, node, game, &level, json!({"direction": direction}), &key).await;
        took.push(asked.elapsed());
        let pressed = pressed.expect("an answer");
        assert_eq!(version(pressed.assert_ok()), before + n + 1, "press {n} applied once, in order");
    }
    took.sort();
    let (median, slowest) = (took[took.len() / 2], took[took.len() - 1]);
    eprintln!("12 presses with PostgreSQL 300 ms away: median {median:?}, p99 (the slowest) {slowest:?}");
    for path in ["/api/v1/health", "/ready"] {
        let probe = Reply::read(client.get(format!("{}{path}", node.base)).send().await.expect("an answer")).await;
        assert_eq!((probe.status.as_u16(), &probe.body["db"]), (200, &json!("ok")), "{path}: {probe:?}");
    }
}

/// Readiness tells a node's own trouble from a shared one. PostgreSQL lost by one node while
/// the other reaches it (its connections blackholed): that node's `/ready` turns `503`, so the
/// balancer sends its clients to the other, and `200` again once it answers there. PostgreSQL
/// lost by both (frozen): both stay in, degraded, since neither can be sent anything better.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_takes_out_a_node_that_alone_lost_postgresql_and_no_node_for_a_shared_outage() {
    let Some(redis) = test_redis_url().await else { return };
    let Some(pg) = OwnPostgres::start().await else { return };
    let _setup = spawn_on(&pg.url()).await;
    let proxy = FaultProxy::start(&format!("127.0.0.1:{}", pg.port)).await;
    let logs = tempfile::tempdir().expect("a folder for the logs");
    let cut_off = Node::start(&proxy.in_front_of(&pg.url(), pg.port), Some(redis), logs.path(), "cut-off").await;
    let connected = Node::start(&pg.url(), Some(redis), logs.path(), "connected").await;
    let client = reqwest::Client::new();
    let ready = |node: &Node| {
        let asked = client.get(format!("{}/ready", node.base)).send();
        async move { Reply::read(asked.await.expect("an answer")).await }
    };

    proxy.blackhole();
    let cut = Instant::now();
    let out = loop {
        let probe = ready(&cut_off).await;
        if probe.status == 503 {
            break cut.elapsed();
        }
        assert!(cut.elapsed() < Duration::from_secs(6), "the cut-off node is taken out: {probe:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let probe = ready(&cut_off).await;
    assert_eq!(probe.body["status"], "not_ready", "{probe:?}");
    assert_eq!((&probe.body["db"], &probe.body["dbAnswersElsewhere"]), (&json!("error"), &json!(true)), "{probe:?}");
    let other = ready(&connected).await;
    assert_eq!((other.status.as_u16(), &other.body["status"]), (200, &json!("ready")), "{other:?}");
    eprintln!("the node that alone lost PostgreSQL answered /ready 503 {out:?} after its connections were cut");

    proxy.heal();
    let healed = Instant::now();
    while ready(&cut_off).await.status != 200 {
        assert!(healed.elapsed() < Duration::from_secs(5), "back in once PostgreSQL answers it");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Both lose it: for the outage's whole length neither is ever taken out.
    pg.freeze();
    let frozen = Instant::now();
    let mut degraded = [false, false];
    while frozen.elapsed() < Duration::from_secs(8) {
        for (n, node) in [&cut_off, &connected].into_iter().enumerate() {
            let probe = ready(node).await;
            assert_eq!(probe.status, 200, "a shared outage takes no node out: {probe:?}");
            degraded[n] |= probe.body["status"] == "degraded" && probe.body["db"] == "error";
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    pg.thaw();
    assert_eq!(degraded, [true, true], "each said its database was down");
}
