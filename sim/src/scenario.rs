//! Scenario files: the cluster, topics, workloads, faults and expectations of a simulated run,
//! in TOML (docs/scenarios.md). Parsing is strict — an unknown or mistyped field is an error
//! that names it — and every derived choice (the random fault mix) comes from the seed.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    /// Simulated milliseconds of workload and faults (the safety phase).
    pub duration_ms: u64,
    /// Simulated milliseconds after faults stop and everything heals (the liveness phase),
    /// before the final read.
    #[serde(default = "heal_ms_default")]
    pub heal_ms: u64,
    #[serde(default)]
    pub broker: BrokerSettings,
    pub topics: Vec<TopicSpec>,
    #[serde(default)]
    pub producers: Vec<ProducerSpec>,
    #[serde(default)]
    pub consumers: Vec<ConsumerSpec>,
    #[serde(default)]
    pub faults: Vec<FaultSpec>,
    #[serde(default)]
    pub random_faults: Option<RandomFaults>,
    #[serde(default)]
    pub expect: Expect,
}

fn heal_ms_default() -> u64 {
    5_000
}

/// Broker settings (single node until replication exists).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BrokerSettings {
    /// `log.flush.interval.messages` (1 = fsync before every acknowledgement).
    pub flush_messages: Option<u64>,
    /// `log.segment.bytes`
    pub segment_bytes: Option<u64>,
    /// Per-operation disk latency range in microseconds.
    #[serde(default)]
    pub disk_latency_us: Option<[u64; 2]>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopicSpec {
    pub name: String,
    #[serde(default = "one")]
    pub partitions: i32,
}

fn one() -> i32 {
    1
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProducerSpec {
    pub topic: String,
    /// "0", "1" or "all".
    #[serde(default = "acks_all")]
    pub acks: String,
    /// Records per second (one record per batch).
    pub rate: u32,
    #[serde(default = "record_bytes_default")]
    pub record_bytes: usize,
    #[serde(default = "yes")]
    pub idempotent: bool,
    /// Distinct record keys to cycle through (`key-0` .. `key-{keys-1}`); 0 for no keys.
    #[serde(default)]
    pub keys: u32,
    /// Producers of this spec (each its own client node).
    #[serde(default = "one_u")]
    pub count: u32,
}

fn acks_all() -> String {
    "all".into()
}
fn record_bytes_default() -> usize {
    64
}
fn yes() -> bool {
    true
}
fn one_u() -> u32 {
    1
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsumerSpec {
    pub topic: String,
    /// Milliseconds a fetch may wait for data.
    #[serde(default = "max_wait_default")]
    pub max_wait_ms: i32,
}

fn max_wait_default() -> i32 {
    100
}

/// What a fault does to its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// Kill the process; the OS page cache survives (every write is kept). Restart after `for`.
    Kill,
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
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    /// Simulated ms from the start.
    pub at: u64,
    pub kind: FaultKind,
    /// A node name: `broker-0`, `producer-0`, `consumer-0`, ...
    #[serde(default = "broker0")]
    pub target: String,
    /// How long the fault lasts, in ms.
    #[serde(rename = "for", default = "for_default")]
    pub for_ms: u64,
    /// `slow_link`: extra delay per message, ms.
    #[serde(default = "delay_default")]
    pub delay_ms: u64,
    /// `slow_link`: loss probability in thousandths.
    #[serde(default)]
    pub loss_per_mille: u32,
    /// `disk_eio`: files whose path contains this fail (default: every partition).
    #[serde(default = "eio_path_default")]
    pub path: String,
}

fn delay_default() -> u64 {
    50
}
fn eio_path_default() -> String {
    "/data/".into()
}

impl FaultSpec {
    /// A fault with every optional field at its default.
    pub fn new(at: u64, kind: FaultKind, target: &str, for_ms: u64) -> FaultSpec {
        FaultSpec { at, kind, target: target.into(), for_ms, delay_ms: delay_default(), loss_per_mille: 0, path: eio_path_default() }
    }

    /// The (from, to) node names of a link target `a>b`.
    pub fn link(&self) -> Option<(&str, &str)> {
        self.target.split_once('>')
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
    /// At most this many faults; the seed picks how many (0..=max).
    pub max: u32,
    /// Longest fault, in ms; the seed picks each duration up to it.
    #[serde(default = "for_max_default")]
    pub for_max_ms: u64,
}

fn for_max_default() -> u64 {
    2_000
}

/// What the checkers must conclude. `loss_allowed` is for fault mixes that exceed what the
/// acks/flush setting promises (docs/durability.md): loss is then reported, not a violation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    #[serde(default)]
    pub loss_allowed: bool,
}

impl Scenario {
    /// Parses and checks a scenario; errors name the field.
    pub fn parse(text: &str) -> Result<Scenario, String> {
        let s: Scenario = toml::from_str(text).map_err(|e| format!("scenario: {e}"))?;
        s.validate()?;
        Ok(s)
    }

    fn validate(&self) -> Result<(), String> {
        if self.duration_ms == 0 {
            return Err("scenario: duration_ms must be at least 1".into());
        }
        if self.topics.is_empty() {
            return Err("scenario: topics must name at least one topic".into());
        }
        for t in &self.topics {
            broker_core::broker::topic::validate_name(&t.name).map_err(|e| format!("scenario: topics.name: {e}"))?;
            if t.partitions < 1 {
                return Err(format!("scenario: topics.partitions of '{}' must be at least 1", t.name));
            }
        }
        let known = |topic: &str| self.topics.iter().any(|t| t.name == topic);
        for p in &self.producers {
            if !known(&p.topic) {
                return Err(format!("scenario: producers.topic '{}' is not in topics", p.topic));
            }
            if !matches!(p.acks.as_str(), "0" | "1" | "all" | "-1") {
                return Err(format!("scenario: producers.acks '{}' must be 0, 1 or all", p.acks));
            }
            if p.rate == 0 || p.rate > 10_000 {
                return Err(format!("scenario: producers.rate {} must be 1..=10000", p.rate));
            }
        }
        for c in &self.consumers {
            if !known(&c.topic) {
                return Err(format!("scenario: consumers.topic '{}' is not in topics", c.topic));
            }
        }
        for f in &self.faults {
            if f.at >= self.duration_ms {
                return Err(format!("scenario: faults.at {} is not before duration_ms {}", f.at, self.duration_ms));
            }
            let is_link = matches!(f.kind, FaultKind::ClogLink | FaultKind::SlowLink);
            if is_link != f.link().is_some() {
                return Err(format!("scenario: faults.target '{}': link faults take \"a>b\", others a node name", f.target));
            }
            if f.loss_per_mille > 1000 {
                return Err(format!("scenario: faults.loss_per_mille {} must be 0..=1000", f.loss_per_mille));
            }
        }
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    const SMOKE: &str = r#"
name = "smoke"
duration_ms = 1000
topics = [{ name = "t", partitions = 2 }]
producers = [{ topic = "t", rate = 100 }]
consumers = [{ topic = "t" }]
faults = [{ at = 100, kind = "power_loss", for = 200 }]
"#;

    #[test]
    fn parses_with_defaults_and_names_bad_fields() {
        let s = Scenario::parse(SMOKE).unwrap();
        assert_eq!((s.heal_ms, s.producers[0].acks.as_str(), s.faults[0].target.as_str()), (5000, "all", "broker-0"));
        let typo = SMOKE.replace("duration_ms", "duraton_ms");
        assert!(Scenario::parse(&typo).unwrap_err().contains("duraton_ms"));
        let kind = SMOKE.replace("power_loss", "meteor");
        assert!(Scenario::parse(&kind).unwrap_err().contains("meteor"));
        let topic = SMOKE.replace("{ topic = \"t\", rate", "{ topic = \"u\", rate");
        assert!(Scenario::parse(&topic).unwrap_err().contains("producers.topic 'u'"));
        let late = SMOKE.replace("at = 100", "at = 5000");
        assert!(Scenario::parse(&late).unwrap_err().contains("faults.at"));
    }
}
