//! The replica fetcher's decisions for one leader, without IO: what to ask the leader next
//! (OffsetForLeaderEpoch while any partition is due for KIP-279 truncation, else one Fetch at
//! every log end, the partition that leads the request rotating each round), and what each
//! answer does to the local replica. The shell (`server::peers`) only translates a step into
//! wire requests and the responses back into answers; the replication tests drive the same
//! struct with direct calls to the leader's [`Broker`], so both run one copy of the rules.

use super::partition::Following;
use super::{Action, Broker, Level};
use crate::kafka::Code;

/// One leader's fetcher, across rounds.
#[derive(Debug)]
pub struct ReplicaFetcher {
    pub leader: i32,
    /// Rounds so far: which partition leads the next Fetch.
    round: usize,
}

/// What to ask the leader next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Nothing is followed from this leader now.
    Idle,
    /// OffsetForLeaderEpoch: where does the leader's log end each of these epochs? Each entry
    /// is a followed partition and the latest epoch in its local log.
    Truncate(Vec<(Following, i32)>),
    /// Fetch from each partition's log end, in this order: only the first may exceed its byte
    /// limit (KIP-74), so the order rotates and a batch bigger than the limit elsewhere gets
    /// its turn.
    Fetch(Vec<Following>),
}

/// The leader's answer for one partition of a Fetch.
#[derive(Debug, Clone, Copy)]
pub struct FetchAnswer<'a> {
    /// None: records follow.
    pub error: Option<Code>,
    pub records: &'a [u8],
    pub high_watermark: i64,
    pub log_start_offset: i64,
}

/// Whether the fetcher should pause before its next round: the leader does not know the
/// partition the way this node does yet (its metadata lags ours, or moved on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Then {
    Continue,
    BackOff,
}

impl ReplicaFetcher {
    pub fn new(leader: i32) -> ReplicaFetcher {
        ReplicaFetcher { leader, round: 0 }
    }

    /// The next request. Partitions due for truncation with an empty log have nothing to cut:
    /// they are settled here without asking.
    pub fn next(&mut self, broker: &mut Broker, now: u64, out: &mut Vec<Action>) -> Step {
        let mut following = broker.following(self.leader);
        self.round = self.round.wrapping_add(1);
        if following.is_empty() {
            return Step::Idle;
        }
        let shift = self.round % following.len();
        following.rotate_left(shift);
        if !following.iter().any(|f| f.truncate_from_epoch.is_some()) {
            // KIP-73, the follower's side: throttled partitions sit this round out while what
            // they fetched is over the rate (a round with none left waits a tick).
            following.retain(|f| !broker.follower_held(&f.topic, f.partition, now));
            if following.is_empty() {
                return Step::Idle;
            }
            return Step::Fetch(following);
        }
        let mut ask = Vec::new();
        for f in following {
            match f.truncate_from_epoch {
                None => {}
                Some(None) => self.truncated(broker, &f, -1, -1, now, out),
                Some(Some(latest)) => ask.push((f, latest)),
            }
        }
        Step::Truncate(ask)
    }

    /// The leader's OffsetForLeaderEpoch answer for `f`: its log ends `epoch` at `end`, or an
    /// error code.
    pub fn on_epoch_answer(&self, broker: &mut Broker, f: &Following, answer: Result<(i32, i64), Code>, now: u64, out: &mut Vec<Action>) -> Then {
        match answer {
            Ok((epoch, end)) => {
                self.truncated(broker, f, epoch, end, now, out);
                Then::Continue
            }
            Err(_) => Then::BackOff, // the leader has not caught up with the metadata yet, or moved on
        }
    }

    fn truncated(&self, broker: &mut Broker, f: &Following, epoch: i32, end: i64, now: u64, out: &mut Vec<Action>) {
        let leader = self.leader;
        match broker.truncate_to_leader(&f.topic, f.partition, leader, f.leader_epoch, epoch, end, now, out) {
            Ok(Some(leo)) if leo < f.fetch_offset => {
                out.push(Action::Log(Level::Info, format!("{}-{}: truncated to {leo} (epoch {})", f.topic, f.partition, f.leader_epoch)));
            }
            Ok(_) => {}
            Err(e) => out.push(Action::Log(Level::Error, format!("{}-{}: truncating: {e}", f.topic, f.partition))),
        }
    }

    /// The leader's Fetch answer for `f`.
    pub fn on_fetch_answer(&self, broker: &mut Broker, f: &Following, answer: FetchAnswer<'_>, now: u64, out: &mut Vec<Action>) -> Then {
        let leader = self.leader;
        let (result, then) = match answer.error {
            None => {
                broker.follower_fetched(&f.topic, f.partition, answer.records.len(), now);
                let appended = broker.append_from_leader(&f.topic, f.partition, leader, f.leader_epoch, f.fetch_offset, answer.records, answer.high_watermark, now);
                if appended.is_err() {
                    // A prefix may be staged: written by a job like any append, before the next
                    // fetch says this replica holds it.
                    if let Some(job) = broker.owed_job(&f.topic, f.partition) {
                        out.push(Action::Sync { topic: f.topic.to_string(), partition: f.partition, job });
                    }
                }
                let adopted = appended.and_then(|job| {
                    if let Some(job) = job {
                        out.push(Action::Sync { topic: f.topic.to_string(), partition: f.partition, job });
                    }
                    broker.adopt_leader_start(&f.topic, f.partition, leader, f.leader_epoch, answer.log_start_offset, now)
                });
                (adopted, Then::Continue)
            }
            // OFFSET_OUT_OF_RANGE below the leader's log start: start over from there.
            Some(Code::OffsetOutOfRange) if answer.log_start_offset > f.fetch_offset => {
                (broker.restart_from(&f.topic, f.partition, leader, f.leader_epoch, answer.log_start_offset, now, out), Then::Continue)
            }
            // Past the leader's log end: truncate by epoch again.
            Some(Code::OffsetOutOfRange) => (broker.retruncate(&f.topic, f.partition), Then::Continue),
            Some(_) => (Ok(()), Then::BackOff), // the leader's metadata differs from ours
        };
        if let Err(e) = result {
            out.push(Action::Log(Level::Error, format!("{}-{}: following {leader}: {e}", f.topic, f.partition)));
        }
        then
    }
}
