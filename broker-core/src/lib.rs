//! Seedlog's broker: one code path for real and simulated runs.
//!
//! Decision modules (`log`, and later replication, controller, group) are plain structs driven
//! with an explicit `now`; they never read a clock, spawn, sleep or touch `std::fs` directly.
//! All bytes go through [`storage::Disk`], so the simulator can swap in its crash-faithful disk.

pub mod alloc;
pub mod constants;
pub mod kafka;
pub mod broker;
pub mod buggify;
pub mod client;
pub mod controller;
#[doc(hidden)]
pub mod fuzzing;
pub mod group;
pub mod hash;
pub mod metadata;
pub mod log;
pub mod netfault;
pub mod observe;
pub mod planted;
pub mod node;
pub mod protocol;
pub mod replication;
pub mod security;
pub mod share;
pub mod server;
pub mod simprobe;
pub mod storage;
#[doc(hidden)]
pub mod testing;
pub mod throttle;
pub mod txn;
