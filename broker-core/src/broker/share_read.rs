//! What a share-partition leader (`share::leader`) reads of a partition this node leads: its
//! leader epoch and bounds, and whole batches below the high watermark (records in memory:
//! the share-partition acquires by the offsets the batch headers name). For a share group
//! reading committed records (`share.isolation.level=read_committed`) the read stops at the last
//! stable offset and leaves out aborted transactions' batches (by the aborted-transaction index,
//! as a read_committed Fetch lists them) and transaction markers.
//!
//! The read is split as a Fetch's is (issue 32: no decision waits on the disk): under the
//! node's gate a [`ShareSlice`] bounds it by batch headers only (`Log::slice`); off the gate a
//! [`ShareReadJob`] reads those regions into memory; the decision then takes what was read
//! ([`ShareReads::take`]) if it still fits: the same topic, partition, leader epoch and
//! isolation level, read from at or below its fetch point. As a Fetch's zero-copy read, the
//! batches are bounded by their headers, not CRC-checked (the client checks).

use super::{Broker, Error};
use crate::log::Records;
use bytes::Bytes;
use std::collections::BTreeMap;

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

    /// What a read of whole batches from the one holding `offset` will cover, below the high
    /// watermark (`read_committed`: the last stable offset, without aborted transactions'
    /// batches and markers), within `max_bytes` (at least one batch): file regions bounded by
    /// batch headers, read off the gate ([`ShareSlice::read`]). None: nothing to read.
    pub fn share_slice(&mut self, name: &str, p: i32, offset: i64, max_bytes: usize, read_committed: bool) -> Result<Option<ShareSlice>, Error> {
        let part = self.led(name, p, -1)?;
        let upper = if read_committed { part.last_stable_offset().min(part.high_watermark()) } else { part.high_watermark() };
        if offset >= upper {
            return Ok(None);
        }
        let from = offset.max(part.log_start_offset());
        let records = part.log.slice(from, max_bytes.max(1), upper)?;
        let aborted = read_committed.then(|| part.log.aborted_overlapping(from, upper).iter().map(|t| (t.producer_id, t.first_offset, t.last_offset)).collect());
        let leader_epoch = part.replication.leader_epoch;
        let topic_id = self.image().topics.get(name).map_or([0; 16], |t| t.id);
        self.stats.fetched(name, records.len());
        Ok(Some(ShareSlice { at: ReadAt { topic: name.to_string(), topic_id, partition: p, leader_epoch, read_committed }, offset, records, aborted }))
    }
}

/// What a share read is of: a partition of one topic (by id too: a topic deleted and created
/// again under its name is another), under one leadership, at one isolation level.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ReadAt {
    pub topic: String,
    pub topic_id: [u8; 16],
    pub partition: i32,
    pub leader_epoch: i32,
    pub read_committed: bool,
}

/// One partition's share read, bounded under the gate ([`Broker::share_slice`]): what it is
/// of, the offset it was asked from, the regions, and the aborted transactions a committed
/// read leaves out (None: an uncommitted read).
#[derive(Debug)]
pub struct ShareSlice {
    at: ReadAt,
    offset: i64,
    records: Records,
    aborted: Option<Vec<(i64, i64, i64)>>,
}

impl ShareSlice {
    /// The bytes it reads.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// The regions read into memory, off the gate: what a read of them hands out. Err: the
    /// segment was cut or its file failed meanwhile (the decision finds no read and answers
    /// without this partition's records).
    fn read(&self) -> Result<ShareRead, crate::log::RegionError> {
        let bytes = self.records.to_bytes()?;
        Ok(match &self.aborted {
            Some(aborted) => committed(&bytes, aborted),
            None => ShareRead { spans: batch_spans(&bytes), bytes, skip_to: None },
        })
    }
}

/// A ShareFetch's reads for the shell to make off the gate, one partition after another.
#[derive(Debug, Default)]
pub struct ShareReadJob {
    pub slices: Vec<ShareSlice>,
}

impl ShareReadJob {
    pub fn is_empty(&self) -> bool {
        self.slices.is_empty()
    }

    /// The bytes it reads.
    pub fn len(&self) -> usize {
        self.slices.iter().map(ShareSlice::len).sum()
    }

    /// Reads every slice (one that fails is left out: its partition answers no records).
    /// `again`: made for a decision that found its reads did not fit (it asks no more).
    pub fn run(self, again: bool) -> ShareReads {
        let read = self.slices.iter().filter_map(|s| Some(((s.at.topic.clone(), s.at.partition), (s.at.clone(), s.offset, s.read().ok()?)))).collect();
        ShareReads { read, again }
    }
}

/// What a ShareFetch's job read, for its decision: by partition, what it was read as and the
/// offset it was read from.
#[derive(Debug, Default)]
pub struct ShareReads {
    read: BTreeMap<(String, i32), (ReadAt, i64, ShareRead)>,
    /// Read after a decision whose reads did not fit: a miss now is answered, not read again.
    pub again: bool,
}

impl ShareReads {
    /// The read of `at` from its batch holding `offset` on, if one was made as that, from
    /// `offset` or below (another member's acquisition may have moved the fetch point up
    /// meanwhile), and holds a batch at or past `offset`; without what it holds at or past
    /// `upper` (reads stop below it, which never moves back within a leadership).
    pub fn take(&mut self, at: &ReadAt, offset: i64, upper: i64) -> Option<ShareRead> {
        let (made, from, read) = self.read.remove(&(at.topic.clone(), at.partition))?;
        if made != *at || from > offset {
            return None;
        }
        let behind = read.spans.iter().take_while(|(_, last)| *last < offset).count();
        let below = read.spans.iter().take_while(|(_, last)| *last < upper).count().max(behind);
        // Where a committed read ends past what it left out: still news only past `offset`.
        let skip_to = read.skip_to.filter(|to| below == read.spans.len() && *to <= upper && *to > offset);
        if behind == below && skip_to.is_none() {
            return None;
        }
        let (start, end) = (batches_len(&read.bytes, behind), batches_len(&read.bytes, below));
        Some(ShareRead { bytes: read.bytes.slice(start..end), spans: read.spans[behind..below].to_vec(), skip_to })
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
    bytes.slice(..batches_len(bytes, n))
}

/// How many bytes the first `n` whole batches of `bytes` take.
fn batches_len(bytes: &[u8], n: usize) -> usize {
    let mut at = 0usize;
    for _ in 0..n {
        let Some((_, end)) = batch_at(bytes, at) else { break };
        at = end;
    }
    at
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

    /// A one-node broker whose topic `t` holds three batches of two records (offsets 0–5).
    fn three_batches(dir: &std::path::Path) -> crate::node::Node {
        let node = crate::testing::one_node(crate::testing::config(dir));
        crate::testing::create(&node, "t", 1, Default::default()).unwrap();
        for i in 0..3u8 {
            let mut b = node.broker();
            let mut out = Vec::new();
            b.produce("t", 0, &batch::build(&[&[i][..], &[i][..]], 1), 1, 10, &mut out).unwrap();
            crate::testing::run_syncs(&mut b, out, 10);
        }
        assert_eq!(node.broker().share_bounds("t", 0).unwrap().high_watermark, 6);
        node
    }

    #[test]
    fn a_share_read_is_bounded_under_the_gate_read_off_it_and_taken_only_where_it_still_fits() {
        let tmp = tempfile::tempdir().unwrap();
        let node = three_batches(tmp.path());
        let epoch = node.broker().share_bounds("t", 0).unwrap().leader_epoch;
        let topic_id = node.broker().image().topics["t"].id;
        let at = ReadAt { topic: "t".into(), topic_id, partition: 0, leader_epoch: epoch, read_committed: false };
        let slice = |offset: i64| node.broker().share_slice("t", 0, offset, 1 << 20, false).unwrap();
        assert!(slice(6).is_none(), "nothing at the high watermark");
        let job = ShareReadJob { slices: vec![slice(2).unwrap()] };
        assert_eq!(job.len(), 2 * batch::build(&[&[0][..], &[0][..]], 1).len(), "the two batches from offset 2, bounded by their headers");

        // Read off the gate: taken by a decision fetching from the same point.
        let mut reads = job.run(false);
        let read = reads.take(&at, 2, 6).expect("the read fits");
        assert_eq!(read.spans, vec![(2, 3), (4, 5)]);
        assert_eq!(batch_spans(&read.bytes), read.spans);
        assert!(reads.take(&at, 2, 6).is_none(), "taken once");

        let job = || ShareReadJob { slices: vec![slice(2).unwrap()] };
        // Another member acquired the first batch meanwhile: the rest of the read serves.
        let up = job().run(false).take(&at, 4, 6).expect("a read from below the fetch point");
        assert_eq!((up.spans.clone(), batch_spans(&up.bytes)), (vec![(4, 5)], vec![(4, 5)]));
        assert!(job().run(false).take(&at, 6, 6).is_none(), "nothing read at or past the fetch point");
        // Records given back below the read: not this read.
        assert!(job().run(false).take(&at, 0, 6).is_none(), "acknowledgements moved the fetch point down");
        // Another leadership, topic, isolation level: not this read.
        for other in [ReadAt { leader_epoch: epoch + 1, ..at.clone() }, ReadAt { topic_id: [7; 16], ..at.clone() }, ReadAt { read_committed: true, ..at.clone() }] {
            assert!(job().run(false).take(&other, 2, 6).is_none(), "{other:?}");
        }
        assert!(job().run(false).take(&ReadAt { topic: "u".into(), ..at.clone() }, 2, 6).is_none());
        // What lies at or past the upper bound now is left out.
        let cut = job().run(false).take(&at, 2, 4).unwrap();
        assert_eq!((cut.spans, batch_spans(&cut.bytes)), (vec![(2, 3)], vec![(2, 3)]));
    }

    #[test]
    fn a_committed_read_of_only_aborted_records_still_moves_past_them() {
        // 0-1 producer 7, aborted by the marker at 2.
        let bytes = Bytes::from([records(0, 2, Some(7)), marker(2, 7, MarkerKind::Abort)].concat());
        let at = ReadAt { topic: "t".into(), topic_id: [1; 16], partition: 0, leader_epoch: 3, read_committed: true };
        let mut reads = ShareReads { read: [(("t".to_string(), 0), (at.clone(), 0, committed(&bytes, &[(7, 0, 2)])))].into(), again: false };
        let read = reads.take(&at, 0, 3).expect("what it skips is news");
        assert_eq!((read.spans, read.skip_to, read.bytes.len()), (vec![], Some(3), 0));
        let mut reads = ShareReads { read: [(("t".to_string(), 0), (at.clone(), 0, committed(&bytes, &[(7, 0, 2)])))].into(), again: false };
        assert!(reads.take(&at, 3, 3).is_none(), "nothing past the fetch point");
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
