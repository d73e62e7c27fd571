//! Records which commit a build is of, for `floor --version`, the startup line and the
//! `floor_build_info` metric: `FLOOR_COMMIT` when the builder sets it (the image, whose build
//! context has no `.git`), otherwise what git says, otherwise "unknown".

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=FLOOR_COMMIT");
    let commit = std::env::var("FLOOR_COMMIT").ok().filter(|commit| !commit.trim().is_empty()).or_else(git_head);
    println!("cargo:rustc-env=FLOOR_COMMIT={}", commit.as_deref().map_or("unknown", str::trim));
}

/// The checked-out commit, abbreviated, with the files that move with it watched so a new
/// commit builds again.
fn git_head() -> Option<String> {
    let git = |args: &[&str]| {
        let output = Command::new("git").args(args).output().ok()?;
        output.status.success().then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
    };
    for watched in ["HEAD", "packed-refs"] {
        if let Some(path) = git(&["rev-parse", "--git-path", watched]) {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"])
        && let Some(path) = git(&["rev-parse", "--git-path", &branch])
    {
        println!("cargo:rerun-if-changed={path}");
    }
    git(&["rev-parse", "--short=12", "HEAD"])
}
