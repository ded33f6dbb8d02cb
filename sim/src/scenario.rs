//! Scenario files: the cluster, topics, workloads, faults and expectations of a simulated run,
//! in TOML (docs/scenarios.md). Parsing is strict — an unknown or mistyped field is an error
//! that names it — and every derived choice (the random fault mix) comes from the seed.

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
/// Slowest disk operation `broker.disk_latency_us` may ask for, µs: a second per operation
/// already starves every client timeout.
pub const disk_latency_us_max: u64 = 1_000_000;
/// Longest consumer long-poll wait, ms (Kafka's `fetch.max.wait.ms` is 500 by default).
pub const max_wait_ms_max: i32 = 30_000;
/// Most brokers: broker i is 10.0.0.(i+1); a handful is what replication scenarios need, and
/// every broker multiplies the simulated work.
pub const brokers_max: u32 = 9;

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
}

fn one_i16() -> i16 {
    1
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
    /// Records per second, 1..=10000. Batching is linger-driven: each batch carries every
    /// record that fell due while the previous batch was in flight (one batch in flight).
    pub rate: u32,
    /// Bytes per record value, 1..=`record_bytes_max`.
    #[serde(default = "record_bytes_default")]
    pub record_bytes: usize,
    /// Idempotent producer (Kafka's `enable.idempotence`). Unset: true with acks=all, false
    /// otherwise — Kafka clients refuse idempotence without acks=all, so an explicit `true`
    /// with acks 0 or 1 is an error. Read it through [`ProducerSpec::idempotent`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
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

impl ProducerSpec {
    /// Whether acks is "all" (or its wire spelling "-1").
    pub fn acks_all(&self) -> bool {
        matches!(self.acks.as_str(), "all" | "-1")
    }

    /// Whether this producer is idempotent: as set, or by default exactly when acks=all.
    pub fn idempotent(&self) -> bool {
        self.idempotent.unwrap_or(self.acks_all())
    }
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
    /// A node name: `broker-0`, `producer-0`, `consumer-0`, ... Process and disk faults
    /// (`kill`, `power_loss`, `pause`, `slow_disk`, `disk_full`, `disk_eio`) target brokers
    /// only: a client node has no process the harness can restart and no disk.
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

impl FaultKind {
    /// Faults on one link `a>b` rather than on a node.
    pub fn is_link(self) -> bool {
        matches!(self, FaultKind::ClogLink | FaultKind::SlowLink)
    }

    /// The kind as scenario files spell it.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::Kill => "kill",
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
        }
    }

    /// Faults on a node's process or disk, which only a broker node has: clients run as plain
    /// tasks (nothing restarts them after a kill) and write nothing to disk.
    pub fn broker_only(self) -> bool {
        matches!(self, FaultKind::Kill | FaultKind::PowerLoss | FaultKind::Pause | FaultKind::SlowDisk | FaultKind::DiskFull | FaultKind::DiskEio)
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
    /// Longest fault, in ms; the seed picks each duration up to it.
    #[serde(default = "for_max_default")]
    pub for_max_ms: u64,
    /// Fault budget: at most this many brokers faulty at once (a drawn fault that would exceed
    /// it is dropped). A broker counts as faulty from its fault's start until `recovery_ms`
    /// after its end: a restarted replica must catch up and rejoin the ISR before another may
    /// fail. Unset: no budget. Kafka's promise for acks=all with min.insync.replicas=2 and
    /// RF=3 is about one broker at a time (docs/scenarios.md).
    #[serde(default)]
    pub brokers_at_once: Option<u32>,
    #[serde(default)]
    pub recovery_ms: u64,
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
    /// Losing acknowledged acks=1 writes is allowed (and reported): acks=1 is acknowledged by
    /// the leader alone, so Kafka promises nothing for it once leadership moves.
    #[serde(default)]
    pub acks1_loss_allowed: bool,
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
    /// pass it too.
    pub fn validate(&self) -> Result<(), String> {
        if self.duration_ms == 0 || self.duration_ms > phase_ms_max {
            return Err(format!("scenario: duration_ms {} must be 1..={phase_ms_max}", self.duration_ms));
        }
        if self.heal_ms > phase_ms_max {
            return Err(format!("scenario: heal_ms {} must be 0..={phase_ms_max}", self.heal_ms));
        }
        if !(1..=brokers_max).contains(&self.brokers) {
            return Err(format!("scenario: brokers {} must be 1..={brokers_max}", self.brokers));
        }
        if self.broker.min_insync_replicas.is_some_and(|m| m < 1) {
            return Err("scenario: broker.min_insync_replicas must be at least 1".into());
        }
        if self.broker.flush_messages == Some(0) {
            return Err("scenario: broker.flush_messages must be at least 1 (1 = fsync before every ack)".into());
        }
        if let Some(b) = self.broker.segment_bytes {
            let (lo, hi) = (broker_core::constants::segment_bytes_min, broker_core::constants::segment_bytes_max);
            if !(lo..=hi).contains(&b) {
                return Err(format!("scenario: broker.segment_bytes {b} must be {lo}..={hi}"));
            }
        }
        if let Some(range) = self.broker.disk_latency_us {
            if range.iter().any(|us| *us > disk_latency_us_max) {
                return Err(format!("scenario: broker.disk_latency_us {range:?} must be within 0..={disk_latency_us_max}"));
            }
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
        }
        let known = |topic: &str| self.topics.iter().any(|t| t.name == topic);
        for p in &self.producers {
            if !known(&p.topic) {
                return Err(format!("scenario: producers.topic '{}' is not in topics", p.topic));
            }
            if !matches!(p.acks.as_str(), "0" | "1" | "all" | "-1") {
                return Err(format!("scenario: producers.acks '{}' must be 0, 1 or all", p.acks));
            }
            if p.idempotent == Some(true) && !p.acks_all() {
                return Err(format!("scenario: producers.idempotent = true needs producers.acks = \"all\" (is \"{}\"): Kafka clients refuse idempotence without it", p.acks));
            }
            if p.rate == 0 || p.rate > 10_000 {
                return Err(format!("scenario: producers.rate {} must be 1..=10000", p.rate));
            }
            if p.record_bytes == 0 || p.record_bytes > record_bytes_max {
                return Err(format!("scenario: producers.record_bytes {} must be 1..={record_bytes_max}", p.record_bytes));
            }
        }
        for c in &self.consumers {
            if !known(&c.topic) {
                return Err(format!("scenario: consumers.topic '{}' is not in topics", c.topic));
            }
            if !(0..=max_wait_ms_max).contains(&c.max_wait_ms) {
                return Err(format!("scenario: consumers.max_wait_ms {} must be 0..={max_wait_ms_max}", c.max_wait_ms));
            }
        }
        let producer_nodes: u64 = self.producers.iter().map(|p| p.count as u64).sum();
        let clients = producer_nodes + self.consumers.len() as u64;
        if clients > clients_max as u64 {
            return Err(format!("scenario: producers.count and consumers add up to {clients} client nodes, more than {clients_max}"));
        }
        let nodes = self.node_names();
        let node = |field: &str, name: &str| -> Result<(), String> {
            if nodes.iter().any(|n| n == name) {
                Ok(())
            } else {
                Err(format!("scenario: {field} '{name}' is not a node of this scenario (broker-0.., producer-0.., consumer-0..)"))
            }
        };
        for f in &self.faults {
            if f.at >= self.duration_ms {
                return Err(format!("scenario: faults.at {} is not before duration_ms {}", f.at, self.duration_ms));
            }
            if f.for_ms > fault_ms_max {
                return Err(format!("scenario: faults.for {} must be 0..={fault_ms_max}", f.for_ms));
            }
            match f.link() {
                Some((from, to)) if f.kind.is_link() => {
                    node("faults.target", from)?;
                    node("faults.target", to)?;
                }
                None if !f.kind.is_link() => node("faults.target", &f.target)?,
                _ => return Err(format!("scenario: faults.target '{}': link faults take \"a>b\", others a node name", f.target)),
            }
            if f.kind.broker_only() && !f.target.starts_with("broker-") {
                return Err(format!("scenario: faults.target '{}': {} faults target brokers only (a client node is never restarted and has no disk); network faults may target clients", f.target, f.kind.name()));
            }
            if f.loss_per_mille > 1000 {
                return Err(format!("scenario: faults.loss_per_mille {} must be 0..=1000", f.loss_per_mille));
            }
            if f.delay_ms > link_delay_ms_max {
                return Err(format!("scenario: faults.delay_ms {} must be 0..={link_delay_ms_max}", f.delay_ms));
            }
        }
        if let Some(mix) = &self.random_faults {
            if mix.max > random_faults_max {
                return Err(format!("scenario: random_faults.max {} must be 0..={random_faults_max}", mix.max));
            }
            if mix.brokers_at_once == Some(0) {
                return Err("scenario: random_faults.brokers_at_once must be at least 1 (or unset for no budget)".into());
            }
            if mix.recovery_ms > fault_ms_max {
                return Err(format!("scenario: random_faults.recovery_ms {} must be 0..={fault_ms_max}", mix.recovery_ms));
            }
            if mix.for_max_ms > fault_ms_max {
                return Err(format!("scenario: random_faults.for_max_ms {} must be 0..={fault_ms_max}", mix.for_max_ms));
            }
            if clients == 0 && self.brokers == 1 {
                if let Some(k) = mix.kinds.iter().find(|k| k.is_link()) {
                    return Err(format!("scenario: random_faults.kinds has {}, a link fault between a broker and another node, but there is one broker and no producers or consumers", k.name()));
                }
            }
        }
        Ok(())
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
            .collect()
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

    /// `SMOKE` with `field = value` lines added before the tables (top-level keys).
    fn with(extra: &str) -> String {
        format!("{extra}\n{SMOKE}")
    }

    fn rejected(text: &str, field: &str) {
        match Scenario::parse(text) {
            Ok(_) => panic!("accepted, expected an error naming {field}:\n{text}"),
            Err(e) => assert!(e.contains(field), "error {e:?} does not name {field}"),
        }
    }

    #[test]
    fn idempotence_defaults_to_acks_all_and_is_refused_without_it() {
        let p = |acks: &str, idem: &str| SMOKE.replace("{ topic = \"t\", rate = 100 }", &format!("{{ topic = \"t\", rate = 100, acks = \"{acks}\"{idem} }}"));
        let idempotent = |text: String| Scenario::parse(&text).unwrap().producers[0].idempotent();
        assert!(Scenario::parse(SMOKE).unwrap().producers[0].idempotent(), "acks defaults to all, so idempotent");
        assert!(idempotent(p("all", "")));
        assert!(idempotent(p("-1", "")));
        assert!(!idempotent(p("1", "")));
        assert!(!idempotent(p("0", "")));
        assert!(!idempotent(p("all", ", idempotent = false")));
        assert!(!idempotent(p("1", ", idempotent = false")));
        rejected(&p("1", ", idempotent = true"), "producers.idempotent");
        rejected(&p("0", ", idempotent = true"), "producers.idempotent");
    }

    #[test]
    fn process_and_disk_faults_on_clients_are_refused_network_faults_allowed() {
        for kind in ["kill", "power_loss", "pause", "slow_disk", "disk_full", "disk_eio"] {
            let text = SMOKE.replace("kind = \"power_loss\"", &format!("kind = \"{kind}\", target = \"producer-0\""));
            rejected(&text, "faults.target");
            let text = SMOKE.replace("kind = \"power_loss\"", &format!("kind = \"{kind}\", target = \"consumer-0\""));
            rejected(&text, "faults.target");
        }
        for kind in ["isolate", "isolate_in", "isolate_out"] {
            let text = SMOKE.replace("kind = \"power_loss\"", &format!("kind = \"{kind}\", target = \"consumer-0\""));
            Scenario::parse(&text).unwrap();
        }
        let link = SMOKE.replace("kind = \"power_loss\"", "kind = \"clog_link\", target = \"producer-0>broker-0\"");
        Scenario::parse(&link).unwrap();
        // Names that are no node of the scenario.
        rejected(&SMOKE.replace("kind = \"power_loss\"", "kind = \"isolate\", target = \"producer-1\""), "faults.target");
        rejected(&SMOKE.replace("kind = \"power_loss\"", "kind = \"slow_link\", target = \"broker-0>nobody\""), "faults.target");
        rejected(&SMOKE.replace("kind = \"power_loss\"", "kind = \"kill\", target = \"broker-0>producer-0\""), "faults.target");
    }

    #[test]
    fn limits_that_protect_the_harness_name_their_field() {
        // Too many random faults.
        rejected(&with("random_faults = { kinds = [\"kill\"], max = 101 }"), "random_faults.max");
        Scenario::parse(&with("random_faults = { kinds = [\"kill\"], max = 100 }")).unwrap();
        // Link faults in the mix with nobody on the other end of the link.
        let lonely = "name = \"x\"\nduration_ms = 1000\ntopics = [{ name = \"t\" }]\n";
        rejected(&format!("{lonely}random_faults = {{ kinds = [\"kill\", \"clog_link\"], max = 3 }}"), "random_faults.kinds");
        rejected(&format!("{lonely}random_faults = {{ kinds = [\"slow_link\"], max = 3 }}"), "random_faults.kinds");
        Scenario::parse(&format!("{lonely}random_faults = {{ kinds = [\"kill\"], max = 3 }}")).unwrap();
        // Too many client nodes for the harness's address plan.
        let crowd = SMOKE.replace("rate = 100 }", "rate = 100, count = 200 }");
        rejected(&crowd, "producers.count");
        Scenario::parse(&SMOKE.replace("rate = 100 }", "rate = 100, count = 199 }")).unwrap();
        // Record sizes.
        rejected(&SMOKE.replace("rate = 100 }", "rate = 100, record_bytes = 0 }"), "producers.record_bytes");
        rejected(&SMOKE.replace("rate = 100 }", &format!("rate = 100, record_bytes = {} }}", record_bytes_max + 1)), "producers.record_bytes");
        Scenario::parse(&SMOKE.replace("rate = 100 }", &format!("rate = 100, record_bytes = {record_bytes_max} }}"))).unwrap();
        // Clocks that would overflow.
        rejected(&SMOKE.replace("duration_ms = 1000", &format!("duration_ms = {}", phase_ms_max + 1)), "duration_ms");
        rejected(&with(&format!("heal_ms = {}", phase_ms_max + 1)), "heal_ms");
        rejected(&SMOKE.replace("for = 200", &format!("for = {}", fault_ms_max + 1)), "faults.for");
        // Broker settings the broker would refuse to open with (it would never start).
        rejected(&with("broker = { segment_bytes = 0 }"), "broker.segment_bytes");
        rejected(&with("broker = { flush_messages = 0 }"), "broker.flush_messages");
        rejected(&with("broker = { disk_latency_us = [0, 10000000] }"), "broker.disk_latency_us");
        Scenario::parse(&with("broker = { segment_bytes = 65536, flush_messages = 1, disk_latency_us = [20, 200] }")).unwrap();
    }

    #[test]
    fn the_matrix_scenarios_are_valid() {
        for row in crate::matrix::rows() {
            row.scenario.validate().unwrap_or_else(|e| panic!("{}: {e}", row.scenario.name));
        }
    }
}
