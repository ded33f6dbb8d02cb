//! A coordinator's load of its state partition as jobs (`node::coordinator_load`), through real
//! request bytes on real files: a node restarted on a `__consumer_offsets` partition of a few
//! MiB reads none of its batches inside a decision (only the few batch headers that bound a
//! step), has one step's job out at a time, and once the jobs ran coordinates the very groups
//! and offsets the node that wrote them did; a report that comes after the coordinator moved
//! on (another leadership, epoch, log, or a step already taken) is dropped and the step asked
//! for again.

use super::*;
use crate::broker::{Action, BrokerConfig};
use crate::constants::{batch_header_bytes, offsets_load_bytes_per_step};
use crate::group::offsets_topic;
use crate::group::records::OffsetValue;
use crate::node::coordinator_load::LoadStamp;
use crate::node::{LoadDone, LoadJob};
use crate::storage::hooked::{Hook, Hooked};
use crate::storage::FileDisk;
use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_protocol::messages::find_coordinator_response::FindCoordinatorResponse;
use kafka_protocol::messages::offset_commit_request::{OffsetCommitRequest, OffsetCommitRequestPartition, OffsetCommitRequestTopic};
use kafka_protocol::messages::offset_commit_response::OffsetCommitResponse;
use kafka_protocol::messages::offset_fetch_request::{OffsetFetchRequest, OffsetFetchRequestGroup};
use kafka_protocol::messages::offset_fetch_response::OffsetFetchResponse;
use kafka_protocol::messages::GroupId;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

const groups: usize = 40;
const partitions: i32 = 20;

/// Reads of the state log's files: the bytes, and the largest single read.
#[derive(Default)]
struct StateReads {
    bytes: AtomicU64,
    largest: AtomicU64,
}

impl Hook for StateReads {
    fn read(&self, path: &Path, n: usize) {
        if path.to_string_lossy().contains(offsets_topic) {
            self.bytes.fetch_add(n as u64, Relaxed);
            self.largest.fetch_max(n as u64, Relaxed);
        }
    }
}

impl StateReads {
    /// The bytes read, and the largest read, since the last call.
    fn take(&self) -> (u64, u64) {
        (self.bytes.swap(0, Relaxed), self.largest.swap(0, Relaxed))
    }
}

fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.into())
}

/// One offsets partition: every group's records are in one log.
fn config(dir: &Path) -> BrokerConfig {
    let mut config = crate::testing::config(dir);
    config.groups.offsets_partitions = 1;
    config
}

/// What the group coordinator holds: each group's state and generation, and its offsets.
fn coordinated(node: &Node) -> Vec<(String, String, String)> {
    let parts = node.parts();
    let c = &parts.groups;
    c.groups().map(|g| (g.id.clone(), format!("{:?} {}", g.state, g.generation), format!("{:?}", c.fetch_offsets(&g.id, None)))).collect()
}

/// Commits offset `round` of every partition of `t` for `group` (with metadata large enough
/// that the log passes a few load steps).
fn commit(node: &Node, group: usize, round: i64) -> Vec<i16> {
    let p = (0..partitions).map(|i| OffsetCommitRequestPartition::default().with_partition_index(i).with_committed_offset(round * 100 + i as i64).with_committed_metadata(Some(s(&format!("{group}/{round}/{}", "m".repeat(400)))))).collect();
    let t = OffsetCommitRequestTopic::default().with_name(TopicName(s("t"))).with_partitions(p);
    let req = OffsetCommitRequest::default().with_group_id(GroupId(s(&format!("g{group}")))).with_generation_id_or_member_epoch(-1).with_topics(vec![t]);
    let r: OffsetCommitResponse = reply(handle(node, &frame(ApiKey::OffsetCommit, 8, &req), 0, Attempt::First, &mut Vec::new()), ApiKey::OffsetCommit, 8);
    r.topics[0].partitions.iter().map(|p| p.error_code).collect()
}

/// OffsetFetch of every offset of `group`: its error code; the actions in `out`.
fn fetch(node: &Node, group: &str, now: u64, out: &mut Vec<Action>) -> i16 {
    let req = OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default().with_group_id(GroupId(s(group))).with_topics(None)]);
    let r: OffsetFetchResponse = reply(handle(node, &frame(ApiKey::OffsetFetch, 8, &req), now, Attempt::First, out), ApiKey::OffsetFetch, 8);
    r.groups[0].error_code
}

/// Writes `rounds` commits per group on a node of its own and stops it; returns what its
/// coordinator held.
fn write_offsets(dir: &Path, rounds: i64) -> Vec<(String, String, String)> {
    let node = crate::testing::one_node(config(dir));
    crate::testing::create(&node, "t", partitions, Default::default()).unwrap();
    let find = FindCoordinatorRequest::default().with_coordinator_keys(vec![s("g0")]);
    let _: FindCoordinatorResponse = reply(handle(&node, &frame(ApiKey::FindCoordinator, 4, &find), 0, Attempt::First, &mut Vec::new()), ApiKey::FindCoordinator, 4);
    crate::testing::sync(&node, 0);
    for round in 0..rounds {
        for g in 0..groups {
            assert_eq!(commit(&node, g, round), vec![0; partitions as usize]);
        }
    }
    let held = coordinated(&node);
    assert_eq!(held.len(), groups);
    let _ = node.input(Input::Shutdown, 0);
    held
}

/// The node restarted on `dir`, its state log's reads counted from here on.
fn restarted(dir: &Path, reads: &Arc<StateReads>) -> Node {
    let disk = Arc::new(Hooked::new(Arc::new(FileDisk::new()), reads.clone()));
    let node = crate::testing::one_node_on(disk, config(dir));
    reads.take();
    node
}

/// The load jobs among `actions`.
fn loads(actions: Vec<Action>) -> Vec<(String, i32, LoadJob)> {
    actions.into_iter().filter_map(|a| if let Action::Load { topic, partition, job } = a { Some((topic, partition, job)) } else { None }).collect()
}

/// Asserts that a decision read no batch of the state log: at most a few batch headers, each
/// read alone (`Log::slice` bounding a step), against the `step` bytes its job reads.
fn read_no_batch(reads: &StateReads, step: usize, what: &str) {
    let (bytes, largest) = reads.take();
    assert!(largest <= batch_header_bytes as u64, "{what}: a read of {largest} bytes (a batch) inside the decision");
    assert!(bytes * 100 <= step as u64, "{what}: {bytes} bytes of headers read inside the decision for a step of {step}");
}

#[test]
fn a_loads_decisions_read_no_batch_one_job_at_a_time_and_its_jobs_load_what_was_written() {
    let tmp = tempfile::tempdir().unwrap();
    let written = write_offsets(tmp.path(), 8);
    let reads = Arc::new(StateReads::default());
    let node = restarted(tmp.path(), &reads);
    let mut out = Vec::new();
    assert_eq!(fetch(&node, "g0", 0, &mut out), Code::CoordinatorLoadInProgress.code());
    let mut jobs = loads(out);
    let (mut steps, mut job_bytes) = (0, 0u64);
    while let Some((topic, partition, job)) = jobs.pop() {
        assert!(jobs.is_empty(), "one job at a time for one partition");
        assert_eq!((topic.as_str(), partition), (offsets_topic, 0));
        assert!(job.len() <= offsets_load_bytes_per_step + (64 << 10), "a step of {} bytes", job.len());
        read_no_batch(&reads, job.len(), "the decision handing the step out");
        // While it is out, neither a request nor a tick hands out another.
        let mut out = Vec::new();
        assert_eq!(fetch(&node, "g1", 1, &mut out), Code::CoordinatorLoadInProgress.code());
        out.extend(node.input(Input::Tick { checkpoint: false }, 1));
        assert!(loads(out).is_empty(), "a second job for a partition whose step is out");
        read_no_batch(&reads, job.len(), "a request and a tick while the step is out");
        let done = job.run();
        let (bytes, _) = reads.take();
        assert!(bytes >= job.len() as u64, "the job read its step: {bytes} of {} bytes", job.len());
        job_bytes += bytes;
        let reported = node.input(Input::Loaded { topic, partition, done }, 2);
        steps += 1;
        jobs = loads(reported);
        read_no_batch(&reads, job.len(), "the report's decision");
    }
    assert!(steps >= 3, "a log of a few MiB loads in several steps ({steps}, {job_bytes} bytes)");
    assert_eq!(node.parts().groups.loading(), Vec::new(), "the load is done");
    assert_eq!(coordinated(&node), written, "the coordinator holds what the writer's did");
    assert_eq!(fetch(&node, "g0", 3, &mut Vec::new()), 0);
}

/// A node restarted on a written state log, with its first step's job out.
fn loading(dir: &Path, reads: &Arc<StateReads>) -> (Node, LoadJob) {
    write_offsets(dir, 4);
    let node = restarted(dir, reads);
    let mut out = Vec::new();
    assert_eq!(fetch(&node, "g0", 0, &mut out), Code::CoordinatorLoadInProgress.code());
    let mut jobs = loads(out);
    assert_eq!(jobs.len(), 1);
    (node, jobs.remove(0).2)
}

/// Reports `done` for the offsets partition: the next step's job, if one is handed out.
fn report(node: &Node, done: LoadDone) -> Option<LoadJob> {
    let mut jobs = loads(node.input(Input::Loaded { topic: offsets_topic.into(), partition: 0, done }, 1));
    assert!(jobs.len() <= 1);
    jobs.pop().map(|(_, _, job)| job)
}

#[test]
fn a_load_report_from_another_epoch_or_log_or_a_step_taken_is_dropped_and_the_step_asked_again() {
    let tmp = tempfile::tempdir().unwrap();
    let reads = Arc::new(StateReads::default());
    let (node, first) = loading(tmp.path(), &reads);
    let start = first.stamp.next;
    // The job out, as if handed out under another leader epoch, or for a log since reopened.
    let forges: [fn(&mut LoadStamp); 2] = [|s| s.leader_epoch += 1, |s| s.log += 1];
    let mut out = first;
    for forge in forges {
        let mut done = out.run();
        forge(&mut done.stamp);
        let again = report(&node, done).expect("the step asked again");
        assert_eq!(again.stamp.next, start);
        assert_ne!(again.stamp.id, out.stamp.id);
        assert_eq!(node.parts().groups.loading(), vec![(0, start)], "a dropped report loads nothing");
        out = again;
    }
    // The job's own report is taken, and the next step handed out.
    let second = report(&node, out.run()).expect("the next step");
    assert!(second.stamp.next > start);
    assert_eq!(node.parts().groups.loading(), vec![(0, second.stamp.next)]);
    // The step's report again (its job run twice): the coordinator moved on, and the second
    // step is still out, so nothing is handed out either.
    assert!(report(&node, out.run()).is_none());
    assert_eq!(node.parts().groups.loading(), vec![(0, second.stamp.next)], "a step taken twice");
    let mut next = Some(second);
    while let Some(job) = next {
        next = report(&node, job.run());
    }
    assert_eq!(fetch(&node, "g0", 2, &mut Vec::new()), 0);
}

#[test]
fn a_load_report_after_the_leadership_moved_is_dropped_and_the_load_starts_over() {
    let tmp = tempfile::tempdir().unwrap();
    let reads = Arc::new(StateReads::default());
    let (node, first) = loading(tmp.path(), &reads);
    let start = first.stamp.next;
    let epoch = first.stamp.leader_epoch;
    {
        // The partition moved away and came back under a later epoch while the job ran (as the
        // coordinator sees it; the broker's own view catches up on the report's decision).
        let mut parts = node.parts();
        let mut work = crate::group::Work::default();
        parts.groups.resign(0, 1, &mut work);
        parts.groups.take_over(0, epoch + 1, start);
    }
    // Dropped: the leadership it was read for is gone. The decision brings the coordinator back
    // to the broker's epoch and hands the load's first step out again.
    let again = report(&node, first.run()).expect("the load starts over");
    assert_eq!((again.stamp.next, again.stamp.leader_epoch), (start, epoch));
    assert_ne!(again.stamp.id, first.stamp.id);
    assert_eq!(node.parts().groups.loading(), vec![(0, start)], "the dropped report loaded nothing");
    let mut next = Some(again);
    while let Some(job) = next {
        next = report(&node, job.run());
    }
    assert_eq!(node.parts().groups.loading(), Vec::new());
    assert_eq!(fetch(&node, "g0", 2, &mut Vec::new()), 0);
}

#[test]
fn a_record_appended_while_the_last_step_is_out_is_loaded_by_one_more_step() {
    // A step's job once said "done" by the log end when it was handed out: what was appended
    // while it ran (a transaction marker `txn_marker` leaves to the load) was never read.
    let tmp = tempfile::tempdir().unwrap();
    let reads = Arc::new(StateReads::default());
    let (node, mut job) = loading(tmp.path(), &reads);
    let end = || node.broker().partitions().get(offsets_topic, 0).unwrap().log.log_end_offset();
    let done = loop {
        let done = job.run();
        if done.result.as_ref().unwrap().after >= end() {
            break done; // the last step's report, not yet taken
        }
        job = report(&node, done).expect("the next step");
    };
    let old_end = end();
    let value = OffsetValue { offset: 4242, leader_epoch: -1, metadata: String::new(), commit_timestamp: 1 };
    let record = crate::group::records::offset_records("late", &[(("t".to_string(), 0), value)]).remove(0);
    let batch = crate::log::batch::build_keyed(&[(Some(&record.0[..]), record.1.as_deref())], 1);
    node.broker().produce(offsets_topic, 0, &batch, 1, 1, &mut Vec::new()).unwrap();
    let more = report(&node, done).expect("one more step, for what was appended meanwhile");
    assert_eq!(more.stamp.next, old_end);
    assert_eq!(node.parts().groups.loading(), vec![(0, old_end)]);
    assert!(report(&node, more.run()).is_none());
    assert_eq!(node.parts().groups.loading(), Vec::new(), "the load is done");
    let offsets = format!("{:?}", node.parts().groups.fetch_offsets("late", None));
    assert!(offsets.contains("4242"), "the appended record was loaded: {offsets}");
}
