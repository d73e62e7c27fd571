//! A history checker in the spirit of Jepsen's Elle and Knossos (`floor-bench history`, and
//! CI's short run in tests/api/history.rs): a workload of many clients over two nodes records
//! every operation with its outcome while nemeses break the cluster on a schedule; after the
//! run each command of unknown outcome is sent again with its key until it is known, the
//! database is read, and the checker says what no correct server lets happen.

pub mod check;
pub mod cluster;
pub mod explain;
pub mod model;
pub mod workload;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context;
use reqwest::Method;
use sea_orm::{ConnectionTrait, DatabaseConnection, Statement};
use serde_json::{Value, json};
use uuid::Uuid;

use self::check::Anomaly;
use self::cluster::{Cluster, Nemesis};
use self::model::{Observed, Record, Row};
use self::workload::{Game, Player, Shared};
use crate::database::FreshDatabase;
use crate::setup::Api;

/// What a run is made of.
pub struct Settings {
    pub floor: PathBuf,
    /// Each rolling restart starts the nodes on the other binary, this one first: the run
    /// then holds an upgrade and a rollback (`floor-bench history --restart-as`).
    pub restart_as: Option<PathBuf>,
    /// Nodes on `port` and `port + 1`, Redis on `port + 3`.
    pub port: u16,
    pub postgres_url: String,
    /// Operations to record at least; the schedule of nemeses runs at least once whole.
    pub operations: usize,
    /// Running tournaments, two game clients each.
    pub games: usize,
    /// Desk clients, `PLAYERS_PER_DESK` players each.
    pub desks: usize,
    /// How long each nemesis lasts (a rolling restart: as long as it takes).
    pub window: Duration,
}

/// Players each desk client registers and cancels.
const PLAYERS_PER_DESK: usize = 8;
/// Walk-ins seated at each running tournament.
const SEATED: usize = 18;
/// Seats of each registering tournament: a waitlist forms behind them.
const DESK_SEATS: usize = 10;
/// Healthy time between two nemeses.
const GAP: Duration = Duration::from_secs(2);

/// What a run found.
pub struct Report {
    pub operations: usize,
    pub seconds: f64,
    /// Per nemesis (at the operation's invocation), per outcome.
    pub by_nemesis: BTreeMap<String, BTreeMap<&'static str, usize>>,
    /// Per kind of operation, per outcome.
    pub by_kind: BTreeMap<&'static str, BTreeMap<&'static str, usize>>,
    /// Per kind of operation and nemesis, why outcomes stayed unknown (as first answered).
    pub unknown_why: BTreeMap<(&'static str, String, String), usize>,
    /// Operations whose first answer was unknown and that were resolved by sending again.
    pub resolved: usize,
    /// Commands with a key whose outcome stayed unknown after the run (none, when healthy).
    pub unresolved: usize,
    /// Transactions cut at their `COMMIT`.
    pub commit_cuts: usize,
    /// Each nemesis, as many times as it was inflicted.
    pub inflicted: BTreeMap<&'static str, usize>,
    pub anomalies: Vec<Anomaly>,
    /// Each anomaly told in full (`explain`), in the same order.
    pub explained: Vec<String>,
    /// Per nemesis, how often it was seen biting (see `bites`): a nemesis at 0 tested nothing.
    pub bites: BTreeMap<&'static str, usize>,
    /// Per nemesis, the reads and joins that said nothing of what their client had seen and
    /// were answered older than it ([`check::unsaid_behind`]): what the contract allows them.
    pub unsaid_behind: BTreeMap<String, usize>,
    /// The releases the nodes ran, in turn (`floor --version`): one, or the two of an upgrade
    /// and rollback run.
    pub releases: Vec<String>,
}

/// Runs the workload under every nemesis, resolves, reads the database and checks.
pub async fn run(settings: &Settings) -> anyhow::Result<Report> {
    let database = FreshDatabase::make(Some(&settings.postgres_url)).await?;
    let url = database.url.clone().context("a PostgreSQL database")?;
    let outcome = async {
        let mut cluster = Cluster::start(&settings.floor, settings.restart_as.as_deref(), settings.port, &url).await?;
        let report = run_on(settings, &mut cluster).await;
        cluster.stop().await;
        report
    }
    .await;
    database.drop_it().await;
    outcome
}

async fn run_on(settings: &Settings, cluster: &mut Cluster) -> anyhow::Result<Report> {
    let bases = cluster.bases();
    let origin = bases[0].clone();
    let api = Api::sign_in(cluster.first()?, &origin).await?;
    let venue = api.venue().await?;
    let mut games = Vec::new();
    for n in 0..settings.games {
        games.push(start_game(&api, &venue, n).await?);
    }
    let rush = Uuid::parse_str(&api.schedule(&venue, chrono::Duration::hours(6), DESK_SEATS, "Наплыв").await?)?;
    let churn = Uuid::parse_str(&api.schedule(&venue, chrono::Duration::hours(6), DESK_SEATS, "Текучка").await?)?;
    let phones: Vec<String> = (0..settings.desks * PLAYERS_PER_DESK).map(|n| format!("+7992{n:07}")).collect();
    let answers = api.sign_in_answers(cluster.first()?, &phones).await?;
    let mut players = Vec::new();
    for answer in answers {
        let user = answer["user"]["id"].as_str().context("no user in the sign-in answer")?.parse()?;
        let token = answer["accessToken"].as_str().context("no accessToken")?.to_owned();
        players.push(Player { user, token });
    }

    let http = reqwest::Client::builder().pool_max_idle_per_host(64).build()?;
    let shared = Arc::new(Shared::new(bases, http));
    let mut clients = tokio::task::JoinSet::new();
    let mut client = 0;
    for game in &games {
        for _ in 0..2 {
            clients.spawn(workload::play(shared.clone(), client, game.clone(), api.token.clone()));
            client += 1;
        }
    }
    for desk in players.chunks(PLAYERS_PER_DESK) {
        clients.spawn(workload::desk(shared.clone(), client, desk.to_vec(), rush, churn));
        client += 1;
    }

    let began = Instant::now();
    let game_ids: Vec<Uuid> = games.iter().map(|game| game.id).collect();
    let mut inflicted: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut seen_by_cluster: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut windows: Vec<Window> = Vec::new();
    let mut cycle = 0;
    while cycle == 0 || shared.operations.load(Ordering::Relaxed) < settings.operations {
        for nemesis in Nemesis::ALL {
            tokio::time::sleep(GAP).await;
            set_nemesis(&shared, nemesis.name());
            let from_ms = shared.ms();
            let done = cluster.inflict(nemesis, &shared, settings.window, &game_ids).await;
            windows.push(Window { nemesis, from_ms, to_ms: shared.ms() });
            set_nemesis(&shared, "none");
            let bit = done.with_context(|| format!("the nemesis {}", nemesis.name()))?;
            *inflicted.entry(nemesis.name()).or_default() += 1;
            *seen_by_cluster.entry(nemesis.name()).or_default() += bit;
        }
        cycle += 1;
    }
    tokio::time::sleep(GAP).await;
    shared.stop.store(true, Ordering::Relaxed);
    let mut history: Vec<Record> = Vec::new();
    let mut pending = Vec::new();
    for recorded in clients.join_all().await {
        let offset = history.len();
        history.extend(recorded.records);
        pending.extend(recorded.pending.into_iter().map(|mut pending| {
            pending.records.iter_mut().for_each(|index| *index += offset);
            pending
        }));
    }
    let seconds = began.elapsed().as_secs_f64();

    workload::resolve(&shared, &api.token, pending, &mut history, 40).await;
    let observed = observe(&cluster.db, &game_ids, &[rush, churn]).await?;
    let anomalies = check::check(&history, &observed);
    let unsaid_behind = check::unsaid_behind(&history);
    let keys = key_rows(&cluster.db, &explain::keys(&anomalies, &history)).await?;
    let explained = anomalies.iter().map(|anomaly| explain::explain(anomaly, &history, &observed, &keys)).collect();
    let mut report = report(&history, seconds, cluster.proxy.cuts(), inflicted, anomalies);
    report.explained = explained;
    report.bites = bites(&history, &windows, &seen_by_cluster);
    report.unsaid_behind = unsaid_behind;
    report.releases = cluster.releases.clone();
    Ok(report)
}

fn set_nemesis(shared: &Shared, name: &str) {
    *shared.nemesis.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = name.to_owned();
}

/// A tournament of `SEATED` walk-ins, started: its id and the players' registrations.
async fn start_game(api: &Api, venue: &crate::setup::Venue, n: usize) -> anyhow::Result<Game> {
    let id = api.schedule(venue, chrono::Duration::hours(6), SEATED, &format!("Игра {n}")).await?;
    for i in 0..SEATED {
        let player = json!({ "phone": format!("+7991{n:03}{i:04}"), "name": format!("Игрок {i} игры {n}") });
        api.call(Method::POST, &format!("/tournaments/{id}/walk-in"), Some(player)).await?;
    }
    let started = api.call(Method::POST, &format!("/tournaments/{id}/start"), None).await?;
    let registrations = started["tables"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|table| table["seats"].as_array().into_iter().flatten())
        .filter_map(|seat| seat["registrationId"].as_str().and_then(|id| id.parse().ok()))
        .collect();
    Ok(Game { id: id.parse()?, registrations })
}

/// What the database holds: the live commands' audit records by their `occurredAt`, the
/// registrations and capacities of the registering tournaments.
async fn observe(db: &DatabaseConnection, games: &[Uuid], desks: &[Uuid]) -> anyhow::Result<Observed> {
    let backend = db.get_database_backend();
    let list = |ids: &[Uuid]| ids.iter().map(|id| format!("'{id}'")).collect::<Vec<_>>().join(",");
    let audits = format!(
        "SELECT CAST(details AS TEXT), action, created_at FROM audit_log \
         WHERE target_type = 'tournament' AND target_id IN ({})",
        list(games)
    );
    let mut observed = Observed::default();
    for row in db.query_all_raw(Statement::from_string(backend, audits)).await? {
        let details: Value = serde_json::from_str(&row.try_get_by_index::<String>(0)?)?;
        let Some(at) = details["occurredAt"].as_str() else { continue };
        let stamp = chrono::DateTime::parse_from_rfc3339(at)?.timestamp_millis();
        *observed.applied.entry(stamp).or_default() += 1;
        let action: String = row.try_get_by_index(1)?;
        let created_at: chrono::DateTime<chrono::Utc> = row.try_get_by_index(2)?;
        observed.audits.entry(stamp).or_default().push(format!("{action} written at {created_at}: {details}"));
    }
    let rows = format!(
        "SELECT id, tournament_id, user_id, CAST(status AS TEXT), created_at FROM registrations \
         WHERE tournament_id IN ({}) AND user_id IS NOT NULL",
        list(desks)
    );
    for row in db.query_all_raw(Statement::from_string(backend, rows)).await? {
        observed.rows.push(Row {
            id: row.try_get_by_index(0)?,
            tournament: row.try_get_by_index(1)?,
            user: row.try_get_by_index(2)?,
            status: row.try_get_by_index(3)?,
            created_at: row.try_get_by_index(4)?,
        });
    }
    let capacities = format!("SELECT id, capacity FROM tournaments WHERE id IN ({})", list(desks));
    for row in db.query_all_raw(Statement::from_string(backend, capacities)).await? {
        let capacity: i32 = row.try_get_by_index(1)?;
        observed.capacity.insert(row.try_get_by_index(0)?, i64::from(capacity));
    }
    Ok(observed)
}

/// The `idempotency_keys` row of each of `keys`, as text, by key.
async fn key_rows(db: &DatabaseConnection, keys: &[&str]) -> anyhow::Result<HashMap<String, String>> {
    if keys.is_empty() {
        return Ok(HashMap::new());
    }
    let list = keys.iter().map(|key| format!("'{}'", key.replace('\'', ""))).collect::<Vec<_>>().join(",");
    let sql = format!(
        "SELECT key, status_code, response_body, created_at, kept_until, tournament_id FROM idempotency_keys \
         WHERE key IN ({list})"
    );
    let mut rows = HashMap::new();
    for row in db.query_all_raw(Statement::from_string(db.get_database_backend(), sql)).await? {
        let key: String = row.try_get_by_index(0)?;
        let status: Option<i32> = row.try_get_by_index(1)?;
        let body: Option<String> = row.try_get_by_index(2)?;
        let created_at: chrono::DateTime<chrono::Utc> = row.try_get_by_index(3)?;
        let kept_until: Option<chrono::DateTime<chrono::Utc>> = row.try_get_by_index(4)?;
        let tournament: Option<Uuid> = row.try_get_by_index(5)?;
        let text = format!(
            "kept at {created_at} until {kept_until:?} for {tournament:?}: status {status:?}, {}",
            body.unwrap_or_default()
        );
        rows.insert(key, text);
    }
    Ok(rows)
}

/// When a nemesis was on, in the run's milliseconds.
struct Window {
    nemesis: Nemesis,
    from_ms: u64,
    to_ms: u64,
}

/// How often each nemesis was seen biting: for the clients' cuts, the requests cut; for the
/// owner paused and PostgreSQL slowed, the requests under way while it was on (sent before it
/// began included: a paused owner holds the requests already handed to it) that were refused
/// `503`, left unknown or slower than a second (a request takes milliseconds, and the server's
/// guards answer a slow database `503` before its 2.5 s are up); for a rolling restart, the
/// requests left unknown (a node gone); for the others, what the cluster saw
/// (`seen_by_cluster`): the commits cut, Redis refusing connections, the second node's clock
/// ahead.
fn bites(
    history: &[Record],
    windows: &[Window],
    seen_by_cluster: &BTreeMap<&'static str, usize>,
) -> BTreeMap<&'static str, usize> {
    let mut bites: BTreeMap<&'static str, usize> = Nemesis::ALL
        .iter()
        .map(|nemesis| (nemesis.name(), seen_by_cluster.get(nemesis.name()).copied().unwrap_or(0)))
        .collect();
    let sendings = history.iter().flat_map(|record| &record.sendings);
    for sending in sendings {
        let took = sending.completed_ms.saturating_sub(sending.invoked_ms);
        let unknown = matches!(sending.outcome, model::Outcome::Unknown(_));
        let held =
            unknown || took >= 1000 || sending.outcome == model::Outcome::Refused("SERVICE_UNAVAILABLE".to_owned());
        let under = windows.iter().filter(|window| {
            matches!(window.nemesis, Nemesis::OwnerPaused | Nemesis::SlowDatabase)
                && sending.invoked_ms < window.to_ms
                && sending.completed_ms > window.from_ms
        });
        for window in under {
            if held && let Some(count) = bites.get_mut(window.nemesis.name()) {
                *count += 1;
            }
        }
        let bit = match Nemesis::ALL.iter().find(|nemesis| nemesis.name() == sending.nemesis) {
            Some(Nemesis::ClientCuts) => sending.outcome == model::Outcome::Unknown("cut".to_owned()),
            Some(Nemesis::RollingRestart) => unknown,
            _ => false,
        };
        if bit && let Some(count) = bites.get_mut(sending.nemesis.as_str()) {
            *count += 1;
        }
    }
    bites
}

fn report(
    history: &[Record],
    seconds: f64,
    commit_cuts: usize,
    inflicted: BTreeMap<&'static str, usize>,
    anomalies: Vec<Anomaly>,
) -> Report {
    let mut by_nemesis: BTreeMap<String, BTreeMap<&'static str, usize>> = BTreeMap::new();
    let mut by_kind: BTreeMap<&'static str, BTreeMap<&'static str, usize>> = BTreeMap::new();
    let mut unknown_why = BTreeMap::new();
    let mut resolved = 0;
    let mut unresolved = 0;
    for record in history {
        *by_nemesis.entry(record.nemesis.clone()).or_default().entry(record.outcome.kind()).or_default() += 1;
        *by_kind.entry(record.op.kind()).or_default().entry(record.outcome.kind()).or_default() += 1;
        if let Some(model::Outcome::Unknown(why)) = record.first.as_ref().or(Some(&record.outcome)) {
            *unknown_why.entry((record.op.kind(), record.nemesis.clone(), why.clone())).or_default() += 1;
        }
        let keyed = matches!(record.op, model::Op::Live { key: Some(_), .. });
        match (&record.first, &record.outcome) {
            (_, model::Outcome::Unknown(_)) if keyed => unresolved += 1,
            (Some(model::Outcome::Unknown(_)), _) => resolved += 1,
            _ => {}
        }
    }
    Report {
        operations: history.len(),
        seconds,
        by_nemesis,
        by_kind,
        unknown_why,
        resolved,
        unresolved,
        commit_cuts,
        inflicted,
        anomalies,
        explained: Vec::new(),
        bites: BTreeMap::new(),
        unsaid_behind: BTreeMap::new(),
        releases: Vec::new(),
    }
}

impl Report {
    /// The report as the benchmark prints it.
    pub fn text(&self) -> String {
        let mut text = format!("nodes ran: {}\n", self.releases.join(", then "));
        text.push_str(&format!(
            "history: {} operations in {:.1} s; {} unknown at first and resolved by sending again, {} left \
             unknown (with a key); {} transactions cut at COMMIT\n",
            self.operations, self.seconds, self.resolved, self.unresolved, self.commit_cuts
        ));
        let counts = |counts: &BTreeMap<&str, usize>| {
            ["ok", "refused", "unknown"].map(|kind| format!("{kind} {}", counts.get(kind).unwrap_or(&0))).join(", ")
        };
        for (nemesis, counts_of) in &self.by_nemesis {
            let times = self.inflicted.get(nemesis.as_str()).map_or(String::new(), |n| format!(" (×{n})"));
            let bit = self.bites.get(nemesis.as_str()).map_or(String::new(), |n| format!("; bit {n} times"));
            text.push_str(&format!("  nemesis {nemesis}{times}: {}{bit}\n", counts(counts_of)));
        }
        for (kind, counts_of) in &self.by_kind {
            text.push_str(&format!("  {kind}: {}\n", counts(counts_of)));
        }
        let mut unknown: Vec<_> = self.unknown_why.iter().collect();
        unknown.sort_by_key(|(_, n)| std::cmp::Reverse(**n));
        for ((kind, nemesis, why), n) in unknown.into_iter().take(12) {
            text.push_str(&format!("  unknown at first: {n} × {kind} in {nemesis}: {why}\n"));
        }
        let unsaid: Vec<String> = self.unsaid_behind.iter().map(|(nemesis, n)| format!("{n} in {nemesis}")).collect();
        text.push_str(&format!(
            "reads and joins saying nothing seen, answered older than their client had: {}\n",
            if unsaid.is_empty() { "none".to_owned() } else { unsaid.join(", ") }
        ));
        text.push_str(&format!("anomalies: {}\n", self.anomalies.len()));
        for explained in self.explained.iter().take(50) {
            text.push_str(&format!("  {explained}\n"));
        }
        text
    }

    /// Every nemesis inflicted at least once.
    pub fn every_nemesis_inflicted(&self) -> bool {
        Nemesis::ALL.iter().all(|nemesis| self.inflicted.contains_key(nemesis.name()))
    }

    /// The nemeses never seen biting: each tested nothing.
    pub fn toothless(&self) -> Vec<&'static str> {
        Nemesis::ALL
            .iter()
            .map(|nemesis| nemesis.name())
            .filter(|name| self.bites.get(name).is_none_or(|n| *n == 0))
            .collect()
    }

    /// Counts by nemesis and outcome, as JSON.
    pub fn json(&self) -> Value {
        json!({
            "releases": self.releases,
            "operations": self.operations,
            "seconds": self.seconds,
            "byNemesis": self.by_nemesis,
            "byKind": self.by_kind,
            "resolved": self.resolved,
            "unresolved": self.unresolved,
            "commitCuts": self.commit_cuts,
            "bites": self.bites,
            "unsaidBehind": self.unsaid_behind,
            "anomalies": self.explained,
        })
    }
}
