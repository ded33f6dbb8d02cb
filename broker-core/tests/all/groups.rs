//! Consumer groups with real clients against the real `broker` binary: confluent-kafka members
//! splitting a topic, joining late and taking over after a leave (classic range and
//! cooperative-sticky; KIP-848's uniform and range), KIP-848's describe, static restart and
//! regex subscription, kafka-python and `kcat -G` resuming at committed offsets, the
//! AdminClient's group calls, and a static member (KIP-345) restarting without a rebalance.
//!
//! The harness is `real_clients`'s: each test starts its own broker on its own port and data
//! directory, every wait is bounded, and a missing tool fails the test. The scripts in
//! `tests/clients/` check what the clients saw record by record and print a one-line summary,
//! shown here with the script's time. An empty group's first rebalance waits
//! group.initial.rebalance.delay.ms (3 s), so each test takes several seconds.

use crate::real_clients::{client_script, run_bounded, Broker};
use crate::support::kcat;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::{Duration, Instant};

/// Partitions of every auto-created topic here: two consumers get three each, and range and
/// cooperative-sticky place them differently.
const topic_partitions: &str = "6";
/// One `kcat` run: metadata, the group's first rebalance (3 s), a few hundred records.
const kcat_timeout_s: u64 = 60;

fn broker(dir: &tempfile::TempDir) -> Broker {
    Broker::start(dir.path(), &["--num-partitions", topic_partitions])
}

/// Runs a group script and shows its time and summary (stdout).
pub(crate) fn group_script(broker: &mut Broker, script: &str, args: &[&str]) {
    let started = Instant::now();
    let out = client_script(broker, script, args);
    eprintln!(
        "{script} {args:?}: ok in {:.1} s\n{}",
        started.elapsed().as_secs_f64(),
        String::from_utf8_lossy(&out.stdout).trim()
    );
}

// ---------------------------------------------------------------------------------------------
// confluent-kafka.

#[test]
fn confluent_range_split_then_takeover_after_leave() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = broker(&dir);
    let args = ["--topic", "split-range", "--group", "split-range", "--strategy", "range", "--n", "3000"];
    group_script(&mut broker, "group_split.py", &args);
}

#[test]
fn confluent_cooperative_sticky_split_then_takeover_after_leave() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = broker(&dir);
    let args = ["--topic", "split-coop", "--group", "split-coop", "--strategy", "cooperative-sticky", "--n", "3000"];
    group_script(&mut broker, "group_split.py", &args);
}

/// B joins a group where A already owns every partition: cooperative-sticky moves three of them
/// over two rebalances (A gives them up, then B gets them), and B starts each at A's commit.
#[test]
fn confluent_cooperative_sticky_late_joiner_then_takeover_after_leave() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = broker(&dir);
    let args = ["--topic", "late-coop", "--group", "late-coop", "--strategy", "cooperative-sticky", "--n", "3000", "--b-joins-late"];
    group_script(&mut broker, "group_split.py", &args);
}

// ---------------------------------------------------------------------------------------------
// confluent-kafka with `group.protocol=consumer` (KIP-848): the broker assigns, members
// reconcile heartbeat by heartbeat. The broker tells members to heartbeat every 500 ms.

fn kip848_broker(dir: &tempfile::TempDir) -> Broker {
    Broker::start(dir.path(), &["--num-partitions", topic_partitions, "--group-consumer-heartbeat-interval-ms", "500"])
}

#[test]
fn kip848_uniform_split_then_takeover_after_leave() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = kip848_broker(&dir);
    let args = ["--topic", "kip848-split", "--group", "kip848-split", "--protocol", "consumer", "--strategy", "uniform", "--n", "3000"];
    group_script(&mut broker, "group_split.py", &args);
}

/// B joins where A owns every partition: A is told to revoke three, and B gets them only once
/// A's heartbeat says it let them go, starting each at A's commit.
#[test]
fn kip848_range_late_joiner_then_takeover_after_leave() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = kip848_broker(&dir);
    let args = ["--topic", "kip848-late", "--group", "kip848-late", "--protocol", "consumer", "--strategy", "range", "--n", "3000", "--b-joins-late"];
    group_script(&mut broker, "group_split.py", &args);
}

/// Describe and list (the AdminClient and `seedlog groups describe`), a static member's restart, a resume at the commits, a regex
/// subscription taking in a topic created after it.
#[test]
fn kip848_describe_static_restart_resume_and_regex() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = kip848_broker(&dir);
    let args = ["--topic", "kip848-cp", "--group", "kip848-cp", "--assignor", "uniform", "--seedlog", env!("CARGO_BIN_EXE_seedlog")];
    group_script(&mut broker, "consumer_protocol.py", &args);
}

#[test]
fn admin_list_describe_offsets_and_delete_groups() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = broker(&dir);
    group_script(&mut broker, "group_admin.py", &["--topic", "admin-groups", "--group", "admin-group"]);
}

/// S's client id sorts before the other member's, so S leads the group: its replacement is
/// told it leads (with the member list) while the group stays Stable.
#[test]
fn static_leader_restarts_without_a_rebalance() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = broker(&dir);
    let args = ["--topic", "static-leader", "--group", "static-leader", "--static-client-id", "a-static"];
    group_script(&mut broker, "group_static.py", &args);
}

/// S's client id sorts after the other member's: S is a follower.
#[test]
fn static_follower_restarts_without_a_rebalance() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = broker(&dir);
    let args = ["--topic", "static-follower", "--group", "static-follower", "--static-client-id", "c-static"];
    group_script(&mut broker, "group_static.py", &args);
}

// ---------------------------------------------------------------------------------------------
// kafka-python.

#[test]
fn kafka_python_group_resumes_at_committed_offsets() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = broker(&dir);
    group_script(&mut broker, "kafka_python_group.py", &["--topic", "kafka-python-group", "--group", "kafka-python-group"]);
}

// ---------------------------------------------------------------------------------------------
// kcat.

/// `kcat -P` of `lines` as `key:value` records, acks=all.
fn kcat_produce(broker: &mut Broker, topic: &str, lines: &[String]) {
    let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let out = run_bounded(
        Command::new(kcat()).args(["-P", "-b", &broker.bootstrap(), "-t", topic, "-K:", "-X", "acks=all"]),
        Some(input.into_bytes()),
        Duration::from_secs(kcat_timeout_s),
        "kcat -P",
    );
    assert!(out.status.success(), "kcat -P failed ({}): {}\n{}", out.status, String::from_utf8_lossy(&out.stderr), broker.log_tail());
}

/// `kcat -G group topic -e`: a group member that reads from its committed offsets (the
/// beginning, for a group with none) to the end, then exits; returns (partition, offset, value).
fn kcat_group_read(broker: &mut Broker, group: &str, topic: &str) -> Vec<(i32, i64, String)> {
    let started = Instant::now();
    let out = run_bounded(
        Command::new(kcat())
            .args(["-b", &broker.bootstrap(), "-G", group, topic, "-e", "-q", "-f", "%p %o %s\\n"])
            .args(["-X", "auto.offset.reset=earliest"]),
        None,
        Duration::from_secs(kcat_timeout_s),
        "kcat -G",
    );
    assert!(out.status.success(), "kcat -G {group} failed ({}): {}\n{}", out.status, String::from_utf8_lossy(&out.stderr), broker.log_tail());
    let text = String::from_utf8(out.stdout).expect("utf-8 from kcat");
    let records: Vec<(i32, i64, String)> = text
        .lines()
        .map(|l| {
            let mut f = l.splitn(3, ' ');
            let mut next = || f.next().unwrap_or_else(|| panic!("kcat -G printed {l:?}, expected \"partition offset value\""));
            let (p, o, v) = (next(), next(), next());
            (p.parse().expect("partition"), o.parse().expect("offset"), v.to_string())
        })
        .collect();
    eprintln!("kcat -G {group}: {} records in {:.1} s", records.len(), started.elapsed().as_secs_f64());
    records
}

/// Checks that `read` holds each of `values` exactly once; returns each partition's next offset.
fn assert_read_once(read: &[(i32, i64, String)], values: &[String], what: &str) -> BTreeMap<i32, i64> {
    let mut seen = BTreeSet::new();
    for (p, o, v) in read {
        assert!(values.contains(v), "{what}: read {v:?} at partition {p} offset {o}, which it should not have");
        assert!(seen.insert(v.clone()), "{what}: read {v:?} twice");
    }
    assert_eq!(seen.len(), values.len(), "{what}: read {} of the {} records expected", seen.len(), values.len());
    let mut ends = BTreeMap::new();
    for (p, o, _) in read {
        let end = ends.entry(*p).or_insert(0);
        *end = (*end).max(o + 1);
    }
    ends
}

/// kcat's group consumer auto-commits, and commits what it read when it closes: with `-e` it
/// closes at the end, so a second run of the same group reads only what was produced since.
#[test]
fn kcat_group_commits_on_close_and_resumes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = broker(&dir);
    let (topic, group) = ("kcat-group", "kcat-group");
    let old: Vec<String> = (0..500).map(|i| format!("old-{i:04}")).collect();
    let new: Vec<String> = (0..200).map(|i| format!("new-{i:04}")).collect();
    let keyed = |values: &[String]| values.iter().map(|v| format!("key-{v}:{v}")).collect::<Vec<_>>();

    kcat_produce(&mut broker, topic, &keyed(&old));
    let first = kcat_group_read(&mut broker, group, topic);
    let ends = assert_read_once(&first, &old, "the first kcat -G");
    assert!(ends.len() > 1, "500 keyed records landed in partitions {:?} only", ends.keys());

    kcat_produce(&mut broker, topic, &keyed(&new));
    let second = kcat_group_read(&mut broker, group, topic);
    assert_read_once(&second, &new, "the second kcat -G (same group: from the first's commits)");
    for (p, o, v) in &second {
        let end = ends.get(p).copied().unwrap_or(0);
        assert!(*o >= end, "the second kcat -G read {v:?} at partition {p} offset {o}, below the first run's end {end}");
    }
    broker.assert_alive("after two kcat -G runs");
}
