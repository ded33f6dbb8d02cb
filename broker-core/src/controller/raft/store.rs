//! A voter's durable Raft state through [`Disk`]: the `quorum-state` file and the entries in
//! the metadata log (`<data>/__cluster_metadata-0/`, the partition segment format, one batch
//! per entry with the entry's epoch as its partition leader epoch), and the shell's side of the
//! durability contract: [`RaftStore::perform`] does a `Persist` or `WriteLog` action and
//! returns only once it is synced, so the caller may then report `io_done`.
//!
//! Snapshots (`snapshot_file`) sit in the same directory. Taking one writes it durably, then
//! rolls the log (so later segments start near snapshot ends), keeps the newest
//! `metadata_snapshots_kept` files and deletes whole segments below the *oldest kept* one: a
//! newest snapshot found damaged at restart falls back to the one before it plus the log. A
//! restart loads the newest snapshot that reads back whole and the entries after it.
//!
//! It must never report an action done that is not durable, nor delete log not covered by a
//! durable snapshot. After an error the log may be
//! offline and memory unsure of the disk: the shell drops the node and the store and restarts
//! both from the disk ([`RaftStore::open`]), exactly as after a crash.

use super::{snapshot_file, state_file, Action, Entry, QuorumState, Snapshot};
use crate::constants::metadata_snapshots_kept;
use crate::controller::quorum::log_config;
use crate::log::{Log, LogError};
use crate::metadata::metadata_dir;
use crate::storage::Disk;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub struct RaftStore {
    disk: Arc<dyn Disk>,
    dir: PathBuf,
    log: Log,
}

/// What a restart reads back.
#[derive(Debug)]
pub struct Restored {
    pub state: QuorumState,
    /// The newest snapshot that read back whole; `entries` follow it.
    pub snapshot: Option<Snapshot>,
    pub entries: Vec<Entry>,
    /// What recovery did (cuts of torn tails), for the log.
    pub notes: Vec<String>,
}

impl RaftStore {
    /// Opens (or creates) the metadata log and the quorum state under `data_dir`.
    pub fn open(disk: Arc<dyn Disk>, data_dir: &Path, now: u64) -> Result<(RaftStore, Restored), String> {
        let dir = data_dir.join(metadata_dir);
        let err = |e: LogError| format!("{}: {e}", dir.display());
        let (mut log, report) = Log::open(disk.clone(), &dir, log_config(), now).map_err(err)?;
        let mut notes = Vec::new();
        if let Some(cut) = &report.cut {
            notes.push(format!("raft log: recovery cut {} at byte {}: {}", cut.file.display(), cut.position, cut.reason));
        }
        let state = state_file::read(disk.as_ref(), &dir)?;
        let (snapshot, skipped) = snapshot_file::read_newest(disk.as_ref(), &dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        notes.extend(skipped);
        let from = snapshot.as_ref().map_or(0, |s| s.id.end);
        if log.log_start_offset() > from {
            // The log was deleted below a snapshot that no longer reads back: refuse rather
            // than start without committed records.
            return Err(format!("{}: the log starts at {} but the newest readable snapshot ends at {from}", dir.display(), log.log_start_offset()));
        }
        if log.log_end_offset() < from {
            // A snapshot installed from the leader, and a crash before the log was replaced.
            log.truncate_fully(from, now).map_err(err)?;
        }
        let mut batches = Vec::new();
        log.for_each_batch(from, 1 << 20, |_, bytes| {
            batches.push(bytes);
            Ok::<_, LogError>(())
        })
        .map_err(err)?;
        let entries = batches.into_iter().map(Entry::from_batch).collect::<Result<Vec<_>, _>>().map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok((RaftStore { disk, dir, log }, Restored { state, snapshot, entries, notes }))
    }

    /// Makes `state` durable.
    pub fn persist(&mut self, state: &QuorumState) -> Result<(), String> {
        state_file::write(self.disk.as_ref(), &self.dir, state).map_err(|e| format!("{}: {e}", self.dir.display()))
    }

    /// Cuts the log at `truncate_to` (durable on return), appends `entries` exactly as given
    /// and syncs them.
    pub fn write_log(&mut self, truncate_to: Option<i64>, entries: &[Entry], now: u64) -> Result<(), String> {
        let err = |e: LogError| format!("{}: {e}", self.dir.display());
        if let Some(offset) = truncate_to {
            self.log.truncate_to(offset.max(0), now).map_err(err)?;
        }
        if !entries.is_empty() {
            let bytes: Vec<u8> = entries.iter().flat_map(|e| e.batch.iter().copied()).collect();
            self.log.append_replicated(&bytes, now).map_err(err)?;
            self.log.flush(now).map_err(err)?;
        }
        Ok(())
    }

    /// Writes `snapshot` (of committed entries this log holds) durably, then drops what it and
    /// the snapshot kept before it make unnecessary.
    pub fn take_snapshot(&mut self, snapshot: &Snapshot, now: u64) -> Result<(), String> {
        let err = |e: std::io::Error| format!("{}: {e}", self.dir.display());
        snapshot_file::write(self.disk.as_ref(), &self.dir, snapshot).map_err(err)?;
        self.log.roll(now).map_err(|e| format!("{}: {e}", self.dir.display()))?;
        self.prune()
    }

    /// Writes the leader's `snapshot` durably, then replaces the log with an empty one at its
    /// end (a crash between the two is finished by [`RaftStore::open`]).
    pub fn install_snapshot(&mut self, snapshot: &Snapshot, now: u64) -> Result<(), String> {
        snapshot_file::write(self.disk.as_ref(), &self.dir, snapshot).map_err(|e| format!("{}: {e}", self.dir.display()))?;
        self.log.truncate_fully(snapshot.id.end, now).map_err(|e| format!("{}: {e}", self.dir.display()))?;
        self.prune()
    }

    /// Keeps the newest snapshots and the log from the oldest kept one's end.
    fn prune(&mut self) -> Result<(), String> {
        let err = |e: std::io::Error| format!("{}: {e}", self.dir.display());
        let ids = snapshot_file::list(self.disk.as_ref(), &self.dir).map_err(err)?;
        let drop = ids.len().saturating_sub(metadata_snapshots_kept);
        for id in &ids[..drop] {
            self.disk.remove(&self.dir.join(snapshot_file::file_name(*id))).map_err(err)?;
        }
        if drop > 0 {
            self.disk.sync_dir(&self.dir).map_err(err)?;
        }
        if ids.len() >= metadata_snapshots_kept {
            self.log.delete_segments_below(ids[drop].end).map_err(|e| format!("{}: {e}", self.dir.display()))?;
        }
        Ok(())
    }

    /// Does an IO action; returns the id to report with `io_done` (None for other actions).
    pub fn perform(&mut self, action: &Action, now: u64) -> Result<Option<u64>, String> {
        match action {
            Action::Persist { id, state } => self.persist(state).map(|_| Some(*id)),
            Action::WriteLog { id, truncate_to, entries } => self.write_log(*truncate_to, entries, now).map(|_| Some(*id)),
            Action::InstallSnapshot { id, snapshot } => self.install_snapshot(snapshot, now).map(|_| Some(*id)),
            Action::Send(_) | Action::Commit { .. } => Ok(None),
        }
    }

    pub fn log_end_offset(&self) -> i64 {
        self.log.log_end_offset()
    }

    pub fn log_start_offset(&self) -> i64 {
        self.log.log_start_offset()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::raft::{Node, RaftConfig};
    use crate::storage::FileDisk;

    /// A one-voter node elected and fed two proposals, every IO action done through the store.
    fn run_one_voter(store: &mut RaftStore, restored: Restored, now: u64) -> Node {
        let mut node = Node::restart(RaftConfig::new(0, [0]), restored.state, restored.entries, 1, now).unwrap();
        let mut actions = node.tick(node.next_deadline());
        for round in 0..3 {
            while !actions.is_empty() {
                let mut next = Vec::new();
                for a in &actions {
                    if let Some(id) = store.perform(a, now).unwrap() {
                        next.extend(node.io_done(now, id).unwrap());
                    }
                }
                actions = next;
            }
            if round < 2 {
                actions = node.propose(now, &[format!("record {round}").as_bytes()]).unwrap().1;
            }
        }
        node
    }

    #[test]
    fn state_and_entries_survive_a_reopen_and_a_cut_tail_stays_cut() {
        let dir = tempfile::tempdir().unwrap();
        let disk: Arc<dyn Disk> = Arc::new(FileDisk::new());
        let (mut store, restored) = RaftStore::open(disk.clone(), dir.path(), 0).unwrap();
        assert_eq!((restored.state, restored.entries.len()), (QuorumState::default(), 0));
        let node = run_one_voter(&mut store, restored, 0);
        assert_eq!(node.high_watermark(), Some(3), "leader change + two proposals committed");
        drop(store);

        let (mut store, restored) = RaftStore::open(disk.clone(), dir.path(), 0).unwrap();
        assert_eq!(restored.state, QuorumState { epoch: 1, voted_for: Some(0), leader: Some(0) });
        let written: Vec<Entry> = node.log().iter().cloned().collect();
        assert_eq!(restored.entries, written, "entries read back byte for byte");
        store.write_log(Some(1), &[], 0).unwrap();
        drop(store);

        let (_, restored) = RaftStore::open(disk, dir.path(), 0).unwrap();
        assert_eq!(restored.entries, written[..1]);
    }

    #[test]
    fn a_damaged_quorum_state_refuses_to_open() {
        let dir = tempfile::tempdir().unwrap();
        let disk: Arc<dyn Disk> = Arc::new(FileDisk::new());
        drop(RaftStore::open(disk.clone(), dir.path(), 0).unwrap());
        let path = dir.path().join(metadata_dir).join(state_file::QUORUM_STATE_FILE);
        crate::storage::write_atomically(disk.as_ref(), &path, b"{\"leaderId\":").unwrap();
        let err = RaftStore::open(disk, dir.path(), 0).err().expect("refused");
        assert!(err.contains("quorum-state"), "{err}");
    }
}
