//! The open-files limit of the test process, which the nodes, HAProxy and Node it starts
//! inherit: raised for a test that holds thousands of sockets, as the benchmarks ask of
//! `ulimit -n`. A socket is an open file: HAProxy holds two per watcher (the phone's and the
//! node's), the node that stays holds them all while the other restarts.

use nix::sys::resource::{Resource, getrlimit, setrlimit};

/// Raises the soft limit of open files to `needed` (never lowers it); fails when the hard
/// limit is below, saying what to raise.
pub(crate) fn raise_open_files(needed: u64) {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).expect("the open-files limit reads");
    if soft >= needed {
        return;
    }
    assert!(hard >= needed, "the open-files hard limit is {hard}, below {needed}: raise `ulimit -Hn` (as root)");
    setrlimit(Resource::RLIMIT_NOFILE, needed, hard).expect("the soft open-files limit rises to the hard one");
}
