//! Consumer groups on the three-broker cluster: the group's coordinator is SIGKILLed while two
//! confluent-kafka members consume, and the group must carry on at another broker without
//! losing an acknowledged commit (issue 8 item 7). The client side, and what it checks record by
//! record and commit by commit, is `tests/clients/group_coordinator_kill.py`. Share groups
//! (KIP-932, issue 29): a data partition's leader, or the group's coordinator, is SIGKILLed and
//! restarted while two ShareConsumers accept every record, and no confirmed acceptance may be
//! lost or followed by a redelivery (`tests/clients/share_failover.py`).

use super::*;

/// The offsets topic on all three brokers (one dead broker leaves two in sync, enough for
/// min.insync.replicas 2), in 3 partitions so its creation and every load are quick, and no
/// initial rebalance delay (KIP-134's 3 s would only slow the test down).
const group_flags: &[&str] = &[
    "--offsets-topic-replication-factor",
    "3",
    "--offsets-topic-num-partitions",
    "3",
    "--group-initial-rebalance-delay-ms",
    "0",
];
/// Records produced: at the script's 1,500 records/s the members read for 10 s, so the kill
/// (after 3,000) and the recovery fall well inside the consumption.
const coordinator_kill_records: &str = "15000";
/// From the script's start to its `--ready` file: producing 15,000 acks=all records through a
/// debug-build cluster, the offsets topic's creation, the group's first join, and 3,000 records
/// read at 1,500/s.
const coordinator_kill_ready_s_max: u64 = 90;
/// From the script seeing the kill to the group recovered (offsets read from the new
/// coordinator, a commit acknowledged per member, Stable at another broker, 1,000 more records
/// read): the broker session timeout (2 s) until the controller fences the dead broker, the
/// election, librdkafka's coordinator re-query (every 1 s after an error), the load of one
/// offsets partition, and a 2-core machine shared with a debug build beside it.
const coordinator_kill_recovery_s_max: u64 = 20;
/// The whole script, a hang included: ready, the kill, recovery, and the rest of the records.
const coordinator_kill_script_s_max: u64 = 240;

/// SIGKILL of the broker coordinating a group mid-consumption: the two members keep consuming
/// through another coordinator within `coordinator_kill_recovery_s_max`, every commit they saw
/// acknowledged before the kill is at most the committed offset read afterwards, and every
/// produced record is read at least once.
#[test]
fn cluster_group_coordinator_sigkill_mid_consumption() {
    coordinator_sigkill_mid_consumption("classic", group_flags);
}

/// The same with KIP-848 members (`group.protocol=consumer`): the group's epochs, targets and
/// assignments are loaded by the new coordinator from `__consumer_offsets`. The broker tells
/// members to heartbeat every 500 ms, and ends a silent member's session after 6 s, as the
/// classic members above ask for.
#[test]
fn cluster_kip848_group_coordinator_sigkill_mid_consumption() {
    let flags = [group_flags, &["--group-consumer-heartbeat-interval-ms", "500", "--group-consumer-session-timeout-ms", "6000"]].concat();
    coordinator_sigkill_mid_consumption("consumer", &flags);
}

fn coordinator_sigkill_mid_consumption(protocol: &str, flags: &[&str]) {
    let mut cluster = Cluster::start_with(flags);
    let topic = &format!("coordinator-kill-{protocol}");
    let md = cluster.metadata(0, cluster_size, &["--topic", topic, "--create", "--partitions", "6", "--min-isr", "3"]);
    check_fully_replicated(&cluster, &md, topic, 6);

    let work = tempfile::tempdir().expect("tempdir");
    let path = |name: &str| work.path().join(name).to_str().expect("utf-8 temp path").to_string();
    let (ready, killed) = (path("ready.json"), path("killed"));
    let recovery = coordinator_kill_recovery_s_max.to_string();
    // Node 0 runs the controller, the only voter: the script picks a group coordinated elsewhere.
    let args = [
        "--topic", topic, "--group", topic, "--partitions", "6", "--n", coordinator_kill_records, "--protocol", protocol,
        "--avoid", "0", "--replicas", "3", "--ready", &ready, "--killed", &killed, "--recovery-s-max", &recovery,
    ];
    let script = "group_coordinator_kill.py";
    let client = ClientProcess::spawn(&mut client_command(&cluster.addr(0), script, &args), None)
        .unwrap_or_else(|why| cluster.fail(&format!("{script}: {why}")));
    let (client, said) = cluster.await_ready(client, script, &ready, coordinator_kill_ready_s_max, "the group consuming and its coordinator known");
    let (group, victim) = (said["group"].as_str().unwrap_or("?").to_string(), said["coordinator"].as_i64().unwrap_or(-1));
    let victim = i32::try_from(victim).ok().filter(|v| *v != 0 && cluster.nodes.iter().any(|n| n.id == *v));
    let Some(victim) = victim else {
        cluster.fail(&format!("{script} named coordinator {} for {group}; expected node 1 or 2 (not the controller)", said["coordinator"]));
    };

    cluster.sigkill(victim);
    std::fs::write(&killed, b"").expect("write the kill marker");
    eprintln!("SIGKILLed node {victim}, coordinator of group {group}");

    let out = client
        .wait(Duration::from_secs(coordinator_kill_script_s_max))
        .unwrap_or_else(|why| cluster.fail(&format!("{script}: {why}")));
    let stdout = cluster.check_script(script, &args, &out);
    cluster.assert_alive("while the group recovered", Some(victim));
    let summary: Value = serde_json::from_str(stdout.trim().lines().last().unwrap_or(""))
        .unwrap_or_else(|e| cluster.fail(&format!("{script} printed no JSON summary ({e}): {stdout}")));
    eprintln!("{summary}");
    let recovered_s = summary["recovered_s"].as_f64().unwrap_or(f64::INFINITY);
    let new_coordinator = summary["new_coordinator"].as_i64();
    if recovered_s > coordinator_kill_recovery_s_max as f64 || new_coordinator == Some(i64::from(victim)) || new_coordinator.is_none() {
        cluster.fail(&format!(
            "group {group} after node {victim} was killed: recovered in {recovered_s} s at coordinator {new_coordinator:?}; \
             expected another coordinator within {coordinator_kill_recovery_s_max} s\n{summary}"
        ));
    }
}

// ---------------------------------------------------------------------------------------------
// Share groups (KIP-932): the share-partition leader writes each share-partition's state to the
// group's coordinator (in `__consumer_offsets`) before it tells a member anything, and a leader
// taking over reads it back first; the coordinator keeps membership in memory only. Issue 29's
// claim: the state survives the SIGKILL of either without losing an accepted acknowledgement or
// redelivering an accepted record. The client side, and what it checks record by record, is
// `tests/clients/share_failover.py`.

/// The group flags above, plus share-group members told to heartbeat every 500 ms (5 s by
/// default would leave them that long without a coordinator after a failover).
const share_flags: &[&str] = &["--group-share-heartbeat-interval-ms", "500", "--group-share-session-timeout-ms", "6000"];
/// Records produced: at the script's 200 records/s the members read for 15 s, so the kill (after
/// 200 confirmations per partition), the recovery and the restart fall inside the consumption.
const share_failover_records: &str = "3000";
/// From the script's start to its `--ready` file: the offsets topic's creation, choosing a
/// group, producing 3,000 acks=all records, and 400 records read at 200/s.
const share_failover_ready_s_max: u64 = 60;
/// From the script seeing the kill to 100 confirmations after it on each partition that needed
/// the victim, and metadata showing its role taken over: the broker session timeout (2 s), the
/// election, librdkafka's metadata refresh, the new leader reading the state from the coordinator
/// (or the new coordinator loading its offsets partition), and 100 records at 200/s.
const share_failover_recovery_s_max: u64 = 20;
/// The whole script, a hang included.
const share_failover_script_s_max: u64 = 150;

/// SIGKILL of the leader of one of a share group's two data partitions mid-consumption, then its
/// restart: its partition moves to another replica, whose leader reads the share-partition's state
/// from the group's coordinator; consumption goes on to the end, every record is accepted, and
/// none whose acceptance was confirmed is handed out again.
#[test]
fn cluster_share_partition_leader_sigkill_mid_consumption() {
    share_sigkill_mid_consumption("leader");
}

/// The same with the group's coordinator (the leader of the group's `__consumer_offsets`
/// partition, not leading a data partition): share-partition leaders' state writes wait for the
/// new coordinator, which loads the state from the replicated log; the members rejoin there.
#[test]
fn cluster_share_group_coordinator_sigkill_mid_consumption() {
    share_sigkill_mid_consumption("coordinator");
}

fn share_sigkill_mid_consumption(kill: &str) {
    let mut cluster = Cluster::start_with(&[group_flags, share_flags].concat());
    let topic = &format!("share-failover-{kill}");
    let md = cluster.metadata(0, cluster_size, &["--topic", topic, "--create", "--partitions", "2", "--min-isr", "3"]);
    check_fully_replicated(&cluster, &md, topic, 2);

    let work = tempfile::tempdir().expect("tempdir");
    let path = |name: &str| work.path().join(name).to_str().expect("utf-8 temp path").to_string();
    let (ready, killed, recovered, restarted) = (path("ready.json"), path("killed"), path("recovered.json"), path("restarted"));
    let recovery = share_failover_recovery_s_max.to_string();
    // Node 0 runs the controller, the only voter: the script picks a victim elsewhere.
    let args = [
        "--topic", topic, "--group", topic, "--partitions", "2", "--kill", kill, "--avoid", "0", "--n", share_failover_records,
        "--replicas", "3", "--recovery-s-max", &recovery, "--ready", &ready, "--killed", &killed, "--recovered", &recovered,
        "--restarted", &restarted,
    ];
    let script = "share_failover.py";
    let client = ClientProcess::spawn(&mut client_command(&cluster.addr(0), script, &args), None)
        .unwrap_or_else(|why| cluster.fail(&format!("{script}: {why}")));
    let (client, said) = cluster.await_ready(client, script, &ready, share_failover_ready_s_max, "the group consuming and the victim chosen");
    let victim = said["victim"].as_i64().and_then(|v| i32::try_from(v).ok()).filter(|v| *v != 0 && cluster.nodes.iter().any(|n| n.id == *v));
    let Some(victim) = victim else {
        cluster.fail(&format!("{script} chose victim {} ({said}); expected node 1 or 2 (not the controller)", said["victim"]));
    };

    cluster.sigkill(victim);
    std::fs::write(&killed, b"").expect("write the kill marker");
    eprintln!("SIGKILLed node {victim} (share group {kill}): {said}");
    let recovery_wait = share_failover_recovery_s_max + 10;
    let (client, reached) = cluster.await_ready(client, script, &recovered, recovery_wait, "consumption recovered after the kill");
    cluster.assert_alive("while the share group recovered", Some(victim));
    eprintln!("recovered after the kill of node {victim}: {reached}");
    cluster.restart(victim);
    std::fs::write(&restarted, b"").expect("write the restart marker");

    let out = client
        .wait(Duration::from_secs(share_failover_script_s_max))
        .unwrap_or_else(|why| cluster.fail(&format!("{script}: {why}")));
    let stdout = cluster.check_script(script, &args, &out);
    cluster.assert_alive("after the share group consumed to the end", None);
    let summary: Value = serde_json::from_str(stdout.trim().lines().last().unwrap_or(""))
        .unwrap_or_else(|e| cluster.fail(&format!("{script} printed no JSON summary ({e}): {stdout}")));
    eprintln!("{summary}");
}
