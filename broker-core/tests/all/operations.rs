//! What operators run against a broker (issue 30): client quotas set with `seedlog configs`
//! and felt by real clients, and the Prometheus endpoint read and linted with promtool.

use crate::real_clients::{client_script, run_bounded, Broker};
use crate::support::{self, free_ports, kcat};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

/// Client quotas with `seedlog configs` as kafka-configs.sh takes them: producer_byte_rate for
/// client id "throttled" is set and described, then confluent-kafka producers of two client
/// ids write as fast as they can: only "throttled" is told to wait and is held to its quota
/// (`quota_throttle.py`); removing the quota describes none. Then a request_percentage for
/// "throttled": its producer, one record at a time, is told to wait and waits; "free" is not.
#[test]
fn produce_quota_throttles_one_client_id() {
    let dir = tempfile::tempdir().expect("tempdir");
    let metrics_addr = format!("127.0.0.1:{}", free_ports(1)[0]);
    let mut broker = Broker::start(dir.path(), &["--metrics-listen", &metrics_addr]);
    let rate = "102400";
    let addr = broker.bootstrap();
    let configs = |args: &[&str]| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_seedlog"));
        cmd.args(["configs", "--bootstrap", &addr]).args(args);
        let out = support::run_bounded(&mut cmd, None, std::time::Duration::from_secs(30)).expect("seedlog runs");
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "seedlog configs {args:?}: {text}");
        text
    };
    let client = ["--entity-type", "clients", "--entity-name", "throttled"];
    configs(&[&client[..], &["--alter", "--add-config", &format!("producer_byte_rate={rate}")]].concat());
    assert_eq!(configs(&[&client[..], &["--describe"]].concat()).trim(), "Quota configs for client-id 'throttled' are producer_byte_rate=102400.0");
    client_script(&mut broker, "quota_throttle.py", &["--topic", "quota", "--rate", rate]);
    configs(&[&client[..], &["--alter", "--delete-config", "producer_byte_rate"]].concat());
    assert_eq!(configs(&[&client[..], &["--describe"]].concat()).trim(), "");
    // request_percentage (KIP-124): 0.001% of one handler's time, 10 µs per second, is
    // overrun within a few produce requests; the other client id is never held back.
    configs(&[&client[..], &["--alter", "--add-config", "request_percentage=0.001"]].concat());
    client_script(&mut broker, "quota_throttle.py", &["--topic", "quota", "--kind", "requests"]);
    let metrics = support::scrape(&metrics_addr).unwrap_or_else(|e| panic!("{e}"));
    assert!(support::metric(&metrics, r#"seedlog_client_throttle_seconds_total{kind="request"}"#).is_some_and(|s| s > 0.0), "{metrics}");
}

/// `--metrics-listen`: after kcat writes and reads records, `/metrics` counts them for the
/// topic, counts the requests by API, names this node the active controller, and is clean under
/// `promtool check metrics`; any other path is 404.
#[test]
fn metrics_endpoint_counts_and_lints() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_ports(1)[0];
    let metrics_addr = format!("127.0.0.1:{port}");
    let broker = Broker::start(dir.path(), &["--metrics-listen", &metrics_addr]);
    let addr = broker.bootstrap();
    let records: String = (0..50).map(|i| format!("k{i}:v{i}\n")).collect();
    run_bounded(Command::new(kcat()).args(["-P", "-b", &addr, "-t", "metered", "-K:"]), Some(records.into_bytes()), Duration::from_secs(30), "kcat -P");
    let out = run_bounded(Command::new(kcat()).args(["-C", "-b", &addr, "-t", "metered", "-o", "beginning", "-e", "-q"]), None, Duration::from_secs(30), "kcat -C");
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 50);
    let text = support::scrape(&metrics_addr).unwrap_or_else(|e| panic!("{e}\n{}", broker.log_tail()));
    assert_eq!(support::metric(&text, r#"seedlog_topic_messages_in_total{topic="metered"}"#), Some(50.0), "{text}");
    assert!(support::metric(&text, r#"seedlog_topic_bytes_out_total{topic="metered"}"#).is_some_and(|b| b > 0.0), "{text}");
    assert!(support::metric(&text, r#"seedlog_request_duration_seconds_count{api="Produce"}"#).is_some_and(|n| n >= 1.0), "{text}");
    for phase in ["queue", "local", "remote", "send", "throttle"] {
        let count = format!(r#"seedlog_request_phase_seconds_count{{api="Fetch",phase="{phase}"}}"#);
        assert!(support::metric(&text, &count).is_some_and(|n| n >= 1.0), "{count}: {text}");
    }
    // kcat's consumer waits in its fetches (fetch.wait.max.ms) for records that never come:
    // that wait is remote time, not the node's.
    let sum = |phase: &str| support::metric(&text, &format!(r#"seedlog_request_phase_seconds_sum{{api="Fetch",phase="{phase}"}}"#)).unwrap_or(0.0);
    assert!(sum("remote") > sum("local"), "remote {} local {}: {text}", sum("remote"), sum("local"));
    assert_eq!(support::metric(&text, "seedlog_active_controller"), Some(1.0));
    assert!(support::metric(&text, "seedlog_raft_commit_latency_seconds_count").is_some_and(|n| n >= 1.0), "the topic's creation was committed: {text}");
    assert_eq!(support::metric(&text, "seedlog_under_replicated_partitions"), Some(0.0));
    assert_eq!(support::metric(&text, "seedlog_cleaner_dirty_bytes"), Some(0.0), "no compacted topic here");
    if let Some(said) = support::lint_metrics(&text) {
        panic!("promtool check metrics: {said}\n{text}");
    }
    let mut s = TcpStream::connect(&metrics_addr).expect("connect");
    s.write_all(b"GET /other HTTP/1.1\r\n\r\n").expect("write");
    let mut answer = String::new();
    s.read_to_string(&mut answer).expect("read");
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
}
