//! Where the group coordinator meets the broker: which `__consumer_offsets` partitions this
//! node leads (so which groups it coordinates), loading a partition's groups from its log, and
//! performing the coordinator's writes as acks=all appends whose replication settles them.
//! Called with the broker locked, then the coordinator (always in that order).

use crate::broker::{Action, Broker, Level, Produced};
use crate::constants::offsets_load_bytes_per_step;
use crate::group::{offsets_topic, Coordinator, Work};
use crate::kafka::Code;
use crate::replication::Role;
use kafka_protocol::records::RecordBatchDecoder;

/// Brings the coordinator in line with the partitions this node leads now, and loads one step
/// of each partition still loading.
pub fn sync_ownership(b: &Broker, c: &mut Coordinator, now: u64, work: &mut Work) {
    let partitions = b.image().topics.get(offsets_topic).map_or(0, |t| t.partitions.len() as i32);
    c.set_partitions(partitions, now, work);
    let led: Vec<(i32, i32, i64)> = (0..partitions)
        .filter_map(|p| {
            let part = b.partitions().get(offsets_topic, p)?;
            let r = &part.replication;
            (r.role == Role::Leader).then_some((p, r.leader_epoch, part.log_start_offset()))
        })
        .collect();
    let owned = c.owned();
    for (p, epoch) in &owned {
        if !led.iter().any(|(q, e, _)| q == p && e == epoch) {
            c.resign(*p, now, work);
        }
    }
    for (p, epoch, start) in &led {
        if owned.get(p) != Some(epoch) {
            c.take_over(*p, *epoch, *start);
        }
    }
    for (p, next) in c.loading() {
        load_step(b, c, p, next, now, work);
    }
}

/// Reads up to one step of offsets partition `p` from `next` and hands its records over.
fn load_step(b: &Broker, c: &mut Coordinator, p: i32, next: i64, now: u64, work: &mut Work) {
    let Some(part) = b.partitions().get(offsets_topic, p) else { return };
    let end = part.log.log_end_offset();
    let read = match part.log.read(next.max(part.log_start_offset()), offsets_load_bytes_per_step, end) {
        Ok(r) => r.bytes,
        Err(e) => {
            // The log answers again once its disk does; the partition stays loading meanwhile.
            work.lines.push(format!("{offsets_topic}-{p}: loading groups: {e}"));
            return;
        }
    };
    let mut records = Vec::new();
    let mut after = next;
    let mut bytes = read.clone();
    while !bytes.is_empty() {
        let whole = bytes.clone();
        match RecordBatchDecoder::decode(&mut bytes) {
            Ok(set) => {
                // A compacted batch may hold none of its offsets' records: the load moves past
                // the batch's last offset all the same.
                if let Ok(h) = crate::log::batch::read_header(&whole[..whole.len() - bytes.len()]) {
                    after = after.max(h.next_offset());
                }
                for r in set.records {
                    after = after.max(r.offset + 1);
                    if r.offset >= next {
                        records.push((r.key.unwrap_or_default(), r.value));
                    }
                }
            }
            Err(e) => {
                work.lines.push(format!("{offsets_topic}-{p}: a batch at or after offset {after} does not decode ({e}); skipped"));
                after = end;
                break;
            }
        }
    }
    let done = read.is_empty() || after >= end;
    c.load(p, records, after, done, now, work);
}

/// Performs the coordinator's work: appends its batches to the offsets topic (as the leader,
/// acks=all), settles writes the high watermark has passed, and turns the rest into actions.
pub fn perform(b: &mut Broker, c: &mut Coordinator, mut work: Work, now: u64, out: &mut Vec<Action>) {
    loop {
        for a in std::mem::take(&mut work.appends) {
            let result = b.produce(offsets_topic, a.partition, &a.batch, -1, now, out).map(|p| (p.last_offset, p.leader_epoch)).map_err(|e| e.kafka_error(true));
            c.appended(a.write, result, now, &mut work);
        }
        if c.has_writes() {
            c.settle(|p, last, epoch| replicated(b, p, last, epoch), now, &mut work);
        }
        if work.appends.is_empty() {
            break;
        }
    }
    out.extend(work.answers.into_iter().map(|(ticket, answer)| Action::GroupAnswer { ticket, answer }));
    out.extend(work.lines.into_iter().map(|l| Action::Log(Level::Info, l)));
}

/// Settles the coordinator's writes whose fate a decision just decided (a high watermark
/// moved, a leadership ended): their answers come out in `out`.
pub fn settle(b: &mut Broker, c: &mut Coordinator, now: u64, out: &mut Vec<Action>) {
    if c.has_writes() {
        perform(b, c, Work::default(), now, out);
    }
}

fn replicated(b: &Broker, p: i32, last_offset: i64, leader_epoch: i32) -> Result<bool, Code> {
    let produced = Produced { base_offset: last_offset, last_offset, log_start_offset: 0, leader_epoch, log_append_time: -1, duplicate: false };
    b.replicated(offsets_topic, p, &produced).map_err(|e| e.kafka_error(true))
}

/// The coordinator's timers: ownership, loading, sessions, rebalance deadlines, expiry.
pub fn tick(b: &mut Broker, c: &mut Coordinator, now: u64) -> Vec<Action> {
    let mut work = Work::default();
    sync_ownership(b, c, now, &mut work);
    c.tick(now, &mut work);
    let mut out = Vec::new();
    perform(b, c, work, now, &mut out);
    out
}
