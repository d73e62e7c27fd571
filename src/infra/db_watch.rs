//! Whether the database answers, as this node last found, kept in the background so that
//! readiness, liveness and `/metrics` read a flag instead of waiting on a database that may
//! hang. On PostgreSQL a lookout keeps watch from a connection of its own, and while
//! PostgreSQL is out of reach it also makes the pool's new connections fail at once, so a
//! request that needs the database is answered `503` at once instead of after the pool's
//! acquire timeout. A SQLite file is asked through the pool.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use sea_orm::{DatabaseConnection, DbBackend};
use tokio_util::sync::CancellationToken;

use crate::infra::bus::link::Link;

/// How often a SQLite file is asked.
const ASK_EVERY: Duration = Duration::from_secs(1);
/// The longest its answer may take before the database counts as unreachable.
const ANSWER_WITHIN: Duration = Duration::from_secs(2);
/// How often the lookout asks PostgreSQL whether it answers, while it does.
const LOOK_EVERY: Duration = Duration::from_millis(500);
/// How often it asks while PostgreSQL does not answer: sooner, so that a node serves again
/// within a quarter of a second of PostgreSQL coming back.
const LOOK_AGAIN_WHILE_DOWN: Duration = Duration::from_millis(250);
/// How long the lookout waits for an answer (its ping, or a new connection) before it calls
/// PostgreSQL out of reach: a ping takes a millisecond, so a second without one is a server
/// that stopped answering (frozen, failing over, behind a partition), not a busy one.
const LOOK_TIMEOUT: Duration = Duration::from_secs(1);
/// How often a node tells the others that the database answers it, or asks whether it
/// answers them; and how long what it said holds.
const COMPARE_EVERY: Duration = Duration::from_secs(1);
const SAID_FOR: Duration = Duration::from_secs(3);
/// Where the pool connects while PostgreSQL is out of reach: a Unix socket that does not
/// exist. sqlx's pool (`PoolInner::connect` in sqlx-core 0.9) tries a refused connection again
/// until the acquire timeout, but returns any other I/O error at once, and a missing socket is
/// one (`NotFound`). That is the only way to make the pool's own acquisition fail early: its
/// hooks (`before_acquire`, `after_connect`) can only make it try again, and the acquiring is
/// sea-orm's, inside every statement (requests, actors, jobs), so a check of
/// [`DbWatch::is_up`] before it would have to be written at each of them. The last test below
/// fails if an sqlx upgrade changes this.
const CLOSED_DOOR: &str = "/nonexistent/floor/postgresql-is-out-of-reach";

/// Keeps watch on PostgreSQL beside `pool`, from a connection of its own: the pool's may all be
/// busy with a burst, which is no outage. While PostgreSQL is out of reach (the lookout's
/// connection is lost and a new one is refused, or nothing answers within [`LOOK_TIMEOUT`]),
/// the pool's new connections go to [`CLOSED_DOOR`] and fail at once, so a request that needs
/// the database is answered `503` within a second or two (without it sqlx tries a refused
/// connection again until the acquire timeout, half a minute). The connections the pool holds
/// are left alone: they fail by themselves when PostgreSQL is gone. Once PostgreSQL answers
/// again (the lookout asks every [`LOOK_AGAIN_WHILE_DOWN`]), the pool connects to it as before.
/// Runs until `shutdown`, telling `watch` what it finds.
async fn keep_lookout(pool: sea_orm::sqlx::PgPool, watch: DbWatch, shutdown: CancellationToken) {
    let reachable_at = (*pool.connect_options()).clone();
    let door_closed = reachable_at.clone().socket(CLOSED_DOOR);
    let mut own = None;
    let mut closed = false;
    loop {
        let asked = now_millis();
        let answered = look(&reachable_at, &mut own).await;
        watch.found(answered.is_ok(), asked);
        match (answered, closed) {
            (Err(why), false) => {
                tracing::error!(error = %why, "PostgreSQL is out of reach: new connections fail at once until it answers");
                pool.set_connect_options(door_closed.clone());
                closed = true;
            }
            (Ok(()), true) => {
                tracing::info!("PostgreSQL answers again: the pool connects to it");
                pool.set_connect_options(reachable_at.clone());
                closed = false;
            }
            _ => {}
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(if closed { LOOK_AGAIN_WHILE_DOWN } else { LOOK_EVERY }) => {}
        }
    }
}

/// Whether PostgreSQL answers the lookout's connection `watch` (made again when lost): `Err`
/// saying why only when it is out of reach. Any other refusal of a new connection (a password,
/// too many clients) is no outage: the pool's own connections meet it and say so.
async fn look(
    options: &sea_orm::sqlx::postgres::PgConnectOptions,
    watch: &mut Option<sea_orm::sqlx::PgConnection>,
) -> Result<(), String> {
    use sea_orm::sqlx::{ConnectOptions as _, Connection as _};
    if let Some(connection) = watch.as_mut() {
        match tokio::time::timeout(LOOK_TIMEOUT, connection.ping()).await {
            Ok(Ok(())) => return Ok(()),
            // The connection is there and nothing answers it: the server stopped answering
            // (a new connection would only wait as long again).
            Err(_) => {
                *watch = None;
                return Err(format!("no answer within {LOOK_TIMEOUT:?}"));
            }
            // Lost (a restarted server): a new connection says whether it is back.
            Ok(Err(_)) => *watch = None,
        }
    }
    match tokio::time::timeout(LOOK_TIMEOUT, options.connect()).await {
        Ok(Ok(connection)) => {
            *watch = Some(connection);
            Ok(())
        }
        Ok(Err(err)) if crate::infra::db_unreachable::sqlx_is_unreachable(&err) => Err(err.to_string()),
        Ok(Err(_)) => Ok(()),
        Err(_) => Err(format!("no answer within {LOOK_TIMEOUT:?}")),
    }
}

/// The database's state as last found; cheap to clone.
#[derive(Clone)]
pub struct DbWatch(Arc<Found>);

#[derive(Default)]
struct Found {
    /// Whether the last question was answered.
    up: AtomicBool,
    /// When (Unix milliseconds, this node's clock) the last answered question was asked, and
    /// when the first unanswered one of an outage was.
    answered_at: AtomicI64,
    down_since: AtomicI64,
    /// Whether another node said the database answered it after this node found it down.
    answers_elsewhere: AtomicBool,
}

impl Default for DbWatch {
    /// The database answered a moment ago (the node has just migrated it).
    fn default() -> Self {
        let found = Found { up: AtomicBool::new(true), answered_at: AtomicI64::new(now_millis()), ..Found::default() };
        Self(Arc::new(found))
    }
}

impl DbWatch {
    /// Watches `db` until `shutdown`, from now on.
    pub fn keep_watch(&self, db: DatabaseConnection, shutdown: CancellationToken) {
        if db.get_database_backend() == DbBackend::Postgres {
            tokio::spawn(keep_lookout(db.get_postgres_connection_pool().clone(), self.clone(), shutdown));
        } else {
            tokio::spawn(self.clone().ask_sqlite(db, shutdown));
        }
    }

    /// Whether the database answered the last question.
    pub fn is_up(&self) -> bool {
        self.0.up.load(Ordering::SeqCst)
    }

    /// Records the answer to a question asked at `asked` (Unix milliseconds); whether the
    /// database was up before it.
    fn found(&self, up: bool, asked: i64) -> bool {
        let was = self.0.up.swap(up, Ordering::SeqCst);
        if up {
            self.0.answered_at.store(asked, Ordering::SeqCst);
            self.0.answers_elsewhere.store(false, Ordering::SeqCst);
        } else if was {
            self.0.down_since.store(asked, Ordering::SeqCst);
        }
        was
    }

    /// Whether, while the database does not answer this node, another node says it answered
    /// there since: the trouble is this node's own (its network, its pool), not a shared outage.
    pub fn answers_elsewhere(&self) -> bool {
        !self.is_up() && self.0.answers_elsewhere.load(Ordering::SeqCst)
    }

    /// Compares notes with the other nodes through Redis until `shutdown`: every
    /// [`COMPARE_EVERY`] a node that reaches the database says under [`answers_key`] (for
    /// [`SAID_FOR`]) when it last got an answer, and a node that does not reads whether
    /// another got one after this node found it down (a claim from before then is no news: the
    /// outage may be everyone's, not yet noticed there). Without Redis, or while it is down,
    /// no node can tell, and none assumes the others fare better.
    pub fn compare_with_other_nodes(&self, database: &str, link: Link, shutdown: CancellationToken) {
        let watch = self.clone();
        let me = uuid::Uuid::new_v4();
        let key = answers_key(database);
        tokio::spawn(async move {
            loop {
                if watch.is_up() {
                    let claim = Claim { node: me, answered_at: watch.0.answered_at.load(Ordering::SeqCst) };
                    let mut say = redis::cmd("SET");
                    say.arg(&key).arg(claim.to_string()).arg("PX").arg(SAID_FOR.as_millis().to_string());
                    link.ask::<()>(&say).await;
                } else {
                    let mut read = redis::cmd("GET");
                    read.arg(&key);
                    let claim = link.ask::<Option<String>>(&read).await.flatten();
                    let since = watch.0.down_since.load(Ordering::SeqCst);
                    let elsewhere = claim
                        .and_then(|claim| claim.parse::<Claim>().ok())
                        .is_some_and(|claim| claim.node != me && claim.answered_at > since);
                    // Only while still down: an answer here since clears it.
                    if elsewhere && !watch.is_up() && !watch.0.answers_elsewhere.swap(true, Ordering::SeqCst) {
                        tracing::error!(
                            "PostgreSQL answers another node and not this one: readiness 503 until it answers here"
                        );
                    }
                    if !elsewhere {
                        watch.0.answers_elsewhere.store(false, Ordering::SeqCst);
                    }
                }
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(COMPARE_EVERY) => {}
                }
            }
        });
    }

    async fn ask_sqlite(self, db: DatabaseConnection, shutdown: CancellationToken) {
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(ASK_EVERY) => {}
            }
            let asked = now_millis();
            let answered = tokio::time::timeout(ANSWER_WITHIN, db.ping()).await;
            let up = matches!(answered, Ok(Ok(())));
            match (self.found(up, asked), up) {
                (true, false) => tracing::error!(?answered, "the database does not answer"),
                (false, true) => tracing::info!("the database answers again"),
                _ => {}
            }
        }
    }
}

/// What a node says in Redis: it got an answer from the database at `answered_at` (Unix
/// milliseconds, its clock; the nodes keep theirs in step, as the leases need), as
/// `<node>@<answered_at>`.
#[derive(Debug, PartialEq, Eq)]
struct Claim {
    node: uuid::Uuid,
    answered_at: i64,
}

impl std::fmt::Display for Claim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@{}", self.node, self.answered_at)
    }
}

impl std::str::FromStr for Claim {
    type Err = ();

    fn from_str(text: &str) -> Result<Self, ()> {
        let (node, at) = text.split_once('@').ok_or(())?;
        Ok(Self { node: node.parse().map_err(|_| ())?, answered_at: at.parse().map_err(|_| ())? })
    }
}

/// The Redis key naming the node that last found `database` ([`crate::infra::db::identity`])
/// answering: one per database, since deployments and tests may share a Redis.
fn answers_key(database: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(database.as_bytes());
    let short: String = digest.iter().take(8).map(|byte| format!("{byte:02x}")).collect();
    format!("floor:database-answers:{short}")
}

fn now_millis() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_reads_back_as_said_and_nothing_else_reads_as_one() {
        let claim = Claim { node: uuid::Uuid::new_v4(), answered_at: 1_795_000_000_123 };
        assert_eq!(claim.to_string().parse::<Claim>(), Ok(claim));
        for text in ["", "@1", "not-a-node@1", &format!("{}@soon", uuid::Uuid::nil()), &uuid::Uuid::nil().to_string()] {
            assert_eq!(text.parse::<Claim>(), Err(()), "{text:?}");
        }
    }

    #[test]
    fn each_database_has_a_key_of_its_own() {
        let key = answers_key("7712754057219877017/floor");
        assert_eq!(key, answers_key("7712754057219877017/floor"));
        assert_ne!(key, answers_key("7712754057219877017/elsewhere"));
        assert!(key.starts_with("floor:database-answers:"), "{key}");
    }

    #[test]
    fn an_outage_begins_at_its_first_unanswered_question_and_an_answer_ends_it() {
        let watch = DbWatch::default();
        assert!(watch.found(false, 1_000), "it was up");
        assert!(!watch.found(false, 2_000), "it was down");
        assert_eq!(watch.0.down_since.load(Ordering::SeqCst), 1_000, "the first question of the outage");
        watch.0.answers_elsewhere.store(true, Ordering::SeqCst);
        assert!(watch.answers_elsewhere());
        assert!(!watch.found(true, 3_000));
        assert!(!watch.answers_elsewhere(), "an answer here ends it");
        assert_eq!(watch.0.answered_at.load(Ordering::SeqCst), 3_000);
    }
}
