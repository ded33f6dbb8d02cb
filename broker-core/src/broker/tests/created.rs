//! Created replicas and their one file-system sync, run as a job (`created`): they take no role
//! (no write) before it reports, their logs owe nothing it covered after, and a failed sync
//! takes them offline to be reopened with their markers written again.

use super::*;
use crate::storage::hooked::{Hook, Hooked, Op};
use crate::storage::FileDisk;
use crate::testing::{one_node_on, run_syncs};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Mutex;

/// Records the files fsynced one by one, and fails `syncfs` while armed.
#[derive(Default)]
struct Watch {
    synced: Mutex<Vec<std::path::PathBuf>>,
    fail_sync_all: AtomicBool,
}

impl Watch {
    /// How many times a marker of `dir` (as `t-1`) was fsynced on its own.
    fn marker_syncs(&self, dir: &str) -> usize {
        let synced = self.synced.lock().unwrap();
        synced.iter().filter(|p| p.ends_with(format!("{dir}/{}", crate::log::dir::partition_marker))).count()
    }
}

impl Hook for Watch {
    fn before(&self, op: Op<'_>) -> std::io::Result<()> {
        match op {
            Op::Sync { path } => self.synced.lock().unwrap().push(path.to_path_buf()),
            Op::SyncAll { .. } if self.fail_sync_all.load(SeqCst) => return Err(std::io::Error::other("injected syncfs error")),
            _ => {}
        }
        Ok(())
    }
}

fn node_watched(dir: &std::path::Path) -> (crate::node::Node, Arc<Watch>) {
    let watch = Arc::new(Watch::default());
    let cfg = BrokerConfig { log: crate::log::LogConfig { flush: crate::log::FlushPolicy::EveryBatch, ..crate::log::LogConfig::default() }, ..config(dir) };
    (one_node_on(Arc::new(Hooked::new(Arc::new(FileDisk::new()), watch.clone())), cfg), watch)
}

/// The created replicas' syncs among `actions`.
fn sync_jobs(actions: Vec<Action>) -> Vec<CreatedSync> {
    actions
        .into_iter()
        .filter_map(|a| match a {
            Action::SyncCreated(job) => Some(job),
            _ => None,
        })
        .collect()
}

/// Creates `t` with `partitions` partitions and returns the one sync job the step handed out.
fn create_t(node: &crate::node::Node, partitions: i32) -> CreatedSync {
    let (_, records) = node.controller().unwrap().controller().create_topic("t", partitions, -1, BTreeMap::new(), 0).unwrap();
    node.controller().unwrap().commit(records, 0).unwrap();
    let jobs = sync_jobs(node.input(crate::node::Input::Metadata(crate::testing::metadata_run(node)), 0));
    assert_eq!(jobs.len(), 1, "one sync for every replica the step created");
    jobs.into_iter().next().unwrap()
}

fn produce(node: &crate::node::Node, p: i32, value: &[u8], now: u64) -> Result<i64, Error> {
    let mut b = node.broker();
    let mut out = Vec::new();
    let produced = b.produce("t", p, &build(&[value], 1), 1, now, &mut out);
    run_syncs(&mut b, out, now);
    produced.map(|p| p.base_offset)
}

/// Reports `job` (run now) to the node; returns the report's actions.
fn report(node: &crate::node::Node, job: CreatedSync, now: u64) -> Vec<Action> {
    let result = job.run();
    node.input(crate::node::Input::CreatedSynced { job, result }, now)
}

#[test]
fn created_replicas_take_no_write_before_their_sync_reports_and_owe_nothing_it_covered_after() {
    let tmp = tempfile::tempdir().unwrap();
    let (node, watch) = node_watched(tmp.path());
    let job = create_t(&node, 3);
    assert_eq!(job.len(), 3);

    // Before the sync reports, the replicas are open with no role: a torn marker can only be a
    // creation no record was written under.
    assert!((0..3).all(|p| node.broker().creating("t", p)));
    let refused = produce(&node, 0, b"a", 1).unwrap_err();
    assert!(matches!(refused.kafka_error(true), Code::LeaderNotAvailable | Code::NotLeaderOrFollower), "{refused:?}");

    // The sync reports: each takes its role, and its log owes its marker no more.
    let actions = report(&node, job, 2);
    assert!((0..3).all(|p| !node.broker().creating("t", p)));
    assert!(actions.iter().filter(|a| matches!(a, Action::Leading { .. })).count() == 3, "{actions:?}");
    for p in 0..3 {
        assert_eq!(produce(&node, p, b"b", 3).unwrap(), 0);
        assert_eq!(watch.marker_syncs(&format!("t-{p}")), 0, "the creation's sync covered t-{p}'s marker");
    }
}

#[test]
fn a_failed_sync_takes_the_created_replicas_offline_and_their_reopen_writes_the_markers_again() {
    let tmp = tempfile::tempdir().unwrap();
    let (node, watch) = node_watched(tmp.path());
    let job = create_t(&node, 2);

    watch.fail_sync_all.store(true, SeqCst);
    let lines = report(&node, job, 2);
    assert!(lines.iter().any(|a| a.line().is_some_and(|l| l.contains("go offline"))), "{lines:?}");
    watch.fail_sync_all.store(false, SeqCst);
    for p in [0, 1] {
        let refused = produce(&node, p, b"x", 3).unwrap_err();
        assert!(matches!(refused.kafka_error(true), Code::KafkaStorageError | Code::LeaderNotAvailable | Code::NotLeaderOrFollower), "t-{p}: {refused:?}");
        assert!(!tmp.path().join(format!("t-{p}")).join(crate::log::dir::partition_marker).exists(), "t-{p}'s marker was removed");
    }

    // Reopened at the retry: the markers written again, one sync for both; roles once it reports.
    let again = sync_jobs(node.input(crate::node::Input::Tick { checkpoint: false }, 2 + crate::constants::failed_log_reopen_ms));
    assert_eq!(again.iter().map(CreatedSync::len).sum::<usize>(), 2, "{again:?}");
    for p in [0, 1] {
        assert!(tmp.path().join(format!("t-{p}")).join(crate::log::dir::partition_marker).exists(), "t-{p}'s marker was written again");
    }
    for job in again {
        report(&node, job, 1_100);
    }
    for p in [0, 1] {
        assert_eq!(produce(&node, p, b"d", 1_200).unwrap(), 0);
    }
}

#[test]
fn a_created_replica_whose_log_fails_before_its_sync_reports_is_reopened_still_waiting() {
    // The review's case: reopened from the page cache, the marker reads whole (`Ours`), but no
    // sync has covered it; the reopened log must not take a role on the strength of that.
    let tmp = tempfile::tempdir().unwrap();
    let (node, _watch) = node_watched(tmp.path());
    let first = create_t(&node, 1);
    node.broker().partitions.get_mut("t", 0).unwrap().log.sync_failed("injected");
    let again = sync_jobs(node.input(crate::node::Input::Tick { checkpoint: false }, 1));
    assert_eq!(again.len(), 1, "the reopened log waits for a sync of its own");
    assert!(node.broker().partitions.contains("t", 0) && node.broker().creating("t", 0));

    // The first job's report is for the log that failed: stale, no role from it.
    let _ = report(&node, first, 2);
    assert!(node.broker().creating("t", 0));
    let refused = produce(&node, 0, b"a", 3).unwrap_err();
    assert!(matches!(refused.kafka_error(true), Code::LeaderNotAvailable | Code::NotLeaderOrFollower), "{refused:?}");

    let actions = report(&node, again.into_iter().next().unwrap(), 4);
    assert!(actions.iter().any(|a| matches!(a, Action::Leading { .. })), "{actions:?}");
    assert_eq!(produce(&node, 0, b"b", 5).unwrap(), 0);
}

#[test]
fn a_step_opens_a_bounded_number_of_replicas_and_the_next_ticks_open_the_rest() {
    // Opening a replica creates a directory and files; under heavy writeback each create waits
    // on the file system's journal, and 200 of them in one decision held the gate for 1 s.
    use crate::constants::replica_opens_per_step as step;
    let tmp = tempfile::tempdir().unwrap();
    let (node, _watch) = node_watched(tmp.path());
    let partitions = 2 * step as i32 + 3;
    let _ = create_t(&node, partitions);
    let open = |node: &crate::node::Node| (0..partitions).filter(|&p| node.broker().partitions.contains("t", p)).count();
    assert_eq!(open(&node), step, "the metadata step opens {step}");
    assert!(node.broker().opens_held() && node.broker().next_deadline() == Some(0), "the next tick is due at once");
    let mut jobs = 0;
    for tick in 1..=2 {
        let actions = node.input(crate::node::Input::Tick { checkpoint: false }, tick);
        jobs += sync_jobs(actions).len();
        assert_eq!(open(&node), ((tick as usize + 1) * step).min(partitions as usize), "tick {tick}");
    }
    assert!(!node.broker().opens_held());
    assert_eq!(jobs, 2, "each tick that opened replicas hands out one sync for them");
}
