//! The contracts as the tools that clients are generated with read them: `asyncapi.yaml`
//! parsed by AsyncAPI's own parser (`tests/contract/`, installed from npm by `npm ci --prefix
//! tests/contract`). Outside CI a machine without Node or those packages skips; in CI that is
//! a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// `tests/contract/`, once its packages are installed and `node` runs.
fn contract_tools() -> Option<PathBuf> {
    let tools = Path::new(ROOT).join("tests/contract");
    let node = Command::new("node").arg("--version").output().is_ok_and(|out| out.status.success());
    let installed = tools.join("node_modules/@asyncapi/parser").is_dir();
    if node && installed {
        return Some(tools);
    }
    let missing = if node { "tests/contract/node_modules (npm ci --prefix tests/contract)" } else { "node" };
    assert!(std::env::var_os("CI").is_none(), "{missing} must be installed in CI");
    eprintln!("skipping: {missing} is missing and CI is not set");
    None
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
    let said = format!("{}{}", String::from_utf8_lossy(&checked.stdout), String::from_utf8_lossy(&checked.stderr));
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
