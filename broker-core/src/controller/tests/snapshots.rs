//! Metadata snapshots on real files: a voter snapshots its committed image once the threshold
//! of committed bytes passes, deletes the log before the older kept snapshot, restarts from
//! the newest snapshot plus the tail (or the older one when the newest is damaged), and a voter
//! left behind the leader's log start installs the leader's snapshot.

use super::super::quorum::Quorum;
use super::super::raft::{snapshot_file, RaftConfig};
use super::*;
use crate::metadata::metadata_dir;
use crate::storage::{Disk, FileDisk};
use std::path::Path;
use std::sync::Arc;

/// A threshold a few decisions pass, so a short test takes many snapshots.
const tiny_threshold: u64 = 2_000;

fn open(dir: &Path, id: i32, voters: i32, now: u64) -> (Quorum, Vec<String>) {
    let disk: Arc<dyn Disk> = Arc::new(FileDisk::new());
    let config = ControllerConfig { node_id: id, snapshot_bytes_between: tiny_threshold, ..ControllerConfig::default() };
    Quorum::open(disk, dir, config, RaftConfig::new(id, 0..voters), now).unwrap()
}

fn segments(dir: &Path) -> Vec<i64> {
    let mut bases: Vec<i64> = std::fs::read_dir(dir.join(metadata_dir)).unwrap().filter_map(|e| e.unwrap().file_name().to_str()?.strip_suffix(".log")?.parse().ok()).collect();
    bases.sort();
    bases
}

fn snapshots(dir: &Path) -> Vec<i64> {
    snapshot_file::list(&FileDisk::new(), &dir.join(metadata_dir)).unwrap().iter().map(|s| s.end).collect()
}

/// Registers and unfences broker 7 on the active controller, then creates `topics` topics.
fn decide(q: &mut Quorum, topics: std::ops::Range<i32>, now: u64) {
    if !q.controller().image().brokers.contains_key(&7) {
        let next = q.end_offset();
        let records = q.controller_mut().register(7, "h", 1, next, now).unwrap();
        q.commit(records, now).unwrap();
        let (_, records) = q.controller_mut().heartbeat(7, next, next, now).unwrap();
        q.commit(records, now).unwrap();
    }
    for t in topics {
        let (_, records) = q.controller().create_topic(&format!("topic-{t}"), 3, 1, Default::default(), now).unwrap();
        q.commit(records, now).unwrap();
    }
}

#[test]
fn a_voter_snapshots_drops_the_log_before_and_restarts_from_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let (mut q, _) = open(dir.path(), 0, 1, 0);
    decide(&mut q, 0..60, 0);
    let image = q.committed().clone();
    assert_eq!(image.topics.len(), 60);
    let kept = snapshots(dir.path());
    assert_eq!(kept.len(), 2, "the newest two are kept: {kept:?}");
    assert!(q.log_start() == kept[1] && q.snapshot().unwrap().id.end == kept[1], "the log starts at the newest one");
    assert!(segments(dir.path())[0] > 0 && segments(dir.path())[0] <= kept[0], "segments below the older kept snapshot are gone: {:?}", segments(dir.path()));
    drop(q);

    let (q, notes) = open(dir.path(), 0, 1, 10);
    assert!(q.is_active());
    assert_eq!((&q.committed().brokers, &q.committed().topics), (&image.brokers, &image.topics), "restored from the snapshot and the tail");
    assert_eq!(q.controller().image().topics.len(), 60);
    assert!(notes.iter().any(|n| n.contains(&format!("end: {}", kept[1]))), "{notes:?}");
    assert!(q.raft().log().iter().count() < 30, "only the tail is replayed, not the {} offsets of history", q.end_offset());
    drop(q);

    // The newest file torn: the older snapshot and the log after it give the same image.
    let newest = dir.path().join(metadata_dir).join(snapshot_file::file_name(snapshot_file::list(&FileDisk::new(), &dir.path().join(metadata_dir)).unwrap()[1]));
    let len = std::fs::metadata(&newest).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&newest).unwrap().set_len(len - 3).unwrap();
    let (q, notes) = open(dir.path(), 0, 1, 20);
    assert!(notes.iter().any(|n| n.contains("snapshot skipped") && n.contains("torn")), "{notes:?}");
    assert_eq!((&q.committed().brokers, &q.committed().topics), (&image.brokers, &image.topics), "nothing committed lost");
}

#[test]
fn a_log_deleted_below_every_readable_snapshot_refuses_to_open() {
    let dir = tempfile::tempdir().unwrap();
    let (mut q, _) = open(dir.path(), 0, 1, 0);
    decide(&mut q, 0..60, 0);
    drop(q);
    let meta = dir.path().join(metadata_dir);
    for id in snapshot_file::list(&FileDisk::new(), &meta).unwrap() {
        std::fs::write(meta.join(snapshot_file::file_name(id)), b"garbage").unwrap();
    }
    let disk: Arc<dyn Disk> = Arc::new(FileDisk::new());
    let config = ControllerConfig { snapshot_bytes_between: tiny_threshold, ..ControllerConfig::default() };
    let err = Quorum::open(disk, dir.path(), config, RaftConfig::new(0, [0]), 30).err().expect("refused, never a fresh start");
    assert!(err.contains("newest readable snapshot"), "{err}");
}

#[test]
fn a_voter_left_behind_installs_the_leaders_snapshot() {
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut quorums: Vec<Option<Quorum>> = (0..3).map(|i| Some(open(dirs[i as usize].path(), i, 3, 0).0)).collect();
    let mut now = 0;
    let mut run = |quorums: &mut Vec<Option<Quorum>>, ms: u64| {
        for _ in 0..ms / 10 {
            now += 10;
            let mut mail = Vec::new();
            for q in quorums.iter_mut().flatten() {
                q.tick(now).unwrap();
                mail.extend(q.outbox());
            }
            while !mail.is_empty() {
                for m in std::mem::take(&mut mail) {
                    if let Some(Some(q)) = quorums.get_mut(m.to as usize) {
                        q.receive(now, m).unwrap();
                        mail.extend(q.outbox());
                    }
                }
            }
        }
        now
    };
    run(&mut quorums, 5_000);
    let leader = quorums.iter().flatten().find(|q| q.is_active()).map(|q| q.controller().config().node_id).unwrap();
    let behind = (leader + 1) % 3;
    quorums[behind as usize] = None;
    for round in 0..6 {
        let now = run(&mut quorums, 500);
        decide(quorums[leader as usize].as_mut().unwrap(), round * 10..round * 10 + 10, now);
    }
    run(&mut quorums, 2_000);
    let q = quorums[leader as usize].as_ref().unwrap();
    assert!(q.log_start() > 0, "the leader dropped its log before a snapshot");
    let image = q.committed().clone();
    assert_eq!(image.topics.len(), 60);

    let now = run(&mut quorums, 10);
    quorums[behind as usize] = Some(open(dirs[behind as usize].path(), behind, 3, now).0);
    run(&mut quorums, 3_000);
    let back = quorums[behind as usize].as_ref().unwrap();
    assert_eq!((&back.committed().brokers, &back.committed().topics), (&image.brokers, &image.topics), "caught up from the leader's snapshot");
    assert!(back.log_start() > 0 && !snapshots(dirs[behind as usize].path()).is_empty(), "installed and written to its disk");
    drop(quorums);

    // And it restarts from what it installed.
    let (q, _) = open(dirs[behind as usize].path(), behind, 3, 100_000);
    assert_eq!(q.committed().topics.len(), 60);
}
