//! Idempotent-producer state of one partition: for each producer id, its epoch and the last
//! five batches it appended, so a retried batch is answered with its original offsets instead of
//! being appended twice, and a gap in sequence numbers is refused (Kafka's ProducerStateManager).
//!
//! Pure bookkeeping over batch headers: no IO. The state is rebuilt on open from the newest
//! producer-state snapshot the log holds (`log::snapshots`, written at each checkpoint) and the
//! headers of the batches after it, so it survives restarts exactly as far as the log does.

use crate::log::producer_snapshot::SnapshotEntry;
use crate::log::BatchHeader;
use std::collections::{BTreeMap, VecDeque};

/// Batches remembered per producer, as in Kafka (`max.in.flight.requests.per.connection` ≤ 5
/// is what idempotence allows).
pub const batches_remembered: usize = 5;

/// A batch as the producer state remembers it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeenBatch {
    pub first_seq: i32,
    pub last_seq: i32,
    pub base_offset: i64,
    pub last_offset: i64,
}

#[derive(Debug, Clone, Default)]
struct Producer {
    epoch: i16,
    batches: VecDeque<SeenBatch>,
}

/// What to do with an incoming batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Append it (not idempotent, or the next in sequence).
    Append,
    /// Already appended: answer with these offsets, append nothing.
    Duplicate(SeenBatch),
}

/// Why a batch was refused. Kafka error codes in the variant docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SequenceError {
    /// INVALID_PRODUCER_EPOCH (47): an older epoch of a producer that has moved on.
    #[error("producer epoch {got} is older than the current epoch {current}")]
    StaleEpoch { got: i16, current: i16 },
    /// OUT_OF_ORDER_SEQUENCE_NUMBER (45): a gap, or a new epoch not starting at 0.
    #[error("sequence {got} where {expected} was expected")]
    OutOfOrder { got: i32, expected: i32 },
}

impl SequenceError {
    /// The OUT_OF_ORDER_SEQUENCE_NUMBER refusal a produce answer's error message carries (this
    /// type's `Display`), so a client can tell a broker that has moved past a batch from one
    /// that lacks the batches before it; None for any other message (another broker's words).
    pub fn out_of_order_in(message: &str) -> Option<SequenceError> {
        let (got, expected) = message.strip_prefix("sequence ")?.strip_suffix(" was expected")?.split_once(" where ")?;
        Some(SequenceError::OutOfOrder { got: got.parse().ok()?, expected: expected.parse().ok()? })
    }

    /// Whether the refused sequence is behind the one expected (the broker appended this
    /// producer's batches past it, so it held the batch), not ahead of it (a gap: the broker
    /// lacks the producer's batches before it, as a leader that missed them does, and so says
    /// nothing about where an earlier attempt of it went). Sequences wrap at i32::MAX: behind
    /// is less than half the sequence space back.
    pub fn is_behind(&self) -> bool {
        let SequenceError::OutOfOrder { got, expected } = *self else { return false };
        let back = (expected as i64 - got as i64).rem_euclid(i32::MAX as i64 + 1);
        back > 0 && back <= i32::MAX as i64 / 2
    }
}

/// The sequence number after `seq`, wrapping at i32::MAX as Kafka does.
fn next_seq(seq: i32) -> i32 {
    if seq == i32::MAX { 0 } else { seq + 1 }
}

fn last_seq(h: &BatchHeader) -> i32 {
    let s = h.base_sequence as i64 + h.last_offset_delta as i64;
    if s > i32::MAX as i64 { (s - i32::MAX as i64 - 1) as i32 } else { s as i32 }
}

/// Which remembered batches a retry is recognised among, and which sequences are refused.
/// Only [`Window::Remembered`] is Kafka's; the others are planted bugs, chosen once for the
/// node (`BrokerConfig::producer_window`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Window {
    /// All of them (the last [`batches_remembered`]); anything but the next sequence is refused.
    #[default]
    Remembered,
    /// The last one only, refusing only sequences ahead of the next: a retry of an older
    /// batch is appended again (`PlantedBug::DuplicateCheckLastBatchOnly`).
    LastOnly,
    /// The last one only, refusing anything but the next sequence, as Kafka refuses a
    /// sequence older than its window: a retry of an older batch in flight is answered
    /// OUT_OF_ORDER_SEQUENCE_NUMBER though it is in the log (`PlantedBug::ProducerWindowOfOne`).
    OneRefusing,
}

#[derive(Debug, Clone, Default)]
pub struct ProducerStates {
    producers: BTreeMap<i64, Producer>,
}

impl ProducerStates {
    /// Decides whether `h` (as sent, before offsets are assigned) may be appended.
    pub fn check(&self, h: &BatchHeader) -> Result<Verdict, SequenceError> {
        self.check_in(h, Window::Remembered)
    }

    /// [`ProducerStates::check`] within `window`: anything but [`Window::Remembered`] is a
    /// planted bug, kept so the simulator can plant it.
    pub fn check_in(&self, h: &BatchHeader, window: Window) -> Result<Verdict, SequenceError> {
        if h.producer_id < 0 || h.base_sequence < 0 {
            return Ok(Verdict::Append);
        }
        // A producer this partition has no state for (new, or its batches were removed by
        // retention or lost to an unflushed crash) may start at any sequence, as in Kafka:
        // refusing it would wedge the producer forever.
        let Some(p) = self.producers.get(&h.producer_id) else { return Ok(Verdict::Append) };
        if h.producer_epoch < p.epoch {
            return Err(SequenceError::StaleEpoch { got: h.producer_epoch, current: p.epoch });
        }
        if h.producer_epoch > p.epoch {
            return match h.base_sequence {
                0 => Ok(Verdict::Append),
                got => Err(SequenceError::OutOfOrder { got, expected: 0 }),
            };
        }
        let last = last_seq(h);
        let remembered = match window {
            Window::Remembered => p.batches.len(),
            Window::LastOnly | Window::OneRefusing => 1,
        };
        if let Some(seen) = p.batches.iter().rev().take(remembered).find(|b| b.first_seq == h.base_sequence && b.last_seq == last) {
            return Ok(Verdict::Duplicate(*seen));
        }
        let expected = p.batches.back().map_or(0, |b| next_seq(b.last_seq));
        let refused = match window {
            Window::Remembered | Window::OneRefusing => h.base_sequence != expected,
            Window::LastOnly => h.base_sequence > expected,
        };
        if refused {
            return Err(SequenceError::OutOfOrder { got: h.base_sequence, expected });
        }
        Ok(Verdict::Append)
    }

    /// Records a batch that is now in the log (`h` carries its assigned offsets).
    pub fn record(&mut self, h: &BatchHeader) {
        if h.producer_id < 0 || h.base_sequence < 0 {
            return;
        }
        let p = self.producers.entry(h.producer_id).or_default();
        if h.producer_epoch != p.epoch {
            p.epoch = h.producer_epoch;
            p.batches.clear();
        }
        p.batches.push_back(SeenBatch {
            first_seq: h.base_sequence,
            last_seq: last_seq(h),
            base_offset: h.base_offset,
            last_offset: h.last_offset(),
        });
        while p.batches.len() > batches_remembered {
            p.batches.pop_front();
        }
    }

    /// The state as snapshot entries: one per remembered batch, oldest first within a producer,
    /// so a reader that keeps each producer's last entry (Kafka's) gets its last batch, and
    /// [`ProducerStates::from_snapshot`] gets all of them. No timestamps are kept (-1) and no
    /// transactions exist yet (coordinator epoch and open transaction -1).
    pub fn to_snapshot(&self) -> Vec<SnapshotEntry> {
        let mut out = Vec::new();
        for (&producer_id, p) in &self.producers {
            for b in &p.batches {
                let offset_delta = (b.last_offset - b.base_offset) as i32;
                out.push(SnapshotEntry { producer_id, epoch: p.epoch, last_sequence: b.last_seq, last_offset: b.last_offset, offset_delta, timestamp: -1, coordinator_epoch: -1, current_txn_first_offset: -1 });
            }
        }
        out
    }

    /// The state `entries` describe ([`ProducerStates::to_snapshot`]'s, or Kafka's one entry
    /// per producer): each entry with a batch is one remembered batch, in order.
    pub fn from_snapshot(entries: &[SnapshotEntry]) -> ProducerStates {
        let mut s = ProducerStates::default();
        for e in entries {
            let p = s.producers.entry(e.producer_id).or_default();
            if p.epoch != e.epoch {
                p.epoch = e.epoch;
                p.batches.clear();
            }
            if e.last_offset < 0 {
                continue; // only markers remain of it: no batch to remember
            }
            // Sequences count records as offsets do, wrapping at i32::MAX.
            let first = e.last_sequence as i64 - e.offset_delta as i64;
            let first_seq = if first < 0 { (first + i32::MAX as i64 + 1) as i32 } else { first as i32 };
            p.batches.push_back(SeenBatch { first_seq, last_seq: e.last_sequence, base_offset: e.last_offset - e.offset_delta as i64, last_offset: e.last_offset });
            while p.batches.len() > batches_remembered {
                p.batches.pop_front();
            }
        }
        s
    }

    pub fn len(&self) -> usize {
        self.producers.len()
    }
    pub fn is_empty(&self) -> bool {
        self.producers.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(pid: i64, epoch: i16, seq: i32, count: i32, base: i64) -> BatchHeader {
        BatchHeader {
            base_offset: base,
            size: 100,
            leader_epoch: 0,
            attributes: 0,
            last_offset_delta: count - 1,
            base_timestamp: 0,
            max_timestamp: 0,
            producer_id: pid,
            producer_epoch: epoch,
            base_sequence: seq,
            records_count: count,
        }
    }

    #[test]
    fn sequences_dedupe_and_gaps() {
        let mut s = ProducerStates::default();
        assert_eq!(s.check(&h(7, 0, 0, 3, -1)), Ok(Verdict::Append));
        s.record(&h(7, 0, 0, 3, 100));
        assert_eq!(s.check(&h(7, 0, 3, 2, -1)), Ok(Verdict::Append));
        s.record(&h(7, 0, 3, 2, 103));
        // A retry of the first batch gets its original offsets.
        let dup = SeenBatch { first_seq: 0, last_seq: 2, base_offset: 100, last_offset: 102 };
        assert_eq!(s.check(&h(7, 0, 0, 3, -1)), Ok(Verdict::Duplicate(dup)));
        // A gap is refused, naming what was expected.
        assert_eq!(s.check(&h(7, 0, 9, 1, -1)), Err(SequenceError::OutOfOrder { got: 9, expected: 5 }));
        // A producer with no state here may start anywhere (Kafka's rule).
        assert_eq!(s.check(&h(8, 0, 4, 1, -1)), Ok(Verdict::Append));
        // Non-idempotent batches always append.
        assert_eq!(s.check(&h(-1, -1, -1, 1, -1)), Ok(Verdict::Append));
    }

    #[test]
    fn a_refusal_names_whether_the_broker_is_past_the_batch_or_short_of_it() {
        let mut s = ProducerStates::default();
        for i in 0..3 {
            s.record(&h(7, 0, 2 * i, 2, 2 * i as i64));
        }
        // Ahead of what this broker holds (a leader that missed batches): a gap.
        let gap = s.check(&h(7, 0, 9, 1, -1)).unwrap_err();
        // Behind it, older than the window: this broker appended it.
        let behind = s.check_in(&h(7, 0, 0, 2, -1), Window::OneRefusing).unwrap_err();
        for (e, is_behind) in [(gap, false), (behind, true)] {
            assert_eq!(SequenceError::out_of_order_in(&e.to_string()), Some(e), "the message reads back");
            assert_eq!(e.is_behind(), is_behind, "{e}");
        }
        assert!(SequenceError::OutOfOrder { got: i32::MAX, expected: 1 }.is_behind(), "behind across the wrap");
        assert!(!SequenceError::OutOfOrder { got: 1, expected: i32::MAX }.is_behind(), "a gap across the wrap");
        assert_eq!(SequenceError::out_of_order_in("Out of order sequence number for producer 1"), None, "another broker's wording");
    }

    #[test]
    fn epochs_fence_and_reset() {
        let mut s = ProducerStates::default();
        s.record(&h(7, 2, 0, 1, 0));
        assert_eq!(s.check(&h(7, 1, 1, 1, -1)), Err(SequenceError::StaleEpoch { got: 1, current: 2 }));
        assert_eq!(s.check(&h(7, 3, 5, 1, -1)), Err(SequenceError::OutOfOrder { got: 5, expected: 0 }));
        assert_eq!(s.check(&h(7, 3, 0, 1, -1)), Ok(Verdict::Append));
        s.record(&h(7, 3, 0, 1, 1));
        assert_eq!(s.check(&h(7, 3, 1, 1, -1)), Ok(Verdict::Append));
    }

    #[test]
    fn only_the_last_five_batches_are_remembered() {
        let mut s = ProducerStates::default();
        for i in 0..7 {
            s.record(&h(1, 0, i, 1, i as i64));
        }
        assert!(matches!(s.check(&h(1, 0, 2, 1, -1)), Ok(Verdict::Duplicate(_))));
        assert_eq!(s.check(&h(1, 0, 1, 1, -1)), Err(SequenceError::OutOfOrder { got: 1, expected: 7 }));
    }

    #[test]
    fn a_retry_of_any_remembered_batch_is_a_duplicate_and_only_the_planted_bug_appends_it() {
        let mut s = ProducerStates::default();
        for (i, seq) in [0, 2, 4].into_iter().enumerate() {
            s.record(&h(1, 0, seq, 2, 2 * i as i64));
        }
        // Three batches in flight were appended, their answers lost; the producer resends all.
        let first = SeenBatch { first_seq: 0, last_seq: 1, base_offset: 0, last_offset: 1 };
        assert_eq!(s.check(&h(1, 0, 0, 2, -1)), Ok(Verdict::Duplicate(first)));
        assert!(matches!(s.check_in(&h(1, 0, 4, 2, -1), Window::LastOnly), Ok(Verdict::Duplicate(_))), "the last batch: the same");
        assert_eq!(s.check_in(&h(1, 0, 0, 2, -1), Window::LastOnly), Ok(Verdict::Append), "the planted bug appends it again");
        assert_eq!(s.check_in(&h(1, 0, 9, 1, -1), Window::LastOnly), Err(SequenceError::OutOfOrder { got: 9, expected: 6 }));
        // A window of one refusing as Kafka does: the older retry is refused, the last is not.
        assert!(matches!(s.check_in(&h(1, 0, 4, 2, -1), Window::OneRefusing), Ok(Verdict::Duplicate(_))));
        assert_eq!(s.check_in(&h(1, 0, 0, 2, -1), Window::OneRefusing), Err(SequenceError::OutOfOrder { got: 0, expected: 6 }));
    }

    #[test]
    fn a_snapshot_gives_back_the_whole_window_and_kafkas_reading_gets_the_last_batch() {
        let mut s = ProducerStates::default();
        for i in 0..7 {
            s.record(&h(1, 3, 2 * i, 2, 10 + 2 * i as i64));
        }
        s.record(&h(2, 0, i32::MAX - 1, 3, 40)); // seqs MAX-1, MAX, 0
        let entries = s.to_snapshot();
        assert_eq!(entries.len(), 5 + 1, "five remembered batches of producer 1, one of producer 2");
        let back = ProducerStates::from_snapshot(&entries);
        for seq in [4, 6, 8, 10, 12] {
            assert_eq!(back.check(&h(1, 3, seq, 2, -1)), s.check(&h(1, 3, seq, 2, -1)), "seq {seq}");
        }
        assert!(matches!(back.check(&h(1, 3, 4, 2, -1)), Ok(Verdict::Duplicate(SeenBatch { base_offset: 14, last_offset: 15, .. }))));
        assert_eq!(back.check(&h(1, 3, 14, 1, -1)), Ok(Verdict::Append));
        assert_eq!(back.check(&h(1, 2, 14, 1, -1)), Err(SequenceError::StaleEpoch { got: 2, current: 3 }));
        assert!(matches!(back.check(&h(2, 0, i32::MAX - 1, 3, -1)), Ok(Verdict::Duplicate(SeenBatch { first_seq, .. })) if first_seq == i32::MAX - 1), "across the wrap");
        assert_eq!(back.check(&h(2, 0, 1, 1, -1)), Ok(Verdict::Append));
        // Kafka keeps one batch per producer: the last entry of each, read alone, is that.
        let last_only: Vec<_> = entries.iter().filter(|e| e.producer_id == 2 || e.last_sequence == 13).copied().collect();
        let kafka = ProducerStates::from_snapshot(&last_only);
        assert_eq!(kafka.check(&h(1, 3, 14, 1, -1)), Ok(Verdict::Append));
        assert!(matches!(kafka.check(&h(1, 3, 12, 2, -1)), Ok(Verdict::Duplicate(_))));
    }

    #[test]
    fn sequence_wraps_at_i32_max() {
        let mut s = ProducerStates::default();
        s.record(&h(1, 0, 0, 1, 0));
        let mut big = h(1, 0, 1, 1, 1);
        big.base_sequence = 1;
        s.record(&big);
        let mut p = ProducerStates::default();
        p.record(&h(2, 0, i32::MAX - 1, 2, 0)); // seqs MAX-1, MAX
        assert_eq!(p.check(&h(2, 0, 0, 1, -1)), Ok(Verdict::Append));
    }
}
