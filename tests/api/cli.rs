//! The `floor` binary itself: a bare `floor serve` works, production refuses unsafe setups.

use std::process::{Command, Stdio};
use std::time::Duration;

/// The `floor` binary with an empty environment.
pub(crate) fn floor() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_floor"));
    command.env_clear();
    command
}

/// A running `floor` process, killed when dropped, so a failing test never leaves a server
/// holding its port.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.kill().ok();
        self.0.wait().ok();
    }
}

/// A port nobody listens on right now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free port")
}

/// Waits up to 20 seconds for `GET {api}/health` to answer; its body, if it did.
async fn wait_for_health(client: &reqwest::Client, api: &str) -> Option<serde_json::Value> {
    for _ in 0..200 {
        if let Ok(reply) = client.get(format!("{api}/health")).send().await {
            return reply.json().await.ok();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

#[tokio::test]
async fn floor_serve_with_no_environment_answers_health_on_8080() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    if std::net::TcpListener::bind("0.0.0.0:8080").is_err() {
        assert!(std::env::var_os("CI").is_none(), "port 8080 must be free in CI");
        eprintln!("skipping: port 8080 is taken on this machine");
        return;
    }
    let server = floor()
        .arg("serve")
        .current_dir(folder.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map(Running)
        .expect("floor starts");
    let answer = wait_for_health(&reqwest::Client::new(), "http://127.0.0.1:8080/api/v1").await;
    drop(server);
    assert_eq!(answer, Some(serde_json::json!({"status": "ok", "db": "ok", "redis": "off"})));
    assert!(folder.path().join("data/floor.db").is_file(), "the SQLite file is made under ./data");
}

#[test]
fn production_refuses_to_start_without_a_strong_jwt_secret_in_one_line() {
    let output = floor().args(["migrate"]).env("APP_ENV", "production").output().expect("floor runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("JWT_SECRET"), "{stderr}");
}

#[test]
fn production_refuses_logged_codes_and_an_in_memory_database() {
    let secret = "0123456789abcdef0123456789abcdef";
    let output = floor()
        .args(["migrate"])
        .envs([("APP_ENV", "production"), ("JWT_SECRET", secret), ("OTP_LOG_CODES", "true")])
        .output()
        .expect("floor runs");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("OTP_LOG_CODES"));
    let output = floor()
        .args(["migrate"])
        .envs([("APP_ENV", "production"), ("JWT_SECRET", secret), ("DATABASE_URL", "sqlite::memory:")])
        .output()
        .expect("floor runs");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("DATABASE_URL"));
}

#[test]
fn floor_openapi_prints_the_committed_contract() {
    let output = floor().arg("openapi").output().expect("floor runs");
    assert!(output.status.success());
    let committed = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/openapi.yaml")).expect("committed");
    assert_eq!(String::from_utf8_lossy(&output.stdout), committed);
}

#[test]
fn floor_asyncapi_prints_the_committed_contract_of_live() {
    let output = floor().arg("asyncapi").output().expect("floor runs");
    assert!(output.status.success());
    let committed = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/asyncapi.yaml")).expect("committed");
    assert_eq!(String::from_utf8_lossy(&output.stdout), committed);
}

#[test]
fn floor_job_runs_the_season_rollover_idempotently() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    for _ in 0..2 {
        let status = floor().args(["migrate"]).current_dir(folder.path()).status().expect("runs");
        assert!(status.success());
        let status = floor().args(["job", "season-rollover"]).current_dir(folder.path()).status().expect("runs");
        assert!(status.success());
    }
    let db_url = format!("sqlite://{}", folder.path().join("data/floor.db").display());
    let seasons = tokio::runtime::Runtime::new().expect("runtime").block_on(async {
        use sea_orm::{ConnectionTrait, Database, Statement};
        let db = Database::connect(db_url).await.expect("connects");
        let row = db
            .query_one_raw(Statement::from_string(
                db.get_database_backend(),
                "SELECT COUNT(*) FROM seasons WHERE status = 'current'",
            ))
            .await
            .expect("query")
            .expect("a row");
        row.try_get_by_index::<i64>(0).expect("a count")
    });
    assert_eq!(seasons, 1, "two runs make one current season");
    let unknown = floor().args(["job", "make-coffee"]).current_dir(folder.path()).output().expect("runs");
    assert!(!unknown.status.success());
}

#[test]
fn floor_job_runs_the_tournament_reminders_on_a_fresh_database() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let status = floor().args(["migrate"]).current_dir(folder.path()).status().expect("runs");
    assert!(status.success());
    let output = floor().args(["job", "tournament-reminders"]).current_dir(folder.path()).output().expect("runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stdout).contains("tournament reminders done"));
}

#[tokio::test]
async fn with_otp_log_codes_the_fake_channel_prints_one_line_per_code_that_signs_in() {
    use std::io::{BufRead, BufReader};

    let folder = tempfile::tempdir().expect("a temporary folder");
    let port = free_port();
    let mut server = floor()
        .arg("serve")
        .current_dir(folder.path())
        .envs([("PORT", port.to_string()), ("OTP_LOG_CODES", "true".to_owned()), ("OTP_CHANNELS", "fake".to_owned())])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map(Running)
        .expect("floor starts");
    let stdout = server.0.stdout.take().expect("piped stdout");
    let (lines_tx, mut lines_rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });

    let client = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}/api/v1");
    assert!(wait_for_health(&client, &base).await.is_some(), "floor serve answers");
    let requested = client
        .post(format!("{base}/auth/otp/request"))
        .json(&serde_json::json!({"phone": "+79990001122"}))
        .send()
        .await
        .map(|reply| reply.status().as_u16());
    assert_eq!(requested.ok(), Some(200));
    let code = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(line) = lines_rx.recv().await {
            if let Some(code) = line.strip_prefix("OTP +79990001122 ") {
                return Some(code.to_owned());
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
    .expect("an `OTP <phone> <code>` line on standard output");
    assert!(code.len() == 6 && code.bytes().all(|b| b.is_ascii_digit()), "{code}");
    let verified = client
        .post(format!("{base}/auth/otp/verify"))
        .json(&serde_json::json!({"phone": "+79990001122", "code": code}))
        .send()
        .await
        .map(|reply| reply.status().as_u16());
    assert_eq!(verified.ok(), Some(200));
    drop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_code_limit_holds_across_two_processes_on_one_postgresql() {
    use crate::helpers::{Backend, spawn_app};

    let Some(app) = spawn_app(Backend::Postgres).await else { return };
    let port = free_port();
    let second = floor()
        .arg("serve")
        .envs([
            ("PORT", port.to_string()),
            ("DATABASE_URL", app.database_url.clone()),
            ("OTP_CHANNELS", "fake".to_owned()),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map(Running)
        .expect("a second floor starts");
    let client = reqwest::Client::new();
    let second_base = format!("http://127.0.0.1:{port}/api/v1");
    assert!(wait_for_health(&client, &second_base).await.is_some(), "the second process answers");
    let mut requests = tokio::task::JoinSet::new();
    for i in 0..10 {
        let base = if i % 2 == 0 { second_base.clone() } else { app.url("") };
        let client = client.clone();
        requests.spawn(async move {
            let reply = client
                .post(format!("{base}/auth/otp/request"))
                .json(&serde_json::json!({"phone": "+79990001122"}))
                .send()
                .await;
            reply.map(|r| r.status().as_u16()).unwrap_or(0)
        });
    }
    let mut statuses = Vec::new();
    while let Some(status) = requests.join_next().await {
        statuses.push(status.unwrap_or(0));
    }
    drop(second);
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 200, 200, 429, 429, 429, 429, 429, 429, 429]);
}

#[test]
fn production_logs_are_json_lines() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let output = floor()
        .arg("migrate")
        .current_dir(folder.path())
        .envs([
            ("APP_ENV", "production"),
            ("JWT_SECRET", "0123456789abcdef0123456789abcdef"),
            ("DATABASE_URL", "sqlite://./floor.db?mode=rwc"),
        ])
        .output()
        .expect("floor runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let logs = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = logs.lines().filter(|line| !line.trim().is_empty()).collect();
    assert!(!lines.is_empty(), "migrate logs what it did");
    for line in lines {
        let entry: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|err| panic!("{err}: {line}"));
        assert!(entry["level"].is_string() && entry["timestamp"].is_string(), "{line}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_started_together_on_an_empty_database_all_come_up() {
    use crate::helpers::{Backend, TestDatabase, test_config};
    let Some(database) = TestDatabase::create(Backend::Postgres).await else { return };
    // Each node migrates and seeds before it serves: the schema lock takes them one at a time.
    let nodes = (0..3).map(|_| floor::Application::build(test_config(&database.url, &[])));
    for built in futures::future::join_all(nodes).await {
        built.expect("every node comes up");
    }
}

#[test]
fn floor_version_names_the_release_and_the_commit() {
    let output = floor().arg("--version").output().expect("floor runs");
    assert!(output.status.success());
    let said = String::from_utf8(output.stdout).expect("text");
    let release = env!("CARGO_PKG_VERSION");
    let commit = said
        .strip_prefix(&format!("floor {release} (commit "))
        .and_then(|rest| rest.strip_suffix(")\n"))
        .unwrap_or_else(|| panic!("{said:?}"));
    assert!(commit == "unknown" || (commit.len() >= 7 && commit.chars().all(|c| c.is_ascii_hexdigit())), "{said}");
}

#[test]
fn migrate_status_lists_what_is_applied_and_pending() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let url = format!("sqlite://{}?mode=rwc", folder.path().join("floor.db").display());
    let status = || {
        let output = floor().args(["migrate", "--status"]).env("DATABASE_URL", &url).output().expect("floor runs");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).expect("text")
    };
    let before = status();
    let lines: Vec<&str> = before.lines().collect();
    let (summary, migrations) = lines.split_last().expect("a summary line");
    assert!(migrations.len() > 5 && migrations.iter().all(|line| line.starts_with("pending m")), "{before}");
    assert_eq!(*summary, format!("0 applied, {} pending", migrations.len()));

    let migrated = floor().arg("migrate").env("DATABASE_URL", &url).output().expect("floor runs");
    assert!(migrated.status.success(), "{}", String::from_utf8_lossy(&migrated.stderr));
    let after = status();
    let applied: Vec<String> = migrations.iter().map(|line| line.replacen("pending", "applied", 1)).collect();
    assert_eq!(after, format!("{}\n{} applied, 0 pending\n", applied.join("\n"), migrations.len()));
}

#[test]
fn production_refuses_to_serve_when_no_code_channel_can_send() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let output = floor()
        .arg("serve")
        .current_dir(folder.path())
        .envs([
            ("APP_ENV", "production"),
            ("JWT_SECRET", "0123456789abcdef0123456789abcdef"),
            ("DATABASE_URL", "sqlite://./floor.db?mode=rwc"),
            ("OTP_CHANNELS", "telegram,sms"),
            ("PORT", "0"),
        ])
        .output()
        .expect("floor runs");
    assert!(!output.status.success(), "it served with no way to sign in");
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("OTP_CHANNELS lists telegram, sms and none has its credentials"), "{said}");
    assert!(!folder.path().join("floor.db").exists(), "it refused before touching the database");
}

#[tokio::test]
async fn floor_healthcheck_succeeds_only_while_the_local_server_is_ready() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let port = free_port().to_string();
    let server = floor()
        .arg("serve")
        .current_dir(folder.path())
        .env("PORT", &port)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map(Running)
        .expect("floor starts");
    let api = format!("http://127.0.0.1:{port}/api/v1");
    assert!(wait_for_health(&reqwest::Client::new(), &api).await.is_some(), "the server came up");
    let check = || floor().arg("healthcheck").env("PORT", &port).output().expect("floor runs");
    let ready = check();
    assert!(ready.status.success(), "{}", String::from_utf8_lossy(&ready.stderr));
    drop(server);
    let gone = check();
    assert_eq!(gone.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&gone.stderr).contains("/ready: connection failed"), "{gone:?}");
}
