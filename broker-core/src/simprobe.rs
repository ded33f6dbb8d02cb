//! What the simulator may aim a fault at, as the running brokers see it: the active metadata
//! controller (the node and its quorum epoch). The shell's Raft task publishes it; the
//! harness's fault injector reads it to resolve a fault target `controller` to the broker that
//! is the active controller when the fault starts. One simulation runs on one thread, so a
//! thread-local is per run; the harness clears it at the start of each run.
//!
//! Observation only: nothing in the broker reads it back, so it cannot change what a run does.
//! In the real build every function is empty.

#[cfg(madsim)]
mod registry {
    use std::cell::Cell;
    thread_local! {
        /// (quorum epoch, node id) of the newest active controller reported.
        pub static ACTIVE: Cell<Option<(i32, i32)>> = const { Cell::new(None) };
    }
}

/// Forgets what an earlier run reported.
#[cfg(madsim)]
pub fn reset() {
    registry::ACTIVE.with(|a| a.set(None));
}

/// Node `node` is the active controller in quorum epoch `epoch` (a newer epoch replaces it).
#[cfg(madsim)]
pub fn active_controller(node: i32, epoch: i32) {
    registry::ACTIVE.with(|a| {
        if a.get().is_none_or(|(e, _)| epoch >= e) {
            a.set(Some((epoch, node)));
        }
    });
}

/// The node of the newest active controller reported in this run.
#[cfg(madsim)]
pub fn current_controller() -> Option<i32> {
    registry::ACTIVE.with(|a| a.get().map(|(_, node)| node))
}

/// Real build: nothing is published.
#[cfg(not(madsim))]
#[inline(always)]
pub fn active_controller(_node: i32, _epoch: i32) {}
