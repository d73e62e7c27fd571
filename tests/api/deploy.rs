//! What `deploy/` promises an operator, checked against the documents it follows.

use std::collections::BTreeSet;

fn read(path: &str) -> String {
    std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))).expect("the file is committed")
}

/// Whether `word` is written like an environment variable (`UPPER_SNAKE`).
fn is_variable(word: &str) -> bool {
    word.len() > 2
        && word.starts_with(|c: char| c.is_ascii_uppercase())
        && word.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        && word.contains('_')
        || ["PORT"].contains(&word)
}

/// The variables the README's "Configuration" section names in backticks.
fn documented() -> BTreeSet<String> {
    let readme = read("README.md");
    let section = readme.split("\n## Configuration").nth(1).expect("a Configuration section");
    let section = section.split("\n## ").next().unwrap_or_default();
    section.split('`').skip(1).step_by(2).filter(|word| is_variable(word)).map(str::to_owned).collect()
}

/// The variables compose gives every floor node (the `x-floor` block they share), set or
/// passed through.
fn passed_by_compose() -> BTreeSet<String> {
    let compose = read("deploy/compose.yaml");
    let floor = compose.split("\nx-floor: &floor\n").nth(1).expect("the floor nodes' block");
    let environment = floor.split("\n  environment:\n").nth(1).expect("its environment");
    environment
        .lines()
        .take_while(|line| line.starts_with("    "))
        .filter_map(|line| line.trim().strip_prefix("- "))
        .map(|entry| entry.split('=').next().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn compose_passes_every_variable_the_readme_documents() {
    let documented = documented();
    assert!(documented.len() > 30, "{documented:?}");
    for name in ["JWT_SECRET", "FCM_SERVICE_ACCOUNT_JSON", "SMSRU_URL", "AWS_ACCESS_KEY_ID", "RATE_LIMIT_PUBLIC_READS"]
    {
        assert!(documented.contains(name), "the README documents {name}");
    }
    let passed = passed_by_compose();
    let missing: Vec<&String> = documented.difference(&passed).collect();
    assert!(missing.is_empty(), "compose leaves out {missing:?}");
}

/// The value of the line `key = "…"` of `text`.
fn quoted_value<'a>(text: &'a str, key: &str) -> &'a str {
    let start = format!("{key} = ");
    let line = text.lines().find(|line| line.starts_with(&start)).unwrap_or_else(|| panic!("a {key} line"));
    line.split('"').nth(1).unwrap_or_else(|| panic!("{key} quoted: {line}"))
}

/// One toolchain everywhere: the one `rust-toolchain.toml` pins is the workspace's
/// `rust-version`, the image's and the README's.
#[test]
fn the_pinned_toolchain_is_the_one_the_workspace_the_image_and_the_readme_name() {
    let pinned = quoted_value(&read("rust-toolchain.toml"), "channel").to_owned();
    let manifest = read("Cargo.toml");
    let rust_version = quoted_value(&manifest, "rust-version");
    assert!(pinned.starts_with(&format!("{rust_version}.")), "rust-version {rust_version}, pinned {pinned}");
    let dockerfile = read("deploy/Dockerfile");
    assert!(dockerfile.contains(&format!("ARG RUST_VERSION={pinned}\n")), "the Dockerfile builds with {pinned}");
    assert!(read("README.md").contains(&format!("Rust {pinned}, pinned in `rust-toolchain.toml`")));
}

/// The SQLite recipe of deploy/README.md: `floor backup` while the server runs, then a node
/// started on the copy has everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_backup_taken_while_serving_restores_everything() {
    use crate::helpers::{Backend, spawn_app, spawn_on};
    let Some(app) = spawn_app(Backend::Sqlite).await else { return };
    let club = app.create_club("Aces", "+79990005500").await;
    let tournament = app.create_tournament(&club, 20, chrono::Duration::days(1)).await;
    let folder = tempfile::tempdir().expect("a temporary folder");
    let copy = folder.path().join("floor-backup.db");

    let backup = |to: &std::path::Path| {
        crate::cli::floor().arg("backup").arg(to).env("DATABASE_URL", &app.database_url).output().expect("floor runs")
    };
    let done = backup(&copy);
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    let again = backup(&copy);
    assert!(!again.status.success(), "a backup never overwrites a file");
    assert!(String::from_utf8_lossy(&again.stderr).contains("exists already"));

    let restored = spawn_on(&format!("sqlite://{}?mode=rwc", copy.display())).await;
    let card = restored.get(&format!("/tournaments/{tournament}"), None).await;
    assert_eq!(card.assert_ok()["translations"]["en"]["title"], "Weekend tournament");
    let signed_in = restored.sign_in("+79990005500").await;
    assert_eq!(signed_in.user_id, club.owner.user_id, "the accounts came along");
}

/// The PostgreSQL recipe of deploy/README.md: `pg_dump -Fc`, then `pg_restore --no-owner`
/// into an empty database, and a node started there has everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_dump_restores_everything() {
    use crate::helpers::{Backend, TestDatabase, spawn_app, spawn_on};
    let Some(app) = spawn_app(Backend::Postgres).await else { return };
    let club = app.create_club("Aces", "+79990005510").await;
    let tournament = app.create_tournament(&club, 20, chrono::Duration::days(1)).await;
    let folder = tempfile::tempdir().expect("a temporary folder");
    let dump = folder.path().join("floor.dump");

    let dumped = std::process::Command::new("pg_dump")
        .args(["-Fc", "--dbname", &app.database_url, "--file"])
        .arg(&dump)
        .output()
        .expect("pg_dump runs (Debian's postgresql-client)");
    assert!(dumped.status.success(), "{}", String::from_utf8_lossy(&dumped.stderr));
    let Some(empty) = TestDatabase::create(Backend::Postgres).await else { return };
    let restored = std::process::Command::new("pg_restore")
        .args(["--no-owner", "--exit-on-error", "--dbname", &empty.url])
        .arg(&dump)
        .output()
        .expect("pg_restore runs");
    assert!(restored.status.success(), "{}", String::from_utf8_lossy(&restored.stderr));

    let node = spawn_on(&empty.url).await;
    let card = node.get(&format!("/tournaments/{tournament}"), None).await;
    assert_eq!(card.assert_ok()["translations"]["en"]["title"], "Weekend tournament");
    let status = crate::cli::floor().args(["migrate", "--status"]).env("DATABASE_URL", &empty.url).output();
    let status = String::from_utf8(status.expect("floor runs").stdout).expect("text");
    assert!(status.ends_with(" applied, 0 pending\n"), "{status}");
}

#[test]
fn compose_runs_two_nodes_behind_the_load_balancer_the_ci_test_runs() {
    let compose = read("deploy/compose.yaml");
    for (n, node) in [(1, "floor-1"), (2, "floor-2")] {
        assert!(compose.contains(&format!("\n  {node}:\n    <<: *floor\n")), "{node} is a floor node");
        assert!(compose.contains(&format!("FLOOR_NODE_{n}={node}:8080")), "HAProxy sends to {node}");
    }
    assert!(compose.contains("./haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro"), "HAProxy runs deploy/haproxy.cfg");
}
