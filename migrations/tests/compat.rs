//! The two-step rule, held by CI: a migration that drops or renames is declared in
//! `compat::BREAKING` with a release the one before it still satisfies, and the migrations of
//! every release kept in `tests/compat/<release>/migrations.txt` are today's first ones, in
//! order, so that release's binary knows where it stands on today's schema.

use std::path::{Path, PathBuf};

use floor_migrations::compat::{BREAKING, RELEASE, known, oldest_release};
use semver::Version;

/// What, in a migration's `up`, takes away something older code may use.
const TAKES_AWAY: &[&str] = &[
    "drop_table",
    "drop_column",
    "drop_index",
    "drop_foreign_key",
    "rename_table",
    "rename_column",
    "modify_column",
    "DROP ",
    "RENAME ",
    "ALTER COLUMN",
];

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Each release kept in `tests/compat`, oldest first, with its migrations.
fn releases() -> Vec<(Version, Vec<String>)> {
    let folder = repository().join("tests/compat");
    let mut releases: Vec<(Version, Vec<String>)> = std::fs::read_dir(&folder)
        .unwrap_or_else(|err| panic!("{}: {err}", folder.display()))
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version = Version::parse(entry.file_name().to_str()?).ok()?;
            let list = std::fs::read_to_string(entry.path().join("migrations.txt")).ok()?;
            Some((version, list.lines().map(str::to_owned).filter(|line| !line.is_empty()).collect()))
        })
        .collect();
    releases.sort();
    releases
}

/// The text of `name`'s `up`.
fn up_of(name: &str) -> String {
    let path = repository().join("migrations/src").join(format!("{name}.rs"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    let from = text.find("async fn up").unwrap_or_else(|| panic!("{name} has an up"));
    let to = text[from..].find("async fn down").map_or(text.len(), |to| from + to);
    text[from..to].to_owned()
}

#[test]
fn a_migration_that_takes_away_is_declared_breaking() {
    for name in known() {
        let up = up_of(&name);
        let Some(what) = TAKES_AWAY.iter().find(|what| up.contains(*what)) else { continue };
        assert!(
            BREAKING.iter().any(|(breaking, _)| *breaking == name),
            "{name} runs {what:?} in its up but is not in compat::BREAKING. The two-step rule \
             (docs/operations.md#upgrading): a release stops using what is taken away, and a later release \
             takes it away, declared in BREAKING with the oldest release that runs on it, no newer than the \
             release before its own"
        );
    }
}

#[test]
fn a_breaking_migration_lets_the_release_before_its_own_run() {
    let releases = releases();
    for (name, oldest) in BREAKING {
        let oldest = Version::parse(oldest).expect("a version");
        // The release it first shipped in (or the next one, not kept yet), and the one before.
        let shipped = releases.iter().position(|(_, migrations)| migrations.iter().any(|known| known == name));
        let before = match shipped {
            Some(at) => at.checked_sub(1).map(|before| &releases[before].0),
            None => releases.last().map(|(version, _)| version),
        };
        if let Some(before) = before {
            assert!(
                oldest <= *before,
                "{name} needs floor {oldest}, so floor {before} cannot run beside it during the deploy or \
                 after a rollback: take it away one release later"
            );
        }
    }
}

#[test]
fn every_kept_release_knows_todays_first_migrations_in_order() {
    let known = known();
    let releases = releases();
    assert!(!releases.is_empty(), "tests/compat keeps the releases' migrations");
    for (version, migrations) in &releases {
        assert!(
            known.starts_with(migrations),
            "floor {version}'s migrations are today's first ones: a released migration is never removed, \
             renamed or moved"
        );
    }
}

#[test]
fn the_release_before_this_one_runs_on_todays_schema() {
    let this = Version::parse(RELEASE).expect("a version");
    let Some((before, migrations)) = releases().into_iter().rev().find(|(version, _)| *version < this) else {
        return;
    };
    for name in known().iter().filter(|name| !migrations.contains(name)) {
        let needs = Version::parse(oldest_release(name)).expect("a version");
        assert!(needs <= before, "{name} needs floor {needs}: floor {before} could not run beside this release");
    }
}

/// Cutting a release keeps its migrations' names: with `FLOOR_WRITE_COMPAT` set this writes
/// them to `tests/compat/<release>/migrations.txt`; otherwise, for a kept release, they are
/// today's.
#[test]
fn compat_this_release_keeps_its_migrations() {
    let path = repository().join("tests/compat").join(RELEASE).join("migrations.txt");
    let today = known().join("\n") + "\n";
    if std::env::var_os("FLOOR_WRITE_COMPAT").is_some() {
        let written =
            path.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|()| std::fs::write(&path, &today));
        written.unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    } else if let Ok(kept) = std::fs::read_to_string(&path) {
        assert_eq!(kept, today, "{} lists release {RELEASE}'s migrations", path.display());
    }
}
