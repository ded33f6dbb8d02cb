//! Kafka's vocabulary, named once: error codes, the APIs and version ranges this broker serves,
//! the versions its own client and peer links send, and the small enumerations of the wire
//! (config sources). Every Kafka number in the crate comes from here; a bare `56` or `(3, 9)`
//! anywhere else is a bug in waiting. Lookups only: no decisions, no IO.

pub use kafka_protocol::error::ResponseError as Code;
pub use kafka_protocol::messages::ApiKey;

/// APIs and version ranges this broker serves (docs/protocol.md explains each bound). A lower
/// bound is never below what kafka-protocol decodes: advertising a version that cannot be
/// read would close the connection of a client that picked it.
pub const SERVED: &[(ApiKey, i16, i16)] = &[
    // Produce v10 answers a wrong leader's partitions with the leader to ask (KIP-951), v11 a
    // failed verification TRANSACTION_ABORTABLE (KIP-890); v12 (KIP-890 part 2's implicit add)
    // is Kafka 4.0's.
    (ApiKey::Produce, 3, 11),
    // Fetch v13 names topics by id (KIP-516), v15 a follower by its ReplicaState (KIP-903),
    // v16 answers a wrong leader's partitions with the leader to ask (KIP-951), v17 carries a
    // follower's directory id (KIP-853, ignored).
    (ApiKey::Fetch, 4, 17),
    // v7: -3, the largest timestamp (KIP-734); v8: -4, the earliest local offset (KIP-405);
    // v9: -5, the latest tiered offset (KIP-1005).
    (ApiKey::ListOffsets, 1, 9),
    (ApiKey::Metadata, 0, 12),
    // v4 lets a feature's oldest level be 0 (KAFKA-17011); this broker lists no features.
    (ApiKey::ApiVersions, 0, 4),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteTopics, 1, 6),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::DescribeConfigs, 1, 4),
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::DeleteRecords, 0, 2),
    // v5 of InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn (v4) and TxnOffsetCommit (v4)
    // only let the answer be TRANSACTION_ABORTABLE (KIP-890).
    (ApiKey::InitProducerId, 0, 5),
    (ApiKey::OffsetForLeaderEpoch, 2, 4),
    // The transaction coordinator (docs/transactions.md): AddPartitionsToTxn v0-3 from
    // clients, v4-5 a leader's verification (KIP-890 part 1); EndTxn v5 is KIP-890 part 2's (the epoch bumped at
    // every end, answered in the response) where `transaction.version` is 2.
    (ApiKey::AddPartitionsToTxn, 0, 5),
    (ApiKey::AddOffsetsToTxn, 0, 4),
    (ApiKey::EndTxn, 0, 5),
    (ApiKey::DescribeTransactions, 0, 0),
    (ApiKey::ListTransactions, 0, 1),
    // Transaction markers, from a coordinator or an operator's tool (docs/transactions.md).
    (ApiKey::WriteTxnMarkers, 1, 1),
    // KIP-664: the producers a leader knows, and their open transactions.
    (ApiKey::DescribeProducers, 0, 0),
    // Consumer groups, classic protocol (docs/groups.md). FindCoordinator v5 only lets the
    // answer be TRANSACTION_ABORTABLE; v6 adds KIP-932's share-partition keys (key type 2),
    // answered with their group's coordinator, which keeps share-partition states here.
    (ApiKey::FindCoordinator, 0, 6),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::OffsetCommit, 2, 9),
    (ApiKey::OffsetFetch, 1, 9),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::DescribeGroups, 0, 5),
    // KIP-848 consumer groups (group::consumer): v1 is KIP-1082's (members name themselves).
    (ApiKey::ConsumerGroupHeartbeat, 0, 1),
    (ApiKey::ConsumerGroupDescribe, 0, 1),
    // KIP-932 share groups (group::share, share::): v1 is Kafka 4.1's, the one clients send;
    // the state APIs are a share-partition leader's, to its group's coordinator.
    (ApiKey::ShareGroupHeartbeat, 1, 1),
    (ApiKey::ShareGroupDescribe, 1, 1),
    (ApiKey::ShareFetch, 1, 1),
    (ApiKey::ShareAcknowledge, 1, 1),
    (ApiKey::ReadShareGroupState, 0, 0),
    (ApiKey::WriteShareGroupState, 0, 0),
    // The share-group offsets admin APIs (group::share_offsets): v0, Kafka 4.1's (v1 of
    // DescribeShareGroupOffsets, KIP-1226's lag, is not in kafka-protocol 0.18).
    (ApiKey::DescribeShareGroupOffsets, 0, 0),
    (ApiKey::AlterShareGroupOffsets, 0, 0),
    (ApiKey::DeleteShareGroupOffsets, 0, 0),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::OffsetDelete, 0, 0),
    // Offsets committed inside a transaction (classic protocol; v5, KIP-890 part 2's, is Kafka 4.0's).
    (ApiKey::TxnOffsetCommit, 0, 4),
    // Broker to controller (see docs/replication.md).
    (ApiKey::ElectLeaders, 0, 2),
    // v3: each new ISR member's broker epoch (KIP-903).
    (ApiKey::AlterPartition, 2, 3),
    // BrokerRegistration v4 is v3 (KAFKA-17011's feature levels); BrokerHeartbeat v1 adds the
    // offline log directories (KIP-858), which a broker with one directory never sends.
    (ApiKey::BrokerRegistration, 0, 4),
    (ApiKey::BrokerHeartbeat, 0, 1),
    // A broker forwarding a controller request to the active controller (KIP-590).
    (ApiKey::Envelope, 0, 0),
    // SASL (security/, server/sasl.rs): v0's raw tokens or v1's SaslAuthenticate (KIP-152);
    // SaslAuthenticate v1+ carries the session lifetime (KIP-368; 0: no re-authentication).
    (ApiKey::SaslHandshake, 0, 1),
    (ApiKey::SaslAuthenticate, 0, 2),
    // KIP-554: users' SCRAM credentials in the metadata log (security/users.rs).
    (ApiKey::DescribeUserScramCredentials, 0, 0),
    (ApiKey::AlterUserScramCredentials, 0, 0),
    // ACLs in the metadata log, StandardAuthorizer's semantics (security/acl.rs); v0 bridged
    // (protocol::legacy).
    (ApiKey::DescribeAcls, 1, 3),
    (ApiKey::CreateAcls, 1, 3),
    (ApiKey::DeleteAcls, 1, 3),
    // What operators' tools ask (node/cluster_handlers.rs): the cluster's brokers (KIP-700),
    // this broker's log directory (KIP-113; v0 is gone from Kafka 4's schemas), the metadata
    // quorum as its leader sees it (KIP-595, KIP-853's nodes from v2).
    (ApiKey::DescribeCluster, 0, 2),
    (ApiKey::DescribeLogDirs, 1, 4),
    (ApiKey::DescribeQuorum, 0, 2),
    // Partition reassignment (KIP-455; v1: KIP-860's allow_replication_factor_change).
    (ApiKey::AlterPartitionReassignments, 0, 1),
    (ApiKey::ListPartitionReassignments, 0, 0),
    // A decommissioned broker leaves the cluster (KIP-500; `seedlog brokers unregister`).
    (ApiKey::UnregisterBroker, 0, 0),
    // Client quotas (KIP-546; enforced as KIP-13 and KIP-219: `throttle`).
    (ApiKey::DescribeClientQuotas, 0, 1),
    (ApiKey::AlterClientQuotas, 0, 1),
];

/// Calls macro `$m` with every served API whose answer has `throttle_time_ms`, as
/// `(ResponseKind variant, response type)` pairs: what a quota's throttle is written into
/// (`server::throttling`) and what Seedlog's client reads it from (`client::conn`), one list.
macro_rules! with_throttled_responses {
    ($m:ident) => {
        $m!(
            (Produce, ProduceResponse), (Fetch, FetchResponse), (ListOffsets, ListOffsetsResponse), (Metadata, MetadataResponse),
            (OffsetCommit, OffsetCommitResponse), (OffsetFetch, OffsetFetchResponse), (FindCoordinator, FindCoordinatorResponse),
            (JoinGroup, JoinGroupResponse), (Heartbeat, HeartbeatResponse), (LeaveGroup, LeaveGroupResponse), (SyncGroup, SyncGroupResponse),
            (DescribeGroups, DescribeGroupsResponse), (ListGroups, ListGroupsResponse), (ApiVersions, ApiVersionsResponse),
            (CreateTopics, CreateTopicsResponse), (DeleteTopics, DeleteTopicsResponse), (DeleteRecords, DeleteRecordsResponse),
            (InitProducerId, InitProducerIdResponse), (OffsetForLeaderEpoch, OffsetForLeaderEpochResponse),
            (AddPartitionsToTxn, AddPartitionsToTxnResponse), (AddOffsetsToTxn, AddOffsetsToTxnResponse), (EndTxn, EndTxnResponse),
            (TxnOffsetCommit, TxnOffsetCommitResponse), (DescribeAcls, DescribeAclsResponse), (CreateAcls, CreateAclsResponse),
            (DeleteAcls, DeleteAclsResponse), (DescribeConfigs, DescribeConfigsResponse), (AlterConfigs, AlterConfigsResponse),
            (DescribeLogDirs, DescribeLogDirsResponse), (CreatePartitions, CreatePartitionsResponse), (DeleteGroups, DeleteGroupsResponse),
            (ElectLeaders, ElectLeadersResponse), (IncrementalAlterConfigs, IncrementalAlterConfigsResponse),
            (AlterPartitionReassignments, AlterPartitionReassignmentsResponse), (ListPartitionReassignments, ListPartitionReassignmentsResponse),
            (OffsetDelete, OffsetDeleteResponse), (DescribeClientQuotas, DescribeClientQuotasResponse), (AlterClientQuotas, AlterClientQuotasResponse),
            (DescribeUserScramCredentials, DescribeUserScramCredentialsResponse), (AlterUserScramCredentials, AlterUserScramCredentialsResponse),
            (DescribeCluster, DescribeClusterResponse), (DescribeProducers, DescribeProducersResponse), (DescribeTransactions, DescribeTransactionsResponse),
            (ListTransactions, ListTransactionsResponse), (DescribeTopicPartitions, DescribeTopicPartitionsResponse), (UnregisterBroker, UnregisterBrokerResponse),
            (ConsumerGroupHeartbeat, ConsumerGroupHeartbeatResponse), (ConsumerGroupDescribe, ConsumerGroupDescribeResponse),
            (ShareGroupHeartbeat, ShareGroupHeartbeatResponse), (ShareGroupDescribe, ShareGroupDescribeResponse), (ShareFetch, ShareFetchResponse),
            (ShareAcknowledge, ShareAcknowledgeResponse), (DescribeShareGroupOffsets, DescribeShareGroupOffsetsResponse),
            (AlterShareGroupOffsets, AlterShareGroupOffsetsResponse), (DeleteShareGroupOffsets, DeleteShareGroupOffsetsResponse)
        )
    };
}
pub(crate) use with_throttled_responses;

/// Each API whose oldest versions Kafka 4.0 removed (KIP-896), with Kafka 3.9's oldest version:
/// the versions from it to the one below [`SERVED`]'s lower bound are bridged
/// (`protocol::legacy`), unless the broker answers as Kafka 4.0 does.
pub const REMOVED_IN_4: &[(ApiKey, i16)] = &[
    (ApiKey::Produce, 0),
    (ApiKey::Fetch, 0),
    (ApiKey::ListOffsets, 0),
    (ApiKey::OffsetCommit, 0),
    (ApiKey::OffsetFetch, 0),
    (ApiKey::CreateTopics, 0),
    (ApiKey::DeleteTopics, 0),
    (ApiKey::DescribeConfigs, 0),
    (ApiKey::OffsetForLeaderEpoch, 0),
    (ApiKey::WriteTxnMarkers, 0),
    (ApiKey::DescribeLogDirs, 0),
    (ApiKey::DescribeAcls, 0),
    (ApiKey::CreateAcls, 0),
    (ApiKey::DeleteAcls, 0),
];

/// The version range of `key` this broker serves, if it serves it.
pub fn served(key: ApiKey) -> Option<(i16, i16)> {
    SERVED.iter().find(|(k, _, _)| *k == key).map(|(_, lo, hi)| (*lo, *hi))
}

/// The newest version of `key` served (-1: not served), for `const` checks tying a layout
/// written by hand (the zero-copy Fetch writer, the quota's Fetch walk) to what is served.
pub const fn served_newest(key: ApiKey) -> i16 {
    let mut i = 0;
    while i < SERVED.len() {
        if SERVED[i].0 as i16 == key as i16 {
            return SERVED[i].2;
        }
        i += 1;
    }
    -1
}

/// The version this crate's client (workloads, admin) and the broker's peer links (controller
/// link, metadata follower, replica fetcher) send of each API: always one the broker serves.
pub const SENT: &[(ApiKey, i16)] = &[
    (ApiKey::Produce, 9),
    (ApiKey::Fetch, 12),
    (ApiKey::Metadata, 12),
    (ApiKey::CreateTopics, 5),
    (ApiKey::InitProducerId, 4),
    (ApiKey::OffsetForLeaderEpoch, 3),
    // A transaction coordinator's markers.
    (ApiKey::WriteTxnMarkers, 1),
    // The transactional producer (client::transactions): AddPartitionsToTxn's last client
    // version, EndTxn's KIP-890 one (a broker at transaction.version 1 answers it classically).
    (ApiKey::AddPartitionsToTxn, 3),
    (ApiKey::EndTxn, 5),
    // Its offsets (`send_offsets`): AddOffsetsToTxn, and TxnOffsetCommit with KIP-447's member
    // fields (left empty: a group id alone).
    (ApiKey::AddOffsetsToTxn, 3),
    (ApiKey::TxnOffsetCommit, 3),
    (ApiKey::AlterPartition, 3),
    (ApiKey::ListOffsets, 6),
    // The group consumer (client::group) and the operator's queries (client::groups_admin).
    (ApiKey::FindCoordinator, 4),
    (ApiKey::ListGroups, 5),
    (ApiKey::DescribeGroups, 5),
    (ApiKey::ConsumerGroupDescribe, 1),
    (ApiKey::ShareGroupDescribe, 1),
    // `seedlog groups` on a share group's offsets.
    (ApiKey::DescribeShareGroupOffsets, 0),
    (ApiKey::AlterShareGroupOffsets, 0),
    (ApiKey::DeleteShareGroupOffsets, 0),
    // v0: the coordinator names a joining member (this client has no ids of its own).
    (ApiKey::ConsumerGroupHeartbeat, 0),
    // The share-group member (client::share).
    (ApiKey::ShareGroupHeartbeat, 1),
    (ApiKey::ShareFetch, 1),
    (ApiKey::ShareAcknowledge, 1),
    // A share-partition leader's state, at its group's coordinator.
    (ApiKey::ReadShareGroupState, 0),
    (ApiKey::WriteShareGroupState, 0),
    (ApiKey::JoinGroup, 9),
    (ApiKey::SyncGroup, 5),
    (ApiKey::Heartbeat, 4),
    (ApiKey::LeaveGroup, 5),
    // v8: batched groups; v9 carries KIP-848 member epochs this client does not use.
    (ApiKey::OffsetCommit, 8),
    (ApiKey::OffsetFetch, 8),
    // v3 carries KIP-966's previous broker epoch.
    (ApiKey::BrokerRegistration, 3),
    (ApiKey::BrokerHeartbeat, 0),
    (ApiKey::Envelope, 0),
    // A broker authenticating to another on a SASL listener (client::Conn::authenticate).
    (ApiKey::SaslHandshake, 1),
    (ApiKey::SaslAuthenticate, 2),
    // `seedlog users` and `seedlog acls`.
    (ApiKey::DescribeUserScramCredentials, 0),
    (ApiKey::AlterUserScramCredentials, 0),
    (ApiKey::DescribeAcls, 3),
    (ApiKey::CreateAcls, 3),
    (ApiKey::DeleteAcls, 3),
    // `seedlog reassign` and `seedlog brokers`, and the simulator's admin.
    (ApiKey::AlterPartitionReassignments, 1),
    (ApiKey::ListPartitionReassignments, 0),
    (ApiKey::UnregisterBroker, 0),
    (ApiKey::IncrementalAlterConfigs, 1),
    // `seedlog configs` for quotas.
    (ApiKey::DescribeClientQuotas, 1),
    (ApiKey::AlterClientQuotas, 1),
];

/// The version sent of the API with key `key` (a `Request::KEY`); `None` for an API this crate
/// never sends.
pub fn sent(key: i16) -> Option<i16> {
    SENT.iter().find(|(k, _)| *k as i16 == key).map(|(_, v)| *v)
}

/// The error a response's `error_code` names: `None` for 0 (no error); a code this crate does
/// not know is `Code::Unknown(n)`.
pub fn error(code: i16) -> Option<Code> {
    Code::try_from_code(code)
}

/// FindCoordinator key types.
pub mod coordinator_type {
    pub const group: i8 = 0;
    pub const transaction: i8 = 1;
    /// A share-partition, "group:topic id:partition" (KIP-932), from FindCoordinator v6.
    pub const share: i8 = 2;
}

/// The transaction protocol a transaction ends under (Kafka's `transaction.version` feature,
/// docs/transactions.md section 4): the classic one (Kafka's 0 and 1, which differ only in the
/// state record's format), or KIP-890 part 2's, where every end bumps the producer epoch and a
/// marker must carry an epoch above the one its partition's open transaction was written at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum TxnVersion {
    /// `transaction.version` 1.
    Classic,
    /// `transaction.version` 2, the default: KIP-890's defence.
    #[default]
    EpochBump,
}

impl TxnVersion {
    /// The feature level.
    pub fn level(self) -> i8 {
        match self {
            TxnVersion::Classic => 1,
            TxnVersion::EpochBump => 2,
        }
    }

    /// The version of feature level `level` (0 is the classic protocol too).
    pub fn from_level(level: i64) -> Option<TxnVersion> {
        match level {
            0 | 1 => Some(TxnVersion::Classic),
            2 => Some(TxnVersion::EpochBump),
            _ => None,
        }
    }

    /// The protocol a client asks for with EndTxn `version`: v5 is KIP-890's.
    pub fn of_end_txn(version: i16) -> TxnVersion {
        if version >= 5 { TxnVersion::EpochBump } else { TxnVersion::Classic }
    }
}

/// The tag of a WriteTxnMarkers v1 marker's tagged field that carries its transaction version
/// (one byte, [`TxnVersion::level`]). KIP-1228 (Kafka 4.2) adds it as a plain field of v2, which
/// kafka-protocol 0.18 cannot decode; until it can, this broker's coordinators send it as a
/// tagged field of v1, which any other broker ignores. A marker without it is classic.
pub const marker_txn_version_tag: i32 = 0;

/// Config resource types (Kafka's ConfigResource.Type) in DescribeConfigs, AlterConfigs and
/// IncrementalAlterConfigs.
pub mod config_resource {
    pub const topic: i8 = 2;
    pub const broker: i8 = 4;
    /// A group's dynamic configs (KIP-848, KIP-932), named by the group id.
    pub const group: i8 = 32;
}

/// IncrementalAlterConfigs operations (KIP-339's AlterConfigOp.OpType).
pub mod config_op {
    pub const set: i8 = 0;
    /// Back to the default: the override is removed.
    pub const delete: i8 = 1;
    /// Add to a list config (cleanup.policy), from its current value.
    pub const append: i8 = 2;
    /// Remove from a list config.
    pub const subtract: i8 = 3;
}

/// DescribeConfigs v3+ `config_type` values (KIP-569's ConfigEntry.ConfigType).
pub mod config_type {
    pub const boolean: i8 = 1;
    pub const string: i8 = 2;
    pub const int: i8 = 3;
    pub const long: i8 = 5;
    pub const double: i8 = 6;
    pub const list: i8 = 7;
}

/// DeleteRecords `offset` meaning "up to the high watermark".
pub const delete_records_to_high_watermark: i64 = -1;

/// DescribeConfigs `config_source` values (KIP-226).
pub mod config_source {
    /// Set on the topic (a topic-level override).
    pub const dynamic_topic: i8 = 1;
    /// A dynamic config of this broker (the metadata's, set while it runs).
    pub const dynamic_broker: i8 = 2;
    /// A dynamic config's cluster-wide default.
    pub const dynamic_default_broker: i8 = 3;
    /// The broker's static configuration (its flags or file).
    pub const static_broker: i8 = 4;
    /// The broker's default.
    pub const default: i8 = 5;
    /// Set on the group (Kafka's GROUP_CONFIG: a group's dynamic config).
    pub const dynamic_group: i8 = 8;
}

/// ListOffsets special timestamps.
pub mod list_offsets {
    /// The latest offset (for consumers: the high watermark).
    pub const latest: i64 = -1;
    /// The log start offset.
    pub const earliest: i64 = -2;
    /// KIP-734: the record with the largest timestamp, and that timestamp.
    pub const max_timestamp: i64 = -3;
    /// KIP-405: the start of the log on local disk (without tiered storage, the log start).
    pub const earliest_local: i64 = -4;
    /// KIP-1005: the last offset in tiered storage (without it, none: offset -1).
    pub const latest_tiered: i64 = -5;

    /// The first ListOffsets version that may ask for the special timestamp `target` (None:
    /// no such target); a timestamp of 0 or more is served by every version.
    pub fn first_version(target: i64) -> Option<i16> {
        match target {
            0.. | latest | earliest => Some(1),
            max_timestamp => Some(7),
            earliest_local => Some(8),
            latest_tiered => Some(9),
            _ => None,
        }
    }
}

/// The first versions with the behaviours this broker answers by version (each named once).
pub mod since {
    /// Produce answers NOT_LEADER_OR_FOLLOWER with the leader to ask (KIP-951).
    pub const produce_leader_hints: i16 = 10;
    /// Produce may answer TRANSACTION_ABORTABLE where a verification failed (KIP-890).
    pub const produce_transaction_abortable: i16 = 11;
    /// Fetch names topics by id (KIP-516).
    pub const fetch_topic_ids: i16 = 13;
    /// Fetch names a follower in ReplicaState, with its broker epoch (KIP-903).
    pub const fetch_replica_state: i16 = 15;
    /// Fetch answers NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH with the leader to ask
    /// (KIP-951).
    pub const fetch_leader_hints: i16 = 16;
    /// FindCoordinator takes share-partition keys ([`super::coordinator_type::share`], KIP-932).
    pub const find_coordinator_share: i16 = 6;
    // A metadata-log Fetch names its topic, which only versions before topic ids can: none
    // gets leader hints.
    const _: () = assert!(fetch_topic_ids <= fetch_leader_hints);
}

/// Fetch and ListOffsets isolation levels (KIP-98).
pub mod isolation {
    /// Read up to the last stable offset; aborted transactions are listed for the reader.
    pub const read_committed: i8 = 1;
}

/// The record batch format this broker reads and writes (v2, KIP-98); v0/v1 message sets are
/// converted at the protocol's edge for the versions that carry them (`protocol::message_set`).
pub const batch_magic: i8 = 2;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sent_version_is_served() {
        for (key, v) in SENT {
            let (lo, hi) = served(*key).unwrap_or_else(|| panic!("{key:?} is sent but not served"));
            assert!((lo..=hi).contains(v), "{key:?} v{v} outside {lo}..={hi}");
        }
    }

    #[test]
    fn names_are_the_wire_numbers() {
        assert_eq!(Code::KafkaStorageError.code(), 56);
        assert_eq!(Code::UnknownLeaderEpoch.code(), 75);
        assert_eq!(error(0), None);
        assert_eq!(error(6), Some(Code::NotLeaderOrFollower));
    }
}
