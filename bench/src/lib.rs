//! floor's benchmarks as a library: the binary `floor-bench` (see its documentation) runs
//! them, and the integration tests run the history checker (`history`) over the same
//! cluster, workload and nemeses, so CI's short run and the benchmark's long one are one code.

pub mod cost;
pub mod database;
pub mod engineio;
pub mod fault_proxy;
pub mod frame;
pub mod history;
pub mod http_load;
pub mod nginx;
pub mod peer;
pub mod polling;
pub mod ratios;
pub mod reads;
pub mod replay;
pub mod report;
pub mod rolling;
pub mod run;
pub mod server;
pub mod setup;
pub mod tally;
pub mod watcher;
pub mod ws;
