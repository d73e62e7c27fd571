//! The tests' TCP proxy between Floor and PostgreSQL or Redis (latency, blackhole, a cut at
//! `COMMIT`): it lives in `floor-bench`, whose history run cuts and slows PostgreSQL with it too.

pub(crate) use floor_bench::fault_proxy::{Cut, FaultProxy};
