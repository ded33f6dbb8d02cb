//! A segment's lookups: whole batches by offset (through the offset index, each checked as it
//! is served), the first record at a timestamp (through the time index), and every batch
//! header in order (to rebuild derived state). Lookups never change the segment.
//!
//! The reads by offset go through a [`Reader`]: the segment's `.log` handle, size and offset
//! index, borrowed from the segment or from a cleaning step's view of it (`log::pass::step`), so
//! a step run off the owner's lock looks batches up exactly as the log does.

use super::super::{batch, compressed};
use super::super::segment_files::ChunkReader;
use super::super::index::OffsetEntry;
use super::super::region::SegmentLog;
use super::super::region::FileRegion;
use super::super::{io_err, BatchHeader, LogError};
use super::Segment;
use crate::constants::{batch_header_bytes, batch_log_overhead_bytes, header_read_batch_bytes_min, recovery_read_bytes};
use crate::storage::{read_exact_at, DiskFile};
use std::path::Path;

/// A segment's `.log` as the lookups by offset read it (see the module header).
#[derive(Clone, Copy)]
pub(in crate::log) struct Reader<'a> {
    pub(in crate::log) base_offset: i64,
    /// Bytes of whole batches in the `.log`.
    pub(in crate::log) size: u64,
    log: &'a SegmentLog,
    log_path: &'a Path,
    index: &'a [OffsetEntry],
}

impl Segment {
    /// The segment's lookups by offset (see [`Reader`]).
    pub(in crate::log) fn reader(&self) -> Reader<'_> {
        Reader { base_offset: self.base_offset, size: self.size, log: &self.log, log_path: &self.log_path, index: self.idx.index.entries() }
    }

    /// [`Reader::position_of`] of this segment.
    pub(in crate::log) fn position_of(&self, offset: i64) -> Result<Option<(u64, BatchHeader)>, LogError> {
        self.reader().position_of(offset)
    }

    /// [`Reader::header_at`] of this segment.
    pub(in crate::log) fn header_at(&self, pos: u64, expected: Option<i64>, limit: u64) -> Result<BatchHeader, LogError> {
        self.reader().header_at(pos, expected, limit)
    }

    /// The whole batches [`Reader::read_into`] would return, as a region of the file instead of
    /// bytes (zero-copy fetch), with whether any of them holds a record; only batch headers are
    /// read (no CRC check: the bytes go to the socket unread, as in Kafka). The sparse offset
    /// index skips ahead to the last entry before the bound, so a fetch reads a few headers
    /// whatever `max_bytes` is; entries are batch starts, so a batch before an entry at or
    /// below `upper` ends below `upper`.
    pub fn slice(&self, offset: i64, max_bytes: usize, upper: i64) -> Result<Option<(i64, FileRegion, bool)>, LogError> {
        let Some((start, first)) = self.position_of(offset)? else { return Ok(None) };
        if first.last_offset() >= upper {
            return Ok(None);
        }
        let limit = start.saturating_add(max_bytes as u64);
        let (mut end, mut expected) = (start + first.size as u64, first.next_offset());
        let mut holds_a_record = first.records_count > 0;
        // Skipped batches are not looked at: only once the answer is known to hold a record.
        if holds_a_record {
            let entries = self.idx.index.entries();
            let base_of = |e: &OffsetEntry| self.base_offset + e.relative_offset as i64;
            let below = entries.partition_point(|e| e.position as u64 <= limit && base_of(e) <= upper);
            if let Some(e) = below.checked_sub(1).map(|i| entries[i]).filter(|e| e.position as u64 > end) {
                (end, expected) = (e.position as u64, base_of(&e));
            }
        }
        while end < self.size {
            let h = self.header_at(end, Some(expected), self.size)?;
            if end + h.size as u64 > limit || h.last_offset() >= upper {
                break;
            }
            holds_a_record |= h.records_count > 0;
            expected = h.next_offset();
            end += h.size as u64;
        }
        Ok(Some((first.base_offset, FileRegion::new(self.log.clone(), start, end - start), holds_a_record)))
    }

    /// First offset whose record timestamp is `>= ts`, with that timestamp.
    pub fn find_timestamp(&self, ts: i64) -> Result<Option<(i64, i64)>, LogError> {
        if self.idx.max_timestamp < ts {
            return Ok(None);
        }
        let from = self
            .idx
            .time_index
            .floor(ts.saturating_sub(1))
            .map_or(self.base_offset, |e| self.base_offset + e.relative_offset as i64);
        let Some((mut pos, mut h)) = self.position_of(from)? else { return Ok(None) };
        loop {
            if h.max_timestamp >= ts {
                // A compacted batch may no longer hold the record that made its max timestamp:
                // the search goes on to the next batch.
                if let Some(found) = self.find_in_batch(pos, &h, ts)? {
                    return Ok(Some(found));
                }
            }
            pos += h.size as u64;
            if pos >= self.size {
                return Ok(None);
            }
            h = self.header_at(pos, Some(h.next_offset()), self.size)?;
        }
    }

    /// The first record of the batch at `pos` whose timestamp is `>= ts`, with that timestamp
    /// (None if none has it: a compacted batch), as Kafka's `FileRecords.searchForTimestamp`
    /// finds it: a compressed batch is decompressed to look at its records (within
    /// `batch_decompressed_bytes_max`, which every stored batch met when it was produced), and
    /// with LogAppendTime every record has the batch's max timestamp (Kafka's rule).
    fn find_in_batch(&self, pos: u64, h: &BatchHeader, ts: i64) -> Result<Option<(i64, i64)>, LogError> {
        let mut buf = vec![0u8; h.size];
        read_exact_at(self.log.as_ref(), &mut buf, pos).map_err(io_err("read", &self.log_path))?;
        batch::validate_stored(&buf).map_err(|e| self.corrupt(pos, e.to_string()))?;
        let body = &buf[batch_header_bytes..];
        let records = match h.compression() {
            0 => std::borrow::Cow::Borrowed(body),
            codec => std::borrow::Cow::Owned(compressed::decompress(codec, body).map_err(|e| self.corrupt(pos, e.to_string()))?),
        };
        let mut found = None;
        batch::walk_records(&records, h.records_count, |r| {
            let rts = if h.log_append_time() { h.max_timestamp } else { h.base_timestamp.saturating_add(r.timestamp_delta) };
            if found.is_none() && rts >= ts {
                found = Some((h.base_offset + r.offset_delta as i64, rts));
            }
        })
        .map_err(|e| self.corrupt(pos, e.to_string()))?;
        Ok(found)
    }

    /// Calls `f` with every batch header in order, checking lengths and offset continuity.
    pub fn for_each_header(&self, f: &mut dyn FnMut(&BatchHeader)) -> Result<(), LogError> {
        self.headers_from(0, self.base_offset, u64::MAX, f).map(|_| ())
    }

    /// Calls `f` with the headers of the batches from byte `pos` (where the batch at offset
    /// `expected` starts) until batches of `max_bytes` are passed or the segment ends; returns
    /// where it stopped, to go on from there. Small batches are read in large chunks (a
    /// header-by-header pread would cost a read per batch, which made start-up's
    /// producer-state rebuild crawl); after a batch of [`header_read_batch_bytes_min`] or more
    /// the next header is read alone, so a log of large batches is not copied whole to find
    /// its headers (its pages are still read ahead by the OS on a cold disk).
    pub fn headers_from(&self, pos: u64, expected: i64, max_bytes: u64, f: &mut dyn FnMut(&BatchHeader)) -> Result<(u64, i64), LogError> {
        walk_headers(self.log.as_ref(), &self.log_path, self.size, pos, expected, max_bytes, &mut |h, _| f(h))
    }
}

impl<'a> Reader<'a> {
    /// A segment's `.log` held apart from it: `size` bytes of whole batches from `base_offset`,
    /// and its offset index.
    pub(in crate::log) fn new(base_offset: i64, size: u64, log: &'a SegmentLog, log_path: &'a Path, index: &'a [OffsetEntry]) -> Reader<'a> {
        Reader { base_offset, size, log, log_path, index }
    }

    /// Whole batches from the one containing `offset`, while their last offset is below
    /// `upper` and they fit in `max_bytes` (the first batch is returned even if larger, as
    /// Kafka does, so a consumer can always make progress), read into `buf` from index `at`
    /// (grown as needed, never shrunk: the cleaner reuses one buffer for a whole pass instead
    /// of allocating and zeroing one per read). Each batch's CRC and offset continuity are
    /// checked — bad bytes are reported with their position, never served — except that
    /// batches whose base offset is in `trusted` skip the CRC (see [`super::super::Log::read_into`]).
    /// Returns the first batch's offset, the bytes of whole batches at `buf[at..]`, and whether
    /// they reach the segment's end (a read cut by `max_bytes` or `upper` does not: a read
    /// across segments goes on to the next one only after this one's last batch).
    pub fn read_into(&self, offset: i64, max_bytes: usize, upper: i64, trusted: std::ops::Range<i64>, buf: &mut Vec<u8>, at: usize) -> Result<Option<(i64, usize, bool)>, LogError> {
        let Some((start, first)) = self.position_of(offset)? else { return Ok(None) };
        if first.last_offset() >= upper {
            return Ok(None);
        }
        // One read of everything that may be returned, then the batches walked in memory: a
        // pread per batch header would cost a syscall per batch (hundreds per MiB).
        let want = (first.size as u64).max((max_bytes as u64).min(self.size - start)) as usize;
        if buf.len() < at + want {
            buf.resize(at + want, 0);
        }
        let buf = &mut buf[at..at + want];
        read_exact_at(self.log, buf, start).map_err(io_err("read", self.log_path))?;
        let len = self.whole_batches(start, &first, buf, upper, &trusted)?;
        Ok(Some((first.base_offset, len, start + len as u64 >= self.size)))
    }

    /// The batches from the one containing `offset`, while their last offset is below `upper`
    /// and until `max_bytes` of them are passed (at least one), each read whole into `buf`
    /// (appended) unless `header_only` says its header is all the caller needs: then only the
    /// header is read. Lengths and offset continuity are checked, and the CRC of each batch read
    /// whole outside `trusted` (the cleaner's rewrite passes the range its map walk has just
    /// checked; see [`super::super::Log::read_into`]). None if no batch here holds `offset`.
    #[allow(clippy::type_complexity)]
    pub fn read_sparse(&self, offset: i64, max_bytes: usize, upper: i64, trusted: std::ops::Range<i64>, buf: &mut Vec<u8>, header_only: &mut dyn FnMut(&BatchHeader) -> bool) -> Result<Option<Vec<(BatchHeader, Option<std::ops::Range<usize>>)>>, LogError> {
        let Some((mut pos, mut h)) = self.position_of(offset)? else { return Ok(None) };
        let (mut out, mut passed) = (Vec::new(), 0usize);
        while h.last_offset() < upper {
            if header_only(&h) {
                out.push((h, None));
            } else {
                let at = buf.len();
                buf.resize(at + h.size, 0);
                read_exact_at(self.log, &mut buf[at..], pos).map_err(io_err("read", self.log_path))?;
                if batch::read_header(&buf[at..]).ok() != Some(h) {
                    return Err(self.corrupt(pos, "batch changed between two reads".into()));
                }
                if !trusted.contains(&h.base_offset) {
                    batch::check_stored(&buf[at..]).map_err(|e| self.corrupt(pos, e.to_string()))?;
                }
                out.push((h, Some(at..at + h.size)));
            }
            (pos, passed) = (pos + h.size as u64, passed + h.size);
            if passed >= max_bytes || pos >= self.size {
                break;
            }
            h = self.header_at(pos, Some(h.next_offset()), self.size)?;
        }
        Ok(Some(out))
    }

    /// The length of the whole batches at the front of `buf` (read from `start`, where the
    /// batch `first` begins), each checked as [`Reader::read_into`] says.
    fn whole_batches(&self, start: u64, first: &BatchHeader, buf: &[u8], upper: i64, trusted: &std::ops::Range<i64>) -> Result<usize, LogError> {
        let (mut at, mut expected) = (0usize, first.base_offset);
        while buf.len() - at >= batch_log_overhead_bytes {
            let Some(size) = batch::declared_size(&buf[at..]) else {
                return Err(self.corrupt(start + at as u64, "batch length is not plausible".into()));
            };
            if at + size > buf.len() {
                if at == 0 {
                    return Err(self.corrupt(start, format!("batch of {size} bytes runs past the segment")));
                }
                break; // the next batch does not fit max_bytes (or the read): stop before it
            }
            let h = batch::read_header(&buf[at..at + size]).map_err(|e| self.corrupt(start + at as u64, e.to_string()))?;
            if h.base_offset != expected {
                return Err(self.corrupt(start + at as u64, format!("batch base offset {} where {expected} was expected", h.base_offset)));
            }
            if at > 0 && h.last_offset() >= upper {
                break;
            }
            if !trusted.contains(&h.base_offset) {
                batch::check_stored(&buf[at..at + size]).map_err(|e| self.corrupt(start + at as u64, e.to_string()))?;
            }
            expected = h.next_offset();
            at += size;
        }
        Ok(at)
    }


    /// The header of the batch at `pos`, checked against the segment: a plausible length that
    /// fits before `limit`, non-negative offset delta without overflow, and (when given) the
    /// base offset the walk expects. Anything else is [`LogError::Corrupt`].
    pub(in crate::log) fn header_at(&self, pos: u64, expected: Option<i64>, limit: u64) -> Result<BatchHeader, LogError> {
        let mut header = [0u8; batch_header_bytes];
        if pos + batch_header_bytes as u64 > limit {
            return Err(self.corrupt(pos, "batch header runs past the end of the segment".into()));
        }
        read_exact_at(self.log, &mut header, pos).map_err(io_err("read", self.log_path))?;
        let h = batch::read_header(&header).map_err(|e| self.corrupt(pos, e.to_string()))?;
        let len_ok = batch::declared_size(&header).is_some_and(|s| pos + s as u64 <= limit);
        if !len_ok {
            return Err(self.corrupt(pos, format!("batch length {} does not fit the segment", h.size)));
        }
        if h.last_offset_delta < 0 || h.base_offset.checked_add(h.last_offset_delta as i64 + 1).is_none() {
            return Err(self.corrupt(pos, format!("batch offset delta {} is impossible", h.last_offset_delta)));
        }
        if let Some(e) = expected.filter(|&e| e != h.base_offset) {
            return Err(self.corrupt(pos, format!("batch base offset {} where {e} was expected", h.base_offset)));
        }
        Ok(h)
    }

    /// Byte position of the batch containing `offset` (or the first batch after it), scanning
    /// headers forward from the nearest index entry and checking that offsets run densely.
    /// `None` if no batch ends at or after it.
    pub(in crate::log) fn position_of(&self, offset: i64) -> Result<Option<(u64, BatchHeader)>, LogError> {
        let rel = (offset.saturating_sub(self.base_offset)).clamp(0, u32::MAX as i64);
        let floor = self.index.partition_point(|e| e.relative_offset as i64 <= rel).checked_sub(1).map(|i| self.index[i]);
        let (mut pos, mut expected) = floor.map_or((0, self.base_offset), |e| (e.position as u64, self.base_offset + e.relative_offset as i64));
        while pos < self.size {
            let h = self.header_at(pos, Some(expected), self.size)?;
            if h.last_offset() >= offset {
                return Ok(Some((pos, h)));
            }
            expected = h.next_offset();
            pos += h.size as u64;
        }
        Ok(None)
    }

    fn corrupt(&self, position: u64, reason: String) -> LogError {
        LogError::Corrupt { file: self.log_path.to_path_buf(), position, reason }
    }
}

/// [`Segment::headers_from`] over a segment's `.log` held apart from it (`size` bytes of whole
/// batches), for readers that run without the log (a truncation's producer-state replay,
/// `log::batches`): `f` is also told where each batch starts.
pub(in crate::log) fn walk_headers(file: &dyn DiskFile, path: &Path, size: u64, mut pos: u64, mut expected: i64, max_bytes: u64, f: &mut dyn FnMut(&BatchHeader, u64)) -> Result<(u64, i64), LogError> {
    let corrupt = |position: u64, reason: String| LogError::Corrupt { file: path.to_path_buf(), position, reason };
    let mut reader = ChunkReader::new(file, path, size);
    let stop = pos.saturating_add(max_bytes);
    // The first header alone: the batch it heads says which reads suit the rest.
    let mut chunk = batch_header_bytes;
    while pos < size && pos < stop {
        if size - pos < batch_header_bytes as u64 {
            return Err(corrupt(pos, "batch header runs past the end of the segment".into()));
        }
        let h = batch::read_header(reader.get_reading(pos, batch_header_bytes, chunk)?).map_err(|e| corrupt(pos, e.to_string()))?;
        chunk = if h.size as u64 >= header_read_batch_bytes_min { batch_header_bytes } else { recovery_read_bytes };
        if h.size < batch_header_bytes || pos + h.size as u64 > size {
            return Err(corrupt(pos, format!("batch length {} does not fit the segment", h.size)));
        }
        if h.last_offset_delta < 0 || h.base_offset.checked_add(h.last_offset_delta as i64 + 1).is_none() || h.base_offset != expected {
            return Err(corrupt(pos, format!("batch at offset {} where {expected} was expected", h.base_offset)));
        }
        f(&h, pos);
        expected = h.next_offset();
        pos += h.size as u64;
    }
    Ok((pos, expected))
}
