//! Getting a transaction's markers written (Kafka's `TransactionMarkerChannelManager`): the
//! coordinator hands over a [`MarkerJob`]; this sends each of its partitions' markers to that
//! partition's leader, batching what goes to one broker into one WriteTxnMarkers, and retries
//! what failed for a reason that passes (no leader, a leader that moved, too few in sync, a
//! lost connection) until the leader says it is written. What is written is reported back to
//! the coordinator ([`super::Coordinator::markers_written`]) by whoever drives this.
//!
//! A plain struct with an explicit `now` (ms); the sending is the shell's. A job whose
//! coordinator no longer has it (its state partition moved away) is dropped: the new
//! coordinator sends the same markers again from the prepared state it loads.

use super::MarkerJob;
use crate::constants::txn_marker_retry_ms;
use crate::kafka::Code;
use std::collections::BTreeMap;

/// One producer's marker for some partitions, as one entry of a WriteTxnMarkers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    pub job: u64,
    pub producer_id: i64,
    pub epoch: i16,
    pub commit: bool,
    pub coordinator_epoch: i32,
    /// Classic, or KIP-890's (the epoch above the one the transaction was written at).
    pub version: crate::kafka::TxnVersion,
    pub partitions: Vec<(String, i32)>,
}

/// A WriteTxnMarkers the shell must send to `broker`, then report with [`Channel::answered`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Send {
    pub request: u64,
    pub broker: i32,
    pub markers: Vec<Marker>,
}

/// A WriteTxnMarkers' answer: (job, partition, error) for each partition (None: written), or
/// why none came.
pub type Answered = Result<Vec<(u64, (String, i32), Option<Code>)>, String>;

/// Where a partition's leader is, as the metadata says now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leader {
    At(i32),
    /// The partition has no live leader now: try again later.
    None,
    /// The topic is gone: nothing to write (Kafka drops such markers).
    Gone,
}

/// A partition's marker: owed (to be sent at or after a time) or in a request in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owed {
    At(u64),
    Sent(u64),
}

#[derive(Debug)]
struct Job {
    job: MarkerJob,
    owed: BTreeMap<(String, i32), Owed>,
}

/// What an answer or a send round settled.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Settled {
    /// Partitions whose marker is written (or need none), per job.
    pub written: Vec<(u64, Vec<(String, i32)>)>,
    /// Lines for the operator's log.
    pub lines: Vec<String>,
}

#[derive(Debug, Default)]
pub struct Channel {
    jobs: BTreeMap<u64, Job>,
    next_request: u64,
}

impl Channel {
    /// Takes over a job: every partition's marker is owed now.
    pub fn add(&mut self, job: MarkerJob, now: u64) {
        let owed = job.partitions.iter().map(|p| (p.clone(), Owed::At(now))).collect();
        self.jobs.insert(job.job, Job { job, owed });
    }

    /// The requests to send now, one per broker, for the markers owed by now; `live(job)` says
    /// whether the coordinator still has the job. Partitions whose topic is gone are settled.
    pub fn due(&mut self, now: u64, live: impl Fn(u64) -> bool, leader: impl Fn(&str, i32) -> Leader) -> (Vec<Send>, Settled) {
        let mut settled = Settled::default();
        let dropped: Vec<u64> = self.jobs.keys().copied().filter(|j| !live(*j)).collect();
        for j in dropped {
            self.jobs.remove(&j);
        }
        let mut by_broker: BTreeMap<i32, Vec<Marker>> = BTreeMap::new();
        for (id, job) in &mut self.jobs {
            let mut gone = Vec::new();
            let mut to: BTreeMap<i32, Vec<(String, i32)>> = BTreeMap::new();
            for (p, owed) in &mut job.owed {
                if !matches!(owed, Owed::At(t) if *t <= now) {
                    continue;
                }
                match leader(&p.0, p.1) {
                    Leader::At(b) => to.entry(b).or_default().push(p.clone()),
                    Leader::None => *owed = Owed::At(now + txn_marker_retry_ms),
                    Leader::Gone => gone.push(p.clone()),
                }
            }
            for p in &gone {
                job.owed.remove(p);
                settled.lines.push(format!("transactional id {}: {}-{} no longer exists; its marker is dropped", job.job.transactional_id, p.0, p.1));
            }
            if !gone.is_empty() {
                settled.written.push((*id, gone));
            }
            for (b, partitions) in to {
                let m = &job.job;
                by_broker.entry(b).or_default().push(Marker { job: *id, producer_id: m.producer_id, epoch: m.epoch, commit: m.commit, coordinator_epoch: m.coordinator_epoch, version: m.version, partitions });
            }
        }
        let mut sends = Vec::new();
        for (broker, markers) in by_broker {
            self.next_request += 1;
            let request = self.next_request;
            for m in &markers {
                for p in &m.partitions {
                    if let Some(o) = self.jobs.get_mut(&m.job).and_then(|j| j.owed.get_mut(p)) {
                        *o = Owed::Sent(request);
                    }
                }
            }
            sends.push(Send { request, broker, markers });
        }
        self.jobs.retain(|_, j| !j.owed.is_empty());
        (sends, settled)
    }

    /// The answer of `request`: each partition's error (None: written), or why no answer came
    /// (every partition of the request is owed again).
    pub fn answered(&mut self, request: u64, result: Answered, now: u64) -> Settled {
        let mut settled = Settled::default();
        let retry = Owed::At(now + txn_marker_retry_ms);
        let answers = match result {
            Ok(a) => a,
            Err(why) => {
                for job in self.jobs.values_mut() {
                    for o in job.owed.values_mut().filter(|o| **o == Owed::Sent(request)) {
                        *o = retry;
                    }
                }
                settled.lines.push(format!("transaction markers: request {request} got no answer ({why}); sending again"));
                return settled;
            }
        };
        let mut written: BTreeMap<u64, Vec<(String, i32)>> = BTreeMap::new();
        for (id, p, error) in answers {
            let Some(job) = self.jobs.get_mut(&id) else { continue };
            if job.owed.get(&p) != Some(&Owed::Sent(request)) {
                continue;
            }
            match error.map(disposition) {
                None | Some(Disposition::Done) => {
                    job.owed.remove(&p);
                    written.entry(id).or_default().push(p);
                }
                Some(Disposition::Retry) => {
                    job.owed.insert(p, retry);
                }
                Some(Disposition::Abandon) => {
                    let code = error.unwrap_or(Code::UnknownServerError);
                    settled.lines.push(format!("transactional id {}: {}-{} refused its marker ({code:?}): this coordinator is fenced; the markers are left to the current one", job.job.transactional_id, p.0, p.1));
                    self.jobs.remove(&id);
                }
            }
        }
        // A partition the answer left out is owed again.
        for job in self.jobs.values_mut() {
            for o in job.owed.values_mut().filter(|o| **o == Owed::Sent(request)) {
                *o = retry;
            }
        }
        self.jobs.retain(|_, j| !j.owed.is_empty());
        settled.written = written.into_iter().collect();
        settled
    }

    /// When markers are next owed (None: none is waiting for a time).
    pub fn next_deadline(&self) -> Option<u64> {
        self.jobs.values().flat_map(|j| j.owed.values()).filter_map(|o| match o {
            Owed::At(t) => Some(*t),
            Owed::Sent(_) => None,
        }).min()
    }
}

enum Disposition {
    Done,
    Retry,
    Abandon,
}

/// What a partition leader's error means for its marker (Kafka's
/// `TransactionMarkerRequestCompletionHandler`): written for good, worth sending again, or
/// proof that this coordinator is stale.
fn disposition(code: Code) -> Disposition {
    match code {
        // The topic was deleted, or the broker writes no markers for its format: nothing to do.
        Code::UnsupportedForMessageFormat | Code::UnsupportedVersion => Disposition::Done,
        Code::InvalidProducerEpoch | Code::TransactionCoordinatorFenced => Disposition::Abandon,
        // Everything else passes or is the leader's to fix: NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION
        // (metadata not there yet), NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT,
        // KAFKA_STORAGE_ERROR, COORDINATOR_LOAD_IN_PROGRESS.
        _ => Disposition::Retry,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn job(id: u64, partitions: &[(&str, i32)]) -> MarkerJob {
        let partitions: BTreeSet<(String, i32)> = partitions.iter().map(|(t, p)| (t.to_string(), *p)).collect();
        MarkerJob { job: id, transactional_id: format!("t{id}"), producer_id: 10 + id as i64, epoch: 1, commit: true, version: crate::kafka::TxnVersion::Classic, coordinator_epoch: 3, partitions }
    }

    fn p(t: &str, n: i32) -> (String, i32) {
        (t.to_string(), n)
    }

    #[test]
    fn batches_by_leader_and_settles_what_is_written() {
        let mut c = Channel::default();
        c.add(job(1, &[("a", 0), ("a", 1), ("b", 0)]), 0);
        let leader = |t: &str, n: i32| Leader::At(if t == "a" && n == 1 { 2 } else { 1 });
        let (sends, settled) = c.due(0, |_| true, leader);
        assert_eq!(settled, Settled::default());
        assert_eq!(sends.iter().map(|s| (s.broker, s.markers[0].partitions.clone())).collect::<Vec<_>>(), vec![(1, vec![p("a", 0), p("b", 0)]), (2, vec![p("a", 1)])]);
        assert!(c.due(0, |_| true, leader).0.is_empty(), "nothing is sent twice while in flight");
        assert_eq!(c.next_deadline(), None);
        let s = c.answered(sends[0].request, Ok(vec![(1, p("a", 0), None), (1, p("b", 0), Some(Code::NotLeaderOrFollower))]), 5);
        assert_eq!(s.written, vec![(1, vec![p("a", 0)])]);
        assert_eq!(c.next_deadline(), Some(5 + txn_marker_retry_ms), "the refused partition is owed again after a pause");
        let s = c.answered(sends[1].request, Err("connection reset".into()), 6);
        assert!(s.written.is_empty() && s.lines.len() == 1);
        let (again, _) = c.due(5 + txn_marker_retry_ms, |_| true, leader);
        assert_eq!(again.len(), 1, "b-0 goes to broker 1: {again:?}");
        let (again2, _) = c.due(6 + txn_marker_retry_ms, |_| true, leader);
        assert_eq!(again2.len(), 1, "a-1 goes to broker 2: {again2:?}");
        c.answered(again[0].request, Ok(vec![(1, p("b", 0), None)]), 10);
        let s = c.answered(again2[0].request, Ok(vec![(1, p("a", 1), None)]), 10);
        assert_eq!(s.written, vec![(1, vec![p("a", 1)])]);
        assert!(c.jobs.is_empty());
    }

    #[test]
    fn no_leader_waits_a_gone_topic_is_dropped_a_fenced_coordinator_gives_up() {
        let mut c = Channel::default();
        c.add(job(1, &[("a", 0), ("gone", 0)]), 0);
        let (sends, settled) = c.due(0, |_| true, |t, _| if t == "gone" { Leader::Gone } else { Leader::None });
        assert!(sends.is_empty());
        assert_eq!(settled.written, vec![(1, vec![p("gone", 0)])]);
        assert_eq!(c.next_deadline(), Some(txn_marker_retry_ms));
        let (sends, _) = c.due(txn_marker_retry_ms, |_| true, |_, _| Leader::At(0));
        let s = c.answered(sends[0].request, Ok(vec![(1, p("a", 0), Some(Code::TransactionCoordinatorFenced))]), 1);
        assert!(s.written.is_empty() && s.lines[0].contains("fenced"));
        assert!(c.jobs.is_empty());
    }

    #[test]
    fn a_job_its_coordinator_dropped_is_dropped() {
        let mut c = Channel::default();
        c.add(job(1, &[("a", 0)]), 0);
        c.add(job(2, &[("a", 0)]), 0);
        let (sends, _) = c.due(0, |j| j == 2, |_, _| Leader::At(0));
        assert_eq!(sends.len(), 1);
        assert_eq!(sends[0].markers.iter().map(|m| m.job).collect::<Vec<_>>(), vec![2]);
        // A stale answer for a job no longer known is ignored.
        assert_eq!(c.answered(sends[0].request, Ok(vec![(1, p("a", 0), None)]), 1).written, vec![]);
    }
}
