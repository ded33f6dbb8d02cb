//! Scenario files: the cluster, topics, workloads, faults and expectations of a simulated run,
//! in TOML (docs/scenarios.md). Parsing is strict — an unknown or mistyped field is an error
//! that names it — and every derived choice (the random fault mix) comes from the seed.
//!
//! A scenario is data: this module and its parts never run anything, read a clock or draw
//! from an RNG. The parts follow the harness's phases: `topology` (brokers, their settings,
//! topics), `workloads` (producers, consumers), `security` (principals, ACLs),
//! `reassignments` (partitions moved while the run goes), `membership` (brokers joining late
//! and decommissioned), `quotas` (client quota changes), `faults` (fixed faults and the
//! random mix); each declares its fields and validates them, and [`Scenario::validate`] runs
//! them in order.

mod faults;
mod membership;
mod quotas;
mod reassignments;
mod security;
#[cfg(test)]
mod tests;
mod topology;
mod workloads;

pub use membership::{membership_changes_max, DecommissionSpec, JoinSpec};
pub use quotas::{quota_changes_max, QuotaSpec};
pub use reassignments::{reassignments_max, ReassignmentSpec};
pub use faults::{any_sender, controller_target, held_api, held_apis, leader_target, leader_target_prefix, FaultKind, FaultSpec, RandomFaults};
pub use security::{password, AclChangeSpec, AclSpec, SecuritySpec};
pub use topology::{BrokerSettings, TopicSpec};
pub use workloads::{ConsumerSpec, GroupSpec, ProcessorSpec, ProducerSpec};

use serde::{Deserialize, Serialize};

// Limits on what a scenario may ask for. Each keeps a typo or a fuzzed file from exhausting the
// harness (billions of faults, thousands of nodes, gigabyte batches) or overflowing its clocks.

/// Longest safety or healing phase, ms: a simulated day; keeps `at + for` sums far from overflow.
pub const phase_ms_max: u64 = 86_400_000;
/// Longest single fault (`for`, `random_faults.for_max_ms`), ms: no longer than a phase.
pub const fault_ms_max: u64 = phase_ms_max;
/// Longest `slow_link` delay per message, ms: a minute is already far past any client timeout.
pub const link_delay_ms_max: u64 = 60_000;
/// Most faults `random_faults` may draw in one run: each is an injector task and a trace line.
pub const random_faults_max: u32 = 100;
/// Most client nodes (producers × count + consumers). Client i gets 10.0.1.(11+i), so the
/// bound keeps every client in one /24 with room to spare.
pub const clients_max: usize = 200;
/// Largest record value, bytes. A record alone must fit the broker's `message.max.bytes`
/// (1,048,588) with its key and batch overhead, or every write is refused: 1 MB (decimal)
/// leaves room for both.
pub const record_bytes_max: usize = 1_000_000;
/// Most records in one batch (`producers.batch_records`): a producer that fell behind catches
/// up in bounded steps.
pub const batch_records_max: u64 = 500;
/// Slowest disk operation `broker.disk_latency_us` may ask for, µs: a second per operation
/// already starves every client timeout.
pub const disk_latency_us_max: u64 = 1_000_000;
/// Longest consumer long-poll wait, ms (Kafka's `fetch.max.wait.ms` is 500 by default).
pub const max_wait_ms_max: i32 = 30_000;
/// Most brokers: broker i is 10.0.0.(i+1); a handful is what replication scenarios need, and
/// every broker multiplies the simulated work.
pub const brokers_max: u32 = 9;
// Broker addresses end at 10.0.0.(brokers_max): past .254 they would wrap onto other nodes.
const _: () = assert!(brokers_max < 255);

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    /// Simulated milliseconds of workload and faults (the safety phase).
    pub duration_ms: u64,
    /// Simulated milliseconds after the safety phase ends and every fault is undone (the
    /// liveness phase), before the final read. Producers keep writing for three quarters of
    /// it; `write_liveness` judges their writes from half-way.
    #[serde(default = "heal_ms_default")]
    pub heal_ms: u64,
    /// Broker nodes, `broker-0` .. `broker-{n-1}`; `broker-0` is also the controller.
    #[serde(default = "one_u")]
    pub brokers: u32,
    /// BUGGIFY: each broker's perturbation points (`broker_core::buggify`) are seeded from the
    /// run's seed and fire during the safety phase; quiet from healing on (default false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub buggify: bool,
    #[serde(default)]
    pub broker: BrokerSettings,
    pub topics: Vec<TopicSpec>,
    #[serde(default)]
    pub producers: Vec<ProducerSpec>,
    #[serde(default)]
    pub consumers: Vec<ConsumerSpec>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<GroupSpec>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub processors: Vec<ProcessorSpec>,
    #[serde(default)]
    pub faults: Vec<FaultSpec>,
    #[serde(default)]
    pub random_faults: Option<RandomFaults>,
    /// Principals and ACLs (`scenario::security`): None, every client anonymous and no authorizer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security: Option<SecuritySpec>,
    /// Partition reassignments the admin asks for while the run goes (`scenario::reassignments`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reassignments: Vec<ReassignmentSpec>,
    /// Client quota changes the admin makes while the run goes (`scenario::quotas`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quotas: Vec<QuotaSpec>,
    /// Brokers whose process first starts while the run goes (`scenario::membership`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub joins: Vec<JoinSpec>,
    /// Brokers the admin moves every replica off, stops for good and unregisters
    /// (`scenario::membership`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decommissions: Vec<DecommissionSpec>,
    #[serde(default)]
    pub expect: Expect,
    /// Pins the disk seed (each broker's `SimDisk`, link loss draws, group churn) instead of
    /// the one the run draws after the random fault mix. `sim shrink` writes it when it turns
    /// a seed's drawn faults into fixed ones, so the shrunk scenario keeps that seed's disk.
    /// Decimal digits in a string: a u64 does not fit TOML's signed integers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_seed: Option<String>,
}

fn heal_ms_default() -> u64 {
    5_000
}

fn one_u() -> u32 {
    1
}

/// For `skip_serializing_if`: a zero count or rate is the default, left out when written.
fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// What the checkers must conclude. `loss_allowed` is for fault mixes that exceed what the
/// acks/flush setting promises (docs/durability.md): loss is then reported, not a violation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    #[serde(default)]
    pub loss_allowed: bool,
    /// Losing acknowledged acks=1 writes is allowed (and reported): acks=1 is acknowledged by
    /// the leader alone, so Kafka promises nothing for it once leadership moves.
    #[serde(default)]
    pub acks1_loss_allowed: bool,
    /// A known protocol anomaly (`scenarios/anomalies/`): the checkers that show it. Under
    /// the classic transaction protocol (`broker.transaction_version = 1`, which the file must
    /// set) they are expected, not failures, and a sweep fails unless some seed shows one of
    /// them; with KIP-890 on (`--transaction-version 2`) they are failures like any other.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub anomaly: Vec<String>,
}

impl Scenario {
    /// Parses and checks a scenario; errors name the field.
    pub fn parse(text: &str) -> Result<Scenario, String> {
        let s: Scenario = toml::from_str(text).map_err(|e| format!("scenario: {e}"))?;
        s.validate()?;
        Ok(s)
    }

    /// Checks what parsing cannot: ranges, references between fields, and combinations the
    /// harness cannot run. Errors name the field. Scenarios built in code (the matrix) should
    /// pass it too. The first error found is returned, phase by phase in this order.
    pub fn validate(&self) -> Result<(), String> {
        if self.duration_ms == 0 || self.duration_ms > phase_ms_max {
            return Err(format!("scenario: duration_ms {} must be 1..={phase_ms_max}", self.duration_ms));
        }
        if self.heal_ms > phase_ms_max {
            return Err(format!("scenario: heal_ms {} must be 0..={phase_ms_max}", self.heal_ms));
        }
        if let Some(text) = &self.disk_seed {
            if !text.bytes().all(|b| b.is_ascii_digit()) || text.parse::<u64>().is_err() {
                return Err(format!("scenario: disk_seed {text:?} must be a decimal number 0..={} in a string", u64::MAX));
            }
        }
        if !self.expect.anomaly.is_empty() && self.broker.transaction_version != Some(1) {
            return Err("scenario: expect.anomaly names a transaction anomaly, which needs broker.transaction_version = 1 (the classic protocol)".into());
        }
        if let Some(name) = self.expect.anomaly.iter().find(|n| !crate::checkers::CHECKERS.iter().any(|(c, _)| c == n)) {
            return Err(format!("scenario: expect.anomaly '{name}' is not a checker"));
        }
        self.validate_topology()?;
        self.validate_workloads()?;
        self.validate_security()?;
        self.validate_reassignments()?;
        self.validate_quotas()?;
        self.validate_membership()?;
        self.validate_faults()
    }

    /// The checkers whose violations are this scenario's expected anomaly: `expect.anomaly`
    /// under the classic transaction protocol, none once KIP-890 is on.
    pub fn expected_anomaly(&self) -> &[String] {
        match self.broker.transaction_version {
            Some(1) => &self.expect.anomaly,
            _ => &[],
        }
    }

    /// The pinned disk seed, if the scenario sets a valid one (see `disk_seed`).
    pub fn pinned_disk_seed(&self) -> Option<u64> {
        self.disk_seed.as_deref()?.parse().ok()
    }

    /// The broker nodes' names.
    pub fn broker_names(&self) -> Vec<String> {
        (0..self.brokers.min(brokers_max + 1)).map(|i| format!("broker-{i}")).collect()
    }

    /// Every node a fault may target: the brokers, then producers and consumers in file order
    /// (a spec with `count = n` gives n producers).
    pub fn node_names(&self) -> Vec<String> {
        let producers: u64 = self.producers.iter().map(|p| p.count as u64).sum();
        // Bounded so that an unvalidated scenario cannot make this allocate without limit.
        let producers = producers.min(clients_max as u64 + 1);
        let consumers = self.consumers.len().min(clients_max + 1);
        self.broker_names()
            .into_iter()
            .chain((0..producers).map(|i| format!("producer-{i}")))
            .chain((0..consumers).map(|i| format!("consumer-{i}")))
            .chain(self.member_names())
            .chain(self.processor_names())
            .collect()
    }

    /// Processors' node names, `processor-{i}`, over every spec in file order.
    pub fn processor_names(&self) -> Vec<String> {
        let n: u64 = self.processors.iter().map(|p| p.count as u64).sum();
        (0..n.min(clients_max as u64 + 1)).map(|i| format!("processor-{i}")).collect()
    }

    /// Group members' node names, `member-{group}-{i}`, in file order.
    pub fn member_names(&self) -> Vec<String> {
        self.groups.iter().enumerate().flat_map(|(g, spec)| (0..spec.members.min(workloads::group_members_max)).map(move |i| format!("member-{g}-{i}"))).collect()
    }

    /// Client nodes: producers (each spec `count` times), consumers, members and processors.
    pub fn client_count(&self) -> u64 {
        let producer_nodes: u64 = self.producers.iter().map(|p| p.count as u64).sum();
        let members: u64 = self.groups.iter().map(|g| g.members as u64).sum();
        let processors: u64 = self.processors.iter().map(|p| p.count as u64).sum();
        producer_nodes + self.consumers.len() as u64 + members + processors
    }

    /// Whether any client writes transactionally (then the final read is repeated with
    /// read_committed).
    pub fn transactional(&self) -> bool {
        self.producers.iter().any(|p| p.transactional) || !self.processors.is_empty()
    }

    /// Compacted topics by name, with their `delete.retention.ms`.
    pub fn compacted_topics(&self) -> std::collections::BTreeMap<String, u64> {
        self.topics.iter().filter_map(|t| Some((t.name.clone(), t.compaction()?))).collect()
    }

    /// acks as the wire number.
    pub fn acks(p: &ProducerSpec) -> i16 {
        match p.acks.as_str() {
            "0" => 0,
            "1" => 1,
            _ => -1,
        }
    }
}
