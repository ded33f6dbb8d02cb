//! Partition reassignment on three real brokers while an idempotent acks=all producer writes:
//! kafka-python's admin moves a partition from its two replicas to the second of them and the
//! third broker (`[0, 1]` to `[1, 2]` with the placement a fresh cluster gives), leadership
//! leaves the first, every acknowledged record is then read back once and only once, and the
//! replica that left has deleted its files; every node's `/metrics` is clean under promtool, and
//! the records the old and the new leader counted in add up to those acknowledged (plus those
//! resent across the move).

use super::*;

/// From the metadata record that completes the move to the removed broker's directory being
/// gone: one metadata fetch round on a loaded machine.
const removed_replica_gone_s_max: u64 = 10;

/// Records the old leader may append in the moment before it leaves and see resent to the new
/// one: the producer's requests in flight (five) at its batch size, with room.
const resent_at_move_max: f64 = 1_000.0;

#[test]
fn cluster_reassignment_while_producing() {
    let metrics: Vec<&'static str> = crate::support::free_ports(cluster_size).iter().map(|p| &*Box::leak(format!("127.0.0.1:{p}").into_boxed_str())).collect();
    let mut cluster = Cluster::start_nodes(1, &[], |id| vec!["--metrics-listen", metrics[id as usize]]);
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

    // Its directory renamed out of use at once, then removed off the node's gate (`…-delete`).
    let data_dir = cluster.node(leaving).data_dir.clone();
    let left = || std::fs::read_dir(&data_dir).into_iter().flatten().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).find(|n| n == &format!("{topic}-0") || n.starts_with(&format!("{topic}-0.")));
    let deadline = Instant::now() + Duration::from_secs(removed_replica_gone_s_max);
    while let Some(name) = left() {
        if Instant::now() > deadline {
            cluster.fail(&format!("{} still exists {removed_replica_gone_s_max} s after node {leaving} left {topic}-0's replicas", data_dir.join(name).display()));
        }
        thread::sleep(Duration::from_millis(50));
    }
    let mut counted = 0.0;
    for (id, addr) in metrics.iter().enumerate() {
        let text = crate::support::scrape(addr).unwrap_or_else(|e| cluster.fail(&format!("node {id}'s metrics: {e}")));
        if let Some(said) = crate::support::lint_metrics(&text) {
            cluster.fail(&format!("promtool check metrics on node {id}: {said}"));
        }
        counted += crate::support::metric(&text, &format!("seedlog_topic_messages_in_total{{topic=\"{topic}\"}}")).unwrap_or(0.0);
    }
    // Every record appended once by the old leader or the new one (a retried batch is a
    // duplicate the new leader recognizes, and counts nothing), but for those the old leader
    // took in just before the move and its follower had not yet fetched: never acknowledged
    // there, resent by the producer and appended by the new leader. Kafka counts an append
    // where it happens too; the log holds each record once (checked above).
    let resent = counted - records_n as f64;
    if !(0.0..=resent_at_move_max).contains(&resent) {
        cluster.fail(&format!("the leaders counted {counted} records in for {topic}; {records_n} were acknowledged"));
    }
    cluster.assert_alive("after the reassignment", None);
}

/// `seedlog` as an operator runs it to decommission a broker and then to bring one back: broker
/// 2 is stopped (SIGTERM) while an idempotent acks=all producer writes, unregistered
/// (`seedlog brokers unregister`), and its replicas moved to the others with `seedlog reassign
/// generate --remove-broker 2`, `execute` and `verify`; nothing acknowledged is lost or
/// duplicated. Started again, it registers anew and a balancing plan over all three brokers
/// gives it replicas again.
#[test]
fn cluster_decommission_and_rejoin_with_seedlog() {
    let mut cluster = Cluster::start();
    let topic = "decom";
    cluster.metadata(0, cluster_size, &["--topic", topic, "--create", "--partitions", "3", "--replication-factor", "2", "--min-isr", "2"]);
    let producer = FailoverProducer::start(&cluster, 0, topic);
    cluster.sigterm(2);
    producer.killed();
    let bootstrap = cluster.addr(0);
    let out = seedlog(&cluster, &["brokers", "--bootstrap", &bootstrap, "unregister", "2"]);
    assert_eq!(out.trim(), "broker 2 unregistered");
    let work = tempfile::tempdir().expect("tempdir");
    let plan = work.path().join("off-2.json").display().to_string();
    let proposed = seedlog(&cluster, &["reassign", "--bootstrap", &bootstrap, "generate", "--topics", topic, "--remove-broker", "2", "--output", &plan]);
    eprintln!("{proposed}");
    seedlog(&cluster, &["reassign", "--bootstrap", &bootstrap, "execute", "--plan", &plan]);
    verified(&cluster, &bootstrap, &plan);
    let md = cluster.metadata(0, cluster_size - 1, &["--topic", topic, "--min-isr", "2"]);
    if md.partitions.values().any(|p| p.replicas.contains(&2)) {
        cluster.fail(&format!("a partition is still on broker 2 after the plan completed\n{}", md.raw));
    }
    let acked = producer.finish(&mut cluster, Some(2));
    cluster.script(0, "cluster_verify_acked.py", &["--topic", topic, "--acked", &acked.path, "--no-duplicates"]);

    cluster.restart(2);
    cluster.metadata(0, cluster_size, &[]);
    let plan = work.path().join("balance.json").display().to_string();
    seedlog(&cluster, &["reassign", "--bootstrap", &bootstrap, "generate", "--topics", topic, "--brokers", "0,1,2", "--output", &plan]);
    seedlog(&cluster, &["reassign", "--bootstrap", &bootstrap, "execute", "--plan", &plan]);
    verified(&cluster, &bootstrap, &plan);
    let md = cluster.metadata(0, cluster_size, &["--topic", topic, "--min-isr", "2"]);
    let on_2 = md.partitions.values().filter(|p| p.replicas.contains(&2)).count();
    if on_2 < 2 {
        cluster.fail(&format!("a balancing plan over three brokers gave broker 2 {on_2} of 6 replicas, expected its share of 2\n{}", md.raw));
    }
    cluster.assert_alive("after the rejoin", None);
}

/// `seedlog reassign verify` until it says every move is complete (exit 0), bounded.
fn verified(cluster: &Cluster, bootstrap: &str, plan: &str) {
    let deadline = Instant::now() + Duration::from_secs(removed_replica_gone_s_max * 3);
    loop {
        let out = seedlog_output(&["reassign", "--bootstrap", bootstrap, "verify", "--plan", plan]);
        if out.status.success() {
            return;
        }
        if Instant::now() > deadline {
            cluster.fail(&format!("seedlog reassign verify still not complete:\n{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)));
        }
        thread::sleep(Duration::from_millis(200));
    }
}

fn seedlog_output(args: &[&str]) -> Output {
    run_bounded(Command::new(env!("CARGO_BIN_EXE_seedlog")).args(args), None, Duration::from_secs(client_timeout_s)).expect("seedlog runs")
}

/// Runs `seedlog args`; fails with its output unless it exits 0. Returns its stdout.
fn seedlog(cluster: &Cluster, args: &[&str]) -> String {
    let out = seedlog_output(args);
    if !out.status.success() {
        cluster.fail(&format!("seedlog {args:?} failed ({}):\n{}{}", out.status, String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)));
    }
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `seedlog reassign execute --throttle`: a partition of 3 MB on broker 0 gains a replica on
/// broker 1 at 100 kB/s, so the move is still in progress seconds later (the leader serves the
/// new replica nothing while over the rate); executed again at 100 MB/s it completes, and
/// `verify` then removes the throttle (the broker rates and the topic's throttled replicas).
#[test]
fn cluster_throttled_reassignment() {
    let mut cluster = Cluster::start();
    let topic = "throttled";
    cluster.metadata(0, cluster_size, &["--topic", topic, "--create", "--partitions", "1", "--replication-factor", "1"]);
    let md = cluster.metadata(0, cluster_size, &["--topic", topic]);
    let on = md.partitions[&0].replicas[0];
    let other = (0..cluster_size as i32).find(|b| *b != on).expect("another broker");
    let bootstrap = cluster.addr(0);
    let lines: String = (0..3_000).map(|i| format!("{i:06}:{}\n", "x".repeat(1_000))).collect();
    let out = run_bounded(Command::new(crate::support::kcat()).args(["-P", "-b", &bootstrap, "-t", topic, "-K:", "-X", "acks=1"]), Some(lines.into_bytes()), Duration::from_secs(60)).expect("kcat runs");
    assert!(out.status.success(), "kcat -P: {}", String::from_utf8_lossy(&out.stderr));
    let work = tempfile::tempdir().expect("tempdir");
    let plan = work.path().join("grow.json");
    std::fs::write(&plan, format!(r#"{{"version":1,"partitions":[{{"topic":"{topic}","partition":0,"replicas":[{on},{other}]}}]}}"#)).expect("write the plan");
    let plan = plan.display().to_string();
    let set = seedlog(&cluster, &["reassign", "--bootstrap", &bootstrap, "execute", "--plan", &plan, "--throttle", "100000"]);
    assert!(set.contains("Throttle set to 100000 B/s"), "{set}");
    thread::sleep(Duration::from_secs(3));
    let early = seedlog_output(&["reassign", "--bootstrap", &bootstrap, "verify", "--plan", &plan]);
    let early_text = String::from_utf8_lossy(&early.stdout).into_owned();
    if early.status.success() || !early_text.contains("in progress") {
        cluster.fail(&format!("3 MB at 100 kB/s was not still catching up after 3 s:\n{early_text}"));
    }
    seedlog(&cluster, &["reassign", "--bootstrap", &bootstrap, "execute", "--plan", &plan, "--throttle", "100000000"]);
    verified(&cluster, &bootstrap, &plan);
    let done = seedlog(&cluster, &["reassign", "--bootstrap", &bootstrap, "verify", "--plan", &plan]);
    assert!(done.contains("Throttle was removed."), "{done}");
    cluster.metadata(0, cluster_size, &["--topic", topic, "--min-isr", "2"]);
    cluster.assert_alive("after the throttled reassignment", None);
}
