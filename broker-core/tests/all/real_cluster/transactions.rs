//! Transactions on the three-broker cluster: confluent-kafka's and kafka-python's
//! transactional producers (`tests/clients/transactional_producer.py`: commit, abort, a
//! producer fenced by a new one with its open transaction aborted, offsets sent to a
//! transaction) against a topic whose two partitions are led by different brokers, so the
//! transaction coordinator sends at least one marker to another broker over the network, and
//! its state topic and the offsets topic replicated on all three; and the coordinator SIGKILLed
//! while a large transaction's commit is under way (`transactional_coordinator_kill.py`).

use super::*;

/// The coordinators' state topics on all three brokers, 3 partitions each (quick to create
/// and load).
const txn_flags: &[&str] = &[
    "--transaction-state-log-replication-factor",
    "3",
    "--transaction-state-log-num-partitions",
    "3",
    "--offsets-topic-replication-factor",
    "3",
    "--offsets-topic-num-partitions",
    "3",
];

#[test]
fn cluster_transactions_send_markers_across_brokers() {
    let mut cluster = Cluster::start_with(txn_flags);
    for client in ["confluent", "kafka-python"] {
        let topic = format!("txn-{client}");
        let md = cluster.metadata(0, cluster_size, &["--topic", &topic, "--create", "--partitions", "2", "--replication-factor", "3", "--min-isr", "2"]);
        check_fully_replicated(&cluster, &md, &topic, 2);
        if md.leaders().len() < 2 {
            cluster.fail(&format!("{topic}: both partitions are led by one broker ({:?}); the test needs markers to two\n{}", md.leaders(), md.raw));
        }
        cluster.script(0, "transactional_producer.py", &["--client", client, "--topic", &topic]);
    }
    cluster.assert_alive("after the transactions", None);
}

/// From the script's start to its `--ready` file: the state topic's creation, 20 small
/// transactions and the big one's records sent, on a debug-build cluster.
const txn_kill_ready_s_max: u64 = 90;
/// From the kill to ten more transactions committed: the broker session timeout until the
/// controller fences the dead broker, the state partition's election and load, librdkafka's
/// coordinator re-query, the prepared commit's markers resent.
const txn_kill_recovery_s_max: u64 = 30;
/// The whole script, a hang included.
const txn_kill_script_s_max: u64 = 240;

/// SIGKILL of the transaction coordinator while a large transaction's commit is under way:
/// confluent-kafka's producer goes on through the new coordinator within
/// `txn_kill_recovery_s_max`, and read_committed shows every committed transaction whole, no
/// aborted one, nothing torn (tests/clients/transactional_coordinator_kill.py).
#[test]
fn cluster_transaction_coordinator_sigkill_mid_commit() {
    let mut cluster = Cluster::start_with(txn_flags);
    let topic = "txn-coordinator-kill";
    let md = cluster.metadata(0, cluster_size, &["--topic", topic, "--create", "--partitions", "2", "--replication-factor", "3", "--min-isr", "2"]);
    check_fully_replicated(&cluster, &md, topic, 2);
    let work = tempfile::tempdir().expect("tempdir");
    let path = |name: &str| work.path().join(name).to_str().expect("utf-8 temp path").to_string();
    let (ready, killed) = (path("ready.json"), path("killed"));
    let recovery = txn_kill_recovery_s_max.to_string();
    // Node 0 runs the controller, the only voter: the script picks an id coordinated elsewhere.
    let args = ["--topic", topic, "--id", "kill-txn", "--avoid", "0", "--ready", &ready, "--killed", &killed, "--recovery-s-max", &recovery];
    let script = "transactional_coordinator_kill.py";
    let client = ClientProcess::spawn(&mut client_command(&cluster.addr(0), script, &args), None).unwrap_or_else(|why| cluster.fail(&format!("{script}: {why}")));
    let (client, said) = cluster.await_ready(client, script, &ready, txn_kill_ready_s_max, "the big transaction's commit about to start");
    let victim = i32::try_from(said["coordinator"].as_i64().unwrap_or(-1)).ok().filter(|v| *v != 0 && cluster.nodes.iter().any(|n| n.id == *v));
    let Some(victim) = victim else {
        cluster.fail(&format!("{script} named coordinator {} for {}; expected node 1 or 2 (not the controller)", said["coordinator"], said["txn_id"]));
    };
    cluster.sigkill(victim);
    std::fs::write(&killed, b"").expect("write the kill marker");
    eprintln!("SIGKILLed node {victim}, transaction coordinator of {}", said["txn_id"]);
    let out = client.wait(Duration::from_secs(txn_kill_script_s_max)).unwrap_or_else(|why| cluster.fail(&format!("{script}: {why}")));
    let stdout = cluster.check_script(script, &args, &out);
    cluster.assert_alive("while the transactions went on", Some(victim));
    eprintln!("{}", stdout.trim());
}
