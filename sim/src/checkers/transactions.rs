//! Transactions as a read_committed reader sees them after healing (`History::final_committed`,
//! read once every transaction had its outcome): what the transactional producers asked for
//! and were told (`History::txns`) against what is there. Only partitions the committed read
//! finished are judged; one it could not finish is `liveness`'s (`final_errors`).
//!
//! - `txn_lost_write`: every record of a transaction whose commit was acknowledged is there
//!   (Kafka's contract: EndTxn answers only once the commit is durably decided).
//! - `txn_aborted_read`: no record of a transaction its producer aborted or gave up on is
//!   there (nothing could commit it: Jepsen's G1a, an aborted read).
//! - `txn_torn`: a transaction's records are all there or none is (atomicity; what decides a
//!   commit of unknown outcome).

use crate::history::{History, Outcome, Txn, Violation};
use std::collections::{BTreeMap, BTreeSet};

/// Each partition's committed values, and the partitions the committed read finished.
fn visible(h: &History) -> BTreeMap<(&str, i32), BTreeSet<&[u8]>> {
    h.final_committed.iter().map(|((t, p), log)| ((t.as_str(), *p), log.iter().map(|(_, v)| v.as_slice()).collect())).collect()
}

/// (records judged, records there) of `t`, over the partitions the committed read finished.
fn seen(t: &Txn, visible: &BTreeMap<(&str, i32), BTreeSet<&[u8]>>) -> (Vec<(String, i32)>, Vec<(String, i32)>) {
    let (mut judged, mut there) = (Vec::new(), Vec::new());
    for (topic, p, v) in &t.records {
        let Some(values) = visible.get(&(topic.as_str(), *p)) else { continue };
        judged.push((topic.clone(), *p));
        if values.contains(v.as_slice()) {
            there.push((topic.clone(), *p));
        }
    }
    (judged, there)
}

fn violation(checker: &'static str, t: &Txn, at: &(String, i32), detail: String, loss: bool) -> Violation {
    Violation { checker, topic: at.0.clone(), partition: at.1, offsets: Vec::new(), at_ms: t.complete_ms, detail, loss, acks: Some(-1) }
}

pub fn txn_lost_write(h: &History, out: &mut Vec<Violation>) {
    let visible = visible(h);
    for t in h.txns.iter().filter(|t| t.commit && matches!(t.end, Some(Outcome::Ok(_)))) {
        let (judged, there) = seen(t, &visible);
        if let Some(at) = judged.iter().find(|j| !there.contains(j)) {
            let detail = format!("{} transaction {}: commit acknowledged, {} of its {} records visible to read_committed", t.process, t.serial, there.len(), judged.len());
            out.push(violation("txn_lost_write", t, at, detail, true));
        }
    }
}

pub fn txn_aborted_read(h: &History, out: &mut Vec<Violation>) {
    let visible = visible(h);
    for t in h.txns.iter().filter(|t| !t.commit) {
        let (_, there) = seen(t, &visible);
        if let Some(at) = there.first() {
            let detail = format!("{} transaction {} was aborted (or given up, never committed), yet {} of its records are visible to read_committed", t.process, t.serial, there.len());
            out.push(violation("txn_aborted_read", t, at, detail, false));
        }
    }
}

pub fn txn_torn(h: &History, out: &mut Vec<Violation>) {
    let visible = visible(h);
    for t in &h.txns {
        let (judged, there) = seen(t, &visible);
        if !there.is_empty() && there.len() < judged.len() {
            let missing = judged.iter().find(|j| !there.contains(j)).expect("fewer there than judged");
            let detail = format!("{} transaction {} is torn: {} of its {} records visible to read_committed", t.process, t.serial, there.len(), judged.len());
            out.push(violation("txn_torn", t, missing, detail, false));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkers::judged;

    fn txn(serial: u64, commit: bool, end: Option<Outcome>, values: &[&str]) -> Txn {
        let records = values.iter().enumerate().map(|(i, v)| ("t".to_string(), i as i32 % 2, v.as_bytes().to_vec())).collect();
        Txn { process: "producer-0".into(), serial, records, reads: Vec::new(), commit, end, invoke_ms: 0, complete_ms: 10 }
    }

    fn history(txns: Vec<Txn>, committed: &[(i32, &[&str])]) -> History {
        let mut h = History { txns, ..History::default() };
        for (p, values) in committed {
            h.final_committed.insert(("t".into(), *p), values.iter().enumerate().map(|(i, v)| (i as i64, v.as_bytes().to_vec())).collect());
        }
        h
    }

    #[test]
    fn each_checker_sees_its_anomaly_and_nothing_else() {
        let ok = Some(Outcome::Ok(0));
        let clean = history(vec![txn(0, true, ok.clone(), &["a", "b"]), txn(1, false, ok.clone(), &["c", "d"]), txn(2, true, Some(Outcome::Unknown("timeout".into())), &["e", "f"])], &[(0, &["a", "e"]), (1, &["b", "f"])]);
        for check in [txn_lost_write, txn_aborted_read, txn_torn] {
            assert!(judged(check, &clean).is_empty(), "{:?}", judged(check, &clean));
        }
        let lost = history(vec![txn(0, true, ok.clone(), &["a", "b"])], &[(0, &["a"]), (1, &[])]);
        assert_eq!(judged(txn_lost_write, &lost).len(), 1);
        assert!(judged(txn_lost_write, &lost)[0].loss);
        let aborted = history(vec![txn(1, false, ok.clone(), &["c", "d"])], &[(0, &["c"]), (1, &[])]);
        assert_eq!(judged(txn_aborted_read, &aborted).len(), 1);
        let torn = history(vec![txn(2, true, Some(Outcome::Unknown("timeout".into())), &["e", "f"])], &[(0, &["e"]), (1, &[])]);
        assert_eq!((judged(txn_torn, &torn).len(), judged(txn_lost_write, &torn).len()), (1, 0), "an unknown commit may go either way, not halfway");
        // A partition the committed read did not finish is not judged.
        let unread = history(vec![txn(0, true, ok, &["a", "b"])], &[(0, &["a"])]);
        assert!(judged(txn_lost_write, &unread).is_empty() && judged(txn_torn, &unread).is_empty());
    }
}
