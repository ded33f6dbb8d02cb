//! lz4 and zstd (and every other codec) with real clients against the real `broker` binary:
//! confluent-kafka produces and consumes each codec and kcat reads it; confluent-kafka fills compacted topics with lz4 and
//! zstd batches of keyed updates and tombstones over small segments (so they roll), the cleaner
//! compacts them, and confluent-kafka and kcat read back the latest value of every key; the
//! segments left hold each topic's batches in its own codec, as Kafka's cleaner writes them.

use crate::real_clients::{client_script, run_bounded, Broker};
use crate::support::kcat;
use broker_core::log::batch;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// confluent-kafka produces every codec (idempotent, acks=all) and reads it back
/// (`confluent_roundtrip.py`); kcat reads each topic too. kcat itself cannot produce compressed
/// batches here: its librdkafka (2.0.2) compresses only for brokers that serve Produce v2,
/// which this broker, like Kafka 4, does not ("Broker does not support compression type").
#[test]
fn every_codec_from_confluent_kafka_is_read_back_by_it_and_by_kcat() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = Broker::start(dir.path(), &[]);
    client_script(&mut broker, "confluent_roundtrip.py", &["--topic", "codec", "--n", "400", "--expect-partitions", "1"]);
    let bootstrap = broker.bootstrap();
    let want: String = (0..400).map(|i| format!("key-{i:06}:value-{i:06}|{}\n", "seedlog ".repeat(i % 16 + 4))).collect();
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        let topic = if codec == "none" { "codec".to_string() } else { format!("codec-{codec}") };
        let mut consume = Command::new(kcat());
        consume.args(["-C", "-b", bootstrap.as_str(), "-t", topic.as_str(), "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%k:%s\n"]);
        let read = run_bounded(&mut consume, None, Duration::from_secs(60), "kcat consuming");
        assert!(String::from_utf8_lossy(&read.stdout) == want, "{codec}: kcat reads every record back, in order:\n{}", String::from_utf8_lossy(&read.stdout));
        assert_eq!(codecs_stored(&dir.path().join(format!("{topic}-0"))).keys().copied().collect::<Vec<_>>(), [codec_id(codec)], "{codec}: stored as sent");
    }
    broker.assert_alive("after every codec");
}

#[test]
fn lz4_and_zstd_compacted_topics_keep_the_latest_value_of_every_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = Broker::start(dir.path(), &["--log-cleaner-backoff-ms", "200"]);
    for codec in ["lz4", "zstd"] {
        let topic = format!("compacted-{codec}");
        // confluent-kafka: create, produce 50 keys x 40 rounds (every fifth key's last write a
        // tombstone) over 4 KiB segments, wait for the cleaner, read back and check every key.
        let out = client_script(&mut broker, "compacted_topic.py", &["--topic", topic.as_str(), "--compression", codec]);
        eprintln!("{}", String::from_utf8_lossy(&out.stdout).trim());
        let bootstrap = broker.bootstrap();
        let mut cmd = Command::new(kcat());
        cmd.args(["-C", "-b", bootstrap.as_str(), "-t", topic.as_str(), "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%k=%s@%o\n"]);
        let read = run_bounded(&mut cmd, None, Duration::from_secs(60), "kcat reading the compacted topic");
        let text = String::from_utf8_lossy(&read.stdout);
        let mut latest = BTreeMap::new();
        let mut last_offset = -1i64;
        for line in text.lines() {
            let (kv, offset) = line.rsplit_once('@').unwrap_or_else(|| panic!("{codec}: kcat line {line:?}"));
            let (k, v) = kv.split_once('=').unwrap_or_else(|| panic!("{codec}: kcat line {line:?}"));
            let offset: i64 = offset.parse().expect("offset");
            assert!(offset > last_offset, "{codec}: offsets increase: {text}");
            last_offset = offset;
            latest.insert(k.to_string(), v.to_string());
        }
        assert!(text.lines().count() * 4 < 50 * 40, "{codec}: kcat read {} records: compacted", text.lines().count());
        for k in 0..50 {
            let key = format!("key-{k:03}");
            match latest.get(&key) {
                // The last write of every fifth key is a tombstone: gone, or still a null.
                _ if k % 5 == 0 => assert!(latest.get(&key).is_none_or(|v| v.is_empty()), "{codec}: {key} deleted, reads {:?}", latest.get(&key)),
                Some(v) => assert_eq!(v, &format!("value-39-{k}"), "{codec}: {key}'s latest value"),
                None => panic!("{codec}: {key} missing from kcat's read: {text}"),
            }
        }
        // The cleaner rewrote batches in the producer's codec; only its empty batches (offsets
        // kept, no records) are uncompressed.
        let stored = codecs_stored(&dir.path().join(format!("{topic}-0")));
        assert_eq!(stored.keys().copied().collect::<Vec<_>>(), [codec_id(codec)], "{codec}: codecs of the batches with records: {stored:?}");
    }
    broker.assert_alive("after compaction");
}

fn codec_id(name: &str) -> u8 {
    ["none", "gzip", "snappy", "lz4", "zstd"].iter().position(|c| *c == name).expect("a codec") as u8
}

/// The codecs of the batches holding records in a partition's segments, with their counts.
fn codecs_stored(partition: &Path) -> BTreeMap<u8, usize> {
    let mut codecs = BTreeMap::new();
    for entry in std::fs::read_dir(partition).unwrap_or_else(|e| panic!("{}: {e}", partition.display())) {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "log") {
            continue;
        }
        let bytes = std::fs::read(&path).expect("segment");
        let mut at = 0;
        while let Some(size) = batch::declared_size(&bytes[at..]).filter(|s| at + s <= bytes.len()) {
            let h = batch::read_header(&bytes[at..at + size]).expect("header");
            if h.records_count > 0 {
                *codecs.entry(h.compression()).or_insert(0) += 1;
            }
            at += size;
        }
    }
    codecs
}
