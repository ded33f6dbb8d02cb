//! A Rust Kafka client over the wire protocol: a connection that speaks request/response, a
//! producer (acks, retries, idempotence, leader discovery through Metadata), an assign-mode
//! consumer, and admin requests (topic creation; the operator's consumer-group queries). The
//! simulator's workloads use it, so simulated runs exercise the real request path; it is written
//! against tokio's API as madsim-tokio re-exports it and runs on both. It never reads the wall
//! clock for decisions: timeouts are tokio timers (simulated time under madsim) and record
//! timestamps are given by the caller.

pub mod admin;
pub mod assignor;
pub mod cluster;
pub mod conn;
pub mod consumer;
pub mod group;
mod group_config;
mod group_kip848;
pub mod groups_admin;
pub mod placement;
pub mod plan;
pub mod producer;
pub mod quotas;
pub mod share;
pub mod share_offsets;
pub mod transactions;

pub use conn::Conn;
pub use consumer::{Consumer, ConsumedRecord};
pub use group::{GroupConfig, GroupConsumer, GroupEvent, Polled};
pub use producer::{Producer, ProducerConfig};
pub use transactions::TransactionalProducer;

use crate::kafka::Code;
use crate::broker::producer::SequenceError;

impl ClientError {
    /// The error a response's non-zero `error_code` names.
    pub fn kafka(code: i16, message: impl Into<String>) -> ClientError {
        ClientError::Kafka { code: crate::kafka::error(code).unwrap_or(Code::Unknown(code)), message: message.into() }
    }
}

/// Why a client call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientError {
    /// The connection failed or closed; the request's outcome is unknown.
    #[error("connection to {addr}: {reason}")]
    Io { addr: String, reason: String },
    /// No answer within the request timeout; the outcome is unknown.
    #[error("request timed out after {0} ms")]
    Timeout(u64),
    /// The broker answered with a Kafka error code.
    #[error("broker error {}: {message}", code.code())]
    Kafka { code: Code, message: String },
    /// The response did not decode, or did not answer what was asked.
    #[error("protocol: {0}")]
    Protocol(String),
    /// The batch failed with another's failure (an earlier batch of its partition), but an
    /// attempt of its own may have been appended; the outcome is unknown.
    #[error("outcome unknown: {0}")]
    Ambiguous(String),
    /// Retries ended in this definite error, but an earlier attempt may have been appended, so
    /// the outcome is unknown. Kept whole: a refusal of a retry's sequence number is the broker
    /// saying it cannot place a batch it may hold ([`ClientError::sequence_refused`]).
    #[error("outcome unknown: an earlier attempt may have been appended; last error: {0}")]
    RefusedRetry(Box<ClientError>),
}

impl ClientError {
    /// Whether the request may not have taken effect, and may have (a retry can duplicate
    /// unless the producer is idempotent).
    pub fn outcome_unknown(&self) -> bool {
        // KAFKA_STORAGE_ERROR: the write may have reached the log before its flush failed.
        // REQUEST_TIMED_OUT and NOT_ENOUGH_REPLICAS_AFTER_APPEND: appended, not yet replicated.
        // NOT_LEADER_OR_FOLLOWER: also what an acks=all produce gets when the leadership it was
        // appended under ends while it waits, so the batch may survive.
        // NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE: what a group coordinator answers an
        // OffsetCommit whose write failed in one of those ways (Kafka's translation,
        // docs/groups.md), so the commit may survive the coordinator's move all the same.
        matches!(self, ClientError::Io { .. } | ClientError::Timeout(_) | ClientError::Ambiguous(_) | ClientError::RefusedRetry(_) | ClientError::Kafka { code: Code::NotLeaderOrFollower | Code::RequestTimedOut | Code::NotEnoughReplicasAfterAppend | Code::KafkaStorageError | Code::NotCoordinator | Code::CoordinatorNotAvailable, .. })
    }

    /// Codes after which the producer's id/epoch/sequence state is no good with this broker:
    /// OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH, UNKNOWN_PRODUCER_ID.
    pub fn producer_state_lost(&self) -> bool {
        matches!(self, ClientError::Kafka { code: Code::OutOfOrderSequenceNumber | Code::InvalidProducerEpoch | Code::UnknownProducerId, .. })
    }

    /// A retry refused for its sequence number (OUT_OF_ORDER_SEQUENCE_NUMBER, or
    /// DUPLICATE_SEQUENCE_NUMBER as brokers before 2.0 answered) after an attempt that may have
    /// been appended, by a broker that had moved past it. With at most five batches in flight a
    /// retry repeats one of the producer's last five batches of its partition, which the broker
    /// remembers (Kafka's ProducerStateManager): if that attempt was appended, the answer must
    /// be its offsets. A refusal for a gap (the broker names an earlier sequence it expected,
    /// `SequenceError::is_behind` false) is not one: that broker lacks the batches before this
    /// one — a leader deposed without knowing it, whose successor may hold the earlier attempt —
    /// so it says nothing of where that attempt went (replicated-fsync seed 63093).
    pub fn sequence_refused(&self) -> bool {
        let ClientError::RefusedRetry(last) = self else { return false };
        match &**last {
            ClientError::Kafka { code: Code::DuplicateSequenceNumber, .. } => true,
            ClientError::Kafka { code: Code::OutOfOrderSequenceNumber, message } => SequenceError::out_of_order_in(message).is_none_or(|e| e.is_behind()),
            _ => false,
        }
    }

    /// Kafka codes worth retrying: the leader moved or is not ready, or a transient storage or
    /// replication condition.
    pub fn retriable(&self) -> bool {
        match self {
            ClientError::Io { .. } | ClientError::Timeout(_) => true,
            // UNKNOWN_TOPIC_OR_PARTITION: the client's metadata may be stale.
            ClientError::Kafka { code, .. } => matches!(
                code,
                Code::UnknownTopicOrPartition
                    | Code::LeaderNotAvailable
                    | Code::NotLeaderOrFollower
                    | Code::RequestTimedOut
                    | Code::NotEnoughReplicas
                    | Code::NotEnoughReplicasAfterAppend
                    | Code::KafkaStorageError
            ),
            ClientError::Protocol(_) | ClientError::Ambiguous(_) | ClientError::RefusedRetry(_) => false,
        }
    }
}
