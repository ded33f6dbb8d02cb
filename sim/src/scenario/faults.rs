//! The scenario's faults: the kinds, fixed faults (when, what, on which node or link, for how
//! long) and the random mix the seed draws from, with its fault budget. Declarations and their
//! validation only: `cluster::faults` derives the schedule from the seed and `cluster::inject`
//! applies it. Validation must refuse what the harness cannot aim (a process fault on a client,
//! a link fault with no second node), so that a run never has to guess.

use super::{fault_ms_max, link_delay_ms_max, random_faults_max, Scenario};
use serde::{Deserialize, Serialize};

/// What a fault does to its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// Kill the process; the OS page cache survives (every write is kept). Restart after `for`.
    Kill,
    /// Stop the broker as SIGTERM does: a controlled shutdown (the controller moves its
    /// leaderships), every log flushed and checkpointed, a clean-shutdown mark. Killed if it has
    /// not stopped within a bound (a paused process cannot act on it). Restart after `for`.
    Terminate,
    /// Kill and lose power: unsynced writes are kept, dropped or torn. Restart after `for`.
    PowerLoss,
    /// Stop scheduling the node's tasks for `for` ms (a stalled process).
    Pause,
    /// Cut the target off the network (both directions) for `for` ms.
    Isolate,
    /// Disk operations take 1–20 ms for `for` ms.
    SlowDisk,
    /// The disk is full for `for` ms.
    DiskFull,
    /// Disk operations on files whose path contains `path` fail with EIO for `for` ms.
    DiskEio,
    /// The target receives nothing for `for` ms (one-way partition: it can still send).
    IsolateIn,
    /// The target sends nothing for `for` ms (one-way partition: it can still receive).
    IsolateOut,
    /// `target` = "a>b": messages from a to b are dropped for `for` ms (one-way link cut).
    ClogLink,
    /// `target` = "a>b": messages from a to b take `delay_ms` more and are lost (retransmitted)
    /// with probability `loss_per_mille`/1000, for `for` ms. A slow follower, a bad cable.
    SlowLink,
    /// The first request of API `api` that `target` (a node, or `any` sender) sends within `for`
    /// ms is held until then: its sender times out and retries on a new connection, and the
    /// held copy arrives late (docs/transactions.md, section 4).
    HoldRequest,
}

/// A `hold_request` target: whichever node sends the request first.
pub const any_sender: &str = "any";

/// The APIs a `hold_request` may hold, as scenario files spell them, and their keys.
pub const held_apis: &[(&str, i16)] = &[("end_txn", 26), ("write_txn_markers", 27), ("add_partitions_to_txn", 24), ("txn_offset_commit", 28), ("init_producer_id", 22), ("produce", 0)];

/// The key of a `hold_request`'s `api`.
pub fn held_api(name: &str) -> Option<i16> {
    held_apis.iter().find(|(n, _)| *n == name).map(|(_, k)| *k)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    /// Simulated ms from the start.
    pub at: u64,
    pub kind: FaultKind,
    /// A node name: `broker-0`, `producer-0`, `consumer-0`, ... Process and disk faults
    /// (`kill`, `power_loss`, `pause`, `slow_disk`, `disk_full`, `disk_eio`) target brokers
    /// only: a client node has no process the harness can restart and no disk.
    #[serde(default = "broker0")]
    pub target: String,
    /// How long the fault lasts, in ms.
    #[serde(rename = "for", default = "for_default")]
    pub for_ms: u64,
    /// `slow_link`: extra delay per message, ms.
    #[serde(default = "delay_default", skip_serializing_if = "is_delay_default")]
    pub delay_ms: u64,
    /// `slow_link`: loss probability in thousandths.
    #[serde(default, skip_serializing_if = "super::is_zero")]
    pub loss_per_mille: u32,
    /// `disk_eio`: files whose path contains this fail (default: every partition).
    #[serde(default = "eio_path_default", skip_serializing_if = "is_eio_path_default")]
    pub path: String,
    /// `hold_request`: the API whose request is held (`end_txn`, `write_txn_markers`, ...).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api: String,
}

/// A fault target resolved when the fault starts: the broker that is then the active metadata
/// controller (the Raft quorum's leader). Not a link end. Counted as a broker of its own by the
/// fault budget, which cannot know which broker it will be.
pub const controller_target: &str = "controller";

/// A fault target resolved when the fault starts: `leader:TOPIC-P` is the broker that last
/// became leader of partition P of TOPIC (as the brokers reported it). Not a link end. Counted
/// as a broker of its own by the fault budget.
pub const leader_target_prefix: &str = "leader:";

/// The (topic, partition) a `leader:TOPIC-P` target names.
pub fn leader_target(target: &str) -> Option<(&str, i32)> {
    let (topic, partition) = target.strip_prefix(leader_target_prefix)?.rsplit_once('-')?;
    Some((topic, partition.parse().ok()?))
}

fn delay_default() -> u64 {
    50
}
fn eio_path_default() -> String {
    "/data/".into()
}
// Defaults are left out when a scenario is written (`sim shrink`, `sim matrix --dump`).
fn is_delay_default(ms: &u64) -> bool {
    *ms == delay_default()
}
fn is_eio_path_default(path: &str) -> bool {
    path == eio_path_default()
}

impl FaultSpec {
    /// A fault with every optional field at its default.
    pub fn new(at: u64, kind: FaultKind, target: &str, for_ms: u64) -> FaultSpec {
        FaultSpec { at, kind, target: target.into(), for_ms, delay_ms: delay_default(), loss_per_mille: 0, path: eio_path_default(), api: String::new() }
    }

    /// The fault with the settings its kind does not read (a drawn fault has them all) back at
    /// their defaults: the same fault, written without noise.
    pub fn without_unused(&self) -> FaultSpec {
        let slow_link = self.kind == FaultKind::SlowLink;
        FaultSpec {
            delay_ms: if slow_link { self.delay_ms } else { delay_default() },
            loss_per_mille: if slow_link { self.loss_per_mille } else { 0 },
            path: if self.kind == FaultKind::DiskEio { self.path.clone() } else { eio_path_default() },
            api: if self.kind == FaultKind::HoldRequest { self.api.clone() } else { String::new() },
            ..self.clone()
        }
    }

    /// The (from, to) node names of a link target `a>b`.
    pub fn link(&self) -> Option<(&str, &str)> {
        self.target.split_once('>')
    }
}

impl FaultKind {
    /// Faults on one link `a>b` rather than on a node.
    pub fn is_link(self) -> bool {
        matches!(self, FaultKind::ClogLink | FaultKind::SlowLink)
    }

    /// The kind as scenario files spell it.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Kill => "kill",
            FaultKind::Terminate => "terminate",
            FaultKind::PowerLoss => "power_loss",
            FaultKind::Pause => "pause",
            FaultKind::Isolate => "isolate",
            FaultKind::SlowDisk => "slow_disk",
            FaultKind::DiskFull => "disk_full",
            FaultKind::DiskEio => "disk_eio",
            FaultKind::IsolateIn => "isolate_in",
            FaultKind::IsolateOut => "isolate_out",
            FaultKind::ClogLink => "clog_link",
            FaultKind::SlowLink => "slow_link",
            FaultKind::HoldRequest => "hold_request",
        }
    }

    /// Faults on a node's process or disk, which only a broker node has: clients run as plain
    /// tasks (nothing restarts them after a kill) and write nothing to disk.
    pub fn broker_only(self) -> bool {
        matches!(self, FaultKind::Kill | FaultKind::Terminate | FaultKind::PowerLoss | FaultKind::Pause | FaultKind::SlowDisk | FaultKind::DiskFull | FaultKind::DiskEio)
    }
}

fn broker0() -> String {
    "broker-0".into()
}
fn for_default() -> u64 {
    500
}

/// A swarm-style fault mix: which kinds, and how many, drawn from the seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RandomFaults {
    pub kinds: Vec<FaultKind>,
    /// At most this many faults, 0..=`random_faults_max`; the seed picks how many (0..=max).
    pub max: u32,
    /// Longest fault, in ms; the seed picks each duration in 100..=`for_max_ms` (all of it
    /// when it is below 100).
    #[serde(default = "for_max_default")]
    pub for_max_ms: u64,
    /// Fault budget: at most this many brokers faulty at once (a drawn fault that would exceed
    /// it is dropped). A broker counts as faulty from its fault's start until `recovery_ms`
    /// after its end: a restarted replica must catch up and rejoin the ISR before another may
    /// fail. Unset: no budget. Kafka's promise for acks=all with min.insync.replicas=2 and
    /// RF=3 is about one broker at a time (docs/simulation.md, "Replication").
    #[serde(default)]
    pub brokers_at_once: Option<u32>,
    #[serde(default)]
    pub recovery_ms: u64,
    /// Swarm testing (TigerBeetle's VOPR, FoundationDB): each seed turns on its own subset of
    /// `kinds` and of the brokers its faults aim at (each with probability 1/2, at least one),
    /// a count limit of 1..=`max` and a longest fault of 100..=`for_max_ms`, so seeds differ in
    /// which faults they stress, where and how hard, not only in when (default false: every
    /// kind and broker, `max` and `for_max_ms` as given).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub swarm: bool,
    /// Faults come in bursts: the seed picks 1..=3 moments of the safety phase and each fault
    /// starts within this many ms after one of them (default 0: anywhere, uniformly).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub burst_ms: u64,
    /// Half the node faults aim at a partition's current leader (`leader:TOPIC-P`, a random
    /// partition of a random topic) instead of a random broker: replication bugs live where
    /// leadership is (default false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub leaders: bool,
    /// A quarter of the node faults not aimed at a leader aim at the active metadata controller
    /// (`controller`): a controller taking over while brokers are down is where the
    /// controller's eligibility rules live (default false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub controller: bool,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn for_max_default() -> u64 {
    2_000
}

impl Scenario {
    /// Fixed faults fall inside the safety phase and aim at nodes (or links) of this scenario;
    /// the random mix stays within its limits. Errors name the field.
    pub(super) fn validate_faults(&self) -> Result<(), String> {
        let nodes = self.node_names();
        for f in &self.faults {
            f.validate(self.duration_ms, &nodes)?;
            if f.target.starts_with(leader_target_prefix) {
                let named = leader_target(&f.target).filter(|(t, p)| self.topics.iter().any(|x| x.name == *t && (0..x.partitions).contains(p)));
                if named.is_none() {
                    return Err(format!("scenario: faults.target '{}' is not leader:TOPIC-P of a topic and partition of this scenario", f.target));
                }
            }
        }
        if let Some(mix) = &self.random_faults {
            mix.validate(self.client_count() == 0 && self.brokers == 1)?;
            self.validate_fixed_within_budget(mix)?;
        }
        Ok(())
    }

    /// The fixed faults count against the budget and are never dropped, so they must keep it
    /// themselves: otherwise the budget's promise (what the expectations rest on) is broken by
    /// the scenario's own schedule. Checked start by start, in time order.
    fn validate_fixed_within_budget(&self, mix: &RandomFaults) -> Result<(), String> {
        let Some(max) = mix.brokers_at_once else { return Ok(()) };
        let mut fixed: Vec<&FaultSpec> = self.faults.iter().collect();
        fixed.sort_by_key(|f| f.at);
        let mut kept: Vec<FaultSpec> = Vec::new();
        for f in fixed {
            if !crate::cluster::faults::within_budget(&kept, f, max as usize, mix.recovery_ms) {
                return Err(format!("scenario: faults: {} on {} at {} ms makes more than random_faults.brokers_at_once = {max} brokers faulty at once (counting random_faults.recovery_ms = {} after each fault); fixed faults are never dropped, so they must keep the budget", f.kind.name(), f.target, f.at, mix.recovery_ms));
            }
            kept.push(f.clone());
        }
        Ok(())
    }
}

impl FaultSpec {
    /// Checks one fixed fault of a run of `duration_ms` among `nodes`.
    fn validate(&self, duration_ms: u64, nodes: &[String]) -> Result<(), String> {
        let any = self.kind == FaultKind::HoldRequest && self.target == any_sender;
        let node = |field: &str, name: &str| -> Result<(), String> {
            if any || nodes.iter().any(|n| n == name) || name == controller_target || name.starts_with(leader_target_prefix) {
                Ok(())
            } else {
                Err(format!("scenario: {field} '{name}' is not a node of this scenario (broker-0.., producer-0.., consumer-0..)"))
            }
        };
        if self.at >= duration_ms {
            return Err(format!("scenario: faults.at {} is not before duration_ms {}", self.at, duration_ms));
        }
        if self.for_ms > fault_ms_max {
            return Err(format!("scenario: faults.for {} must be 0..={fault_ms_max}", self.for_ms));
        }
        match self.link() {
            Some((from, to)) if self.kind.is_link() => {
                node("faults.target", from)?;
                node("faults.target", to)?;
            }
            None if !self.kind.is_link() => node("faults.target", &self.target)?,
            _ => return Err(format!("scenario: faults.target '{}': link faults take \"a>b\", others a node name", self.target)),
        }
        if self.kind.broker_only() && !self.target.starts_with("broker-") && self.target != controller_target && !self.target.starts_with(leader_target_prefix) {
            return Err(format!("scenario: faults.target '{}': {} faults target brokers only (a client node is never restarted and has no disk); network faults may target clients", self.target, self.kind.name()));
        }
        match (self.kind == FaultKind::HoldRequest, held_api(&self.api)) {
            (true, None) => {
                let names: Vec<&str> = held_apis.iter().map(|(n, _)| *n).collect();
                return Err(format!("scenario: faults.api '{}': a hold_request holds one of {}", self.api, names.join(", ")));
            }
            (false, _) if !self.api.is_empty() => return Err(format!("scenario: faults.api is for hold_request faults, not {}", self.kind.name())),
            _ => {}
        }
        if self.loss_per_mille > 1000 {
            return Err(format!("scenario: faults.loss_per_mille {} must be 0..=1000", self.loss_per_mille));
        }
        if self.delay_ms > link_delay_ms_max {
            return Err(format!("scenario: faults.delay_ms {} must be 0..={link_delay_ms_max}", self.delay_ms));
        }
        Ok(())
    }
}

impl RandomFaults {
    /// Checks the mix; `lonely` is a scenario with one broker and no clients, where a link
    /// fault has no second node to cut a broker from.
    fn validate(&self, lonely: bool) -> Result<(), String> {
        if self.max > random_faults_max {
            return Err(format!("scenario: random_faults.max {} must be 0..={random_faults_max}", self.max));
        }
        if self.brokers_at_once == Some(0) {
            return Err("scenario: random_faults.brokers_at_once must be at least 1 (or unset for no budget)".into());
        }
        if self.recovery_ms > fault_ms_max {
            return Err(format!("scenario: random_faults.recovery_ms {} must be 0..={fault_ms_max}", self.recovery_ms));
        }
        if self.for_max_ms > fault_ms_max {
            return Err(format!("scenario: random_faults.for_max_ms {} must be 0..={fault_ms_max}", self.for_max_ms));
        }
        if self.burst_ms > fault_ms_max {
            return Err(format!("scenario: random_faults.burst_ms {} must be 0..={fault_ms_max}", self.burst_ms));
        }
        if lonely {
            if let Some(k) = self.kinds.iter().find(|k| k.is_link()) {
                return Err(format!("scenario: random_faults.kinds has {}, a link fault between a broker and another node, but there is one broker and no producers or consumers", k.name()));
            }
        }
        Ok(())
    }
}
