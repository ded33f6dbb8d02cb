//! Three real `broker` processes on loopback as one cluster, driven by real Kafka clients:
//! confluent-kafka (librdkafka) creates a replicated topic, produces with acks=all and
//! idempotence and reads everything back; a leader is SIGKILLed mid-produce and every
//! acknowledged record must survive on the new leaders, and the killed broker must rejoin the
//! ISR after a restart; kcat and kafka-python bootstrapped from a non-controller node see the
//! whole cluster; a consumer group's coordinator is SIGKILLed mid-consumption and the group
//! carries on at another broker with every acknowledged commit, and a share group's state rides
//! out the SIGKILL of a share-partition leader or of its coordinator (`groups.rs`); transactional
//! producers commit, abort and are fenced with markers crossing brokers (`transactions.rs`).
//!
//! In these tests node 0 is the only metadata controller voter, in the same process and on the
//! same port: no test here kills node 0, since that would stop the cluster's metadata rather
//! than fail over a partition leader. `quorum.rs` runs all three nodes as voters of a Raft
//! quorum and kills the active controller.
//!
//! Every wait is bounded and every failure names what was waited for, with the last lines of
//! every broker's output. Processes are SIGKILLed and reaped on drop, so a failed test leaves
//! none behind. Missing tools (kcat, a Python with confluent_kafka and kafka-python) fail the
//! test with the command that installs them; nothing skips. Processes are started and watched by
//! `support.rs`, which `real_clients.rs` shares.

mod groups;
mod harness;
mod quorum;
mod reassign;
mod security;
mod transactions;

use harness::*;
use serde_json::Value;
use crate::support::{client_command, free_ports, kcat, run_bounded, BrokerProcess, ClientProcess};
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output};
use std::sync::{Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

/// Brokers per cluster: enough for replication factor 3 and min.insync.replicas 2 to survive
/// one dead broker.
const cluster_size: usize = 3;
/// How long one broker may take to print its `listening on` line.
const broker_ready_timeout_s: u64 = 20;
/// How long a SIGKILLed broker may take to be reaped.
const broker_exit_timeout_s: u64 = 10;
/// One client script (20,000 records through a debug-build cluster on a shared 2-core machine
/// fits in a fraction of this; a hang must still end).
const client_timeout_s: u64 = 90;
/// Metadata waits inside `cluster_topic.py`: brokers registered, a topic fully replicated.
const metadata_timeout_s: u64 = 20;
/// From SIGKILL of a leader to metadata naming new leaders for all its partitions: the
/// session timeout (2 s) plus heartbeats, the election, metadata propagation and a Python start.
const failover_s_max: f64 = 8.0;
/// Longest time from SIGTERM to metadata naming new leaders: under the 2 s session timeout
/// the brokers run with here, so only a controlled shutdown can meet it.
const handover_s_max: f64 = 1.5;
/// From restarting the killed broker to every ISR having all three members again: start,
/// registration, metadata replay, and the follower catching up on what it missed.
const isr_rejoin_s_max: u64 = 20;
/// Records produced in the round-trip and failover tests.
const records_n: usize = 20_000;
/// Failover producer pace, records/s: 20,000 records take ~10 s, so the kill (after 1,000
/// acknowledgements) and the ~2 s failover fall well inside the run.
const failover_rate: u32 = 2_000;
/// Acknowledgements before the leader is killed.
const failover_kill_after_acks: usize = 1_000;
/// Output lines kept per broker process, and how many of them a failure message shows.
const broker_log_lines_max: usize = 300;
const broker_log_lines_shown: usize = 40;

/// Broker settings: three replicas that tolerate one loss, and failure detection fast enough
/// (heartbeat 200 ms, fenced after 2 s, ISR shrink after 3 s) to fit the failover in seconds.
const cluster_flags: &[&str] = &[
    "--default-replication-factor",
    "3",
    "--min-insync-replicas",
    "2",
    "--broker-heartbeat-interval-ms",
    "200",
    "--broker-session-timeout-ms",
    "2000",
    "--replica-lag-time-max-ms",
    "3000",
];

// ---------------------------------------------------------------------------------------------
// The tests.

/// Checks what every fresh replicated topic must look like: the three brokers at their
/// addresses, `partitions` partitions each on all three brokers and all three in sync.
fn check_fully_replicated(cluster: &Cluster, md: &Metadata, topic: &str, partitions: i32) {
    let want_brokers: BTreeMap<i32, String> = (0..)
        .zip(&cluster.nodes)
        .map(|(id, n)| (id, n.addr()))
        .collect();
    if md.brokers != want_brokers {
        cluster.fail(&format!(
            "metadata lists brokers {:?}, expected {want_brokers:?}\n{}",
            md.brokers, md.raw
        ));
    }
    let ids: Vec<i32> = want_brokers.keys().copied().collect();
    if md.partitions.keys().copied().collect::<Vec<_>>() != (0..partitions).collect::<Vec<_>>() {
        cluster.fail(&format!(
            "{topic}: metadata lists partitions {:?}, created {partitions}\n{}",
            md.partitions.keys(),
            md.raw
        ));
    }
    for (p, info) in &md.partitions {
        if info.replicas != ids || info.isr != ids || !ids.contains(&info.leader) {
            cluster.fail(&format!(
                "{topic}-{p}: leader {}, replicas {:?}, ISR {:?}; expected replicas and ISR {ids:?} and a leader among them\n{}",
                info.leader, info.replicas, info.isr, md.raw
            ));
        }
    }
}

/// Creates `topic` (3 partitions, fully replicated) so that its partition 0 is not led by node 0,
/// the controller, which the failover tests must not stop (one controller voter for now).
/// Replicas are assigned on a ring whose start rotates by the number of existing topics, so a
/// one-partition warm-up topic first moves it. Returns the metadata and partition 0's leader.
fn topic_led_off_the_controller(cluster: &mut Cluster, topic: &str) -> (Metadata, i32) {
    let warmup = cluster.metadata(0, cluster_size, &["--topic", "warmup", "--create", "--partitions", "1", "--min-isr", "3"]);
    check_fully_replicated(cluster, &warmup, "warmup", 1);
    let md = cluster.metadata(0, cluster_size, &["--topic", topic, "--create", "--partitions", "3", "--min-isr", "3"]);
    check_fully_replicated(cluster, &md, topic, 3);
    let leader = md.partitions[&0].leader;
    (md, leader)
}

/// A topic with 3 partitions and replication factor 3 on 3 brokers: fully replicated, leaders
/// on three different brokers; 20,000 idempotent acks=all records read back exactly once, in
/// order per partition (confluent-kafka both ways).
#[test]
fn cluster_replicated_topic_roundtrip_confluent() {
    let mut cluster = Cluster::start();
    let topic = "replicated";
    let md = cluster.metadata(
        0,
        cluster_size,
        &[
            "--topic",
            topic,
            "--create",
            "--partitions",
            "3",
            "--replication-factor",
            "3",
            "--min-isr",
            "3",
        ],
    );
    check_fully_replicated(&cluster, &md, topic, 3);
    if md.leaders().len() != cluster_size {
        cluster.fail(&format!(
            "{topic}: leaders {:?} are not spread over the {cluster_size} brokers\n{}",
            md.leaders(),
            md.raw
        ));
    }
    let n = records_n.to_string();
    cluster.script(0, "cluster_roundtrip.py", &["--topic", topic, "--n", &n]);
    cluster.assert_alive("after the round trip", None);
}

/// SIGKILL the leader of partition 0 while an acks=all producer runs: metadata names new
/// leaders within `failover_s_max`, production continues on them, every acknowledged record
/// is read back; the killed broker, restarted on its data directory, rejoins every ISR.
#[test]
fn cluster_leader_sigkill_mid_produce_then_rejoin() {
    let mut cluster = Cluster::start();
    let topic = "failover";
    let (md, victim) = topic_led_off_the_controller(&mut cluster, topic);
    if victim == 0 {
        cluster.fail(&format!(
            "{topic}-0 is led by node 0, the controller, even after a warm-up topic; this test needs a \
             non-controller leader to kill\n{}",
            md.raw
        ));
    }
    let victim_partitions: Vec<i32> = md
        .partitions
        .iter()
        .filter(|(_, p)| p.leader == victim)
        .map(|(p, _)| *p)
        .collect();

    let producer = FailoverProducer::start(&cluster, 0, topic);
    cluster.sigkill(victim);
    let killed_at = Instant::now();
    producer.killed();
    eprintln!("SIGKILLed node {victim}, leader of {topic} partitions {victim_partitions:?}");

    let victim_arg = victim.to_string();
    let after = cluster.metadata(
        0,
        cluster_size - 1,
        &["--topic", topic, "--leader-not", &victim_arg],
    );
    let failover_s = killed_at.elapsed().as_secs_f64();
    eprintln!(
        "new leaders after {failover_s:.2} s (metadata polled for {:.2} s): {}",
        after.elapsed_s, after.raw
    );
    if failover_s > failover_s_max {
        cluster.fail(&format!(
            "metadata named new leaders for partitions {victim_partitions:?} only {failover_s:.2} s after node {victim} \
             was killed; expected within {failover_s_max} s\n{}",
            after.raw
        ));
    }
    for p in &victim_partitions {
        let info = &after.partitions[p];
        if info.isr.contains(&victim) || info.isr.len() < 2 || !info.isr.contains(&info.leader) {
            cluster.fail(&format!(
                "{topic}-{p} after node {victim} died: leader {}, ISR {:?}; expected the dead node out of the ISR, \
                 the new leader in it, and at least min.insync.replicas=2 members\n{}",
                info.leader, info.isr, after.raw
            ));
        }
    }
    let acked = producer.finish(&mut cluster, Some(victim));

    // Read back from the survivors, before the killed broker returns: the new leaders alone
    // must hold every acknowledged record.
    cluster.script(
        0,
        "cluster_verify_acked.py",
        &["--topic", topic, "--acked", &acked.path, "--no-duplicates"],
    );

    cluster.restart(victim);
    let rejoin = isr_rejoin_s_max.to_string();
    let restarted_at = Instant::now();
    let back = cluster.metadata(
        0,
        cluster_size,
        &["--topic", topic, "--min-isr", "3", "--timeout", &rejoin],
    );
    check_fully_replicated(&cluster, &back, topic, 3);
    eprintln!(
        "node {victim} back in every ISR {:.2} s after its restart: {}",
        restarted_at.elapsed().as_secs_f64(),
        back.raw
    );
    cluster.assert_alive("after the restart", None);
}

/// The acks=all idempotent producer of the failover tests (`cluster_failover_produce.py`),
/// bootstrapped from node `bootstrap`, `records_n` records at `failover_rate`.
struct FailoverProducer {
    process: ClientProcess,
    killed: String,
    acked: String,
    work: tempfile::TempDir,
}

/// The producer's report: every acknowledged record, for `cluster_verify_acked.py`.
struct Acked {
    path: String,
    _work: tempfile::TempDir,
}

impl FailoverProducer {
    /// Starts it; returns once it has `failover_kill_after_acks` acknowledgements.
    fn start(cluster: &Cluster, bootstrap: i32, topic: &str) -> FailoverProducer {
        let work = tempfile::tempdir().expect("tempdir");
        let path = |name: &str| work.path().join(name).to_str().expect("utf-8 temp path").to_string();
        let (started, killed, acked) = (path("started"), path("killed"), path("acked.json"));
        let (n, rate, kill_after) = (records_n.to_string(), failover_rate.to_string(), failover_kill_after_acks.to_string());
        let args = ["--topic", topic, "--n", &n, "--rate", &rate, "--started", &started, "--started-after", &kill_after, "--killed", &killed, "--out", &acked];
        let mut process = ClientProcess::spawn(&mut client_command(&cluster.addr(bootstrap), "cluster_failover_produce.py", &args), None)
            .unwrap_or_else(|why| cluster.fail(&format!("cluster_failover_produce.py: {why}")));
        let deadline = Instant::now() + Duration::from_secs(30);
        while !Path::new(&started).exists() {
            if process.finished() || Instant::now() > deadline {
                let out = process.wait(Duration::ZERO);
                cluster.fail(&format!(
                    "cluster_failover_produce.py: no {failover_kill_after_acks} acknowledgements within 30 s: {}",
                    match out {
                        Ok(out) => format!("exited {}: {}", out.status, String::from_utf8_lossy(&out.stderr)),
                        Err(why) => why,
                    }
                ));
            }
            thread::sleep(Duration::from_millis(10));
        }
        FailoverProducer { process, killed, acked, work }
    }

    /// Tells it the kill happened: acknowledgements from now on count as after the kill.
    fn killed(&self) {
        std::fs::write(&self.killed, b"").expect("write the kill marker");
    }

    /// Waits for it to finish; fails unless some record was acknowledged after the kill (or
    /// whatever `killed` marked). `victim`: the node that may be dead by now.
    fn finish(self, cluster: &mut Cluster, victim: Option<i32>) -> Acked {
        let out = self
            .process
            .wait(Duration::from_secs(client_timeout_s))
            .unwrap_or_else(|why| cluster.fail(&format!("cluster_failover_produce.py: {why}")));
        cluster.check_script("cluster_failover_produce.py", &[], &out);
        cluster.assert_alive("while producing through the failover", victim);
        let report: Value = serde_json::from_str(&std::fs::read_to_string(&self.acked).expect("read the producer's report")).expect("producer report is JSON");
        let acked_after_kill = report["acked_after_kill"].as_u64().unwrap_or(0);
        if report["killed_seen"] != Value::Bool(true) || acked_after_kill == 0 {
            cluster.fail(&format!(
                "no record was acknowledged after the marked event (node {victim:?} killed) (killed_seen {}): production did not resume; \
                 {} acknowledged before, {} failed",
                report["killed_seen"],
                report["acked"].as_array().map_or(0, Vec::len),
                report["failed"].as_array().map_or(0, Vec::len)
            ));
        }
        Acked { path: self.acked, _work: self.work }
    }
}

/// SIGTERM to a leader that is not the controller: the broker asks the controller to fence it
/// (controlled shutdown), so metadata names new leaders for its partitions well before its
/// session (2 s here) could have expired, and it exits cleanly.
#[test]
fn cluster_sigterm_hands_leadership_over_at_once() {
    let mut cluster = Cluster::start();
    let topic = "handover";
    let (md, victim) = topic_led_off_the_controller(&mut cluster, topic);
    if victim == 0 {
        cluster.fail(&format!("{topic}-0 is led by node 0, the controller; this test needs another leader\n{}", md.raw));
    }
    let stopped_at = Instant::now();
    cluster.sigterm(victim);
    let victim_arg = victim.to_string();
    let after = cluster.metadata(0, cluster_size - 1, &["--topic", topic, "--leader-not", &victim_arg]);
    let handover_s = stopped_at.elapsed().as_secs_f64();
    eprintln!("node {victim} stopped with SIGTERM; new leaders after {handover_s:.2} s: {}", after.raw);
    if handover_s > handover_s_max {
        cluster.fail(&format!(
            "new leaders for node {victim}'s partitions only {handover_s:.2} s after SIGTERM (exit included); \
             a controlled shutdown must beat the 2 s session timeout (limit {handover_s_max} s)\n{}",
            after.raw
        ));
    }
    cluster.assert_alive("after the controlled shutdown", Some(victim));
}

/// kcat bootstrapped from node 1 and from node 2 lists all three brokers at their addresses;
/// kafka-python bootstrapped from node 2 auto-creates a topic (replication factor 3 by
/// default), round-trips 1,000 records, and kcat from node 1 sees it fully replicated.
#[test]
fn cluster_any_node_bootstraps_kcat_and_kafka_python() {
    let mut cluster = Cluster::start();
    // Registration is asynchronous: wait until node 2 itself lists all three.
    cluster.metadata(2, cluster_size, &[]);
    for bootstrap in [1, 2] {
        let text = cluster.kcat_metadata(bootstrap, None);
        let mut want = vec![
            format!("from broker {bootstrap}: {}", cluster.addr(bootstrap)),
            format!("{cluster_size} brokers:"),
        ];
        want.extend(
            (0..)
                .zip(&cluster.nodes)
                .map(|(id, n)| format!("broker {id} at {}", n.addr())),
        );
        for w in want {
            if !text.contains(&w) {
                cluster.fail(&format!(
                    "kcat -L -b {} lacks {w:?}:\n{text}",
                    cluster.addr(bootstrap)
                ));
            }
        }
    }

    let topic = "kafka-python-cluster";
    cluster.script(
        2,
        "kafka_python_roundtrip.py",
        &["--topic", topic, "--n", "1000"],
    );
    // The ISR could still be settling right after the produce; give it a bounded moment.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = cluster.kcat_metadata(1, Some(topic));
        let partitions: Vec<&str> = text
            .lines()
            .filter(|l| l.trim_start().starts_with("partition "))
            .collect();
        let full = !partitions.is_empty()
            && partitions.iter().all(|l| {
                let (replicas, isrs) = (field(l, "replicas: "), field(l, "isrs: "));
                sorted_ids(replicas) == [0, 1, 2] && sorted_ids(isrs) == [0, 1, 2]
            });
        if full {
            break;
        }
        if Instant::now() > deadline {
            cluster.fail(&format!(
                "kcat -L from node 1: auto-created {topic} is not on all three brokers and in sync after 10 s:\n{text}"
            ));
        }
        thread::sleep(Duration::from_millis(200));
    }
    cluster.assert_alive("after kcat and kafka-python", None);
}

/// In a kcat -L partition line (`partition 0, leader 1, replicas: 1,2,0, isrs: 1,2,0`), the
/// text after `name` up to the next `, ` that starts another field.
fn field<'a>(line: &'a str, name: &str) -> &'a str {
    let Some(start) = line.find(name) else {
        return "";
    };
    let rest = &line[start + name.len()..];
    rest.split(", ").next().unwrap_or("")
}

fn sorted_ids(list: &str) -> Vec<i32> {
    let mut ids: Vec<i32> = list
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    ids.sort_unstable();
    ids
}
