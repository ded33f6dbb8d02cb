//! What goes into and comes out of a group call: the member as the coordinator knows it, a
//! JoinGroup's request and answer, answers given later through tickets, and why a group must
//! be stored. Plain data; the transitions are `state`'s.

use crate::kafka::Code;
use bytes::Bytes;

/// A request waiting for its answer; the coordinator hands them out.
pub type Ticket = u64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum State {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
    Dead,
}

impl State {
    /// Kafka's name, as DescribeGroups and ListGroups report it.
    pub fn name(self) -> &'static str {
        match self {
            State::Empty => "Empty",
            State::PreparingRebalance => "PreparingRebalance",
            State::CompletingRebalance => "CompletingRebalance",
            State::Stable => "Stable",
            State::Dead => "Dead",
        }
    }
}

/// One member as the coordinator knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub id: String,
    pub instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: u64,
    pub rebalance_timeout_ms: u64,
    /// The protocols it supports, in its order of preference, with their metadata.
    pub protocols: Vec<(String, Bytes)>,
    pub assignment: Bytes,
    /// Removed if no heartbeat comes before this (unless a request of its is waiting).
    pub expires_at: u64,
    /// Its JoinGroup waiting for the rebalance to complete.
    pub(super) join: Option<Ticket>,
    /// Its SyncGroup waiting for the leader's assignment to be stored.
    pub(super) sync: Option<Ticket>,
}

/// What a JoinGroup asks.
#[derive(Debug, Clone, Default)]
pub struct JoinRequest {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: u64,
    pub rebalance_timeout_ms: u64,
    pub protocol_type: String,
    pub protocols: Vec<(String, Bytes)>,
    /// v4+: an unknown member first gets its id with MEMBER_ID_REQUIRED (KIP-394).
    pub require_known_member_id: bool,
}

/// A JoinGroup's answer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct JoinAnswer {
    pub error: Option<Code>,
    pub generation: i32,
    pub protocol_type: Option<String>,
    pub protocol: Option<String>,
    pub leader: String,
    pub member_id: String,
    /// For the leader: every member's id, instance id and metadata for the chosen protocol.
    pub members: Vec<(String, Option<String>, Bytes)>,
    /// The leader need not assign again (a static leader replaced while Stable, KIP-814).
    pub skip_assignment: bool,
}

impl JoinAnswer {
    pub fn error(code: Code, member_id: &str) -> JoinAnswer {
        JoinAnswer { error: Some(code), generation: -1, member_id: member_id.to_string(), ..Default::default() }
    }
}

/// What a delayed request is answered with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Join(JoinAnswer),
    Sync(Result<Bytes, Code>),
    /// A write (commit, deletion) is replicated, or why not.
    Written(Result<(), Code>),
    /// A KIP-848 heartbeat (or a KIP-932 share heartbeat), once what it changed is replicated.
    Consumer(Result<HeartbeatAnswer, Code>),
    /// A share-partition's state, read or written (`share_state`), once replicated.
    ShareState(Result<Option<super::share_state::Stored>, Code>),
}

/// A ConsumerGroupHeartbeat's answer, topics by id as the wire has them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatAnswer {
    pub member_id: String,
    pub member_epoch: i32,
    /// Its partitions when they changed (None: as before).
    pub assignment: Option<super::consumer_records::TopicIdPartitions>,
    pub heartbeat_interval_ms: u64,
}

/// Why the group must be written to the offsets topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Store {
    /// The leader's assignment for this generation: effective once written.
    Assignment(i32),
    /// Membership changed without a rebalance (Empty, a static member replaced).
    Background,
}

/// What a call produced besides its direct answer.
#[derive(Debug, Default)]
pub struct Out {
    pub answers: Vec<(Ticket, Answer)>,
    pub store: Option<Store>,
}

/// Answered now, or later through the ticket the call was given.
#[derive(Debug, PartialEq, Eq)]
pub enum Reply<T> {
    Now(T),
    Later,
}

/// Kafka's translation of a failed offsets-topic write into what a group client understands.
pub(super) fn write_error(code: Code) -> Code {
    match code {
        Code::NotLeaderOrFollower | Code::KafkaStorageError | Code::UnknownTopicOrPartition | Code::NotCoordinator => Code::NotCoordinator,
        Code::NotEnoughReplicas | Code::NotEnoughReplicasAfterAppend | Code::RequestTimedOut | Code::CoordinatorNotAvailable => Code::CoordinatorNotAvailable,
        Code::MessageTooLarge | Code::RecordListTooLarge | Code::InvalidFetchSize => Code::InvalidCommitOffsetSize,
        other => other,
    }
}
