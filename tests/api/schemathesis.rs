//! The contract holds against the running server: schemathesis 4 (from PyPI, installed by
//! `.ci/run`) sends what `openapi.yaml` allows and what it forbids to a fresh server, signed in
//! as the platform admin, with every check on. No server error, no undocumented status, no
//! answer off its schema, nothing the schema allows refused (but the rules listed in
//! `tests/contract/schemathesis.toml`), nothing it forbids accepted.

use std::process::Stdio;

use crate::helpers::{Backend, on_both_databases, spawn_app};

/// Test cases per operation and phase: the whole run stays within a minute or so.
const EXAMPLES: &str = "25";
/// A fixed seed: a failure in CI is reproduced by the same run anywhere.
const SEED: &str = "20261125";

on_both_databases!(the_server_keeps_its_contract);

async fn the_server_keeps_its_contract(backend: Backend) {
    if !installed("st") {
        assert!(std::env::var_os("CI").is_none(), "schemathesis must be installed in CI (pip install schemathesis)");
        eprintln!("skipping: schemathesis (st) is not installed and CI is not set");
        return;
    }
    let Some(app) = spawn_app(backend).await else { return };
    let admin = app.platform_admin().await;
    let root = env!("CARGO_MANIFEST_DIR");
    // Hypothesis keeps its examples in the working directory: a scratch one.
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let run = tokio::process::Command::new("st")
        .current_dir(scratch.path())
        .args(["--config-file", &format!("{root}/tests/contract/schemathesis.toml"), "run"])
        .arg(format!("{root}/openapi.yaml"))
        .args(["--url", &app.url("")])
        .args(["--header", &format!("Authorization: Bearer {}", admin.access_token)])
        .args(["--checks", "all", "--max-examples", EXAMPLES, "--seed", SEED])
        .args(["--generation-database", "none", "--no-color", "--output-truncate", "false"])
        .stdin(Stdio::null())
        .output()
        .await
        .expect("schemathesis runs");
    let report = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "schemathesis found a breach of the contract:\n{report}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(report.contains("Tested: "), "schemathesis tested the operations:\n{report}");
}

/// Whether `program` runs here.
fn installed(program: &str) -> bool {
    std::process::Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}
