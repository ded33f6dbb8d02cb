//! The sparse indexes beside each segment: `.index` (offset → file position) and `.timeindex`
//! (timestamp → offset), in Kafka's entry formats.
//!
//! Both are caches of what the `.log` file already says, so they are never trusted blindly:
//! [`IndexFile::load`] rejects a file that is not a whole number of entries or not strictly
//! increasing, and the segment rebuilds it from the log. Entries live in memory for lookup and
//! reach the file in groups (every [`index_write_entries`] entries, and always before a sync),
//! which keeps index IO off the per-append path the way Kafka's mmap'd indexes do.

use crate::constants::{index_write_entries, offset_index_entry_bytes, time_index_entry_bytes};
use crate::storage::{read_exact_at, DiskFile};
use std::io;
use std::sync::Arc;

/// One fixed-size index entry, big-endian on disk.
pub trait Entry: Copy + std::fmt::Debug {
    const BYTES: usize;
    fn encode(&self, out: &mut [u8]);
    fn decode(b: &[u8]) -> Self;
    /// The key entries are sorted by; must strictly increase along the file.
    fn key(&self) -> i64;
}

/// `.index` entry: offset relative to the segment base → byte position of the batch starting
/// at that offset. (Kafka records a batch's last offset here; we record its first, which keeps
/// "the entry points at a batch header with this base offset" checkable.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetEntry {
    pub relative_offset: u32,
    pub position: u32,
}

impl Entry for OffsetEntry {
    const BYTES: usize = offset_index_entry_bytes;
    fn encode(&self, out: &mut [u8]) {
        out[0..4].copy_from_slice(&self.relative_offset.to_be_bytes());
        out[4..8].copy_from_slice(&self.position.to_be_bytes());
    }
    fn decode(b: &[u8]) -> Self {
        OffsetEntry {
            relative_offset: u32::from_be_bytes(b[0..4].try_into().expect("4")),
            position: u32::from_be_bytes(b[4..8].try_into().expect("4")),
        }
    }
    fn key(&self) -> i64 {
        self.relative_offset as i64
    }
}

/// `.timeindex` entry: the largest timestamp seen so far in the segment → relative offset of
/// the batch that carried it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeEntry {
    pub timestamp: i64,
    pub relative_offset: u32,
}

impl Entry for TimeEntry {
    const BYTES: usize = time_index_entry_bytes;
    fn encode(&self, out: &mut [u8]) {
        out[0..8].copy_from_slice(&self.timestamp.to_be_bytes());
        out[8..12].copy_from_slice(&self.relative_offset.to_be_bytes());
    }
    fn decode(b: &[u8]) -> Self {
        TimeEntry {
            timestamp: i64::from_be_bytes(b[0..8].try_into().expect("8")),
            relative_offset: u32::from_be_bytes(b[8..12].try_into().expect("4")),
        }
    }
    fn key(&self) -> i64 {
        self.timestamp
    }
}

/// An index file and its entries in memory.
pub struct IndexFile<E: Entry> {
    /// Shared with a truncation's job, which cuts and syncs the file off the owner's lock
    /// (`log::cut`).
    file: Arc<dyn DiskFile>,
    /// Shared with a cleaning step's job, which looks batches up in a closed segment off the
    /// owner's lock (`log::pass::job`); a change while one holds them copies them first.
    entries: Arc<Vec<E>>,
    /// How many of `entries` are in the file; the rest wait for the next group write.
    written: usize,
}

impl<E: Entry> IndexFile<E> {
    /// An index with no entries over `file`, which is truncated to empty.
    pub fn empty(file: Box<dyn DiskFile>) -> io::Result<Self> {
        file.truncate(0)?;
        Ok(IndexFile { file: Arc::from(file), entries: Arc::new(Vec::new()), written: 0 })
    }

    /// Reads the entries of `file`. `Ok(Err(..))` means the file is not a valid index (longer
    /// than `max_bytes`, partial entry, keys not strictly increasing) and must be rebuilt.
    pub fn load(file: Box<dyn DiskFile>, max_bytes: u64) -> io::Result<Result<Self, (Box<dyn DiskFile>, String)>> {
        let len = file.len()?;
        if len > max_bytes {
            return Ok(Err((file, format!("{len} bytes is more than the log could need ({max_bytes})"))));
        }
        let len = len as usize;
        if len % E::BYTES != 0 {
            let why = format!("{len} bytes is not a whole number of {}-byte entries", E::BYTES);
            return Ok(Err((file, why)));
        }
        let mut bytes = vec![0u8; len];
        read_exact_at(file.as_ref(), &mut bytes, 0)?;
        let entries: Vec<E> = bytes.chunks_exact(E::BYTES).map(E::decode).collect();
        if let Some(i) = entries.windows(2).position(|w| w[0].key() >= w[1].key()) {
            let why = format!("entry {} does not increase over entry {i}", i + 1);
            return Ok(Err((file, why)));
        }
        let written = entries.len();
        Ok(Ok(IndexFile { file: Arc::from(file), entries: Arc::new(entries), written }))
    }

    pub fn entries(&self) -> &[E] {
        &self.entries
    }

    /// The entries, shared rather than copied (see the field).
    pub fn shared(&self) -> Arc<Vec<E>> {
        self.entries.clone()
    }

    pub fn last(&self) -> Option<E> {
        self.entries.last().copied()
    }

    /// Adds an entry whose key must exceed the last one's (a caller bug otherwise); writes the
    /// pending group to the file when it is full.
    pub fn push(&mut self, e: E) -> io::Result<()> {
        debug_assert!(self.last().is_none_or(|l| l.key() < e.key()), "index keys must increase");
        Arc::make_mut(&mut self.entries).push(e);
        if self.entries.len() - self.written >= index_write_entries {
            self.write_out()?;
        }
        Ok(())
    }

    /// Writes the entries not yet in the file, in one append (unsynced).
    pub fn write_out(&mut self) -> io::Result<()> {
        if self.written == self.entries.len() {
            return Ok(());
        }
        let mut buf = vec![0u8; (self.entries.len() - self.written) * E::BYTES];
        for (e, chunk) in self.entries[self.written..].iter().zip(buf.chunks_exact_mut(E::BYTES)) {
            e.encode(chunk);
        }
        self.file.write_at(&buf, (self.written * E::BYTES) as u64)?;
        self.written = self.entries.len();
        Ok(())
    }

    /// The last entry whose key is `<= key`.
    pub fn floor(&self, key: i64) -> Option<E> {
        let n = self.entries.partition_point(|e| e.key() <= key);
        n.checked_sub(1).map(|i| self.entries[i])
    }

    /// Keeps only the entries for which `keep` holds on a prefix (the first failing entry and all
    /// after it go), in memory and on disk.
    pub fn truncate_where(&mut self, keep: impl Fn(&E) -> bool) -> io::Result<()> {
        match self.cut_entries(keep) {
            Some(len) => self.file.truncate(len),
            None => Ok(()),
        }
    }

    /// [`IndexFile::truncate_where`] in memory only: returns the length the file must be cut
    /// to when it holds entries that went (None: it holds none), which the caller does before
    /// anything is written past that length again (a truncation's job, `log::cut`).
    pub fn cut_entries(&mut self, keep: impl Fn(&E) -> bool) -> Option<u64> {
        let n = self.entries.partition_point(|e| keep(e));
        if n < self.entries.len() {
            Arc::make_mut(&mut self.entries).truncate(n);
        }
        if n >= self.written {
            return None;
        }
        self.written = n;
        Some((n * E::BYTES) as u64)
    }

    /// The file, for a job that cuts or syncs it off the owner's lock.
    pub fn handle(&self) -> Arc<dyn DiskFile> {
        self.file.clone()
    }

    /// Writes pending entries and makes the file durable.
    pub fn sync(&mut self) -> io::Result<()> {
        self.write_out()?;
        self.file.sync()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{Disk, FileDisk};

    #[test]
    fn entries_round_trip_and_floor() {
        let tmp = tempfile::tempdir().unwrap();
        let disk = FileDisk::new();
        let path = tmp.path().join("0.index");
        let mut idx = IndexFile::<OffsetEntry>::empty(disk.open(&path, true).unwrap()).unwrap();
        for i in 1..=3u32 {
            idx.push(OffsetEntry { relative_offset: i * 10, position: i * 4096 }).unwrap();
        }
        idx.sync().unwrap();
        assert_eq!(idx.floor(5), None);
        assert_eq!(idx.floor(25).unwrap().position, 8192);
        assert_eq!(idx.floor(30).unwrap().position, 12288);
        drop(idx);
        let loaded = IndexFile::<OffsetEntry>::load(disk.open(&path, false).unwrap(), 1 << 20).unwrap();
        let mut loaded = loaded.ok().expect("valid index loads");
        assert_eq!(loaded.entries().len(), 3);
        loaded.truncate_where(|e| e.relative_offset < 20).unwrap();
        assert_eq!(loaded.entries().len(), 1);
        assert_eq!(disk.open(&path, false).unwrap().len().unwrap(), 8);
    }

    #[test]
    fn invalid_files_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let disk = FileDisk::new();
        let path = tmp.path().join("0.timeindex");
        let f = disk.open(&path, true).unwrap();
        f.append(&[0u8; 13]).unwrap();
        let r = IndexFile::<TimeEntry>::load(f, 1 << 20).unwrap();
        assert!(r.err().unwrap().1.contains("whole number"));
        let f = disk.open(&path, true).unwrap();
        f.truncate(0).unwrap();
        let mut b = [0u8; 24];
        TimeEntry { timestamp: 50, relative_offset: 1 }.encode(&mut b[..12]);
        TimeEntry { timestamp: 50, relative_offset: 2 }.encode(&mut b[12..]);
        f.append(&b).unwrap();
        let r = IndexFile::<TimeEntry>::load(f, 1 << 20).unwrap();
        assert!(r.err().unwrap().1.contains("does not increase"));
    }
}
