//! One transactional id as the coordinator knows it (Kafka's `TransactionMetadata`), and the
//! decisions that move it between the states of docs/transactions.md 3.2, under the classic
//! protocol (transaction.version 1) or KIP-890 part 2's (2: every end bumps the epoch). A decision reads the current metadata and returns the
//! metadata to write — a draft, as `controller/election.rs`'s — and never changes the metadata
//! itself, never writes, never answers: `mod.rs` appends the draft as a record and applies it
//! only once the record is replicated. The epoch checks are `epoch.rs`'s.

use super::epoch::{self, EndEpoch, InitEpoch};
use super::records::TxnValue;
use crate::kafka::{Code, TxnVersion};
use std::collections::BTreeSet;

/// A request waiting for its answer; the coordinator hands them out.
pub type Ticket = u64;

/// A producer id and one of its epochs (InitProducerId's answer, KIP-360's resume request).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerIdAndEpoch {
    pub producer_id: i64,
    pub epoch: i16,
}

/// Kafka's transaction states; the discriminant is the status id stored in
/// `__transaction_state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TxnState {
    Empty = 0,
    Ongoing = 1,
    PrepareCommit = 2,
    PrepareAbort = 3,
    CompleteCommit = 4,
    CompleteAbort = 5,
    Dead = 6,
    /// Kafka never writes it: a fence is written as PrepareAbort at the bumped epoch.
    PrepareEpochFence = 7,
}

/// Every state, in status-id order.
const all_states: [TxnState; 8] = [TxnState::Empty, TxnState::Ongoing, TxnState::PrepareCommit, TxnState::PrepareAbort, TxnState::CompleteCommit, TxnState::CompleteAbort, TxnState::Dead, TxnState::PrepareEpochFence];

impl TxnState {
    /// The status id stored in `__transaction_state`.
    pub fn id(self) -> i8 {
        self as i8
    }

    pub fn from_id(id: i8) -> Option<TxnState> {
        all_states.get(usize::try_from(id).ok()?).copied()
    }

    /// Kafka's name, as DescribeTransactions and ListTransactions report it.
    pub fn name(self) -> &'static str {
        match self {
            TxnState::Empty => "Empty",
            TxnState::Ongoing => "Ongoing",
            TxnState::PrepareCommit => "PrepareCommit",
            TxnState::PrepareAbort => "PrepareAbort",
            TxnState::CompleteCommit => "CompleteCommit",
            TxnState::CompleteAbort => "CompleteAbort",
            TxnState::Dead => "Dead",
            TxnState::PrepareEpochFence => "PrepareEpochFence",
        }
    }

    /// The state ListTransactions' filter names (None: a name Kafka does not know).
    pub fn from_name(name: &str) -> Option<TxnState> {
        all_states.into_iter().find(|s| s.name() == name)
    }

    /// PrepareCommit or PrepareAbort: an outcome is decided and its markers are owed.
    pub fn is_prepare(self) -> bool {
        matches!(self, TxnState::PrepareCommit | TxnState::PrepareAbort)
    }

    /// CompleteCommit or CompleteAbort: every marker of the last transaction is written.
    pub fn is_complete(self) -> bool {
        matches!(self, TxnState::CompleteCommit | TxnState::CompleteAbort)
    }

    /// No transaction open: InitProducerId bumps the epoch, the id may expire.
    pub fn is_idle(self) -> bool {
        self == TxnState::Empty || self.is_complete()
    }
}

/// What the coordinator knows of one transactional id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnMetadata {
    pub producer_id: i64,
    /// The producer id before the last rotation (-1: none; not stored in value v0, so lost on
    /// a coordinator change, as in Kafka before value v1).
    pub last_producer_id: i64,
    pub epoch: i16,
    /// The epoch before the last KIP-360 bump, so that request's retry gets the same answer
    /// (-1: none; not stored, so lost on a coordinator change, as in Kafka).
    pub last_epoch: i16,
    pub timeout_ms: i32,
    pub state: TxnState,
    pub partitions: BTreeSet<(String, i32)>,
    /// When the open transaction began (-1: none).
    pub start_ms: i64,
    pub last_update_ms: i64,
    /// The protocol the last EndTxn asked for (Kafka's `clientTransactionVersion`): what the
    /// markers of a prepared outcome say they are. Stored in value v1, which a KIP-890 end
    /// writes.
    pub version: TxnVersion,
    /// KIP-890: the producer id a prepared transaction hands over to once complete, when the
    /// bumped epoch exhausted the current one (-1: none; stored in value v1).
    pub next_producer_id: i64,
}

impl TxnMetadata {
    /// An id met for the first time, before its first InitProducerId is written: Empty at
    /// epoch -1 with a fresh producer id, as Kafka creates it.
    pub fn new(producer_id: i64, timeout_ms: i32, now: i64) -> TxnMetadata {
        TxnMetadata {
            producer_id,
            last_producer_id: epoch::no_producer_id,
            epoch: epoch::no_epoch,
            last_epoch: epoch::no_epoch,
            timeout_ms,
            state: TxnState::Empty,
            partitions: BTreeSet::new(),
            start_ms: -1,
            last_update_ms: now,
            version: TxnVersion::Classic,
            next_producer_id: epoch::no_producer_id,
        }
    }

    /// The stored value.
    pub fn value(&self) -> TxnValue {
        TxnValue {
            producer_id: self.producer_id,
            producer_epoch: self.epoch,
            timeout_ms: self.timeout_ms,
            state: self.state,
            partitions: self.partitions.clone(),
            last_update_ms: self.last_update_ms,
            start_ms: self.start_ms,
            previous_producer_id: if self.version == TxnVersion::Classic { epoch::no_producer_id } else { self.last_producer_id },
            next_producer_id: self.next_producer_id,
            client_version: if self.version == TxnVersion::Classic { 0 } else { self.version.level() as i16 },
        }
    }

    /// The metadata loaded from a stored value (the last epoch is not stored; the last producer
    /// id, the next one and the client's version only in value v1).
    pub fn from_value(v: TxnValue) -> TxnMetadata {
        TxnMetadata {
            producer_id: v.producer_id,
            last_producer_id: v.previous_producer_id,
            epoch: v.producer_epoch,
            last_epoch: epoch::no_epoch,
            timeout_ms: v.timeout_ms,
            state: v.state,
            partitions: v.partitions,
            start_ms: v.start_ms,
            last_update_ms: v.last_update_ms,
            version: TxnVersion::from_level(i64::from(v.client_version)).unwrap_or(TxnVersion::Classic),
            next_producer_id: v.next_producer_id,
        }
    }

    /// The producer id and epoch the producer goes on with once the last prepared outcome is
    /// complete: EndTxn v5's answer.
    pub fn continues_as(&self) -> ProducerIdAndEpoch {
        match self.next_producer_id {
            epoch::no_producer_id => ProducerIdAndEpoch { producer_id: self.producer_id, epoch: self.epoch },
            next => ProducerIdAndEpoch { producer_id: next, epoch: 0 },
        }
    }

    /// A copy in `state`, updated at `now` (Kafka's `prepareTransitionTo`, which also makes the
    /// current producer id the last one).
    fn to(&self, state: TxnState, now: i64) -> TxnMetadata {
        TxnMetadata { state, last_update_ms: now, last_producer_id: self.producer_id, ..self.clone() }
    }
}

/// What an InitProducerId leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InitDraft {
    /// Write this Empty metadata; its producer id and epoch are the answer once replicated.
    Write(TxnMetadata),
    /// An open transaction is fenced (Kafka's PrepareEpochFence): this PrepareAbort at the
    /// bumped epoch is written and its markers sent; the caller is told
    /// CONCURRENT_TRANSACTIONS, and its retry bumps the epoch again.
    Fence(TxnMetadata),
}

/// InitProducerId with a transactional id (Kafka's `prepareInitProducerIdTransit`). `pending`:
/// a transition is in flight. `new_producer_id` is called only to rotate.
pub fn init(m: &TxnMetadata, pending: bool, timeout_ms: i32, expected: Option<ProducerIdAndEpoch>, now: i64, new_producer_id: &mut dyn FnMut() -> Result<i64, Code>) -> Result<InitDraft, Code> {
    if pending {
        return Err(Code::ConcurrentTransactions);
    }
    if expected.is_some_and(|e| !epoch::may_resume(m, e)) {
        return Err(Code::ProducerFenced);
    }
    match m.state {
        TxnState::PrepareCommit | TxnState::PrepareAbort => Err(Code::ConcurrentTransactions),
        TxnState::Ongoing => Ok(InitDraft::Fence(fence(m, now))),
        TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort => {
            let mut next = TxnMetadata { timeout_ms, partitions: BTreeSet::new(), start_ms: -1, ..m.to(TxnState::Empty, now) };
            match epoch::on_init(m, expected)? {
                InitEpoch::Bump { epoch, last_epoch } => {
                    next.epoch = epoch;
                    next.last_epoch = last_epoch;
                }
                InitEpoch::Rotate { last_epoch } => {
                    next.producer_id = new_producer_id()?;
                    next.epoch = 0;
                    next.last_epoch = last_epoch;
                }
            }
            Ok(InitDraft::Write(next))
        }
        // Never in memory: Dead ids are dropped, a loaded PrepareEpochFence becomes PrepareAbort.
        TxnState::Dead | TxnState::PrepareEpochFence => Err(Code::ConcurrentTransactions),
    }
}

/// AddPartitionsToTxn (and AddOffsetsToTxn's one partition): the metadata to write, or None
/// when every partition is already in the open transaction (answered at once, nothing written).
pub fn add_partitions(m: &TxnMetadata, pending: bool, producer_id: i64, epoch: i16, partitions: &BTreeSet<(String, i32)>, now: i64) -> Result<Option<TxnMetadata>, Code> {
    epoch::check_client(m, producer_id, epoch)?;
    if pending || m.state.is_prepare() {
        return Err(Code::ConcurrentTransactions);
    }
    match m.state {
        TxnState::Ongoing if partitions.is_subset(&m.partitions) => Ok(None),
        TxnState::Ongoing | TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort => {
            let start_ms = if m.state == TxnState::Ongoing { m.start_ms } else { now };
            let mut next = TxnMetadata { start_ms, ..m.to(TxnState::Ongoing, now) };
            next.partitions.extend(partitions.iter().cloned());
            Ok(Some(next))
        }
        _ => Err(Code::InvalidTxnState),
    }
}

/// KIP-890 part 1, a partition leader asking before a producer's first transactional write to
/// each of `partitions` (AddPartitionsToTxn v4+ `verify_only`): each is in the Ongoing
/// transaction of `producer_id` at `epoch`, or INVALID_TXN_STATE (its write would open a
/// transaction the coordinator does not know: a hanging one). A transition in flight or a
/// transaction being ended is CONCURRENT_TRANSACTIONS for all (the leader asks again later).
/// Nothing is written.
pub fn verify_partitions(m: &TxnMetadata, pending: bool, producer_id: i64, epoch: i16, partitions: &[(String, i32)]) -> Result<Vec<((String, i32), Result<(), Code>)>, Code> {
    epoch::check_client(m, producer_id, epoch)?;
    if pending || m.state.is_prepare() {
        return Err(Code::ConcurrentTransactions);
    }
    let open = m.state == TxnState::Ongoing;
    Ok(partitions.iter().map(|tp| (tp.clone(), if open && m.partitions.contains(tp) { Ok(()) } else { Err(Code::InvalidTxnState) })).collect())
}

/// What an EndTxn leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndDraft {
    /// Write this PrepareCommit or PrepareAbort; answered once replicated.
    Write(TxnMetadata),
    /// The last transaction already ended this way: NONE at once (a retry).
    Done,
}

/// EndTxn from a client (Kafka's `endTransaction` with `isFromClient`) under `version`. The
/// classic protocol ends the transaction at its epoch; KIP-890's at the next one (a new
/// producer id from `new_producer_id` once that epoch is exhausted), so that nothing the
/// producer sent before the end — a late EndTxn, a late marker — can end a later transaction.
/// Which epochs a request may carry is `epoch::on_end`'s.
#[allow(clippy::too_many_arguments)]
pub fn end(m: &TxnMetadata, pending: bool, producer_id: i64, epoch: i16, commit: bool, version: TxnVersion, now: i64, new_producer_id: &mut dyn FnMut() -> Result<i64, Code>) -> Result<EndDraft, Code> {
    let asked = epoch::on_end(m, producer_id, epoch, version)?;
    // While markers are being written the transition to Complete* is pending, so this comes
    // first: Prepare* with the other outcome is CONCURRENT_TRANSACTIONS then, as in Kafka.
    if pending {
        return Err(Code::ConcurrentTransactions);
    }
    let (prepare, complete) = if commit { (TxnState::PrepareCommit, TxnState::CompleteCommit) } else { (TxnState::PrepareAbort, TxnState::CompleteAbort) };
    match (m.state, asked) {
        (TxnState::Ongoing, EndEpoch::Current) => {
            let mut next = TxnMetadata { version, ..m.to(prepare, now) };
            if version == TxnVersion::EpochBump {
                next.epoch = epoch::bumped(m.epoch);
                if epoch::exhausted(next.epoch) {
                    next.next_producer_id = new_producer_id()?;
                }
            }
            Ok(EndDraft::Write(next))
        }
        // A transaction that is no longer the one the request ended: fenced (KIP-890).
        (TxnState::Ongoing, EndEpoch::Previous) => Err(Code::ProducerFenced),
        (s, _) if s == complete => Ok(EndDraft::Done),
        (s, _) if s == prepare => Err(Code::ConcurrentTransactions),
        // Under KIP-890 a retry finds its own end, never another state.
        (_, EndEpoch::Previous) => Err(Code::ProducerFenced),
        // Empty, or the other outcome.
        _ => Err(Code::InvalidTxnState),
    }
}

/// An open transaction fenced (by InitProducerId or its timeout): aborted at the next epoch
/// (Kafka's `prepareFenceProducerEpoch` followed by `endTransaction(ABORT)` from the
/// coordinator, which writes PrepareAbort and clears the last epoch).
pub fn fence(m: &TxnMetadata, now: i64) -> TxnMetadata {
    TxnMetadata { epoch: epoch::fenced(m.epoch), last_epoch: epoch::no_epoch, ..m.to(TxnState::PrepareAbort, now) }
}

/// Every marker of a prepared outcome is written: Complete*, no partitions (`prepareComplete`).
/// Under KIP-890, an exhausted epoch hands over to the next producer id here, at epoch 0.
pub fn complete(m: &TxnMetadata, now: i64) -> TxnMetadata {
    let state = if m.state == TxnState::PrepareCommit { TxnState::CompleteCommit } else { TxnState::CompleteAbort };
    let next = m.continues_as();
    TxnMetadata { partitions: BTreeSet::new(), producer_id: next.producer_id, epoch: next.epoch, next_producer_id: epoch::no_producer_id, ..m.to(state, now) }
}

/// An open transaction past its timeout (Kafka: `start + timeout < now`, strictly).
pub fn timed_out(m: &TxnMetadata, now: i64) -> bool {
    m.state == TxnState::Ongoing && m.start_ms.saturating_add(i64::from(m.timeout_ms)) < now
}

/// An idle id not updated for `expiration_ms` (Kafka: `last update <= now - expiration`).
pub fn expired(m: &TxnMetadata, expiration_ms: i64, now: i64) -> bool {
    m.state.is_idle() && m.last_update_ms <= now.saturating_sub(expiration_ms)
}
