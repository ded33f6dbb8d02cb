//! The simulator harness. `SimDisk`, scenarios, the fault schedule (`cluster::faults`), the
//! checkers and the log crash rounds compile in both builds, so their unit tests run in
//! `cargo test`; whatever needs simulated nodes is `#[cfg(madsim)]` and runs under `cargo sim`
//! / `cargo simtest`.
//!
//! Nothing in this crate may read a wall clock, a thread-local RNG or the real file system:
//! every choice comes from a seed, so a failing run replays bit for bit. The one exception is
//! `chaos` (the plain build only): the same scenarios against real broker processes, in real
//! time on real files, which is evidence about the real broker and replays nothing.

#[cfg(not(madsim))]
pub mod chaos;
pub mod checkers;
pub mod cluster;
pub mod crash;
pub mod crash_clean;
pub mod disk;
#[doc(hidden)]
pub mod fuzzing;
pub mod history;
pub mod matrix;
pub mod rebalances;
pub mod scenario;
pub mod shrink;
#[cfg(madsim)]
pub mod sweep;
pub mod trace;
pub mod view;
pub mod worlds;
