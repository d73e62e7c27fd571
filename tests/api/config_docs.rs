//! The documents of the configuration agree with its declarations (`src/infra/config/`): every
//! variable Floor reads is in exactly one row of the tables of variables (the README's
//! "Configuration", docs/operations.md's "Timeouts and caps"), with the default the code
//! declares, and no row names a variable the code does not read. Pure filesystem: no server.

use std::path::PathBuf;

use floor::infra::config::{DocumentedVariable, documented_variables};

/// The sections whose tables of variables are checked: a document and a heading of it.
const SECTIONS: [(&str, &str); 2] = [("README.md", "Configuration"), ("docs/operations.md", "Timeouts and caps")];

/// One row of a table of variables.
#[derive(Debug)]
struct Row {
    /// Where it is, as `README.md:61`.
    place: String,
    /// The variables it names in its first cell (the `AWS_*` row names several).
    names: Vec<String>,
    /// Its second cell, as written.
    default: String,
}

fn cells(line: &str) -> Vec<String> {
    line.trim().trim_start_matches('|').trim_end_matches('|').split('|').map(|cell| cell.trim().to_owned()).collect()
}

/// The rows of the tables of variables (a first column `variable`, a second `default`) in the
/// section of `text` under the heading `## {heading}`.
fn rows(document: &str, text: &str, heading: &str) -> Vec<Row> {
    let name = regex::Regex::new(r"`([A-Z][A-Z0-9_]*)`").expect("a valid pattern");
    let mut rows = Vec::new();
    let mut inside = false;
    let mut in_table = false;
    for (index, line) in text.lines().enumerate() {
        if let Some(title) = line.strip_prefix("## ") {
            inside = title.trim() == heading;
            in_table = false;
            continue;
        }
        if !inside {
            continue;
        }
        if !line.trim_start().starts_with('|') {
            in_table = false;
            continue;
        }
        let cells = cells(line);
        if cells.len() >= 2 && cells[0] == "variable" && cells[1] == "default" {
            in_table = true;
            continue;
        }
        if !in_table || cells.iter().all(|cell| cell.chars().all(|c| c == '-' || c == ':')) {
            continue;
        }
        rows.push(Row {
            place: format!("{document}:{}", index + 1),
            names: name.captures_iter(&cells[0]).map(|found| found[1].to_owned()).collect(),
            default: cells.get(1).cloned().unwrap_or_default(),
        });
    }
    rows
}

/// Whether a cell writes `declared`: exactly, or followed by a gloss in parentheses
/// (`` `67108864` (64 MiB) ``).
fn agrees(cell: &str, declared: &str) -> bool {
    cell == declared || cell.strip_prefix(declared).is_some_and(|gloss| gloss.starts_with(" (") && gloss.ends_with(')'))
}

/// What the rows get wrong about `variables`: each a line naming the variable and the place.
fn disagreements(variables: &[DocumentedVariable], rows: &[Row]) -> Vec<String> {
    let mut wrong = Vec::new();
    for variable in variables {
        let found: Vec<&Row> = rows.iter().filter(|row| row.names.contains(&variable.name)).collect();
        match found.as_slice() {
            [] => wrong.push(format!("{} (default {}) is in no table of variables", variable.name, variable.default)),
            [row] if !agrees(&row.default, &variable.default) => wrong.push(format!(
                "{}: {} has the default {}, the code's is {}",
                row.place, variable.name, row.default, variable.default
            )),
            [_] => {}
            several => {
                let places: Vec<&str> = several.iter().map(|row| row.place.as_str()).collect();
                wrong.push(format!("{} is in {} rows: {}", variable.name, several.len(), places.join(", ")));
            }
        }
    }
    for row in rows {
        if row.names.is_empty() {
            wrong.push(format!("{}: a row that names no variable", row.place));
        }
        for name in &row.names {
            if !variables.iter().any(|variable| variable.name == *name) {
                wrong.push(format!("{}: {name} is no variable the code reads", row.place));
            }
        }
    }
    wrong
}

/// Every variable Floor reads: those its configuration declares, and the `AWS_*` ones
/// object_store reads for an `s3://` `STORAGE_URL`.
fn read_by_the_code() -> Vec<DocumentedVariable> {
    let mut variables = documented_variables();
    variables.extend(
        floor::infra::storage::AWS_VARIABLES
            .iter()
            .map(|name| DocumentedVariable { name: (*name).to_owned(), default: "unset".to_owned() }),
    );
    variables
}

#[test]
fn every_variable_is_documented_once_with_the_default_the_code_declares() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let rows: Vec<Row> = SECTIONS
        .iter()
        .flat_map(|(document, heading)| {
            let text = std::fs::read_to_string(root.join(document)).unwrap_or_else(|err| panic!("{document}: {err}"));
            rows(document, &text, heading)
        })
        .collect();
    let wrong = disagreements(&read_by_the_code(), &rows);
    assert!(wrong.is_empty(), "the documents and the declarations disagree:\n{}", wrong.join("\n"));
}

/// The check finds a wrong default, a variable with no row, a row of a variable nobody reads
/// and a variable in two tables, and takes a gloss after a default.
#[test]
fn a_wrong_default_and_a_missing_row_are_found() {
    let variable =
        |name: &str, default: &str| DocumentedVariable { name: name.to_owned(), default: default.to_owned() };
    let variables = [
        variable("PORT", "`8080`"),
        variable("REDIS_URL", "unset"),
        variable("LIVE_JOIN_ACKS_BYTES", "`67108864`"),
        variable("HTTP_HEADER_TIMEOUT", "`10s`"),
    ];
    let readme = "\
## Configuration\n\n| variable | default | meaning |\n|---|---|---|\n\
| `PORT` | `9090` | the port |\n\
| `LIVE_JOIN_ACKS_BYTES` | `67108864` (64 MiB) | bytes |\n\
| `HTTP_HEADER_TIMEOUT` | `10s` | here |\n\
| `GHOST_URL` | unset | read by nobody |\n\n\
## Elsewhere\n\n| variable | default | meaning |\n|---|---|---|\n| `REDIS_URL` | unset | not a section checked |\n";
    let operations = "## Timeouts and caps\n\n| variable | default | what |\n|---|---|---|\n| `HTTP_HEADER_TIMEOUT` | `10s` | there too |\n";
    let mut found = rows("README.md", readme, "Configuration");
    found.extend(rows("docs/operations.md", operations, "Timeouts and caps"));
    let wrong = disagreements(&variables, &found);
    assert_eq!(
        wrong,
        [
            "README.md:5: PORT has the default `9090`, the code's is `8080`",
            "REDIS_URL (default unset) is in no table of variables",
            "HTTP_HEADER_TIMEOUT is in 2 rows: README.md:7, docs/operations.md:5",
            "README.md:8: GHOST_URL is no variable the code reads",
        ]
    );
}
