//! The cluster metadata as a log of records: what the controller commits to the metadata log
//! (a Raft log over the controller quorum's voters) and what every broker
//! replays into its [`super::Image`]. Encoding only: no IO, no clock.

use bytes::Bytes;
use kafka_protocol::records::RecordBatchDecoder;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// No leader: the partition is offline until an eligible replica is unfenced.
pub const no_leader: i32 = -1;

/// One change to the cluster metadata. Partition records carry the whole state of the
/// partition after the change (not a delta), so replay never depends on arithmetic over
/// earlier records and a reader can take any one of them at face value.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(tag = "type")]
pub enum MetadataRecord {
    /// Registers a broker, or re-registers it with a new epoch. Always fenced until it has
    /// caught up with the metadata log (KRaft's RegisterBrokerRecord). The epoch is the
    /// offset of this very record, so it is unique and increasing. `host:port` is the
    /// endpoint of the inter-broker listener; `listeners` names every listener's endpoint when
    /// the broker has more than one (`advertised.listeners`), and is left out of the JSON when
    /// empty, so a one-listener registration is exactly the bytes it was before.
    RegisterBroker {
        id: i32,
        epoch: i64,
        host: String,
        port: i32,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        listeners: Vec<Endpoint>,
    },
    /// The broker stops being eligible for leadership and ISR membership.
    FenceBroker { id: i32, epoch: i64 },
    /// The registration `epoch` of broker `id` is removed (UnregisterBroker: a decommissioned
    /// broker leaves the cluster). Partitions still naming it as a replica keep it there,
    /// offline, until they are reassigned; a registration under another epoch is left alone.
    UnregisterBroker { id: i32, epoch: i64 },
    /// The broker is eligible again.
    UnfenceBroker { id: i32, epoch: i64 },
    /// Creates a topic with `partitions` partitions; each one's state follows as a
    /// [`MetadataRecord::Partition`] record in the same batch.
    Topic { name: String, id: String, partitions: i32, config: BTreeMap<String, String> },
    /// The full state of one partition after a change. `leader` is [`no_leader`] for none.
    /// `elr` and `last_known_elr` are KIP-966's eligible leader replicas (only with
    /// `eligible.leader.replicas.enable`): left out of the JSON when empty, so a record without
    /// them is exactly the bytes it was before KIP-966, and an old log decodes with them empty.
    Partition {
        topic: String,
        partition: i32,
        replicas: Vec<i32>,
        isr: Vec<i32>,
        leader: i32,
        leader_epoch: i32,
        partition_epoch: i32,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        elr: Vec<i32>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        last_known_elr: Vec<i32>,
        /// A reassignment in progress (`PartitionInfo::adding`, `removing`): left out when
        /// empty, as the ELR fields are.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        adding: Vec<i32>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        removing: Vec<i32>,
    },
    /// Deletes a topic and all its partitions.
    RemoveTopic { name: String },
    /// A topic's config overrides after a change (AlterConfigs, IncrementalAlterConfigs): the
    /// whole set, replacing the one before (never a delta, like `Partition`). A key left out is
    /// back at the broker's default.
    TopicConfig { name: String, config: BTreeMap<String, String> },
    /// A user's SCRAM credential for one mechanism, replacing any before (Kafka's
    /// UserScramCredentialRecord): salt, stored and server keys, iterations; never a password.
    ScramCredential { user: String, credential: crate::security::scram::Credential },
    /// Removes a user's credential for one mechanism (RemoveUserScramCredentialRecord).
    RemoveScramCredential { user: String, mechanism: crate::security::scram::Mechanism },
    /// An ACL (Kafka's AccessControlEntryRecord; an ACL is its content, so it needs no id).
    Acl { acl: crate::security::acl::Acl },
    /// Removes an ACL (RemoveAccessControlEntryRecord).
    RemoveAcl { acl: crate::security::acl::Acl },
    /// A broker's dynamic configs after a change (`broker` -1: the cluster's default), the
    /// whole set replacing the one before, as `TopicConfig` (`throttles`).
    BrokerConfig { broker: i32, config: BTreeMap<String, String> },
    /// A group's dynamic configs after a change (Kafka's ConfigRecord for a GROUP resource,
    /// `group_configs`): the whole set replacing the one before, as `TopicConfig`; an empty set
    /// leaves the group with none. The group need not exist.
    GroupConfig { group: String, config: BTreeMap<String, String> },
    /// One quota value of an entity (Kafka's ClientQuotaRecord): set, or removed (`value`
    /// None). An entity with no value left is gone.
    ClientQuota { entity: super::quotas::Entity, key: String, #[serde(default, skip_serializing_if = "Option::is_none")] value: Option<super::quotas::Value> },
    /// The first entry of every Raft leader's epoch (KRaft's LeaderChange control record,
    /// written by `controller::raft`): it changes nothing in the image, but takes an offset.
    LeaderChange { leader: i32, epoch: i32 },
}

/// Where clients of one named listener reach a broker (an entry of `advertised.listeners`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub name: String,
    pub host: String,
    pub port: i32,
}

impl MetadataRecord {
    /// JSON: readable in a hex dump and in traces; the metadata log is small and rarely written.
    pub fn encode(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a MetadataRecord has only string map keys, so it always encodes")
    }

    pub fn decode(bytes: &[u8]) -> Result<MetadataRecord, String> {
        serde_json::from_slice(bytes).map_err(|e| e.to_string())
    }
}

/// Decodes the metadata records in `bytes` (whole batches of the metadata log), with their offsets.
pub fn decode_records(bytes: &Bytes) -> Result<Vec<(i64, MetadataRecord)>, String> {
    let mut buf = bytes.clone();
    let mut out = Vec::new();
    while !buf.is_empty() {
        let set = RecordBatchDecoder::decode(&mut buf).map_err(|e| format!("metadata batch: {e}"))?;
        for r in set.records {
            let value = r.value.ok_or_else(|| format!("metadata record at {} has no value", r.offset))?;
            out.push((r.offset, MetadataRecord::decode(&value)?));
        }
    }
    Ok(out)
}
