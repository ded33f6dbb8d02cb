//! Idempotent and transactional producer state of one partition: for each producer id, its
//! epoch and the last five batches it appended, so a retried batch is answered with its original
//! offsets instead of being appended twice, and a gap in sequence numbers is refused; and the
//! transactions open here, which hold back the last stable offset (Kafka's
//! ProducerStateManager; docs/transactions.md, 1.1 and 2.2).
//!
//! Pure bookkeeping over batch headers: no IO. The state is rebuilt on open from the newest
//! producer-state snapshot the log holds (`log::snapshots`, written at each checkpoint) and the
//! headers of the batches after it, so it survives restarts exactly as far as the log does.

use crate::kafka::TxnVersion;
use crate::log::batch::control::MarkerKind;
use crate::log::producer_snapshot::SnapshotEntry;
use crate::log::txn_index::AbortedTxn;
use crate::log::BatchHeader;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

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

#[derive(Debug, Clone)]
struct Producer {
    epoch: i16,
    batches: VecDeque<SeenBatch>,
    /// The epoch of the coordinator whose marker this partition took last (-1: none yet): an
    /// older coordinator's marker is refused.
    coordinator_epoch: i32,
    /// The first offset of its transaction open on this partition; -1 when none is.
    txn_first: i64,
}

impl Default for Producer {
    fn default() -> Self {
        Producer { epoch: 0, batches: VecDeque::new(), coordinator_epoch: -1, txn_first: -1 }
    }
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
    /// INVALID_TXN_STATE (48): a plain batch from a producer whose transaction is open here.
    #[error("producer {0} has a transaction open on this partition; its batches must be transactional")]
    TransactionOpen(i64),
    /// INVALID_RECORD (87): a transactional batch without a producer id or sequence.
    #[error("a transactional batch needs a producer id and a sequence")]
    TransactionalWithoutProducer,
}

/// Why a transaction marker was refused (WriteTxnMarkers). Kafka error codes in the variant docs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum MarkerError {
    /// INVALID_PRODUCER_EPOCH (47): the producer has moved past the marker's epoch.
    #[error("marker for producer epoch {got}, older than the current epoch {current}")]
    StaleEpoch { got: i16, current: i16 },
    /// INVALID_PRODUCER_EPOCH (47), KIP-890 with KIP-1228's rule: a marker at the epoch of the
    /// transaction open here. A KIP-890 marker carries the epoch above the one its transaction
    /// was written at, so this one is a late marker of an earlier transaction.
    #[error("a transaction version 2 marker at epoch {0}, the epoch of the transaction open here: it ends an earlier transaction")]
    SameEpochOpen(i16),
    /// TRANSACTION_COORDINATOR_FENCED (52): a newer coordinator has written here.
    #[error("marker from coordinator epoch {got}, older than {current} which wrote here")]
    CoordinatorFenced { got: i32, current: i32 },
}

/// One producer as DescribeProducers shows it (KIP-664).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerView {
    pub producer_id: i64,
    pub epoch: i16,
    /// The sequence of its last batch here; -1 when only markers remain of it.
    pub last_sequence: i32,
    pub coordinator_epoch: i32,
    /// The first offset of its transaction open here; -1 for none.
    pub current_txn_start_offset: i64,
}

/// A transaction a marker ended on this partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    /// The marker's offset.
    pub last_offset: i64,
    pub kind: MarkerKind,
    /// The last stable offset the partition had once this transaction ended, leaving out any
    /// later transaction: the first offset of the earliest transaction still open, else the
    /// offset after the marker (the `.txnindex` entry's field).
    pub last_stable_offset: i64,
}

impl EndedTxn {
    /// Its `.txnindex` entry, if it aborted.
    pub fn aborted(&self) -> Option<AbortedTxn> {
        (self.kind == MarkerKind::Abort).then_some(AbortedTxn { producer_id: self.producer_id, first_offset: self.first_offset, last_offset: self.last_offset, last_stable_offset: self.last_stable_offset })
    }
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

/// Which open transaction holds a partition's last stable offset back: the earliest, Kafka's
/// rule; the latest where the simulator plants `PlantedBug::LsoFromLatestOpenTxn` (chosen when
/// the node is built, `BrokerConfig::lso_held_by`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum HeldBy {
    #[default]
    Earliest,
    Latest,
}

#[derive(Debug, Clone, Default)]
pub struct ProducerStates {
    producers: BTreeMap<i64, Producer>,
    /// Transactions open here, as (first offset, producer id).
    open: BTreeSet<(i64, i64)>,
    /// Transactions ended here whose marker the high watermark has not passed yet, as
    /// (first offset, marker offset): they still hold back the last stable offset.
    unreplicated: BTreeSet<(i64, i64)>,
    /// KIP-890 part 1's verification guards (Kafka's `VerificationGuard`): producer id → the
    /// guard of a verification asked of its coordinator before its first transactional write
    /// here. A marker of the producer removes it, so a verification answered before a marker
    /// cannot let a write through after it. In memory only.
    guards: BTreeMap<i64, u64>,
}

impl ProducerStates {
    /// Whether `producer_id` has a transaction open here (its next transactional write needs
    /// no verification).
    pub fn has_open_txn(&self, producer_id: i64) -> bool {
        self.producers.get(&producer_id).is_some_and(|p| p.txn_first >= 0)
    }

    /// Starts a verification of `producer_id`'s first transactional write here, guarded by
    /// `guard` (a newer one replaces an older).
    pub fn guard(&mut self, producer_id: i64, guard: u64) {
        self.guards.insert(producer_id, guard);
    }

    /// Whether `guard` still stands for `producer_id` (no marker since it was made); it is
    /// used up either way.
    pub fn take_guard(&mut self, producer_id: i64, guard: u64) -> bool {
        self.guards.get(&producer_id) == Some(&guard) && self.guards.remove(&producer_id).is_some()
    }
    /// Decides whether `h` (as sent, before offsets are assigned) may be appended.
    pub fn check(&self, h: &BatchHeader) -> Result<Verdict, SequenceError> {
        self.check_in(h, Window::Remembered)
    }

    /// [`ProducerStates::check`] within `window`: anything but [`Window::Remembered`] is a
    /// planted bug, kept so the simulator can plant it.
    pub fn check_in(&self, h: &BatchHeader, window: Window) -> Result<Verdict, SequenceError> {
        if h.producer_id < 0 || h.base_sequence < 0 {
            return match h.is_transactional() {
                true => Err(SequenceError::TransactionalWithoutProducer),
                false => Ok(Verdict::Append),
            };
        }
        let open = self.producers.get(&h.producer_id).is_some_and(|p| p.txn_first >= 0 && h.producer_epoch >= p.epoch);
        if open && !h.is_transactional() {
            return Err(SequenceError::TransactionOpen(h.producer_id));
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

    /// Whether a coordinator's own transactional batch (a group coordinator's transactional
    /// offset commit: producer id and epoch, no sequence) may be appended: only its epoch is
    /// checked, as Kafka checks appends of coordinator origin, so a fenced producer's late
    /// offsets are refused.
    pub fn check_coordinator(&self, h: &BatchHeader) -> Result<(), SequenceError> {
        match self.producers.get(&h.producer_id) {
            Some(p) if h.producer_id >= 0 && h.producer_epoch < p.epoch => Err(SequenceError::StaleEpoch { got: h.producer_epoch, current: p.epoch }),
            _ => Ok(()),
        }
    }

    /// Records a data batch that is now in the log (`h` carries its assigned offsets): a
    /// transactional one opens its producer's transaction here if none is open (also a
    /// coordinator's, which has no sequence and joins no window). Control batches go to
    /// [`ProducerStates::record_marker`].
    pub fn record(&mut self, h: &BatchHeader) {
        let coordinators = h.base_sequence < 0 && h.is_transactional();
        if h.producer_id < 0 || (h.base_sequence < 0 && !coordinators) || h.is_control() {
            return;
        }
        let p = self.producers.entry(h.producer_id).or_default();
        if h.producer_epoch != p.epoch {
            p.epoch = h.producer_epoch;
            p.batches.clear();
        }
        if h.is_transactional() && p.txn_first < 0 {
            p.txn_first = h.base_offset;
            self.open.insert((h.base_offset, h.producer_id));
        }
        if coordinators {
            return;
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

    /// Whether a marker of `producer_id` at `epoch` under transaction version `tv` from the
    /// coordinator in `coordinator_epoch` may be appended. A producer unknown here may be ended
    /// by any marker (its batches may be gone), as in Kafka. A classic marker may carry the
    /// producer's current epoch; a KIP-890 one only when no transaction of the producer is open
    /// here (a retry of a marker already written), else it needs a newer epoch (KIP-1228).
    pub fn check_marker(&self, producer_id: i64, epoch: i16, tv: TxnVersion, coordinator_epoch: i32) -> Result<(), MarkerError> {
        let Some(p) = self.producers.get(&producer_id) else { return Ok(()) };
        if epoch < p.epoch {
            return Err(MarkerError::StaleEpoch { got: epoch, current: p.epoch });
        }
        if tv == TxnVersion::EpochBump && epoch == p.epoch && p.txn_first >= 0 {
            return Err(MarkerError::SameEpochOpen(epoch));
        }
        if coordinator_epoch < p.coordinator_epoch {
            return Err(MarkerError::CoordinatorFenced { got: coordinator_epoch, current: p.coordinator_epoch });
        }
        Ok(())
    }

    /// Records a marker now in the log (`h` its stamped header): its producer takes the
    /// marker's epochs, and its open transaction here, if any, ends. A new epoch starts the
    /// producer's sequences over.
    pub fn record_marker(&mut self, h: &BatchHeader, kind: MarkerKind, coordinator_epoch: i32) -> Option<EndedTxn> {
        self.guards.remove(&h.producer_id);
        let p = self.producers.entry(h.producer_id).or_default();
        if h.producer_epoch != p.epoch {
            p.epoch = h.producer_epoch;
            p.batches.clear();
        }
        p.coordinator_epoch = coordinator_epoch;
        let first = std::mem::replace(&mut p.txn_first, -1);
        if first < 0 {
            return None;
        }
        self.open.remove(&(first, h.producer_id));
        self.unreplicated.insert((first, h.base_offset));
        let last_stable_offset = self.open.first().map_or(h.base_offset + 1, |&(o, _)| o);
        Some(EndedTxn { producer_id: h.producer_id, first_offset: first, last_offset: h.base_offset, kind, last_stable_offset })
    }

    /// The last stable offset under the high watermark `hw`: below the first transaction still
    /// open, or ended by a marker `hw` has not passed; `hw` when there is none.
    pub fn last_stable_offset(&self, hw: i64) -> i64 {
        self.last_stable_offset_held(hw, HeldBy::Earliest)
    }

    /// [`ProducerStates::last_stable_offset`], the open transaction holding it back chosen by
    /// `held`: anything but [`HeldBy::Earliest`] is a planted bug.
    pub fn last_stable_offset_held(&self, hw: i64, held: HeldBy) -> i64 {
        let first_open = match held {
            HeldBy::Earliest => self.open.first(),
            HeldBy::Latest => self.open.last(),
        };
        let first_open = first_open.map(|&(o, _)| o);
        let first_ended = self.unreplicated.iter().find(|&&(_, marker)| marker >= hw).map(|&(o, _)| o);
        [first_open, first_ended].into_iter().flatten().fold(hw, i64::min)
    }

    /// Forgets the ended transactions whose markers the high watermark `hw` has passed.
    pub fn forget_replicated(&mut self, hw: i64) {
        self.unreplicated.retain(|&(_, marker)| marker >= hw);
    }

    /// Every producer this partition knows, by id (DescribeProducers).
    pub fn describe(&self) -> Vec<ProducerView> {
        let view = |(&producer_id, p): (&i64, &Producer)| ProducerView {
            producer_id,
            epoch: p.epoch,
            last_sequence: p.batches.back().map_or(-1, |b| b.last_seq),
            coordinator_epoch: p.coordinator_epoch,
            current_txn_start_offset: p.txn_first,
        };
        self.producers.iter().map(view).collect()
    }

    /// The open transactions' (producer id, first offset), by producer (DescribeProducers).
    pub fn open_transactions(&self) -> impl Iterator<Item = (i64, i64)> + '_ {
        self.producers.iter().filter(|(_, p)| p.txn_first >= 0).map(|(&id, p)| (id, p.txn_first))
    }

    /// The state as snapshot entries: one per remembered batch, oldest first within a producer,
    /// so a reader that keeps each producer's last entry (Kafka's) gets its last batch, and
    /// [`ProducerStates::from_snapshot`] gets all of them; a producer with no batch left since
    /// its last marker gets one entry without one (last offset -1). No timestamps are kept (-1).
    pub fn to_snapshot(&self) -> Vec<SnapshotEntry> {
        let mut out = Vec::new();
        for (&producer_id, p) in &self.producers {
            let (coordinator_epoch, current_txn_first_offset) = (p.coordinator_epoch, p.txn_first);
            let entry = |last_sequence, last_offset, offset_delta| SnapshotEntry { producer_id, epoch: p.epoch, last_sequence, last_offset, offset_delta, timestamp: -1, coordinator_epoch, current_txn_first_offset };
            if p.batches.is_empty() {
                out.push(entry(-1, -1, 0));
            }
            for b in &p.batches {
                out.push(entry(b.last_seq, b.last_offset, (b.last_offset - b.base_offset) as i32));
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
            p.coordinator_epoch = e.coordinator_epoch;
            if p.txn_first >= 0 {
                s.open.remove(&(p.txn_first, e.producer_id));
            }
            p.txn_first = e.current_txn_first_offset.max(-1);
            if p.txn_first >= 0 {
                s.open.insert((p.txn_first, e.producer_id));
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
mod tests;
