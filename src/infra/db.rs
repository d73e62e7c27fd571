//! The database: connecting (a SQLite file by default, PostgreSQL for several nodes), migrating, and
//! the one way to open a write transaction that serialises writers of one key on both.

use std::time::Duration;

use anyhow::Context;
use sea_orm::sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use sea_orm::{
    AccessMode, ConnectOptions, ConnectionTrait, Database, DatabaseConnection, DatabaseTransaction, DbBackend, DbErr,
    IsolationLevel, SqliteTransactionMode, Statement, TransactionOptions, TransactionTrait,
};
use sha2::{Digest, Sha256};

use crate::infra::db_watch::DbWatch;

pub use crate::infra::db_unreachable::{Unreachable, db_err_is_unreachable, is_unreachable};

pub use floor_migrations::Migrator;

use floor_migrations::MigratorTrait;
use floor_migrations::compat::{self, Standing};

/// Ids per `IN (...)` list, far below the bind-parameter limits of SQLite and PostgreSQL.
pub const IDS_PER_STATEMENT: usize = 500;

/// The rows of `E` whose `column` is one of `ids`, read `IDS_PER_STATEMENT` ids at a time so
/// no list outgrows a statement's bind parameters.
pub async fn find_where_in<E, C>(
    conn: &impl ConnectionTrait,
    column: C,
    ids: &[uuid::Uuid],
) -> Result<Vec<E::Model>, DbErr>
where
    E: sea_orm::EntityTrait,
    C: sea_orm::ColumnTrait,
{
    use sea_orm::QueryFilter;
    let mut rows = Vec::with_capacity(ids.len());
    for chunk in ids.chunks(IDS_PER_STATEMENT) {
        rows.extend(E::find().filter(column.is_in(chunk.iter().copied())).all(conn).await?);
    }
    Ok(rows)
}

/// `rows` (at most [`IDS_PER_STATEMENT`]) made up to a size of a few fixed ones by repeating
/// the last, for an `IN (…)` list (or a `CASE` of one arm per row) that repeats often with a
/// varying length: a list of a new length is a new statement, which PostgreSQL parses and
/// plans afresh, where a list of a size seen before is a statement it has prepared. A
/// repeated row changes no answer.
pub fn padded<T: Clone>(rows: &[T]) -> Vec<T> {
    let size = rows.len().next_power_of_two().clamp(8, IDS_PER_STATEMENT);
    let mut padded = rows.to_vec();
    if let Some(last) = rows.last() {
        padded.resize(size.max(rows.len()), last.clone());
    }
    padded
}

/// Rows per multi-row `INSERT`: even at 60 columns a statement stays under SQLite's 32,766
/// bind parameters (PostgreSQL allows 65,535), whatever the size of the field.
pub const ROWS_PER_INSERT: usize = 500;

/// Inserts `rows` `ROWS_PER_INSERT` at a time: every bulk write goes through here, so none
/// can outgrow a statement.
pub async fn insert_chunked<A>(conn: &impl ConnectionTrait, rows: Vec<A>) -> Result<(), DbErr>
where
    A: sea_orm::ActiveModelTrait + Send,
{
    insert_in_chunks_of(conn, rows, ROWS_PER_INSERT).await
}

/// Inserts `rows` `per_statement` at a time (at most [`ROWS_PER_INSERT`]). A write that
/// repeats often takes a small fixed size: every full chunk is then the same statement,
/// which PostgreSQL has prepared already, where a statement of a new length is parsed and
/// planned afresh (373 rows in one took 95 ms there, in chunks of 64 a few).
pub async fn insert_in_chunks_of<A>(
    conn: &impl ConnectionTrait,
    mut rows: Vec<A>,
    per_statement: usize,
) -> Result<(), DbErr>
where
    A: sea_orm::ActiveModelTrait + Send,
{
    let per_statement = per_statement.clamp(1, ROWS_PER_INSERT);
    while !rows.is_empty() {
        let rest = rows.split_off(rows.len().min(per_statement));
        let chunk = std::mem::replace(&mut rows, rest);
        <A::Entity as sea_orm::EntityTrait>::insert_many(chunk).exec_without_returning(conn).await?;
    }
    Ok(())
}

/// How long SQLite waits for a lock another process holds before it answers "busy".
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a statement waits for a connection of the pool, on both databases. A burst queues
/// for the pool's connections (SQLite's one writer; on PostgreSQL a registration holds its
/// connection while it waits for the tournament's lock), and that queue is served, not turned
/// away. An outage of PostgreSQL is not waited out here: the lookout ([`crate::infra::db_watch`]) makes the pool's new
/// connections fail at once while PostgreSQL is out of reach. (sqlx bounds the whole
/// acquisition by this, connecting included; sea-orm's `connect_timeout` is the same setting.)
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);

/// Connects to `url` with no deadline on its statements: for migrating, seeding and the
/// command line, where a statement may rightly run long (an index built on a large table).
/// For a SQLite file its folder is created when missing, so a bare `floor serve` works on an
/// empty machine.
pub async fn connect(url: &str) -> anyhow::Result<DatabaseConnection> {
    let options = pool_options(url)?;
    Database::connect(options).await.with_context(|| format!("connecting to {}", redact(url)))
}

/// Connects to `url` as `floor serve` does: the connections that write (and read inside their
/// transactions). On PostgreSQL every statement has `deadline` (the server cancels it past it:
/// `503`, try again) and a server that sends nothing for half a second more, frozen or behind a
/// partition, has its connection given up (the patched driver, `vendor/PATCHES.md`); a
/// session idle inside a transaction for `deadline` is ended by the server, so a node frozen
/// in the middle of a write (a stalled host, a paused VM) lets go of the rows it locked (a
/// tournament's lease among them) before its lease runs out, and the next owner is not held
/// back; while the lookout `watch` finds PostgreSQL out of reach, no pooled connection is
/// handed out (a statement fails at once instead of waiting on a server that does not
/// answer); and only a connection idle for [`PING_IF_IDLE_FOR`] is pinged before use, not
/// every one. A SQLite file is as [`connect`] makes it.
pub async fn connect_serving(url: &str, deadline: Duration, watch: &DbWatch) -> anyhow::Result<DatabaseConnection> {
    let mut options = pool_options(url)?;
    if !is_sqlite(url) {
        options
            .statement_timeout(deadline)
            .map_sqlx_postgres_opts(move |opts| {
                // Between two statements of a transaction a node computes for milliseconds.
                let idle = [(IDLE_IN_TRANSACTION_LIMIT, deadline.as_millis().to_string())];
                opts.answer_within(deadline.saturating_add(ANSWER_MARGIN)).options(idle)
            })
            .test_before_acquire(false);
        let watch = watch.clone();
        options.map_sqlx_postgres_before_acquire(move |connection, held| {
            // Refused (closed, and a new one asked for, which fails at once while the lookout
            // finds PostgreSQL out of reach) rather than handed out to wait.
            let up = watch.is_up();
            Box::pin(async move {
                if up && held.idle_for >= PING_IF_IDLE_FOR {
                    sea_orm::sqlx::Connection::ping(connection).await?;
                }
                Ok(up)
            })
        });
    }
    Database::connect(options).await.with_context(|| format!("connecting to {}", redact(url)))
}

/// How much longer than a statement's deadline the node waits for PostgreSQL to answer
/// anything (the cancellation itself, which takes a millisecond) before it gives the
/// connection up.
pub const ANSWER_MARGIN: Duration = Duration::from_millis(500);
/// A pooled connection idle this long is pinged before it is handed out (a restarted server
/// or a proxy may have dropped it); a busy one is used as it is, without a round trip.
const PING_IF_IDLE_FOR: Duration = Duration::from_secs(5);

/// The options of the writers' pool of `url`.
fn pool_options(url: &str) -> anyhow::Result<ConnectOptions> {
    let mut options = base_options(url);
    if is_sqlite(url) {
        create_sqlite_folder(url)?;
        // One connection (sea-orm's default for SQLite): writes queue in-process, and
        // IMMEDIATE write transactions serialise writers of other processes too.
        options.map_sqlx_sqlite_opts(|opts: SqliteConnectOptions| {
            opts.journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal)
                .busy_timeout(SQLITE_BUSY_TIMEOUT)
                .foreign_keys(true)
        });
    } else {
        options.max_connections(32).min_connections(1);
    }
    Ok(options)
}

/// The connections for reads outside a write, beside `writer` (what [`connect`] gave for the
/// same `url`). On a SQLite file: a pool of read-only connections. In WAL mode each read
/// sees the last commit and never waits for the writer's transaction, so the agenda, the
/// sign-in check of every request and the health probe go on while a burst of
/// registrations queues for the one writer. Elsewhere `writer` itself: PostgreSQL's pool
/// already reads beside its writes, and an in-memory SQLite exists only in its one
/// connection. Open it after migrating: a read-only connection cannot create the file.
pub async fn connect_readers(url: &str, writer: &DatabaseConnection) -> anyhow::Result<DatabaseConnection> {
    if !has_own_readers(url) {
        return Ok(writer.clone());
    }
    sqlite_read_only(url, sqlite_readers()).await
}

/// Read-only connections of the SQLite file the kept public reads are built on.
const KEPT_READ_CONNECTIONS: u32 = 2;

/// The connections the kept public reads (the agenda, a card) are built on, beside `readers`
/// (what [`connect_readers`] gave for the same `url`). On a SQLite file a few read-only
/// connections of their own: the readers serve every request's sign-in check, and in a
/// registration rush an agenda build queued behind hundreds of them (230 ms, every reader of
/// the agenda waiting for that one build). Elsewhere `readers`: PostgreSQL's pool was measured
/// not to hold the build up (the same p99 with a pool of its own; the build waits for the CPU).
pub async fn connect_kept_reads(url: &str, readers: &DatabaseConnection) -> anyhow::Result<DatabaseConnection> {
    if !has_own_readers(url) {
        return Ok(readers.clone());
    }
    sqlite_read_only(url, KEPT_READ_CONNECTIONS).await
}

/// A pool of `connections` read-only connections of the SQLite file of `url`.
async fn sqlite_read_only(url: &str, connections: u32) -> anyhow::Result<DatabaseConnection> {
    let mut options = base_options(url);
    options.max_connections(connections).min_connections(1);
    options.map_sqlx_sqlite_opts(|opts: SqliteConnectOptions| {
        // The journal mode is the file's (the writer made it WAL); a reader cannot set it.
        opts.read_only(true).busy_timeout(SQLITE_BUSY_TIMEOUT)
    });
    Database::connect(options).await.with_context(|| format!("opening readers of {}", redact(url)))
}

/// Whether [`connect_readers`] opens a pool of its own for `url` (a SQLite file) rather than
/// handing back the writer's.
pub fn has_own_readers(url: &str) -> bool {
    is_sqlite(url) && !is_in_memory(url)
}

/// The connections of `db`'s pool now: open, and idle among them.
pub fn pool_use(db: &DatabaseConnection) -> (u32, u32) {
    let idle = |idle: usize| u32::try_from(idle).unwrap_or(u32::MAX);
    match db.get_database_backend() {
        DbBackend::Postgres => {
            let pool = db.get_postgres_connection_pool();
            (pool.size(), idle(pool.num_idle()))
        }
        DbBackend::Sqlite => {
            let pool = db.get_sqlite_connection_pool();
            (pool.size(), idle(pool.num_idle()))
        }
        _ => (0, 0),
    }
}

/// SQLite readers: each connection is a thread of sqlx's, and a read is CPU work, so two per
/// core keep the cores busy without a crowd of idle threads.
fn sqlite_readers() -> u32 {
    let cores = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
    u32::try_from(cores * 2).unwrap_or(u32::MAX).clamp(4, 16)
}

pub(crate) fn base_options(url: &str) -> ConnectOptions {
    let mut options = ConnectOptions::new(url.to_owned());
    // sqlx logs every statement at INFO; statements are traced by our own spans instead.
    options.sqlx_logging(false).acquire_timeout(ACQUIRE_TIMEOUT);
    options
}

/// Whether `url` names a SQLite database (a file or in memory).
pub fn is_sqlite(url: &str) -> bool {
    url.starts_with("sqlite:")
}

fn is_in_memory(url: &str) -> bool {
    url.contains(":memory:") || url.contains("mode=memory")
}

/// Applies every pending migration and records what each declares of older releases;
/// idempotent. On a database a newer release migrated it changes nothing, and fails when one
/// of that release's migrations does not allow this one (see [`compat`]). Run it under
/// [`with_schema_lock`] where other nodes may start at the same moment.
pub async fn migrate(db: &DatabaseConnection) -> anyhow::Result<()> {
    match compat::standing(db).await? {
        Standing::Known => {
            Migrator::up(db, None).await?;
            compat::record(db).await?;
        }
        Standing::Ahead { newer } => tracing::warn!(
            release = compat::RELEASE,
            ?newer,
            "a newer release migrated this database, and each of its migrations allows this release: serving \
             without migrating"
        ),
        Standing::Refused(why) => anyhow::bail!(why),
    }
    Ok(())
}

/// Where a migration stands in the database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MigrationState {
    Applied,
    Pending,
    /// Applied by a newer release: this one has no file for it.
    Newer,
}

/// Each migration this release knows, oldest first, then those only a newer release knows.
/// Reads only: a database never migrated lists every migration as pending.
pub async fn migration_status(db: &DatabaseConnection) -> Result<Vec<(String, MigrationState)>, DbErr> {
    let applied = compat::applied(db).await?;
    let known = compat::known();
    let mut status: Vec<(String, MigrationState)> = known
        .iter()
        .map(|name| {
            let state = if applied.contains(name) { MigrationState::Applied } else { MigrationState::Pending };
            (name.clone(), state)
        })
        .collect();
    status.extend(applied.into_iter().filter(|name| !known.contains(name)).map(|name| (name, MigrationState::Newer)));
    Ok(status)
}

/// When this database was made: the moment its first migration was applied (`None` before
/// any was).
pub async fn created_at(db: &impl ConnectionTrait) -> Result<Option<chrono::DateTime<chrono::Utc>>, DbErr> {
    let backend = db.get_database_backend();
    let first = Statement::from_string(backend, "SELECT MIN(applied_at) FROM seaql_migrations");
    let seconds: Option<i64> = match db.query_one_raw(first).await? {
        Some(row) => row.try_get_by_index::<Option<i64>>(0)?,
        None => None,
    };
    Ok(seconds.and_then(|seconds| chrono::DateTime::from_timestamp(seconds, 0)))
}

/// What tells this PostgreSQL database from any other, whatever address a node reaches it by:
/// the cluster's system identifier and the database's name; where the identifier is not to be
/// read (a managed service may keep it from the role), the name and when it was first
/// migrated. `None` on SQLite, a file of one node's.
pub async fn identity(db: &DatabaseConnection) -> Result<Option<String>, DbErr> {
    if db.get_database_backend() != DbBackend::Postgres {
        return Ok(None);
    }
    let read = |sql: &str| {
        let statement = Statement::from_string(DbBackend::Postgres, sql);
        async move { db.query_one_raw(statement).await?.map(|row| row.try_get_by_index::<String>(0)).transpose() }
    };
    match read("SELECT system_identifier::text || '/' || current_database() FROM pg_control_system()").await {
        Ok(identity) => Ok(identity),
        Err(_) => read("SELECT current_database() || '/' || MIN(applied_at)::text FROM seaql_migrations").await,
    }
}

/// Writes a consistent copy of the SQLite database to `to` while others go on reading and
/// writing (`VACUUM INTO`: one read transaction, a compact file). PostgreSQL has `pg_dump`
/// for that, which this refuses to stand in for.
pub async fn back_up(db: &DatabaseConnection, to: &std::path::Path) -> anyhow::Result<()> {
    if db.get_database_backend() != DbBackend::Sqlite {
        anyhow::bail!("floor backup copies a SQLite database; for PostgreSQL use pg_dump (deploy/README.md)");
    }
    if to.exists() {
        anyhow::bail!("{} exists already: a backup never overwrites a file", to.display());
    }
    let path = to.to_str().with_context(|| format!("{} is not a UTF-8 path", to.display()))?;
    db.execute_raw(Statement::from_sql_and_values(DbBackend::Sqlite, "VACUUM INTO ?", [path.into()]))
        .await
        .with_context(|| format!("copying the database to {}", to.display()))?;
    Ok(())
}

/// The key of the lock that migrating and seeding take.
const SCHEMA_LOCK: &str = "floor:schema";

/// Runs `work` (migrating, seeding) while no other process of the cluster runs its own: on
/// PostgreSQL a transaction-scoped advisory lock, held by a transaction of its own that
/// does nothing else, so replicas starting together migrate one after another and the later
/// ones find nothing pending (without it, two of them raced to create the same tables and one
/// failed to start). SQLite is one node's file: there is nothing to take.
pub async fn with_schema_lock<T>(
    db: &DatabaseConnection,
    work: impl Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    if db.get_database_backend() != DbBackend::Postgres {
        return work.await;
    }
    let holder = db.begin().await.context("beginning the schema lock's transaction")?;
    holder
        .execute_raw(Statement::from_sql_and_values(
            DbBackend::Postgres,
            "SELECT pg_advisory_xact_lock($1)",
            [advisory_key(SCHEMA_LOCK).into()],
        ))
        .await
        .context("taking the schema lock")?;
    let done = work.await;
    // Ending the transaction lets the next node in; it changed nothing.
    holder.rollback().await.context("releasing the schema lock")?;
    done
}

/// Opens a write transaction. On SQLite it begins `IMMEDIATE`, taking the database's write
/// lock at once: SQLite has no row locks, so this is what serialises writers (sea-orm drops
/// `FOR UPDATE` there). On PostgreSQL it is a plain transaction; use [`lock_key`] or a row
/// lock inside it.
pub async fn begin_write(db: &DatabaseConnection) -> Result<DatabaseTransaction, DbErr> {
    let options = TransactionOptions {
        sqlite_transaction_mode: Some(SqliteTransactionMode::Immediate),
        ..TransactionOptions::default()
    };
    db.begin_with_options(options).await
}

/// Opens a transaction that only reads and sees the database as of one moment however long it
/// lasts, so a read spread over many statements (a player's export) is consistent. On
/// PostgreSQL `REPEATABLE READ READ ONLY`, which may sit idle between its reads as long as its
/// reader waits for a slow client (it locks no row, so the serving sessions' limit on idling
/// in a transaction is lifted for it); on SQLite a plain (deferred) transaction, whose first
/// read fixes its snapshot of the WAL until it ends. Open it on the read connections: it holds
/// one of them while it lasts.
pub async fn begin_snapshot(db: &DatabaseConnection) -> Result<DatabaseTransaction, DbErr> {
    if db.get_database_backend() != DbBackend::Postgres {
        // sea-orm would only warn that SQLite takes no isolation level or access mode.
        return db.begin().await;
    }
    let tx = db.begin_with_config(Some(IsolationLevel::RepeatableRead), Some(AccessMode::ReadOnly)).await?;
    lift_idle_limit(&tx).await?;
    Ok(tx)
}

/// PostgreSQL's limit on how long a session may sit idle inside a transaction, which
/// [`connect_serving`] sets to the statements' deadline.
const IDLE_IN_TRANSACTION_LIMIT: &str = "idle_in_transaction_session_timeout";

/// Lets `tx` sit idle between its statements as long as it needs, for a transaction that may
/// rightly wait on something else between them and locks no row others wait for (a snapshot
/// read while a slow client takes what it read). Nothing to lift on SQLite.
pub async fn lift_idle_limit(tx: &DatabaseTransaction) -> Result<(), DbErr> {
    if tx.get_database_backend() == DbBackend::Postgres {
        tx.execute_unprepared(&format!("SET LOCAL {IDLE_IN_TRANSACTION_LIMIT} = 0")).await?;
    }
    Ok(())
}

/// Serialises every transaction that locks the same `key` (a phone, say) until the holder
/// commits or rolls back: a PostgreSQL transaction-scoped advisory lock, which holds across
/// processes. On SQLite the `IMMEDIATE` transaction of [`begin_write`] already excludes
/// every other writer, so there is nothing more to take.
pub async fn lock_key(tx: &DatabaseTransaction, key: &str) -> Result<(), DbErr> {
    if tx.get_database_backend() != DbBackend::Postgres {
        return Ok(());
    }
    tx.execute_raw(Statement::from_sql_and_values(
        DbBackend::Postgres,
        "SELECT pg_advisory_xact_lock($1)",
        [advisory_key(key).into()],
    ))
    .await?;
    Ok(())
}

/// A stable 64-bit lock id for a key: the first 8 bytes of its SHA-256.
fn advisory_key(key: &str) -> i64 {
    let digest = Sha256::digest(key.as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(bytes)
}

fn create_sqlite_folder(url: &str) -> anyhow::Result<()> {
    let path = url.trim_start_matches("sqlite:").trim_start_matches("//").split('?').next().unwrap_or_default();
    if path.is_empty() || is_in_memory(url) {
        return Ok(());
    }
    if let Some(folder) = std::path::Path::new(path).parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(folder)
            .with_context(|| format!("creating the database folder {}", folder.display()))?;
    }
    Ok(())
}

/// The URL without its password, for messages.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let credentials = &url[scheme_end + 3..at];
            match credentials.split_once(':') {
                Some((user, _)) => format!("{}{}:***{}", &url[..scheme_end + 3], user, &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_lists_are_padded_to_a_few_sizes_with_the_same_ids() {
        let ids: Vec<uuid::Uuid> = (0..IDS_PER_STATEMENT).map(|_| uuid::Uuid::now_v7()).collect();
        assert!(padded::<uuid::Uuid>(&[]).is_empty(), "nothing to look up stays nothing");
        let mut sizes = std::collections::BTreeSet::new();
        for n in 1..=IDS_PER_STATEMENT {
            let list = padded(&ids[..n]);
            assert_eq!(&list[..n], &ids[..n], "the ids first, in order");
            assert!(list[n..].iter().all(|id| *id == ids[n - 1]), "then the last again");
            assert!(list.len() >= n && list.len() <= IDS_PER_STATEMENT);
            sizes.insert(list.len());
        }
        assert_eq!(sizes.into_iter().collect::<Vec<_>>(), [8, 16, 32, 64, 128, 256, IDS_PER_STATEMENT]);
    }

    #[test]
    fn advisory_keys_are_stable_and_distinct() {
        assert_eq!(advisory_key("otp:+79990000001"), advisory_key("otp:+79990000001"));
        assert_ne!(advisory_key("otp:+79990000001"), advisory_key("otp:+79990000002"));
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(redact("postgres://floor:secret@db:5432/floor"), "postgres://floor:***@db:5432/floor");
        assert_eq!(redact("postgres://floor@db/floor"), "postgres://floor@db/floor");
        assert_eq!(redact("sqlite://./data/floor.db?mode=rwc"), "sqlite://./data/floor.db?mode=rwc");
    }

    #[test]
    fn the_sqlite_folder_is_created() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("nested/deeper/floor.db");
        create_sqlite_folder(&format!("sqlite://{}?mode=rwc", file.display())).expect("created");
        assert!(file.parent().is_some_and(std::path::Path::is_dir));
    }

    #[tokio::test]
    /// The lookout (`db_watch.rs`) on a pool made as this module makes them.
    async fn with_the_lookout_a_postgresql_nobody_listens_on_fails_a_statement_within_seconds() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map(|address| address.port())
            .expect("a free port");
        let mut options = base_options(&format!("postgres://floor@127.0.0.1:{port}/floor"));
        options.connect_lazy(true);
        let db = Database::connect(options).await.expect("a lazy pool");
        let watch = DbWatch::default();
        watch.keep_watch(db.clone(), tokio_util::sync::CancellationToken::new());
        for _ in 0..2 {
            let started = std::time::Instant::now();
            let err = db.execute_unprepared("SELECT 1").await.expect_err("nobody listens");
            let waited = started.elapsed();
            assert!(db_err_is_unreachable(&err), "{err:?}");
            // Not the acquire timeout's half minute: the lookout closed the door.
            assert!(waited < Duration::from_secs(3), "held {waited:?}");
        }
        assert!(!watch.is_up(), "the lookout tells the node");
    }
}
