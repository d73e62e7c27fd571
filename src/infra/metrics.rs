//! What this node measures of itself, for `GET /metrics` (OpenMetrics text, which Prometheus
//! scrapes): requests by route, status and latency; live commands and their latency; how
//! long a broadcast takes; background job runs. What is a state rather than an event (the
//! connected sockets, the tournament actors running here, the database connections) is read
//! when scraped and handed to [`Metrics::render`].

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Metric, Registry};

/// This node's metrics; one per application, shared by everything that records.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    request_seconds: Family<RouteLabels, Histogram, fn() -> Histogram>,
    live_commands: Family<CommandLabels, Counter>,
    registration_groups: Family<GroupLabels, Counter>,
    registration_changes: Family<GroupLabels, Counter>,
    live_command_seconds: Family<CommandName, Histogram, fn() -> Histogram>,
    broadcast_seconds: Histogram,
    broadcast_errors: Counter,
    lease_changes: Family<LeaseLabels, Counter>,
    job_runs: Family<JobLabels, Counter>,
    refusals: Family<RefusalLabels, Counter>,
    sockets: Gauge,
    live_actors: Gauge,
    registration_desks: Gauge,
    db_connections: Family<PoolLabels, Gauge>,
    db_up: Gauge,
    /// Registered only on a node of several (`REDIS_URL`).
    bus_up: Option<Gauge>,
    bus_notes_ignored: Option<Family<IgnoredLabels, Counter>>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    release: &'static str,
    commit: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct IgnoredLabels {
    /// `unknown_kind` (a newer release's) or `unreadable`.
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LeaseLabels {
    /// `taken` (this node took a tournament over) or `lost` (another node took it).
    change: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RefusalLabels {
    /// The limit that refused: `connections`, `connections_per_address`, `slow_body`, ….
    limit: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    route: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: String,
    route: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CommandLabels {
    command: &'static str,
    /// `ok`, or the contract code it was refused with.
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GroupLabels {
    /// `committed`, `failed` (refused as a whole: nothing of it written) or `unknown` (its
    /// `COMMIT` went unanswered and could not be looked up).
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CommandName {
    command: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct JobLabels {
    job: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PoolLabels {
    /// `writer` or `readers` (on PostgreSQL one pool serves both and is reported as `writer`).
    pool: &'static str,
    /// `open` or `idle`.
    state: &'static str,
}

/// Latency buckets from half a millisecond to about 16 seconds, doubling.
fn latency() -> Histogram {
    Histogram::new(exponential_buckets(0.0005, 2.0, 16))
}

/// A database pool's connections when scraped.
#[derive(Clone, Copy, Debug, Default)]
pub struct PoolUse {
    pub open: u32,
    pub idle: u32,
}

/// What is read when scraped.
#[derive(Clone, Copy, Debug, Default)]
pub struct NodeState {
    pub sockets: usize,
    pub live_actors: usize,
    /// Registration desks open (tournaments with changes of who takes part coming).
    pub registration_desks: usize,
    pub writer: PoolUse,
    /// `None` when reads share the writer's pool.
    pub readers: Option<PoolUse>,
    /// Whether the database answered its last probe.
    pub db_up: bool,
    /// Whether the link to Redis works; `None` on a single node.
    pub bus_up: Option<bool>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new(false)
    }
}

impl Metrics {
    /// The metrics of a node; `several_nodes` when it shares its tournaments through Redis.
    /// The fields are written in the order a scrape lists them: registering is that order.
    pub fn new(several_nodes: bool) -> Self {
        let mut registry = Registry::default();
        // Always 1: the release and the commit are its labels (the registry keeps it).
        let build_info: Family<BuildLabels, Gauge> = registered(&mut registry, series::BUILD_INFO, Family::default());
        build_info
            .get_or_create(&BuildLabels {
                release: crate::infra::release::VERSION,
                commit: crate::infra::release::COMMIT,
            })
            .set(1);
        Self {
            requests: registered(&mut registry, series::HTTP_REQUESTS, Family::default()),
            request_seconds: registered(
                &mut registry,
                series::HTTP_REQUEST_DURATION_SECONDS,
                Family::new_with_constructor(latency),
            ),
            live_commands: registered(&mut registry, series::LIVE_COMMANDS, Family::default()),
            registration_groups: registered(&mut registry, series::REGISTRATION_GROUPS, Family::default()),
            registration_changes: registered(&mut registry, series::REGISTRATION_CHANGES, Family::default()),
            live_command_seconds: registered(
                &mut registry,
                series::LIVE_COMMAND_DURATION_SECONDS,
                Family::new_with_constructor(latency),
            ),
            broadcast_seconds: registered(&mut registry, series::BROADCAST_DURATION_SECONDS, latency()),
            broadcast_errors: registered(&mut registry, series::BROADCAST_ERRORS, Counter::default()),
            lease_changes: registered(&mut registry, series::LEASE_CHANGES, Family::default()),
            job_runs: registered(&mut registry, series::JOB_RUNS, Family::default()),
            refusals: registered(&mut registry, series::REFUSALS, Family::default()),
            sockets: registered(&mut registry, series::LIVE_SOCKETS, Gauge::default()),
            live_actors: registered(&mut registry, series::LIVE_ACTORS, Gauge::default()),
            registration_desks: registered(&mut registry, series::REGISTRATION_DESKS, Gauge::default()),
            db_connections: registered(&mut registry, series::DB_CONNECTIONS, Family::default()),
            db_up: registered(&mut registry, series::DB_UP, Gauge::default()),
            bus_up: several_nodes.then(|| registered(&mut registry, series::BUS_UP, Gauge::default())),
            bus_notes_ignored: several_nodes
                .then(|| registered(&mut registry, series::BUS_NOTES_IGNORED, Family::default())),
            registry,
        }
    }
}

/// `metric` registered in `registry` under its `series`' name and help, given back to record.
fn registered<M: Metric + Clone>(registry: &mut Registry, (name, help): (&str, &str), metric: M) -> M {
    registry.register(name, help, metric.clone());
    metric
}

/// Each series' name and help, as a scrape shows them (a counter's name gains `_total`).
mod series {
    pub const BUILD_INFO: (&str, &str) = ("floor_build_info", "1, labelled with this node's release and commit");
    pub const HTTP_REQUESTS: (&str, &str) =
        ("floor_http_requests", "HTTP requests of the API answered, by route and status");
    pub const HTTP_REQUEST_DURATION_SECONDS: (&str, &str) =
        ("floor_http_request_duration_seconds", "Time to answer a request of the API, by route");
    pub const LIVE_COMMANDS: (&str, &str) =
        ("floor_live_commands", "Live commands run by the tournament actors, by command and outcome");
    pub const REGISTRATION_GROUPS: (&str, &str) = (
        "floor_registration_groups",
        "Transactions of the registration desks (each decides every change that arrived meanwhile), by outcome",
    );
    pub const REGISTRATION_CHANGES: (&str, &str) = (
        "floor_registration_changes",
        "Changes of who takes part decided by the registration desks, by their group's outcome",
    );
    pub const LIVE_COMMAND_DURATION_SECONDS: (&str, &str) =
        ("floor_live_command_duration_seconds", "Time from a live command to its answer (persisted and published)");
    pub const BROADCAST_DURATION_SECONDS: (&str, &str) = (
        "floor_broadcast_duration_seconds",
        "Time to hand one LiveState to its Socket.IO room (and to the other nodes)",
    );
    pub const BROADCAST_ERRORS: (&str, &str) = (
        "floor_broadcast_errors",
        "LiveStates that did not reach every watcher: the room's send failed, or the other nodes could not hear it (Redis was unreachable; sent again when it is back)",
    );
    pub const LEASE_CHANGES: (&str, &str) = (
        "floor_lease_changes",
        "Tournaments this node took over from no node or another (taken), or that another node took from it (lost)",
    );
    pub const JOB_RUNS: (&str, &str) = ("floor_job_runs", "Ticks of the background jobs, by outcome on this node");
    pub const REFUSALS: (&str, &str) = (
        "floor_refusals",
        "Connections, streams, sockets and requests refused by a timeout or cap of this node, by limit",
    );
    pub const LIVE_SOCKETS: (&str, &str) = ("floor_live_sockets", "Socket.IO connections of /live on this node");
    pub const LIVE_ACTORS: (&str, &str) = ("floor_live_actors", "Tournament actors running on this node");
    pub const REGISTRATION_DESKS: (&str, &str) =
        ("floor_registration_desks", "Registration desks open on this node (each ends after 30 s without a change)");
    pub const DB_CONNECTIONS: (&str, &str) =
        ("floor_db_connections", "Database connections of this node's pools, open and idle");
    pub const DB_UP: (&str, &str) = ("floor_db_up", "1 while the database answers this node's probe (every second)");
    pub const BUS_UP: (&str, &str) =
        ("floor_bus_up", "1 while this node's link to Redis works: its changes reach the other nodes' watchers");
    pub const BUS_NOTES_IGNORED: (&str, &str) = (
        "floor_bus_notes_ignored",
        "Notes from the other nodes passed over: of a kind this release does not know (a newer release's), or unreadable",
    );
}

impl Metrics {
    /// A request of the API answered: `route` is the matched pattern (`/tournaments/{id}`),
    /// never the path itself, so ids do not make a series each.
    pub fn request(&self, method: &str, route: &str, status: u16, took: Duration) {
        let (method, route) = (method.to_owned(), route.to_owned());
        self.requests.get_or_create(&RequestLabels { method: method.clone(), route: route.clone(), status }).inc();
        self.request_seconds.get_or_create(&RouteLabels { method, route }).observe(took.as_secs_f64());
    }

    /// A live command answered: `outcome` is `ok` or the contract code it was refused with.
    pub fn live_command(&self, command: &'static str, outcome: &'static str, took: Duration) {
        self.live_commands.get_or_create(&CommandLabels { command, outcome }).inc();
        self.live_command_seconds.get_or_create(&CommandName { command }).observe(took.as_secs_f64());
    }

    /// A registration desk's group of `changes` ended: `committed` or `failed`.
    pub fn registration_group(&self, outcome: &'static str, changes: usize) {
        let labels = GroupLabels { outcome };
        self.registration_groups.get_or_create(&labels).inc();
        self.registration_changes.get_or_create(&labels).inc_by(changes as u64);
    }

    pub fn broadcast(&self, took: Duration) {
        self.broadcast_seconds.observe(took.as_secs_f64());
    }

    /// A LiveState did not reach every watcher (see `floor_broadcast_errors`).
    pub fn broadcast_error(&self) {
        self.broadcast_errors.inc();
    }

    /// A note from another node was passed over, for `reason` (`unknown_kind`, `unreadable`).
    pub fn bus_note_ignored(&self, reason: &'static str) {
        if let Some(ignored) = &self.bus_notes_ignored {
            ignored.get_or_create(&IgnoredLabels { reason }).inc();
        }
    }

    /// This node took a tournament over (`taken`), or another node took it (`lost`).
    pub fn lease_change(&self, change: &'static str) {
        self.lease_changes.get_or_create(&LeaseLabels { change }).inc();
    }

    /// A tick of `job` ended so on this node (`ran`, `claimed_elsewhere`, `failed`,
    /// `panicked`, `caught_up`).
    pub fn job_run(&self, job: &'static str, outcome: &'static str) {
        self.job_runs.get_or_create(&JobLabels { job, outcome }).inc();
    }

    /// A timeout or cap refused a connection, stream, socket or request (`limit` names it).
    pub fn refused(&self, limit: &'static str) {
        self.refusals.get_or_create(&RefusalLabels { limit }).inc();
    }

    /// The text of a scrape, with the node's state as of now.
    pub fn render(&self, now: NodeState) -> Result<String, std::fmt::Error> {
        let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        self.sockets.set(count(now.sockets));
        self.live_actors.set(count(now.live_actors));
        self.registration_desks.set(count(now.registration_desks));
        self.db_up.set(i64::from(now.db_up));
        if let (Some(gauge), Some(up)) = (&self.bus_up, now.bus_up) {
            gauge.set(i64::from(up));
        }
        let pools = std::iter::once(("writer", now.writer)).chain(now.readers.map(|readers| ("readers", readers)));
        for (pool, usage) in pools {
            self.db_connections.get_or_create(&PoolLabels { pool, state: "open" }).set(i64::from(usage.open));
            self.db_connections.get_or_create(&PoolLabels { pool, state: "idle" }).set(i64::from(usage.idle));
        }
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scrape_names_every_series_with_its_labels() {
        let metrics = Metrics::default();
        metrics.request("GET", "/tournaments/{id}", 200, Duration::from_millis(3));
        metrics.request("GET", "/tournaments/{id}", 200, Duration::from_millis(5));
        metrics.live_command("pause", "ok", Duration::from_millis(4));
        metrics.live_command("level", "INVALID_LEVEL", Duration::from_millis(1));
        metrics.broadcast(Duration::from_millis(2));
        metrics.job_run("season-rollover", "ran");
        metrics.registration_group("committed", 200);
        metrics.registration_group("committed", 50);
        metrics.registration_group("failed", 7);
        let state = NodeState {
            sockets: 12,
            live_actors: 3,
            registration_desks: 2,
            writer: PoolUse { open: 1, idle: 1 },
            readers: Some(PoolUse { open: 4, idle: 3 }),
            db_up: true,
            bus_up: None,
        };
        let text = metrics.render(state).expect("renders");
        for line in [
            r#"floor_http_requests_total{method="GET",route="/tournaments/{id}",status="200"} 2"#,
            r#"floor_http_request_duration_seconds_count{method="GET",route="/tournaments/{id}"} 2"#,
            r#"floor_live_commands_total{command="pause",outcome="ok"} 1"#,
            r#"floor_live_commands_total{command="level",outcome="INVALID_LEVEL"} 1"#,
            "floor_broadcast_duration_seconds_count 1",
            r#"floor_job_runs_total{job="season-rollover",outcome="ran"} 1"#,
            "floor_live_sockets 12",
            "floor_live_actors 3",
            "floor_registration_desks 2",
            r#"floor_registration_groups_total{outcome="committed"} 2"#,
            r#"floor_registration_changes_total{outcome="committed"} 250"#,
            r#"floor_registration_groups_total{outcome="failed"} 1"#,
            r#"floor_registration_changes_total{outcome="failed"} 7"#,
            r#"floor_db_connections{pool="readers",state="idle"} 3"#,
            r#"floor_db_connections{pool="writer",state="open"} 1"#,
        ] {
            assert!(text.lines().any(|written| written == line), "{line} is missing from:\n{text}");
        }
        assert!(text.ends_with("# EOF\n"));
        assert!(!text.contains("floor_bus_up"), "a single node has no bus");
    }

    #[test]
    fn a_node_of_several_says_whether_its_bus_works() {
        let metrics = Metrics::new(true);
        metrics.broadcast_error();
        metrics.lease_change("taken");
        let state = NodeState { db_up: false, bus_up: Some(false), ..NodeState::default() };
        let text = metrics.render(state).expect("renders");
        for line in [
            "floor_bus_up 0",
            "floor_db_up 0",
            "floor_broadcast_errors_total 1",
            r#"floor_lease_changes_total{change="taken"} 1"#,
        ] {
            assert!(text.lines().any(|written| written == line), "{line} is missing from:\n{text}");
        }
        let text =
            metrics.render(NodeState { db_up: true, bus_up: Some(true), ..NodeState::default() }).expect("renders");
        assert!(text.lines().any(|written| written == "floor_bus_up 1"));
    }
}
