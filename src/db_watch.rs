//! Whether the database answers, as this node last found, kept in the background so that
//! readiness, liveness and `/metrics` read a flag instead of waiting on a database that may
//! hang. On PostgreSQL a lookout keeps watch from a connection of its own, and while
//! PostgreSQL is out of reach it also makes the pool's new connections fail at once, so a
//! request that needs the database is answered `503` at once instead of after the pool's
//! acquire timeout. A SQLite file is asked through the pool.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sea_orm::{DatabaseConnection, DbBackend};
use tokio_util::sync::CancellationToken;

/// How often a SQLite file is asked.
const ASK_EVERY: Duration = Duration::from_secs(1);
/// The longest its answer may take before the database counts as unreachable.
const ANSWER_WITHIN: Duration = Duration::from_secs(2);
/// How often the lookout asks PostgreSQL whether it answers, while it does and while it does not.
const LOOK_EVERY: Duration = Duration::from_millis(500);
const LOOK_AGAIN_WHILE_DOWN: Duration = Duration::from_millis(250);
/// How long the lookout waits for an answer (its ping, or a new connection) before it calls
/// PostgreSQL out of reach: a ping takes a millisecond, so a second without one is a server
/// that stopped answering (frozen, failing over, behind a partition), not a busy one.
const LOOK_TIMEOUT: Duration = Duration::from_secs(1);
/// Where the pool connects while PostgreSQL is out of reach: a socket that does not exist,
/// which sqlx gives up on at once (a refused connection it would try again until the acquire
/// timeout).
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
        match (look(&reachable_at, &mut own).await, closed) {
            (Err(why), false) => {
                tracing::error!(error = %why, "PostgreSQL is out of reach: new connections fail at once until it answers");
                pool.set_connect_options(door_closed.clone());
                closed = true;
                watch.0.store(false, Ordering::SeqCst);
            }
            (Ok(()), true) => {
                tracing::info!("PostgreSQL answers again: the pool connects to it");
                pool.set_connect_options(reachable_at.clone());
                closed = false;
                watch.0.store(true, Ordering::SeqCst);
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
        Ok(Err(err)) if crate::db::sqlx_is_unreachable(&err) => Err(err.to_string()),
        Ok(Err(_)) => Ok(()),
        Err(_) => Err(format!("no answer within {LOOK_TIMEOUT:?}")),
    }
}

/// The database's state as last found; cheap to clone.
#[derive(Clone)]
pub struct DbWatch(Arc<AtomicBool>);

impl Default for DbWatch {
    /// The database answered a moment ago (the node has just migrated it).
    fn default() -> Self {
        Self(Arc::new(AtomicBool::new(true)))
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
        self.0.load(Ordering::SeqCst)
    }

    async fn ask_sqlite(self, db: DatabaseConnection, shutdown: CancellationToken) {
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep(ASK_EVERY) => {}
            }
            let answered = tokio::time::timeout(ANSWER_WITHIN, db.ping()).await;
            let up = matches!(answered, Ok(Ok(())));
            match (self.0.swap(up, Ordering::SeqCst), up) {
                (true, false) => tracing::error!(?answered, "the database does not answer"),
                (false, true) => tracing::info!("the database answers again"),
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use sea_orm::{ConnectionTrait, Database};

    use super::*;

    #[tokio::test]
    async fn with_the_lookout_a_postgresql_nobody_listens_on_fails_a_statement_within_seconds() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map(|address| address.port())
            .expect("a free port");
        let mut options = crate::db::base_options(&format!("postgres://floor@127.0.0.1:{port}/floor"));
        options.connect_lazy(true);
        let db = Database::connect(options).await.expect("a lazy pool");
        let watch = DbWatch::default();
        watch.keep_watch(db.clone(), CancellationToken::new());
        for _ in 0..2 {
            let started = std::time::Instant::now();
            let err = db.execute_unprepared("SELECT 1").await.expect_err("nobody listens");
            let waited = started.elapsed();
            assert!(crate::db::db_err_is_unreachable(&err), "{err:?}");
            // Not the acquire timeout's half minute: the lookout closed the door.
            assert!(waited < Duration::from_secs(3), "held {waited:?}");
        }
        assert!(!watch.is_up(), "the lookout tells the node");
    }
}
