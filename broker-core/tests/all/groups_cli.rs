//! `seedlog groups list` and `seedlog groups describe` (the operator's view, like
//! kafka-consumer-groups.sh) against the real `broker` binary, with groups made by a real
//! client: kcat's balanced consumer (`kcat -G`, librdkafka), which joins, gets an assignment
//! from its own assignor, commits and leaves.
//!
//! The contract checked: `list` names every group with its state and protocol type; `describe`
//! prints one row per partition with the committed offset, the log end and the lag, names the
//! consumer of each partition while a member holds it, and decodes librdkafka's assignment
//! bytes; `describe` of an unknown group exits 1 with "group G does not exist or has no
//! committed offsets" on stderr and nothing on stdout. A KIP-932 share group describes with its
//! epochs and each member's epoch and partitions.
//!
//! Every wait is bounded; a failure shows the tool's output and the broker's last lines.

use crate::support::{free_ports, kcat, run_bounded, BrokerProcess, ClientProcess};
use std::process::{Command, Output};
use std::thread;
use std::time::{Duration, Instant};

/// How long the broker may take to print its `listening on` line.
const broker_ready_timeout_s: u64 = 20;
/// One kcat or seedlog run. A kcat group consumer waits the broker's initial rebalance delay
/// (3 s) before it gets partitions; a 2-core machine may be running other tests beside it.
const tool_timeout_s: u64 = 60;
/// How long a commit may take to show in `describe`: kcat commits every 100 ms and on close,
/// and a commit is answered once replicated, so this only absorbs a loaded machine.
const commit_visible_timeout_s: u64 = 30;
/// Broker log lines kept for failure messages.
const broker_log_lines_max: usize = 200;
/// Records produced to each of the topic's partitions.
const records_per_partition: usize = 10;
const partitions: usize = 3;

fn start_broker(dir: &std::path::Path) -> BrokerProcess {
    let port = free_ports(1)[0];
    let args: Vec<String> = ["--node-id", "0", "--data-dir", &dir.display().to_string(), "--num-partitions", &partitions.to_string()].iter().map(|s| s.to_string()).collect();
    BrokerProcess::start(port, &args, broker_log_lines_max, Duration::from_secs(broker_ready_timeout_s)).unwrap_or_else(|why| panic!("broker on port {port}: {why}"))
}

fn log_tail(broker: &BrokerProcess) -> String {
    format!("--- the broker's last lines ---\n{}", broker.lines().join("\n"))
}

fn text(out: &Output) -> String {
    format!("exit {}\n--- stdout ---\n{}--- stderr ---\n{}", out.status, String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// `seedlog groups <args> --bootstrap <broker>`.
fn seedlog(broker: &BrokerProcess, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_seedlog"));
    cmd.arg("groups").args(args).args(["--bootstrap", &broker.addr()]);
    run_bounded(&mut cmd, None, Duration::from_secs(tool_timeout_s)).unwrap_or_else(|why| panic!("seedlog groups {args:?}: {why}\n{}", log_tail(broker)))
}

/// `records_per_partition` records into each partition of `topic` (auto-created with `partitions`).
fn produce(broker: &BrokerProcess, topic: &str) {
    for p in 0..partitions {
        let lines: String = (0..records_per_partition).map(|i| format!("p{p}-record-{i}\n")).collect();
        let mut cmd = Command::new(kcat());
        cmd.args(["-P", "-b", &broker.addr(), "-t", topic, "-p", &p.to_string(), "-X", "acks=all"]);
        let out = run_bounded(&mut cmd, Some(lines.into_bytes()), Duration::from_secs(tool_timeout_s)).unwrap_or_else(|why| panic!("kcat -P: {why}"));
        assert!(out.status.success(), "kcat -P to partition {p}: {}\n{}", text(&out), log_tail(broker));
    }
}

/// `kcat -G <group> <topic>` with frequent auto-commits, from the beginning of the log.
fn group_consumer(broker: &BrokerProcess, group: &str, topic: &str, client_id: &str, exit_at_end: bool) -> Command {
    let mut cmd = Command::new(kcat());
    cmd.args(["-b", &broker.addr(), "-G", group, "-X", &format!("client.id={client_id}")]);
    cmd.args(["-X", "auto.offset.reset=earliest", "-X", "enable.auto.commit=true", "-X", "auto.commit.interval.ms=100"]);
    if exit_at_end {
        cmd.arg("-e");
    }
    cmd.arg(topic);
    cmd
}

/// One row of `describe`'s partition table.
#[derive(Debug)]
struct Row {
    topic: String,
    partition: i32,
    current: Option<i64>,
    log_end: Option<i64>,
    lag: Option<i64>,
    consumer: String,
    client: String,
}

/// The header line of `describe` and the rows of its partition table.
fn parse_describe(stdout: &str) -> (String, Vec<Row>) {
    let header = stdout.lines().next().unwrap_or_default().to_string();
    let num = |s: &str| s.parse::<i64>().ok();
    let rows = stdout
        .lines()
        .skip_while(|l| !l.starts_with("TOPIC "))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| {
            let c: Vec<&str> = l.split_whitespace().collect();
            (c.len() == 7).then(|| Row {
                topic: c[0].into(),
                partition: c[1].parse().unwrap_or(-1),
                current: num(c[2]),
                log_end: num(c[3]),
                lag: num(c[4]),
                consumer: c[5].into(),
                client: c[6].into(),
            })
        })
        .collect();
    (header, rows)
}

/// Runs `describe group` until `done` holds for its output (it must succeed meanwhile), or
/// fails after `commit_visible_timeout_s` with the last output.
fn describe_until(broker: &BrokerProcess, group: &str, what: &str, done: impl Fn(&str, &[Row]) -> bool) -> (String, Vec<Row>) {
    let deadline = Instant::now() + Duration::from_secs(commit_visible_timeout_s);
    loop {
        let out = seedlog(broker, &["describe", group]);
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let (header, rows) = parse_describe(&stdout);
        if out.status.success() && done(&header, &rows) {
            return (stdout, rows);
        }
        if Instant::now() > deadline {
            panic!("describe {group}: not {what} within {commit_visible_timeout_s} s; last run: {}\n{}", text(&out), log_tail(broker));
        }
        thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn list_and_describe_a_group_kcat_consumed_and_left() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = start_broker(dir.path());
    let topic = "cli-orders";
    produce(&broker, topic);

    let mut consume = group_consumer(&broker, "mygroup", topic, "cli-once", true);
    let out = run_bounded(&mut consume, None, Duration::from_secs(tool_timeout_s)).unwrap_or_else(|why| panic!("kcat -G: {why}\n{}", log_tail(&broker)));
    let consumed = String::from_utf8_lossy(&out.stdout).lines().count();
    assert!(out.status.success() && consumed == partitions * records_per_partition, "kcat -G -e read {consumed} records: {}\n{}", text(&out), log_tail(&broker));

    let total = (partitions * records_per_partition) as i64;
    // Empty is waited for too: the broker completes the rebalance the last member's leave
    // starts on its next tick, so PreparingRebalance (no members) may show for a moment.
    let (stdout, rows) = describe_until(&broker, "mygroup", "Empty and committed up to the end", |header, rows| {
        header.contains("STATE Empty") && rows.iter().filter_map(|r| r.current).sum::<i64>() == total
    });
    assert!(stdout.starts_with("GROUP mygroup  COORDINATOR 0 (") && stdout.lines().next().is_some_and(|l| l.contains("STATE Empty  PROTOCOL-TYPE consumer")), "describe's header:\n{stdout}");
    let got: Vec<(String, i32)> = rows.iter().map(|r| (r.topic.clone(), r.partition)).collect();
    assert_eq!(got, (0..partitions as i32).map(|p| (topic.to_string(), p)).collect::<Vec<_>>(), "one row per partition:\n{stdout}");
    for r in &rows {
        let end = records_per_partition as i64;
        assert_eq!((r.current, r.log_end, r.lag), (Some(end), Some(end), Some(0)), "{r:?}:\n{stdout}");
        // The consumer left: nobody owns the partition.
        assert_eq!((r.consumer.as_str(), r.client.as_str()), ("-", "-"), "{r:?}:\n{stdout}");
    }
    assert!(stdout.contains("Group mygroup has no active members."), "{stdout}");

    let out = seedlog(&broker, &["list"]);
    let listed = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "list: {}", text(&out));
    let lines: Vec<Vec<&str>> = listed.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(lines.first(), Some(&vec!["GROUP", "STATE", "PROTOCOL-TYPE"]), "{listed}");
    assert!(lines.contains(&vec!["mygroup", "Empty", "consumer"]), "list lacks mygroup:\n{listed}");

    // Documented behaviour: unknown group → exit 1, the sentence on stderr, nothing on stdout.
    let out = seedlog(&broker, &["describe", "nosuchgroup"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(out.stdout.is_empty(), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("group nosuchgroup does not exist or has no committed offsets"), "{}", text(&out));
}

#[test]
fn describe_names_the_live_member_of_each_partition() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = start_broker(dir.path());
    let topic = "cli-live";
    produce(&broker, topic);

    // Stays in the group until killed (ClientProcess SIGKILLs it on drop).
    let consumer = ClientProcess::spawn(&mut group_consumer(&broker, "livegroup", topic, "cli-live-client", false), None).expect("spawn kcat -G");
    let total = (partitions * records_per_partition) as i64;
    let (stdout, rows) = describe_until(&broker, "livegroup", "Stable with every partition owned and committed", |header, rows| {
        header.contains("STATE Stable") && rows.len() == partitions && rows.iter().all(|r| r.consumer != "-") && rows.iter().filter_map(|r| r.current).sum::<i64>() == total
    });
    assert!(stdout.lines().next().is_some_and(|l| l.contains("PROTOCOL-TYPE consumer  ASSIGNOR ")), "{stdout}");
    let member = rows[0].consumer.clone();
    for r in &rows {
        assert_eq!((r.lag, r.consumer.as_str(), r.client.as_str()), (Some(0), member.as_str(), "cli-live-client"), "{r:?}:\n{stdout}");
    }
    // The members table: librdkafka's assignment bytes decoded to the three partitions.
    let member_line = stdout.lines().find(|l| l.starts_with(&format!("{member} "))).unwrap_or_else(|| panic!("no line for member {member}:\n{stdout}"));
    assert!(member_line.contains("cli-live-client") && member_line.ends_with(&format!("{topic}(0,1,2)")), "{member_line}\n{stdout}");

    let out = seedlog(&broker, &["list"]);
    let listed = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success() && listed.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["livegroup", "Stable", "consumer"]), "list: {}", text(&out));
    drop(consumer);
}

/// `describe` of a KIP-932 share group (two members joined over raw ShareGroupHeartbeats, the
/// one-partition-each `simple` assignment of a 3-partition topic): the header names protocol
/// type `share`, the `simple` assignor and the group and assignment epochs; the members table
/// gives each member's epoch and partitions. Once both left, the empty group still describes
/// (exit 0, "no active members"), and `list` shows it as a share group.
#[test]
fn describe_a_share_groups_members_assignments_and_epoch() {
    use crate::share_groups::raw;
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = start_broker(dir.path());
    let topic = "cli-shared";
    produce(&broker, topic);
    let addr: std::net::SocketAddr = broker.addr().parse().expect("address");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let g = "cli-share-group";
    let a = runtime.block_on(raw::beat(addr, g, "member-a", 0, Some(topic))).expect("a joins");
    runtime.block_on(raw::beat(addr, g, "member-b", 0, Some(topic))).expect("b joins");
    let a = runtime.block_on(raw::beat(addr, g, "member-a", a.member_epoch, None)).expect("a heartbeats");
    assert_eq!(a.member_epoch, 2);

    let out = seedlog(&broker, &["describe", g]);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{}", text(&out));
    let header = stdout.lines().next().unwrap_or_default();
    assert!(header.contains("STATE Stable  PROTOCOL-TYPE share  ASSIGNOR simple  GROUP-EPOCH 2  ASSIGNMENT-EPOCH 2"), "describe's header:\n{stdout}");
    let member = |id: &str| stdout.lines().find(|l| l.starts_with(&format!("{id} "))).unwrap_or_else(|| panic!("no line for {id}:\n{stdout}")).split_whitespace().map(str::to_string).collect::<Vec<_>>();
    // MEMBER-ID CLIENT-ID HOST INSTANCE-ID EPOCH PARTITIONS TARGET
    let (ma, mb) = (member("member-a"), member("member-b"));
    assert_eq!((ma[4].as_str(), mb[4].as_str()), ("2", "2"), "both at the group epoch:\n{stdout}");
    let mut all: Vec<String> = [&ma[5], &mb[5]].iter().map(|p| p.to_string()).collect();
    all.sort();
    let joined = all.join(" ");
    for p in 0..partitions {
        assert!(joined.contains(&p.to_string()), "partition {p} assigned to nobody: {joined}\n{stdout}");
    }
    assert!(ma[5].starts_with(&format!("{topic}(")) && ma[5] == ma[6], "a's partitions are its target:\n{stdout}");

    for m in ["member-a", "member-b"] {
        runtime.block_on(raw::beat(addr, g, m, -1, None)).unwrap_or_else(|code| panic!("{m} leaves: {code:?}"));
    }
    let out = seedlog(&broker, &["describe", g]);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "an empty share group exists: {}", text(&out));
    assert!(stdout.lines().next().is_some_and(|l| l.contains("STATE Empty  PROTOCOL-TYPE share")) && stdout.contains(&format!("Group {g} has no active members.")), "{stdout}");
    let out = seedlog(&broker, &["list"]);
    let listed = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(listed.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == [g, "Empty", "share"]), "list: {}", text(&out));
}
