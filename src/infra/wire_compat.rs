//! What crosses between nodes, as each release sent it: `tests/compat/<release>/` keeps a
//! sample of every kind of each message (the bus's notes, the work handed to a tournament's
//! owner and its answers), and each message's tests hold two things with these helpers. Today's
//! code reads every kept release's samples. The release before this one reads today's: a kind
//! it does not know is sent only once every node runs a release that does (the bus's notes are
//! gated so, `crate::infra::bus::releases`; forwarded work has no gate, so a new kind there fails the
//! test), and no field it reads is dropped, renamed or changes type
//! (docs/operations.md#upgrading).
//!
//! Cutting a release writes its samples: `FLOOR_WRITE_COMPAT=1 cargo test --workspace
//! compat_this_release` (the migrations' names too).

use std::path::{Path, PathBuf};

use semver::Version;
use serde_json::Value;

fn folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/compat")
}

/// Every kept release's samples in `file`, oldest first.
pub(crate) fn kept(file: &str) -> Vec<(Version, Vec<Value>)> {
    let mut kept: Vec<(Version, Vec<Value>)> = std::fs::read_dir(folder())
        .expect("tests/compat is readable")
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let release = Version::parse(entry.file_name().to_str()?).ok()?;
            let text = std::fs::read_to_string(entry.path().join(file)).ok()?;
            let samples = serde_json::from_str(&text).unwrap_or_else(|err| panic!("{release}/{file}: {err}"));
            Some((release, samples))
        })
        .collect();
    kept.sort_by(|a, b| a.0.cmp(&b.0));
    kept
}

/// The samples of the newest kept release older than this build's.
pub(crate) fn before_this(file: &str) -> Option<(Version, Vec<Value>)> {
    let this = Version::parse(crate::infra::release::VERSION).expect("the release is a version");
    kept(file).into_iter().rev().find(|(release, _)| *release < this)
}

/// When this build is a kept release, its samples in `file` are `today`'s; with
/// `FLOOR_WRITE_COMPAT` set, writes `today`'s there instead (cutting the release).
pub(crate) fn this_release_keeps(file: &str, today: &[Value]) {
    let path = folder().join(crate::infra::release::VERSION).join(file);
    if std::env::var_os("FLOOR_WRITE_COMPAT").is_some() {
        let text = serde_json::to_string_pretty(today).expect("json") + "\n";
        let written = path.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|()| std::fs::write(&path, text));
        written.unwrap_or_else(|err| panic!("{}: {err}", path.display()));
        return;
    }
    let Ok(text) = std::fs::read_to_string(&path) else { return };
    let kept: Vec<Value> = serde_json::from_str(&text).expect("json");
    assert_eq!(
        kept,
        today,
        "{} is what release {} sends: a change to what crosses between nodes is the next release's",
        path.display(),
        crate::infra::release::VERSION
    );
}

/// The kinds of a sample, outermost first: every `kind` in it, depth first.
pub(crate) fn kind_of(sample: &Value) -> String {
    fn collect(value: &Value, kinds: &mut Vec<String>) {
        match value {
            Value::Object(fields) => {
                if let Some(Value::String(kind)) = fields.get("kind") {
                    kinds.push(kind.clone());
                }
                fields.iter().filter(|(name, _)| *name != "kind").for_each(|(_, value)| collect(value, kinds));
            }
            Value::Array(items) => items.iter().for_each(|item| collect(item, kinds)),
            _ => {}
        }
    }
    let mut kinds = Vec::new();
    collect(sample, &mut kinds);
    kinds.join(":")
}

/// Whether a reader of `old` reads `new`: every field of `old` is in `new` with a value of the
/// same JSON type, down through objects and the first item of arrays (`null` stands for an
/// absent optional value, which any type may fill).
pub(crate) fn keeps_fields(old: &Value, new: &Value, at: &str) -> Result<(), String> {
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => old.iter().try_for_each(|(name, value)| match new.get(name) {
            Some(now) => keeps_fields(value, now, &format!("{at}.{name}")),
            None if value.is_null() => Ok(()),
            None => Err(format!("{at}.{name} is gone")),
        }),
        (Value::Array(old), Value::Array(new)) => match (old.first(), new.first()) {
            (Some(old), Some(new)) => keeps_fields(old, new, &format!("{at}[0]")),
            _ => Ok(()),
        },
        (Value::Null, _) | (_, Value::Null) => Ok(()),
        (old, new) if std::mem::discriminant(old) == std::mem::discriminant(new) => Ok(()),
        (old, new) => Err(format!("{at} was {old} and is {new}")),
    }
}

/// The release before reads `today`'s samples of a message kept in `file`, but for the
/// `gated` kinds, which are not sent while it runs.
pub(crate) fn the_release_before_reads(file: &str, today: &[Value], gated: &[String]) {
    let Some((before, samples)) = before_this(file) else { return };
    for sample in today {
        let kind = kind_of(sample);
        if gated.contains(&kind) {
            continue;
        }
        let Some(old) = samples.iter().find(|old| kind_of(old) == kind) else {
            panic!(
                "{file}: floor {before} does not know the kind {kind:?}: it must not be sent while floor {before} \
                 may run beside this release (gate it on the cluster's release)"
            );
        };
        if let Err(gone) = keeps_fields(old, sample, &kind) {
            panic!("{file}: floor {before} could not read today's {kind:?}: {gone}");
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_kind_is_every_kind_in_the_sample() {
        assert_eq!(kind_of(&json!({"kind": "command", "command": {"kind": "level", "args": "next"}})), "command:level");
        assert_eq!(kind_of(&json!({"kind": "replay", "commands": [{"command": {"kind": "pause"}}]})), "replay:pause");
        assert_eq!(kind_of(&json!({"version": 1})), "");
    }

    #[test]
    fn a_reader_reads_added_fields_and_not_dropped_or_retyped_ones() {
        let old = json!({"kind": "tournament", "version": 3, "tables": [{"seats": [{"name": "A"}]}], "key": null});
        let added = json!({"kind": "tournament", "version": 4, "tables": [{"seats": [{"name": "B", "new": 1}]}]});
        assert_eq!(keeps_fields(&old, &added, "note"), Ok(()));
        let dropped = json!({"kind": "tournament", "tables": []});
        assert_eq!(keeps_fields(&old, &dropped, "note"), Err("note.version is gone".to_owned()));
        let retyped = json!({"kind": "tournament", "version": "4", "tables": []});
        assert!(keeps_fields(&old, &retyped, "note").is_err_and(|why| why.contains("note.version")));
        let deep = json!({"kind": "tournament", "version": 4, "tables": [{"seats": [{"nom": "B"}]}]});
        assert!(keeps_fields(&old, &deep, "note").is_err_and(|why| why.contains("tables[0].seats[0].name")));
    }

    #[test]
    fn the_first_release_is_kept() {
        assert!(kept("notes.json").iter().any(|(release, _)| *release == Version::new(0, 2, 0)));
    }
}
