//! The controller on the Raft quorum ([`Quorum`]): three voters in process, each on its own
//! metadata log on real files, messages carried between their outboxes by hand. What must hold:
//! only the leader is the active controller, a decision counts once a majority has it, and when
//! the leader dies the next one is active with every committed decision and fresh sessions.

use super::super::quorum::{CommitError, Quorum};
use super::super::raft::RaftConfig;
use super::*;
use crate::storage::{Disk, FileDisk};
use std::sync::Arc;

struct Voters {
    dirs: Vec<tempfile::TempDir>,
    /// None: that voter is down.
    quorums: Vec<Option<Quorum>>,
    now: u64,
}

fn raft(id: i32, n: i32) -> RaftConfig {
    RaftConfig::new(id, 0..n)
}

fn open(dir: &std::path::Path, id: i32, n: i32, now: u64) -> Quorum {
    let disk: Arc<dyn Disk> = Arc::new(FileDisk::new());
    Quorum::open(disk, dir, ControllerConfig { node_id: id, ..ControllerConfig::default() }, raft(id, n), now).unwrap().0
}

impl Voters {
    fn start(n: i32) -> Voters {
        let dirs: Vec<_> = (0..n).map(|_| tempfile::tempdir().unwrap()).collect();
        let quorums = (0..n).map(|i| Some(open(dirs[i as usize].path(), i, n, 0))).collect();
        Voters { dirs, quorums, now: 0 }
    }

    /// Runs 10 ms steps for `ms`: ticks every live voter, then carries every message to a live
    /// voter (messages to a dead one are lost).
    fn run(&mut self, ms: u64) {
        for _ in 0..ms / 10 {
            self.now += 10;
            let now = self.now;
            let mut mail = Vec::new();
            for q in self.quorums.iter_mut().flatten() {
                q.tick(now).unwrap();
                mail.extend(q.outbox());
            }
            while !mail.is_empty() {
                for m in std::mem::take(&mut mail) {
                    if let Some(Some(q)) = self.quorums.get_mut(m.to as usize) {
                        q.receive(now, m).unwrap();
                        mail.extend(q.outbox());
                    }
                }
            }
        }
    }

    fn active(&self) -> Vec<i32> {
        self.quorums.iter().flatten().filter(|q| q.is_active()).map(|q| q.controller().config().node_id).collect()
    }

    fn leader(&mut self) -> &mut Quorum {
        self.quorums.iter_mut().flatten().find(|q| q.is_active()).expect("an active controller")
    }
}

#[test]
fn a_lone_voter_is_active_once_open_and_commits_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut q = open(dir.path(), 0, 1, 0);
    assert!(q.is_active(), "a lone voter elects itself while opening");
    let next = q.end_offset();
    assert_eq!(next, 1, "offset 0 is the epoch's LeaderChange record");
    let records = q.controller_mut().register(0, "h", 1, next, 0).unwrap();
    let last = q.commit(records, 0).unwrap();
    assert!(q.is_committed(last), "one voter: committed when synced");
    drop(q);
    let q = open(dir.path(), 0, 1, 5);
    assert!(q.is_active());
    assert_eq!(q.controller().image().brokers[&0].epoch, next, "replayed from the log");
    assert_eq!(q.end_offset(), next + 2, "a new LeaderChange per restart");
}

#[test]
fn three_voters_elect_one_active_controller_and_commit_by_majority() {
    let mut v = Voters::start(3);
    assert!(v.active().is_empty(), "nobody is active before an election");
    v.run(5_000);
    let active = v.active();
    assert_eq!(active.len(), 1, "exactly one active controller: {active:?}");
    let leader = active[0];
    for q in v.quorums.iter_mut().flatten().filter(|q| !q.is_active()) {
        assert_eq!(q.commit(Vec::new(), 0), Err(CommitError::NotController { leader: Some(leader) }), "followers refuse and name the leader");
    }
    let now = v.now;
    let q = v.leader();
    let next = q.end_offset();
    let records = q.controller_mut().register(7, "h", 1, next, now).unwrap();
    let last = q.commit(records, now).unwrap();
    assert!(!q.is_committed(last), "not committed before a follower has it");
    assert_eq!(q.controller().image().brokers[&7].epoch, next, "the next decision sees it already");
    v.run(1_000);
    assert!(v.leader().is_committed(last));
    for q in v.quorums.iter().flatten() {
        assert_eq!(q.committed().brokers.get(&7).map(|b| b.epoch), Some(next), "every voter applied it");
    }
}

#[test]
fn when_the_leader_dies_the_next_one_is_active_with_every_committed_decision() {
    let mut v = Voters::start(3);
    v.run(5_000);
    let now = v.now;
    let q = v.leader();
    let next = q.end_offset();
    let records = q.controller_mut().register(7, "h", 1, next, now).unwrap();
    q.commit(records, now).unwrap();
    let (_, records) = q.controller_mut().heartbeat(7, next, next, now).unwrap();
    q.commit(records, now).unwrap();
    let (_, records) = q.controller().create_topic("t", 2, 1, Default::default(), now).unwrap();
    let last = q.commit(records, now).unwrap();
    v.run(1_000);
    let old = v.active()[0];
    assert!(v.leader().is_committed(last));
    v.quorums[old as usize] = None;
    v.run(10_000);
    let active = v.active();
    assert_eq!(active.len(), 1, "a new leader among the two left: {active:?}");
    assert_ne!(active[0], old);
    let q = v.leader();
    assert_eq!(q.controller().image().brokers[&7].epoch, next, "the committed registration is there");
    assert_eq!(q.controller().image().topics["t"].partitions.len(), 2, "and the topic");
    // The old leader comes back as a follower and catches up.
    v.quorums[old as usize] = Some(open(v.dirs[old as usize].path(), old, 3, v.now));
    v.run(3_000);
    assert_eq!(v.active(), active, "leadership does not move back");
    assert!(v.quorums[old as usize].as_ref().unwrap().committed().topics.contains_key("t"));
}

#[test]
fn a_leader_cut_off_from_both_followers_stops_being_active() {
    let mut v = Voters::start(3);
    v.run(5_000);
    let old = v.active()[0];
    // Its followers die: check-quorum makes it resign within 1.5 fetch timeouts.
    for i in 0..3 {
        if i != old {
            v.quorums[i as usize] = None;
        }
    }
    v.run(4_000);
    assert!(v.active().is_empty(), "no majority, no controller");
}
