//! The log cleaner's turns (Kafka's `LogCleaner`, one cleaner here): which partition a pass
//! cleans, and the pace of its steps. A pass runs a step at a time ([`Log::clean_step`], about
//! [`cleaner_step_bytes`] each), so the broker answers requests between steps; the steps are
//! paced to `log.cleaner.io.max.bytes.per.second` (Kafka's `Throttler`). Each step's reads and
//! writes, and the pass's closing clean-point checkpoint, are a job the shell runs off the
//! node's lock ([`Action::Clean`], reported with [`Broker::cleaned`]): the turn itself reads
//! no batch and writes no file. With nothing due the
//! cleaner looks again after `log.cleaner.backoff.ms`; after a pass it looks at once, as
//! Kafka's does.
//!
//! [`Log::clean_step`]: crate::log::Log::clean_step

use super::{Action, Broker, Level};
use crate::constants::{cleaner_key_map_bytes, cleaner_step_bytes};
use crate::log::CleanStep;

/// Paces work to a byte rate: each step's bytes push the earliest start of the next one
/// forward by the time they take at the rate (a deficit carried in microseconds, so small
/// steps add up). Idle time is not saved up for a burst.
#[derive(Debug, Clone)]
pub struct Throttle {
    /// Bytes per second; None: no limit (Kafka's default).
    rate: Option<u64>,
    /// When the work done so far is paid for, µs.
    paid_until_us: u64,
}

impl Throttle {
    pub fn new(bytes_per_second: Option<u64>) -> Throttle {
        Throttle { rate: bytes_per_second.filter(|&r| r > 0), paid_until_us: 0 }
    }

    /// Records `bytes` done at `now` (ms); returns when the next step may start (ms, rounded
    /// down: the deficit below a millisecond is carried, never forgiven).
    pub fn after(&mut self, now: u64, bytes: u64) -> u64 {
        let Some(rate) = self.rate else { return now };
        let cost_us = (bytes as u128 * 1_000_000 / rate as u128).min(u64::MAX as u128) as u64;
        self.paid_until_us = self.paid_until_us.max(now.saturating_mul(1000)).saturating_add(cost_us);
        self.paid_until_us / 1000
    }
}

/// The cleaner's state between turns.
#[derive(Debug)]
pub(super) struct Cleaner {
    /// Its next turn, ms.
    next_ms: u64,
    /// After a failed step (a full disk, say), no turn before this, whatever report comes in
    /// meanwhile: a dropped pass's discard job reporting at once would otherwise start the next
    /// pass at once, fail it at once, and so on (compacted-disk-faults seed 73413 spun at one
    /// instant; a real broker would have spun its cleaner on a full disk).
    failed_until: u64,
    /// The partition whose pass is in flight, if any.
    in_flight: Option<(String, i32)>,
    /// The partition cleaned last: turns rotate past it.
    last: Option<(String, i32)>,
    throttle: Throttle,
}

impl Cleaner {
    /// The next turn at `at`, but not before a failure's backoff ends.
    pub(super) fn next_at(&mut self, at: u64) {
        self.next_ms = at.max(self.failed_until);
    }

    pub(super) fn new(bytes_per_second: Option<u64>) -> Cleaner {
        Cleaner { next_ms: 0, failed_until: 0, in_flight: None, last: None, throttle: Throttle::new(bytes_per_second) }
    }
}

impl Broker {
    /// When the log cleaner's next turn is due ([`Broker::clean_step`] sets it).
    pub fn cleaner_due(&self) -> u64 {
        self.cleaner.next_ms
    }

    /// One turn of the log cleaner at `now`: a step of the pass in flight, or of a new pass on
    /// the first partition (after the last one cleaned) that is due, below its high
    /// watermark. Leaders and followers clean their own copies, as Kafka's do. Returns what to
    /// log; [`Broker::cleaner_due`] says when the next turn is.
    pub fn clean_step(&mut self, now: u64) -> Vec<Action> {
        let mut out = Vec::new();
        if now < self.cleaner.next_ms {
            return out;
        }
        let in_flight = self.cleaner.in_flight.take().filter(|k| self.partitions.get(&k.0, k.1).is_some_and(|p| p.log.cleaning()));
        let starts = in_flight.is_none();
        let Some(key) = in_flight.or_else(|| self.next_due(now)) else {
            self.cleaner.next_at(now + self.config.cleaner_backoff_ms);
            return out;
        };
        let keep = self.config.rules().cleaner_keeps();
        let part = self.partitions.get_mut(&key.0, key.1).expect("listed");
        let upper = part.cleanable_end();
        let result = part.log.clean_step(now, upper, cleaner_key_map_bytes, cleaner_step_bytes, keep);
        self.step_done(key, starts, result, now, &mut out);
        out
    }

    /// A cleaning step of `name`-`p`'s log ([`Action::Clean`]) came back: the pass goes on or
    /// ends as after a step taken in the turn, and the cleaner's next turn is paced by it.
    pub fn cleaned(&mut self, name: &str, p: i32, done: crate::log::Cleaned, now: u64) -> Vec<Action> {
        let mut out = Vec::new();
        if crate::log::CleanJob::fenced(&done) {
            out.push(Action::Log(Level::Info, format!("{name}-{p}: a cleaning step ran after its log was let go (reopened or deleted) and did nothing")));
        }
        let Some(part) = self.partitions.get_mut(name, p) else { return out };
        let result = part.log.cleaned(done, now);
        self.step_done((name.to_string(), p), false, result, now, &mut out);
        self.note_log(name, p);
        out
    }

    /// After a step of `key`'s log (taken in the turn, or a job's report): what to log, when
    /// the next turn is, and the jobs the log owes — the step itself, off the node's lock
    /// (issue 32), or a whole group's swap (`log::swap`), whose report the next turn waits for.
    fn step_done(&mut self, key: (String, i32), starts: bool, result: Result<CleanStep, crate::log::LogError>, now: u64, out: &mut Vec<Action>) {
        let backoff = now + self.config.cleaner_backoff_ms;
        let Some(part) = self.partitions.get_mut(&key.0, key.1) else { return };
        let next = match result {
            Ok(CleanStep::Idle) => backoff,
            Ok(CleanStep::Working { bytes }) => {
                if starts && part.log.cleaning_phase().is_some() {
                    out.push(Action::Log(Level::Info, format!("{}-{}: cleaning from offset {}", key.0, key.1, part.log.cleaned_to())));
                }
                self.cleaner.in_flight = Some(key.clone());
                self.cleaner.throttle.after(now, bytes)
            }
            Ok(CleanStep::Done { bytes, stats }) => {
                if let Some(s) = stats {
                    out.push(Action::Log(Level::Info, format!("{}-{}: cleaned [{}, {}): {} keys, {} segments rewritten, {} -> {} bytes", key.0, key.1, s.from, s.to, s.keys, s.segments_rewritten, s.bytes_before, s.bytes_after)));
                }
                self.cleaner.last = Some(key.clone());
                self.cleaner.throttle.after(now, bytes)
            }
            Err(e) => {
                out.push(Action::Log(Level::Error, format!("{}-{}: cleaning failed: {e}", key.0, key.1)));
                self.cleaner.last = Some(key.clone());
                self.cleaner.failed_until = backoff;
                backoff
            }
        };
        self.cleaner.next_at(next);
        let (topic, partition) = key;
        if let Some(job) = part.log.take_clean() {
            out.push(Action::Clean { topic: topic.clone(), partition, job });
        }
        if let Some(job) = part.log.take_swap() {
            out.push(Action::Swap { topic, partition, job });
        }
    }

    /// The first partition after the last one cleaned whose log is due a pass.
    fn next_due(&self, now: u64) -> Option<(String, i32)> {
        let after = self.cleaner.last.as_ref();
        self.partitions
            .iter()
            .filter(|(_, part)| part.log.failure().is_none() && part.log.cleaner_work_due(now, part.cleanable_end()))
            .map(|((n, p), _)| (n, p))
            .min_by_key(|&(n, p)| (after.is_some_and(|a| (&**n, p) <= (a.0.as_str(), a.1)), (n, p)))
            .map(|(n, p)| (n.to_string(), p))
    }
}

#[cfg(test)]
mod tests {
    use super::Throttle;

    #[test]
    fn the_throttle_paces_steps_to_the_rate_and_saves_no_idle_time() {
        let mut t = Throttle::new(Some(1_000_000)); // 1 MB/s: 1 µs per byte
        assert_eq!(t.after(100, 250_000), 350, "250 KB take 250 ms");
        assert_eq!(t.after(350, 250_000), 600);
        // Small steps add up instead of rounding away.
        let mut at = 600;
        for _ in 0..10 {
            at = t.after(at, 100);
        }
        assert_eq!(at, 601);
        // After an idle second, the next step is paced from now, not from the past.
        assert_eq!(t.after(5_000, 1_000), 5_001);
        assert_eq!(Throttle::new(None).after(7, u64::MAX), 7, "no limit");
        assert_eq!(Throttle::new(Some(0)).after(7, 10), 7, "0 means no limit");
    }
}
