//! The leader's produce, fetch and ISR-answer rules that the simulator may swap, when the node
//! is built, for a known wrong one (a planted bug, `crate::planted`), so the decisions in
//! `leader.rs` hold no planted branches: they ask [`Rules`], and Kafka's rules are the trait's
//! defaults ([`Kafka`]). Each planted rule is a unit type overriding one method (or two) and
//! exists only in the simulated build; [`BrokerConfig::rules`](super::BrokerConfig::rules)
//! picks one from the planted bug. Pure functions: no state, no IO, no clock.

use super::Error;
use crate::log::Records;
use crate::replication::Replication;

/// Kafka's rule for each decision, overridable.
pub trait Rules: Sync {
    /// Whether an acks=all produce is answered at once, without waiting for the ISR (planted
    /// `AcksAllWithoutIsr`, `AckBeforeAppend`). Kafka: never.
    fn acks_all_skips_isr(&self) -> bool {
        false
    }

    /// Whether a produce is acknowledged before it is appended, the append left to the next
    /// tick (planted `AckBeforeAppend`). Kafka: never.
    fn appends_after_ack(&self) -> bool {
        false
    }

    /// Whether an acks=all batch whose last offset is `last_offset` is replicated under
    /// `high_watermark`: the mark must pass it (it sits on batch boundaries, since followers
    /// fetch whole batches).
    fn replicated(&self, high_watermark: i64, last_offset: i64) -> bool {
        high_watermark > last_offset
    }

    /// What an acks=all produce is answered when the leadership it was appended under has
    /// ended (`error`, why it ended): NOT_LEADER_OR_FOLLOWER, as Kafka's delayed produce does;
    /// the batch may or may not survive, and an idempotent retry is deduplicated.
    fn ended_leadership(&self, _error: Error) -> Error {
        Error::NotLeaderOrFollower
    }

    /// A batch appended at `base_offset` is answered with its offsets (`Ok`), never an error.
    fn after_append(&self, _base_offset: i64, _acks: i16) -> Result<(), Error> {
        Ok(())
    }

    /// Whether a follower's fetch tells the leader its progress: only when first handled
    /// (`again`: answered again after waiting), since a request parked from a follower that
    /// has since crashed must not keep it caught up.
    fn fetch_is_progress(&self, again: bool) -> bool {
        !again
    }

    /// How far a consumer reads: the high watermark, not the log end.
    fn consumer_upper(&self, high_watermark: i64, _log_end: i64) -> i64 {
        high_watermark
    }

    /// The records a fetch answers, as read.
    fn served(&self, records: Records, _consumer: bool) -> Records {
        records
    }

    /// The high watermark a fetch reports: the partition's.
    fn reported_high_watermark(&self, high_watermark: i64, _upper: i64, _consumer: bool) -> i64 {
        high_watermark
    }

    /// An ISR change whose answer never came stays in flight and is sent again: the
    /// controller may have committed it.
    fn isr_answer_lost(&self, replication: &mut Replication) {
        replication.on_isr_lost();
    }
}

/// Kafka's rules.
pub struct Kafka;

impl Rules for Kafka {}

/// The planted rules, one unit type per bug (`crate::planted::PlantedBug` names them).
#[cfg(madsim)]
pub(super) mod planted {
    use super::{Error, Records, Replication, Rules};
    use crate::planted::PlantedBug;

    pub struct AckBeforeAppend;
    impl Rules for AckBeforeAppend {
        fn acks_all_skips_isr(&self) -> bool {
            true
        }
        fn appends_after_ack(&self) -> bool {
            true
        }
    }

    pub struct AcksAllWithoutIsr;
    impl Rules for AcksAllWithoutIsr {
        fn acks_all_skips_isr(&self) -> bool {
            true
        }
    }

    pub struct AcksAllAtLastOffset;
    impl Rules for AcksAllAtLastOffset {
        fn replicated(&self, high_watermark: i64, last_offset: i64) -> bool {
            high_watermark >= last_offset
        }
    }

    pub struct DelayedProduceFenced;
    impl Rules for DelayedProduceFenced {
        fn ended_leadership(&self, error: Error) -> Error {
            error
        }
    }

    pub struct FailAfterAppend;
    impl Rules for FailAfterAppend {
        fn after_append(&self, base_offset: i64, acks: i16) -> Result<(), Error> {
            match base_offset % 7 == 3 {
                true => Err(Error::InvalidRequiredAcks(acks)),
                false => Ok(()),
            }
        }
    }

    pub struct ParkedFetchIsProgress;
    impl Rules for ParkedFetchIsProgress {
        fn fetch_is_progress(&self, _again: bool) -> bool {
            true
        }
    }

    pub struct ConsumersReadToLogEnd;
    impl Rules for ConsumersReadToLogEnd {
        fn consumer_upper(&self, _high_watermark: i64, log_end: i64) -> i64 {
            log_end
        }
        fn reported_high_watermark(&self, high_watermark: i64, upper: i64, consumer: bool) -> i64 {
            if consumer { upper } else { high_watermark }
        }
    }

    pub struct FetchRepeatsFirstBatch;
    impl Rules for FetchRepeatsFirstBatch {
        fn served(&self, records: Records, consumer: bool) -> Records {
            match consumer {
                true => records.to_bytes().map(|b| Records::Memory(repeat_first_batch(b))).unwrap_or(records),
                false => records,
            }
        }
    }

    pub struct FetchAboveHighWatermark;
    impl Rules for FetchAboveHighWatermark {
        fn reported_high_watermark(&self, high_watermark: i64, _upper: i64, _consumer: bool) -> i64 {
            if high_watermark > 0 { high_watermark - 1 } else { high_watermark }
        }
    }

    pub struct LostIsrAnswerIsRefusal;
    impl Rules for LostIsrAnswerIsRefusal {
        fn isr_answer_lost(&self, replication: &mut Replication) {
            replication.on_isr_failed();
        }
    }

    /// The rules planting `bug`, if it is one of these.
    pub fn of(bug: PlantedBug) -> Option<&'static dyn Rules> {
        Some(match bug {
            PlantedBug::AckBeforeAppend => &AckBeforeAppend,
            PlantedBug::AcksAllWithoutIsr => &AcksAllWithoutIsr,
            PlantedBug::AcksAllAtLastOffset => &AcksAllAtLastOffset,
            PlantedBug::DelayedProduceFenced => &DelayedProduceFenced,
            PlantedBug::FailAfterAppend => &FailAfterAppend,
            PlantedBug::ParkedFetchIsProgress => &ParkedFetchIsProgress,
            PlantedBug::ConsumersReadToLogEnd => &ConsumersReadToLogEnd,
            PlantedBug::FetchRepeatsFirstBatch => &FetchRepeatsFirstBatch,
            PlantedBug::FetchAboveHighWatermark => &FetchAboveHighWatermark,
            PlantedBug::LostIsrAnswerIsRefusal => &LostIsrAnswerIsRefusal,
            _ => return None,
        })
    }

    /// `FetchRepeatsFirstBatch`: the response's first batch again at its end.
    fn repeat_first_batch(records: bytes::Bytes) -> bytes::Bytes {
        match crate::log::batch::read_header(&records) {
            Ok(h) if h.size <= records.len() => {
                let mut twice = records.to_vec();
                twice.extend_from_slice(&records[..h.size]);
                bytes::Bytes::from(twice)
            }
            _ => records,
        }
    }
}
