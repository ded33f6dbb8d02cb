//! Test support for the coordinator's unit tests: a coordinator leading offsets partition 0
//! over an in-memory log, and its appends added to that log. Built for tests only.

use super::*;
use bytes::Bytes;

/// A coordinator with `config` and `topics` leading offsets partition 0 at `leader_epoch`,
/// having loaded `log`; and the work the load left (its appends, if any).
pub(super) fn leading(config: GroupConfig, topics: BTreeMap<String, ([u8; 16], i32)>, log: &[Loaded], leader_epoch: i32) -> (Coordinator, Work) {
    let mut c = Coordinator::new(config);
    c.topics = topics;
    let mut work = Work::default();
    c.set_partitions(1, 0, &mut work);
    c.take_over(0, leader_epoch, 0);
    c.load(0, log.to_vec(), log.len() as i64, true, 0, &mut work);
    (c, work)
}

/// Appends `a`'s records to `log` and tells `c` where they landed (not replicated yet); the
/// records appended.
pub(super) fn append(c: &mut Coordinator, log: &mut Vec<Loaded>, a: Append, leader_epoch: i32, now: u64) -> Vec<Loaded> {
    let records = crate::client::consumer::decode_records(Bytes::from(a.batch)).expect("our batches decode");
    let batch: Vec<Loaded> = records.into_iter().map(|(_, k, v)| Loaded::Record { key: k.expect("keyed"), value: v, producer: None }).collect();
    log.extend(batch.iter().cloned());
    let at = Appended { last_offset: log.len() as i64 - 1, leader_epoch, log: None };
    c.appended(a.write, Ok(at), now, &mut Work::default());
    batch
}
