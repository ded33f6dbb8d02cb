//! Transactions on the three-broker cluster: confluent-kafka's and kafka-python's
//! transactional producers (`tests/clients/transactional_producer.py`: commit, abort, a
//! producer fenced by a new one with its open transaction aborted, offsets sent to a
//! transaction) against a topic whose two partitions are led by different brokers, so the
//! transaction coordinator sends at least one marker to another broker over the network, and
//! its state topic and the offsets topic replicated on all three.

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
