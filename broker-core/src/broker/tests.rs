//! Broker decisions on real files, in a one-node cluster (crate::testing): topics from the
//! metadata log, produce/fetch, idempotence, persistence, and the follower side.

use super::*;
use crate::kafka::Code;
use crate::log::batch::build;
use crate::log::LogError;
use crate::testing::{config, create, delete, one_node};
use producer::ProducerStates;

/// A batch from an idempotent producer.
fn idempotent(values: &[&[u8]], pid: i64, epoch: i16, seq: i32) -> Vec<u8> {
    let mut b = build(values, 1000);
    crate::log::batch::set_producer(&mut b, pid, epoch, seq);
    b
}

const consumer: Fetcher = Fetcher::consumer;

#[test]
fn produce_then_fetch_and_list_offsets() {
    let tmp = tempfile::tempdir().unwrap();
    let node = one_node(config(tmp.path()));
    create(&node, "t", 2, BTreeMap::new()).unwrap();
    let mut b = node.broker();
    let first = build(&[b"a", b"b"], 1000);
    assert_eq!(b.produce("t", 1, &first, -1, 0, &mut Vec::new()).unwrap().base_offset, 0);
    assert_eq!(b.produce("t", 1, &build(&[b"c"], 2000), 1, 0, &mut Vec::new()).unwrap().base_offset, 2);
    let f = b.fetch("t", 1, 0, 1 << 20, true, consumer, 0, &mut Vec::new()).unwrap();
    assert_eq!(f.high_watermark, 3, "an ISR of one: the high watermark follows the log end");
    assert_eq!(&f.records.to_bytes().unwrap()[..8], &0i64.to_be_bytes());
    assert_eq!(b.list_offset("t", 1, -2, -1, false).unwrap(), (-1, 0));
    assert_eq!(b.list_offset("t", 1, -1, -1, false).unwrap(), (-1, 3));
    assert_eq!(b.list_offset("t", 1, 1500, -1, false).unwrap(), (2000, 2));
    assert_eq!(b.list_offset("t", 1, 2001, -1, false).unwrap(), (-1, -1));
    assert!(matches!(b.fetch("t", 1, 4, 100, true, consumer, 0, &mut Vec::new()), Err(Error::OffsetOutOfRange { .. })));
    assert!(matches!(b.fetch("t", 2, 0, 100, true, consumer, 0, &mut Vec::new()), Err(Error::UnknownTopicOrPartition)));
    assert!(matches!(b.produce("nope", 0, &first, 1, 0, &mut Vec::new()), Err(Error::UnknownTopicOrPartition)));
    assert_eq!(b.produce("t", 0, &first, 2, 0, &mut Vec::new()).unwrap_err().kafka_error(true), Code::InvalidRequiredAcks);
    let mut bad = first.clone();
    *bad.last_mut().unwrap() ^= 1;
    assert_eq!(b.produce("t", 0, &bad, 1, 0, &mut Vec::new()).unwrap_err().kafka_error(true), Code::CorruptMessage, "bad CRC is CORRUPT_MESSAGE");
    // Epochs: an older one is fenced, a newer one unknown.
    let epoch = b.leader_epoch("t", 1);
    assert_eq!(b.fetch("t", 1, 0, 100, true, Fetcher { leader_epoch: epoch + 1, ..Fetcher::consumer }, 0, &mut Vec::new()).unwrap_err().kafka_error(true), Code::UnknownLeaderEpoch);
    assert_eq!(b.list_offset("t", 1, -1, epoch + 1, false).unwrap_err().kafka_error(true), Code::UnknownLeaderEpoch);
}

#[test]
fn topics_come_from_the_metadata_log_and_survive_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let node = one_node(config(tmp.path()));
    let cfg = BTreeMap::from([("retention.ms".to_string(), "60000".to_string())]);
    let id = create(&node, "t", 3, cfg).unwrap();
    assert_eq!(create(&node, "t", 1, BTreeMap::new()).unwrap_err().kafka_error(), Code::TopicAlreadyExists);
    node.broker().produce("t", 2, &build(&[b"x"], 1), 1, 0, &mut Vec::new()).unwrap();
    drop(node);
    let node = one_node(config(tmp.path()));
    {
        let b = node.broker();
        assert_eq!(b.image().topics["t"].id, id, "topic survives restart (replayed from the metadata log)");
        assert_eq!(b.topic_settings("t").unwrap().unwrap().log.retention_ms, 60000);
    }
    // Registered again, the node leads its partitions again once unfenced.
    crate::testing::sync(&node, 0);
    assert_eq!(node.broker().fetch("t", 2, 0, 100, true, consumer, 0, &mut Vec::new()).unwrap().high_watermark, 1);
    delete(&node, "t").unwrap();
    assert!(!tmp.path().join("t-0").exists());
    assert!(tmp.path().join("t-0.0-delete/partition.metadata").exists(), "renamed out of use; its files are the shell's to remove");
    drop(node);
    assert!(one_node(config(tmp.path())).broker().image().topics.get("t").is_none(), "deleted topics stay deleted");
}

#[test]
fn a_recreated_topic_never_sees_the_old_records() {
    let tmp = tempfile::tempdir().unwrap();
    let node = one_node(config(tmp.path()));
    create(&node, "t", 1, BTreeMap::new()).unwrap();
    node.broker().produce("t", 0, &build(&[b"old"], 1), 1, 0, &mut Vec::new()).unwrap();
    // A directory left behind (as if the delete was interrupted) holds another topic id.
    let dir = tmp.path().join("t-0");
    let kept = std::fs::read(dir.join("00000000000000000000.log")).unwrap();
    delete(&node, "t").unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("00000000000000000000.log"), kept).unwrap();
    std::fs::write(dir.join("partition.metadata"), "version: 0\ntopic_id: 00000000000000000000000000000001\n").unwrap();
    create(&node, "t", 1, BTreeMap::new()).unwrap();
    assert_eq!(node.broker().fetch("t", 0, 0, 1 << 20, true, consumer, 0, &mut Vec::new()).unwrap().high_watermark, 0);
}

#[test]
fn idempotent_retries_are_answered_not_appended_even_after_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let node = one_node(config(tmp.path()));
    create(&node, "t", 1, BTreeMap::new()).unwrap();
    let mut b = node.broker();
    let (pid, epoch) = b.init_producer_id().unwrap();
    let first = idempotent(&[b"a", b"b"], pid, epoch, 0);
    assert_eq!(b.produce("t", 0, &first, -1, 0, &mut Vec::new()).unwrap().base_offset, 0);
    let again = b.produce("t", 0, &first, -1, 0, &mut Vec::new()).unwrap();
    assert_eq!((again.base_offset, again.duplicate), (0, true));
    assert_eq!(b.produce("t", 0, &idempotent(&[b"z"], pid, epoch, 5), -1, 0, &mut Vec::new()).unwrap_err().kafka_error(true), Code::OutOfOrderSequenceNumber);
    assert_eq!(b.produce("t", 0, &idempotent(&[b"c"], pid, epoch, 2), -1, 0, &mut Vec::new()).unwrap().base_offset, 2);
    drop(b);
    drop(node);
    let node = one_node(config(tmp.path()));
    crate::testing::sync(&node, 0);
    let mut b = node.broker();
    let retry = b.produce("t", 0, &idempotent(&[b"c"], pid, epoch, 2), -1, 0, &mut Vec::new()).unwrap();
    assert_eq!((retry.base_offset, retry.duplicate), (2, true), "producer state is rebuilt from the log");
    assert_eq!(b.fetch("t", 0, 0, 1 << 20, true, consumer, 0, &mut Vec::new()).unwrap().high_watermark, 3);
    let (next, _) = b.init_producer_id().unwrap();
    assert!(next > pid, "producer ids are never reused across restarts ({next} after {pid})");
}

/// The state a full replay of the partition's log gives, to hold a snapshot's against.
fn replayed(b: &Broker, topic: &str, p: i32) -> Vec<crate::log::producer_snapshot::SnapshotEntry> {
    let mut full = ProducerStates::default();
    b.partitions().get(topic, p).unwrap().log.for_each_header(|h| full.record(h)).unwrap();
    full.to_snapshot()
}

#[test]
fn a_restart_takes_producer_state_from_the_checkpoints_snapshot_and_the_batches_after_it() {
    let tmp = tempfile::tempdir().unwrap();
    let node = one_node(config(tmp.path()));
    create(&node, "t", 1, BTreeMap::new()).unwrap();
    let mut b = node.broker();
    let pids: Vec<(i64, i16)> = (0..3).map(|_| b.init_producer_id().unwrap()).collect();
    let mut next = [0i32; 3];
    let mut send = |b: &mut Broker, i: usize| {
        let (pid, epoch) = pids[i];
        let batch = idempotent(&[b"v", b"w"], pid, epoch, next[i]);
        next[i] += 2;
        b.produce("t", 0, &batch, -1, 0, &mut Vec::new()).unwrap();
    };
    for round in 0..8 {
        send(&mut b, round % 3);
    }
    b.checkpoint(0); // the snapshot at the log end, 16
    for round in 0..7 {
        send(&mut b, round % 2);
    }
    let before = b.partitions().get("t", 0).unwrap().producers.to_snapshot();
    assert_eq!(before, replayed(&b, "t", 0));
    drop(b);
    drop(node);
    let dir = tmp.path().join("t-0");
    let snapshot = dir.join(crate::log::producer_snapshot::file_name(16));
    assert!(snapshot.exists(), "the checkpoint wrote the producers' state at the log end");
    // A producer the snapshot knows but no batch in the log names: if it is known after the
    // restart, the snapshot was read (and the batches after 16 replayed on top of it).
    let mut entries = crate::log::producer_snapshot::decode(&std::fs::read(&snapshot).unwrap()).unwrap();
    entries.push(crate::log::producer_snapshot::SnapshotEntry { producer_id: 777, epoch: 0, last_sequence: 41, last_offset: 15, offset_delta: 0, timestamp: -1, coordinator_epoch: -1, current_txn_first_offset: -1 });
    std::fs::write(&snapshot, crate::log::producer_snapshot::encode(&entries)).unwrap();
    let node = one_node(config(tmp.path()));
    crate::testing::sync(&node, 0);
    let mut b = node.broker();
    let after = b.partitions().get("t", 0).unwrap().producers.to_snapshot();
    assert_eq!(after.iter().filter(|e| e.producer_id != 777).copied().collect::<Vec<_>>(), before, "snapshot + replay = the state before the restart");
    let forged = b.produce("t", 0, &idempotent(&[b"x"], 777, 0, 41), -1, 0, &mut Vec::new()).unwrap();
    assert_eq!((forged.base_offset, forged.duplicate), (15, true), "the snapshot's producer is known");
    // Every batch of the five-batch window is still recognised after the restart, the one
    // from the snapshot (4) and those replayed after it.
    let (pid, epoch) = pids[0];
    for seq in [4, 6, 8, 10, 12] {
        let retry = b.produce("t", 0, &idempotent(&[b"v", b"w"], pid, epoch, seq), -1, 0, &mut Vec::new()).unwrap();
        assert!(retry.duplicate, "seq {seq}");
    }
}

#[test]
fn producer_ids_are_unique_per_node() {
    let tmp = tempfile::tempdir().unwrap();
    let one = Broker::open(Arc::new(crate::storage::FileDisk::new()), BrokerConfig { node_id: 1, ..config(&tmp.path().join("1")) }, 0);
    let two = Broker::open(Arc::new(crate::storage::FileDisk::new()), BrokerConfig { node_id: 2, ..config(&tmp.path().join("2")) }, 0);
    let (a, _) = one.unwrap().init_producer_id().unwrap();
    let (b, _) = two.unwrap().init_producer_id().unwrap();
    assert_eq!((a, b), (1 << 32, 2 << 32));
}

#[test]
fn the_next_producer_id_block_is_persisted_ahead_by_a_job_and_never_inside_a_decision() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = config(tmp.path());
    let file = cfg.data_dir.join("producer-ids");
    let mut b = Broker::open(Arc::new(crate::storage::FileDisk::new()), cfg.clone(), 0).unwrap();
    let on_disk = || std::fs::read_to_string(&file).unwrap().trim().parse::<i64>().unwrap();
    assert_eq!(on_disk(), producer_id_block, "the first block is persisted at open");
    let blocks = |actions: Vec<Action>| actions.into_iter().filter_map(|a| if let Action::PersistProducerIds(job) = a { Some(job) } else { None }).collect::<Vec<_>>();
    let prefetch_at = producer_id_block - producer_id_block / 10;
    let ids: Vec<i64> = (0..prefetch_at - 1).map(|_| b.init_producer_id().unwrap().0).collect();
    assert!(blocks(b.tick(0)).is_empty(), "most of the block is left: nothing to persist yet");
    let ids: Vec<i64> = ids.into_iter().chain((0..producer_id_block - prefetch_at + 1).map(|_| b.init_producer_id().unwrap().0)).collect();
    assert_eq!(ids, (0..producer_id_block).collect::<Vec<_>>());
    assert_eq!(on_disk(), producer_id_block, "handing out ids writes nothing");
    let refused = b.init_producer_id().unwrap_err();
    assert_eq!(refused.kafka_error(true), Code::CoordinatorLoadInProgress, "the block is used up and the next is not durable: retriable");
    let mut jobs = blocks(b.tick(0));
    assert_eq!(jobs.len(), 1);
    assert!(blocks(b.tick(0)).is_empty(), "one job out at a time");
    let job = jobs.pop().unwrap();
    assert_eq!(job.limit(), 2 * producer_id_block);
    assert!(b.producer_ids_persisted(job.limit(), Err(LogError::Failed("EIO".into()))).iter().any(|a| matches!(a, Action::Log(Level::Error, _))));
    assert!(b.init_producer_id().is_err(), "a failed job hands out nothing");
    let job = blocks(b.tick(0)).pop().expect("the next tick tries again");
    job.run().unwrap();
    assert_eq!(on_disk(), 2 * producer_id_block, "persisted before its ids are handed out");
    assert!(b.producer_ids_persisted(job.limit(), Ok(())).is_empty());
    assert_eq!(b.init_producer_id().unwrap().0, producer_id_block);
    drop(b);
    let mut b = Broker::open(Arc::new(crate::storage::FileDisk::new()), cfg, 0).unwrap();
    assert_eq!(b.init_producer_id().unwrap().0, 2 * producer_id_block, "a restart skips the rest of the persisted block");
    assert_eq!(on_disk(), 3 * producer_id_block);
}

#[test]
fn auto_create_follows_the_setting() {
    let tmp = tempfile::tempdir().unwrap();
    let node = one_node(config(tmp.path()));
    assert!(node.broker().request_auto_create("fresh").unwrap());
    assert!(node.broker().request_auto_create("bad/name").is_err());
    crate::testing::sync(&node, 0);
    assert_eq!(node.broker().image().topics["fresh"].partitions.len(), 1);
    assert!(node.broker().partitions().contains("fresh", 0));
    let off = one_node(BrokerConfig { auto_create_topics: false, ..config(&tmp.path().join("off")) });
    assert!(!off.broker().request_auto_create("fresh").unwrap());
}

#[test]
fn acks_all_waits_for_the_isr_and_min_insync_is_enforced() {
    let tmp = tempfile::tempdir().unwrap();
    let node = one_node(config(tmp.path()));
    let cfg = BTreeMap::from([("min.insync.replicas".to_string(), "2".to_string())]);
    create(&node, "strict", 1, cfg).unwrap();
    let mut b = node.broker();
    let err = b.produce("strict", 0, &build(&[b"x"], 1), -1, 0, &mut Vec::new()).unwrap_err();
    assert_eq!(err.kafka_error(true), Code::NotEnoughReplicas, "{err}");
    let p = b.produce("strict", 0, &build(&[b"x"], 1), 1, 0, &mut Vec::new()).unwrap();
    assert_eq!(b.replicated("strict", 0, &p).unwrap_err().kafka_error(true), Code::NotEnoughReplicasAfterAppend, "replicated, but the ISR is below min.insync");
}

mod configs;
mod opening;
mod failed_log;
mod transactions;
mod replication;

#[test]
fn a_topic_deleted_and_recreated_keeps_its_new_records_across_a_restart() {
    // Why: a restart replays the metadata log from the start, past the old topic's records;
    // opening the old topic over the new one's directory would empty it.
    let tmp = tempfile::tempdir().unwrap();
    let node = one_node(config(tmp.path()));
    create(&node, "t", 1, BTreeMap::new()).unwrap();
    node.broker().produce("t", 0, &build(&[b"old"], 1), 1, 0, &mut Vec::new()).unwrap();
    delete(&node, "t").unwrap();
    create(&node, "t", 1, BTreeMap::new()).unwrap();
    for v in [b"n1", b"n2", b"n3"] {
        node.broker().produce("t", 0, &build(&[v], 1), 1, 0, &mut Vec::new()).unwrap();
    }
    drop(node);
    let node = one_node(config(tmp.path()));
    crate::testing::sync(&node, 0);
    assert_eq!(node.broker().fetch("t", 0, 0, 1 << 20, true, consumer, 0, &mut Vec::new()).unwrap().high_watermark, 3, "the new topic's records survive the replay");
}

/// A topic of one partition with `cleanup.policy=compact`, small segments, and a pass due at
/// any dirty share.
fn create_compacted(node: &crate::node::Node, name: &str) {
    let configs = [("cleanup.policy", "compact"), ("segment.bytes", "1024"), ("min.cleanable.dirty.ratio", "0.01")];
    create(node, name, 1, configs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()).unwrap();
}

/// Each key's latest value in partition 0 of `name` below `end`, fetch after fetch from offset
/// 0 as a consumer reads, moving past each answer's last batch.
fn latest_by_fetch(b: &mut Broker, name: &str, end: i64, now: u64) -> BTreeMap<String, String> {
    let (mut latest, mut offset) = (BTreeMap::new(), 0);
    while offset < end {
        let f = b.fetch(name, 0, offset, 1 << 20, true, consumer, now, &mut Vec::new()).unwrap();
        for h in crate::log::batch::whole_batches(&f.records.to_bytes().unwrap()).unwrap() {
            offset = h.next_offset();
        }
        for (_, k, v) in crate::client::consumer::decode_records(f.records.to_bytes().unwrap()).unwrap() {
            latest.insert(String::from_utf8(k.unwrap().to_vec()).unwrap(), String::from_utf8(v.unwrap().to_vec()).unwrap());
        }
    }
    latest
}

/// A compacted topic: keyless records refused (INVALID_RECORD), and the cleaner, on the
/// broker's turns, leaves the latest value of each key readable at its offset through a fetch.
#[test]
fn a_compacted_topic_is_cleaned_on_the_timer_and_refuses_keyless_records() {
    use crate::log::batch::build_keyed;
    let tmp = tempfile::tempdir().unwrap();
    let node = one_node(config(tmp.path()));
    create_compacted(&node, "c");
    let mut b = node.broker();
    let keyless = b.produce("c", 0, &build(&[b"no key"], 1000), 1, 0, &mut Vec::new()).unwrap_err();
    assert_eq!(keyless.kafka_error(true), Code::InvalidRecord, "{keyless}");
    for i in 0..200 {
        let (k, v) = (format!("k{}", i % 5), format!("v{i}"));
        b.produce("c", 0, &build_keyed(&[(Some(k.as_bytes()), Some(v.as_bytes()))], 1000), 1, 0, &mut Vec::new()).unwrap();
    }
    let before = b.partitions()[("c", 0)].log.size_bytes();
    // The cleaner's turns, each a bounded step, each saying when the next is due.
    let (mut now, mut lines) = (1_000_000, Vec::new());
    for _ in 0..1000 {
        let step = b.clean_step(now);
        lines.extend(crate::testing::run_syncs(&mut b, step, now));
        let next = b.cleaner_due();
        if lines.iter().filter_map(Action::line).any(|l| l.contains("c-0: cleaned")) {
            break;
        }
        assert!(next >= now);
        now = next;
    }
    assert!(lines.iter().filter_map(Action::line).any(|l| l.contains("c-0: cleaned")), "{lines:?}");
    let after = b.partitions()[("c", 0)].log.size_bytes();
    assert!(after * 3 < before, "{after} of {before} bytes left");
    let latest = latest_by_fetch(&mut b, "c", 200, 0);
    let active_start = b.partitions()[("c", 0)].log.segment_bases().last().copied().unwrap();
    for k in 0..5 {
        // The last write of each key was 195+k; older ones survive only in the active segment.
        assert_eq!(latest[&format!("k{k}")], format!("v{}", 195 + k), "active segment starts at {active_start}");
    }
}

/// Issue 32: a cleaning step is a job the shell runs off the node's lock (`Action::Clean`).
/// While one is held the next turn hands out no other, and produce and fetch go on, on the
/// partition being cleaned and on another; its report goes on with the pass, which ends as
/// the turns' passes do.
#[test]
fn a_held_cleaning_step_holds_back_no_produce_or_fetch() {
    use crate::log::batch::build_keyed;
    let tmp = tempfile::tempdir().unwrap();
    let node = one_node(config(tmp.path()));
    create_compacted(&node, "c");
    create(&node, "t", 1, BTreeMap::new()).unwrap();
    let mut b = node.broker();
    for i in 0..200 {
        let (k, v) = (format!("k{}", i % 5), format!("v{i}"));
        b.produce("c", 0, &build_keyed(&[(Some(k.as_bytes()), Some(v.as_bytes()))], 1000), 1, 0, &mut Vec::new()).unwrap();
    }
    let now = 1_000_000;
    let turn = b.clean_step(now);
    let job = turn.iter().find_map(|a| if let Action::Clean { topic, job, .. } = a { Some((topic.clone(), job.clone())) } else { None });
    let (topic, job) = job.expect("the turn hands its step out as a job");
    assert_eq!(topic, "c");
    let due = b.cleaner_due().max(now);
    let again = b.clean_step(due);
    assert!(!again.iter().any(|a| matches!(a, Action::Clean { .. } | Action::Swap { .. })), "one step in flight: {again:?}");
    assert_eq!(b.produce("t", 0, &build(&[b"other"], 1000), 1, now, &mut Vec::new()).unwrap().base_offset, 0);
    assert_eq!(b.produce("c", 0, &build_keyed(&[(Some(b"k0"), Some(b"late"))], 1000), 1, now, &mut Vec::new()).unwrap().base_offset, 200);
    assert_eq!(b.fetch("t", 0, 0, 1 << 20, true, consumer, now, &mut Vec::new()).unwrap().high_watermark, 1);
    assert_eq!(b.fetch("c", 0, 0, 1 << 20, true, consumer, now, &mut Vec::new()).unwrap().high_watermark, 201);
    let reported = b.cleaned("c", 0, job.run(), now);
    let mut lines = crate::testing::run_syncs(&mut b, reported, now);
    let mut now = now;
    for _ in 0..1000 {
        if lines.iter().filter_map(Action::line).any(|l| l.contains("c-0: cleaned")) {
            break;
        }
        now = b.cleaner_due().max(now);
        let step = b.clean_step(now);
        lines.extend(crate::testing::run_syncs(&mut b, step, now));
    }
    assert!(lines.iter().filter_map(Action::line).any(|l| l.contains("c-0: cleaned")), "{lines:?}");
    let latest = latest_by_fetch(&mut b, "c", 201, now);
    assert_eq!(latest["k0"], "late", "the record produced while the step was held stays");
    assert_eq!(latest["k4"], "v199");
}

/// A node with topic `t` of 40 partitions, `records(p)` records produced to partition `p`.
fn forty_logs(dir: &std::path::Path, records: impl Fn(i32) -> i32) -> crate::node::Node {
    let node = one_node(config(dir));
    create(&node, "t", 40, BTreeMap::new()).unwrap();
    for p in 0..40 {
        for _ in 0..records(p) {
            node.broker().produce("t", p, &build(&[b"v"], 1000), 1, 0, &mut Vec::new()).unwrap();
        }
    }
    node
}

/// Partition `p`'s checkpoint file, with its staged file renamed away.
fn checkpoint_of(dir: &std::path::Path, p: i32) -> String {
    let dir = dir.join(format!("t-{p}"));
    assert!(!dir.join(format!("{}.tmp", crate::log::RECOVERY_POINT_FILE)).exists(), "t-{p}: staged file renamed");
    std::fs::read_to_string(dir.join(crate::log::RECOVERY_POINT_FILE)).unwrap()
}

#[test]
fn one_checkpoint_covers_every_partition_with_its_log_end() {
    let tmp = tempfile::tempdir().unwrap();
    let node = forty_logs(tmp.path(), |p| p % 4);
    let mut b = node.broker();
    assert!(b.checkpoint(5).is_empty(), "no errors");
    for p in 0..40 {
        assert_eq!(checkpoint_of(tmp.path(), p), format!("{}\n", p % 4), "t-{p}");
        let marker = tmp.path().join(format!("t-{p}")).join(crate::log::dir::partition_marker);
        assert_eq!(std::fs::read_to_string(marker).unwrap().len(), 54, "t-{p}: marker whole");
    }
}

/// A periodic checkpoint over many changed logs is staged a bounded number of logs a decision
/// (`constants::checkpoint_logs_per_decision`), each stage resuming after the last log the one
/// before looked at, then committed a bounded number at a time: every log ends with its own end
/// checkpointed, none staged twice or left out.
#[test]
fn a_checkpoint_is_staged_and_committed_a_bounded_number_of_logs_at_a_time() {
    let tmp = tempfile::tempdir().unwrap();
    let node = forty_logs(tmp.path(), |p| 1 + p % 4);
    let mut b = node.broker();
    let (failures, staged) = b.checkpoint_stage(None, 7);
    assert!(failures.is_empty(), "{failures:?}");
    let mut staged = staged.expect("every log changed");
    let mut sizes = vec![staged.len()];
    while let Some(after) = staged.resume() {
        let (failures, more) = b.checkpoint_stage(Some(&after), 7);
        assert!(failures.is_empty(), "{failures:?}");
        let more = more.expect("a stage that stopped at its bound has logs after it");
        sizes.push(more.len());
        staged.extend(more);
    }
    assert_eq!(sizes, [7, 7, 7, 7, 7, 5], "40 changed logs, 7 a decision");
    b.disk.sync_all(tmp.path()).unwrap();
    let parts = staged.split(16);
    assert_eq!(parts.iter().map(StagedCheckpoints::len).collect::<Vec<_>>(), [16, 16, 8]);
    for part in parts {
        assert!(b.checkpoint_commit(part, Ok(())).is_empty());
    }
    for p in 0..40 {
        assert_eq!(checkpoint_of(tmp.path(), p), format!("{}\n", 1 + p % 4), "t-{p}");
    }
    assert!(b.checkpoint_stage(None, 7).1.is_none(), "nothing changed since");
}

/// KIP-966's clean-shutdown marker: left after a clean stop (ELR on), taken once at the next
/// open (the first registration sends its epoch, later ones -1), gone from the disk so a crash
/// after that start counts as unclean; a garbled marker counts as none; without ELR nothing
/// is written or read.
#[test]
fn the_clean_shutdown_marker_is_taken_once_and_only_with_elr() {
    let tmp = tempfile::tempdir().unwrap();
    let disk: Arc<dyn Disk> = Arc::new(crate::storage::FileDisk::new());
    let elr = BrokerConfig { eligible_leader_replicas: true, ..config(tmp.path()) };
    let marker = tmp.path().join(crate::log::dir::clean_shutdown_file);
    Broker::open(disk.clone(), elr.clone(), 0).unwrap().mark_clean_shutdown(17).unwrap();
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "17\n");
    let mut b = Broker::open(disk.clone(), elr.clone(), 0).unwrap();
    assert!(!marker.exists(), "taken at open");
    assert_eq!((b.take_previous_epoch(), b.take_previous_epoch()), (17, -1), "for the first registration only");
    assert_eq!(Broker::open(disk.clone(), elr.clone(), 0).unwrap().take_previous_epoch(), -1, "no marker: unclean");
    std::fs::write(&marker, "garbage").unwrap();
    assert_eq!(Broker::open(disk.clone(), elr, 0).unwrap().take_previous_epoch(), -1, "a garbled marker counts as none");
    assert!(!marker.exists());
    let off = config(tmp.path());
    Broker::open(disk.clone(), off.clone(), 0).unwrap().mark_clean_shutdown(3).unwrap();
    assert!(!marker.exists(), "without ELR no marker is written");
}

/// A partition directory the metadata gives this broker no replica for — a topic deleted, or a
/// replica moved away, while the broker was down — is removed once its own registration is
/// applied (fresh seed 70195 of scenarios/fast/reassign.toml left one behind for good); other
/// directories stay.
#[test]
fn stray_replicas_are_removed_at_registration() {
    let tmp = tempfile::tempdir().unwrap();
    let stray = tmp.path().join("gone-3");
    std::fs::create_dir_all(&stray).unwrap();
    std::fs::write(stray.join(crate::log::dir::partition_marker), format!("version: 0\ntopic_id: {}\n", "ab".repeat(16))).unwrap();
    std::fs::write(stray.join("00000000000000000000.log"), b"").unwrap();
    let other = tmp.path().join("not-a-partition");
    std::fs::create_dir_all(&other).unwrap();
    let node = one_node(config(tmp.path()));
    create(&node, "t", 1, BTreeMap::new()).unwrap();
    assert!(!stray.exists(), "the stray replica's directory is gone");
    assert!(other.exists() && tmp.path().join("t-0").exists(), "what is not a stray replica stays");
    drop(node);
}
