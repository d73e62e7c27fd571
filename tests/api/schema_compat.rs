//! A rollback, or an old node restarted during a rolling deploy, finds migrations of a newer
//! release applied. It serves on them when each allows its release, and refuses to start,
//! naming the release to run, when one does not: sea-orm's migrator alone refused any such
//! database, so every rollback was a failed start.

use floor_migrations::compat::RELEASE;
use sea_orm::{ConnectionTrait, Database, Statement};

use crate::helpers::{Backend, TestDatabase, on_both_databases, test_config};

/// A migration no release of today knows, as a newer release would have applied it.
const FUTURE: &str = "m20991231_000999_add_a_future_column";

/// Migrates `database` with today's release, then applies [`FUTURE`] as a newer release
/// would: its row among the applied migrations, and what it declares of older releases.
async fn migrated_by_a_newer_release(database: &TestDatabase, oldest_release: &str) {
    floor::Application::build(test_config(&database.url, &[])).await.expect("today's release migrates");
    let db = Database::connect(&database.url).await.expect("the database");
    let backend = db.get_database_backend();
    let (applied, declared) = match backend {
        sea_orm::DbBackend::Postgres => (
            "INSERT INTO seaql_migrations (version, applied_at) VALUES ($1, 4102444800)",
            "INSERT INTO schema_compat (migration, oldest_release, applied_by) VALUES ($1, $2, '9.9.9')",
        ),
        _ => (
            "INSERT INTO seaql_migrations (version, applied_at) VALUES (?, 4102444800)",
            "INSERT INTO schema_compat (migration, oldest_release, applied_by) VALUES (?, ?, '9.9.9')",
        ),
    };
    db.execute_raw(Statement::from_sql_and_values(backend, applied, [FUTURE.into()])).await.expect("applied");
    db.execute_raw(Statement::from_sql_and_values(backend, declared, [FUTURE.into(), oldest_release.into()]))
        .await
        .expect("declared");
    db.close().await.ok();
}

async fn a_release_serves_on_migrations_a_newer_one_declared_safe_for_it(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else { return };
    migrated_by_a_newer_release(&database, RELEASE).await;

    let app = floor::Application::build(test_config(&database.url, &[])).await.expect("it starts on the newer schema");
    let base = format!("http://127.0.0.1:{}", app.port());
    let server = tokio::spawn(app.run_until(std::future::pending()));
    let health = reqwest::get(format!("{base}/api/v1/health")).await.expect("an answer");
    assert_eq!(health.status(), 200);
    let agenda = reqwest::get(format!("{base}/api/v1/tournaments")).await.expect("an answer");
    assert_eq!(agenda.status(), 200, "and serves");
    server.abort();
}

async fn a_release_refuses_migrations_that_need_a_newer_one_and_names_it(backend: Backend) {
    let Some(database) = TestDatabase::create(backend).await else { return };
    migrated_by_a_newer_release(&database, "9.9.0").await;

    let Err(refused) = floor::Application::build(test_config(&database.url, &[])).await else {
        panic!("a release the schema does not allow started");
    };
    let said = format!("{refused:#}");
    assert!(said.contains(FUTURE) && said.contains("run floor 9.9.0 or newer"), "{said}");
    assert!(said.contains(&format!("this is floor {RELEASE}")), "{said}");
}

on_both_databases!(
    a_release_serves_on_migrations_a_newer_one_declared_safe_for_it,
    a_release_refuses_migrations_that_need_a_newer_one_and_names_it,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_status_names_the_migrations_of_a_newer_release() {
    let Some(database) = TestDatabase::create(Backend::Sqlite).await else { return };
    migrated_by_a_newer_release(&database, RELEASE).await;
    let run = |args: &[&str]| {
        let output = crate::cli::floor().args(args).env("DATABASE_URL", &database.url).output().expect("floor runs");
        assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).expect("text")
    };
    run(&["migrate"]);
    let status = run(&["migrate", "--status"]);
    assert!(status.contains(&format!("newer {FUTURE}\n")), "{status}");
    assert!(status.ends_with(", 0 pending, 1 from a newer release\n"), "{status}");
}
