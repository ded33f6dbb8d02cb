//! The simulated cluster (interim layout while it is split by phase).

pub mod faults;
#[cfg(madsim)]
mod harness;

pub use faults::derive_faults;
#[cfg(madsim)]
pub use harness::{run, RunResult};
