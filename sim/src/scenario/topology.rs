//! The scenario's topology: how many brokers, the settings every broker runs with, and the
//! topics (partitions, replication factor) the harness creates before the workloads start.
//! Declarations and their validation only; the harness's `cluster::topology` builds the nodes.

use super::{brokers_max, disk_latency_us_max, phase_ms_max, Scenario};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Settings of every broker (Kafka's names in the docs).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BrokerSettings {
    /// `min.insync.replicas`
    pub min_insync_replicas: Option<i32>,
    /// `unclean.leader.election.enable`
    pub unclean_leader_election: Option<bool>,
    /// `log.flush.interval.messages` (1 = fsync before every acknowledgement).
    pub flush_messages: Option<u64>,
    /// `log.segment.bytes`
    pub segment_bytes: Option<u64>,
    /// Per-operation disk latency range in microseconds.
    #[serde(default)]
    pub disk_latency_us: Option<[u64; 2]>,
    /// `group.initial.rebalance.delay.ms` (Kafka's 3 s by default).
    #[serde(default)]
    pub group_initial_rebalance_delay_ms: Option<u64>,
    /// `log.cleaner.backoff.ms`: how often each broker's log cleaner takes a turn (the
    /// broker's default, 15 s, would barely clean within a fast scenario).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleaner_backoff_ms: Option<u64>,
    /// Zero-copy fetch (`--fetch-zero-copy`): fetch answers carry file regions, which the
    /// simulated server reads into memory as it sends them. Off by default in the simulator,
    /// whose scenarios were made on the copying path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fetch_zero_copy: Option<bool>,
    /// `eligible.leader.replicas.enable` (KIP-966), on every node. Default off, as in Kafka 4.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eligible_leader_replicas: Option<bool>,
    /// `auto.leader.rebalance.enable`. Off in the simulator unless a scenario turns it on (the
    /// broker's default is Kafka's, on): the scenarios, traces and pinned seeds were made
    /// without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_leader_rebalance: Option<bool>,
    /// `leader.imbalance.check.interval.seconds`, in ms (the broker's 300 s would never come
    /// within a scenario).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader_imbalance_check_interval_ms: Option<u64>,
    /// `controller.quorum.voters`: how many brokers, `broker-0` on, are the Raft metadata
    /// quorum's voters (combined mode). Default 1: `broker-0` alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller_voters: Option<u32>,
    /// `metadata.log.max.record.bytes.between.snapshots` (4 MiB by default, which a scenario
    /// never reaches): a few KiB makes voters snapshot, truncate and install within a run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata_snapshot_bytes: Option<u64>,
    /// Kafka's `transaction.version` feature on every broker: 2 (the default, the broker's
    /// too) bumps the producer epoch at every transaction's end (KIP-890, with KIP-1228's
    /// marker rule); 1 is the classic protocol, open to the anomalies of
    /// `scenarios/anomalies/` (docs/transactions.md, section 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transaction_version: Option<i64>,
    /// `transaction.partition.verification.enable` on every broker (default true, KIP-890 part
    /// 1): false lets a late transactional write open a transaction no coordinator knows
    /// (`scenarios/anomalies/late_produce.toml`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transaction_partition_verification: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopicSpec {
    pub name: String,
    #[serde(default = "one")]
    pub partitions: i32,
    /// Replicas per partition, 1..=brokers.
    #[serde(default = "one_i16")]
    pub replication_factor: i16,
    /// Topic configs by Kafka's names (`cleanup.policy`, `segment.bytes`,
    /// `delete.retention.ms`, ...), sent with CreateTopics.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub config: BTreeMap<String, String>,
}

impl TopicSpec {
    /// `delete.retention.ms` if the topic is compacted (`cleanup.policy` names `compact`).
    /// Validation has parsed the config; an unparsable one counts as not compacted.
    pub fn compaction(&self) -> Option<u64> {
        let policy = broker_core::log::CleanupPolicy::parse(self.config.get("cleanup.policy")?).ok()?;
        let retention = match self.config.get("delete.retention.ms") {
            Some(v) => v.trim().parse().ok()?,
            None => broker_core::constants::delete_retention_ms_default,
        };
        policy.compact.then_some(retention)
    }
}

fn one_i16() -> i16 {
    1
}

fn one() -> i32 {
    1
}

impl Scenario {
    /// The brokers, their settings and the topics; errors name the field.
    pub(super) fn validate_topology(&self) -> Result<(), String> {
        self.runnable()?;
        self.broker.validate()?;
        let voters_max = (broker_core::constants::quorum_voters_max as u32).min(self.brokers);
        if let Some(v) = self.broker.transaction_version.filter(|v| !(1..=2).contains(v)) {
            return Err(format!("scenario: broker.transaction_version {v} must be 1 (classic) or 2 (KIP-890)"));
        }
        if self.broker.metadata_snapshot_bytes == Some(0) {
            return Err("scenario: broker.metadata_snapshot_bytes must be at least 1".into());
        }
        if self.broker.controller_voters.is_some_and(|v| !(1..=voters_max).contains(&v)) {
            return Err(format!("scenario: broker.controller_voters must be 1..={voters_max} (brokers, and at most a quorum's voters)"));
        }
        if self.topics.is_empty() {
            return Err("scenario: topics must name at least one topic".into());
        }
        let partitions_max = broker_core::constants::partitions_per_topic_max;
        for t in &self.topics {
            broker_core::metadata::topic::validate_name(&t.name).map_err(|e| format!("scenario: topics.name: {e}"))?;
            if t.partitions < 1 || t.partitions > partitions_max {
                return Err(format!("scenario: topics.partitions of '{}' must be 1..={partitions_max}", t.name));
            }
            if t.replication_factor < 1 || t.replication_factor as u32 > self.brokers {
                return Err(format!("scenario: topics.replication_factor of '{}' must be 1..={} (brokers)", t.name, self.brokers));
            }
            // What the controller would refuse (INVALID_CONFIG), refused here with the reason.
            use broker_core::metadata::topic::{apply_overrides, log_overrides, parse_bool, unclean_leader_election_config};
            apply_overrides(&broker_core::log::LogConfig::default(), &log_overrides(&t.config)).map_err(|e| format!("scenario: topics.config of '{}': {e}", t.name))?;
            if t.config.get(unclean_leader_election_config).is_some_and(|v| parse_bool(v).is_none()) {
                return Err(format!("scenario: topics.config of '{}': {unclean_leader_election_config} must be true or false", t.name));
            }
        }
        Ok(())
    }
}

impl Scenario {
    /// What the harness cannot run without, checked even for a scenario that skipped
    /// validation: at least one broker (`broker-0` is the controller every client bootstraps
    /// from) and at most `brokers_max` (broker i's address is 10.0.0.(i+1)).
    pub fn runnable(&self) -> Result<(), String> {
        if !(1..=brokers_max).contains(&self.brokers) {
            return Err(format!("scenario: brokers {} must be 1..={brokers_max}", self.brokers));
        }
        Ok(())
    }
}

impl BrokerSettings {
    /// Settings the broker would refuse to open with (it would never start), or that would
    /// starve every client timeout.
    fn validate(&self) -> Result<(), String> {
        if self.min_insync_replicas.is_some_and(|m| m < 1) {
            return Err("scenario: broker.min_insync_replicas must be at least 1".into());
        }
        if self.flush_messages == Some(0) {
            return Err("scenario: broker.flush_messages must be at least 1 (1 = fsync before every ack)".into());
        }
        if let Some(b) = self.segment_bytes {
            let (lo, hi) = (broker_core::constants::segment_bytes_min, broker_core::constants::segment_bytes_max);
            if !(lo..=hi).contains(&b) {
                return Err(format!("scenario: broker.segment_bytes {b} must be {lo}..={hi}"));
            }
        }
        if self.group_initial_rebalance_delay_ms.is_some_and(|d| d > phase_ms_max) {
            return Err(format!("scenario: broker.group_initial_rebalance_delay_ms must be at most {phase_ms_max}"));
        }
        if self.cleaner_backoff_ms.is_some_and(|ms| ms == 0 || ms > phase_ms_max) {
            return Err(format!("scenario: broker.cleaner_backoff_ms must be 1..={phase_ms_max}"));
        }
        if let Some(range) = self.disk_latency_us {
            if range.iter().any(|us| *us > disk_latency_us_max) {
                return Err(format!("scenario: broker.disk_latency_us {range:?} must be within 0..={disk_latency_us_max}"));
            }
        }
        Ok(())
    }
}
