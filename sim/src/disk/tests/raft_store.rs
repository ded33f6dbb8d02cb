//! The Raft store's durability contract on a crash-faithful disk: whatever a `Persist` or
//! `WriteLog` reported done survives a power loss, and an action cut short by a process death
//! at any disk call leaves the old state or the new one, never a mix.

use super::{CrashMode, DiskFaults, SimDisk};
use broker_core::controller::raft::store::RaftStore;
use broker_core::controller::raft::{Action, Entry, Node, QuorumState, RaftConfig};
use broker_core::storage::Disk;
use std::path::Path;
use std::sync::Arc;

#[test]
fn what_the_store_reported_synced_survives_power_loss_at_any_disk_call() {
    let mut died = 0;
    for seed in 0..300u64 {
        let disk = SimDisk::new(seed);
        let shared: Arc<dyn Disk> = Arc::new(disk.clone());
        let data = Path::new("/data");
        let (mut store, restored) = RaftStore::open(shared.clone(), data, 0).unwrap();
        let mut node = Node::restart(RaftConfig::new(0, [0]), restored.state, restored.entries, seed, 0).unwrap();
        // The process dies at a disk call somewhere in the next few actions.
        disk.set_faults(DiskFaults { dead_from_op: Some(disk.ops() + seed % 61), ..DiskFaults::default() });
        let (mut acked_state, mut acked_log) = (QuorumState::default(), Vec::<Entry>::new());
        let (mut tried_state, mut tried_log) = (acked_state, acked_log.clone());
        let mut actions = node.tick(node.next_deadline());
        'run: for round in 0..40 {
            while !actions.is_empty() {
                let mut next = Vec::new();
                for a in &actions {
                    match a {
                        Action::Persist { state, .. } => tried_state = *state,
                        Action::WriteLog { truncate_to, entries, .. } => {
                            tried_log.truncate(tried_log.partition_point(|e| truncate_to.is_none_or(|t| e.next_offset <= t)));
                            tried_log.extend(entries.iter().cloned());
                        }
                        _ => {}
                    }
                    match store.perform(a, 0) {
                        Ok(Some(id)) => {
                            (acked_state, acked_log) = (tried_state, tried_log.clone());
                            next.extend(node.io_done(0, id).unwrap());
                        }
                        Ok(None) => {}
                        Err(_) => {
                            died += 1;
                            break 'run;
                        }
                    }
                }
                actions = next;
            }
            actions = node.propose(0, &[format!("seed {seed} round {round}").as_bytes()]).unwrap().1;
        }
        drop(store);
        disk.crash(CrashMode::PowerLoss);
        disk.set_faults(DiskFaults::default());
        let (_, back) = RaftStore::open(shared, data, 0).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert!(back.state == acked_state || back.state == tried_state, "seed {seed}: state {:?}, acked {acked_state:?}", back.state);
        assert!(back.entries.len() >= acked_log.len() && back.entries[..acked_log.len()] == acked_log[..], "seed {seed}: lost synced entries");
        assert!(back.entries.len() <= tried_log.len() && back.entries[..] == tried_log[..back.entries.len()], "seed {seed}: entries never written");
    }
    assert!(died > 250, "only {died} of 300 runs were cut short by a process death");
}
