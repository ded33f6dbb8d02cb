//! A KIP-932 share group's offsets as an operator sees and sets them, against the real
//! `broker` binary: confluent-kafka's `ShareConsumer` consumes (`tests/clients/
//! share_group_offsets.py`), then `seedlog groups describe` shows each share-partition's start
//! offset (DescribeShareGroupOffsets), `seedlog groups alter-share-offsets` sets them back to 0
//! (AlterShareGroupOffsets, the group empty), and a new member is handed every record again;
//! set back once more, the change survives a SIGKILL restart and every record is handed out a
//! third time. `delete-share-offsets` then deletes the states.
//!
//! Every wait is bounded; a failure shows the tool's output and the broker's last lines.

use crate::groups::group_script;
use crate::real_clients::Broker;
use crate::support::run_bounded;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// One `seedlog` run (its requests retry a loading coordinator for a few seconds at most).
const tool_timeout_s: u64 = 60;
/// How long a SIGKILLed and restarted broker may take to lead the offsets partition again.
const coordinator_back_timeout_s: u64 = 30;
/// Records produced, spread over the script's 2 partitions.
const records: usize = 400;

fn seedlog(broker: &Broker, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_seedlog"));
    cmd.arg("groups").args(args).args(["--bootstrap", &broker.bootstrap()]);
    run_bounded(&mut cmd, None, Duration::from_secs(tool_timeout_s)).unwrap_or_else(|why| panic!("seedlog groups {args:?}: {why}\n{}", broker.log_tail()))
}

fn text(out: &Output) -> String {
    format!("exit {}\n--- stdout ---\n{}--- stderr ---\n{}", out.status, String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// `seedlog groups describe`'s START-OFFSET of each partition of `topic`, by partition. Asked
/// again while a restarted broker has not yet taken its coordinator's partition back (the tool
/// itself retries only a few seconds).
fn start_offsets(broker: &Broker, group: &str, topic: &str) -> Vec<(i32, String)> {
    let give_up = Instant::now() + Duration::from_secs(coordinator_back_timeout_s);
    let out = loop {
        let out = seedlog(broker, &["describe", group]);
        let transient = String::from_utf8_lossy(&out.stderr).contains("Coordinator");
        if out.status.success() || !transient || Instant::now() > give_up {
            break out;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    assert!(out.status.success(), "describe {group}:\n{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(stdout.contains("PROTOCOL-TYPE share") && stdout.contains("START-OFFSET"), "a share group's start offsets:\n{stdout}");
    let rows = stdout.lines().filter_map(|l| {
        let cells: Vec<&str> = l.split_whitespace().collect();
        match cells.as_slice() {
            [t, p, start, ..] if *t == topic => Some((p.parse().expect("a partition"), start.to_string())),
            _ => None,
        }
    });
    rows.collect()
}

#[test]
fn a_share_groups_start_offsets_are_described_set_back_and_consumed_again() {
    let (topic, group) = ("share-offsets", "share-offsets");
    let work = tempfile::tempdir().expect("tempdir");
    let data = work.path().join("data");
    std::fs::create_dir_all(&data).expect("create data dir");
    let state = work.path().join("share-offsets.json");
    let state = state.to_str().expect("utf-8 temp path");
    let n = records.to_string();
    let args = |phase: &'static str| ["--topic", topic, "--group", group, "--state", state, "--phase", phase, "--n", &n].map(str::to_string);
    let mut broker = Broker::start(&data, &[]);
    group_script(&mut broker, "share_group_offsets.py", &args("first").each_ref().map(String::as_str));

    // Everything was accepted: each share-partition starts at its log end.
    let half = (records / 2).to_string();
    assert_eq!(start_offsets(&broker, group, topic), vec![(0, half.clone()), (1, half)], "after consuming everything");
    let moved = seedlog(&broker, &["alter-share-offsets", group, &format!("{topic}:0=0"), &format!("{topic}:1=0"), &format!("{topic}:7=0")]);
    assert_eq!(moved.status.code(), Some(1), "one partition does not exist:\n{}", text(&moved));
    let said = String::from_utf8_lossy(&moved.stdout);
    assert!(said.contains(&format!("{topic}:0  ok")) && said.contains(&format!("{topic}:1  ok")) && said.contains("UnknownTopicOrPartition"), "{}", text(&moved));
    assert_eq!(start_offsets(&broker, group, topic), vec![(0, "0".into()), (1, "0".into())], "set back to 0");
    // Without a restart: the share-partition leaders start from the altered state.
    group_script(&mut broker, "share_group_offsets.py", &args("again").each_ref().map(String::as_str));

    // Once more, and the altered offsets are durable: a SIGKILLed broker's coordinator loads them.
    let moved = seedlog(&broker, &["alter-share-offsets", group, &format!("{topic}:0=0"), &format!("{topic}:1=0")]);
    assert!(moved.status.success(), "{}", text(&moved));
    assert_eq!(broker.signal_and_wait(libc::SIGKILL).signal(), Some(libc::SIGKILL));
    let mut broker = broker.restart();
    assert_eq!(start_offsets(&broker, group, topic), vec![(0, "0".into()), (1, "0".into())], "after a SIGKILL restart");
    group_script(&mut broker, "share_group_offsets.py", &args("again").each_ref().map(String::as_str));

    let deleted = seedlog(&broker, &["delete-share-offsets", group, topic]);
    assert!(deleted.status.success(), "{}", text(&deleted));
    assert_eq!(start_offsets(&broker, group, topic), vec![], "no state left");
}
