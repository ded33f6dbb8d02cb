//! Transactions in the simulator (`cargo simtest` only): the `transactions` scenario's
//! transactional producers run under faults and a read_committed reader judges them; a leader
//! that commits what it was asked to abort is caught by `txn_aborted_read` alone.

use super::in_flight::{caught, scenario};
use crate::run;
use broker_core::broker::PlantedBug;

#[test]
fn an_abort_marker_written_as_a_commit_is_caught_by_txn_aborted_read_alone() {
    let (path, s) = scenario("transactions");
    let seed = caught(&s, &path, PlantedBug::AbortMarkerCommits, "txn_aborted_read");
    let r = run(&s, &path, seed, Some(PlantedBug::AbortMarkerCommits));
    let others: Vec<_> = r.violations.iter().filter(|v| v.checker != "txn_aborted_read").collect();
    assert!(others.is_empty(), "seed {seed}: {:?}", others.first());
    assert!(r.history.txns.iter().filter(|t| !t.commit).count() > 10, "the run aborts transactions on purpose");
}
