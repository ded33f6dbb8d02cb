//! Log compaction with real clients against the real `broker` binary: a compacted topic made
//! with confluent-kafka's AdminClient, keyed updates and tombstones, the broker's cleaner on a
//! short backoff, the latest value of every key read back by confluent-kafka, kafka-python and
//! kcat, at the offsets the producer was told.

use crate::real_clients::{client_script, run_bounded, Broker};
use crate::support::kcat;
use std::process::Command;
use std::time::Duration;

#[test]
fn a_compacted_topic_keeps_the_latest_value_of_every_key_for_every_client() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = Broker::start(dir.path(), &["--log-cleaner-backoff-ms", "200"]);
    let out = client_script(&mut broker, "compacted_topic.py", &["--topic", "compacted"]);
    eprintln!("{}", String::from_utf8_lossy(&out.stdout).trim());
    // kcat reads the cleaned log to its end: empty batches and record gaps included.
    let bootstrap = broker.bootstrap();
    let mut cmd = Command::new(kcat());
    cmd.args(["-C", "-b", bootstrap.as_str(), "-t", "compacted", "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%k=%s@%o\n"]);
    let read = run_bounded(&mut cmd, None, Duration::from_secs(60), "kcat reading the compacted topic");
    let text = String::from_utf8_lossy(&read.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert!(!lines.is_empty() && lines.len() < 500, "kcat read {} records: {}", lines.len(), broker.log_tail());
    assert!(lines.iter().any(|l| l.starts_with("key-001=value-39-1@")), "key-001's latest value: {text}");
}
