//! The Node peer the fan-out is compared with: `bench/peer-node/`, a copy of the shared
//! performance kit's `peer-node/`, plain socket.io 4.x with its defaults (no permessage-deflate,
//! the in-memory adapter, one process), no database and no logic but building the LiveState
//! again on each change: what a team on the Node stack would run at best. It speaks floor's
//! contract for what the benchmark does (`/live`, `join` and its ack, `pause` and `resume`
//! answered with the LiveState), so the same watchers measure both.
//!
//! `floor-bench --peer <dir>` measures, for each N and each repetition, a fresh floor and then
//! a fresh peer, and gives floor's figures as ratios to the peer's of the same repetition: a
//! machine of this kind drifts by ±20 % within minutes, and a ratio taken minutes apart, or on
//! another machine, is not a lead.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

/// The token the watchers and the presses present: the peer takes any that is not empty.
pub const TOKEN: &str = "perf-token";
/// The tournament the watchers join: the peer makes one for any id on first use.
pub const TOURNAMENT: &str = "perf-t1";

/// The peer's script and the size of its LiveState.
pub struct Peer {
    dir: PathBuf,
    /// Players and eliminations of its LiveState: 500 and 100 give 64 KB, against floor's
    /// 65 KB with its defaults (470 and 100).
    pub players: usize,
    pub eliminated: usize,
}

impl Peer {
    /// The peer of `dir` with its packages installed: when `dir` has none (the kit's folder may
    /// be read-only), a copy of its files in the temporary directory, installed there with
    /// `npm ci` once.
    pub fn prepare(dir: &Path, players: usize, eliminated: usize) -> anyhow::Result<Self> {
        const FILES: [&str; 3] = ["server.js", "package.json", "package-lock.json"];
        if !dir.join("server.js").is_file() {
            bail!("{} holds no server.js: --peer names the peer's folder (bench/peer-node)", dir.display());
        }
        if installed(dir) {
            // The peer runs in a temporary folder of its own: its script is named from anywhere.
            let dir = std::path::absolute(dir).with_context(|| format!("the path of {}", dir.display()))?;
            return Ok(Self { dir, players, eliminated });
        }
        let copy = std::env::temp_dir().join("floor-bench-peer-node");
        std::fs::create_dir_all(&copy).with_context(|| format!("creating {}", copy.display()))?;
        for file in FILES {
            std::fs::copy(dir.join(file), copy.join(file))
                .with_context(|| format!("copying {} to {}", dir.join(file).display(), copy.display()))?;
        }
        if !installed(&copy) {
            let status = Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
                .current_dir(&copy)
                .status()
                .context("running npm ci for the Node peer (it needs node and npm)")?;
            if !status.success() || !installed(&copy) {
                bail!("npm ci in {} failed: {status}", copy.display());
            }
        }
        Ok(Self { dir: copy, players, eliminated })
    }

    pub fn script(&self) -> PathBuf {
        self.dir.join("server.js")
    }
}

/// Whether the peer's packages are installed in `dir`.
fn installed(dir: &Path) -> bool {
    dir.join("node_modules/socket.io/package.json").is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_installed_peer_named_by_a_relative_path_is_started_by_an_absolute_one() {
        let folder = tempfile::tempdir_in(".").expect("a folder beside the tests");
        std::fs::write(folder.path().join("server.js"), "").expect("a script");
        let package = folder.path().join("node_modules/socket.io/package.json");
        std::fs::create_dir_all(package.parent().expect("a parent")).expect("node_modules");
        std::fs::write(&package, "{}").expect("socket.io's package.json");
        let relative = Path::new(folder.path().file_name().expect("a name"));
        let peer = Peer::prepare(relative, 500, 100).expect("the peer as installed");
        assert!(peer.script().is_absolute(), "{}", peer.script().display());
        assert!(peer.script().is_file());
    }
}
