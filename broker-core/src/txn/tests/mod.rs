//! The transaction coordinator driven directly: each test is a script of requests, clock steps,
//! replication of the state partition and marker acknowledgements, asserting the exact answers,
//! the records written (decoded from the appended batches) and the marker jobs.

use super::records::{decode_record, encode_key, encode_value, TxnValue};
use super::*;
use crate::kafka::TxnVersion;
use bytes::Bytes;

/// The coordinator epoch (leader epoch of the state partition) the driver leads under.
const coordinator_epoch: i32 = 7;
const minute: i32 = 60_000;

/// A coordinator leading the one state partition, with the partition's log.
struct Driver {
    c: Coordinator,
    now: i64,
    next_producer_id: i64,
    /// Every record appended, in order: the state partition's log.
    log: Vec<(Bytes, Option<Bytes>)>,
    answers: BTreeMap<Ticket, Answer>,
    markers: Vec<MarkerJob>,
    lines: Vec<String>,
    /// The error the next appends fail with, if any.
    fail: Option<Code>,
}

fn pe(producer_id: i64, epoch: i16) -> ProducerIdAndEpoch {
    ProducerIdAndEpoch { producer_id, epoch }
}

fn tp(t: &str, p: i32) -> (String, i32) {
    (t.to_string(), p)
}

fn value(state: TxnState, producer_id: i64, epoch: i16, partitions: &[(String, i32)], last_update_ms: i64, start_ms: i64) -> TxnValue {
    TxnValue { producer_id, producer_epoch: epoch, timeout_ms: minute, state, partitions: partitions.iter().cloned().collect(), last_update_ms, start_ms, previous_producer_id: -1, next_producer_id: -1, client_version: 0 }
}

impl Driver {
    fn new() -> Driver {
        let mut c = Coordinator::new(TxnConfig::default());
        let mut work = Work::default();
        c.set_partitions(1, 0, &mut work);
        c.take_over(0, coordinator_epoch, 0);
        c.load(0, Vec::new(), 0, true, 0, &mut work);
        Driver { c, now: 0, next_producer_id: 1000, log: Vec::new(), answers: BTreeMap::new(), markers: Vec::new(), lines: work.lines, fail: None }
    }

    /// The shell's part: appends every record at once (or fails it), keeps what comes out.
    fn perform(&mut self, work: Work) {
        self.answers.extend(work.answers);
        self.markers.extend(work.markers);
        self.lines.extend(work.lines);
        for a in work.appends {
            let mut more = Work::default();
            match self.fail {
                Some(code) => self.c.appended(a.write, Err(code), self.now, &mut more),
                None => {
                    assert_eq!(a.partition, 0);
                    let records = crate::client::consumer::decode_records(Bytes::from(a.batch)).expect("our batches decode");
                    assert_eq!(records.len(), 1, "one record per write");
                    for (_, k, v) in records {
                        self.log.push((k.expect("keyed"), v));
                    }
                    self.c.appended(a.write, Ok(crate::group::Appended { last_offset: self.log.len() as i64 - 1, leader_epoch: coordinator_epoch, log: None }), self.now, &mut more);
                }
            }
            self.perform(more);
        }
    }

    /// The state partition's high watermark passes every append.
    fn replicate(&mut self) {
        let mut work = Work::default();
        self.c.settle(|_, _| Ok(true), self.now, &mut work);
        self.perform(work);
    }

    fn take(&mut self, t: Ticket) -> Answer {
        self.answers.remove(&t).unwrap_or_else(|| panic!("ticket {t} not answered"))
    }

    fn init_expecting(&mut self, id: &str, timeout_ms: i32, expected: Option<ProducerIdAndEpoch>) -> Result<Pending<ProducerIdAndEpoch>, Code> {
        let mut work = Work::default();
        let next = &mut self.next_producer_id;
        let r = self.c.init_producer_id(
            self.now,
            id,
            timeout_ms,
            expected,
            || {
                *next += 1;
                Ok(*next - 1)
            },
            &mut work,
        );
        self.perform(work);
        r
    }

    fn init(&mut self, id: &str, timeout_ms: i32) -> Result<Pending<ProducerIdAndEpoch>, Code> {
        self.init_expecting(id, timeout_ms, None)
    }

    fn add(&mut self, id: &str, producer_id: i64, epoch: i16, partitions: &[(String, i32)]) -> Pending<PartitionResults> {
        let mut work = Work::default();
        let r = self.c.add_partitions(self.now, id, producer_id, epoch, partitions, &mut work);
        self.perform(work);
        r
    }

    /// EndTxn v0–4 (the classic protocol).
    fn end(&mut self, id: &str, producer_id: i64, epoch: i16, commit: bool) -> Result<Pending<()>, Code> {
        self.end_as(TxnVersion::Classic, id, producer_id, epoch, commit).map(|p| match p {
            Pending::Now(_) => Pending::Now(()),
            Pending::Wait(t) => Pending::Wait(t),
        })
    }

    /// EndTxn asking for `version` (v5: KIP-890's).
    fn end_as(&mut self, version: TxnVersion, id: &str, producer_id: i64, epoch: i16, commit: bool) -> Result<Pending<ProducerIdAndEpoch>, Code> {
        let mut work = Work::default();
        let next = &mut self.next_producer_id;
        let new_id = || {
            *next += 1;
            Ok(*next - 1)
        };
        let r = self.c.end_txn(self.now, id, producer_id, epoch, commit, version, new_id, &mut work);
        self.perform(work);
        r
    }

    fn ack(&mut self, job: u64, partitions: &[(String, i32)]) {
        let mut work = Work::default();
        self.c.markers_written(job, partitions, self.now, &mut work);
        self.perform(work);
    }

    fn tick(&mut self) -> Option<i64> {
        let mut work = Work::default();
        let next = self.c.tick(self.now, &mut work);
        self.perform(work);
        next
    }

    /// InitProducerId, written and answered.
    fn ready(&mut self, id: &str, timeout_ms: i32) -> ProducerIdAndEpoch {
        let Ok(Pending::Wait(t)) = self.init(id, timeout_ms) else { panic!("init waits") };
        self.replicate();
        match self.take(t) {
            Answer::Producer(Ok(p)) => p,
            other => panic!("init answered {other:?}"),
        }
    }

    /// A producer with `partitions` in an open transaction.
    fn begin(&mut self, id: &str, partitions: &[(String, i32)]) -> ProducerIdAndEpoch {
        let p = self.ready(id, minute);
        let Pending::Wait(t) = self.add(id, p.producer_id, p.epoch, partitions) else { panic!("add waits") };
        self.replicate();
        assert_eq!(self.take(t), Answer::Partitions(partitions.iter().map(|p| (p.clone(), Ok(()))).collect()));
        p
    }

    /// The last record written, decoded.
    fn last(&self) -> (String, Option<TxnValue>) {
        let (k, v) = self.log.last().expect("a record");
        decode_record(k, v.as_deref()).expect("our record decodes")
    }

    fn state(&self, id: &str) -> Result<&'static str, Code> {
        self.c.describe(id).map(|d| d.state)
    }
}

mod failover;
mod flows;
mod kip890;
mod refusals;
