//! A coordinator's load of its state partition (`__consumer_offsets`, `__transaction_state`),
//! a step at a time, as a job the shell runs off the node's gate (docs/architecture.md, "IO at
//! the edge"). A decision that finds a partition loading with something left to read
//! ([`hand_out`], run as the coordinator's work is finished) bounds the step's region of the
//! log with `Log::slice` — about `offsets_load_bytes_per_step` of whole batches, found with the
//! few batch headers a zero-copy fetch reads — and returns it as [`Action::Load`]. The job
//! ([`LoadJob::run`]) reads the region, checks it as `Log::read` checks what it serves, and
//! decodes it (decompression included) into [`Loaded`]; its report (`Input::Loaded`,
//! [`loaded`]) hands the records to the coordinator only if it still loads that partition at
//! that leader epoch from that offset, in the log the job read — otherwise the report is
//! dropped and the coordinator asks again. At most one job per partition is out, whatever
//! leadership handed it out (`group::hosting`); a step that failed to read is asked again on
//! the coordinator's next tick, never skipped.
//!
//! What it must never do: read a batch inside a decision, or hand a step's records to a
//! coordinator whose load has moved on.

use super::coordinator_link::{perform, sync_ownership, Hosted};
use crate::broker::{Action, Broker};
use crate::constants::offsets_load_bytes_per_step;
use crate::group::Loaded;
use crate::log::batch::{self, control};
use crate::log::region::Records;
use crate::replication::Role;
use bytes::Bytes;
use kafka_protocol::records::RecordBatchDecoder;

/// Which step a job is, and of what: matched against the coordinator when the report comes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadStamp {
    /// The coordinator's number for the job (`Hosting::load_out`).
    pub id: u64,
    pub leader_epoch: i32,
    /// The log it reads (`Log::serial`): a log reopened since is another.
    pub log: u64,
    /// The offset the step loads from.
    pub next: i64,
}

/// A load step for the shell to run off the node's gate: whole batches of the state log as
/// regions of its segment files, read when the job runs (a region holds its file open, so a
/// segment deleted or cleaned meanwhile keeps its bytes; one cut meanwhile refuses to read).
/// Two are equal when their stamps are.
#[derive(Debug, Clone)]
pub struct LoadJob {
    pub stamp: LoadStamp,
    records: Records,
}

impl PartialEq for LoadJob {
    fn eq(&self, other: &Self) -> bool {
        self.stamp == other.stamp
    }
}

impl Eq for LoadJob {}

/// What a step read: the records and markers at or after its `next`, in log order; the offset
/// after them; whether it read nothing; and why batches that did not decode were skipped.
/// Whether the load is done is the report's decision's to say: the log may have grown while
/// the job ran (a transaction marker the coordinator left to the load), so only the log end
/// under the gate tells.
#[derive(Debug)]
pub struct LoadStep {
    pub loaded: Vec<Loaded>,
    pub after: i64,
    pub read_nothing: bool,
    pub undecodable: Vec<String>,
}

/// A load job's report: its stamp, and what it read or why it could not.
#[derive(Debug)]
pub struct LoadDone {
    pub stamp: LoadStamp,
    pub result: Result<LoadStep, String>,
}

impl LoadJob {
    /// Reads, checks and decodes the step (blocking: reads the segment files).
    pub fn run(&self) -> LoadDone {
        let result = self.records.to_bytes().map_err(|e| e.to_string()).and_then(|bytes| {
            check(&bytes)?;
            Ok(decode(&bytes, self.stamp.next))
        });
        LoadDone { stamp: self.stamp, result }
    }

    /// The report of a job whose task ended without one: the step is read again.
    pub fn lost(&self, why: String) -> LoadDone {
        LoadDone { stamp: self.stamp, result: Err(why) }
    }

    /// Bytes of the state log the job reads.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether the job reads nothing (a step is handed out only with something to read).
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }
}

/// Checks a region's bytes as `Log::read` checks what it serves (a region is bounded by batch
/// headers only): whole batches back to back, each one's length, magic and CRC, and base
/// offsets running on. Bad bytes are never loaded: the step fails and is read again.
fn check(bytes: &[u8]) -> Result<(), String> {
    let (mut at, mut expected) = (0usize, None);
    for h in batch::whole_batches(bytes).map_err(|e| e.to_string())? {
        if let Some(e) = expected.filter(|&e| e != h.base_offset) {
            return Err(format!("batch base offset {} where {e} was expected", h.base_offset));
        }
        expected = Some(h.next_offset());
        at += h.size;
    }
    match at == bytes.len() {
        true => Ok(()),
        false => Err(format!("the batch at byte {at} of the step's {} runs past its region", bytes.len())),
    }
}

/// Decodes one step's whole batches (from the one holding `next`): the records and markers at
/// or after `next`, and the offset after them. A compacted batch may hold none of its offsets'
/// records: the load moves past its last offset all the same. A batch that does not decode
/// (one its CRC vouches for, in a codec the decoder lacks) is skipped alone, with a line: the
/// batches after it still load.
pub fn decode(bytes: &Bytes, next: i64) -> LoadStep {
    let mut loaded = Vec::new();
    let (mut after, mut undecodable) = (next, Vec::new());
    let mut rest = bytes.clone();
    while !rest.is_empty() {
        let whole = rest.clone();
        match RecordBatchDecoder::decode(&mut rest) {
            Ok(set) => {
                let raw = &whole[..whole.len() - rest.len()];
                let Ok(h) = batch::read_header(raw) else { continue };
                after = after.max(h.next_offset());
                if h.last_offset() < next {
                    continue;
                }
                if h.is_control() {
                    if let Ok(control::Control::Marker { kind, .. }) = control::read_control(raw) {
                        loaded.push(Loaded::Marker { producer_id: h.producer_id, commit: kind == control::MarkerKind::Commit });
                    }
                    continue;
                }
                let producer = h.is_transactional().then_some(h.producer_id);
                for r in set.records {
                    after = after.max(r.offset + 1);
                    if r.offset >= next {
                        loaded.push(Loaded::Record { key: r.key.unwrap_or_default(), value: r.value, producer });
                    }
                }
            }
            Err(e) => {
                // `check` vouched for the batch's header: skip to the next one.
                let Ok(h) = batch::read_header(&whole) else { break };
                undecodable.push(format!("the batch at offsets {}..={} does not decode ({e}); skipped", h.base_offset, h.last_offset()));
                after = after.max(h.next_offset());
                rest = whole.slice(h.size.min(whole.len())..);
            }
        }
    }
    LoadStep { loaded, read_nothing: bytes.is_empty(), after, undecodable }
}

/// Ends, inside the decision, the load of each partition `c` loads with nothing left to read
/// (a new partition's, or one whose log starts at its end): that reads no byte, and a new
/// partition serves its first request.
pub fn finish_empty<C: Hosted>(b: &Broker, c: &mut C, now: u64, work: &mut C::Work) {
    for (p, _, next) in c.hosting().loads_due() {
        let Some(part) = b.partitions().get(C::TOPIC, p) else { continue };
        if next.max(part.log_start_offset()) >= part.log.log_end_offset() {
            c.load(p, Vec::new(), next, true, now, work);
        }
    }
}

/// Hands out a job for each partition `c` loads with something to read and no job out.
pub fn hand_out<C: Hosted>(b: &Broker, c: &mut C, work: &mut C::Work, out: &mut Vec<Action>) {
    let topic = C::TOPIC;
    for (p, leader_epoch, next) in c.hosting().loads_due() {
        let Some(part) = b.partitions().get(topic, p) else { continue };
        let r = &part.replication;
        // Led no more, or at another epoch: the next `sync_ownership` resigns it.
        if r.role != Role::Leader || r.leader_epoch != leader_epoch {
            continue;
        }
        let (from, end) = (next.max(part.log_start_offset()), part.log.log_end_offset());
        if from >= end {
            continue; // `finish_empty`'s
        }
        match part.log.slice(from, offsets_load_bytes_per_step, end) {
            Ok(records) => {
                let id = c.hosting().load_out(p);
                let stamp = LoadStamp { id, leader_epoch, log: part.log.serial(), next };
                out.push(Action::Load { topic: topic.to_string(), partition: p, job: LoadJob { stamp, records } });
            }
            Err(e) => {
                // The log answers again once its disk does; the partition stays loading meanwhile.
                C::line(work, format!("{topic}-{p}: loading: {e}"));
                c.hosting().load_failed(p);
            }
        }
    }
}

/// A load job's report (`Input::Loaded`) for coordinator `c`: ownership brought up to date,
/// the step handed over if it is still the one `c` waits for, and the next step handed out.
pub fn loaded<C: Hosted>(b: &mut Broker, c: &mut C, p: i32, done: LoadDone, now: u64) -> Vec<Action> {
    let mut work = C::Work::default();
    sync_ownership(b, c, now, &mut work);
    take(b, c, p, done, now, &mut work);
    let mut out = Vec::new();
    perform(b, c, work, now, &mut out);
    out
}

/// Hands the report's records to `c` if it still loads `p` from the job's offset under the
/// job's leadership, in the log the job read; drops them otherwise (`c` asks again).
fn take<C: Hosted>(b: &Broker, c: &mut C, p: i32, done: LoadDone, now: u64, work: &mut C::Work) {
    let s = done.stamp;
    let awaited = c.hosting().load_back(p, s.id, s.leader_epoch, s.next);
    let same_log = b.partitions().get(C::TOPIC, p).is_some_and(|part| part.log.serial() == s.log && part.replication.leader_epoch == s.leader_epoch);
    if !(awaited && same_log) {
        return;
    }
    match done.result {
        Err(e) => {
            C::line(work, format!("{}-{p}: loading: {e}", C::TOPIC));
            c.hosting().load_failed(p);
        }
        Ok(step) => {
            for why in step.undecodable {
                C::line(work, format!("{}-{p}: {why}", C::TOPIC));
            }
            // Done only at the log end as it is now: what was appended while the job ran (a
            // transaction marker `txn_marker` left to the load) is the next step's.
            let end = b.partitions().get(C::TOPIC, p).map_or(i64::MAX, |part| part.log.log_end_offset());
            c.load(p, step.loaded, step.after, step.read_nothing || step.after >= end, now, work);
        }
    }
}
