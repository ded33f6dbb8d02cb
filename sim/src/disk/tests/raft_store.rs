//! The Raft store's durability contract on a crash-faithful disk: whatever a `Persist` or
//! `WriteLog` reported done survives a power loss, and an action cut short by a process death
//! at any disk call leaves the old state or the new one, never a mix.

use super::{CrashMode, DiskFaults, SimDisk};
use broker_core::controller::raft::store::RaftStore;
use broker_core::controller::raft::{Action, Entry, Node, QuorumState, RaftConfig};
use broker_core::storage::Disk;
use std::path::Path;
use std::sync::Arc;

const data_dir: &str = "/data";

/// A fresh SimDisk under `seed` with a one-voter node and its store opened on it.
fn lone_voter(seed: u64) -> (SimDisk, Arc<dyn Disk>, RaftStore, Node) {
    let disk = SimDisk::new(seed);
    let shared: Arc<dyn Disk> = Arc::new(disk.clone());
    let (store, restored) = RaftStore::open(shared.clone(), Path::new(data_dir), 0).unwrap();
    let node = Node::restart(RaftConfig::new(0, [0]), restored.state, restored.entries, seed, 0).unwrap();
    (disk, shared, store, node)
}

#[test]
fn what_the_store_reported_synced_survives_power_loss_at_any_disk_call() {
    let mut died = 0;
    for seed in 0..300u64 {
        let (disk, shared, mut store, mut node) = lone_voter(seed);
        let data = Path::new(data_dir);
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

/// Snapshots on a crash-faithful disk: a voter snapshots every few entries (the snapshot's
/// bytes are the batches below its end, so they can be compared), the store drops the log
/// before the older kept snapshot, and the process dies at a random disk call, inside the
/// snapshot's write, rename, roll or segment deletion as often as elsewhere. After power loss
/// the store reopens with a snapshot that is the synced log below its end, followed by every
/// synced entry after it: nothing acknowledged lost, whatever step the death cut short.
#[test]
fn a_death_at_any_step_of_a_snapshot_loses_nothing_synced() {
    use broker_core::controller::raft::{Snapshot, SnapshotId};
    let mut died = 0;
    for seed in 0..300u64 {
        let (disk, shared, mut store, mut node) = lone_voter(seed);
        let data = Path::new(data_dir);
        disk.set_faults(DiskFaults { dead_from_op: Some(disk.ops() + 20 + seed % 97), ..DiskFaults::default() });
        let mut synced = Vec::<Entry>::new();
        let mut actions = node.tick(node.next_deadline());
        'run: for round in 0..60 {
            while !actions.is_empty() {
                let mut next = Vec::new();
                for a in &actions {
                    if let Action::WriteLog { entries, .. } = a {
                        synced.extend(entries.iter().cloned());
                    }
                    match store.perform(a, 0) {
                        Ok(Some(id)) => next.extend(node.io_done(0, id).unwrap()),
                        Ok(None) => {}
                        Err(_) => {
                            synced.truncate(synced.len().saturating_sub(match a { Action::WriteLog { entries, .. } => entries.len(), _ => 0 }));
                            died += 1;
                            break 'run;
                        }
                    }
                }
                actions = next;
            }
            if round % 4 == 3 {
                let end = node.high_watermark().unwrap();
                let bytes: Vec<u8> = synced.iter().take_while(|e| e.next_offset <= end).flat_map(|e| e.batch.iter().copied()).collect();
                let snapshot = Snapshot { id: SnapshotId { end, epoch: node.log().epoch_at(end - 1).unwrap() }, bytes: bytes.into() };
                if store.take_snapshot(&snapshot, 0).is_err() {
                    died += 1;
                    break 'run;
                }
                node.snapshot_taken(snapshot).unwrap();
            }
            actions = node.propose(0, &[format!("seed {seed} round {round}").as_bytes()]).unwrap().1;
        }
        drop(store);
        disk.crash(CrashMode::PowerLoss);
        disk.set_faults(DiskFaults::default());
        let (_, back) = RaftStore::open(shared, data, 0).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let start = back.snapshot.as_ref().map_or(0, |s| s.id.end);
        if let Some(s) = &back.snapshot {
            let below: Vec<u8> = synced.iter().take_while(|e| e.next_offset <= start).flat_map(|e| e.batch.iter().copied()).collect();
            assert!(s.bytes[..] == below[..], "seed {seed}: snapshot {:?} is not the synced log below it", s.id);
        }
        let after: Vec<Entry> = synced.iter().filter(|e| e.base_offset >= start).cloned().collect();
        assert!(back.entries.len() >= after.len() && back.entries[..after.len()] == after[..], "seed {seed}: lost synced entries after the snapshot at {start}");
    }
    assert!(died > 250, "only {died} of 300 runs were cut short by a process death");
}
