//! The leader's side of a partition: produce (validation, idempotence, acks), the acks=all
//! wait, fetches by consumers and followers, offset lookups, and the ISR changes it proposes.

use super::partition::{Fetched, Fetcher, IsrAnswer, IsrReply, Produced};
use super::producer::Verdict;
use super::{Action, Broker, Error};
use crate::kafka::list_offsets;
use crate::log::batch::{self, BatchHeader};
use crate::log::epochs::EpochEntry;
use crate::log::Records;
use crate::replication::IsrProposal;
use bytes::Bytes;

/// One partition's records of a produce request, checked before the decision: what
/// [`batch::check`] finds needs only the bytes, so the shell runs it off the node's lock (a
/// compressed batch is decompressed to check its records: milliseconds for a large one) and
/// other requests are decided meanwhile. The bytes stay the request's own
/// until the append copies them to stamp its offsets.
#[derive(Debug)]
pub struct Incoming {
    bytes: Bytes,
    /// None: left for the decision, after the topic's size limit (a batch over the default
    /// limit is likely refused for its size, which costs nothing to find).
    checked: Option<Result<BatchHeader, batch::BatchError>>,
}

impl Incoming {
    pub fn new(records: Bytes) -> Incoming {
        let checked = (records.len() <= crate::constants::message_bytes_max).then(|| batch::check(&records));
        Incoming { checked, bytes: records }
    }

    /// Whether its header says transactional (a produce carrying one must name its
    /// transactional id).
    pub fn is_transactional(&self) -> bool {
        batch::read_header(&self.bytes).is_ok_and(|h| h.is_transactional())
    }
}

/// Checked where it is handed over, for callers that hold the bytes under the lock already.
impl From<&Vec<u8>> for Incoming {
    fn from(records: &Vec<u8>) -> Incoming {
        Incoming::new(Bytes::copy_from_slice(records))
    }
}

/// Who appends: a client (every batch checked against its producer's sequence window), a
/// client's request off the wire (KIP-890 part 1's verification enforced too, with the guard
/// of the verification this request asked for, if any), or a coordinator writing its own state
/// topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    Client,
    Wire(Option<u64>),
    Coordinator,
}

/// KIP-890 part 1: a producer's first transactional write to a partition this node leads,
/// which the leader must verify with the producer's transaction coordinator before appending.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unverified {
    pub producer_id: i64,
    pub epoch: i16,
    /// The guard the append must present ([`Broker::produce_verified`]).
    pub guard: u64,
}

impl Broker {
    /// Appends one v2 batch (a produce request's records for one partition) as the leader and
    /// answers with its offsets. `records` must hold exactly one batch (produce v3+). With
    /// acks=all the caller then waits for [`Broker::replicated`]. A moved high watermark (an
    /// ISR of one) adds [`Action::Wake`] to `out`.
    pub fn produce(&mut self, name: &str, p: i32, records: impl Into<Incoming>, acks: i16, now: u64, out: &mut Vec<Action>) -> Result<Produced, Error> {
        self.produce_from(Origin::Client, name, p, records.into(), acks, now, out)
    }

    /// [`Broker::produce`] of a client's request off the wire: with
    /// `transaction.partition.verification.enable`, a producer's first transactional write here
    /// is appended only with the `guard` of a verification the coordinator answered and no
    /// marker of the producer has come since ([`Broker::start_verification`]); else
    /// NOT_ENOUGH_REPLICAS, and the client's retry is verified again.
    #[allow(clippy::too_many_arguments)]
    pub fn produce_verified(&mut self, name: &str, p: i32, records: Incoming, guard: Option<u64>, acks: i16, now: u64, out: &mut Vec<Action>) -> Result<Produced, Error> {
        self.produce_from(Origin::Wire(guard), name, p, records, acks, now, out)
    }

    /// Whether `records` (a produce's batch for `name`-`p`) is a producer's first
    /// transactional write to a partition this node leads, with verification on: then its
    /// verification starts here (a guard in the partition's producer state, which a marker of
    /// the producer removes) and the caller asks the coordinator before the append.
    pub fn start_verification(&mut self, name: &str, p: i32, records: &Incoming) -> Option<Unverified> {
        if !self.config.txns.partition_verification {
            return None;
        }
        let h = batch::read_header(&records.bytes).ok().filter(|h| h.is_transactional() && !h.is_control() && h.producer_id >= 0)?;
        let guard = self.next_guard;
        let (_, part) = self.partitions.get_mut_named(name, p)?;
        if !part.replication.is_leader() || part.producers.has_open_txn(h.producer_id) {
            return None;
        }
        part.producers.guard(h.producer_id, guard);
        self.next_guard += 1;
        Some(Unverified { producer_id: h.producer_id, epoch: h.producer_epoch, guard })
    }

    /// A coordinator's own append to its state topic, with acks=all: as a client's, but a
    /// transactional batch without a sequence (a transactional offset commit) is checked for
    /// its producer epoch alone.
    pub fn produce_for_coordinator(&mut self, name: &str, p: i32, records: &[u8], now: u64, out: &mut Vec<Action>) -> Result<Produced, Error> {
        self.produce_from(Origin::Coordinator, name, p, Incoming::new(Bytes::copy_from_slice(records)), -1, now, out)
    }

    #[allow(clippy::too_many_arguments)]
    fn produce_from(&mut self, origin: Origin, name: &str, p: i32, records: Incoming, acks: i16, now: u64, out: &mut Vec<Action>) -> Result<Produced, Error> {
        if !matches!(acks, -1..=1) {
            return Err(Error::InvalidRequiredAcks(acks));
        }
        // One lookup for the whole append: at thousands of partitions each produce finds its
        // partition's state cold in the caches, and every further lookup walks the map again.
        let window = self.config.producer_window();
        let verifies = self.config.txns.partition_verification;
        let rules = self.config.rules();
        let me = self.config.node_id;
        let Some((topic, part)) = self.partitions.get_mut_named(name, p) else { return Err(self.missing(name, p)) };
        part.check_lead(-1)?;
        let (isr, min) = (part.replication.isr.len() as i32, part.min_insync);
        if acks == -1 && isr < min {
            return Err(Error::NotEnoughReplicas { isr, min });
        }
        let header = batch::read_header(&records.bytes)?;
        if header.is_control() {
            // Markers come from transaction coordinators (WriteTxnMarkers), never from clients.
            return Err(Error::Batch(crate::log::BatchError::BadRecords("clients may not write control batches")));
        }
        batch::within_size(records.bytes.len(), part.log.config().max_message_bytes)?;
        let h = records.checked.unwrap_or_else(|| batch::check(&records.bytes))?;
        if part.log.config().cleanup.compact && crate::log::clean::records(&records.bytes).is_ok_and(|rs| rs.iter().any(|r| r.key.is_none())) {
            // Kafka's rule: compaction keeps the latest record per key, so a keyless one has no
            // place (INVALID_RECORD; CORRUPT_MESSAGE for old clients). Every codec is read
            // here: the batch check decompressed the batch within its bound just before.
            return Err(Error::Batch(crate::log::BatchError::BadRecords("a compacted topic accepts only records with a key")));
        }
        if let Origin::Wire(guard) = origin {
            if verifies && h.is_transactional() && !part.producers.has_open_txn(h.producer_id) && !guard.is_some_and(|g| part.producers.take_guard(h.producer_id, g)) {
                return Err(Error::TxnVerificationOwed);
            }
        }
        let epoch = part.replication.leader_epoch;
        let verdict = match origin {
            Origin::Coordinator if h.base_sequence < 0 && h.is_transactional() => part.producers.check_coordinator(&h).map(|()| Verdict::Append)?,
            _ => part.producers.check_in(&h, window)?,
        };
        if let Verdict::Duplicate(seen) = verdict {
            let start = part.log_start_offset();
            return Ok(Produced { base_offset: seen.base_offset, last_offset: seen.last_offset, log_start_offset: start, leader_epoch: epoch, log_append_time: -1, duplicate: true, log: Some(part.log.serial()) });
        }
        let bytes = records.bytes.to_vec();
        if rules.appends_after_ack() {
            return self.defer(name, p, h, bytes);
        }
        // Owned: the write-behind stages the stamped batch without copying it again.
        let appended = part.log.append_owned(bytes, epoch, now);
        if appended.is_err() {
            self.due.logs.note(topic, p, &part.log, part.high_watermark());
        }
        let (info, bytes) = appended?;
        let stamped = batch::read_header(&bytes)?;
        part.record_appended(&stamped, &bytes)?;
        debug_assert_eq!(stamped.base_offset, info.base_offset);
        part.after_leader_append(&self.config.observer, me, name, p, now, out);
        // A flush.ms deadline, a roll or a higher mark may bring time-driven work (`due`).
        self.due.logs.note(topic, p, &part.log, part.high_watermark());
        let start = part.log_start_offset();
        // Kafka answers the stamped time when the topic uses LogAppendTime, else -1.
        let log_append_time = if part.log.config().log_append_time { info.max_timestamp } else { -1 };
        if !matches!(origin, Origin::Coordinator) {
            self.stats.produced(name, bytes.len(), info.last_offset - info.base_offset + 1);
        }
        rules.after_append(info.base_offset, acks)?;
        Ok(Produced { base_offset: info.base_offset, last_offset: info.last_offset, log_start_offset: start, leader_epoch: epoch, log_append_time, duplicate: false, log: Some(part.log.serial()) })
    }

    /// The planted `AckBeforeAppend`'s produce: acknowledge now, append at the next tick.
    fn defer(&mut self, name: &str, p: i32, h: BatchHeader, bytes: Vec<u8>) -> Result<Produced, Error> {
        let pending: i64 = self.deferred.iter().filter(|(t, q, _)| t == name && *q == p).filter_map(|(_, _, b)| batch::read_header(b).ok()).map(|h| h.records_count as i64).sum();
        let part = self.local_mut(name, p)?;
        let base_offset = part.leo() + pending;
        part.producers.record(&BatchHeader { base_offset, ..h });
        let produced = Produced {
            base_offset,
            last_offset: base_offset + h.last_offset_delta as i64,
            log_start_offset: part.log_start_offset(),
            leader_epoch: part.replication.leader_epoch,
            log_append_time: -1,
            duplicate: false,
            log: None,
        };
        self.deferred.push((name.to_string(), p, bytes));
        Ok(produced)
    }

    /// For an acks=all produce: `Ok(true)` once the high watermark passed `produced`, `Ok(false)`
    /// while waiting, an error when the leadership it was appended under ended, or the ISR
    /// shrank below min.insync.replicas by the time it was replicated.
    pub fn replicated(&self, name: &str, p: i32, produced: &Produced) -> Result<bool, Error> {
        let rules = self.config.rules();
        if rules.acks_all_skips_isr() {
            return Ok(true);
        }
        let part = self.led(name, p, produced.leader_epoch).map_err(|e| rules.ended_leadership(e))?;
        if !rules.replicated(part.high_watermark(), produced.last_offset) {
            return part.lost(produced).map(|()| false);
        }
        let (isr, min) = (part.replication.isr.len() as i32, part.min_insync);
        if isr < min {
            return Err(Error::NotEnoughReplicasAfterAppend { isr, min });
        }
        Ok(true)
    }

    /// For an acks=1 produce: `Ok(true)` once the log's jobs wrote `produced` (at once where
    /// writes are not deferred), `Ok(false)` while waiting; KAFKA_STORAGE_ERROR when the log
    /// failed first (`Partition::lost`), NOT_LEADER_OR_FOLLOWER when a truncation removed it.
    pub fn written(&self, name: &str, p: i32, produced: &Produced) -> Result<bool, Error> {
        let part = self.partitions.get(name, p).ok_or(Error::NotLeaderOrFollower)?;
        if part.leo() <= produced.last_offset {
            return Err(Error::NotLeaderOrFollower);
        }
        part.lost(produced)?;
        Ok(part.log.written_end() > produced.last_offset)
    }

    /// Whole batches from `offset`, within `max_bytes` (at least one batch when `min_one`,
    /// Kafka's KIP-74 rule for the first partition of a response). A consumer reads up to the
    /// high watermark; a follower reads to the log end, and its fetch offset tells the leader
    /// how far it has replicated (a moved high watermark adds [`Action::Wake`] to `out`).
    #[allow(clippy::too_many_arguments)]
    pub fn fetch(&mut self, name: &str, p: i32, offset: i64, max_bytes: usize, min_one: bool, who: Fetcher, now: u64, out: &mut Vec<Action>) -> Result<Fetched, Error> {
        let rules = self.config.rules();
        let part = self.led(name, p, who.leader_epoch)?;
        let (leo, start) = (part.leo(), part.log_start_offset());
        if offset < start || offset > leo {
            return Err(Error::OffsetOutOfRange { requested: offset, start, end: leo });
        }
        let upper = match who.replica {
            Some(r) => {
                part.replication.check_fetch(r, who.leader_epoch).map_err(Error::Epoch)?;
                // A follower reads what this log wrote, never what is only staged (the
                // write-behind, `log::deferred`): a write that fails loses those batches here,
                // and a follower holding them would diverge from its leader within one epoch.
                // (Kafka's followers read the page cache, which holds only written bytes.)
                let leo = part.log.written_end();
                // A DeleteRecords may be waiting for this follower's start, as an acks=all
                // produce may be waiting for its log end: either moving wakes waiting requests.
                // (Only when one may be waiting: a wake changes when every waiting request is
                // looked at again, so needless ones would change what the simulator replays.)
                // (Its low watermark is looked at only once a DeleteRecords was asked: a follower
                // fetch visits every partition of its session, most of them idle.)
                let delete_waiting = part.delete_asked >= 0 && part.delete_asked > part.replication.low_watermark(start, |x| self.image.is_live(x));
                if rules.fetch_is_progress(who.again) {
                    let me = self.config.node_id;
                    // The fetch's registration (KIP-903): as Fetch v15+'s ReplicaState tells
                    // it, else as this broker's metadata knows it (Fetch v12, which this
                    // crate's followers send, does not carry it). An image behind a
                    // re-registration names the older epoch, which the controller then refuses;
                    // the reverse needs a fetch sent before a crash and first read here after
                    // the restart's registration reached this broker.
                    let broker_epoch = if who.broker_epoch >= 0 { who.broker_epoch } else { self.image.broker_epoch(r) };
                    let Some((topic, part)) = self.partitions.get_mut_named(name, p) else { return Err(self.missing(name, p)) };
                    let moved_start = who.log_start_offset >= 0 && part.replication.on_follower_log_start(r, who.log_start_offset);
                    let moved = part.replication.on_follower_fetch_counting(r, broker_epoch, offset, leo, part.counted_end(), now);
                    if moved {
                        part.observed(&self.config.observer, me, name, p, now);
                    }
                    if moved || (moved_start && delete_waiting) {
                        out.push(Action::Wake);
                    }
                    // (`due`) A replica outside the ISR may qualify now; a member's fetch only
                    // puts its own lag window's end later. A higher mark may let retention go on.
                    if !part.replication.in_isr(r) {
                        self.due.isr.at((topic.clone(), p), now);
                    }
                    if moved {
                        self.due.logs.note(topic, p, &part.log, part.high_watermark());
                    }
                }
                leo
            }
            None if who.read_committed => rules.committed_upper(rules.consumer_upper(part.high_watermark(), leo), part.last_stable_offset()),
            None => rules.consumer_upper(part.high_watermark(), leo),
        };
        let throttle = who.replica.and_then(|r| self.leader_throttle(name, p, r));
        let part = self.local(name, p)?;
        let records = if (max_bytes == 0 && !min_one) || offset >= upper {
            Records::default()
        } else {
            let r = match self.config.fetch_zero_copy {
                true => part.log.slice(offset, max_bytes.max(1), upper)?,
                false => Records::Memory(part.log.read(offset, max_bytes.max(1), upper)?.bytes),
            };
            if !min_one && r.len() > max_bytes { Records::default() } else { r }
        };
        let consumer = who.replica.is_none();
        let records = rules.served(records, consumer);
        let hw = rules.reported_high_watermark(part.high_watermark(), upper, consumer);
        let last_stable_offset = if consumer { part.last_stable_offset().min(hw) } else { hw };
        let aborted = if who.read_committed && !records.is_empty() { part.log.aborted_overlapping(offset, upper) } else { Vec::new() };
        if consumer {
            self.stats.fetched(name, records.len());
        }
        // KIP-73: a throttled follower outside the ISR is served nothing while the throttled
        // partitions together are over the rate (its next round asks again).
        let records = match throttle {
            Some(limit) if self.replication_rate.over(now, limit) => Records::default(),
            Some(_) => {
                self.replication_rate.record(now, records.len() as u64);
                records
            }
            None => records,
        };
        Ok(Fetched { high_watermark: hw, last_stable_offset, log_start_offset: start, records, aborted })
    }

    /// ListOffsets: -2 earliest, -1 latest (the high watermark, or for `read_committed` the
    /// last stable offset), -3 the record with the largest timestamp (KIP-734), -4 the earliest
    /// local offset (KIP-405: the log start, all of the log being local), -5 the latest tiered
    /// offset (KIP-1005: none, -1, nothing being tiered), else the first offset with a
    /// timestamp at or after `ts`. Returns (timestamp, offset); (-1, -1) when none. What a
    /// reader may see bounds the answers found by timestamp: the high watermark, or the LSO
    /// (read_committed), and the log start.
    pub fn list_offset(&self, name: &str, p: i32, ts: i64, epoch: i32, read_committed: bool) -> Result<(i64, i64), Error> {
        let part = self.led(name, p, epoch)?;
        let local_only = [list_offsets::earliest, list_offsets::earliest_local, list_offsets::latest_tiered];
        if !local_only.contains(&ts) && part.high_watermark() < part.replication.epoch_start() {
            // KIP-207: a new leader's high watermark lags until its followers fetch; answering
            // it as "latest" would send consumers back in the log.
            return Err(Error::OffsetNotAvailable);
        }
        let visible = if read_committed { part.last_stable_offset() } else { part.high_watermark() };
        let start = part.log_start_offset();
        Ok(match ts {
            list_offsets::earliest | list_offsets::earliest_local => (-1, start),
            list_offsets::latest => (-1, visible),
            list_offsets::latest_tiered => (-1, -1),
            list_offsets::max_timestamp => match part.log.offset_of_max_timestamp()? {
                Some((offset, found)) if offset >= start && offset < visible => (found, offset),
                _ => (-1, -1),
            },
            t if t < 0 => return Err(Error::InvalidConfig(format!("timestamp {t} is not a ListOffsets target"))),
            t => match part.log.offset_for_timestamp(t)? {
                // A match below the start DeleteRecords set is in the segment holding it:
                // records at and after the start come later, so they answer (Kafka searches
                // from the start; the timestamp of the record at the start is not looked up).
                Some((offset, _)) if offset < start && start < visible => (-1, start),
                Some((offset, found)) if offset >= start && offset < visible => (found, offset),
                _ => (-1, -1),
            },
        })
    }

    /// The leader epoch a ListOffsets answer of `offset` for target `ts` carries, as Kafka's
    /// (`UnifiedLog.fetchOffsetByTimestamp`, `Partition.fetchOffsetForTimestamp`): none (-1)
    /// when nothing was found (`offset` -1: -3 on a log without timestamps, a timestamp past
    /// every record, -5 without tiered storage); for -1 the current epoch; for -2, and -4
    /// (every segment local, so Kafka answers it as -2), the log's earliest epoch when it
    /// starts at or before the log start; for -3 and a timestamp the epoch the found record
    /// was written in. A leader's own epoch counts from where its leadership began, written
    /// under or not, as Kafka's cache holds it from the election on.
    pub fn list_offset_epoch(&self, name: &str, p: i32, ts: i64, offset: i64) -> i32 {
        let Ok(part) = self.local(name, p) else { return -1 };
        let current = part.replication.leader_epoch;
        let written = part.log.epochs().entries();
        let own = written.last().is_none_or(|e| current > e.epoch).then(|| EpochEntry { epoch: current, start_offset: part.replication.epoch_start() });
        let mut epochs = written.iter().copied().chain(own);
        match ts {
            _ if offset < 0 => -1,
            list_offsets::latest => current,
            list_offsets::earliest | list_offsets::earliest_local => epochs.next().filter(|e| e.start_offset <= part.log_start_offset()).map_or(-1, |e| e.epoch),
            _ => epochs.take_while(|e| e.start_offset <= offset).last().map_or(-1, |e| e.epoch),
        }
    }

    /// The leader epoch this node has for a partition it leads.
    pub fn leader_epoch(&self, name: &str, p: i32) -> i32 {
        self.local(name, p).map_or(-1, |x| x.replication.leader_epoch)
    }

    /// OffsetForLeaderEpoch at the leader: the end offset of `epoch` in this log (KIP-101).
    pub fn end_offset_for_epoch(&self, name: &str, p: i32, epoch: i32, current: i32) -> Result<(i32, i64), Error> {
        let part = self.led(name, p, current)?;
        Ok(part.log.end_offset_for_epoch(epoch, Some(part.replication.leader_epoch)))
    }

    /// ISR changes to send the controller, one per partition at most.
    /// Only the leaders with a check due are looked at (`due`): every one after new metadata
    /// or in a round with a shorter lag window, else those whose window end or retry came, or
    /// that a fetch from outside the ISR or a controller's answer touched.
    pub fn isr_proposals(&mut self, now: u64) -> Vec<(String, i32, IsrProposal)> {
        self.isr_proposals_within(now, self.config.replica_lag_ms_max)
    }

    /// [`Broker::isr_proposals`] with a replica-lag window of `lag` ms for this round: the
    /// shell passes a fifth of `replica_lag_ms_max` when BUGGIFY's `ShortLag` fires
    /// (`server::peers`), so the draw is the shell's and this decision only reads its input.
    pub fn isr_proposals_within(&mut self, now: u64, lag: u64) -> Vec<(String, i32, IsrProposal)> {
        let window = self.config.replica_lag_ms_max;
        let short = lag < window;
        let keys: Vec<(std::sync::Arc<str>, i32)> = match std::mem::take(&mut self.due.isr_all) || short {
            true => {
                self.due.isr = Default::default(); // every entry is visited now
                self.partitions.iter().map(|((n, p), _)| (n.clone(), p)).collect()
            }
            false => self.due.isr.take(now),
        };
        let image = &self.image;
        let mut out = Vec::new();
        for (name, p) in keys {
            let Some(part) = self.partitions.get_mut(&name, p) else { continue };
            if let Some(prop) = part.replication.isr_proposal_among(now, lag, |r, epoch| image.is_live(r) && image.broker_epoch(r) == epoch) {
                out.push((name.to_string(), p, prop));
            }
            // Due again when its members' windows end (the full window: a shortened round is
            // a BUGGIFY choice of that round only), or at a retry.
            if let Some(t) = part.replication.isr_check_at(now, window) {
                self.due.isr.at((name, p), t);
            }
        }
        out
    }

    /// What the controller link heard of an ISR proposal ([`IsrReply::read`] by this broker's
    /// rules). A committed one may move the high watermark.
    pub fn isr_reply(&mut self, name: &str, p: i32, reply: &IsrReply, now: u64) -> Vec<Action> {
        match reply.read(self.config.rules()) {
            Some(answer) => self.isr_answer(name, p, answer, now),
            None => Vec::new(),
        }
    }

    /// What became of an ISR proposal. A committed one may move the high watermark.
    pub fn isr_answer(&mut self, name: &str, p: i32, answer: IsrAnswer<'_>, now: u64) -> Vec<Action> {
        let me = self.config.node_id;
        let Some((topic, part)) = self.partitions.get_mut_named(name, p) else { return Vec::new() };
        let leo = part.counted_end();
        // Whatever the answer, the partition's ISR is looked at again next round (`due`).
        self.due.isr.at((topic.clone(), p), 0);
        match answer {
            IsrAnswer::Committed(i) => {
                let before = part.replication.isr.len();
                part.replication.on_isr_committed(&i.isr, i.leader_epoch, i.partition_epoch, leo);
                self.stats.isr_changed(before, part.replication.isr.len());
                part.observed(&self.config.observer, me, name, p, now);
                self.due.logs.note(topic, p, &part.log, part.high_watermark());
                return vec![Action::Wake];
            }
            IsrAnswer::Refused => part.replication.on_isr_failed(),
            IsrAnswer::Stale => part.replication.on_isr_stale(),
            IsrAnswer::Lost => self.config.rules().isr_answer_lost(&mut part.replication),
        }
        Vec::new()
    }

    /// The rate a fetch by follower `r` of `name`-`p` is held to, if it is throttled here
    /// (KIP-73): `r` is out of the ISR, the topic's `leader.replication.throttled.replicas`
    /// names this partition on this broker, and this broker has a `leader.replication.throttled.rate`.
    fn leader_throttle(&self, name: &str, p: i32, r: i32) -> Option<u64> {
        use crate::metadata::throttles;
        let me = self.config.node_id;
        if self.local(name, p).ok()?.replication.in_isr(r) || !throttles::names(self.image.topics.get(name)?.config.get(throttles::leader_replicas), p, me) {
            return None;
        }
        throttles::rate(&self.image.broker_configs, me, throttles::leader_rate)
    }

    /// The follower's side of KIP-73: the rate this replica of `name`-`p` fetches at, if it is
    /// throttled here — out of the ISR, named on this broker by the topic's
    /// `follower.replication.throttled.replicas`, with a `follower.replication.throttled.rate`.
    fn follower_throttle(&self, name: &str, p: i32) -> Option<u64> {
        use crate::metadata::throttles;
        let me = self.config.node_id;
        let topic = self.image.topics.get(name)?;
        if topic.partitions.get(usize::try_from(p).ok()?)?.isr.contains(&me) || !throttles::names(topic.config.get(throttles::follower_replicas), p, me) {
            return None;
        }
        throttles::rate(&self.image.broker_configs, me, throttles::follower_rate)
    }

    /// Whether this follower's fetches of `name`-`p` wait this round: throttled, and what its
    /// throttled partitions fetched is over the rate.
    pub fn follower_held(&self, name: &str, p: i32, now: u64) -> bool {
        self.follower_throttle(name, p).is_some_and(|limit| self.follower_rate.over(now, limit))
    }

    /// `bytes` of `name`-`p` fetched from its leader: counted when the partition is throttled.
    pub fn follower_fetched(&mut self, name: &str, p: i32, bytes: usize, now: u64) {
        if self.follower_throttle(name, p).is_some() {
            self.follower_rate.record(now, bytes as u64);
        }
    }
}
