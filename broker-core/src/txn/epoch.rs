//! The producer-epoch rules of the transaction coordinator, in one place: which producer id and
//! epoch a request must carry, and which epoch a transition writes: Kafka's classic rules
//! (`TransactionCoordinator.scala`, `TransactionMetadata.prepareIncrementProducerEpoch`) and
//! those KIP-890 part 2 (transaction.version 2) changes — EndTxn ending at epoch + 1, and a
//! retry of it recognised as "stored epoch = request epoch + 1". Pure functions; they never
//! decide a state, write or answer.

use super::config::producer_epoch_exhausted;
use super::state::{ProducerIdAndEpoch, TxnMetadata, TxnState};
use crate::kafka::{Code, TxnVersion};

/// No epoch yet (Kafka's `RecordBatch.NO_PRODUCER_EPOCH`).
pub const no_epoch: i16 = -1;

/// No producer id (Kafka's `RecordBatch.NO_PRODUCER_ID`).
pub const no_producer_id: i64 = -1;

/// Whether InitProducerId must rotate to a new producer id rather than bump `epoch`.
pub fn exhausted(epoch: i16) -> bool {
    epoch >= producer_epoch_exhausted
}

/// AddPartitionsToTxn, AddOffsetsToTxn and EndTxn from a client: the producer id must be the
/// id's (else INVALID_PRODUCER_ID_MAPPING) and, under the classic protocol, the epoch exactly
/// its current one — older or newer is PRODUCER_FENCED.
pub fn check_client(m: &TxnMetadata, producer_id: i64, epoch: i16) -> Result<(), Code> {
    if m.producer_id != producer_id {
        // KIP-890: the producer id a prepared transaction hands over to, already answered to
        // the client, is this id's once the markers are written: until then, busy.
        if producer_id == m.next_producer_id && epoch == 0 {
            return Err(Code::ConcurrentTransactions);
        }
        return Err(Code::InvalidProducerIdMapping);
    }
    if m.epoch != epoch {
        return Err(Code::ProducerFenced);
    }
    Ok(())
}

/// Which transaction an EndTxn's producer id and epoch name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndEpoch {
    /// The id's current epoch: the open transaction (or, classically, a retry of the last end).
    Current,
    /// KIP-890: the epoch before the last end's bump (or the producer id before its rotation):
    /// a retry of that end, or a late copy of it.
    Previous,
}

/// EndTxn from a client. Classic: [`check_client`]. KIP-890: also the epoch one below the
/// current after an end (the current producer id's, or the previous producer id's last when
/// the end rotated it), which only a retry of that end carries.
pub fn on_end(m: &TxnMetadata, producer_id: i64, epoch: i16, version: TxnVersion) -> Result<EndEpoch, Code> {
    let ended = m.state.is_prepare() || m.state.is_complete() || m.state == TxnState::Ongoing;
    let previous = version == TxnVersion::EpochBump
        && ended
        && ((producer_id == m.producer_id && bumped(epoch) == m.epoch && epoch != m.epoch) || (producer_id == m.last_producer_id && producer_id != m.producer_id && m.epoch == 0));
    if previous {
        return Ok(EndEpoch::Previous);
    }
    check_client(m, producer_id, epoch).map(|()| EndEpoch::Current)
}

/// The epoch a KIP-890 end writes: one more, never past `i16::MAX` (the end that reaches
/// [`exhausted`] hands over to a new producer id).
pub fn bumped(epoch: i16) -> i16 {
    epoch.saturating_add(1)
}

/// The epoch an open transaction is aborted at when it is fenced (by InitProducerId or its
/// timeout): one above the current, so the fenced producer's next request is refused. Never
/// above `i16::MAX`: InitProducerId rotates the producer id before the epoch gets there.
pub fn fenced(epoch: i16) -> i16 {
    epoch.saturating_add(1)
}

/// KIP-360: whether an InitProducerId naming `expected` may go on with this id at all
/// (Kafka's `isValidProducerId`): the id was just created, or it names the current producer
/// id, or the previous one at an exhausted epoch (a retry of the rotation that replaced it).
pub fn may_resume(m: &TxnMetadata, expected: ProducerIdAndEpoch) -> bool {
    m.epoch == no_epoch || expected.producer_id == m.producer_id || (expected.producer_id == m.last_producer_id && exhausted(expected.epoch))
}

/// What InitProducerId does to an id with no transaction open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitEpoch {
    /// Keep the producer id; write `epoch`, remembering `last_epoch` for a retry.
    Bump { epoch: i16, last_epoch: i16 },
    /// A new producer id at epoch 0, remembering `last_epoch`.
    Rotate { last_epoch: i16 },
}

/// The epoch InitProducerId gives an id in Empty, CompleteCommit or CompleteAbort, after
/// [`may_resume`]. Without `expected`: one more (or a new producer id once exhausted). With it
/// (KIP-360): one more if it names the current epoch; the current one again if it names the
/// previous (a retry whose answer was lost); PRODUCER_FENCED otherwise.
pub fn on_init(m: &TxnMetadata, expected: Option<ProducerIdAndEpoch>) -> Result<InitEpoch, Code> {
    if exhausted(m.epoch) && expected.is_none_or(|e| e.epoch == m.epoch) {
        let last_epoch = if expected.is_some() { m.epoch } else { no_epoch };
        return Ok(InitEpoch::Rotate { last_epoch });
    }
    match expected {
        None => Ok(InitEpoch::Bump { epoch: m.epoch + 1, last_epoch: no_epoch }),
        Some(e) if m.epoch == no_epoch || e.epoch == m.epoch => Ok(InitEpoch::Bump { epoch: m.epoch + 1, last_epoch: m.epoch }),
        Some(e) if e.epoch == m.last_epoch => Ok(InitEpoch::Bump { epoch: m.epoch, last_epoch: m.last_epoch }),
        // Kafka throws here for an exhausted epoch (`prepareIncrementProducerEpoch`); the
        // request names neither epoch the id had, so it is a fenced producer either way.
        Some(_) => Err(Code::ProducerFenced),
    }
}
