//! A group consumer's settings, and what it tells its caller: Kafka's consumer configuration
//! (`group.protocol` choosing the classic protocol or KIP-848's), the events of its partitions
//! stamped with when they happened, and what one poll returned. Plain data.

use super::assignor::{Assignor, TopicPartitions};
use super::consumer::ConsumedRecord;
use super::ClientError;
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::time::Instant;

/// Where a partition with no committed offset starts (`auto.offset.reset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reset {
    Earliest,
    Latest,
}

/// `group.protocol`: how the member takes part in its group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupProtocol {
    /// JoinGroup, SyncGroup and Heartbeat; the group's leader member assigns.
    Classic,
    /// KIP-848: ConsumerGroupHeartbeat; the coordinator assigns with the named server assignor
    /// (`group.remote.assignor`; None: the group's default).
    Consumer { assignor: Option<String> },
}

/// A group consumer's settings (Kafka's consumer config names in the docs).
#[derive(Debug, Clone)]
pub struct GroupConfig {
    /// `group.id`
    pub group_id: String,
    /// `client.id`
    pub client_id: String,
    /// `group.instance.id`: a static member (KIP-345); it does not leave the group on close.
    pub instance_id: Option<String>,
    /// `session.timeout.ms`
    pub session_timeout_ms: i32,
    /// `max.poll.interval.ms`, sent as the rebalance timeout.
    pub rebalance_timeout_ms: i32,
    /// `heartbeat.interval.ms`
    pub heartbeat_interval_ms: u64,
    /// `partition.assignment.strategy`, in order of preference.
    pub assignors: Vec<Assignor>,
    /// `enable.auto.commit`
    pub auto_commit: bool,
    /// `auto.commit.interval.ms`
    pub auto_commit_interval_ms: u64,
    /// `auto.offset.reset`
    pub reset: Reset,
    /// `request.timeout.ms` for every request but JoinGroup (which waits a rebalance).
    pub request_timeout: Duration,
    /// `group.protocol` (`session.timeout.ms`, `heartbeat.interval.ms` and the assignors are
    /// the classic protocol's: under KIP-848 the coordinator sets them).
    pub protocol: GroupProtocol,
}

impl GroupConfig {
    /// Kafka's consumer defaults for `group_id`.
    pub fn new(group_id: &str, client_id: &str) -> GroupConfig {
        GroupConfig {
            group_id: group_id.into(),
            client_id: client_id.into(),
            instance_id: None,
            session_timeout_ms: 45_000,
            rebalance_timeout_ms: 300_000,
            heartbeat_interval_ms: 3_000,
            assignors: vec![Assignor::Range, Assignor::CooperativeSticky],
            auto_commit: true,
            auto_commit_interval_ms: 5_000,
            reset: Reset::Latest,
            request_timeout: Duration::from_secs(30),
            protocol: GroupProtocol::Classic,
        }
    }
}

/// What happened to the member's partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupEvent {
    /// Joined generation `generation` as `member_id` (the leader if `leader`).
    Joined { generation: i32, member_id: String, leader: bool, protocol: String },
    /// Partitions handed to this member, and where each starts (its committed offset, or the
    /// `auto.offset.reset` point).
    Assigned { partitions: TopicPartitions, starts: BTreeMap<(String, i32), i64> },
    /// Partitions given up in an orderly way (their progress was committed first when
    /// auto-commit is on).
    Revoked(TopicPartitions),
    /// Partitions taken away without notice (the member was fenced or timed out): another member
    /// may already own them.
    Lost(TopicPartitions),
    /// Offsets committed and acknowledged: partition → offset.
    Committed(BTreeMap<(String, i32), i64>),
}

/// A member's identity in the group at one moment (Kafka's `ConsumerGroupMetadata`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMetadata {
    pub member_id: String,
    pub generation: i32,
    pub instance_id: Option<String>,
}

/// A [`GroupEvent`] and the moment (tokio's clock: simulated under madsim) it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamped {
    pub at: Instant,
    pub event: GroupEvent,
}

pub(super) fn stamp(event: GroupEvent) -> Stamped {
    Stamped { at: Instant::now(), event }
}

/// What one poll returned: records, group events, and the error that cut it short, if any.
#[derive(Debug, Default)]
pub struct Polled {
    pub records: Vec<ConsumedRecord>,
    pub events: Vec<Stamped>,
    pub error: Option<ClientError>,
}
