//! Three real broker processes as three voters of the Raft metadata quorum (combined mode): the
//! active controller's process is SIGKILLed while an acks=all idempotent producer runs. Another
//! voter must become the active controller within `controller_failover_s_max`, a topic must
//! still be creatable (also through the survivor that is not the controller, which forwards
//! the request to it: KIP-590), every acknowledged record must be readable from the survivors, and the
//! killed node, restarted on its data directory, must be listed again, and described by
//! DescribeCluster, DescribeLogDirs and DescribeQuorum as caught up.

use super::*;

/// From SIGKILL of the active controller to metadata naming another one: the quorum's fetch
/// timeout (2 x the 500 ms election timeout given below), a pre-vote and vote round, the new
/// leader's first entry committed, and a Python start, on a loaded 2-core machine.
const controller_failover_s_max: f64 = 8.0;

/// The quorum's election timeout here: half KRaft's default, so the test fails over in seconds.
const election_timeout_flags: &[&str] = &["--controller-quorum-election-timeout-ms", "500"];

#[test]
fn cluster_active_controller_sigkill_mid_produce() {
    let mut cluster = Cluster::start_voters(cluster_size, election_timeout_flags);
    let topic = "quorum-failover";
    let md = cluster.metadata(0, cluster_size, &["--topic", topic, "--create", "--partitions", "3", "--min-isr", "3"]);
    check_fully_replicated(&cluster, &md, topic, 3);
    let victim = md.controller;
    if !(0..cluster_size as i32).contains(&victim) {
        cluster.fail(&format!("metadata names controller {victim}, not one of the three voters\n{}", md.raw));
    }
    let survivor = (victim + 1) % cluster_size as i32;
    let producer = FailoverProducer::start(&cluster, survivor, topic);
    cluster.sigkill(victim);
    let killed_at = Instant::now();
    producer.killed();
    eprintln!("SIGKILLed node {victim}, the active controller");

    let victim_arg = victim.to_string();
    let after = cluster.metadata(survivor, cluster_size - 1, &["--controller-not", &victim_arg]);
    let failover_s = killed_at.elapsed().as_secs_f64();
    eprintln!("controller {} after {failover_s:.2} s: {}", after.controller, after.raw);
    if failover_s > controller_failover_s_max {
        cluster.fail(&format!(
            "a new controller only {failover_s:.2} s after node {victim} was killed; expected within {controller_failover_s_max} s\n{}",
            after.raw
        ));
    }
    // The new controller decides: a topic on the two survivors.
    let created = cluster.metadata(survivor, cluster_size - 1, &["--topic", "after-the-kill", "--create", "--partitions", "2", "--replication-factor", "2", "--min-isr", "2"]);
    eprintln!("created after the kill, {:.2} s after it: {}", killed_at.elapsed().as_secs_f64(), created.raw);
    // Asked of the survivor that is not the controller, the request is forwarded to it.
    let follower = (0..cluster_size as i32).find(|&n| n != victim && n != after.controller).expect("a third node");
    create_through(&cluster, follower, "forwarded-after-the-kill", 2);
    let forwarded = cluster.metadata(survivor, cluster_size - 1, &["--topic", "forwarded-after-the-kill", "--min-isr", "2"]);
    eprintln!("created through node {follower}, not the controller: {}", forwarded.raw);
    let moved = cluster.metadata(survivor, cluster_size - 1, &["--topic", topic, "--leader-not", &victim_arg]);
    eprintln!("{topic} led by survivors: {}", moved.raw);

    let acked = producer.finish(&mut cluster, Some(victim));
    cluster.script(survivor, "cluster_verify_acked.py", &["--topic", topic, "--acked", &acked.path, "--no-duplicates"]);

    cluster.restart(victim);
    let back = cluster.metadata(survivor, cluster_size, &["--topic", topic, "--min-isr", "3", "--timeout", &isr_rejoin_s_max.to_string()]);
    check_fully_replicated(&cluster, &back, topic, 3);
    // What operators ask (kafka-python's admin): three brokers, three voters all caught up
    // with the new leader, each broker's log directory.
    cluster.script(survivor, "describe_cluster.py", &["--topic", "described", "--brokers", "0,1,2", "--voters", "0,1,2", "--timeout", "30"]);
    cluster.assert_alive("after the restart", None);
}

/// Node 2 is a voter only (`--process-roles controller`): it never appears among the brokers,
/// no partition is placed on it, yet its vote counts: with broker 1 killed, nodes 0 and 2 must
/// still elect (or keep) an active controller and commit a topic asked of broker 0 (forwarded
/// if node 2 leads).
#[test]
fn cluster_with_a_voter_only_node() {
    let mut cluster = Cluster::start_nodes(cluster_size, election_timeout_flags, |id| if id == 2 { vec!["--process-roles", "controller"] } else { Vec::new() });
    let md = cluster.metadata(0, 2, &["--topic", "on-brokers", "--create", "--partitions", "2", "--replication-factor", "2", "--min-isr", "2"]);
    if md.brokers.keys().copied().collect::<Vec<_>>() != vec![0, 1] {
        cluster.fail(&format!("metadata lists brokers {:?}; the voter-only node 2 must not be one\n{}", md.brokers, md.raw));
    }
    if md.partitions.values().any(|p| p.replicas.contains(&2)) {
        cluster.fail(&format!("a partition placed on the voter-only node 2\n{}", md.raw));
    }
    // Broker 1's vote is gone: every commit now needs node 2's (broker 1 stays listed, since
    // fencing it would need a majority of the brokers). A topic asked of broker 0 is created.
    cluster.sigkill(1);
    create_through(&cluster, 0, "after-broker-1", 1);
    let created = cluster.metadata(0, 2, &["--topic", "after-broker-1"]);
    eprintln!("created with broker 1 dead: {}", created.raw);
}

/// Creates `topic` (2 partitions) by sending CreateTopics to `node` itself
/// with this crate's client, whatever Metadata names as the controller.
fn create_through(cluster: &Cluster, node: i32, topic: &str, replication_factor: i16) {
    use broker_core::client::admin;
    let addr: std::net::SocketAddr = cluster.addr(node).parse().expect("a node's address");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let created = runtime.block_on(admin::create_topics(addr, &[(topic.to_string(), 2, replication_factor)], Duration::from_secs(20)));
    if let Err(e) = created {
        cluster.fail(&format!("CreateTopics {topic} sent to node {node}, which is not the controller: {e}"));
    }
}
