//! Topic configs and DeleteRecords on one broker: a config change replayed from the metadata
//! log reaches the open log and the acks=all check at once and survives a restart;
//! LogAppendTime stamps the broker's clock; DeleteRecords moves the log start (inside a
//! segment too), persists it before deleting anything, and trims whole segments.

use super::*;
use crate::log::batch;
use crate::metadata::configs::Op;
use crate::node::Node;
use crate::testing::alter_config;

const key: fn(&str) -> (&str, i32) = |t| (t, 0);

/// One batch of one 80-byte record: with `segment.bytes` 400, two batches per segment.
fn produce_n(node: &Node, topic: &str, n: usize) {
    for _ in 0..n {
        node.broker().produce(topic, 0, &build(&[&[1u8; 80]], 1_000), 1, 0, &mut Vec::new()).unwrap();
    }
}

fn overrides(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn a_config_change_reaches_the_open_log_at_once_and_survives_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let node = one_node(config(tmp.path()));
    create(&node, "t", 1, overrides(&[("segment.bytes", "200")])).unwrap();
    produce_n(&node, "t", 4);
    node.broker().tick(100_000);
    assert_eq!(node.broker().partitions()[key("t")].log_start_offset(), 0, "seven days of retention keep everything");
    alter_config(&node, "t", &[("retention.ms", Op::Set("10000".into())), ("min.insync.replicas", Op::Set("2".into()))]).unwrap();
    {
        let mut b = node.broker();
        let part = &b.partitions()[key("t")];
        assert_eq!((part.log.config().retention_ms, part.log.config().segment_bytes, part.min_insync), (10_000, 200, 2));
        b.tick(100_000);
        assert_eq!(b.partitions()[key("t")].log_start_offset(), 3, "retention applies: every closed segment is older than 10 s");
        let refused = b.produce("t", 0, &build(&[b"x"], 1), -1, 0, &mut Vec::new()).unwrap_err();
        assert!(matches!(refused, Error::NotEnoughReplicas { isr: 1, min: 2 }), "{refused}");
    }
    drop(node);
    let node = one_node(config(tmp.path()));
    let b = node.broker();
    let part = &b.partitions()[key("t")];
    assert_eq!((part.log.config().retention_ms, part.min_insync), (10_000, 2), "replayed from the metadata log");
}

#[test]
fn log_append_time_stamps_the_brokers_clock_on_each_batch() {
    let tmp = tempfile::tempdir().unwrap();
    let node = one_node(config(tmp.path()));
    create(&node, "t", 1, BTreeMap::new()).unwrap();
    let mut b = node.broker();
    assert_eq!(b.produce("t", 0, &build(&[b"a"], 1_000), 1, 5_000, &mut Vec::new()).unwrap().log_append_time, -1, "CreateTime");
    drop(b);
    alter_config(&node, "t", &[("message.timestamp.type", Op::Set("LogAppendTime".into()))]).unwrap();
    let mut b = node.broker();
    let produced = b.produce("t", 0, &build(&[b"b", b"c"], 1_000), 1, 7_000, &mut Vec::new()).unwrap();
    assert_eq!((produced.base_offset, produced.log_append_time), (1, 7_000));
    let f = b.fetch("t", 0, 1, 1 << 20, true, consumer, 0, &mut Vec::new()).unwrap();
    let h = batch::read_header(&f.records.to_bytes().unwrap()).unwrap();
    assert!(h.log_append_time(), "the timestamp-type attribute bit is set");
    assert_eq!((h.base_offset, h.max_timestamp), (1, 7_000));
    batch::check_stored(&f.records.to_bytes().unwrap()[..h.size]).expect("the CRC covers the rewritten header");
    // Not asserted: ListOffsets by timestamp on a LogAppendTime batch. The log's time lookup
    // (log/segment.rs `find_in_batch`) walks each record's own CreateTime delta, where Kafka
    // reads every record of a LogAppendTime batch as the batch's maxTimestamp (docs/protocol.md).
}

#[test]
fn delete_records_moves_the_start_inside_a_segment_persists_it_and_trims_whole_segments() {
    let tmp = tempfile::tempdir().unwrap();
    let node = one_node(config(tmp.path()));
    create(&node, "d", 1, overrides(&[("segment.bytes", "400")])).unwrap();
    create(&node, "c", 1, overrides(&[("cleanup.policy", "compact")])).unwrap();
    produce_n(&node, "d", 5);
    let mut b = node.broker();
    assert_eq!(b.partitions()[key("d")].log.segment_bases(), vec![0, 2, 4]);
    for beyond in [6, -2] {
        assert_eq!(b.delete_records("d", 0, beyond, 0).unwrap_err().kafka_error(true), Code::OffsetOutOfRange, "{beyond}");
    }
    assert_eq!(b.delete_records("c", 0, 0, 0).unwrap_err().kafka_error(true), Code::PolicyViolation, "a compacted topic keeps its keys");
    assert_eq!(b.delete_records("d", 0, 3, 0).unwrap().0, 3);
    let part = &b.partitions()[key("d")];
    assert_eq!((part.log_start_offset(), part.log.segment_bases()), (3, vec![2, 4]), "the segment holding 3 stays");
    assert_eq!(b.low_watermark("d", 0, -1).unwrap(), 3, "a single replica is the whole low watermark");
    assert!(matches!(b.fetch("d", 0, 2, 1 << 20, true, consumer, 0, &mut Vec::new()), Err(Error::OffsetOutOfRange { start: 3, .. })));
    let from_start = b.fetch("d", 0, 3, 1 << 20, true, consumer, 0, &mut Vec::new()).unwrap();
    assert_eq!((from_start.log_start_offset, batch::read_header(&from_start.records.to_bytes().unwrap()).unwrap().base_offset), (3, 3));
    assert_eq!(b.list_offset("d", 0, -2, -1, false).unwrap(), (-1, 3));
    assert_eq!(b.delete_records("d", 0, 1, 0).unwrap().0, 1, "a start already past the offset stays");
    assert_eq!(b.partitions()[key("d")].log_start_offset(), 3);
    assert_eq!(b.delete_records("d", 0, -1, 0).unwrap().0, 5, "-1 is the high watermark");
    drop(b);
    drop(node);
    let node = one_node(config(tmp.path()));
    let mut b = node.broker();
    let part = &b.partitions()[key("d")];
    assert_eq!((part.log_start_offset(), part.log.log_end_offset(), part.log.segment_bases()), (5, 5, vec![4]), "persisted");
    assert_eq!(b.produce("d", 0, &build(&[b"after"], 1), 1, 0, &mut Vec::new()).unwrap().base_offset, 5);
}

#[test]
fn deleted_segments_files_are_handed_to_the_shell_to_close_with_their_names_gone() {
    let tmp = tempfile::tempdir().unwrap();
    let node = one_node(config(tmp.path()));
    create(&node, "t", 1, overrides(&[("segment.bytes", "200"), ("retention.ms", "10000")])).unwrap();
    produce_n(&node, "t", 4);
    let actions = node.broker().tick(100_000);
    let released: Vec<&crate::log::Released> = actions.iter().filter_map(|a| if let Action::Release(files) = a { Some(files) } else { None }).collect();
    assert_eq!(released.iter().map(|r| r.len()).sum::<usize>(), 3, "the three closed segments expired: {actions:?}");
    let names: Vec<String> = std::fs::read_dir(tmp.path().join("t-0")).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).filter(|n| n.ends_with(".log")).collect();
    assert_eq!(names.len(), 1, "their names are gone before the shell closes them: {names:?}");
    assert_eq!(node.broker().partitions()[key("t")].log_start_offset(), 3);
    // DeleteRecords deletes the same way.
    produce_n(&node, "t", 4);
    node.broker().delete_records("t", 0, 5, 100_000).unwrap();
    let actions = node.broker().tick(100_001);
    assert!(actions.iter().any(|a| matches!(a, Action::Release(files) if !files.is_empty())), "{actions:?}");
}
