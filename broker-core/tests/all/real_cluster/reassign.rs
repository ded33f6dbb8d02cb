//! Partition reassignment on three real brokers while an idempotent acks=all producer writes:
//! kafka-python's admin moves a partition from its two replicas to the second of them and the
//! third broker (`[0, 1]` to `[1, 2]` with the placement a fresh cluster gives), leadership
//! leaves the first, every acknowledged record is then read back once and only once, and the
//! replica that left has deleted its files.

use super::*;

/// From the metadata record that completes the move to the removed broker's directory being
/// gone: one metadata fetch round on a loaded machine.
const removed_replica_gone_s_max: u64 = 10;

#[test]
fn cluster_reassignment_while_producing() {
    let mut cluster = Cluster::start();
    let topic = "moving";
    let md = cluster.metadata(0, cluster_size, &["--topic", topic, "--create", "--partitions", "1", "--replication-factor", "2", "--min-isr", "2"]);
    let from = md.partitions.get(&0).map(|p| p.replicas.clone()).unwrap_or_default();
    let Some(third) = (0..cluster_size as i32).find(|b| !from.contains(b)) else { cluster.fail(&format!("{topic}-0 is not on two of three brokers\n{}", md.raw)) };
    let (leaving, target) = (from[0], vec![from[1], third]);
    let to = target.iter().map(i32::to_string).collect::<Vec<_>>().join(",");
    eprintln!("{topic}-0 on {from:?}, to move to {target:?}");

    let producer = FailoverProducer::start(&cluster, target[0], topic);
    producer.killed(); // marks the start of the move: records must be acknowledged after it
    let moved = cluster.script(target[0], "reassign.py", &["--topic", topic, "--to", &to, "--timeout", "60"]);
    eprintln!("moved: {}", moved.trim());
    let acked = producer.finish(&mut cluster, None);
    cluster.script(target[0], "cluster_verify_acked.py", &["--topic", topic, "--acked", &acked.path, "--no-duplicates"]);

    let dir = cluster.node(leaving).data_dir.join(format!("{topic}-0"));
    let deadline = Instant::now() + Duration::from_secs(removed_replica_gone_s_max);
    while dir.exists() {
        if Instant::now() > deadline {
            cluster.fail(&format!("{} still exists {removed_replica_gone_s_max} s after node {leaving} left {topic}-0's replicas", dir.display()));
        }
        thread::sleep(Duration::from_millis(50));
    }
    cluster.assert_alive("after the reassignment", None);
}
