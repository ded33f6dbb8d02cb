//! A follower's append cut short by its disk (an IO error after some of a fetched response's
//! batches are written): what it wrote stays, and it knows the producers of what it wrote.

use super::*;
use crate::storage::hooked::{Hook, Hooked, Op};

/// A hook on real files whose `.log` writes fail once `allowed` (when not negative) more have
/// been made: an IO error in the middle of a follower's append of several batches.
struct AppendsRunOut {
    allowed: Arc<std::sync::atomic::AtomicI64>,
}

impl Hook for AppendsRunOut {
    fn before(&self, op: Op<'_>) -> std::io::Result<()> {
        use std::sync::atomic::Ordering::SeqCst;
        let Op::WriteAt { path, .. } = op else { return Ok(()) };
        if path.extension().is_some_and(|e| e == "log") {
            if self.allowed.load(SeqCst) == 0 {
                return Err(std::io::Error::other("injected: the disk ran out"));
            }
            let _ = self.allowed.fetch_update(SeqCst, SeqCst, |n| (n > 0).then(|| n - 1));
        }
        Ok(())
    }
}

#[test]
fn a_follower_append_cut_short_knows_the_producers_of_what_it_wrote() {
    use std::sync::atomic::{AtomicI64, Ordering::SeqCst};
    let allowed = Arc::new(AtomicI64::new(-1));
    let run_out = allowed.clone();
    let mut c = Cluster::on_disks(&[1, 2], move |id| match id {
        2 => Arc::new(Hooked::new(Arc::new(FileDisk::new()), Arc::new(AppendsRunOut { allowed: run_out.clone() }))),
        _ => Arc::new(FileDisk::new()),
    });
    c.create(2);
    assert_eq!(c.round(2), Round::Truncated(0), "broker 2 follows from the start");
    let (now, epoch) = (c.now, c.ctl.image().partition(topic_name, 0).unwrap().leader_epoch);
    let first = super::idempotent(&[b"a"], 7, 0, 0);
    for seq in 0..2 {
        c.broker(1).produce(topic_name, 0, &super::idempotent(&[b"a"], 7, 0, seq), -1, now, &mut Vec::new()).unwrap();
    }
    let who = Fetcher { replica: Some(2), leader_epoch: epoch, log_start_offset: 0, again: false, read_committed: false, broker_epoch: -1 };
    let got = c.broker(1).fetch(topic_name, 0, 0, 1 << 20, true, who, now, &mut Vec::new()).unwrap();
    let records = got.records.to_bytes().unwrap();
    allowed.store(1, SeqCst); // the first batch is written, the second runs out
    let cut_short = c.broker(2).append_from_leader(topic_name, 0, 1, epoch, 0, &records, got.high_watermark, now);
    assert!(cut_short.is_err(), "the second batch failed: {cut_short:?}");
    assert_eq!(c.leo(2), 1, "the first batch is in the log");
    let retry = batch::read_header(&first).unwrap();
    let verdict = c.part(2).producers.check(&retry).unwrap();
    assert!(matches!(verdict, crate::broker::producer::Verdict::Duplicate(_)), "a retry of the written batch is known, should broker 2 lead: {verdict:?}");
}

