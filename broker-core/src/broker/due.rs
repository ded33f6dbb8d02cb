//! What the broker's time-driven upkeep has to look at, kept by the calls that create the work,
//! so that a tick visits the partitions with something due instead of every partition
//! (at 4,000 partitions the walks of every 100 ms tick were the largest identifiable share of
//! an otherwise busy broker's CPU, docs/journal/benchmarks.md "Upkeep that visits only what is due").
//!
//! - **Logs** ([`LogDue`]): `flush.ms` deadlines, exactly as the logs have them (the timers
//!   sleep until the earliest), and retention deadlines (`Log::retention_at`: at once when
//!   `retention.bytes` is exceeded, when the oldest segment passes `retention.ms`, none while
//!   the high watermark holds the segment back). A partition is noted after every call that
//!   can bring such work nearer: an append, a moved high watermark, a new config, opening.
//!   Calls that only take work away (a flush, a truncation, DeleteRecords, cleaning) leave an
//!   entry that is early: its visit does nothing and notes the partition again.
//! - **ISR checks** ([`Due`]): the time at which a leader's ISR may change without any new
//!   event (`Replication::isr_check_at`: a member's lag window ending, a retry), and "now"
//!   for a partition an event touched (a fetch by a replica outside the ISR, a controller's
//!   answer); every partition after metadata changed (liveness and roles come from it).
//!
//! - **Replicas to open**: the image and the open replicas are compared only after either
//!   changed or when an offline replica's retry time came; a failed log is looked for only
//!   after a log rang the failure alarm (`log::alarm`); the leaders followed are counted
//!   again only after a role may have changed.
//!
//! Visiting fewer partitions must not change what a visit decides: a partition not visited
//! is one whose visit would have done nothing and changed nothing. Visits happen in (topic,
//! partition) order, as the walks did, so log lines and proposals keep their order.
//! Plain data with explicit times: no clock, no IO.

use super::partitions::Partitions;
use crate::log::Log;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// A partition, by its shared topic name and index.
pub(super) type Key = (Arc<str>, i32);

/// Partitions and the time each is due at (one entry each: the earliest asked for).
#[derive(Debug, Default)]
pub(super) struct Due {
    at: BTreeMap<Key, u64>,
    queue: BTreeSet<(u64, Key)>,
}

impl Due {
    /// `key` is due at `t`, or earlier if it already was.
    pub(super) fn at(&mut self, key: Key, t: u64) {
        match self.at.get(&key) {
            Some(&old) if old <= t => {}
            Some(&old) => {
                self.queue.remove(&(old, key.clone()));
                self.queue.insert((t, key.clone()));
                self.at.insert(key, t);
            }
            None => {
                self.queue.insert((t, key.clone()));
                self.at.insert(key, t);
            }
        }
    }

    /// `key` is due at exactly `t` (a deadline that moved later replaces the earlier one).
    pub(super) fn set(&mut self, key: Key, t: u64) {
        if let Some(old) = self.at.insert(key.clone(), t) {
            if old == t {
                return;
            }
            self.queue.remove(&(old, key.clone()));
        }
        self.queue.insert((t, key));
    }

    /// Every partition due at or before `now`, taken out, in (topic, partition) order.
    pub(super) fn take(&mut self, now: u64) -> Vec<Key> {
        let mut due = Vec::new();
        while self.queue.first().is_some_and(|(t, _)| *t <= now) {
            let (_, key) = self.queue.pop_first().expect("checked above");
            self.at.remove(&key);
            due.push(key);
        }
        due.sort_unstable();
        due
    }

    /// The entries by time, earliest first.
    pub(super) fn by_time(&self) -> impl Iterator<Item = (u64, &Key)> {
        self.queue.iter().map(|(t, k)| (*t, k))
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.at.len()
    }
}

/// The logs the upkeep looks at: `flush.ms` deadlines and retention deadlines.
#[derive(Debug, Default)]
pub(super) struct LogDue {
    flush: Due,
    retention: Due,
}

impl LogDue {
    /// After a call that may have given `log` time-driven work (an append, a moved high
    /// watermark `upper`, a new config, opening): its `flush.ms` deadline, as the log has it,
    /// and when retention may delete its oldest segment.
    pub(super) fn note(&mut self, topic: &Arc<str>, p: i32, log: &Log, upper: i64) {
        if let Some(t) = log.next_deadline() {
            self.flush.set((topic.clone(), p), t);
        }
        if let Some(t) = log.retention_at(upper) {
            self.retention.at((topic.clone(), p), t);
        }
    }

    /// The logs to look at now (a flush or retention deadline reached), taken out, in (topic,
    /// partition) order; [`LogDue::note`] them again after the visit.
    pub(super) fn take(&mut self, now: u64) -> Vec<Key> {
        let mut due = self.flush.take(now);
        due.extend(self.retention.take(now));
        due.sort_unstable();
        due.dedup();
        due
    }

    /// The earliest `flush.ms` deadline of any open log: entries a flush made stale (its log
    /// flushed since, by policy, roll or checkpoint, or gone) are passed over, so the timers
    /// wake when they did when every log was asked.
    pub(super) fn next_flush(&self, partitions: &Partitions) -> Option<u64> {
        self.flush.by_time().find(|(t, (n, p))| partitions.get(n, *p).and_then(|x| x.log.next_deadline()) == Some(*t)).map(|(t, _)| t)
    }

    /// How many partitions have a flush and a retention entry.
    #[cfg(test)]
    pub(super) fn len(&self) -> (usize, usize) {
        (self.flush.len(), self.retention.len())
    }
}

/// Everything the upkeep keeps to visit only what is due.
#[derive(Debug, Default)]
pub(super) struct Upkeep {
    pub(super) logs: LogDue,
    /// Leaders whose ISR may change at a time without a new event (`isr_check_at`), or that
    /// an event touched (due at once).
    pub(super) isr: Due,
    /// The metadata changed since the last ISR check (roles, ISRs, which brokers are live):
    /// the next one looks at every partition.
    pub(super) isr_all: bool,
    /// The image or the set of open replicas changed since the upkeep last compared them (the
    /// replicas to open); offline replicas whose retry time came are compared regardless.
    pub(super) merge: bool,
    /// Rung by any local log that goes offline: only then are logs looked at for failures.
    pub(super) failures: crate::log::FailureAlarm,
    /// The leaders this node follows, as last counted; None once a role may have changed
    /// (new metadata, a registration, a replica opened or removed). The replica fetchers ask
    /// every 100 ms; roles change only in those calls.
    pub(super) followed: Option<BTreeSet<i32>>,
}

impl Upkeep {
    /// A replica was opened, removed or re-roled: the open replicas and the roles are to be
    /// looked at again.
    pub(super) fn replicas_changed(&mut self) {
        self.merge = true;
        self.followed = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(t: &str, p: i32) -> Key {
        (Arc::from(t), p)
    }

    #[test]
    fn at_keeps_the_earliest_and_take_returns_in_key_order_once() {
        let mut d = Due::default();
        d.at(key("b", 0), 50);
        d.at(key("a", 3), 40);
        d.at(key("b", 0), 70); // later: the earlier stands
        d.at(key("a", 1), 60);
        d.at(key("a", 1), 10); // earlier: replaces
        assert_eq!(d.take(9), vec![]);
        assert_eq!(d.take(50), vec![key("a", 1), key("a", 3), key("b", 0)]);
        assert_eq!(d.take(1_000), vec![], "taken once");
        assert_eq!(d.len(), 0);
    }

    #[test]
    fn set_moves_a_deadline_either_way() {
        let mut d = Due::default();
        d.set(key("t", 0), 100);
        d.set(key("t", 0), 300);
        assert_eq!(d.take(299), vec![]);
        d.set(key("t", 0), 200);
        assert_eq!(d.by_time().map(|(t, _)| t).collect::<Vec<_>>(), vec![200]);
        assert_eq!(d.take(200), vec![key("t", 0)]);
    }
}
