//! What this build is: its release (the workspace version, see CHANGELOG.md) and the commit it
//! was built from (set by `build.rs`).

/// The release, e.g. `0.2.0`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The commit, abbreviated, or `unknown` when the builder could not tell.
pub const COMMIT: &str = env!("FLOOR_COMMIT");

/// What `floor --version` says after the name: the release and the commit.
pub const DESCRIBED: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("FLOOR_COMMIT"), ")");

#[cfg(test)]
mod tests {
    #[test]
    fn the_release_is_the_migrations_release() {
        assert_eq!(super::VERSION, floor_migrations::compat::RELEASE);
        assert!(super::DESCRIBED.starts_with(super::VERSION) && super::DESCRIBED.contains(super::COMMIT));
    }
}
