//! The contracts as the tools that clients are generated with read them, from `tests/contract/`
//! (installed from npm by `npm ci --prefix tests/contract`): `asyncapi.yaml` parsed by
//! AsyncAPI's own parser, and `openapi.yaml` turned into TypeScript types by openapi-typescript,
//! with which a small client (`tests/contract/client/`) compiles under `tsc --strict` and then
//! signs in, reads the agenda and registers against a fresh server. Outside CI a machine without
//! Node or those packages skips; in CI that is a failure.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::helpers::{Backend, on_both_databases, spawn_app};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// `tests/contract/`, once its packages are installed and `node` runs.
fn contract_tools() -> Option<PathBuf> {
    let tools = Path::new(ROOT).join("tests/contract");
    let node = Command::new("node").arg("--version").output().is_ok_and(|out| out.status.success());
    let installed =
        tools.join("node_modules/@asyncapi/parser").is_dir() && tools.join("node_modules/.bin/tsc").exists();
    if node && installed {
        return Some(tools);
    }
    let missing = if node { "tests/contract/node_modules (npm ci --prefix tests/contract)" } else { "node" };
    assert!(std::env::var_os("CI").is_none(), "{missing} must be installed in CI");
    eprintln!("skipping: {missing} is missing and CI is not set");
    None
}

/// What a finished command printed, both streams.
fn said(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

#[test]
fn the_asyncapi_yaml_passes_the_asyncapi_parser_without_an_error() {
    let Some(tools) = contract_tools() else { return };
    let checked = Command::new("node")
        .arg(tools.join("validate-asyncapi.mjs"))
        .arg("asyncapi.yaml")
        .current_dir(ROOT)
        .output()
        .expect("node runs");
    let said = said(&checked);
    assert!(checked.status.success(), "the AsyncAPI parser refuses asyncapi.yaml:\n{said}");
    assert!(said.contains("valid AsyncAPI 3.0.0"), "{said}");
}

#[test]
fn the_validator_fails_on_a_document_with_an_error() {
    let Some(tools) = contract_tools() else { return };
    let broken = tempfile::NamedTempFile::with_suffix(".yaml").expect("a file");
    let document = "asyncapi: 3.0.0\ninfo:\n  title: broken\nchannels:\n  live:\n    address: /live\n";
    std::fs::write(broken.path(), document).expect("written");
    let checked =
        Command::new("node").arg(tools.join("validate-asyncapi.mjs")).arg(broken.path()).output().expect("node runs");
    let said = String::from_utf8_lossy(&checked.stdout);
    assert!(!checked.status.success(), "a document without info.version is refused:\n{said}");
    assert!(said.contains("error"), "the diagnostics are printed:\n{said}");
}

on_both_databases!(a_typescript_client_generated_from_the_contract_signs_in_reads_the_agenda_and_registers);

/// The client's build: types generated from `openapi.yaml`, then `tsc --strict`. Done once for
/// the test binary (both databases' runs share it); the error is what the tools printed.
fn built_client(tools: &Path) -> Result<PathBuf, String> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let build = Command::new("npm")
                .args(["run", "--silent", "client:build"])
                .current_dir(tools)
                .output()
                .map_err(|err| format!("npm runs: {err}"))?;
            if !build.status.success() {
                return Err(said(&build));
            }
            Ok(tools.join("client/out/main.js"))
        })
        .clone()
}

async fn a_typescript_client_generated_from_the_contract_signs_in_reads_the_agenda_and_registers(backend: Backend) {
    let Some(tools) = contract_tools() else { return };
    let client = built_client(&tools).unwrap_or_else(|said| panic!("the typed client does not build:\n{said}"));
    let Some(app) = spawn_app(backend).await else { return };
    let club = app.create_club("Typed club", "+79990100001").await;
    let tournament = app.create_tournament(&club, 20, chrono::Duration::days(3)).await;
    let phone = "+79990100002";

    let mut run = tokio::process::Command::new("node")
        .arg(&client)
        .env("FLOOR_API", app.url(""))
        .env("FLOOR_PHONE", phone)
        .env("FLOOR_TOURNAMENT", tournament.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node runs the client");
    let mut lines = BufReader::new(run.stdout.take().expect("its output")).lines();
    let Some(first) = next_line(&mut lines).await else { return client_failed(run).await };
    assert_eq!(first["codeRequested"]["channel"], "fake", "the client asked for a code: {first}");
    let mut input = run.stdin.take().expect("its input");
    input.write_all(format!("{}\n", app.last_code(phone)).as_bytes()).await.expect("the code is typed in");
    drop(input);
    let Some(seen) = next_line(&mut lines).await else { return client_failed(run).await };
    let finished = tokio::time::timeout(Duration::from_secs(30), run.wait_with_output()).await;
    let output = finished.expect("the client finishes").expect("its exit");
    assert!(output.status.success(), "the client failed: {}", String::from_utf8_lossy(&output.stderr));

    // What the client saw is what the server holds.
    let registrations =
        app.get(&format!("/tournaments/{tournament}/registrations"), Some(&club.owner.access_token)).await;
    let items = registrations.assert_ok()["items"].as_array().expect("items").clone();
    assert_eq!(items.len(), 1, "one registration: {items:?}");
    assert_eq!(seen["registration"]["id"], items[0]["id"], "{seen}");
    assert_eq!(seen["registration"]["tournamentId"], tournament.to_string());
    assert_eq!(seen["registration"]["status"], "registered");
    assert_eq!(seen["userId"], items[0]["userId"]);
    assert_eq!(seen["isNewUser"], true);
    assert_eq!(seen["agenda"], 1, "the agenda held the one tournament: {seen}");
    assert_eq!(seen["title"], "Турнир выходного дня");
    assert_eq!(seen["myStatus"], "registered", "the agenda marks the tournament as the player's");
    assert_eq!(seen["registerAgain"], "ALREADY_REGISTERED", "a second registration is refused by its code");
}

/// The next line the client prints, as JSON, within 30 s; `None` when it ended first.
async fn next_line(lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>) -> Option<Value> {
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the client answers within 30 s")
        .expect("its output reads")?;
    Some(serde_json::from_str(&line).unwrap_or_else(|err| panic!("a JSON line ({err}): {line}")))
}

/// Fails the test with what the client said on its way out.
async fn client_failed(run: tokio::process::Child) {
    let output = run.wait_with_output().await.expect("its exit");
    panic!("the client ended early ({}): {}", output.status, String::from_utf8_lossy(&output.stderr));
}
