//! The `sim` crate's integration tests, one binary, modules by theme.
//! `cargo test -p sim` runs the pure ones; `cargo simtest` (built with `--cfg madsim`) runs
//! them all, including those that need simulated nodes.

mod broker_storage;
#[cfg(not(madsim))]
mod chaos;
mod fuzz_replay;
#[cfg(madsim)]
mod fresh_seeds;
#[cfg(madsim)]
mod in_flight;
mod log_crash;
#[cfg(madsim)]
mod leadership;
#[cfg(madsim)]
mod madsim_node;
#[cfg(madsim)]
mod quorum;
#[cfg(madsim)]
mod scenarios;
#[cfg(madsim)]
mod security;
#[cfg(madsim)]
mod server_limits;
#[cfg(madsim)]
mod shrink;
#[cfg(madsim)]
mod slow_disk;
#[cfg(madsim)]
mod quotas;
#[cfg(madsim)]
mod reassignments;
#[cfg(madsim)]
mod regressions;
#[cfg(madsim)]
mod replication;
mod slow_scenarios;
#[cfg(madsim)]
mod transactions;
mod view;

/// Runs a scenario the test knows the harness can run (`sim::cluster::run` refuses only
/// scenarios without a runnable topology).
#[cfg(madsim)]
fn run(s: &sim::scenario::Scenario, path: &str, seed: u64, bug: Option<broker_core::broker::PlantedBug>) -> sim::cluster::RunResult {
    sim::cluster::run(s, path, seed, bug).unwrap_or_else(|e| panic!("{path}: {e}"))
}
