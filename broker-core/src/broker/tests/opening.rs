//! Replicas opened as a job off the node's gate (`opening`): the decision that finds them does no
//! IO, they take no role (no write) before the job reports, created ones are made durable by
//! one sync first, a failed sync takes them offline to be reopened with their markers written
//! again, and a directory removed while its open is out is never touched by that open.

use super::*;
use crate::log::dir::partition_marker;
use crate::storage::hooked::{Hook, Hooked, Op};
use crate::storage::FileDisk;
use crate::testing::{one_node_on, run_syncs};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Mutex;

/// Records the files fsynced one by one and counts `syncfs`; fails `syncfs`, or a marker's
/// removal, while armed.
#[derive(Default)]
struct Watch {
    synced: Mutex<Vec<std::path::PathBuf>>,
    sync_alls: AtomicUsize,
    fail_sync_all: AtomicBool,
    fail_marker_removal: AtomicBool,
}

impl Watch {
    /// How many times a marker of `dir` (as `t-1`) was fsynced on its own.
    fn marker_syncs(&self, dir: &str) -> usize {
        let synced = self.synced.lock().unwrap();
        synced.iter().filter(|p| p.ends_with(format!("{dir}/{partition_marker}"))).count()
    }
}

impl Hook for Watch {
    fn before(&self, op: Op<'_>) -> std::io::Result<()> {
        match op {
            Op::Sync { path } => self.synced.lock().unwrap().push(path.to_path_buf()),
            Op::SyncAll { .. } if self.fail_sync_all.load(SeqCst) => return Err(std::io::Error::other("injected syncfs error")),
            Op::SyncAll { .. } => drop(self.sync_alls.fetch_add(1, SeqCst)),
            Op::Remove { path } if path.ends_with(partition_marker) && self.fail_marker_removal.load(SeqCst) => return Err(std::io::Error::other("injected remove error")),
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

/// The open jobs among `actions`.
fn open_jobs(actions: Vec<Action>) -> Vec<OpenJob> {
    actions
        .into_iter()
        .filter_map(|a| match a {
            Action::Open(job) => Some(job),
            _ => None,
        })
        .collect()
}

/// Applies the committed metadata the node has not seen; returns the open jobs it handed out.
fn apply(node: &crate::node::Node, now: u64) -> Vec<OpenJob> {
    open_jobs(node.input(crate::node::Input::Metadata(crate::testing::metadata_run(node)), now))
}

/// Creates `t` with `partitions` partitions and returns the one open job the step handed out.
fn create_t(node: &crate::node::Node, partitions: i32) -> OpenJob {
    let (_, records) = node.controller().unwrap().controller().create_topic("t", partitions, -1, BTreeMap::new(), 0).unwrap();
    node.controller().unwrap().commit(records, 0).unwrap();
    let jobs = apply(node, 0);
    assert_eq!(jobs.len(), 1, "one job opens every replica the step found");
    jobs.into_iter().next().unwrap()
}

fn produce(node: &crate::node::Node, p: i32, value: &[u8], now: u64) -> Result<i64, Error> {
    let mut b = node.broker();
    let mut out = Vec::new();
    let produced = b.produce("t", p, &build(&[value], 1), 1, now, &mut out);
    run_syncs(&mut b, out, now);
    produced.map(|p| p.base_offset)
}

/// Runs `job` now and reports it to the node; returns the report's actions.
fn report(node: &crate::node::Node, job: OpenJob, now: u64) -> Vec<Action> {
    node.input(crate::node::Input::Opened(job.run()), now)
}

fn has_marker(tmp: &tempfile::TempDir, p: i32) -> bool {
    tmp.path().join(format!("t-{p}")).join(partition_marker).exists()
}

#[test]
fn the_decision_that_finds_replicas_to_open_touches_no_file_and_they_take_no_role_before_the_report() {
    let tmp = tempfile::tempdir().unwrap();
    let (node, watch) = node_watched(tmp.path());
    let job = create_t(&node, 3);
    assert_eq!(job.len(), 3);

    // The decision only handed out the job: no directory yet, no replica open, no write taken.
    assert!((0..3).all(|p| !tmp.path().join(format!("t-{p}")).exists()), "the metadata step created a directory");
    assert!((0..3).all(|p| node.broker().replica_pending("t", p)));
    let refused = produce(&node, 0, b"a", 1).unwrap_err();
    assert!(matches!(refused.kafka_error(true), Code::LeaderNotAvailable | Code::NotLeaderOrFollower), "{refused:?}");

    // The job opens all three and syncs the file system once for their markers; its report
    // installs them with their roles, their logs owing nothing that sync covered.
    let actions = report(&node, job, 2);
    assert_eq!(watch.sync_alls.load(SeqCst), 1, "one syncfs for the three markers");
    assert!((0..3).all(|p| !node.broker().replica_pending("t", p)));
    assert_eq!(actions.iter().filter(|a| matches!(a, Action::Leading { .. })).count(), 3, "{actions:?}");
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
        assert!(matches!(refused.kafka_error(true), Code::KafkaStorageError), "t-{p}: {refused:?}");
        assert!(!has_marker(&tmp, p), "t-{p}'s marker was removed");
    }

    // Nothing before the retry; at it, one job opens both, writing their markers again, with
    // one sync; roles once it reports.
    assert!(open_jobs(node.input(crate::node::Input::Tick { checkpoint: false }, 3)).is_empty());
    let again = open_jobs(node.input(crate::node::Input::Tick { checkpoint: false }, 2 + crate::constants::failed_log_reopen_ms));
    assert_eq!(again.iter().map(OpenJob::len).collect::<Vec<_>>(), vec![2], "{again:?}");
    for job in again {
        report(&node, job, 1_100);
    }
    assert_eq!(watch.sync_alls.load(SeqCst), 1);
    for p in [0, 1] {
        assert!(has_marker(&tmp, p), "t-{p}'s marker was written again");
        assert_eq!(produce(&node, p, b"d", 1_200).unwrap(), 0);
    }
}

#[test]
fn a_marker_no_sync_covered_is_synced_by_the_next_open_even_when_it_reads_whole() {
    // The sync failed and the marker could not be removed: the next open finds it whole in the
    // page cache (`Ours`), but a power loss could still tear it, so that open syncs too.
    let tmp = tempfile::tempdir().unwrap();
    let (node, watch) = node_watched(tmp.path());
    let job = create_t(&node, 1);
    watch.fail_sync_all.store(true, SeqCst);
    watch.fail_marker_removal.store(true, SeqCst);
    report(&node, job, 2);
    watch.fail_sync_all.store(false, SeqCst);
    watch.fail_marker_removal.store(false, SeqCst);
    assert!(has_marker(&tmp, 0));

    let again = open_jobs(node.input(crate::node::Input::Tick { checkpoint: false }, 2 + crate::constants::failed_log_reopen_ms));
    let actions = report(&node, again.into_iter().next().expect("the retry's job"), 1_100);
    assert_eq!(watch.sync_alls.load(SeqCst), 1, "the reopen synced the marker it did not write");
    assert!(actions.iter().any(|a| matches!(a, Action::Leading { .. })), "{actions:?}");
    assert_eq!(produce(&node, 0, b"a", 1_200).unwrap(), 0);
}

#[test]
fn a_topic_deleted_while_its_open_is_out_is_never_touched_by_that_open() {
    let tmp = tempfile::tempdir().unwrap();
    let (node, _watch) = node_watched(tmp.path());
    let job = create_t(&node, 2);
    crate::testing::delete(&node, "t").unwrap();

    // The deletion fenced the open: run after it, the job creates nothing, and its report is
    // stale.
    let actions = report(&node, job, 2);
    assert!((0..2).all(|p| !tmp.path().join(format!("t-{p}")).exists()), "the fenced open made a directory");
    assert!(!actions.iter().any(|a| matches!(a, Action::Leading { .. })), "{actions:?}");
    assert!(node.broker().partitions.is_empty() && node.broker().opening() == 0);
}

#[test]
fn a_topic_re_created_while_its_open_is_out_is_opened_under_its_new_id_only() {
    let tmp = tempfile::tempdir().unwrap();
    let (node, _watch) = node_watched(tmp.path());
    let old = create_t(&node, 1);
    let old_done = old.run(); // ran before the deletion: the old topic's marker is on disk
    crate::testing::delete(&node, "t").unwrap();
    let new = create_t(&node, 1);
    let id = node.broker().image().topics["t"].id;

    // The old open's report is stale; the new one's installs the new topic's replica.
    assert!(!node.input(crate::node::Input::Opened(old_done), 1).iter().any(|a| matches!(a, Action::Leading { .. })));
    assert!(node.broker().replica_pending("t", 0));
    let actions = report(&node, new, 2);
    assert!(actions.iter().any(|a| matches!(a, Action::Leading { topic_id, .. } if *topic_id == id)), "{actions:?}");
    assert_eq!(node.broker().partitions.get("t", 0).unwrap().topic_id, id);
    assert_eq!(produce(&node, 0, b"new", 3).unwrap(), 0);
}

/// Commits a Partition record for `t`-0 naming `replicas` (leader the first of them).
fn reassign_t0(node: &crate::node::Node, replicas: Vec<i32>, epoch: i32) {
    let record = crate::metadata::MetadataRecord::Partition {
        topic: "t".into(),
        partition: 0,
        leader: replicas[0],
        isr: replicas.clone(),
        replicas,
        leader_epoch: epoch,
        partition_epoch: epoch,
        elr: Vec::new(),
        last_known_elr: Vec::new(),
        adding: Vec::new(),
        removing: Vec::new(),
    };
    node.controller().unwrap().commit(vec![record], 0).unwrap();
}

#[test]
fn a_replica_moved_away_while_its_open_is_out_and_back_again_opens_once_more_with_its_sync() {
    let tmp = tempfile::tempdir().unwrap();
    let (node, watch) = node_watched(tmp.path());
    let first = create_t(&node, 1);
    let first_done = first.run(); // the open ran (marker written, synced) but has not reported
    reassign_t0(&node, vec![1], 1);
    assert!(apply(&node, 1).is_empty());
    assert!(!tmp.path().join("t-0").exists(), "moved away: its directory removed");

    reassign_t0(&node, vec![0], 2);
    let second = apply(&node, 2);
    assert_eq!(second.iter().map(OpenJob::len).sum::<usize>(), 1, "moved back: opened again");
    // The first open's report comes last of all but the second's: stale, nothing installed.
    let _ = node.input(crate::node::Input::Opened(first_done), 3);
    assert!(node.broker().replica_pending("t", 0));
    let actions = report(&node, second.into_iter().next().unwrap(), 4);
    assert!(actions.iter().any(|a| matches!(a, Action::Leading { leader_epoch: 2, .. })), "{actions:?}");
    assert_eq!(watch.sync_alls.load(SeqCst), 2, "each open that wrote the marker synced it");
    assert_eq!(produce(&node, 0, b"a", 5).unwrap(), 0);
}

#[test]
fn a_stale_report_after_the_new_open_installed_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (node, _watch) = node_watched(tmp.path());
    let old = create_t(&node, 1).run();
    crate::testing::delete(&node, "t").unwrap();
    let new = create_t(&node, 1);
    report(&node, new, 1);
    assert_eq!(produce(&node, 0, b"new", 2).unwrap(), 0);
    let actions = node.input(crate::node::Input::Opened(old), 3);
    assert!(actions.is_empty(), "{actions:?}");
    assert_eq!(produce(&node, 0, b"newer", 4).unwrap(), 1, "the installed log is the new one, untouched");
}

#[test]
fn a_lost_job_fails_its_replicas_and_the_retry_opens_them_with_a_sync() {
    let tmp = tempfile::tempdir().unwrap();
    let (node, watch) = node_watched(tmp.path());
    let job = create_t(&node, 2);
    let lines = node.input(crate::node::Input::Opened(job.lost("the open task ended without an answer".into())), 1);
    assert_eq!(lines.iter().filter(|a| a.line().is_some_and(|l| l.contains("without an answer"))).count(), 2, "{lines:?}");
    assert_eq!(node.broker().opening(), 0);

    // A tick before the retry hands out nothing; the retry's job opens both.
    assert!(open_jobs(node.input(crate::node::Input::Tick { checkpoint: false }, 2)).is_empty());
    let again = open_jobs(node.input(crate::node::Input::Tick { checkpoint: false }, 1 + crate::constants::failed_log_reopen_ms));
    assert_eq!(again.iter().map(OpenJob::len).sum::<usize>(), 2);
    // While it is out, ticks hand out no other.
    assert!(open_jobs(node.input(crate::node::Input::Tick { checkpoint: false }, 2 + crate::constants::failed_log_reopen_ms)).is_empty());
    for job in again {
        report(&node, job, 1_100);
    }
    assert_eq!(watch.sync_alls.load(SeqCst), 1, "their markers (maybe written) were synced");
    assert_eq!(produce(&node, 1, b"a", 1_200).unwrap(), 0);
}

#[test]
fn a_stop_with_opens_out_fences_them_and_says_it_is_not_clean() {
    let tmp = tempfile::tempdir().unwrap();
    let (node, _watch) = node_watched(tmp.path());
    let job = create_t(&node, 1);
    let actions = node.input(crate::node::Input::Shutdown, 1);
    assert!(actions.iter().any(|a| matches!(a, Action::Log(Level::Error, l) if l.contains("not opened yet"))), "{actions:?}");
    let _ = job.run();
    assert!(!tmp.path().join("t-0").exists(), "the fenced open ran after the stop");
}
