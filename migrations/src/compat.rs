//! Which releases run on a schema. Each migration says the oldest release of floor whose code
//! still works once it is applied; migrating records that, with the release that migrated, in
//! `schema_compat`. A binary that finds applied migrations it does not know (a rollback, or an
//! old node restarted during a rolling deploy) then serves without migrating when every one of
//! them allows its release, and refuses to start when one does not, naming the release to run.
//! sea-orm's migrator alone refuses any database with a migration it has no file for, which
//! made every rollback a failed start.
//!
//! The two-step rule (docs/operations.md#upgrading): a migration only adds (a table, a nullable
//! or defaulted column, an index), and every release since [`FIRST_RELEASE`] runs on it; what
//! the release before still reads or writes is dropped or renamed only by a later release,
//! once no supported release uses it, and such a migration is listed in [`BREAKING`].

use std::collections::{BTreeMap, BTreeSet};

use sea_orm_migration::SchemaManager;
use sea_orm_migration::prelude::{OnConflict, Query};
use sea_orm_migration::sea_orm::{ConnectionTrait, DatabaseConnection, DbErr, Statement};
use semver::Version;

use crate::{Migrator, MigratorTrait};

/// This build's release.
pub const RELEASE: &str = env!("CARGO_PKG_VERSION");

/// The first release that reads the declarations: a build before it refuses any migration it
/// does not know, whatever is declared.
pub const FIRST_RELEASE: &str = "0.2.0";

/// The migrations that take away something older code used (an index or a constraint it
/// relied on, a table or a column), each with the oldest release whose code runs once it is
/// applied. Every other migration only adds, and asks for [`FIRST_RELEASE`].
pub const BREAKING: &[(&str, &str)] = &[
    // Both came before the first release, which knows them: no release runs without them.
    ("m20261122_000007_relax_late_cancel_strikes", FIRST_RELEASE),
    ("m20261126_000018_keep_push_tokens_per_account", FIRST_RELEASE),
];

/// The oldest release whose code runs on a schema with `migration` applied.
pub fn oldest_release(migration: &str) -> &'static str {
    BREAKING.iter().find(|(name, _)| *name == migration).map_or(FIRST_RELEASE, |(_, oldest)| oldest)
}

/// What a migration declared when it was applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declared {
    /// The oldest release whose code runs with it applied.
    pub oldest_release: String,
    /// The release that applied it.
    pub applied_by: String,
}

/// What this binary may do with the database it finds.
#[derive(Debug, PartialEq, Eq)]
pub enum Standing {
    /// Every applied migration is known here: the pending ones are applied.
    Known,
    /// Migrations of a newer release are applied, each declared to run with this one: it
    /// serves without migrating.
    Ahead { newer: Vec<String> },
    /// This release must not run on it; the text says why and which release to run.
    Refused(String),
}

/// Judges the database's `applied` migrations against the `known` ones of `release`, with
/// what the unknown ones `declared`.
pub fn judge(applied: &[String], known: &[String], declared: &BTreeMap<String, Declared>, release: &str) -> Standing {
    let known_set: BTreeSet<&String> = known.iter().collect();
    let newer: Vec<String> = applied.iter().filter(|name| !known_set.contains(name)).cloned().collect();
    if newer.is_empty() {
        return Standing::Known;
    }
    let this = match Version::parse(release) {
        Ok(this) => this,
        Err(err) => return Standing::Refused(format!("this build's release {release:?} is not a version: {err}")),
    };
    let applied_set: BTreeSet<&String> = applied.iter().collect();
    let missing: Vec<&String> = known.iter().filter(|name| !applied_set.contains(name)).collect();
    if !missing.is_empty() {
        return Standing::Refused(format!(
            "the database has migrations floor {release} does not know ({}) but lacks some it does ({}): it \
             was not migrated by a release of this line",
            newer.join(", "),
            missing.iter().map(|name| name.as_str()).collect::<Vec<_>>().join(", ")
        ));
    }
    for name in &newer {
        let Some(declared) = declared.get(name) else {
            return Standing::Refused(format!(
                "the database has migration {name}, which floor {release} does not know and nothing says it may \
                 run on: run the release that applied it, or a newer one"
            ));
        };
        let needs = match Version::parse(&declared.oldest_release) {
            Ok(needs) => needs,
            Err(err) => {
                return Standing::Refused(format!(
                    "migration {name} asks for release {:?}, which is not a version: {err}",
                    declared.oldest_release
                ));
            }
        };
        if needs > this {
            return Standing::Refused(format!(
                "the database has migration {name}, applied by floor {}, which runs only with floor {needs} or \
                 newer; this is floor {release}: run floor {needs} or newer",
                declared.applied_by
            ));
        }
    }
    Standing::Ahead { newer }
}

/// The migrations applied to `db`, oldest first, whether this release knows them or not
/// (read only: none before the first).
pub async fn applied(db: &DatabaseConnection) -> Result<Vec<String>, DbErr> {
    if !SchemaManager::new(db).has_table("seaql_migrations").await? {
        return Ok(Vec::new());
    }
    read_strings(db, "SELECT version FROM seaql_migrations ORDER BY version").await
}

/// This binary's standing on `db` (read only).
pub async fn standing(db: &DatabaseConnection) -> Result<Standing, DbErr> {
    let manager = SchemaManager::new(db);
    let applied = applied(db).await?;
    let declared = if manager.has_table("schema_compat").await? { read_declared(db).await? } else { BTreeMap::new() };
    Ok(judge(&applied, &known(), &declared, RELEASE))
}

/// Records what each migration this binary knows declares, where nothing is recorded for it
/// yet (the release that applied it said it first), in one statement. Run after migrating.
pub async fn record(db: &DatabaseConnection) -> Result<(), DbErr> {
    let mut insert = Query::insert();
    insert
        .into_table("schema_compat")
        .columns(["migration", "oldest_release", "applied_by"])
        .on_conflict(OnConflict::column("migration").do_nothing().to_owned());
    for name in known() {
        let oldest = oldest_release(&name);
        insert.values_panic([name.into(), oldest.into(), RELEASE.into()]);
    }
    db.execute(&insert).await?;
    Ok(())
}

/// The migrations this release knows, oldest first.
pub fn known() -> Vec<String> {
    Migrator::migrations().iter().map(|migration| migration.name().to_owned()).collect()
}

async fn read_strings(db: &DatabaseConnection, sql: &str) -> Result<Vec<String>, DbErr> {
    let rows = db.query_all_raw(Statement::from_string(db.get_database_backend(), sql)).await?;
    rows.into_iter().map(|row| row.try_get_by_index::<String>(0)).collect()
}

async fn read_declared(db: &DatabaseConnection) -> Result<BTreeMap<String, Declared>, DbErr> {
    let sql = "SELECT migration, oldest_release, applied_by FROM schema_compat";
    let rows = db.query_all_raw(Statement::from_string(db.get_database_backend(), sql)).await?;
    rows.into_iter()
        .map(|row| {
            let declared = Declared { oldest_release: row.try_get_by_index(1)?, applied_by: row.try_get_by_index(2)? };
            Ok((row.try_get_by_index(0)?, declared))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    fn declared(entries: &[(&str, &str, &str)]) -> BTreeMap<String, Declared> {
        entries
            .iter()
            .map(|(name, oldest, by)| {
                ((*name).to_owned(), Declared { oldest_release: (*oldest).to_owned(), applied_by: (*by).to_owned() })
            })
            .collect()
    }

    #[test]
    fn a_database_with_only_known_migrations_is_migrated() {
        let known = names(&["m1", "m2", "m3"]);
        assert_eq!(judge(&names(&[]), &known, &BTreeMap::new(), "0.2.0"), Standing::Known);
        assert_eq!(judge(&names(&["m1"]), &known, &BTreeMap::new(), "0.2.0"), Standing::Known);
        assert_eq!(judge(&known, &known, &BTreeMap::new(), "0.2.0"), Standing::Known);
    }

    #[test]
    fn newer_migrations_that_allow_this_release_are_served_without_migrating() {
        let known = names(&["m1", "m2"]);
        let applied = names(&["m1", "m2", "m3", "m4"]);
        let said = declared(&[("m3", "0.2.0", "0.3.0"), ("m4", "0.3.0", "0.4.0")]);
        assert_eq!(judge(&applied, &known, &said, "0.3.0"), Standing::Ahead { newer: names(&["m3", "m4"]) });
        assert_eq!(judge(&applied, &known, &said, "0.3.1"), Standing::Ahead { newer: names(&["m3", "m4"]) });
    }

    #[test]
    fn a_newer_migration_that_needs_a_newer_release_is_refused_naming_it() {
        let known = names(&["m1"]);
        let applied = names(&["m1", "m2"]);
        let said = declared(&[("m2", "0.4.0", "0.4.1")]);
        let Standing::Refused(why) = judge(&applied, &known, &said, "0.3.9") else { panic!("refused") };
        assert!(why.contains("run floor 0.4.0 or newer") && why.contains("applied by floor 0.4.1"), "{why}");
        // A pre-release of the release asked for is older than it.
        assert!(matches!(judge(&applied, &known, &said, "0.4.0-rc.1"), Standing::Refused(_)));
        assert!(matches!(judge(&applied, &known, &said, "0.4.0"), Standing::Ahead { .. }));
    }

    #[test]
    fn a_newer_migration_that_declares_nothing_is_refused() {
        let Standing::Refused(why) = judge(&names(&["m1", "m2"]), &names(&["m1"]), &BTreeMap::new(), "0.2.0") else {
            panic!("refused")
        };
        assert!(why.contains("m2"), "{why}");
    }

    #[test]
    fn a_declaration_that_is_not_a_version_is_refused() {
        let said = declared(&[("m2", "soon", "0.3.0")]);
        assert!(matches!(judge(&names(&["m1", "m2"]), &names(&["m1"]), &said, "0.2.0"), Standing::Refused(_)));
        assert!(matches!(judge(&names(&["m1", "m2"]), &names(&["m1"]), &said, "dev"), Standing::Refused(_)));
    }

    #[test]
    fn newer_migrations_over_a_gap_in_the_known_ones_are_refused() {
        let said = declared(&[("m3", "0.2.0", "0.3.0")]);
        let Standing::Refused(why) = judge(&names(&["m1", "m3"]), &names(&["m1", "m2"]), &said, "0.2.0") else {
            panic!("refused")
        };
        assert!(why.contains("m2"), "{why}");
    }

    #[test]
    fn every_breaking_migration_is_one_of_ours_and_names_a_release() {
        let known = known();
        for (name, oldest) in BREAKING {
            assert!(known.iter().any(|known| known == name), "{name} is a migration");
            assert!(Version::parse(oldest).is_ok(), "{name} names a release: {oldest}");
        }
        assert!(Version::parse(RELEASE).is_ok_and(|this| this >= Version::new(0, 2, 0)));
    }
}
