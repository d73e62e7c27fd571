//! The documents hold together: every relative link of `README.md`, `CONTRIBUTING.md`,
//! `deploy/README.md`, `vendor/PATCHES.md` and `docs/*.md` names a file that exists, and every
//! `#anchor` (in the same document or another) names one of that document's headings by its
//! GitHub slug; every repository path they name in backticks exists. The README stays short
//! and opens with its table of contents. Pure filesystem: no server.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The README's length, in lines, that it must stay under.
const README_LINES: usize = 250;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|err| panic!("reading {}: {err}", path.display()))
}

/// The documents whose links are checked: the four at fixed places and every `docs/*.md`.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ is committed")
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|extension| extension == "md"))
        .collect();
    docs.sort();
    let mut documents: Vec<PathBuf> = ["README.md", "CONTRIBUTING.md", "deploy/README.md", "vendor/PATCHES.md"]
        .iter()
        .map(|path| root.join(path))
        .collect();
    documents.extend(docs);
    documents
}

/// `text` without its fenced code blocks, line by line.
fn outside_fences(text: &str) -> Vec<&str> {
    let mut fence: Option<&str> = None;
    let mut lines = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        match fence {
            Some(opened) if trimmed.starts_with(opened) => fence = None,
            Some(_) => {}
            None if trimmed.starts_with("```") => fence = Some("```"),
            None if trimmed.starts_with("~~~") => fence = Some("~~~"),
            None => lines.push(line),
        }
    }
    lines
}

/// `text` with its inline code spans (a run of backticks up to the next run of the same
/// length, within a paragraph) made blank: what they hold is no link.
fn without_code_spans(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut kept = String::with_capacity(text.len());
    let mut at = 0;
    while at < chars.len() {
        if chars[at] != '`' {
            kept.push(chars[at]);
            at += 1;
            continue;
        }
        let run = chars[at..].iter().take_while(|c| **c == '`').count();
        let mut end = None;
        let mut look = at + run;
        while look < chars.len() {
            if chars[look] == '\n' && chars.get(look + 1) == Some(&'\n') {
                break;
            }
            if chars[look] == '`' {
                let closing = chars[look..].iter().take_while(|c| **c == '`').count();
                if closing == run {
                    end = Some(look + closing);
                    break;
                }
                look += closing;
            } else {
                look += 1;
            }
        }
        match end {
            Some(end) => {
                kept.push(' ');
                at = end;
            }
            None => {
                kept.extend(&chars[at..at + run]);
                at += run;
            }
        }
    }
    kept
}

/// The targets of the markdown links and images of `text`, outside code.
fn link_targets(text: &str) -> Vec<String> {
    let prose = without_code_spans(&outside_fences(text).join("\n"));
    let link = regex::Regex::new(r#"\[[^\]]*\]\(\s*([^)\s]*)(?:\s+"[^"]*")?\s*\)"#).expect("a valid pattern");
    link.captures_iter(&prose).map(|found| found[1].to_owned()).collect()
}

/// A heading's anchor as GitHub makes it: lowercase; letters (Cyrillic ones too), digits,
/// `-` and `_` kept; each space a `-`; any other character dropped.
fn slug(heading: &str) -> String {
    let link = regex::Regex::new(r"\[([^\]]*)\]\([^)]*\)").expect("a valid pattern");
    let text = link.replace_all(heading, "$1");
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .collect()
}

/// The headings of `text` (outside code blocks): level and text.
fn headings(text: &str) -> Vec<(usize, String)> {
    outside_fences(text)
        .into_iter()
        .filter_map(|line| {
            let level = line.chars().take_while(|c| *c == '#').count();
            let rest = &line[level..];
            ((1..=6).contains(&level) && rest.starts_with(' ')).then(|| (level, rest.trim().to_owned()))
        })
        .collect()
}

/// The anchors of a document's headings, a repeated one numbered `-1`, `-2`… as GitHub does.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut anchors = BTreeSet::new();
    for (_, heading) in headings(text) {
        let base = slug(&heading);
        let mut anchor = base.clone();
        let mut repeat = 0;
        while anchors.contains(&anchor) {
            repeat += 1;
            anchor = format!("{base}-{repeat}");
        }
        anchors.insert(anchor);
    }
    anchors
}

/// What is wrong with the relative links of `document`: each a line naming the link.
fn broken_links(document: &Path) -> Vec<String> {
    let text = read(document);
    let folder = document.parent().expect("a document is in a folder");
    let mut broken = Vec::new();
    for target in link_targets(&text) {
        if ["http://", "https://", "mailto:"].iter().any(|scheme| target.starts_with(scheme)) {
            continue;
        }
        let (path, anchor) = match target.split_once('#') {
            Some((path, anchor)) => (path, Some(anchor)),
            None => (target.as_str(), None),
        };
        let file = if path.is_empty() { document.to_path_buf() } else { folder.join(path) };
        if path.is_empty() && anchor.is_none() {
            broken.push(format!("{}: an empty link", document.display()));
            continue;
        }
        if !file.exists() {
            broken.push(format!("{}: ({target}) names {}, which does not exist", document.display(), file.display()));
            continue;
        }
        let Some(anchor) = anchor else { continue };
        if file.extension().is_none_or(|extension| extension != "md") {
            broken.push(format!("{}: ({target}) has an anchor into a file that is no document", document.display()));
            continue;
        }
        if !anchors(&read(&file)).contains(anchor) {
            broken.push(format!("{}: ({target}) names no heading of {}", document.display(), file.display()));
        }
    }
    broken
}

/// The inline code spans of `text`, outside fenced blocks.
fn code_spans(text: &str) -> Vec<String> {
    let prose = outside_fences(text).join("\n");
    let span = regex::Regex::new(r"`([^`\n]+)`").expect("a valid pattern");
    span.captures_iter(&prose).map(|found| found[1].to_owned()).collect()
}

/// What is wrong with the repository paths `document` names in backticks (`src/infra/db.rs`,
/// `tests/api/`): each a line naming the path. A span counts as a path when it is one word of
/// path characters with a `/` whose first part is a folder or file at the root (or `./`
/// before it); a pattern (`*`, `{id}`, `<crate>`, `…`) is no single path, and a web path
/// (`/api/v1/…`) starts with `/`. An anchor or a line number after the path is left off.
fn missing_paths(root: &Path, document: &Path) -> Vec<String> {
    let shape = regex::Regex::new(r"^(\./)?[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*/?$").expect("a valid pattern");
    let mut missing = Vec::new();
    for span in code_spans(&read(document)) {
        let path = span.split(['#', ':']).next().unwrap_or_default().trim_start_matches("./");
        if !path.contains('/') || !shape.is_match(path) {
            continue;
        }
        let first = path.split('/').next().unwrap_or_default();
        // `../shared/…` is outside the repository: a clone may not have it.
        if matches!(first, ".." | "target" | "data" | "node_modules") || !root.join(first).exists() {
            continue;
        }
        if !root.join(path).exists() && !in_a_vendored_crate(root, document, path) {
            missing.push(format!("{}: `{span}` names {path}, which does not exist", document.display()));
        }
    }
    missing
}

/// `vendor/PATCHES.md` names a vendored crate's files from the crate's folder (its "Changed
/// files", and a file of the crate a section named in full just before).
fn in_a_vendored_crate(root: &Path, document: &Path, path: &str) -> bool {
    document.ends_with("vendor/PATCHES.md")
        && std::fs::read_dir(root.join("vendor"))
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .any(|krate| krate.path().join(path).exists())
}

#[test]
fn every_path_the_documents_name_in_backticks_exists() {
    let root = root();
    let missing: Vec<String> = documents(&root).iter().flat_map(|document| missing_paths(&root, document)).collect();
    assert!(missing.is_empty(), "paths that do not exist:\n{}", missing.join("\n"));
}

/// The path check finds a path that is gone and leaves alone what is no path of this house.
#[test]
fn a_path_that_is_gone_is_found() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    std::fs::create_dir_all(folder.path().join("src/live")).expect("made");
    std::fs::write(folder.path().join("src/live/mod.rs"), "").expect("written");
    let document = folder.path().join("a.md");
    std::fs::write(
        &document,
        "`src/live/mod.rs`, `./src/live/mod.rs:12`, `src/live/`, `src/live/socket.rs#top`, `src/gone/`, \
         `src/live/*.rs`, `src/{a,b}.rs`, `/api/v1/health`, `elsewhere/x.rs`, `../shared/x.md`, `a/b c`\n\n```\n`src/fenced.rs`\n```\n",
    )
    .expect("written");
    let missing = missing_paths(folder.path(), &document);
    assert_eq!(missing.len(), 2, "{missing:#?}");
    assert!(missing[0].contains("src/live/socket.rs") && missing[1].contains("src/gone/"), "{missing:#?}");
}

#[test]
fn every_relative_link_of_the_documents_resolves() {
    let documents = documents(&root());
    assert!(documents.len() >= 9, "the README, CONTRIBUTING, deploy's README and docs/: {documents:?}");
    let broken: Vec<String> = documents.iter().flat_map(|document| broken_links(document)).collect();
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_readme_is_short_and_opens_with_a_table_of_contents() {
    let readme = read(&root().join("README.md"));
    let lines = readme.lines().count();
    assert!(lines < README_LINES, "README.md has {lines} lines; keep it under {README_LINES} and move detail to docs/");

    let sections: Vec<String> =
        headings(&readme).into_iter().filter(|(level, _)| *level == 2).map(|(_, heading)| heading).collect();
    let first = sections.first().map(String::as_str);
    assert!(
        matches!(first, Some("Contents" | "Table of contents")),
        "the README's first section is its table of contents, not {first:?}"
    );
    let contents = readme
        .split_once(&format!("\n## {}\n", sections[0]))
        .and_then(|(_, after)| after.split("\n## ").next())
        .expect("the table of contents");
    let listed = link_targets(contents);
    for section in &sections[1..] {
        let anchor = format!("#{}", slug(section));
        assert!(listed.contains(&anchor), "the table of contents lists \"{section}\" ({anchor})");
    }
}

#[test]
fn a_slug_is_github_s() {
    assert_eq!(slug("Quick start"), "quick-start");
    assert_eq!(slug("Health, readiness and metrics"), "health-readiness-and-metrics");
    assert_eq!(slug("The live path: from a press to every phone"), "the-live-path-from-a-press-to-every-phone");
    assert_eq!(
        slug("A player's rights: consent_changes and `serverTime`"),
        "a-players-rights-consent_changes-and-servertime"
    );
    assert_eq!(slug("Удалённый игрок: «имя»"), "удалённый-игрок-имя");
    assert_eq!(slug("See [the notes](docs/notes.md)"), "see-the-notes");
}

/// The check finds what it is for: a missing file, a missing heading here or there; and it
/// leaves alone what is no relative link (code, fenced blocks, web addresses).
#[test]
fn a_broken_link_or_anchor_is_found() {
    let folder = tempfile::tempdir().expect("a temporary folder");
    let write = |name: &str, text: &str| std::fs::write(folder.path().join(name), text).expect("written");
    write("b.md", "# B\n\n## Часть вторая\n\n## Часть вторая\n");
    write(
        "a.md",
        "# A\n\n## Part one\n\n[here](#part-one) [gone](#part-two) [there](b.md#часть-вторая-1) \
         [![a picture](b.md)](https://example.com) [nowhere](c.md) [`wrong`](b.md#b-2)\n\
         `[in code](d.md)` and ``a `[nested](e.md)` span``\n\n```sh\n[fenced](f.md)\n```\n\
         [web](https://example.com/#x) [mail](mailto:floor@example.com)\n",
    );
    let broken = broken_links(&folder.path().join("a.md"));
    assert_eq!(broken.len(), 3, "{broken:#?}");
    for (found, expected) in broken.iter().zip(["(#part-two)", "(c.md)", "(b.md#b-2)"]) {
        assert!(found.contains(expected), "{found} is about {expected}");
    }
}
