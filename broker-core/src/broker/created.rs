//! The replicas a step created, made durable by one file-system sync that runs as a job off the
//! node's gate: creating a topic must not stall the node behind a `syncfs` that flushes every
//! dirty page of the file system (1.3–1.5 s on a loaded broker, docs/benchmarks.md).
//!
//! A created replica's partition marker is written in place, unsynced. The replica is opened at
//! once but given no role (it neither leads nor follows, so it takes no write) until the job
//! reports: a marker torn by a power loss then always belongs to a creation that never
//! finished, and `dir::Claimed::Torn` empties nothing anyone wrote. Only the new topic's
//! requests wait for its sync (answered LEADER_NOT_AVAILABLE or NOT_LEADER_OR_FOLLOWER, as while
//! a leader is being set up); the rest of the node goes on. Its log also owes the marker
//! (`Log::owe_sync`) until the report forgets what it owed when the job was taken
//! (`Log::owed_stamp`). This module never syncs anything itself.

use super::{Action, Broker, Level};
use crate::constants::failed_log_reopen_ms;
use crate::log::dir;
use crate::log::OwedStamp;
use crate::storage::Disk;
use std::path::PathBuf;
use std::sync::Arc;

/// One `syncfs` of the data directory on behalf of the replicas a step created. Holds its own
/// disk handle, so running it needs no access to the broker. Two jobs are equal when they cover
/// the same logs at the same marks.
#[derive(Clone)]
pub struct CreatedSync {
    disk: Arc<dyn Disk>,
    data_dir: PathBuf,
    logs: Vec<Covered>,
}

/// One replica a [`CreatedSync`] covers.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Covered {
    key: (String, i32),
    topic_id: [u8; 16],
    /// Which opened log it is (`Log::serial`): a report for an earlier log of the key is stale.
    serial: u64,
    /// What that log owed when the job was taken.
    owed: OwedStamp,
}

impl std::fmt::Debug for CreatedSync {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CreatedSync({} replicas)", self.logs.len())
    }
}

impl PartialEq for CreatedSync {
    fn eq(&self, other: &CreatedSync) -> bool {
        self.logs == other.logs
    }
}

impl Eq for CreatedSync {}

impl CreatedSync {
    /// The sync (blocking: run it where that stops nobody else).
    pub fn run(&self) -> std::io::Result<()> {
        self.disk.sync_all(&self.data_dir)
    }

    /// How many replicas it covers.
    pub fn len(&self) -> usize {
        self.logs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.logs.is_empty()
    }
}

impl Broker {
    /// Hands out the file-system sync for the replicas this step created
    /// ([`Action::SyncCreated`]), however many there are (a topic of 4,000 partitions: one
    /// `syncfs`, not 4,000 rounds of fsyncs).
    pub(super) fn sync_created(&mut self, out: &mut Vec<Action>) {
        let mut logs = Vec::new();
        for key in std::mem::take(&mut self.created) {
            if let Some(part) = self.partitions.get(&key.0, key.1) {
                logs.push(Covered { topic_id: part.topic_id, serial: part.log.serial(), owed: part.log.owed_stamp(), key });
            }
        }
        if !logs.is_empty() {
            out.push(Action::SyncCreated(CreatedSync { disk: self.disk.clone(), data_dir: self.config.data_dir.clone(), logs }));
        }
    }

    /// Whether this replica's directory waits for its creation's sync, and so has no role yet:
    /// this node's Metadata and FindCoordinator answers say its leader is not available
    /// meanwhile, as for a partition whose leader is being elected, so clients wait rather
    /// than send to it. The wait belongs to the directory, not to one open log: a log that
    /// fails and is reopened meanwhile finds the marker whole in the page cache, and still
    /// waits for a sync of its own (`reconcile::open_partition`).
    pub fn creating(&self, name: &str, p: i32) -> bool {
        !self.creating.is_empty() && self.creating.contains_key(&(name.to_string(), p))
    }

    /// Whether this node's replica of a partition is not ready to take a role yet: not open
    /// (waiting its turn, `replica_opens_per_step`, or offline) or [`Broker::creating`]. Where
    /// the image names this node the leader, its Metadata and FindCoordinator answers say the
    /// leader is not available meanwhile.
    pub fn replica_pending(&self, name: &str, p: i32) -> bool {
        !self.partitions.contains(name, p) || self.creating(name, p)
    }

    /// The created replicas' sync ran. Done: each replica still open as the log the job covered
    /// forgets what its log owed then and takes its role from the image. Failed: the kernel may
    /// have dropped the markers' pages, so each is closed with its marker removed and reopened
    /// later (`offline`), writing its marker again; it keeps waiting. A report for a log
    /// reopened since is stale: a later job covers the new one.
    pub fn created_synced(&mut self, job: CreatedSync, result: std::io::Result<()>, now: u64) -> Vec<Action> {
        let mut out = Vec::new();
        let in_place = self.config.rules().checkpoints_in_place();
        let mut failed = 0;
        for Covered { key, topic_id, serial, owed } in job.logs {
            if self.creating.get(&key) != Some(&serial) {
                continue;
            }
            let (name, p) = (key.0.as_str(), key.1);
            let Some(part) = self.partitions.get_mut(name, p).filter(|part| part.topic_id == topic_id) else { continue };
            if result.is_err() {
                failed += 1;
                let marker = self.partition_dir(name, p).join(dir::partition_marker);
                self.forget(name, p, now);
                if let Err(e) = self.disk.remove(&marker) {
                    out.push(Action::Log(Level::Error, format!("{name}-{p}: removing its marker after a failed syncfs: {e}")));
                }
                self.offline.insert(key, now + failed_log_reopen_ms);
                continue;
            }
            part.log.owed_synced(owed);
            if in_place {
                // Planted: its in-place checkpoint at open is written again after the sync that
                // covered the first, so it stays unsynced as the bug has it.
                let _ = part.log.checkpoint();
            }
            self.creating.remove(&key);
            self.reconcile_or_offline(key, now, &mut out);
        }
        if let Err(e) = &result {
            out.insert(0, Action::Log(Level::Error, format!("syncfs after creating replicas: {e}; {failed} of them go offline until reopened")));
        }
        out
    }
}
