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

#[test]
fn transactions_in_a_compacted_topic_lose_their_markers_once_nothing_of_them_is_left() {
    use broker_core::log::{Log, LogConfig};
    use broker_core::storage::FileDisk;
    use std::sync::Arc;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = Broker::start(dir.path(), &["--log-cleaner-backoff-ms", "100"]);
    let rounds = 60;
    let out = client_script(&mut broker, "compacted_transactions.py", &["--topic", "compacted-txn", "--rounds", &rounds.to_string()]);
    eprintln!("{}", String::from_utf8_lossy(&out.stdout).trim());
    broker.signal_and_wait(libc::SIGTERM);
    // The partition's own files: fewer markers than transactions are left, the cleaner having
    // removed those of transactions nothing was left of (each transaction wrote one marker).
    let (log, _) = Log::open(Arc::new(FileDisk::new()), &dir.path().join("compacted-txn-0"), LogConfig::default(), 0).expect("the partition's log opens");
    let (mut markers, mut horizons) = (0, 0);
    log.for_each_batch(0, 1 << 20, |h, _| {
        markers += h.is_control() as usize;
        horizons += h.delete_horizon().is_some() as usize;
        Ok::<(), broker_core::log::LogError>(())
    })
    .expect("the log reads");
    eprintln!("{markers} of {rounds} markers left ({horizons} with a delete horizon)");
    assert!(markers > 0 && markers < rounds / 2, "{markers} of {rounds} markers left ({horizons} with a delete horizon)\n{}", broker.log_tail());
}
