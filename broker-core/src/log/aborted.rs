//! The log's aborted transactions: every segment's `.txnindex` (Kafka's format, `txn_index`),
//! held in memory in marker order and written to the file of the segment holding each abort
//! marker, so a read_committed fetch can list the aborted transactions its range overlaps.
//!
//! What to write comes from the producer state (`broker::producer`), which knows where each
//! transaction started; the log only keeps the entries in step with its segments. Durability,
//! in the log's terms (docs/transactions.md, 1.5):
//! * an entry is appended unsynced when its marker is, and owed to the next flush or sync job
//!   (`durability`'s owed files) as the segment's data is; so an entry whose marker lies below
//!   the checkpointed recovery point is durable, and trusted at open;
//! * entries at or above the offset the producer-state replay starts from are derived again by
//!   that replay (at open and after a truncation, [`Log::replace_aborted_from`]), whatever the
//!   files said; a file that does not decode makes the replay start at the log start;
//! * a truncation drops the entries of removed offsets with them, a deleted segment takes its
//!   file along; the cleaner removes aborted transactions' data ([`AbortedRanges`]), and a
//!   marker only once nothing of its transaction is left and its delete horizon passed (the
//!   group's `.txnindex` is then rewritten without it before the swap: `log::pass::markers`);
//!   every entry kept stays in the segment it was written to: a segment holding an entry is
//!   only ever the first of a cleaned group, whose file keeps its base offset's name, so its
//!   `.txnindex` stays its own.
//!
//! Never decides what aborted: that is the markers' and the producer state's.

use super::txn_index::{self, AbortedTxn};
use super::{file_stem, io_err, BatchHeader, Log, LogError};
use std::collections::BTreeMap;
use crate::storage::{read_exact_at, Disk};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Aborted transactions by producer, each as (first offset, marker offset), in log order: what
/// a cleaning pass removes (Kafka's cleaner discards an aborted transaction's batches and keeps
/// its marker).
#[derive(Debug, Default)]
pub(super) struct AbortedRanges(BTreeMap<i64, Vec<(i64, i64)>>);

impl AbortedRanges {
    /// Whether `h` is a data batch of an aborted transaction.
    pub(super) fn contains(&self, h: &BatchHeader) -> bool {
        if !h.is_transactional() || h.is_control() {
            return false;
        }
        let Some(ranges) = self.0.get(&h.producer_id) else { return false };
        let i = ranges.partition_point(|(_, marker)| *marker < h.base_offset);
        ranges.get(i).is_some_and(|(first, _)| *first <= h.base_offset)
    }
}

/// The path of the `.txnindex` of the segment at `base`.
pub(super) fn path(dir: &Path, base: i64) -> PathBuf {
    dir.join(format!("{}.txnindex", file_stem(base)))
}

/// The entries of the segment at `base` whose next segment starts at `next` (None: the last),
/// or Err(why) when its file cannot be trusted. A missing file holds none; a torn last entry
/// is left out (it is rewritten whole by the next change to the file).
pub(super) fn load(disk: &dyn Disk, dir: &Path, base: i64, next: Option<i64>, most: u64) -> Result<Result<Vec<AbortedTxn>, String>, LogError> {
    let path = path(dir, base);
    let file = match disk.open(&path, false) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Ok(Vec::new())),
        Err(e) => return Err(io_err("open", &path)(e)),
    };
    let len = file.len().map_err(io_err("size", &path))?;
    if len > most {
        return Ok(Err(format!("{len} bytes, more than a segment's index holds")));
    }
    let mut bytes = vec![0u8; len as usize];
    read_exact_at(file.as_ref(), &mut bytes, 0).map_err(io_err("read", &path))?;
    Ok(match txn_index::decode(&bytes, base) {
        Ok((entries, _)) if next.is_some_and(|n| entries.last().is_some_and(|t| t.last_offset >= n)) => Err("an entry past the segment's end".into()),
        Ok((entries, _)) => Ok(entries),
        Err(e) => Err(e.to_string()),
    })
}

/// The entries of `entries` whose markers lie in the segment [base, next), encoded.
fn encoded(entries: &[AbortedTxn], base: i64, next: Option<i64>) -> Vec<u8> {
    entries.iter().filter(|t| t.last_offset >= base && next.is_none_or(|n| t.last_offset < n)).flat_map(|t| t.encode()).collect()
}

/// What bringing one `.txnindex` in line did.
enum Rewrote {
    /// The file already said it: read, not known synced.
    Same(PathBuf),
    /// Replaced atomically (synced).
    Replaced,
    /// Removed (a directory change, durable at the next directory sync).
    Removed,
    /// Neither a file nor entries for one.
    Absent,
}

/// Makes the file at `path` hold `bytes` (none: no file). Read back only when the length
/// agrees (never more than memory holds).
fn rewrite_file(disk: &dyn Disk, path: &Path, bytes: &[u8]) -> Result<Rewrote, LogError> {
    let exists = disk.exists(path);
    if bytes.is_empty() {
        if !exists {
            return Ok(Rewrote::Absent);
        }
        disk.remove(path).map_err(io_err("remove", path))?;
        return Ok(Rewrote::Removed);
    }
    let file = if exists { Some(disk.open(path, false).map_err(io_err("open", path))?) } else { None };
    let same_len = match &file {
        Some(f) => f.len().map_err(io_err("size", path))? == bytes.len() as u64,
        None => false,
    };
    let mut held = vec![0u8; if same_len { bytes.len() } else { 0 }];
    if let (true, Some(f)) = (same_len, &file) {
        read_exact_at(f.as_ref(), &mut held, 0).map_err(io_err("read", path))?;
    }
    drop(file);
    if same_len && held == bytes {
        return Ok(Rewrote::Same(path.to_path_buf()));
    }
    crate::storage::write_atomically(disk, path, bytes).map_err(io_err("replace", path))?;
    Ok(Rewrote::Replaced)
}

/// Some segments' `.txnindex` files as they must read, written by a job off the owner's lock
/// (a truncation's, `log::cut`): each that already says it is synced (it may have been read,
/// not known synced), each that must change replaced atomically, and the directory synced if
/// one went.
pub(super) struct IndexFiles {
    disk: Arc<dyn Disk>,
    dir: PathBuf,
    bounds: Vec<(i64, Option<i64>)>,
    entries: Vec<AbortedTxn>,
}

impl IndexFiles {
    /// The files of the segments `bounds` (base, next segment's base) as `entries` say.
    pub(super) fn new(disk: Arc<dyn Disk>, dir: PathBuf, bounds: Vec<(i64, Option<i64>)>, entries: Vec<AbortedTxn>) -> IndexFiles {
        IndexFiles { disk, dir, bounds, entries }
    }

    /// Blocking: reads, writes and syncs.
    pub(super) fn write(&self) -> Result<(), LogError> {
        let mut removed = false;
        for &(base, next) in &self.bounds {
            match rewrite_file(self.disk.as_ref(), &path(&self.dir, base), &encoded(&self.entries, base, next))? {
                Rewrote::Same(path) => super::durability::Owed::File(path).sync(self.disk.as_ref())?,
                Rewrote::Removed => removed = true,
                Rewrote::Replaced | Rewrote::Absent => {}
            }
        }
        if removed {
            self.disk.sync_dir(&self.dir).map_err(io_err("fsync directory", &self.dir))?;
        }
        Ok(())
    }
}

/// What a truncation's job found after its producer-state replay: the aborted transactions
/// from `from` on, written to their files if they differ from what memory held (`entries`;
/// None: memory already says it). The owner gives it to [`Log::adopt_aborted`].
#[derive(Debug)]
pub struct AbortedFix {
    from: i64,
    entries: Option<Vec<AbortedTxn>>,
}

impl AbortedFix {
    pub(super) fn new(from: i64, entries: Option<Vec<AbortedTxn>>) -> AbortedFix {
        AbortedFix { from, entries }
    }
}

impl Log {
    /// Reads every segment's `.txnindex` (at open). A file that does not decode leaves its
    /// segment's entries out and says so (`aborted_index_trusted`).
    pub(super) fn load_aborted(&mut self) -> Result<(), LogError> {
        for (i, seg) in self.segments.iter().enumerate() {
            let next = self.segments.get(i + 1).map(|n| n.base_offset);
            // No segment holds more markers than its bytes hold 78-byte batches (as large as
            // segments grow: the last one may have lost a tail whose entries the replay drops).
            let bytes = seg.size().max(self.config.segment_bytes);
            let most = (bytes / super::batch::control::marker_bytes as u64 + 1) * txn_index::entry_bytes as u64;
            match load(self.disk.as_ref(), &self.dir, seg.base_offset, next, most)? {
                Ok(entries) => self.aborted.extend(entries),
                Err(_) => self.aborted_untrusted = true,
            }
        }
        Ok(())
    }

    /// Records the abort of a transaction whose marker this log just appended.
    pub fn append_aborted(&mut self, t: AbortedTxn) -> Result<(), LogError> {
        self.check_failed()?;
        debug_assert!(self.aborted.last().is_none_or(|l| l.last_offset < t.last_offset), "entries in marker order");
        let seg = self.segment_holding(t.last_offset);
        let held = self.aborted.iter().filter(|e| e.last_offset >= seg).count();
        self.aborted.push(t);
        let result = self.write_aborted(seg, held, &[t]);
        self.offline_on_error(result, "writing the aborted-transaction index")
    }

    /// The aborted transactions a read_committed fetch from `from` below `upper` (its last
    /// stable offset) must list: those that ended at or after `from` and began before `upper`.
    pub fn aborted_overlapping(&self, from: i64, upper: i64) -> Vec<AbortedTxn> {
        let at = self.aborted.partition_point(|t| t.last_offset < from);
        txn_index::overlapping(&self.aborted[at..], from, upper).0
    }

    /// Every aborted transaction the log's index holds, in marker order.
    pub fn aborted_transactions(&self) -> &[AbortedTxn] {
        &self.aborted
    }

    /// The aborted transactions that began below `below` (a pass's dirty end), for a cleaning
    /// pass: every one, wherever its marker lies — a marker beyond the dirty end (in a segment
    /// the pass does not reach) still takes back the transaction's batches below it. (The
    /// caller's dirty end is below the last stable offset, so no transaction whose marker is
    /// not yet replicated has a batch below it.)
    pub(super) fn aborted_ranges(&self, below: i64) -> AbortedRanges {
        let mut by_producer: BTreeMap<i64, Vec<(i64, i64)>> = BTreeMap::new();
        for t in self.aborted.iter().filter(|t| t.first_offset < below) {
            by_producer.entry(t.producer_id).or_default().push((t.first_offset, t.last_offset));
        }
        AbortedRanges(by_producer)
    }

    /// Whether the segment [base, next) holds an abort marker (its `.txnindex` has entries).
    pub(super) fn holds_aborted(&self, base: i64, next: i64) -> bool {
        let i = self.aborted.partition_point(|t| t.last_offset < base);
        self.aborted.get(i).is_some_and(|t| t.last_offset < next)
    }

    /// Where a producer-state replay must start at the latest for its index to be whole: at
    /// open, the recovery point the checkpoint file held (below it the files are durable; a
    /// checkpoint written by open itself after a cut vouches for the segments only), or the log
    /// start if a `.txnindex` did not read back; once restored, anywhere (the index in memory
    /// is whole).
    pub fn aborted_replay_bound(&self) -> i64 {
        match (self.aborted_untrusted, self.aborted_durable_to) {
            (true, _) => self.log_start_offset(),
            (false, Some(to)) => to,
            (false, None) => i64::MAX,
        }
    }

    /// Replaces the entries of markers at or above `from` with `entries` (what a producer-state
    /// replay from `from` derived), rewriting the files that change.
    pub fn replace_aborted_from(&mut self, from: i64, entries: Vec<AbortedTxn>) -> Result<(), LogError> {
        self.check_failed()?;
        let at = self.aborted.partition_point(|t| t.last_offset < from);
        if self.aborted[at..] == entries[..] && !self.aborted_untrusted {
            // The files already say it, but from `from` on they were read, not known synced
            // (a write a crash may still drop): owed like a write, so no checkpoint vouches
            // for them unsynced.
            let bases: Vec<i64> = self.aborted[at..].iter().map(|t| self.segment_holding(t.last_offset)).collect();
            for base in bases {
                self.owed.note(super::durability::Owed::File(path(&self.dir, base)));
            }
            self.aborted_durable_to = None;
            return Ok(());
        }
        self.aborted.truncate(at);
        self.aborted.extend(entries);
        let result = self.rewrite_aborted_from(from);
        if result.is_ok() {
            self.aborted_untrusted = false;
            self.aborted_durable_to = None;
        }
        self.offline_on_error(result, "rewriting the aborted-transaction index")
    }

    /// After a cut at `offset`: entries of removed markers go, and the file of the segment cut
    /// is rewritten (those of removed segments went with them).
    pub(super) fn cut_aborted(&mut self, offset: i64) -> Result<(), LogError> {
        match self.drop_aborted_from(offset) {
            true => self.rewrite_aborted_from(offset),
            false => Ok(()),
        }
    }

    /// [`Log::cut_aborted`] in memory: whether entries went (then the files from the segment
    /// holding `offset` on must be brought in line: [`Log::aborted_files_from`]).
    pub(super) fn drop_aborted_from(&mut self, offset: i64) -> bool {
        let at = self.aborted.partition_point(|t| t.last_offset < offset);
        let dropped = at < self.aborted.len();
        self.aborted.truncate(at);
        dropped
    }

    /// The `.txnindex` files of every segment from the one holding `from` as memory says they
    /// read (with `entries` in place of memory's), for a job to write (`log::cut`).
    pub(super) fn aborted_files_from(&self, from: i64, entries: Vec<AbortedTxn>) -> IndexFiles {
        IndexFiles { disk: self.disk.clone(), dir: self.dir.clone(), bounds: self.segment_bounds_from(from), entries }
    }

    /// (base, next segment's base) of every segment from the one holding `from`.
    fn segment_bounds_from(&self, from: i64) -> Vec<(i64, Option<i64>)> {
        let first = self.segment_holding(from);
        self.segments.iter().enumerate().filter(|(_, s)| s.base_offset >= first).map(|(i, s)| (s.base_offset, self.segments.get(i + 1).map(|n| n.base_offset))).collect()
    }

    /// What a truncation's job needs to bring the index in line with a producer-state replay
    /// after it: the entries and whether they can be trusted, as memory holds them now.
    pub(super) fn aborted_held(&self) -> (Vec<AbortedTxn>, bool) {
        (self.aborted.clone(), self.aborted_untrusted)
    }

    /// Takes what a truncation's job wrote after its replay ([`AbortedFix`]): the entries from
    /// its start on, now as the files hold them and durable.
    pub fn adopt_aborted(&mut self, fix: AbortedFix) {
        if let Some(entries) = fix.entries {
            let at = self.aborted.partition_point(|t| t.last_offset < fix.from);
            self.aborted.truncate(at);
            self.aborted.extend(entries);
            self.aborted_untrusted = false;
        }
        self.aborted_durable_to = None;
    }

    /// After the oldest segments went: entries of markers below the new start go with them.
    pub(super) fn forget_aborted_below(&mut self, start: i64) {
        self.aborted.retain(|t| t.last_offset >= start);
    }

    /// The base of the segment holding `offset` (the active one for the log end).
    fn segment_holding(&self, offset: i64) -> i64 {
        let i = self.segments.partition_point(|s| s.base_offset <= offset).max(1);
        self.segments[i - 1].base_offset
    }

    /// Brings the files of every segment from the one holding `from` in line with memory. A file
    /// that already says it is left as it is (owed a sync: it was read, not known synced); one
    /// that must change is replaced atomically (a temporary file synced and renamed over it), so
    /// a crash leaves the old entries or the new ones, never a cut file whose older entries a
    /// checkpoint had vouched for.
    fn rewrite_aborted_from(&mut self, from: i64) -> Result<(), LogError> {
        for (base, next) in self.segment_bounds_from(from) {
            let bytes = encoded(&self.aborted, base, next);
            match rewrite_file(self.disk.as_ref(), &path(&self.dir, base), &bytes)? {
                Rewrote::Same(path) => self.owed.note(super::durability::Owed::File(path)),
                Rewrote::Removed => self.dir_changed(),
                Rewrote::Replaced | Rewrote::Absent => {}
            }
        }
        Ok(())
    }

    /// Writes `entries` into the file of the segment at `base`, after the `held` it has.
    fn write_aborted(&mut self, base: i64, held: usize, entries: &[AbortedTxn]) -> Result<(), LogError> {
        let path = path(&self.dir, base);
        let existed = self.disk.exists(&path);
        let file = self.disk.open(&path, true).map_err(io_err("create", &path))?;
        let bytes: Vec<u8> = entries.iter().flat_map(|t| t.encode()).collect();
        file.write_at(&bytes, (held * txn_index::entry_bytes) as u64).map_err(io_err("write", &path))?;
        if !existed {
            self.dir_changed();
        }
        // Synced by the next flush or sync job, before the recovery point passes the marker
        // (one owed entry per write: a job vouches only for what was owed when it was taken).
        self.owed.note(super::durability::Owed::File(path));
        Ok(())
    }
}
