//! The `sim` crate's integration tests, one binary, modules by theme.
//! `cargo test -p sim` runs the pure ones; `cargo simtest` (built with `--cfg madsim`) runs
//! them all, including those that need simulated nodes.

mod broker_storage;
mod log_crash;
#[cfg(madsim)]
mod madsim_node;
#[cfg(madsim)]
mod scenarios;
#[cfg(madsim)]
mod server_limits;
#[cfg(madsim)]
mod shrink;
#[cfg(madsim)]
mod slow_disk;
#[cfg(madsim)]
mod replication;
mod slow_scenarios;
mod view;
