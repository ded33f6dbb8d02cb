//! A node's Raft log as the rules see it: dense entries, each one v2 record batch of the
//! metadata log stamped with the epoch that wrote it, plus the epoch index (the log's own
//! [`EpochCache`]) that answers "where does my epoch e end" for diverging-epoch truncation.
//!
//! Its one invariant: entries are dense (each starts where the previous ends) and their epochs
//! never go down. Appends that would break it are refused, not applied. Whole in memory: the
//! metadata log is small, and snapshots (issue 10) will bound it.

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

/// The log of entries from offset 0 (no snapshots yet).
#[derive(Debug, Clone, Default)]
pub struct Entries {
    entries: Vec<Entry>,
    epochs: EpochCache,
}

impl Entries {
    /// Rebuilds the log from entries read back from disk.
    pub fn restore(entries: Vec<Entry>) -> Result<Entries, String> {
        let mut log = Entries::default();
        for e in entries {
            log.append(e)?;
        }
        Ok(log)
    }

    pub fn end(&self) -> i64 {
        self.entries.last().map_or(0, |e| e.next_offset)
    }

    /// Epoch of the last entry; 0 for an empty log.
    pub fn last_epoch(&self) -> i32 {
        self.entries.last().map_or(0, |e| e.epoch)
    }

    /// Epoch of the entry holding `offset`, if any.
    pub fn epoch_at(&self, offset: i64) -> Option<i32> {
        let i = self.entries.partition_point(|e| e.next_offset <= offset);
        self.entries.get(i).filter(|e| e.base_offset <= offset).map(|e| e.epoch)
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
        if entry.epoch < self.last_epoch() {
            return Err(format!("entry epoch {} is below the log's last epoch {}", entry.epoch, self.last_epoch()));
        }
        self.epochs.assign(entry.epoch, entry.base_offset);
        self.entries.push(entry);
        Ok(())
    }

    /// Removes every entry holding an offset at or above `offset`; returns the new end (below
    /// `offset` when it fell inside an entry).
    pub fn truncate_to(&mut self, offset: i64) -> i64 {
        let keep = self.entries.partition_point(|e| e.next_offset <= offset);
        self.entries.truncate(keep);
        let end = self.end();
        self.epochs.truncate_from_end(end);
        end
    }

    /// Whole entries from `offset` (which should be an entry boundary), at least one if any and
    /// then as many as fit in `max_bytes`.
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
        if e < 1 || self.entries.first().is_some_and(|f| f.epoch > epoch) {
            return (0, 0);
        }
        (e, end)
    }
}
