//! Compaction of a log holding transactions: an aborted transaction's records are removed and
//! supersede nothing (the value they would have replaced survives), a committed transaction's
//! records compact like any, markers stay, and the aborted-transaction index still names every
//! abort, in memory and after a reopen (a segment holding a marker keeps its `.txnindex`).

use super::*;
use super::cleaning::{compacted, contents, map_bytes};
use crate::log::batch::control::{build_marker, MarkerKind};
use crate::log::batch::{build_keyed, set_producer, set_transactional, KeyValue};
use crate::log::txn_index::AbortedTxn;
use std::collections::BTreeMap;

fn batch(kvs: &[(&str, &str)], producer: Option<(i64, i32)>) -> Vec<u8> {
    let kv: Vec<KeyValue> = kvs.iter().map(|(k, v)| (Some(k.as_bytes()), Some(v.as_bytes()))).collect();
    let mut b = build_keyed(&kv, 1_000);
    if let Some((pid, seq)) = producer {
        set_producer(&mut b, pid, 0, seq);
        set_transactional(&mut b);
    }
    b
}

/// Each key's latest value with its offset, of the data records (markers left out).
fn latest(log: &Log) -> BTreeMap<String, (i64, String)> {
    let (records, _) = contents(log);
    records.into_iter().filter(|(_, k, _)| k.starts_with('k') || k.starts_with('f')).map(|(o, k, v)| (k, (o, v.unwrap_or_default()))).collect()
}

#[test]
fn aborted_records_are_removed_and_supersede_nothing_markers_and_index_stay() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), compacted(), 0).unwrap();
    let (aborter, committer) = (7, 8);
    log.append(&mut batch(&[("k0", "v0"), ("k1", "v1")], None), 1, 0).unwrap(); // 0-1
    log.append(&mut batch(&[("k0", "aborted"), ("k1", "aborted")], Some((aborter, 0))), 1, 0).unwrap(); // 2-3
    log.append(&mut build_marker(aborter, 0, MarkerKind::Abort, 0, 1_000), 1, 0).unwrap(); // 4
    let abort = AbortedTxn { producer_id: aborter, first_offset: 2, last_offset: 4, last_stable_offset: 5 };
    log.append_aborted(abort).unwrap();
    log.append(&mut batch(&[("k1", "committed")], Some((committer, 0))), 1, 0).unwrap(); // 5
    log.append(&mut build_marker(committer, 0, MarkerKind::Commit, 0, 1_000), 1, 0).unwrap(); // 6
    // Enough updates of other keys to fill a few segments past the transactions.
    for i in 0..60 {
        log.append(&mut batch(&[("f", &format!("{i:0>40}"))], None), 1, 0).unwrap();
    }
    log.roll(0).unwrap();
    assert!(log.segments.len() > 3, "the transactions and the updates span segments");
    let stats = log.clean(10_000, log.log_end_offset(), map_bytes).unwrap().expect("due");
    assert!(stats.segments_rewritten > 0);
    let want: BTreeMap<String, (i64, String)> = [("f", (66, format!("{:0>40}", 59))), ("k0", (0, "v0".into())), ("k1", (5, "committed".into()))].into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    assert_eq!(latest(&log), want, "the aborted k0 did not replace v0; the committed k1 replaced v1");
    let (records, _) = contents(&log);
    let offsets: Vec<i64> = records.iter().map(|(o, _, _)| *o).filter(|o| *o < 7).collect();
    assert_eq!(offsets, vec![0, 4, 5, 6], "v0, both markers and the committed record; the aborted records are gone");
    assert_eq!(log.aborted_transactions(), &[abort]);
    drop(log);
    let (log, _) = Log::open(disk(), tmp.path(), compacted(), 0).unwrap();
    assert_eq!(log.aborted_transactions(), &[abort], "the marker's segment kept its index");
    assert_eq!(latest(&log), want);
}

#[test]
fn an_abort_whose_marker_lies_past_the_dirty_range_still_takes_its_records_back() {
    // The transaction's records fill closed segments; its ABORT marker is in the active one,
    // which no pass reaches. Found by the crash rounds of `cargo sim crash-log --clean`: a pass
    // that knew only the aborts whose marker it reached mapped these records as live, and the
    // value they would have replaced was cleaned away.
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), compacted(), 0).unwrap();
    let aborter = 7;
    log.append(&mut batch(&[("k0", "v0")], None), 1, 0).unwrap(); // 0
    let mut seq = 0;
    while log.segments.len() < 3 {
        log.append(&mut batch(&[("k0", "aborted")], Some((aborter, seq))), 1, 0).unwrap();
        seq += 1;
    }
    let marker = log.log_end_offset();
    log.append(&mut build_marker(aborter, 0, MarkerKind::Abort, 0, 1_000), 1, 0).unwrap();
    log.append_aborted(AbortedTxn { producer_id: aborter, first_offset: 1, last_offset: marker, last_stable_offset: 1 }).unwrap();
    let stats = log.clean(10_000, log.log_end_offset(), map_bytes).unwrap().expect("due");
    assert!(stats.to <= marker, "the marker is past the dirty range ({stats:?})");
    let (records, _) = contents(&log);
    assert_eq!(records.first().map(|(o, k, v)| (*o, k.as_str(), v.as_deref())), Some((0, "k0", Some("v0"))), "the aborted records took nothing back");
    assert!(records.iter().filter(|(o, _, _)| *o < stats.to).all(|(o, _, _)| *o == 0), "the aborted records in the pass's range are gone");
}
