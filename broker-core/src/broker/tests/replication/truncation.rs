//! A follower's truncation off the node's gate (`broker::truncation`): its decision syncs and
//! cuts no file, its job does, and until the job's report the replica neither fetches nor, if
//! the metadata makes it leader meanwhile, judges a producer's retry by the state from before
//! the cut — which would answer a removed batch as a duplicate, an acknowledgement of a lost
//! record.

use super::*;
use crate::storage::hooked::{Hook, Hooked, Op};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

/// Counts the calls that block for milliseconds on a real disk: syncs of files, directories
/// and the file system, and cuts of a segment file.
#[derive(Default)]
struct Blocking(AtomicUsize);

impl Hook for Blocking {
    fn before(&self, op: Op<'_>) -> std::io::Result<()> {
        let counted = match op {
            Op::Sync { .. } | Op::SyncDir { .. } | Op::SyncAll { .. } => true,
            Op::Truncate { path, len } => len > 0 && path.extension().is_some_and(|e| e == "log"),
            _ => false,
        };
        if counted {
            self.0.fetch_add(1, SeqCst);
        }
        Ok(())
    }
}

#[test]
fn a_truncation_returns_a_job_and_its_replica_waits_for_the_report() {
    let blocking = Arc::new(Blocking::default());
    let watched = blocking.clone();
    let mut c = Cluster::on_disks(&[1, 2], move |id| match id {
        1 => Arc::new(Hooked::new(Arc::new(FileDisk::new()), watched.clone())),
        _ => Arc::new(FileDisk::new()),
    });
    c.create(2);
    let now = c.now;
    c.broker(1).produce(topic_name, 0, &super::super::idempotent(&[b"a"], 7, 0, 0), -1, now, &mut Vec::new()).unwrap();
    c.catch_up(2);
    // Sequence 1 reaches broker 1 alone; broker 2 takes over without it.
    let retry = super::super::idempotent(&[b"b"], 7, 0, 1);
    c.broker(1).produce(topic_name, 0, &retry, 1, now, &mut Vec::new()).unwrap();
    c.elect(2, &[2]);
    c.produce(2, &[b"c"]);
    // Broker 1's fetcher round, its truncation decided and not yet run.
    let mut fetcher = ReplicaFetcher::new(2);
    let mut out = Vec::new();
    let Step::Truncate(ask) = fetcher.next(c.broker(1), now, &mut out) else { panic!("broker 1 truncates first") };
    let before = blocking.0.load(SeqCst);
    for (f, latest) in ask {
        let answer = c.broker(2).end_offset_for_epoch(&f.topic, f.partition, latest, f.leader_epoch).map_err(|e| e.kafka_error(true));
        fetcher.on_epoch_answer(c.broker(1), &f, answer, now, &mut out);
    }
    assert_eq!(blocking.0.load(SeqCst), before, "the decision synced or cut a file");
    let jobs: Vec<_> = out.iter().filter_map(|a| if let Action::Truncate { job, .. } = a { Some(job.clone()) } else { None }).collect();
    assert_eq!(jobs.len(), 1, "{out:?}");
    assert_eq!(c.leo(1), 1, "memory is cut at once");
    assert!(c.broker(1).following(2).is_empty(), "no fetch before the report");
    // The metadata makes broker 1 leader before the report: the retry of sequence 1 must not
    // be answered as a duplicate of the batch the cut removed.
    c.elect(1, &[1]);
    let refused = c.broker(1).produce(topic_name, 0, &retry, 1, now, &mut Vec::new()).unwrap_err();
    assert_eq!(refused.kafka_error(true), Code::LeaderNotAvailable);
    let done = jobs[0].run();
    assert!(blocking.0.load(SeqCst) > before, "the job syncs and cuts");
    let reported = c.broker(1).truncated(topic_name, 0, done, now);
    assert!(reported.iter().all(|a| !matches!(a, Action::Log(Level::Error, _))), "{reported:?}");
    let produced = c.broker(1).produce(topic_name, 0, &retry, 1, now, &mut Vec::new()).unwrap();
    assert!(!produced.duplicate && produced.base_offset == 1, "appended again where the cut left off: {produced:?}");
}

/// Every file of `dir` with its bytes, by name.
fn files(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap()).map(|e| (e.file_name().into_string().unwrap(), std::fs::read(e.path()).unwrap())).collect();
    out.sort();
    out
}

#[test]
fn a_truncations_job_run_after_its_topic_was_deleted_and_created_again_leaves_the_new_replica_alone() {
    let mut c = Cluster::new(&[1, 2]);
    c.create(2);
    c.produce(1, &[b"a"]);
    c.catch_up(2);
    c.produce(1, &[b"b"]);
    c.elect(2, &[2]);
    c.produce(2, &[b"c"]);
    let now = c.now;
    // Broker 1 truncates as a follower of 2; the shell has not run the job yet.
    let mut fetcher = ReplicaFetcher::new(2);
    let mut out = Vec::new();
    let Step::Truncate(ask) = fetcher.next(c.broker(1), now, &mut out) else { panic!("broker 1 truncates first") };
    for (f, latest) in ask {
        let answer = c.broker(2).end_offset_for_epoch(&f.topic, f.partition, latest, f.leader_epoch).map_err(|e| e.kafka_error(true));
        fetcher.on_epoch_answer(c.broker(1), &f, answer, now, &mut out);
    }
    let jobs: Vec<_> = out.iter().filter_map(|a| if let Action::Truncate { job, .. } = a { Some(job.clone()) } else { None }).collect();
    assert_eq!(jobs.len(), 1, "{out:?}");
    // The topic is deleted and created again under its name before the job runs.
    let records = c.ctl.delete_topic(topic_name).unwrap();
    c.commit(records);
    c.create(2);
    c.produce(1, &[b"new"]);
    let dir = c.broker(1).partition_dir(topic_name, 0);
    let on_disk = files(&dir);
    let done = jobs[0].run();
    assert_eq!(files(&dir), on_disk, "the deleted topic's truncation wrote into the new topic's directory");
    assert!(format!("{done:?}").contains("closed before this job ran"), "{done:?}");
    let reported = c.broker(1).truncated(topic_name, 0, done, now);
    assert!(matches!(&reported[..], [Action::Log(Level::Info, line)] if line.contains("did nothing")), "a report for another log changes nothing: {reported:?}");
    assert_eq!(c.leo(1), 1, "the new replica is untouched");
}
