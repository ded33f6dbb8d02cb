//! Broker decisions on real files: topics, produce/fetch, idempotence, persistence.

use super::*;
use crate::log::batch::build;
use crate::storage::FileDisk;

fn open(dir: &Path) -> Broker {
    let config = BrokerConfig { data_dir: dir.to_path_buf(), ..BrokerConfig::default() };
    Broker::open(Arc::new(FileDisk::new()), config, 0).unwrap().0
}

/// A batch from an idempotent producer.
fn idempotent(values: &[&[u8]], pid: i64, epoch: i16, seq: i32) -> Vec<u8> {
    let mut b = build(values, 1000);
    b[43..51].copy_from_slice(&pid.to_be_bytes());
    b[51..53].copy_from_slice(&epoch.to_be_bytes());
    b[53..57].copy_from_slice(&seq.to_be_bytes());
    let crc = crc32c::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    b
}

#[test]
fn produce_then_fetch_and_list_offsets() {
    let tmp = tempfile::tempdir().unwrap();
    let mut b = open(tmp.path());
    b.create_topic("t", 2, 1, BTreeMap::new(), false, 0).unwrap();
    let first = build(&[b"a", b"b"], 1000);
    assert_eq!(b.produce("t", 1, &first, -1, 0).unwrap().base_offset, 0);
    assert_eq!(b.produce("t", 1, &build(&[b"c"], 2000), 1, 0).unwrap().base_offset, 2);
    let f = b.fetch("t", 1, 0, 1 << 20, true).unwrap();
    assert_eq!(f.high_watermark, 3);
    assert_eq!(&f.records[..8], &0i64.to_be_bytes());
    assert_eq!(b.list_offset("t", 1, -2).unwrap(), (-1, 0));
    assert_eq!(b.list_offset("t", 1, -1).unwrap(), (-1, 3));
    assert_eq!(b.list_offset("t", 1, 1500).unwrap(), (2000, 2));
    assert_eq!(b.list_offset("t", 1, 2001).unwrap(), (-1, -1));
    assert!(matches!(b.fetch("t", 1, 4, 100, true), Err(Error::OffsetOutOfRange { .. })));
    assert!(matches!(b.fetch("t", 2, 0, 100, true), Err(Error::UnknownTopicOrPartition)));
    assert!(matches!(b.produce("nope", 0, &first, 1, 0), Err(Error::UnknownTopicOrPartition)));
    assert_eq!(b.produce("t", 0, &first, 2, 0).unwrap_err().code(true), 21);
    let mut bad = first.clone();
    *bad.last_mut().unwrap() ^= 1;
    assert_eq!(b.produce("t", 0, &bad, 1, 0).unwrap_err().code(true), 2, "bad CRC is CORRUPT_MESSAGE");
}

#[test]
fn topics_are_validated_persisted_and_deleted() {
    let tmp = tempfile::tempdir().unwrap();
    let mut b = open(tmp.path());
    assert_eq!(b.create_topic("bad/name", 1, 1, BTreeMap::new(), false, 0).unwrap_err().code(true), 17);
    assert_eq!(b.create_topic("t", 1, 3, BTreeMap::new(), false, 0).unwrap_err().code(true), 38);
    assert_eq!(b.create_topic("t", 0, 1, BTreeMap::new(), false, 0).unwrap_err().code(true), 37);
    let cfg = BTreeMap::from([("retention.ms".to_string(), "nope".to_string())]);
    assert_eq!(b.create_topic("t", 1, 1, cfg, false, 0).unwrap_err().code(true), 40);
    b.create_topic("v", 1, 1, BTreeMap::new(), true, 0).unwrap();
    assert!(b.topic("v").is_none(), "validate_only creates nothing");
    let cfg = BTreeMap::from([("retention.ms".to_string(), "60000".to_string())]);
    let id = b.create_topic("t", 3, -1, cfg, false, 0).unwrap();
    assert_eq!(b.create_topic("t", 1, 1, BTreeMap::new(), false, 0).unwrap_err().code(true), 36);
    b.produce("t", 2, &build(&[b"x"], 1), 1, 0).unwrap();
    drop(b);
    let mut b = open(tmp.path());
    let t = b.topic("t").expect("topic survives restart");
    assert_eq!((t.id, t.partitions.len(), t.config.retention_ms), (id, 3, 60000));
    assert_eq!(b.fetch("t", 2, 0, 100, true).unwrap().high_watermark, 1);
    b.delete_topic("t").unwrap();
    assert!(!tmp.path().join("t-0").exists() && !tmp.path().join("topics/t.toml").exists());
    drop(b);
    assert!(open(tmp.path()).topic("t").is_none(), "deleted topics stay deleted");
}

#[test]
fn idempotent_retries_are_answered_not_appended_even_after_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let mut b = open(tmp.path());
    b.create_topic("t", 1, 1, BTreeMap::new(), false, 0).unwrap();
    let (pid, epoch) = b.init_producer_id().unwrap();
    let first = idempotent(&[b"a", b"b"], pid, epoch, 0);
    assert_eq!(b.produce("t", 0, &first, -1, 0).unwrap().base_offset, 0);
    let again = b.produce("t", 0, &first, -1, 0).unwrap();
    assert_eq!((again.base_offset, again.duplicate), (0, true));
    assert_eq!(b.produce("t", 0, &idempotent(&[b"z"], pid, epoch, 5), -1, 0).unwrap_err().code(true), 45);
    assert_eq!(b.produce("t", 0, &idempotent(&[b"c"], pid, epoch, 2), -1, 0).unwrap().base_offset, 2);
    drop(b);
    let mut b = open(tmp.path());
    let retry = b.produce("t", 0, &idempotent(&[b"c"], pid, epoch, 2), -1, 0).unwrap();
    assert_eq!((retry.base_offset, retry.duplicate), (2, true), "producer state is rebuilt from the log");
    assert_eq!(b.fetch("t", 0, 0, 1 << 20, true).unwrap().high_watermark, 3);
    let (next, _) = b.init_producer_id().unwrap();
    assert!(next > pid, "producer ids are never reused across restarts ({next} after {pid})");
}

#[test]
fn auto_create_follows_the_setting() {
    let tmp = tempfile::tempdir().unwrap();
    let mut b = open(tmp.path());
    assert!(b.auto_create("fresh", 0).unwrap());
    assert_eq!(b.topic("fresh").unwrap().partitions.len(), 1);
    let config = BrokerConfig { data_dir: tmp.path().join("off"), auto_create_topics: false, ..BrokerConfig::default() };
    let mut off = Broker::open(Arc::new(FileDisk::new()), config, 0).unwrap().0;
    assert!(!off.auto_create("fresh", 0).unwrap());
    assert!(off.topic("fresh").is_none());
}
