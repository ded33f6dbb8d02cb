//! The broker's rules that the simulator may swap, when the node is built, for a known wrong
//! one (a planted bug, `crate::planted`): produce, fetch, ISR proposals and their answers (`leader.rs`), epoch
//! truncation (`follower.rs`), failed logs (`upkeep.rs`), roles and metadata records
//! (`reconcile.rs`), the cleaner's choice (`cleaning.rs`) and the marker written (`markers.rs`). Those decisions hold no planted
//! branches: they ask [`Rules`], and Kafka's rules are the trait's defaults ([`Kafka`]). Each planted rule is a unit type overriding one method (or two) and
//! exists only in the simulated build; [`BrokerConfig::rules`](super::BrokerConfig::rules)
//! picks one from the planted bug. Pure functions: no state, no IO, no clock.

use super::{Error, IsrAnswer};
use crate::kafka::TxnVersion;
use crate::log::batch::control::MarkerKind;
use crate::log::clean::Keep;
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

    /// How far a read_committed consumer reads, given how far any consumer may (`upper`): no
    /// further than the last stable offset, so an open transaction's records wait for its
    /// marker (planted `ReadCommittedPastLso`).
    fn committed_upper(&self, upper: i64, last_stable_offset: i64) -> i64 {
        upper.min(last_stable_offset)
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

    /// Whether an ISR proposal left unsent (an earlier one of its round failed) is answered as
    /// lost, so that the next round sends it again; otherwise it would wait in flight for an
    /// answer that never comes (planted `UnsentIsrChangeStaysInFlight`).
    fn answers_unsent_isr_change(&self) -> bool {
        true
    }

    /// What an ISR proposal the controller answered KAFKA_STORAGE_ERROR became: perhaps
    /// committed (its write may have landed before its log failed, and a reopen replays it),
    /// so lost, not refused (planted `ControllerStorageErrorIsRefusal`).
    fn controller_storage_error(&self) -> IsrAnswer<'static> {
        IsrAnswer::Lost
    }

    /// Whether a follower cuts its log where its leader's answer about its latest epoch says
    /// the two diverge (KIP-101/279).
    fn follower_truncates(&self) -> bool {
        true
    }

    /// Whether a follower whose cut ends at an older epoch asks the leader again about that
    /// epoch, round after round until they agree.
    fn truncates_until_agreed(&self) -> bool {
        true
    }

    /// Whether a failed log is reopened in place (`failed_log_reopen_ms` later) rather than
    /// left offline until the process restarts.
    fn reopens_failed_logs(&self) -> bool {
        true
    }

    /// Whether a leader whose log failed registers again, so the controller moves the
    /// partitions it led.
    fn hands_over_failed_leadership(&self) -> bool {
        true
    }

    /// Whether roles wait for the image to hold this process's own registration.
    fn roles_wait_for_registration(&self) -> bool {
        true
    }

    /// A partition record was applied: only a newer one settles an ISR change in flight, which
    /// `Replication::apply` decides.
    fn after_partition_record(&self, _replication: &mut Replication) {}

    /// Which record of each key the cleaner keeps: the latest.
    fn cleaner_keeps(&self) -> Keep {
        Keep::Latest
    }

    /// Whether a log's checkpoints (recovery point, log start) are written in place instead
    /// of to a temporary file renamed over the old one: never.
    fn checkpoints_in_place(&self) -> bool {
        false
    }

    /// The marker a WriteTxnMarkers asking for `kind` appends: that one.
    fn marker_written(&self, kind: MarkerKind) -> MarkerKind {
        kind
    }

    /// The transaction version whose epoch rule a marker of version `tv` is checked by: its
    /// own (KIP-1228).
    fn marker_checked_as(&self, tv: TxnVersion) -> TxnVersion {
        tv
    }
}

/// Kafka's rules.
pub struct Kafka;

impl Rules for Kafka {}

/// The planted rules, one unit type per bug (`crate::planted::PlantedBug` names them).
#[cfg(madsim)]
pub(super) mod planted {
    use super::{Error, IsrAnswer, Keep, MarkerKind, Records, Replication, Rules, TxnVersion};
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

    pub struct UnsentIsrChangeStaysInFlight;
    impl Rules for UnsentIsrChangeStaysInFlight {
        fn answers_unsent_isr_change(&self) -> bool {
            false
        }
    }

    pub struct ControllerStorageErrorIsRefusal;
    impl Rules for ControllerStorageErrorIsRefusal {
        fn controller_storage_error(&self) -> IsrAnswer<'static> {
            IsrAnswer::Refused
        }
    }

    pub struct FollowerSkipsTruncation;
    impl Rules for FollowerSkipsTruncation {
        fn follower_truncates(&self) -> bool {
            false
        }
    }

    pub struct TruncationStopsAfterOneRound;
    impl Rules for TruncationStopsAfterOneRound {
        fn truncates_until_agreed(&self) -> bool {
            false
        }
    }

    pub struct OfflineLogStaysOffline;
    impl Rules for OfflineLogStaysOffline {
        fn reopens_failed_logs(&self) -> bool {
            false
        }
    }

    pub struct FailedLeaderKeepsLeadership;
    impl Rules for FailedLeaderKeepsLeadership {
        fn hands_over_failed_leadership(&self) -> bool {
            false
        }
    }

    pub struct RolesBeforeRegistration;
    impl Rules for RolesBeforeRegistration {
        fn roles_wait_for_registration(&self) -> bool {
            false
        }
    }

    pub struct SameEpochRecordClearsInFlight;
    impl Rules for SameEpochRecordClearsInFlight {
        fn after_partition_record(&self, replication: &mut Replication) {
            replication.forget_in_flight();
        }
    }

    pub struct CleanerKeepsFirstValue;
    impl Rules for CleanerKeepsFirstValue {
        fn cleaner_keeps(&self) -> Keep {
            Keep::First
        }
    }

    pub struct CheckpointInPlace;
    impl Rules for CheckpointInPlace {
        fn checkpoints_in_place(&self) -> bool {
            true
        }
    }

    pub struct AbortMarkerCommits;
    impl Rules for AbortMarkerCommits {
        fn marker_written(&self, _: MarkerKind) -> MarkerKind {
            MarkerKind::Commit
        }
    }

    pub struct CommitMarkerAborts;
    impl Rules for CommitMarkerAborts {
        fn marker_written(&self, _: MarkerKind) -> MarkerKind {
            MarkerKind::Abort
        }
    }

    pub struct ReadCommittedPastLso;
    impl Rules for ReadCommittedPastLso {
        fn committed_upper(&self, upper: i64, _: i64) -> i64 {
            upper
        }
    }

    pub struct MarkerEqualEpochAccepted;
    impl Rules for MarkerEqualEpochAccepted {
        fn marker_checked_as(&self, _: TxnVersion) -> TxnVersion {
            TxnVersion::Classic
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
            PlantedBug::UnsentIsrChangeStaysInFlight => &UnsentIsrChangeStaysInFlight,
            PlantedBug::ControllerStorageErrorIsRefusal => &ControllerStorageErrorIsRefusal,
            PlantedBug::FollowerSkipsTruncation => &FollowerSkipsTruncation,
            PlantedBug::TruncationStopsAfterOneRound => &TruncationStopsAfterOneRound,
            PlantedBug::OfflineLogStaysOffline => &OfflineLogStaysOffline,
            PlantedBug::FailedLeaderKeepsLeadership => &FailedLeaderKeepsLeadership,
            PlantedBug::RolesBeforeRegistration => &RolesBeforeRegistration,
            PlantedBug::SameEpochRecordClearsInFlight => &SameEpochRecordClearsInFlight,
            PlantedBug::CleanerKeepsFirstValue => &CleanerKeepsFirstValue,
            PlantedBug::CheckpointInPlace => &CheckpointInPlace,
            PlantedBug::AbortMarkerCommits => &AbortMarkerCommits,
            PlantedBug::MarkerEqualEpochAccepted => &MarkerEqualEpochAccepted,
            PlantedBug::CommitMarkerAborts => &CommitMarkerAborts,
            PlantedBug::ReadCommittedPastLso => &ReadCommittedPastLso,
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
