//! A node's Raft log as the rules see it: dense entries, each one v2 record batch of the
//! metadata log stamped with the epoch that wrote it, plus the epoch index (the log's own
//! [`EpochCache`]) that answers "where does my epoch e end" for diverging-epoch truncation.
//!
//! The log starts where the newest snapshot ends (`start`, 0 without one); the epoch of the
//! entry before it (`start_epoch`, Raft's lastIncludedTerm) stands in for that entry when the
//! log is empty or a fetch asks about the offset just below the start.
//!
//! Its one invariant: entries are dense (each starts where the previous ends, the first at
//! `start`) and their epochs never go down, nor below `start_epoch`. Appends that would break it
//! are refused, not applied. Whole in memory: snapshots bound it to what was committed since the
//! last one plus the uncommitted tail.

use super::SnapshotId;
use crate::log::batch;
use crate::log::EpochCache;
use bytes::Bytes;

/// One entry: a whole record batch (offsets and epoch stamped) of one or more records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub epoch: i32,
    pub base_offset: i64,
    /// The offset after its last record.
    pub next_offset: i64,
    pub batch: Bytes,
}

impl Entry {
    /// Reads the offsets and epoch of a stored or fetched batch, checking it as a stored batch.
    pub fn from_batch(batch: Bytes) -> Result<Entry, String> {
        let h = batch::validate_stored(&batch).map_err(|e| e.to_string())?;
        if h.size != batch.len() {
            return Err(format!("entry holds {} bytes, its batch {}", batch.len(), h.size));
        }
        if h.leader_epoch < 1 {
            return Err(format!("entry at {} has epoch {}; raft epochs start at 1", h.base_offset, h.leader_epoch));
        }
        Ok(Entry { epoch: h.leader_epoch, base_offset: h.base_offset, next_offset: h.next_offset(), batch })
    }
}

/// The log of entries from `start` (the newest snapshot's end; 0 without one).
#[derive(Debug, Clone, Default)]
pub struct Entries {
    start: i64,
    start_epoch: i32,
    entries: Vec<Entry>,
    epochs: EpochCache,
}

impl Entries {
    /// An empty log starting where `snapshot` ends (offset 0, epoch 0 for none).
    pub fn empty_at(snapshot: Option<SnapshotId>) -> Entries {
        let (start, start_epoch) = snapshot.map_or((0, 0), |s| (s.end, s.epoch));
        let mut epochs = EpochCache::default();
        if start > 0 {
            epochs.assign(start_epoch, start);
        }
        Entries { start, start_epoch, entries: Vec::new(), epochs }
    }

    /// Rebuilds the log from the snapshot it starts at and the entries read back after it.
    pub fn restore(snapshot: Option<SnapshotId>, entries: Vec<Entry>) -> Result<Entries, String> {
        let mut log = Entries::empty_at(snapshot);
        for e in entries {
            log.append(e)?;
        }
        Ok(log)
    }

    /// The first offset held: where the newest snapshot ends.
    pub fn start(&self) -> i64 {
        self.start
    }

    /// The snapshot the log starts after, if any.
    pub fn start_id(&self) -> Option<SnapshotId> {
        (self.start > 0).then_some(SnapshotId { end: self.start, epoch: self.start_epoch })
    }

    pub fn end(&self) -> i64 {
        self.entries.last().map_or(self.start, |e| e.next_offset)
    }

    /// Epoch of the last entry (of the snapshot's last one for an empty log; 0 for neither).
    pub fn last_epoch(&self) -> i32 {
        self.entries.last().map_or(self.start_epoch, |e| e.epoch)
    }

    /// Epoch of the entry holding `offset`, if any (the snapshot's for the offset before `start`).
    pub fn epoch_at(&self, offset: i64) -> Option<i32> {
        if offset == self.start - 1 {
            return Some(self.start_epoch);
        }
        let i = self.entries.partition_point(|e| e.next_offset <= offset);
        self.entries.get(i).filter(|e| e.base_offset <= offset).map(|e| e.epoch)
    }

    /// Whether `offset` ends an entry (or is the start): where a snapshot may end.
    pub fn is_boundary(&self, offset: i64) -> bool {
        offset == self.start || self.entries.binary_search_by(|e| e.next_offset.cmp(&offset)).is_ok()
    }

    /// Drops the entries below `snapshot.end` (an entry boundary at or below the end, whose
    /// entry has `snapshot.epoch`): the log now starts after that snapshot. Refused otherwise.
    pub fn compact_to(&mut self, snapshot: SnapshotId) -> Result<(), String> {
        if snapshot.end <= self.start {
            return Ok(());
        }
        if !self.is_boundary(snapshot.end) || self.epoch_at(snapshot.end - 1) != Some(snapshot.epoch) {
            return Err(format!("snapshot {snapshot:?} does not end an entry of this log"));
        }
        let below = self.entries.partition_point(|e| e.next_offset <= snapshot.end);
        self.entries.drain(..below);
        self.epochs.truncate_from_start(snapshot.end);
        (self.start, self.start_epoch) = (snapshot.end, snapshot.epoch);
        Ok(())
    }

    pub fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter()
    }

    /// Adds `entry` at the end; refused unless it starts at the end and its epoch is not below
    /// the last one.
    pub fn append(&mut self, entry: Entry) -> Result<(), String> {
        if entry.base_offset != self.end() || entry.next_offset <= entry.base_offset {
            return Err(format!("entry [{}, {}) does not continue the log at {}", entry.base_offset, entry.next_offset, self.end()));
        }
        if entry.epoch < self.last_epoch() || entry.epoch < 1 {
            return Err(format!("entry epoch {} is below the log's last epoch {}", entry.epoch, self.last_epoch()));
        }
        self.epochs.assign(entry.epoch, entry.base_offset);
        self.entries.push(entry);
        Ok(())
    }

    /// Removes every entry holding an offset at or above `offset`; returns the new end (below
    /// `offset` when it fell inside an entry). Never below the start: what a snapshot holds is
    /// committed, and no leader disagrees with it.
    pub fn truncate_to(&mut self, offset: i64) -> i64 {
        let offset = offset.max(self.start);
        let keep = self.entries.partition_point(|e| e.next_offset <= offset);
        self.entries.truncate(keep);
        let end = self.end();
        self.epochs.truncate_from_end(end);
        end
    }

    /// Whole entries from `offset` (which should be an entry boundary at or above the start),
    /// at least one if any and then as many as fit in `max_bytes`.
    pub fn read(&self, offset: i64, max_bytes: usize) -> Vec<Entry> {
        let from = self.entries.partition_point(|e| e.next_offset <= offset);
        let mut bytes = 0;
        let mut out = Vec::new();
        for e in &self.entries[from..] {
            if !out.is_empty() && bytes + e.batch.len() > max_bytes {
                break;
            }
            bytes += e.batch.len();
            out.push(e.clone());
        }
        out
    }

    /// KIP-320's answer for a fetch whose last entry had `epoch`: the largest epoch `<= epoch`
    /// in this log and where it ends (see [`EpochCache::end_offset_for`]); `(0, 0)` when this
    /// log has nothing at or below it.
    pub fn end_offset_for(&self, epoch: i32) -> (i32, i64) {
        if epoch >= self.last_epoch() {
            return (self.last_epoch(), self.end());
        }
        let (e, end) = self.epochs.end_offset_for(epoch, None, self.end());
        let first_epoch = if self.start > 0 { Some(self.start_epoch) } else { self.entries.first().map(|f| f.epoch) };
        if e < 1 || first_epoch.is_some_and(|f| f > epoch) {
            return (0, 0);
        }
        (e, end)
    }
}
