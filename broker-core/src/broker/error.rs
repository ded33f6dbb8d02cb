//! What the broker refuses, and the Kafka error each refusal is answered with: the one table
//! from broker outcomes to [`Code`]s (the controller's and the replication state's refusals
//! have their own, next to their decisions).

use super::producer::{MarkerError, SequenceError};
use crate::kafka::Code;
use crate::log::{BatchError, LogError};
use crate::replication::FetchRefusal;

/// A refused operation, carrying the Kafka error code it is answered with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// UNKNOWN_TOPIC_OR_PARTITION (3)
    #[error("unknown topic or partition")]
    UnknownTopicOrPartition,
    /// LEADER_NOT_AVAILABLE (5): the partition has no leader right now (election, creation).
    #[error("the partition has no leader right now")]
    LeaderNotAvailable,
    /// NOT_LEADER_OR_FOLLOWER (6): this broker does not lead the partition.
    #[error("this broker is not the partition's leader")]
    NotLeaderOrFollower,
    /// FENCED_LEADER_EPOCH (74) / UNKNOWN_LEADER_EPOCH (75): the request's leader epoch is
    /// older / newer than this leader's.
    #[error("{0}")]
    Epoch(FetchRefusal),
    /// INVALID_TOPIC_EXCEPTION (17)
    #[error("{0}")]
    InvalidTopic(String),
    /// INVALID_CONFIG (40)
    #[error("{0}")]
    InvalidConfig(String),
    /// INVALID_REQUIRED_ACKS (21)
    #[error("acks={0} is not one of -1, 0, 1")]
    InvalidRequiredAcks(i16),
    /// OFFSET_OUT_OF_RANGE (1)
    #[error("offset {requested} is outside [{start}, {end}]")]
    OffsetOutOfRange { requested: i64, start: i64, end: i64 },
    /// The batch failed validation; code per [`BatchError`].
    #[error("{0}")]
    Batch(#[from] BatchError),
    /// INVALID_PRODUCER_EPOCH (47) / OUT_OF_ORDER_SEQUENCE_NUMBER (45)
    #[error("{0}")]
    Sequence(#[from] SequenceError),
    /// INVALID_PRODUCER_EPOCH (47) / TRANSACTION_COORDINATOR_FENCED (52): a refused marker.
    #[error("{0}")]
    Marker(#[from] MarkerError),
    /// KAFKA_STORAGE_ERROR (56): disk full, IO error, corrupt or offline log.
    #[error("storage: {0}")]
    Storage(String),
    /// NOT_ENOUGH_REPLICAS (19): acks=all while the ISR is smaller than min.insync.replicas.
    #[error("in-sync replicas {isr} < min.insync.replicas {min}")]
    NotEnoughReplicas { isr: i32, min: i32 },
    /// NOT_ENOUGH_REPLICAS_AFTER_APPEND (20): appended, but the ISR shrank below
    /// min.insync.replicas before the batch was replicated.
    #[error("appended, but in-sync replicas {isr} < min.insync.replicas {min}")]
    NotEnoughReplicasAfterAppend { isr: i32, min: i32 },
    /// OFFSET_NOT_AVAILABLE (78): a new leader's high watermark has not reached the start of
    /// its epoch yet (KIP-207); the client retries.
    #[error("the leader's high watermark is not yet known in this leader epoch")]
    OffsetNotAvailable,
    /// REQUEST_TIMED_OUT (7): acks=all and the ISR did not replicate within the timeout.
    #[error("not replicated to the in-sync replicas within {0} ms")]
    RequestTimedOut(u64),
    /// POLICY_VIOLATION (44): DeleteRecords on a topic whose cleanup.policy lacks `delete`.
    #[error("{0}")]
    PolicyViolation(String),
    /// TRANSACTIONAL_ID_AUTHORIZATION_FAILED (53): transactional batches in a produce that names
    /// no transactional id (Kafka's answer: no id, so no authorization for one).
    #[error("transactional batches need the producer's transactional id")]
    TransactionalIdMissing,
    /// KIP-890 part 1: the transaction coordinator answered `0` to this leader's verification
    /// of a producer's first transactional write here. INVALID_TXN_STATE (the partition is in
    /// no open transaction of the producer: the write would open one nobody ends) and a fenced
    /// producer (INVALID_PRODUCER_EPOCH) are the client's; a coordinator moving, loading,
    /// busy or out of reach is NOT_ENOUGH_REPLICAS, which every client retries (as Kafka
    /// answers clients before Produce v11, which have no TRANSACTION_ABORTABLE).
    #[error("the transaction coordinator did not verify this partition in the producer's transaction ({0:?})")]
    TxnUnverified(Code),
    /// NOT_ENOUGH_REPLICAS (19), retriable: a producer's first transactional write here whose
    /// verification is still owed (a marker came between the coordinator's answer and the
    /// append); the retry asks the coordinator again.
    #[error("the producer's transaction here is not verified yet")]
    TxnVerificationOwed,
    /// COORDINATOR_LOAD_IN_PROGRESS (14), retriable: this node's block of producer ids is used
    /// up and the next is not durable yet (Kafka's producer-id manager answers so while it
    /// waits for its next block).
    #[error("the next block of producer ids is not persisted yet")]
    ProducerIdsPending,
    /// UNSUPPORTED_VERSION (35): a ListOffsets special timestamp newer than the request's
    /// version (-3 before v7, -4 before v8, -5 before v9), or no such timestamp.
    #[error("this timestamp is not a ListOffsets target at the request's version")]
    UnsupportedVersion,
    /// An authorization failure (TOPIC_AUTHORIZATION_FAILED, TRANSACTIONAL_ID_AUTHORIZATION_FAILED):
    /// the code and who may not do what (`node::authz`).
    #[error("{1}")]
    NotAuthorized(Code, String),
}

impl Error {
    /// The Kafka error code. `modern` is false for request versions older than the one that
    /// introduced INVALID_RECORD, which then get CORRUPT_MESSAGE.
    pub fn kafka_error(&self, modern: bool) -> Code {
        match self {
            Error::UnknownTopicOrPartition => Code::UnknownTopicOrPartition,
            Error::LeaderNotAvailable => Code::LeaderNotAvailable,
            Error::NotLeaderOrFollower => Code::NotLeaderOrFollower,
            Error::Epoch(r) => r.kafka_error(),
            Error::InvalidTopic(_) => Code::InvalidTopicException,
            Error::InvalidConfig(_) => Code::InvalidConfig,
            Error::InvalidRequiredAcks(_) => Code::InvalidRequiredAcks,
            Error::OffsetOutOfRange { .. } => Code::OffsetOutOfRange,
            Error::Batch(BatchError::TooLarge { .. }) => Code::MessageTooLarge,
            Error::Batch(BatchError::UnsupportedMagic(_)) => Code::UnsupportedForMessageFormat,
            Error::Batch(BatchError::UnsupportedCompression(_)) => Code::UnsupportedCompressionType,
            Error::Batch(BatchError::BadRecordCount { .. } | BatchError::BadRecords(_)) if modern => Code::InvalidRecord,
            Error::Batch(_) => Code::CorruptMessage,
            Error::Sequence(SequenceError::StaleEpoch { .. }) => Code::InvalidProducerEpoch,
            Error::Sequence(SequenceError::OutOfOrder { .. }) => Code::OutOfOrderSequenceNumber,
            Error::Sequence(SequenceError::TransactionOpen(_)) => Code::InvalidTxnState,
            Error::Sequence(SequenceError::TransactionalWithoutProducer) if modern => Code::InvalidRecord,
            Error::Sequence(SequenceError::TransactionalWithoutProducer) => Code::CorruptMessage,
            Error::Marker(MarkerError::StaleEpoch { .. } | MarkerError::SameEpochOpen(_)) => Code::InvalidProducerEpoch,
            Error::Marker(MarkerError::CoordinatorFenced { .. }) => Code::TransactionCoordinatorFenced,
            Error::Storage(_) => Code::KafkaStorageError,
            Error::NotEnoughReplicas { .. } => Code::NotEnoughReplicas,
            Error::NotEnoughReplicasAfterAppend { .. } => Code::NotEnoughReplicasAfterAppend,
            Error::RequestTimedOut(_) => Code::RequestTimedOut,
            Error::OffsetNotAvailable => Code::OffsetNotAvailable,
            Error::PolicyViolation(_) => Code::PolicyViolation,
            Error::TransactionalIdMissing => Code::TransactionalIdAuthorizationFailed,
            // A coordinator answers a partition outside the producer's transaction
            // TRANSACTION_ABORTABLE (Kafka's, at AddPartitionsToTxn v4 and v5): a producer
            // before Produce v11 is told INVALID_TXN_STATE, as Kafka's leaders convert it
            // (v11+ is told it as it is: `node::handlers::produce`).
            Error::TxnUnverified(Code::InvalidTxnState | Code::TransactionAbortable) => Code::InvalidTxnState,
            Error::TxnUnverified(Code::ProducerFenced | Code::InvalidProducerEpoch) => Code::InvalidProducerEpoch,
            Error::TxnUnverified(Code::InvalidProducerIdMapping) => Code::InvalidProducerIdMapping,
            Error::TxnUnverified(_) | Error::TxnVerificationOwed => Code::NotEnoughReplicas,
            Error::UnsupportedVersion => Code::UnsupportedVersion,
            Error::ProducerIdsPending => Code::CoordinatorLoadInProgress,
            Error::NotAuthorized(code, _) => *code,
        }
    }
}

impl From<LogError> for Error {
    fn from(e: LogError) -> Self {
        match e {
            LogError::InvalidBatch(b) => Error::Batch(b),
            LogError::OffsetOutOfRange { requested, start, end } => Error::OffsetOutOfRange { requested, start, end },
            LogError::Config(c) => Error::InvalidConfig(c),
            other => Error::Storage(other.to_string()),
        }
    }
}
