//! The contract holds against the running server: schemathesis 4 (from PyPI, installed by
//! `.ci/run`) sends what `openapi.yaml` allows and what it forbids to a fresh server, signed in
//! as the platform admin, with every check on. No server error, no undocumented status, no
//! answer off its schema, nothing the schema allows refused (but the rules listed in
//! `tests/contract/schemathesis.toml`), nothing it forbids accepted.
//!
//! Random ids only ever find nothing, so the server holds a club with a venue, a tournament
//! open for registration, a running one with two tables and one to cancel, and the paths that
//! name such things are pinned to them and sent with the club owner's token: the rules behind
//! the `404` are checked too.

use std::fmt::Write as _;
use std::process::Stdio;

use chrono::Duration;
use uuid::Uuid;

use crate::helpers::{Backend, Session, TestApp, on_both_databases, spawn_app};
use crate::live::ready;

/// Test cases per operation and phase: the whole run stays within a minute or so.
/// `SCHEMATHESIS_EXAMPLES` sets another count.
const EXAMPLES: &str = "25";
/// A fixed seed: a failure in CI is reproduced by the same run anywhere.
/// `SCHEMATHESIS_SEED` sets another, or `random` for a new one each run (printed in the report).
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
    let rules = std::fs::read_to_string(format!("{root}/tests/contract/schemathesis.toml")).expect("the rules");
    let config = scratch.path().join("schemathesis.toml");
    let fixture = Fixture::made_in(&app).await;
    std::fs::write(&config, rules + &fixture.pinned()).expect("the config is written");
    let run = tokio::process::Command::new("st")
        .current_dir(scratch.path())
        .args(["--config-file", &config.display().to_string(), "run"])
        .arg(format!("{root}/openapi.yaml"))
        .args(["--url", &app.url("")])
        .args(["--header", &format!("Authorization: Bearer {}", admin.access_token)])
        .args(["--checks", "all", "--max-examples", &setting("SCHEMATHESIS_EXAMPLES", EXAMPLES)])
        .args(
            Some(setting("SCHEMATHESIS_SEED", SEED))
                .filter(|seed| seed != "random")
                .map(|seed| ["--seed".to_owned(), seed])
                .into_iter()
                .flatten(),
        )
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
    // The pinned paths reached their rows: the one to cancel is cancelled, the game moved on.
    let cancelled = app.get(&format!("/tournaments/{}", fixture.to_cancel), None).await;
    assert_eq!(cancelled.assert_ok()["status"], "cancelled", "cancel reached its tournament");
    let game = app.get(&format!("/tournaments/{}/live", fixture.running), None).await;
    let version = game.assert_ok()["version"].as_i64().unwrap_or(0);
    assert!(version > 1, "the live commands reached the running game (version {version})");
    let summary = report.lines().skip_while(|line| !line.contains("SUMMARY")).collect::<Vec<_>>().join("\n");
    eprintln!("{summary}");
}

/// The environment's `name`, else `default`.
fn setting(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

/// What the paths are pinned to: rows the server holds.
struct Fixture {
    owner: Session,
    club: Uuid,
    venue: Uuid,
    /// Open for registration.
    open: Uuid,
    /// Running, twelve players at two tables.
    running: Uuid,
    /// For `cancel` alone, so the others stay as they are.
    to_cancel: Uuid,
    /// A player of the running tournament.
    player: Uuid,
}

/// The live game's commands, run on the running tournament.
const LIVE_COMMANDS: [&str; 9] = [
    "POST /tournaments/{id}/level",
    "POST /tournaments/{id}/pause",
    "POST /tournaments/{id}/resume",
    "POST /tournaments/{id}/reseat",
    "POST /tournaments/{id}/reseat-batch",
    "POST /tournaments/{id}/eliminations/undo",
    "POST /tournaments/{id}/eliminations/reorder",
    "GET /tournaments/{id}/live",
    "GET /tournaments/{id}/table-break",
];
const CANCEL: &str = "POST /tournaments/{id}/cancel";

impl Fixture {
    async fn made_in(app: &TestApp) -> Self {
        let game = ready(app, "+79990300001", 301, 12).await;
        game.start(app).await;
        let venue = app.create_location(&game.club).await;
        let open = app.create_tournament(&game.club, 20, Duration::days(3)).await;
        let to_cancel = app.create_tournament(&game.club, 20, Duration::days(3)).await;
        Self {
            owner: game.club.owner.clone(),
            club: game.club.id,
            venue,
            open,
            running: game.id,
            to_cancel,
            player: game.players[0].user_id,
        }
    }

    /// The config's sections that pin the paths to the fixture (the club's with its owner's
    /// token), as TOML to append to the rules.
    fn pinned(&self) -> String {
        let owner = format!("Bearer {}", self.owner.access_token);
        let quoted = |names: &[&str]| format!("{names:?}");
        let mut toml = String::from("\n# The fixture of tests/api/schemathesis.rs.\n");
        let mut pin = |select: String, parameter: &str, id: Uuid, token: Option<&str>| {
            let _ = writeln!(toml, "\n[[operations]]\n{select}\nparameters = {{ \"path.{parameter}\" = \"{id}\" }}");
            if let Some(token) = token {
                let _ = writeln!(toml, "headers = {{ Authorization = \"{token}\" }}");
            }
        };
        let path = |regex: &str| format!("include-path-regex = '{regex}'");
        pin(path(r"^/organizers/\{id\}"), "id", self.club, Some(&owner));
        pin(path(r"^/locations/\{id\}"), "id", self.venue, Some(&owner));
        let mut elsewhere = LIVE_COMMANDS.to_vec();
        elsewhere.push(CANCEL);
        pin(
            format!("{}\nexclude-name = {}", path(r"^/tournaments/\{id\}"), quoted(&elsewhere)),
            "id",
            self.open,
            Some(&owner),
        );
        pin(format!("include-name = {}", quoted(&LIVE_COMMANDS)), "id", self.running, Some(&owner));
        pin(format!("include-name = {}", quoted(&[CANCEL])), "id", self.to_cancel, Some(&owner));
        pin(path(r"^/admin/tournaments/\{id\}"), "id", self.open, None);
        pin(path(r"^/admin/organizers/\{id\}"), "id", self.club, None);
        pin(path(r"^/players/\{userId\}"), "userId", self.player, None);
        // Someone's account for the admin's operations on one, never the run's own.
        pin(path(r"^/admin/users/\{id\}"), "id", self.player, None);
        pin(path(r"^/admin/admins/\{userId\}"), "userId", self.player, None);
        toml
    }
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
