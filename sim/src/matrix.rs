//! The durability matrix (DESIGN.md), measured: for each acks × flush policy × fault row, a
//! scenario is built, run over many seeds, and the acknowledged writes that were lost are
//! counted. Rows that promise "no acknowledged loss" must measure zero; rows where loss is
//! allowed show how often the fault really costs data. One broker until replication exists, so
//! "all replicas lose power together" is that broker losing power.

use crate::scenario::{BrokerSettings, ConsumerSpec, Expect, FaultKind, FaultSpec, ProducerSpec, Scenario, TopicSpec};

/// One row of the matrix.
pub struct Row {
    pub acks: &'static str,
    pub flush: &'static str,
    pub fault: &'static str,
    /// What Kafka promises for this row.
    pub loss_allowed: bool,
    pub scenario: Scenario,
}

fn scenario(name: &str, acks: &str, flush_messages: Option<u64>, fault: FaultKind) -> Scenario {
    let faults = [2_000, 5_000, 8_000].into_iter().map(|at| FaultSpec::new(at, fault, "broker-0", 700)).collect();
    Scenario {
        name: name.into(),
        duration_ms: 10_000,
        heal_ms: 3_000,
        brokers: 1,
        broker: BrokerSettings { flush_messages, disk_latency_us: Some([20, 200]), ..BrokerSettings::default() },
        topics: vec![TopicSpec { name: "orders".into(), partitions: 2, replication_factor: 1 }],
        producers: vec![ProducerSpec { topic: "orders".into(), acks: acks.into(), rate: 300, record_bytes: 64, idempotent: None, keys: 0, count: 1 }],
        consumers: vec![ConsumerSpec { topic: "orders".into(), max_wait_ms: 100 }],
        faults,
        random_faults: None,
        expect: Expect { loss_allowed: true, acks1_loss_allowed: true }, // the matrix counts loss itself
    }
}

/// The rows that apply to a single broker.
pub fn rows() -> Vec<Row> {
    let row = |acks, flush, fault_name, loss_allowed, flush_messages, kind| Row {
        acks,
        flush,
        fault: fault_name,
        loss_allowed,
        scenario: scenario(&format!("matrix-acks{acks}-{flush}-{fault_name}").replace(' ', "-"), acks, flush_messages, kind),
    };
    vec![
        row("0", "never", "process crash", true, None, FaultKind::Kill),
        row("1", "never", "power loss before followers fetch", true, None, FaultKind::PowerLoss),
        row("all", "never", "process crash/restart", false, None, FaultKind::Kill),
        row("all", "never", "all replicas lose power", true, None, FaultKind::PowerLoss),
        row("all", "fsync before ack", "all replicas lose power", false, Some(1), FaultKind::PowerLoss),
        row("all", "never", "partition isolates the leader", false, None, FaultKind::Isolate),
    ]
}
