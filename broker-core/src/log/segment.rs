//! One segment: a `.log` file of whole v2 batches plus its `.index` and `.timeindex`.
//!
//! A segment owns the rule "the bytes of `.log` are exactly a sequence of valid batches with
//! dense offsets starting at `base_offset`". It enforces it on every append (the caller has
//! validated the batch), checks it on every read, and re-establishes it when opened:
//! a *trusted* segment (fully below the recovery point, so it was synced) must already satisfy
//! it — any breach is [`LogError::Corrupt`] naming the file and byte position; a segment at or
//! after the recovery point is scanned from its start and cut at the first batch that breaks
//! the rule, and its indexes are rebuilt. It never reads a clock: `now` comes from the caller.

mod cut;
mod lookup;

use super::batch::{self, BatchHeader};
use super::index::{IndexFile, OffsetEntry, TimeEntry};
use super::segment_files::{load_index, offset_index_checks_out, paths, ChunkReader};
pub use super::segment_files::delete_files;
pub(super) use cut::FileCut;
pub(super) use lookup::{walk_headers, Reader};
use super::{io_err, LogError};
use crate::constants::batch_log_overhead_bytes;
use super::region::SegmentLog;
use crate::storage::{read_exact_at, Disk, DiskFile};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `00000000000000012345` — Kafka's file stem for a segment starting at offset 12345.
pub fn file_stem(base_offset: i64) -> String {
    format!("{base_offset:020}")
}

/// What a recovery scan cut from a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    pub file: PathBuf,
    pub position: u64,
    pub bytes_removed: u64,
    pub reason: String,
}

/// One stamped batch as an append hands it over. Written at once, either is only read; staged
/// (the write-behind, `log::overlay`), borrowed bytes are copied and shared ones kept as they
/// are: a produce's batch is staged without a second copy of its bytes.
#[derive(Clone, Copy)]
pub enum Appending<'a> {
    Borrowed(&'a [u8]),
    Shared(&'a bytes::Bytes),
}

impl<'a> Appending<'a> {
    pub fn bytes(self) -> &'a [u8] {
        match self {
            Appending::Borrowed(b) => b,
            Appending::Shared(b) => b,
        }
    }

    /// The bytes for the overlay to keep: a refcount of shared ones, a copy of borrowed ones.
    fn kept(self) -> bytes::Bytes {
        match self {
            Appending::Borrowed(b) => bytes::Bytes::copy_from_slice(b),
            Appending::Shared(b) => b.clone(),
        }
    }
}

/// Fields in declared order (`repr(C)`), what an append touches first: see `Log`.
#[repr(C)]
pub struct Segment {
    /// Bytes of whole batches in `.log`.
    size: u64,
    /// Offset after the last batch (`base_offset` when empty).
    next_offset: i64,
    /// Shared with the fetch regions in flight from this segment (see `log::region`).
    log: Arc<SegmentLog>,
    /// maxTimestamp of the first batch: the `segment.ms` reference once there is one (Kafka's
    /// rule, so restarts do not postpone time-based rolls).
    first_batch_timestamp: Option<i64>,
    /// Simulated or real ms at creation (or at open): the `segment.ms` reference while the
    /// segment holds no batch.
    pub created_ms: u64,
    pub base_offset: i64,
    idx: Indexing,
    /// Shared, as jobs carry it for their messages (no allocation per job).
    log_path: Arc<Path>,
}

/// The indexes and the running state that decides their next entries. Kept apart from the
/// `.log` handle so a scan can read the log while it rebuilds the indexes.
#[repr(C)]
struct Indexing {
    bytes_since_index: u64,
    /// Kafka `index.interval.bytes`: log bytes between sparse index entries.
    interval: u64,
    max_timestamp: i64,
    offset_of_max_timestamp: i64,
    base_offset: i64,
    /// Entries were written since the index files were last synced.
    dirty: bool,
    index: IndexFile<OffsetEntry>,
    time_index: IndexFile<TimeEntry>,
}

impl Indexing {
    fn note_timestamp(&mut self, h: &BatchHeader) {
        if h.max_timestamp > self.max_timestamp {
            self.max_timestamp = h.max_timestamp;
            self.offset_of_max_timestamp = h.base_offset;
        }
    }

    /// Updates timestamps and indexes for a batch written at `position`, by Kafka's rule: an
    /// entry when more than `index.interval.bytes` of log were written since the last one.
    /// Index write failures are returned but leave the segment consistent: an index is a
    /// sparse cache, a missing entry only makes lookups scan further.
    fn index_batch(&mut self, h: &BatchHeader, position: u64) -> Result<(), std::io::Error> {
        self.note_timestamp(h);
        let mut result = Ok(());
        if self.bytes_since_index > self.interval {
            let rel = (h.base_offset - self.base_offset) as u32;
            self.dirty = true;
            result = self.index.push(OffsetEntry { relative_offset: rel, position: position as u32 });
            if result.is_ok() && self.time_index.last().is_none_or(|t| t.timestamp < self.max_timestamp) {
                let rel_max = (self.offset_of_max_timestamp - self.base_offset) as u32;
                result = self.time_index.push(TimeEntry { timestamp: self.max_timestamp, relative_offset: rel_max });
            }
            self.bytes_since_index = 0;
        }
        self.bytes_since_index += h.size as u64;
        result
    }
}

/// The end of a scan: where whole valid batches stop, and why, if not at end of file.
struct ScanEnd {
    position: u64,
    next_offset: i64,
    stop: Option<(u64, String)>,
}

impl Segment {
    /// Creates an empty segment, replacing any files of that name.
    pub fn create(disk: &dyn Disk, dir: &Path, base: i64, interval: u64, now: u64) -> Result<Segment, LogError> {
        Segment::create_at(disk, paths(dir, base), base, interval, now)
    }

    /// [`Segment::create`] under other names (`.log`, `.index`, `.timeindex`, in that order):
    /// the cleaner builds a group's segment, indexes included, before it is swapped in.
    pub fn create_at(disk: &dyn Disk, [lp, ip, tp]: [PathBuf; 3], base: i64, interval: u64, now: u64) -> Result<Segment, LogError> {
        let log = disk.open(&lp, true).map_err(io_err("create", &lp))?;
        log.truncate(0).map_err(io_err("truncate", &lp))?;
        let index = IndexFile::empty(disk.open(&ip, true).map_err(io_err("create", &ip))?)
            .map_err(io_err("truncate", &ip))?;
        let time_index = IndexFile::empty(disk.open(&tp, true).map_err(io_err("create", &tp))?)
            .map_err(io_err("truncate", &tp))?;
        Ok(Segment::assemble(base, lp, log, index, time_index, interval, now))
    }

    fn assemble(
        base: i64,
        log_path: PathBuf,
        log: Box<dyn DiskFile>,
        index: IndexFile<OffsetEntry>,
        time_index: IndexFile<TimeEntry>,
        index_interval: u64,
        now: u64,
    ) -> Segment {
        Segment {
            base_offset: base,
            log_path: log_path.into(),
            log: Arc::new(SegmentLog::new(log)),
            size: 0,
            next_offset: base,
            idx: Indexing {
                base_offset: base,
                index,
                time_index,
                max_timestamp: -1,
                offset_of_max_timestamp: base,
                bytes_since_index: 0,
                interval: index_interval,
                dirty: true,
            },
            created_ms: now,
            first_batch_timestamp: None,
        }
    }

    /// Opens a segment that lies wholly below the recovery point: it was synced, so it must be
    /// intact. Indexes are loaded when they check out and rebuilt otherwise (reported through
    /// `rebuilt`); the tail after the last index entry is validated batch by batch.
    pub fn open_trusted(
        disk: &dyn Disk,
        dir: &Path,
        base: i64,
        interval: u64,
        now: u64,
        rebuilt: &mut Vec<PathBuf>,
    ) -> Result<Segment, LogError> {
        let seg = Segment::open_trusted_with(disk, dir, base, interval, now, rebuilt, false)?;
        // A time index whose entries point past the segment cannot be checked before the
        // scan; rebuild both and scan again.
        let span = seg.next_offset - base;
        let bad_time = seg.idx.time_index.entries().iter().any(|t| t.relative_offset as i64 >= span.max(1));
        if bad_time && !seg.idx.dirty {
            drop(seg);
            return Segment::open_trusted_with(disk, dir, base, interval, now, rebuilt, true);
        }
        Ok(seg)
    }

    fn open_trusted_with(
        disk: &dyn Disk,
        dir: &Path,
        base: i64,
        interval: u64,
        now: u64,
        rebuilt: &mut Vec<PathBuf>,
        force_rebuild: bool,
    ) -> Result<Segment, LogError> {
        let [lp, ip, tp] = paths(dir, base);
        let log = disk.open(&lp, false).map_err(io_err("open", &lp))?;
        let file_len = log.len().map_err(io_err("stat", &lp))?;
        let index = load_index::<OffsetEntry>(disk, &ip, file_len)?;
        let time_index = load_index::<TimeEntry>(disk, &tp, file_len)?;
        let index_ok = !force_rebuild
            && match &index {
                Ok(idx) => offset_index_checks_out(log.as_ref(), base, idx.entries(), file_len),
                Err(_) => false,
            };
        let (index, time_index, from) = match (index, time_index) {
            (Ok(index), Ok(time_index)) if index_ok => {
                let from = index.last().map_or(0, |e| e.position as u64);
                (index, time_index, from)
            }
            _ => {
                rebuilt.push(ip.clone());
                let index = IndexFile::empty(disk.open(&ip, true).map_err(io_err("create", &ip))?)
                    .map_err(io_err("truncate", &ip))?;
                let time_index = IndexFile::empty(disk.open(&tp, true).map_err(io_err("create", &tp))?)
                    .map_err(io_err("truncate", &tp))?;
                (index, time_index, 0)
            }
        };
        let rebuilding = from == 0 && index.entries().is_empty();
        let mut seg = Segment::assemble(base, lp, log, index, time_index, interval, now);
        seg.idx.dirty = rebuilding;
        if let Some(last) = seg.idx.time_index.last() {
            seg.idx.max_timestamp = last.timestamp;
            seg.idx.offset_of_max_timestamp = base + last.relative_offset as i64;
        }
        if file_len > 0 && from > 0 {
            seg.first_batch_timestamp = Some(seg.header_at(0, Some(base), file_len)?.max_timestamp);
        }
        let start_offset = match seg.idx.index.last() {
            Some(e) if from > 0 => base + e.relative_offset as i64,
            _ => base,
        };
        seg.size = from;
        let end = seg.scan(from, file_len, start_offset, rebuilding)?;
        if let Some((position, reason)) = end.stop {
            return Err(LogError::Corrupt { file: seg.log_path.to_path_buf(), position, reason });
        }
        seg.size = end.position;
        seg.next_offset = end.next_offset;
        Ok(seg)
    }

    /// Opens a segment at or after the recovery point: scans it from the start, cuts the `.log`
    /// at the first invalid or torn batch and rebuilds both indexes. A bad batch below
    /// `recovery_point` is synced data going bad: [`LogError::Corrupt`], nothing is cut.
    pub fn recover(
        disk: &dyn Disk,
        dir: &Path,
        base: i64,
        interval: u64,
        now: u64,
        recovery_point: i64,
    ) -> Result<(Segment, Option<Cut>), LogError> {
        let [lp, ip, tp] = paths(dir, base);
        let log = disk.open(&lp, false).map_err(io_err("open", &lp))?;
        let file_len = log.len().map_err(io_err("stat", &lp))?;
        let index = IndexFile::empty(disk.open(&ip, true).map_err(io_err("create", &ip))?)
            .map_err(io_err("truncate", &ip))?;
        let time_index = IndexFile::empty(disk.open(&tp, true).map_err(io_err("create", &tp))?)
            .map_err(io_err("truncate", &tp))?;
        let mut seg = Segment::assemble(base, lp, log, index, time_index, interval, now);
        let end = seg.scan(0, file_len, base, true)?;
        seg.size = end.position;
        seg.next_offset = end.next_offset;
        let cut = match end.stop {
            None => None,
            Some((position, reason)) if end.next_offset < recovery_point => {
                let reason = format!("{reason} (below the recovery point {recovery_point}: this data was synced)");
                return Err(LogError::Corrupt { file: seg.log_path.to_path_buf(), position, reason });
            }
            Some((position, reason)) => {
                // Synced at once: the bytes past the cut are below no offset, so no later
                // offset-driven flush would know to make the truncation durable, and a power
                // loss could bring the garbage back under a segment that is by then trusted.
                seg.log.truncate(position).map_err(io_err("truncate", &seg.log_path))?;
                seg.log.sync().map_err(io_err("fdatasync", &seg.log_path))?;
                Some(Cut {
                    file: seg.log_path.to_path_buf(),
                    position,
                    bytes_removed: file_len - position,
                    reason,
                })
            }
        };
        Ok((seg, cut))
    }

    /// Walks batches from `from` (whose first batch must start at `expected`) to `file_len`,
    /// fully validating each. With `index` set, adds index entries as appends would.
    /// A batch may be as large as the rest of the file: `max.message.bytes` can have been
    /// lowered since it was written, and the CRC, not a size guess, decides validity.
    fn scan(&mut self, from: u64, file_len: u64, mut expected: i64, index: bool) -> Result<ScanEnd, LogError> {
        let mut reader = ChunkReader::new(self.log.as_ref(), &self.log_path, file_len);
        let mut pos = from;
        while pos < file_len {
            let stop = |reason: String| Ok(ScanEnd { position: pos, next_offset: expected, stop: Some((pos, reason)) });
            if file_len - pos < batch_log_overhead_bytes as u64 {
                return stop(format!("{} trailing bytes, too few for a batch", file_len - pos));
            }
            let prefix = reader.get(pos, batch_log_overhead_bytes)?;
            let Some(size) = batch::declared_size(prefix) else {
                return stop("batch length field is not a plausible length".into());
            };
            if pos + size as u64 > file_len {
                return stop(format!("batch of {size} bytes runs past the end of the file (torn write)"));
            }
            let bytes = reader.get(pos, size)?;
            let header = match batch::validate_stored(bytes) {
                Ok(h) => h,
                Err(e) => return stop(e.to_string()),
            };
            if header.base_offset != expected {
                return stop(format!("batch base offset {} where {expected} was expected", header.base_offset));
            }
            if pos == 0 {
                self.first_batch_timestamp = Some(header.max_timestamp);
            }
            if index {
                // Rebuilding: index failures surface later as a missing or invalid index.
                let _ = self.idx.index_batch(&header, pos);
            } else {
                self.idx.note_timestamp(&header);
                self.idx.bytes_since_index += size as u64;
            }
            expected = header.next_offset();
            pos += size as u64;
        }
        Ok(ScanEnd { position: pos, next_offset: expected, stop: None })
    }

    /// Appends a validated, stamped batch whose base offset is `next_offset()`: written now, or
    /// with `behind` staged for the owner's next job to write (`log::overlay`).
    pub fn append(&mut self, batch: Appending<'_>, h: &BatchHeader, behind: bool) -> Result<(), LogError> {
        let bytes = batch.bytes();
        debug_assert_eq!(h.base_offset, self.next_offset, "caller assigns dense offsets");
        debug_assert_eq!(h.size, bytes.len());
        if behind {
            self.log.stage(self.size, batch.kept());
        } else if let Err(source) = self.log.write_at(bytes, self.size) {
            // Leave no partial batch behind: the next append must start on a batch boundary.
            if let Err(undo) = self.log.truncate(self.size) {
                let path = self.log_path.display();
                return Err(LogError::Failed(format!("append to {path} failed ({source}) and cutting it back failed ({undo})")));
            }
            return Err(LogError::Io { op: "append", path: self.log_path.to_path_buf(), source });
        }
        let position = self.size;
        if position == 0 {
            self.first_batch_timestamp = Some(h.max_timestamp);
        }
        self.size += bytes.len() as u64;
        self.next_offset = h.next_offset();
        // The batch is in the log; an index failure must not fail the append (see index_batch).
        let _ = self.idx.index_batch(h, position);
        Ok(())
    }

    /// Re-derives the largest timestamp and the bytes since the last index entry from the
    /// remaining index entries and the batches after the last one, as a trusted open does.
    fn recompute_index_state(&mut self) -> Result<(), LogError> {
        let (max_timestamp, max_offset) = self.idx.time_index.last().map_or((-1, self.base_offset), |t| (t.timestamp, self.base_offset + t.relative_offset as i64));
        self.idx.max_timestamp = max_timestamp;
        self.idx.offset_of_max_timestamp = max_offset;
        self.idx.bytes_since_index = 0;
        let (from, start) = self.idx.index.last().map_or((0, self.base_offset), |e| (e.position as u64, self.base_offset + e.relative_offset as i64));
        let end = self.scan(from, self.size, start, false)?;
        match end.stop {
            Some((position, reason)) => Err(self.corrupt(position, reason)),
            None => {
                debug_assert_eq!((end.position, end.next_offset), (self.size, self.next_offset));
                Ok(())
            }
        }
    }

    fn corrupt(&self, position: u64, reason: String) -> LogError {
        LogError::Corrupt { file: self.log_path.to_path_buf(), position, reason }
    }

    /// How long this segment has been open for `segment.ms`: by record time once it holds a
    /// batch (the new batch's maxTimestamp minus the first's), else by the caller's clock.
    pub fn age_ms(&self, now: u64, new_batch_timestamp: i64) -> u64 {
        match self.first_batch_timestamp {
            Some(first) => new_batch_timestamp.saturating_sub(first).max(0) as u64,
            None => now.saturating_sub(self.created_ms),
        }
    }

    /// Makes the `.log` durable. Indexes are not synced here: recovery rebuilds them for every
    /// segment past the recovery point, so only [`Segment::sync_indexes`] before a checkpoint
    /// needs them durable — which keeps a per-batch flush at one fdatasync.
    pub fn sync(&self) -> Result<(), LogError> {
        self.log.sync().map_err(io_err("fdatasync", &self.log_path))
    }

    /// The offset index's entries, shared with a cleaning step's job (`log::pass::step`).
    pub(super) fn index_shared(&self) -> Arc<Vec<OffsetEntry>> {
        self.idx.index.shared()
    }

    /// The `.log` file and its path, for a sync run outside the log (`log::deferred`).
    pub fn sync_handle(&self) -> (Arc<SegmentLog>, Arc<Path>) {
        (self.log.clone(), self.log_path.clone())
    }

    /// Makes both indexes durable if they changed since they were last synced.
    pub fn sync_indexes(&mut self) -> Result<(), LogError> {
        if self.idx.dirty {
            self.idx.index.sync().map_err(io_err("fdatasync", &self.log_path.with_extension("index")))?;
            self.idx.time_index.sync().map_err(io_err("fdatasync", &self.log_path.with_extension("timeindex")))?;
            self.idx.dirty = false;
        }
        Ok(())
    }

    /// Writes index entries still buffered in memory to their files, unsynced (a checkpoint's
    /// file-system sync follows; see `log::durability`).
    pub fn write_indexes(&mut self) -> Result<(), LogError> {
        self.idx.index.write_out().map_err(io_err("write", &self.log_path.with_extension("index")))?;
        self.idx.time_index.write_out().map_err(io_err("write", &self.log_path.with_extension("timeindex")))
    }

    /// Both indexes count as synced: a file-system sync after [`Segment::write_indexes`] made
    /// them durable, or (a roll's, `Log::roll`) their syncs are owed by path to the log's next
    /// job, which pays them before its report moves the recovery point.
    pub fn indexes_are_durable(&mut self) {
        self.idx.dirty = false;
    }

    /// Whether the indexes changed since they were last made durable.
    pub(super) fn indexes_dirty(&self) -> bool {
        self.idx.dirty
    }

    /// Both index files and their paths, for a job that syncs them off the owner's lock.
    pub(super) fn index_handles(&self) -> [(Arc<dyn DiskFile>, PathBuf); 2] {
        [(self.idx.index.handle(), self.log_path.with_extension("index")), (self.idx.time_index.handle(), self.log_path.with_extension("timeindex"))]
    }

    /// Appends whole batches back to back (offsets continuing this segment's, checked by the
    /// caller) in one write (or, with `behind`, staged as one), indexing each as
    /// [`Segment::append`] does.
    pub fn append_run(&mut self, bytes: &[u8], behind: bool) -> Result<(), LogError> {
        let headers = batch::whole_batches(bytes).map_err(|e| self.corrupt(self.size, e.to_string()))?;
        if behind {
            self.log.stage(self.size, bytes::Bytes::copy_from_slice(bytes));
        } else if let Err(source) = self.log.write_at(bytes, self.size) {
            let _ = self.log.truncate(self.size);
            return Err(LogError::Io { op: "append", path: self.log_path.to_path_buf(), source });
        }
        for h in headers {
            let position = self.size;
            if position == 0 {
                self.first_batch_timestamp = Some(h.max_timestamp);
            }
            self.size += h.size as u64;
            self.next_offset = h.next_offset();
            let _ = self.idx.index_batch(&h, position);
        }
        Ok(())
    }

    /// Removes the segment's three files.
    pub fn delete(self, disk: &dyn Disk, dir: &Path) -> Result<(), LogError> {
        let base = self.base_offset;
        drop(self);
        delete_files(disk, dir, base).map(|_| ())
    }

    /// The `.log` file, for a caller that outlives the segment (`retired`).
    pub(super) fn into_log(self) -> Arc<SegmentLog> {
        self.log
    }

    /// Raw bytes of the `.log` file (for cross-checks).
    pub fn read_raw(&self, buf: &mut [u8], pos: u64) -> std::io::Result<()> {
        read_exact_at(self.log.as_ref(), buf, pos)
    }

    pub fn size(&self) -> u64 {
        self.size
    }
    pub fn next_offset(&self) -> i64 {
        self.next_offset
    }
    pub fn max_timestamp(&self) -> i64 {
        self.idx.max_timestamp
    }
    pub fn is_empty(&self) -> bool {
        self.size == 0
    }
    pub fn index_entries(&self) -> &[OffsetEntry] {
        self.idx.index.entries()
    }
    pub fn time_entries(&self) -> &[TimeEntry] {
        self.idx.time_index.entries()
    }
    pub fn log_path(&self) -> &Path {
        &self.log_path
    }
}
