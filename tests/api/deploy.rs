//! What `deploy/` promises an operator, checked against the documents it follows.

use std::collections::BTreeSet;

fn read(path: &str) -> String {
    std::fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR"))).expect("the file is committed")
}

/// Whether `word` is written like an environment variable (`UPPER_SNAKE`).
fn is_variable(word: &str) -> bool {
    word.len() > 2
        && word.starts_with(|c: char| c.is_ascii_uppercase())
        && word.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        && word.contains('_')
        || ["PORT"].contains(&word)
}

/// The variables the README's "Configuration" section names in backticks.
fn documented() -> BTreeSet<String> {
    let readme = read("README.md");
    let section = readme.split("\n## Configuration").nth(1).expect("a Configuration section");
    let section = section.split("\n## ").next().unwrap_or_default();
    section.split('`').skip(1).step_by(2).filter(|word| is_variable(word)).map(str::to_owned).collect()
}

/// The variables compose gives the floor service, set or passed through.
fn passed_by_compose() -> BTreeSet<String> {
    let compose = read("deploy/compose.yaml");
    let floor = compose.split("\n  floor:\n").nth(1).expect("a floor service");
    let environment = floor.split("    environment:\n").nth(1).expect("its environment");
    environment
        .lines()
        .take_while(|line| line.starts_with("      "))
        .filter_map(|line| line.trim().strip_prefix("- "))
        .map(|entry| entry.split('=').next().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn compose_passes_every_variable_the_readme_documents() {
    let documented = documented();
    assert!(documented.len() > 30, "{documented:?}");
    for name in ["JWT_SECRET", "FCM_SERVICE_ACCOUNT_JSON", "SMSRU_URL", "AWS_ACCESS_KEY_ID", "RATE_LIMIT_PUBLIC_READS"]
    {
        assert!(documented.contains(name), "the README documents {name}");
    }
    let passed = passed_by_compose();
    let missing: Vec<&String> = documented.difference(&passed).collect();
    assert!(missing.is_empty(), "compose leaves out {missing:?}");
}
