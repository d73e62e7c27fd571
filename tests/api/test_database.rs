//! The databases the tests make: one per test, on SQLite or PostgreSQL, dropped after it.
//!
//! Two costs of PostgreSQL's are kept off each test (measured beside the suite on the 2-core
//! box, 2026-11-29): migrating a fresh database took 0.7–0.8 s, so a migrated one is a copy of a
//! template this process migrates once (0.13–0.16 s); and a `DROP DATABASE` waits for a
//! checkpoint on PostgreSQL 15 (1.0–1.7 s), so the databases are dropped in turn by a `psql`
//! of their own, which outlives the process to drop the last ones.

use std::io::Write;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::{Mutex, OnceLock};

use sea_orm::{ConnectionTrait, Database, DatabaseConnection};
use tokio::sync::OnceCell;
use uuid::Uuid;

use crate::helpers::Backend;
use crate::the_box::Share;

const POSTGRES_ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// A database made for one test and dropped after it.
pub struct TestDatabase {
    pub url: String,
    postgres_name: Option<String>,
    _folder: Option<tempfile::TempDir>,
    /// The test's share of the box, given back once the database is on its way out (none under
    /// a crowd test, which holds the whole box).
    _share: Option<Share>,
}

impl TestDatabase {
    /// An empty database of `backend`, nothing migrated, once the test has its share of the
    /// box. `None` only when PostgreSQL is unreachable outside CI (in CI that is a failure).
    pub async fn create(backend: Backend) -> Option<Self> {
        let share = crate::the_box::share().await;
        Self::create_within(backend, Some(share)).await
    }

    /// An empty database of `backend`, holding `share` (see [`crate::the_box`]).
    pub async fn create_within(backend: Backend, share: Option<Share>) -> Option<Self> {
        Self::made(backend, None, share).await
    }

    /// A database of `backend` for a node to start on, once the test has its share of the box:
    /// on PostgreSQL a copy of a migrated template, dated now; on SQLite an empty file, which
    /// the node migrates as it starts (0.1 s).
    pub async fn migrated(backend: Backend) -> Option<Self> {
        let share = crate::the_box::share().await;
        Self::migrated_within(backend, Some(share)).await
    }

    /// [`Self::migrated`], holding `share`.
    pub async fn migrated_within(backend: Backend, share: Option<Share>) -> Option<Self> {
        match backend {
            Backend::Sqlite => Self::made(backend, None, share).await,
            Backend::Postgres => {
                let template = migrated_template().await?;
                Self::made(backend, Some(template), share).await
            }
        }
    }

    async fn made(backend: Backend, template: Option<&str>, share: Option<Share>) -> Option<Self> {
        match backend {
            Backend::Sqlite => {
                let folder = tempfile::tempdir().expect("a temporary folder");
                let url = format!("sqlite://{}?mode=rwc", folder.path().join("floor.db").display());
                Some(Self { url, postgres_name: None, _folder: Some(folder), _share: share })
            }
            Backend::Postgres => {
                let name = create_postgres(template).await?;
                let url = postgres_url(&name);
                if template.is_some() {
                    migrated_now(&url).await;
                }
                Some(Self { url, postgres_name: Some(name), _folder: None, _share: share })
            }
        }
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if let Some(name) = self.postgres_name.take() {
            drop_later(name);
        }
    }
}

fn postgres_url(name: &str) -> String {
    format!("postgres://postgres@127.0.0.1:5432/{name}")
}

/// The administrator's connection; `None` when PostgreSQL is unreachable outside CI (in CI
/// that is a failure).
async fn admin() -> Option<DatabaseConnection> {
    match Database::connect(POSTGRES_ADMIN_URL).await {
        Ok(admin) => Some(admin),
        Err(err) if std::env::var_os("CI").is_none() => {
            eprintln!("skipping: PostgreSQL is unreachable ({err}) and CI is not set");
            None
        }
        Err(err) => panic!("PostgreSQL must be reachable in CI: {err}"),
    }
}

/// A new database, empty or a copy of `template`; its name.
async fn create_postgres(template: Option<&str>) -> Option<String> {
    let admin = admin().await?;
    let name = format!("floor_test_{}", Uuid::new_v4().simple());
    let copied = template.map(|template| format!(" TEMPLATE {template}")).unwrap_or_default();
    admin.execute_unprepared(&format!("CREATE DATABASE {name}{copied}")).await.expect("database created");
    admin.close().await.ok();
    Some(name)
}

/// Dates the copy's migrations now, as a node migrating it would: the jobs catch up the ticks
/// since a database was made (`floor::infra::db::created_at`), and the template was made minutes ago.
async fn migrated_now(url: &str) {
    let db = Database::connect(url).await.expect("the copy connects");
    let now = chrono::Utc::now().timestamp();
    db.execute_unprepared(&format!("UPDATE seaql_migrations SET applied_at = {now}")).await.expect("dated now");
    db.close().await.ok();
}

/// This process's migrated database to copy (the nodes seed their copies, dated then), made
/// at the first call and dropped after the process exits. Nothing stays connected to it:
/// PostgreSQL copies only a database nobody is on.
async fn migrated_template() -> Option<&'static str> {
    static MADE: OnceCell<Option<&'static str>> = OnceCell::const_new();
    let made = MADE.get_or_init(|| async {
        let name = dropper().template.as_str();
        let admin = admin().await?;
        admin.execute_unprepared(&format!("CREATE DATABASE {name}")).await.expect("the template is made");
        admin.close().await.ok();
        let db = Database::connect(postgres_url(name)).await.expect("the template connects");
        floor::infra::db::migrate(&db).await.expect("the template migrates");
        db.close().await.ok();
        Some(name)
    });
    *made.await
}

/// Drops the test databases one after another in a `psql` of its own, fed on its standard
/// input: the tests do not wait for the drops, and when this process exits, however it does,
/// the input closes and `psql` drops what is left; then the template goes.
struct Dropper {
    statements: Option<Mutex<ChildStdin>>,
    template: String,
}

const DROP_IN_TURN: &str = "psql -X -q -h 127.0.0.1 -U postgres -d postgres; \
    psql -X -q -h 127.0.0.1 -U postgres -d postgres -c \"DROP DATABASE IF EXISTS $0 WITH (FORCE)\"";

fn dropper() -> &'static Dropper {
    static DROPPER: OnceLock<Dropper> = OnceLock::new();
    DROPPER.get_or_init(|| {
        let template = format!("floor_test_template_{}", Uuid::new_v4().simple());
        let psql = Command::new("sh")
            .args(["-c", DROP_IN_TURN, &template])
            .env("PGOPTIONS", "-c client_min_messages=warning")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn();
        let statements = match psql {
            Ok(mut psql) => psql.stdin.take().map(Mutex::new),
            Err(err) => {
                eprintln!("warning: no psql to drop the test databases in turn ({err}): each test waits for its own");
                None
            }
        };
        Dropper { statements, template }
    })
}

/// Drops the database `name`: soon, by the dropper; at once where there is none.
fn drop_later(name: String) {
    let statement = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE);\n");
    if let Some(statements) = &dropper().statements {
        let mut statements = statements.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if statements.write_all(statement.as_bytes()).is_ok() {
            return;
        }
    }
    // Drop is synchronous: drop the database from a thread with its own runtime.
    let dropped = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().ok()?;
        runtime.block_on(async {
            let admin = Database::connect(POSTGRES_ADMIN_URL).await.ok()?;
            admin.execute_unprepared(&statement).await.ok()?;
            admin.close().await.ok()
        })
    })
    .join();
    if !matches!(dropped, Ok(Some(()))) {
        eprintln!("warning: a test database could not be dropped");
    }
}
