//! Reading the log: whole batches by offset (fetches, the cleaner, tools), by timestamp
//! (ListOffsets), and the index cross-check tests use. Reads never change the log.

use super::batch::{self, BatchError, BatchHeader};
use super::segment::{Reader, Segment};
use super::region::{FileRegion, Records};
use super::{Log, LogError, ReadResult};
use bytes::Bytes;

impl Log {
    /// Reads whole batches from the one containing `offset`, stopping before any batch that
    /// reaches `upper` (pass the high watermark, or `log_end_offset()`), within `max_bytes`
    /// (at least one batch). Empty bytes when `offset` is at `upper` or the log end.
    pub fn read(&self, offset: i64, max_bytes: usize, upper: i64) -> Result<ReadResult, LogError> {
        let mut buf = Vec::new();
        let (first_batch_offset, len) = self.read_into(offset, max_bytes, upper, 0..0, &mut buf)?;
        buf.truncate(len);
        Ok(ReadResult { first_batch_offset, bytes: Bytes::from(buf) })
    }

    /// [`Log::read`] into `buf` (grown as needed, never shrunk, so a caller reading a lot
    /// reuses one buffer): returns the first batch's offset and the length of the whole
    /// batches at the front of `buf`. Batches whose base offset is in `trusted` are not
    /// CRC-checked (their lengths and offsets still are): only the cleaner's rewrite passes a
    /// range, the one its map walk has just read and checked in the same closed segments,
    /// which nothing changes while the pass runs (appends add segments after them; whatever
    /// rewrites or removes one aborts the pass first). A second check would find what the
    /// first found.
    pub(super) fn read_into(&self, offset: i64, max_bytes: usize, upper: i64, trusted: std::ops::Range<i64>, buf: &mut Vec<u8>) -> Result<(i64, usize), LogError> {
        let (start, end) = (self.log_start_offset(), self.log_end_offset());
        if offset < start || offset > end {
            return Err(LogError::OffsetOutOfRange { requested: offset, start, end });
        }
        let first = self.segments.partition_point(|s| s.base_offset <= offset).saturating_sub(1);
        read_across(self.segments[first..].iter().map(Segment::reader), offset, max_bytes, upper, trusted, buf)
    }

    /// [`Log::read`] as regions of the segment files (zero-copy fetch, see `log::region`): the
    /// same batches, bounded by their headers instead of read, so they are not CRC-checked
    /// here (Kafka does not check on fetch either; the client does, and a follower on append).
    pub fn slice(&self, offset: i64, max_bytes: usize, upper: i64) -> Result<Records, LogError> {
        let (start, end) = (self.log_start_offset(), self.log_end_offset());
        if offset < start || offset > end {
            return Err(LogError::OffsetOutOfRange { requested: offset, start, end });
        }
        let first = self.segments.partition_point(|s| s.base_offset <= offset).saturating_sub(1);
        let (mut regions, mut total, mut holds_a_record) = (Vec::<FileRegion>::new(), 0usize, false);
        for seg in &self.segments[first..] {
            if seg.base_offset >= upper {
                break;
            }
            let from = if regions.is_empty() { offset } else { seg.base_offset };
            let Some((_, region, holds)) = seg.slice(from, max_bytes.saturating_sub(total), upper)? else { continue };
            // Only while nothing fit: the next segment's first batch must fit what is left.
            if !regions.is_empty() && total + region.len as usize > max_bytes {
                break;
            }
            let ended = region.position + region.len >= seg.size();
            total += region.len as usize;
            holds_a_record |= holds;
            regions.push(region);
            // As in Log::read: on past segments of empty compacted batches only, each read to
            // its end (never past a batch this one left out).
            if holds_a_record || total >= max_bytes || !ended {
                break;
            }
        }
        Ok(Records::File(regions))
    }

    /// Calls `f` with every whole batch (header and bytes, shared with the read, not copied)
    /// from the one holding `from` to the log end, reading `chunk_bytes` at a time, and stops
    /// at the first error, the log's or `f`'s: the one way to read a whole log (tools, the
    /// simulator's final reads, crash checks). Each read is checked as [`Log::read`] checks it.
    pub fn for_each_batch<E: From<LogError>>(&self, from: i64, chunk_bytes: usize, mut f: impl FnMut(&BatchHeader, Bytes) -> Result<(), E>) -> Result<(), E> {
        let mut at = from.max(self.log_start_offset());
        let end = self.log_end_offset();
        while at < end {
            let batches = split_batches(&self.read(at, chunk_bytes, end)?.bytes)?;
            if batches.is_empty() {
                break;
            }
            for (h, bytes) in batches {
                at = h.next_offset();
                f(&h, bytes)?;
            }
        }
        Ok(())
    }

    /// Calls `f` with the header of every batch, oldest first (to rebuild producer state).
    pub fn for_each_header(&self, mut f: impl FnMut(&BatchHeader)) -> Result<(), LogError> {
        for seg in &self.segments {
            seg.for_each_header(&mut f)?;
        }
        Ok(())
    }

    /// Kafka ListOffsets by timestamp: the first offset whose record timestamp is `>= ts`.
    pub fn offset_for_timestamp(&self, ts: i64) -> Result<Option<(i64, i64)>, LogError> {
        for seg in &self.segments {
            if seg.max_timestamp() >= ts {
                if let Some(found) = seg.find_timestamp(ts)? {
                    return Ok(Some(found));
                }
            }
        }
        Ok(None)
    }

    /// KIP-734's ListOffsets -3: the first record holding the log's largest timestamp, with
    /// that timestamp, looked up in the first segment whose largest it is (as Kafka looks it
    /// up, a compressed batch's records included: `Segment::find_timestamp`). None for a log
    /// without timestamps, or when compaction removed that record.
    pub fn offset_of_max_timestamp(&self) -> Result<Option<(i64, i64)>, LogError> {
        let mut largest: Option<&Segment> = None;
        for seg in &self.segments {
            if largest.is_none_or(|l| seg.max_timestamp() > l.max_timestamp()) {
                largest = Some(seg);
            }
        }
        match largest {
            Some(seg) if seg.max_timestamp() >= 0 => seg.find_timestamp(seg.max_timestamp()),
            _ => Ok(None),
        }
    }

    /// Cross-checks every segment's indexes against its log (for tests and `debug` checks):
    /// each offset entry points at a batch with that base offset, time entries are covered.
    pub fn verify_indexes(&self) -> Result<(), String> {
        for seg in &self.segments {
            for e in seg.index_entries() {
                let mut prefix = [0u8; 8];
                read_exact_at_log(seg, &mut prefix, e.position as u64)?;
                let at = i64::from_be_bytes(prefix);
                if at != seg.base_offset + e.relative_offset as i64 {
                    return Err(format!("{}: index entry {e:?} points at batch {at}", seg.log_path().display()));
                }
            }
            for t in seg.time_entries() {
                if seg.base_offset + t.relative_offset as i64 >= seg.next_offset() || t.timestamp > seg.max_timestamp() {
                    return Err(format!("{}: time entry {t:?} beyond the segment", seg.log_path().display()));
                }
            }
        }
        Ok(())
    }
}

/// [`Log::read_into`] over `segments`, from the one holding `offset` on: the log's own, or a
/// cleaning job's view of them (`log::pass::job`).
pub(super) fn read_across<'a>(segments: impl Iterator<Item = Reader<'a>>, offset: i64, max_bytes: usize, upper: i64, trusted: std::ops::Range<i64>, buf: &mut Vec<u8>) -> Result<(i64, usize), LogError> {
    let (mut found, mut len) = (None, 0usize);
    for seg in segments {
        if seg.base_offset >= upper {
            break;
        }
        let from = if found.is_none() { offset } else { seg.base_offset };
        let Some((at, n, ended)) = seg.read_into(from, max_bytes - len, upper, trusted.clone(), buf, len)? else { continue };
        match found {
            None => (found, len) = (Some(at), n),
            // Only while nothing fit: the next segment's first batch must fit what is left.
            Some(_) if len + n <= max_bytes => len += n,
            Some(_) => break,
        }
        // One segment's batches make an answer, as in Kafka, unless every one of them is an
        // empty compacted batch: an answer with no record in it reads to librdkafka as a
        // record too large to fetch, so the read goes on to the next segment's. Only from
        // this one's end: a read cut short by `max_bytes` left batches out here, and reading
        // on from the next segment's base would skip them (the answer is read as contiguous).
        if holds_a_record(&buf[..len]) || len >= max_bytes || !ended {
            break;
        }
    }
    Ok((found.unwrap_or(offset), len))
}

/// Whole batches back to back, each with its header (the bytes shared, not copied).
pub(super) fn split_batches(bytes: &Bytes) -> Result<Vec<(BatchHeader, Bytes)>, LogError> {
    Ok(batch_ranges(bytes)?.into_iter().map(|(h, at)| (h, bytes.slice(at))).collect())
}

/// Whole batches back to back: each one's header and where it lies in `bytes`.
pub(super) fn batch_ranges(bytes: &[u8]) -> Result<Vec<(BatchHeader, std::ops::Range<usize>)>, LogError> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let h = batch::read_header(&bytes[pos..])?;
        if pos + h.size > bytes.len() {
            return Err(BatchError::TooShort(bytes.len() - pos).into());
        }
        out.push((h, pos..pos + h.size));
        pos += h.size;
    }
    Ok(out)
}

/// Whether whole batches back to back hold at least one record (compacted ones may hold none).
fn holds_a_record(bytes: &[u8]) -> bool {
    let mut at = 0;
    while let Ok(h) = batch::read_header(&bytes[at..]) {
        if h.records_count > 0 {
            return true;
        }
        at += h.size.max(1);
        if at >= bytes.len() {
            break;
        }
    }
    false
}

fn read_exact_at_log(seg: &Segment, buf: &mut [u8], pos: u64) -> Result<(), String> {
    seg.read_raw(buf, pos).map_err(|e| format!("{}: {e}", seg.log_path().display()))
}
