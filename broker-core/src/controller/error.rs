//! Why the controller refuses a request: one variant per refusal, each carrying the Kafka
//! error code it is answered with.

use crate::kafka::Code;

/// A refused request, carrying the Kafka error code it is answered with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// STALE_BROKER_EPOCH (77): the broker has registered again since this epoch.
    #[error("broker {id} has epoch {current}, not {given}")]
    StaleBrokerEpoch { id: i32, given: i64, current: i64 },
    /// STALE_BROKER_EPOCH (77) too, as Kafka answers it (ClusterControlManager.checkBrokerEpoch):
    /// no registration for this id, so the broker should register. (BROKER_ID_NOT_REGISTERED,
    /// 102, is what Kafka uses for UnregisterBroker and DescribeConfigs, not for heartbeats.)
    #[error("broker {0} is not registered")]
    UnknownBroker(i32),
    /// UNKNOWN_TOPIC_OR_PARTITION (3)
    #[error("unknown topic or partition {0}")]
    UnknownTopicOrPartition(String),
    /// INVALID_TOPIC_EXCEPTION (17)
    #[error("{0}")]
    InvalidTopic(String),
    /// TOPIC_ALREADY_EXISTS (36)
    #[error("topic '{0}' already exists")]
    TopicAlreadyExists(String),
    /// INVALID_PARTITIONS (37)
    #[error("{0}")]
    InvalidPartitions(String),
    /// INVALID_REPLICATION_FACTOR (38)
    #[error("{0}")]
    InvalidReplicationFactor(String),
    /// INVALID_CONFIG (40)
    #[error("{0}")]
    InvalidConfig(String),
    /// NOT_CONTROLLER (41): the request carries a newer leader or partition epoch than this
    /// controller's image, so a newer controller has decided since (Kafka's answer, so the
    /// broker goes looking for it).
    #[error("{0}")]
    NotController(String),
    /// INVALID_REQUEST (42): a malformed request (bad ISR, bad registration).
    #[error("{0}")]
    InvalidRequest(String),
    /// INVALID_REQUEST (42) as Kafka answers it: AlterPartition from a broker that is not the
    /// leader at the current leader epoch. A deposed leader has an older epoch and gets
    /// FENCED_LEADER_EPOCH first, so only a confused broker gets here.
    #[error("broker {broker} is not the leader of {partition} (the leader is {leader})")]
    NotLeader { broker: i32, partition: String, leader: i32 },
    /// FENCED_LEADER_EPOCH (74): the requester's leader epoch is older than the partition's.
    #[error("leader epoch {given} is older than the current {current}")]
    FencedLeaderEpoch { given: i32, current: i32 },
    /// INVALID_UPDATE_VERSION (95): the requester's partition epoch is older than the current.
    #[error("partition epoch {given} is older than the current {current}")]
    InvalidUpdateVersion { given: i32, current: i32 },
    /// INELIGIBLE_REPLICA (107): the new ISR names a fenced or unregistered broker.
    #[error("{0}")]
    IneligibleReplica(String),
    /// INVALID_REPLICA_ASSIGNMENT (39): a reassignment's target is empty, names a broker twice
    /// or one that is not registered, or cancelling it would empty the ISR.
    #[error("{0}")]
    InvalidReplicaAssignment(String),
    /// BROKER_ID_NOT_REGISTERED (102): UnregisterBroker for an id with no registration.
    #[error("broker {0} is not registered")]
    BrokerIdNotRegistered(i32),
    /// NO_REASSIGNMENT_IN_PROGRESS (85): a cancel for a partition that is not being reassigned.
    #[error("no reassignment of {0} is in progress")]
    NoReassignmentInProgress(String),
}

impl Error {
    /// The Kafka error code.
    pub fn kafka_error(&self) -> Code {
        match self {
            Error::StaleBrokerEpoch { .. } | Error::UnknownBroker(_) => Code::StaleBrokerEpoch,
            Error::UnknownTopicOrPartition(_) => Code::UnknownTopicOrPartition,
            Error::InvalidTopic(_) => Code::InvalidTopicException,
            Error::TopicAlreadyExists(_) => Code::TopicAlreadyExists,
            Error::InvalidPartitions(_) => Code::InvalidPartitions,
            Error::InvalidReplicationFactor(_) => Code::InvalidReplicationFactor,
            Error::InvalidConfig(_) => Code::InvalidConfig,
            Error::NotController(_) => Code::NotController,
            Error::InvalidRequest(_) | Error::NotLeader { .. } => Code::InvalidRequest,
            Error::FencedLeaderEpoch { .. } => Code::FencedLeaderEpoch,
            Error::InvalidUpdateVersion { .. } => Code::InvalidUpdateVersion,
            Error::IneligibleReplica(_) => Code::IneligibleReplica,
            Error::InvalidReplicaAssignment(_) => Code::InvalidReplicaAssignment,
            Error::NoReassignmentInProgress(_) => Code::NoReassignmentInProgress,
            Error::BrokerIdNotRegistered(_) => Code::BrokerIdNotRegistered,
        }
    }
}

