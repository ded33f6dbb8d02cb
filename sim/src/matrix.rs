//! The durability matrix (DESIGN.md), measured: each acks × flush policy × fault row of the
//! table becomes a scenario with real replication (3 brokers, every partition on all three),
//! runs over many seeds, and the acknowledged writes that were lost are counted. Rows that
//! promise "no acknowledged loss" must measure zero; rows where loss is allowed must show loss
//! on at least one seed, or they prove nothing. A few one-broker rows stay: they isolate what
//! the log and its flush policy alone promise.
//!
//! Who leads what: the controller gives partition p of the first topic the replicas
//! `[p, p+1, p+2] mod n` of the n live brokers (by id) and makes the first one leader
//! (`broker-core/src/controller/mod.rs`, `assign`). The harness creates the topic once as many
//! brokers as the replication factor have registered, so with RF = brokers = 3 the assignment
//! is fixed: `orders-1` starts on `broker-1`, `orders-2` on `broker-2`. After a failover the
//! first in-sync replica in that order leads, and nothing moves leadership back. In the
//! three-broker rows every broker is also a voter of the Raft metadata quorum (combined mode),
//! so a fault on the active controller (often `broker-0`, which may win the first election)
//! moves the controller instead of stalling elections; the rows that hit `broker-0` say so.
//!
//! The promises are DESIGN.md's, not this module's: a row that cannot show what it claims
//! fails (no loss where loss is allowed proves nothing) rather than being weakened to pass.

use crate::scenario::{BrokerSettings, ConsumerSpec, Expect, FaultKind, FaultSpec, ProducerSpec, Scenario, TopicSpec};

/// One row of the matrix.
pub struct Row {
    /// The cluster: "1 broker", "3 brokers, RF=3, minISR=2", ...
    pub setup: &'static str,
    pub acks: &'static str,
    pub flush: &'static str,
    pub fault: &'static str,
    /// What Kafka promises for this row: true when acknowledged loss is allowed.
    pub loss_allowed: bool,
    /// How the fault is staged, and what to read into the result.
    pub note: &'static str,
    pub scenario: Scenario,
}

const topic: &str = "orders";

/// The cluster of a row: brokers, and the one topic's partitions and replication factor.
struct Shape {
    brokers: u32,
    partitions: i32,
    rf: i16,
}

/// A scenario of one topic, `orders`, one producer at 300 records/s and one consumer. Its
/// `expect` is set from the row's promise (see [`rows`]), so that `cargo sim run` on the
/// scenario as `cargo sim matrix --dump` writes it gives the row's verdict.
fn scenario(name: &str, shape: Shape, broker: BrokerSettings, acks: &str, duration_ms: u64, faults: Vec<FaultSpec>) -> Scenario {
    Scenario {
        name: format!("matrix-{name}"),
        duration_ms,
        heal_ms: if shape.brokers == 1 { 3_000 } else { 6_000 },
        brokers: shape.brokers,
        buggify: false,
        broker: BrokerSettings { disk_latency_us: Some([20, 200]), ..broker },
        topics: vec![TopicSpec { name: topic.into(), partitions: shape.partitions, replication_factor: shape.rf, config: Default::default() }],
        producers: vec![ProducerSpec { topic: topic.into(), acks: acks.into(), rate: 300, record_bytes: 64, idempotent: None, keys: 0, count: 1, tombstone_per_mille: 0, in_flight: 1, retries: 3, batch_records: crate::scenario::batch_records_max, transactional: false, abort_per_mille: 0, end_txn_timeout_ms: 0, user: None, client_id: None, request_timeout_ms: None }],
        consumers: vec![ConsumerSpec { topic: topic.into(), max_wait_ms: 100, user: None }],
        security: None,
        reassignments: Vec::new(),
        quotas: Vec::new(),
        joins: Vec::new(),
        decommissions: Vec::new(),
        groups: Vec::new(),
        processors: Vec::new(),
        faults,
        random_faults: None,
        expect: Expect::default(),
        disk_seed: None,
    }
}

fn fault(at: u64, kind: FaultKind, target: &str, for_ms: u64) -> FaultSpec {
    FaultSpec::new(at, kind, target, for_ms)
}

/// Three brokers, every partition on all three, min.insync.replicas=2.
fn replicated(name: &str, acks: &str, flush_messages: Option<u64>, duration_ms: u64, faults: Vec<FaultSpec>) -> Scenario {
    let broker = BrokerSettings { min_insync_replicas: Some(2), flush_messages, controller_voters: Some(3), ..BrokerSettings::default() };
    scenario(name, Shape { brokers: 3, partitions: 3, rf: 3 }, broker, acks, duration_ms, faults)
}

/// Crashes of the leaders of `orders-1` and `orders-2` in turn — broker-1, broker-2,
/// broker-1 — alternating kill and power loss, 1 s down and 3 s up between them. With
/// `slow_followers`, for the second before each crash every message from the doomed leader to
/// the other brokers takes `follower_delay_ms` more: its followers fetch late, so what it
/// acknowledged last is on no other replica when it dies.
fn leader_crashes(slow_followers: bool) -> Vec<FaultSpec> {
    let crashes = [(2_000, FaultKind::Kill, 1), (6_000, FaultKind::PowerLoss, 2), (10_000, FaultKind::PowerLoss, 1)];
    let mut faults = Vec::new();
    for (at, kind, leader) in crashes {
        faults.push(fault(at, kind, &format!("broker-{leader}"), 1_000));
        if slow_followers {
            for follower in (0..3).filter(|&b| b != leader) {
                let mut slow = fault(at - 1_000, FaultKind::SlowLink, &format!("broker-{leader}>broker-{follower}"), 1_000);
                slow.delay_ms = follower_delay_ms;
                faults.push(slow);
            }
        }
    }
    faults
}

/// How late a slow follower's fetch responses arrive, ms: a few hundred records at 300/s,
/// well under the 2 s replica lag that would take the follower out of the ISR, and under the
/// 1.5 s session, so the leader's heartbeats on the same link still arrive in time.
const follower_delay_ms: u64 = 300;

/// One broker at a time, alternating kill and power loss, each down 1 s and followed by 5 s
/// to restart, catch up and rejoin the ISR before the next (the `replicated` scenario's
/// fault budget).
fn single_broker_crashes(targets: [&str; 4]) -> Vec<FaultSpec> {
    let kinds = [FaultKind::Kill, FaultKind::PowerLoss, FaultKind::PowerLoss, FaultKind::Kill];
    (0..4).map(|i| fault(2_000 + 6_000 * i as u64, kinds[i], targets[i], 1_000)).collect()
}

/// Power loss on every broker at the same moment, twice.
fn all_lose_power() -> Vec<FaultSpec> {
    [3_000, 11_000].into_iter().flat_map(|at| (0..3).map(move |b| fault(at, FaultKind::PowerLoss, &format!("broker-{b}"), 1_000))).collect()
}

/// The acks=all leader-crash row's scenario with two transactional producers instead of the
/// plain one (one transaction in five aborted on purpose), under `transaction.version` `tv`:
/// the promise is acks=all's, for every transaction whose commit was acknowledged
/// (`txn_lost_write` counts as loss), and read_committed shows no aborted or torn one.
fn transactional(name: &str, tv: i64) -> Scenario {
    let mut s = replicated(name, "all", None, 12_000, leader_crashes(true));
    s.broker.transaction_version = Some(tv);
    s.producers = vec![ProducerSpec { transactional: true, abort_per_mille: 200, count: 2, ..s.producers[0].clone() }];
    s
}

/// KIP-966's "last replica standing", the same faults with `eligible.leader.replicas.enable`
/// off and on. Five brokers, one controller voter (`broker-0`), `orders-1` on broker-1 (leader),
/// broker-2 and broker-3: broker-3 is cut off (fenced: ISR {1,2}, at the minimum, so no ELR),
/// then broker-2 (fenced: ISR {1}, below it; with ELR on broker-2 enters the ELR and the leader's
/// high watermark stands still), then the last ISR member, broker-1, loses power and comes back
/// without what it had not flushed, before the others heal. Off: it is the last ISR member, so
/// it is elected again, and broker-2 and -3 truncate to it: acknowledged records are lost. On:
/// it registers after an unclean shutdown, leaves the ISR and is not in the ELR, so the
/// partition waits for broker-2, which holds every acknowledged record. The two bystanders
/// (broker-0, broker-4) keep a majority of brokers heartbeating, so the controller fences.
fn last_replica_standing(name: &str, elr: bool) -> Scenario {
    let broker = BrokerSettings { min_insync_replicas: Some(2), eligible_leader_replicas: Some(elr), ..BrokerSettings::default() };
    let faults = vec![
        fault(2_000, FaultKind::Isolate, "broker-3", 7_000),
        fault(4_000, FaultKind::Isolate, "broker-2", 5_000),
        fault(6_500, FaultKind::PowerLoss, "broker-1", 1_000),
    ];
    scenario(name, Shape { brokers: 5, partitions: 2, rf: 3 }, broker, "all", 12_000, faults)
}

/// The rows of DESIGN.md's table, with replication, then the one-broker rows.
pub fn rows() -> Vec<Row> {
    let rf3 = "3 brokers, RF=3, minISR=2";
    let one = "1 broker";
    let one_broker = |name: &str, acks: &str, flush_messages: Option<u64>, kind: FaultKind| {
        let faults = [2_000, 5_000, 8_000].into_iter().map(|at| fault(at, kind, "broker-0", 700)).collect();
        let broker = BrokerSettings { flush_messages, ..BrokerSettings::default() };
        scenario(name, Shape { brokers: 1, partitions: 2, rf: 1 }, broker, acks, 10_000, faults)
    };
    // Unclean election needs an out-of-sync replica to be elected. The partition's followers
    // must drop out of the ISR while its leader still reaches the controller (which shrinks
    // the ISR), so the controller must be no replica of it: four brokers, orders-1 on
    // broker-1 (leader), broker-2 and broker-3. With min.insync.replicas=1 the leader alone
    // acknowledges acks=all writes once the followers are out.
    let unclean = {
        let broker = BrokerSettings { min_insync_replicas: Some(1), unclean_leader_election: Some(true), ..BrokerSettings::default() };
        let faults = vec![
            fault(2_000, FaultKind::Isolate, "broker-2", 6_000),
            fault(2_000, FaultKind::Isolate, "broker-3", 6_000),
            fault(6_500, FaultKind::Kill, "broker-1", 4_000),
        ];
        scenario("acksall-never-unclean-election", Shape { brokers: 4, partitions: 2, rf: 3 }, broker, "all", 12_000, faults)
    };
    let mut rows = vec![
        Row {
            setup: rf3,
            acks: "0",
            flush: "never",
            fault: "leader crash (kill, power loss)",
            loss_allowed: true,
            note: "broker-1, broker-2, broker-1 (leaders of orders-1/-2) crash in turn; lost = records sent and missing",
            scenario: replicated("acks0-never-leader-crash", "0", None, 12_000, leader_crashes(false)),
        },
        Row {
            setup: rf3,
            acks: "1",
            flush: "never",
            fault: "leader crash before followers fetch",
            loss_allowed: true,
            note: "same crashes, each after 1 s of slow links (+300 ms) from the leader to its followers: what it acknowledged and they had not fetched is gone from the new leader, and truncated from the old one when it rejoins",
            scenario: replicated("acks1-never-leader-crash", "1", None, 12_000, leader_crashes(true)),
        },
        Row {
            setup: rf3,
            acks: "all",
            flush: "never",
            fault: "leader crash before followers fetch",
            loss_allowed: false,
            note: "the acks=1 row's faults exactly: acks=all waits for the ISR, so what the slow followers had not fetched was never acknowledged",
            scenario: replicated("acksall-never-leader-crash", "all", None, 12_000, leader_crashes(true)),
        },
        Row {
            setup: rf3,
            acks: "all",
            flush: "never",
            fault: "single broker crash/restart",
            loss_allowed: false,
            note: "kill, power loss, power loss, kill of broker-1/2/1/2, one at a time, 5 s to rejoin between",
            scenario: replicated("acksall-never-single-crash", "all", None, 26_000, single_broker_crashes(["broker-1", "broker-2", "broker-1", "broker-2"])),
        },
        Row {
            setup: rf3,
            acks: "all",
            flush: "never",
            fault: "single broker crash/restart, broker-0 included",
            loss_allowed: false,
            note: "as above on broker-0/1/0/2: every broker is a controller voter, so a crash of the active controller moves it to another voter and elections go on",
            scenario: replicated("acksall-never-single-crash-controller", "all", None, 26_000, single_broker_crashes(["broker-0", "broker-1", "broker-0", "broker-2"])),
        },
        Row {
            setup: rf3,
            acks: "all",
            flush: "never",
            fault: "all replicas lose power together",
            loss_allowed: true,
            note: "power loss on broker-0, -1 and -2 at the same moment, twice: unflushed records are on no disk",
            scenario: replicated("acksall-never-all-lose-power", "all", None, 16_000, all_lose_power()),
        },
        Row {
            setup: rf3,
            acks: "all",
            flush: "fsync before ack",
            fault: "all replicas lose power together",
            loss_allowed: false,
            note: "as above with flush.messages=1: every ISR member fsynced before the high watermark passed a record",
            scenario: replicated("acksall-fsync-all-lose-power", "all", Some(1), 16_000, all_lose_power()),
        },
        Row {
            setup: "4 brokers, RF=3, minISR=1, unclean",
            acks: "all",
            flush: "never",
            fault: "unclean leader election",
            loss_allowed: true,
            note: "orders-1 on broker-1/2/3: isolate 2 and 3 (they leave the ISR; leader 1 alone acknowledges), kill leader 1, heal 2 and 3: broker-2 is elected uncleanly and broker-1 truncates to it when back. Four brokers keep the controller (broker-0) out of orders-1 (the harness creates topics once every broker has registered)",
            scenario: unclean,
        },
        Row {
            setup: rf3,
            acks: "all",
            flush: "never",
            fault: "partition isolates the leader",
            loss_allowed: false,
            note: "isolate broker-1 (leader of orders-1) for 3 s, later broker-2: fenced, a new leader is elected, the old one truncates",
            scenario: replicated("acksall-never-isolate-leader", "all", None, 16_000, vec![fault(2_000, FaultKind::Isolate, "broker-1", 3_000), fault(9_000, FaultKind::Isolate, "broker-2", 3_000)]),
        },
        Row {
            setup: rf3,
            acks: "all",
            flush: "never",
            fault: "partition isolates broker-0 (leader and controller)",
            loss_allowed: false,
            note: "isolate broker-0 (leader of orders-0, one of three controller voters) for 3 s, twice: if it was the active controller it resigns (check-quorum) and the other two elect one that fences it, so orders-0 fails over while it is cut off; no acknowledged loss either way",
            scenario: replicated("acksall-never-isolate-controller", "all", None, 16_000, vec![fault(2_000, FaultKind::Isolate, "broker-0", 3_000), fault(9_000, FaultKind::Isolate, "broker-0", 3_000)]),
        },
        Row {
            setup: "5 brokers, RF=3, minISR=2, ELR off",
            acks: "all",
            flush: "never",
            fault: "ISR shrinks to the leader, which then loses power",
            loss_allowed: true,
            note: "orders-1 on broker-1/2/3: isolate 3, then 2 (ISR {1}), power loss on leader 1 before they heal: the last ISR member is elected again without what it lost, and 2 and 3 truncate to it (Kafka before KIP-966)",
            scenario: last_replica_standing("acksall-never-last-replica-standing", false),
        },
        Row {
            setup: "5 brokers, RF=3, minISR=2, ELR on",
            acks: "all",
            flush: "never",
            fault: "ISR shrinks to the leader, which then loses power",
            loss_allowed: false,
            note: "the same faults with eligible.leader.replicas.enable: broker-2 left an ISR at the minimum, so it is in the ELR (the high watermark stood still since); broker-1 registers after an unclean shutdown and is not eligible; broker-2 is elected when it heals (KIP-966)",
            scenario: last_replica_standing("acksall-never-last-replica-standing-elr", true),
        },
        Row {
            setup: rf3,
            acks: "all, transactional (classic, TV1)",
            flush: "never",
            fault: "leader crash before followers fetch",
            loss_allowed: false,
            note: "the acks=all leader-crash row's faults under two transactional producers (one transaction in five aborted), transaction.version 1: no acknowledged commit lost, nothing aborted or torn visible to read_committed",
            scenario: transactional("txn-tv1-never-leader-crash", 1),
        },
        Row {
            setup: rf3,
            acks: "all, transactional (KIP-890, TV2)",
            flush: "never",
            fault: "leader crash before followers fetch",
            loss_allowed: false,
            note: "the same with transaction.version 2: every end bumps the epoch",
            scenario: transactional("txn-tv2-never-leader-crash", 2),
        },
        Row {
            setup: one,
            acks: "all",
            flush: "never",
            fault: "process crash/restart",
            loss_allowed: false,
            note: "kill broker-0 three times for 700 ms: the OS page cache survives a process crash",
            scenario: one_broker("1broker-acksall-never-kill", "all", None, FaultKind::Kill),
        },
        Row {
            setup: one,
            acks: "all",
            flush: "never",
            fault: "power loss",
            loss_allowed: true,
            note: "power loss on broker-0 three times: nothing is fsynced until a segment rolls",
            scenario: one_broker("1broker-acksall-never-power-loss", "all", None, FaultKind::PowerLoss),
        },
        Row {
            setup: one,
            acks: "all",
            flush: "fsync before ack",
            fault: "power loss",
            loss_allowed: false,
            note: "as above with flush.messages=1",
            scenario: one_broker("1broker-acksall-fsync-power-loss", "all", Some(1), FaultKind::PowerLoss),
        },
    ];
    for row in &mut rows {
        row.scenario.expect = Expect { loss_allowed: row.loss_allowed, acks1_loss_allowed: row.loss_allowed, anomaly: Vec::new() };
    }
    rows
}

/// What one seed of a row measured.
#[derive(Debug, Clone)]
pub struct Measured {
    pub seed: u64,
    /// Writes acknowledged with acks ≥ 1.
    pub acknowledged: usize,
    /// acks=0 writes sent without error (nothing is acknowledged for them).
    pub sent_acks0: usize,
    /// Acknowledged writes missing from the final log (acks ≥ 1, `acknowledged_durable`), and
    /// committed transactions not whole under read_committed (`txn_lost_write`), plus acks=0
    /// writes sent and missing.
    pub lost: usize,
    /// The first few losses, for the report.
    pub losses: Vec<String>,
    /// Every other violation the scenario's `expect` does not allow: liveness, consistency,
    /// ordering — and in a row that promises no loss, the consumer-side loss checkers
    /// (`lost_write`, `inconsistent_offsets`) too. A failure in every row.
    pub other: Vec<String>,
}

/// Runs one row under one seed.
#[cfg(madsim)]
pub fn measure(row: &Row, seed: u64, bug: Option<broker_core::broker::PlantedBug>) -> Measured {
    let r = crate::cluster::run(&row.scenario, &format!("<matrix:{}>", row.scenario.name), seed, bug).expect("every row is a valid scenario (tested)");
    measured(&r, seed)
}

/// What a run of a row measured, simulated or real (`sim matrix` in the plain build).
pub fn measured(r: &crate::cluster::RunResult, seed: u64) -> Measured {
    use crate::history::Outcome;
    let h = &r.history;
    let final_values: std::collections::BTreeSet<&[u8]> = h.final_read.values().flatten().map(|(_, v)| v.as_slice()).collect();
    let sent: Vec<_> = h.writes.iter().filter(|w| w.acks == 0 && matches!(w.outcome, Outcome::Ok(_))).collect();
    let sent_lost: Vec<String> = sent.iter().filter(|w| !final_values.contains(w.value.as_slice())).map(|w| format!("acks=0 write {:?} sent at {} ms: missing", String::from_utf8_lossy(&w.value), w.complete_ms)).collect();
    // A committed transaction's records missing from read_committed are lost as surely.
    let loss_checkers = ["acknowledged_durable", "txn_lost_write"];
    let acked_lost: Vec<String> = r.violations.iter().chain(&r.allowed).filter(|v| loss_checkers.contains(&v.checker)).map(|v| v.to_string()).collect();
    Measured {
        seed,
        acknowledged: h.writes.iter().filter(|w| w.acknowledged().is_some()).count(),
        sent_acks0: sent.len(),
        lost: acked_lost.len() + sent_lost.len(),
        losses: acked_lost.iter().chain(&sent_lost).take(3).cloned().collect(),
        other: r.violations.iter().filter(|v| !loss_checkers.contains(&v.checker)).map(|v| v.to_string()).collect(),
    }
}

/// A row's verdict over its seeds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Promised no acknowledged loss, and none was measured.
    NoLoss,
    /// Loss is allowed, and at least one seed showed it.
    LossSeen,
    /// Loss is allowed, but no seed showed any: the row proves nothing.
    NoLossSeen,
    /// Promised no acknowledged loss, and some was measured: a broker bug (or a wrong row).
    AcknowledgedLoss,
    /// A checker other than the loss checkers failed.
    OtherViolation,
}

impl Verdict {
    pub fn of(row: &Row, measured: &[Measured]) -> Verdict {
        let lost: usize = measured.iter().map(|m| m.lost).sum();
        match (measured.iter().any(|m| !m.other.is_empty()), row.loss_allowed, lost) {
            (true, _, _) => Verdict::OtherViolation,
            (false, false, 0) => Verdict::NoLoss,
            (false, false, _) => Verdict::AcknowledgedLoss,
            (false, true, 0) => Verdict::NoLossSeen,
            (false, true, _) => Verdict::LossSeen,
        }
    }

    pub fn ok(self) -> bool {
        matches!(self, Verdict::NoLoss | Verdict::LossSeen)
    }

    pub fn text(self) -> &'static str {
        match self {
            Verdict::NoLoss => "ok: no acknowledged loss",
            Verdict::LossSeen => "ok: loss allowed, and seen",
            Verdict::NoLossSeen => "FAILED: loss allowed but never seen (the row proves nothing)",
            Verdict::AcknowledgedLoss => "VIOLATION: acknowledged loss",
            Verdict::OtherViolation => "VIOLATION: other checkers",
        }
    }
}
