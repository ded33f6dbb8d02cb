//! The broker on a failing `SimDisk`: a full disk or an IO error on one partition is answered
//! with KAFKA_STORAGE_ERROR for that partition only; the broker keeps serving, and nothing it
//! acknowledged is lost — across a power loss too.

use broker_core::kafka::Code;
use broker_core::broker::{Action, Broker, BrokerConfig, Fetcher};
use broker_core::node::Node;
use broker_core::testing::{create, one_node_on, run_syncs, sync};
use broker_core::log::batch::{build, validate};
use broker_core::storage::Disk;
use sim::disk::{CrashMode, DiskFaults, SimDisk};
use std::collections::BTreeMap;
use std::sync::Arc;

fn open(disk: &SimDisk) -> Node {
    let config = BrokerConfig { data_dir: "/data".into(), ..BrokerConfig::default() };
    let node = one_node_on(Arc::new(disk.clone()) as Arc<dyn Disk>, config);
    sync(&node, 0);
    node
}

fn flushed() -> BTreeMap<String, String> {
    BTreeMap::from([("flush.messages".into(), "1".into())])
}

/// A produce with acks=all, the writes and syncs it asked for done (as the shell does before
/// it answers), and its answer as the waiting request then reads it: an append whose write
/// failed is answered with that failure (the write-behind, `log::deferred`).
fn produce(b: &mut Broker, topic: &str, records: &[u8]) -> Result<broker_core::broker::Produced, broker_core::broker::Error> {
    let mut actions = Vec::new();
    let produced = b.produce(topic, 0, &records.to_vec(), -1, 0, &mut actions)?;
    run_syncs(b, actions, 0);
    match b.replicated(topic, 0, &produced)? {
        true => Ok(produced),
        false => panic!("{topic}: an ISR of one replicated once its jobs reported: {produced:?}"),
    }
}

/// The records section of every batch readable from partition `p`, in order.
fn values(b: &mut Broker, topic: &str, p: i32) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut at = 0;
    loop {
        let f = b.fetch(topic, p, at, 1 << 20, true, Fetcher::consumer, 0, &mut Vec::new()).unwrap();
        let records = f.records.to_bytes().unwrap();
        if records.is_empty() {
            return out;
        }
        let mut pos = 0;
        while pos < records.len() {
            let size = broker_core::log::batch::declared_size(&records[pos..]).unwrap();
            let h = validate(&records[pos..pos + size], usize::MAX).unwrap();
            out.push(records[pos + 61..pos + size].to_vec());
            at = h.next_offset();
            pos += size;
        }
    }
}

#[test]
fn full_disk_and_eio_fail_one_partition_and_lose_nothing_acknowledged() {
    let disk = SimDisk::new(11);
    let node = open(&disk);
    create(&node, "a", 1, flushed()).unwrap();
    create(&node, "b", 1, flushed()).unwrap();
    let mut b = node.broker();
    for i in 0..10u8 {
        produce(&mut b, "a", &build(&[&[i; 100]], 1)).unwrap();
    }
    let acked = values(&mut b, "a", 0);
    // Full disk: the append fails with KAFKA_STORAGE_ERROR and writes nothing.
    disk.set_faults(DiskFaults { capacity_bytes: Some(disk.used_bytes() + 10), ..DiskFaults::default() });
    let err = produce(&mut b, "a", &build(&[&[99; 100]], 1)).unwrap_err();
    assert_eq!(err.kafka_error(true), Code::KafkaStorageError, "{err}");
    assert_eq!(values(&mut b, "a", 0), acked, "nothing half-written is visible");
    // EIO on partition a's files only: b keeps working.
    disk.set_faults(DiskFaults { eio_paths: vec!["/data/a-0/".into()], ..DiskFaults::default() });
    assert_eq!(produce(&mut b, "a", &build(&[&[98; 100]], 1)).unwrap_err().kafka_error(true), Code::KafkaStorageError);
    assert_eq!(produce(&mut b, "b", &build(&[b"fine"], 1)).unwrap().base_offset, 0);
    // The disk heals; the broker restarts after a power loss; everything acknowledged is there.
    disk.set_faults(DiskFaults::default());
    drop(b);
    drop(node);
    disk.crash(CrashMode::PowerLoss);
    let node = open(&disk);
    let mut b = node.broker();
    assert_eq!(values(&mut b, "a", 0), acked);
    assert_eq!(values(&mut b, "b", 0).len(), 1);
}

#[test]
fn a_partition_offline_after_an_eio_burst_is_reopened_once_the_disk_heals() {
    let disk = SimDisk::new(5);
    let node = open(&disk);
    create(&node, "a", 1, flushed()).unwrap();
    let mut b = node.broker();
    produce(&mut b, "a", &build(&[b"before"], 1)).unwrap();
    disk.set_faults(DiskFaults { eio_paths: vec!["/data/a-0/".into()], ..DiskFaults::default() });
    assert_eq!(produce(&mut b, "a", &build(&[b"during"], 1)).unwrap_err().kafka_error(true), Code::KafkaStorageError);
    // The node led it: it hands the leadership over (registers again) and the broker stays up.
    let notes = b.tick(10);
    assert!(notes.contains(&Action::Reregister), "{notes:?}");
    disk.set_faults(DiskFaults::default());
    // Healed, but not led again at the epoch it failed in, however often the tick looks.
    for now in [500, 2_000, 5_000] {
        let notes = b.tick(now);
        assert!(!notes.iter().filter_map(Action::line).any(|n| n.contains("reopened after")), "{notes:?}");
        assert_eq!(produce(&mut b, "a", &build(&[b"held"], 1)).unwrap_err().kafka_error(true), Code::KafkaStorageError);
    }
    // The registration (the peers task's) moves the leadership to a later epoch: reopened.
    drop(b);
    broker_core::testing::register(&node, 6_000);
    let mut b = node.broker();
    let notes = b.tick(8_000);
    assert!(b.partitions().get("a", 0).is_some(), "reopened at the later epoch: {notes:?}");
    let after = produce(&mut b, "a", &build(&[b"after"], 1)).unwrap();
    assert_eq!(after.base_offset, 1, "the batch refused during the burst left nothing behind");
    assert_eq!(values(&mut b, "a", 0).len(), 2);
}
