//! The simulator harness; SimDisk compiles in both builds, everything madsim-specific comes later.
//!
//! Nothing in this crate may read a wall clock, a thread-local RNG or the real file system:
//! every choice comes from a seed, so a failing run replays bit for bit.

pub mod disk;
