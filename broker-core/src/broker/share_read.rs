//! What a share-partition leader (`share::leader`) reads of a partition this node leads: its
//! leader epoch and bounds, and whole batches below the high watermark (records in memory:
//! the share-partition acquires by the offsets the batch headers name). For a share group
//! reading committed records (`share.isolation.level=read_committed`) the read stops at the last
//! stable offset and leaves out aborted transactions' batches (by the aborted-transaction index,
//! as a read_committed Fetch lists them) and transaction markers. Reads only.

use super::{Broker, Error};
use bytes::Bytes;

/// A led partition's leader epoch, log start, high watermark and last stable offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareBounds {
    pub leader_epoch: i32,
    pub log_start: i64,
    pub high_watermark: i64,
    pub last_stable_offset: i64,
}

impl ShareBounds {
    /// Where reads stop: the high watermark, or the last stable offset for committed reads.
    pub fn upper(&self, read_committed: bool) -> i64 {
        if read_committed { self.last_stable_offset.min(self.high_watermark) } else { self.high_watermark }
    }
}

/// What a share read found: whole batches, each batch's (base, last) offsets, and, where the
/// read left batches out at its end (a committed read's aborted records and markers), the
/// offset after them (nothing before it is to be delivered).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShareRead {
    pub bytes: Bytes,
    pub spans: Vec<(i64, i64)>,
    pub skip_to: Option<i64>,
}

impl Broker {
    /// The bounds of a partition led here (its errors a client should get otherwise).
    pub fn share_bounds(&self, name: &str, p: i32) -> Result<ShareBounds, Error> {
        let part = self.led(name, p, -1)?;
        Ok(ShareBounds { leader_epoch: part.replication.leader_epoch, log_start: part.log_start_offset(), high_watermark: part.high_watermark(), last_stable_offset: part.last_stable_offset() })
    }

    /// Whole batches from the one holding `offset`, below the high watermark (`read_committed`:
    /// the last stable offset, without aborted transactions' batches and markers), within
    /// `max_bytes` (at least one batch), each with its base and last offsets.
    pub fn share_read(&mut self, name: &str, p: i32, offset: i64, max_bytes: usize, read_committed: bool) -> Result<ShareRead, Error> {
        let part = self.led(name, p, -1)?;
        let upper = if read_committed { part.last_stable_offset().min(part.high_watermark()) } else { part.high_watermark() };
        if offset >= upper {
            return Ok(ShareRead::default());
        }
        let from = offset.max(part.log_start_offset());
        let bytes = part.log.read(from, max_bytes.max(1), upper)?.bytes;
        let aborted: Vec<(i64, i64, i64)> = match read_committed {
            true => part.log.aborted_overlapping(from, upper).iter().map(|t| (t.producer_id, t.first_offset, t.last_offset)).collect(),
            false => Vec::new(),
        };
        self.stats.fetched(name, bytes.len());
        match read_committed {
            true => Ok(committed(&bytes, &aborted)),
            false => Ok(ShareRead { spans: batch_spans(&bytes), bytes, skip_to: None }),
        }
    }
}

/// The batches of `bytes` a committed read hands out: neither a transaction marker (a control
/// batch) nor a transactional batch of an aborted transaction (`aborted`: producer id, first
/// offset, marker offset, as the index holds them), with where the read ends if it ends with
/// batches left out.
pub fn committed(bytes: &Bytes, aborted: &[(i64, i64, i64)]) -> ShareRead {
    let mut out = bytes::BytesMut::new();
    let (mut spans, mut skip_to) = (Vec::new(), None);
    let mut at = 0usize;
    while let Some((h, end)) = batch_at(bytes, at) {
        let base = h.base_offset;
        let aborted = h.is_transactional() && aborted.iter().any(|&(pid, first, marker)| pid == h.producer_id && first <= base && base <= marker);
        if h.is_control() || aborted {
            skip_to = Some(h.last_offset() + 1);
        } else {
            out.extend_from_slice(&bytes[at..end]);
            spans.push((base, h.last_offset()));
            skip_to = None;
        }
        at = end;
    }
    ShareRead { bytes: out.freeze(), spans, skip_to }
}

/// The header of the whole batch at `at` of `bytes`, and where it ends; None past the last
/// whole batch.
fn batch_at(bytes: &[u8], at: usize) -> Option<(crate::log::batch::BatchHeader, usize)> {
    let h = crate::log::batch::read_header(bytes.get(at..)?).ok()?;
    let end = at + h.size;
    (h.size > crate::constants::batch_log_overhead_bytes && end <= bytes.len()).then_some((h, end))
}

/// The (base offset, last offset) of each whole batch in `bytes`, in order.
pub fn batch_spans(bytes: &[u8]) -> Vec<(i64, i64)> {
    let mut spans = Vec::new();
    let mut at = 0usize;
    while let Some((h, end)) = batch_at(bytes, at) {
        spans.push((h.base_offset, h.last_offset()));
        at = end;
    }
    spans
}

/// The first `n` batches of `bytes` (the acquired ones; the rest are not sent).
pub fn first_batches(bytes: &Bytes, n: usize) -> Bytes {
    let mut at = 0usize;
    for _ in 0..n {
        let len = i32::from_be_bytes(bytes[at + 8..at + 12].try_into().expect("4 bytes"));
        at += crate::constants::batch_log_overhead_bytes + len as usize;
    }
    bytes.slice(..at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::batch::{self, control::{build_marker, MarkerKind}};

    /// A batch of `n` records at `base`, of transactional producer `producer` when given.
    fn records(base: i64, n: usize, producer: Option<i64>) -> Vec<u8> {
        let kvs: Vec<batch::KeyValue> = (0..n).map(|_| (None, Some(&b"v"[..]))).collect();
        let mut b = batch::build_keyed(&kvs, 0);
        if let Some(pid) = producer {
            batch::set_producer(&mut b, pid, 0, 0);
            batch::set_transactional(&mut b);
        }
        batch::stamp(&mut b, base, 0);
        b
    }

    fn marker(base: i64, producer: i64, kind: MarkerKind) -> Vec<u8> {
        let mut b = build_marker(producer, 0, kind, 0, 0);
        batch::stamp(&mut b, base, 0);
        b
    }

    #[test]
    fn a_committed_read_leaves_out_aborted_batches_and_markers() {
        // 0-1 plain; 2-3 producer 7 (aborted at 6); 4-5 producer 8 (committed at 7); 6, 7 markers; 8 plain.
        let log = [records(0, 2, None), records(2, 2, Some(7)), records(4, 2, Some(8)), marker(6, 7, MarkerKind::Abort), marker(7, 8, MarkerKind::Commit), records(8, 1, None)].concat();
        let bytes = Bytes::from(log);
        assert_eq!(batch_spans(&bytes), vec![(0, 1), (2, 3), (4, 5), (6, 6), (7, 7), (8, 8)]);
        let read = committed(&bytes, &[(7, 2, 6)]);
        assert_eq!(read.spans, vec![(0, 1), (4, 5), (8, 8)]);
        assert_eq!(batch_spans(&read.bytes), read.spans, "the bytes hold exactly the batches named");
        assert_eq!(read.skip_to, None, "the read ends with a batch handed out");
        // Ending with what is left out: where it ends.
        let tail = Bytes::from([records(0, 2, None), records(2, 2, Some(7)), marker(4, 7, MarkerKind::Abort)].concat());
        let read = committed(&tail, &[(7, 2, 4)]);
        assert_eq!((read.spans, read.skip_to), (vec![(0, 1)], Some(5)));
        // Another producer's transactional batch in the aborted range is not aborted.
        let other = Bytes::from(records(3, 1, Some(9)));
        assert_eq!(committed(&other, &[(7, 2, 6)]).spans, vec![(3, 3)]);
    }
}
