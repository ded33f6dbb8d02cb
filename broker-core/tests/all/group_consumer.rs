//! The Rust group consumer against a real broker in process (real sockets, real files): two
//! members split a topic, commit, one leaves, and the other takes its partitions over at their
//! committed offsets, reading every record at least once; under the classic protocol
//! (cooperative-sticky) and KIP-848's (`group.protocol=consumer`, the broker's uniform assignor).

use broker_core::client::admin::create_topics;
use broker_core::client::assignor::Assignor;
use broker_core::client::group::{GroupProtocol, Reset};
use broker_core::client::{GroupConfig, GroupConsumer, GroupEvent, Producer, ProducerConfig};
use broker_core::server;
use broker_core::storage::FileDisk;
use broker_core::testing::node_serving;
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const partitions: i32 = 4;
const records_per_phase: usize = 400;
/// Each phase (split, hand-over) must finish within this.
const phase_timeout: Duration = Duration::from_secs(60);

/// What one member saw: (partition, offset) read, commits, and its events.
#[derive(Default)]
struct Seen {
    read: BTreeSet<(i32, i64)>,
    first_after_assign: BTreeMap<i32, i64>,
    committed: BTreeMap<i32, i64>,
    events: Vec<GroupEvent>,
}

fn member(addr: SocketAddr, name: &str, protocol: &GroupProtocol) -> GroupConsumer {
    let mut c = GroupConfig::new("g", name);
    (
        c.session_timeout_ms,
        c.heartbeat_interval_ms,
        c.auto_commit,
        c.reset,
    ) = (10_000, 300, false, Reset::Earliest);
    c.assignors = vec![Assignor::CooperativeSticky, Assignor::Range];
    c.protocol = protocol.clone();
    let mut g = GroupConsumer::new(vec![addr], c);
    g.subscribe(&["t"]);
    g
}

/// Polls until `stop` is set, committing after every poll with records.
async fn run(
    mut g: GroupConsumer,
    seen: Arc<Mutex<Seen>>,
    stop: Arc<Mutex<bool>>,
) -> GroupConsumer {
    while !*stop.lock().unwrap() {
        let polled = g.poll(100).await;
        {
            let mut s = seen.lock().unwrap();
            for e in &polled.events {
                if let GroupEvent::Assigned { partitions: tp, .. } = &e.event {
                    for p in tp.get("t").into_iter().flatten() {
                        s.first_after_assign.remove(p);
                    }
                }
            }
            s.events.extend(polled.events.into_iter().map(|e| e.event));
            for r in polled.records.iter().filter(|r| r.fresh) {
                s.first_after_assign.entry(r.partition).or_insert(r.offset);
                s.read.insert((r.partition, r.offset));
            }
        }
        if !polled.records.is_empty() {
            let mut events = Vec::new();
            if g.commit(&mut events).await.is_ok() {
                let mut s = seen.lock().unwrap();
                for e in &events {
                    if let GroupEvent::Committed(offsets) = &e.event {
                        s.committed
                            .extend(offsets.iter().map(|((_, p), o)| (*p, *o)));
                    }
                }
            }
        }
    }
    g
}

async fn produce(addr: SocketAddr, from: usize) {
    let mut p = Producer::new(
        addr,
        ProducerConfig {
            client_id: "producer".into(),
            ..ProducerConfig::default()
        },
    );
    for i in from..from + records_per_phase {
        let value = bytes::Bytes::from(format!("v{i}"));
        p.send(
            "t",
            (i % partitions as usize) as i32,
            &[(None, Some(value))],
            0,
        )
        .await
        .expect("produce");
    }
}

async fn wait_for(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + phase_timeout;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[test]
fn two_members_split_a_topic_and_one_takes_over_at_the_committed_offsets() {
    split_then_take_over(GroupProtocol::Classic);
}

#[test]
fn kip848_two_members_split_a_topic_and_one_takes_over_at_the_committed_offsets() {
    split_then_take_over(GroupProtocol::Consumer { assignor: Some("uniform".into()) });
}

fn split_then_take_over(protocol: GroupProtocol) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = node_serving(Arc::new(FileDisk::new()), dir.path(), addr, |c| {
            (
                c.groups.initial_rebalance_delay_ms,
                c.groups.offsets_partitions,
            ) = (0, 3);
            c.groups.consumer_heartbeat_interval_ms = 300;
        });
        let node = tokio::spawn(server::serve(listener, shared, std::future::pending()));
        create_topics(
            addr,
            &[("t".into(), partitions, 1)],
            Duration::from_secs(10),
        )
        .await
        .expect("create t");

        let (seen_a, seen_b) = (
            Arc::new(Mutex::new(Seen::default())),
            Arc::new(Mutex::new(Seen::default())),
        );
        let (stop_a, stop_b) = (Arc::new(Mutex::new(false)), Arc::new(Mutex::new(false)));
        let a = tokio::spawn(run(member(addr, "a", &protocol), seen_a.clone(), stop_a.clone()));
        let b = tokio::spawn(run(member(addr, "b", &protocol), seen_b.clone(), stop_b.clone()));
        // The first phase is produced once both hold partitions: produced before, a member that
        // forms the group alone may read and commit all of it before the other joins, which then
        // starts at the end of every partition it gets and reads nothing (seen under load).
        let holds = |s: &Seen| s.events.iter().any(|e| matches!(e, GroupEvent::Assigned { partitions: tp, .. } if tp.get("t").is_some_and(|v| !v.is_empty())));
        wait_for("both members to hold partitions", || holds(&seen_a.lock().unwrap()) && holds(&seen_b.lock().unwrap())).await;
        produce(addr, 0).await;
        let both_read = || {
            let (a, b) = (seen_a.lock().unwrap(), seen_b.lock().unwrap());
            !a.read.is_empty()
                && !b.read.is_empty()
                && a.read.len() + b.read.len() >= records_per_phase
        };
        wait_for("both members to read the first phase", both_read).await;
        {
            let (a, b) = (seen_a.lock().unwrap(), seen_b.lock().unwrap());
            let pa: BTreeSet<i32> = a.read.iter().map(|r| r.0).collect();
            let pb: BTreeSet<i32> = b.read.iter().map(|r| r.0).collect();
            assert!(
                pa.is_disjoint(&pb)
                    || a.events
                        .iter()
                        .chain(&b.events)
                        .any(|e| matches!(e, GroupEvent::Revoked(_))),
                "a read {pa:?}, b read {pb:?} with no hand-over between"
            );
        }
        // A leaves; B must take every partition over where A's commits left it.
        *stop_a.lock().unwrap() = true;
        let mut ga = a.await.unwrap();
        let left = ga.close().await;
        let a_committed = seen_a.lock().unwrap().committed.clone();
        produce(addr, records_per_phase).await;
        let all_read = || {
            let (a, b) = (seen_a.lock().unwrap(), seen_b.lock().unwrap());
            a.read.union(&b.read).count() >= 2 * records_per_phase
        };
        wait_for("b to read everything after a left", all_read).await;
        *stop_b.lock().unwrap() = true;
        let gb = b.await.unwrap();
        assert_eq!(
            gb.assignment().get("t").map(Vec::len),
            Some(partitions as usize),
            "b owns every partition"
        );
        let b_seen = seen_b.lock().unwrap();
        for (p, committed) in &a_committed {
            let first = b_seen.first_after_assign.get(p).copied();
            assert!(
                first.is_some_and(|f| f <= *committed),
                "b started {p} at {first:?}, past a's commit {committed}: records skipped"
            );
        }
        assert!(
            left.iter().all(|e| matches!(e.event, GroupEvent::Revoked(_))),
            "{left:?}"
        );
        node.abort();
    });
}
