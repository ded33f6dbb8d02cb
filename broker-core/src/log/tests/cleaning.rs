//! Compaction on real files: the latest value of every key survives at its offset, batches
//! still tile the offsets, a reopened log reads the same, tombstones go after
//! `delete.retention.ms`, and an interrupted swap recovers to the old or the cleaned log.

use super::*;
use crate::log::batch::{build_keyed, KeyValue};
use crate::log::clean::records;
use crate::log::compressed;
use std::collections::BTreeMap;

pub(super) const map_bytes: usize = 1 << 20;

pub(super) fn compacted() -> LogConfig {
    LogConfig { segment_bytes: 2048, index_interval_bytes: 256, cleanup: CleanupPolicy::COMPACT, min_cleanable_dirty_ratio_ppm: 0, ..LogConfig::default() }
}

/// Appends `rounds` updates of keys k0..k{keys-1}, two records per batch; every sixth update
/// of k0 is a tombstone. Returns the latest value (None: deleted) of each key with its offset.
pub(super) fn updates(log: &mut Log, keys: usize, rounds: usize, ts: i64) -> BTreeMap<String, (i64, Option<String>)> {
    updates_in(log, keys, rounds, ts, compressed::codec_none)
}

/// [`updates`] in batches compressed with `codec`.
fn updates_in(log: &mut Log, keys: usize, rounds: usize, ts: i64, codec: u8) -> BTreeMap<String, (i64, Option<String>)> {
    let mut latest = BTreeMap::new();
    for r in 0..rounds {
        for pair in (0..keys).collect::<Vec<_>>().chunks(2) {
            let entries: Vec<(String, Option<String>)> = pair.iter().map(|k| (format!("k{k}"), (!(*k == 0 && r % 6 == 5)).then(|| format!("v{r}-{k}")))).collect();
            let kv: Vec<KeyValue> = entries.iter().map(|(k, v)| (Some(k.as_bytes()), v.as_deref().map(str::as_bytes))).collect();
            let mut b = build_keyed(&kv, ts);
            if codec != compressed::codec_none {
                b = compressed::with_codec(&b, codec).unwrap();
            }
            let info = log.append(&mut b, 1, 0).unwrap();
            for (i, (k, v)) in entries.into_iter().enumerate() {
                latest.insert(k, (info.base_offset + i as i64, v));
            }
        }
    }
    latest
}

/// Every record of the log: key → (offset, value), in offset order (later wins), plus checks
/// that batches tile the offsets from the log start to the end.
pub(super) fn contents(log: &Log) -> (Vec<(i64, String, Option<String>)>, usize) {
    let mut out = Vec::new();
    let mut next = log.log_start_offset();
    let mut batches = 0;
    log.for_each_batch(0, 1 << 20, |h, bytes| {
        assert_eq!(h.base_offset, next, "batches tile the offsets");
        next = h.next_offset();
        batches += 1;
        for r in records(&bytes).unwrap() {
            out.push((r.offset, String::from_utf8(r.key.unwrap().to_vec()).unwrap(), r.value.map(|v| String::from_utf8(v.to_vec()).unwrap())));
        }
        Ok::<(), LogError>(())
    })
    .unwrap();
    assert_eq!(next, log.log_end_offset());
    (out, batches)
}

pub(super) fn latest_of(records: &[(i64, String, Option<String>)]) -> BTreeMap<String, (i64, Option<String>)> {
    records.iter().map(|(o, k, v)| (k.clone(), (*o, v.clone()))).collect()
}

#[test]
fn the_latest_value_of_every_key_survives_at_its_offset() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), compacted(), 0).unwrap();
    let latest = updates(&mut log, 6, 40, 1_000);
    log.roll(0).unwrap();
    let (before, _) = contents(&log);
    let size_before = log.size_bytes();
    let stats = log.clean(10_000, log.log_end_offset(), map_bytes).unwrap().expect("due");
    assert!(stats.segments_rewritten > 0 && stats.keys == 6, "{stats:?}");
    let (after, batches) = contents(&log);
    assert_eq!(latest_of(&after), latest, "the latest of each key, at its offset");
    assert_eq!(latest_of(&before), latest);
    assert!(after.len() <= 6, "one record per key is left: {after:?}");
    assert!(log.size_bytes() * 4 < size_before, "{} of {size_before} bytes left", log.size_bytes());
    assert!(batches < 20, "empty batches merged: {batches}");
    log.verify_indexes().unwrap();
    // Reopened, the cleaned log is the same, and a second pass has nothing to do.
    let end = log.log_end_offset();
    log.close(0).unwrap();
    let (mut log, report) = Log::open(disk(), tmp.path(), compacted(), 0).unwrap();
    assert!(report.cut.is_none(), "{report:?}");
    assert_eq!((contents(&log).0, log.log_end_offset()), (after, end));
    assert_eq!(log.clean(10_000, log.log_end_offset(), map_bytes).unwrap(), None);
    // Appends go on at the end.
    let info = log.append(&mut build_keyed(&[(Some(b"k1"), Some(b"new"))], 2_000), 2, 0).unwrap();
    assert_eq!(info.base_offset, end);
}

#[test]
fn every_codec_is_compacted_and_rewritten_in_its_own_codec() {
    for codec in [compressed::codec_gzip, compressed::codec_snappy, compressed::codec_lz4, compressed::codec_zstd] {
        let tmp = tempfile::tempdir().unwrap();
        let (mut log, _) = Log::open(disk(), tmp.path(), compacted(), 0).unwrap();
        // Three keys in batches of two: every batch loses a record to a later one, and the
        // last round leaves batches that keep one of their two.
        let latest = updates_in(&mut log, 3, 12, 1_000, codec);
        log.roll(0).unwrap();
        let stats = log.clean(10_000, log.log_end_offset(), map_bytes).unwrap().expect("due");
        assert_eq!(stats.keys, 3, "codec {codec}: every key mapped");
        let (after, _) = contents(&log);
        assert_eq!(latest_of(&after), latest, "codec {codec}: the latest of each key, at its offset");
        assert!(after.len() <= 3, "codec {codec}: one record per key is left: {after:?}");
        let mut codecs = std::collections::BTreeSet::new();
        log.for_each_batch(0, 1 << 20, |h, _| {
            if h.records_count > 0 {
                codecs.insert(h.compression());
            }
            Ok::<(), LogError>(())
        })
        .unwrap();
        assert_eq!(codecs.into_iter().collect::<Vec<_>>(), [codec], "batches with records keep their codec");
        log.verify_indexes().unwrap();
    }
}

#[test]
fn a_tombstone_goes_once_a_pass_reached_it_and_its_retention_passed() {
    let tmp = tempfile::tempdir().unwrap();
    let config = LogConfig { delete_retention_ms: 5_000, ..compacted() };
    let (mut log, _) = Log::open(disk(), tmp.path(), config, 0).unwrap();
    let kv: Vec<KeyValue> = vec![(Some(b"gone"), Some(b"1"))];
    log.append(&mut build_keyed(&kv, 1_000), 1, 0).unwrap();
    log.append(&mut build_keyed(&[(Some(b"gone"), None)], 1_000), 1, 0).unwrap();
    log.append(&mut build_keyed(&[(Some(b"stays"), Some(b"x"))], 1_000), 1, 0).unwrap();
    log.roll(0).unwrap();
    log.clean(2_000, log.log_end_offset(), map_bytes).unwrap().expect("first pass");
    let keys = |log: &Log| contents(log).0.into_iter().map(|(_, k, v)| (k, v)).collect::<Vec<_>>();
    assert_eq!(keys(&log), vec![("gone".into(), None), ("stays".into(), Some("x".into()))], "the tombstone stays after the first pass");
    // More writes make the log dirty again; a pass after delete.retention.ms drops it.
    log.append(&mut build_keyed(&[(Some(b"stays"), Some(b"y"))], 9_000), 1, 0).unwrap();
    log.roll(0).unwrap();
    log.clean(10_000, log.log_end_offset(), map_bytes).unwrap().expect("second pass");
    assert_eq!(keys(&log), vec![("stays".into(), Some("y".into()))]);
}

#[test]
fn a_small_key_map_cleans_in_several_passes() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), compacted(), 0).unwrap();
    let latest = updates(&mut log, 20, 10, 1_000);
    log.roll(0).unwrap();
    let small = 9 * crate::log::clean::key_overhead_bytes; // nine keys
    let mut passes = 0;
    while log.clean(10_000, log.log_end_offset(), small).unwrap().is_some() {
        passes += 1;
        assert!(passes < 200, "no progress");
    }
    assert!(passes > 1, "a map of nine keys cannot take twenty in one pass");
    assert_eq!(latest_of(&contents(&log).0), latest);
}

#[test]
fn small_segments_merge_even_when_nothing_in_them_goes() {
    // Thirty one-record segments of distinct keys: no record is superseded, yet the pass
    // merges them into groups of up to segment.bytes (before, untouched groups were skipped,
    // so segments that cleaning shrank stayed apart forever: the simulator's compacted
    // scenario grew to hundreds of 180-byte segments per replica).
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), compacted(), 0).unwrap();
    for k in 0..30 {
        let key = format!("k{k}");
        log.append(&mut build_keyed(&[(Some(key.as_bytes()), Some(b"v".as_slice()))], 1_000), 1, 0).unwrap();
        log.roll(0).unwrap();
    }
    let (before, _) = contents(&log);
    let segments = log.segment_bases().len();
    let stats = log.clean(10_000, log.log_end_offset(), map_bytes).unwrap().expect("due");
    assert_eq!(stats.segments_rewritten, 30, "{stats:?}");
    assert!(log.segment_bases().len() <= 3, "{segments} segments became {:?}", log.segment_bases());
    assert_eq!(contents(&log).0, before, "every record stays, at its offset");
    log.verify_indexes().unwrap();
    // Merged once, each group is one segment: a second pass over unchanged data writes nothing.
    log.append(&mut build_keyed(&[(Some(b"k0"), Some(b"w"))], 2_000), 1, 0).unwrap();
    log.roll(0).unwrap();
    let bases = log.segment_bases();
    log.clean(10_000, log.log_end_offset(), map_bytes).unwrap().expect("due");
    assert!(log.segment_bases().len() <= bases.len());
    log.close(0).unwrap();
    let (log, report) = Log::open(disk(), tmp.path(), compacted(), 0).unwrap();
    assert!(report.cut.is_none(), "{report:?}");
    assert_eq!(latest_of(&contents(&log).0)["k0"], (30, Some("w".into())));
}

#[test]
fn empty_batches_left_by_successive_passes_merge() {
    // Each pass empties the batches the next writes supersede; before, a batch an earlier pass
    // had emptied counted as "every record survives" and was copied as it was, so it broke
    // every later run and empty batches piled up (the compacted scenario: 1,300 of a replica's
    // 1,488 batches were empty, 79 of its 100 KB).
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), LogConfig { segment_bytes: 1 << 20, ..compacted() }, 0).unwrap();
    for round in 0..4 {
        for k in ["a", "b"] {
            let v = format!("{round}");
            log.append(&mut build_keyed(&[(Some(k.as_bytes()), Some(v.as_bytes()))], 1_000), 1, 0).unwrap();
        }
        log.roll(0).unwrap();
        let _ = log.clean(10_000, log.log_end_offset(), map_bytes).unwrap();
    }
    let mut batches = Vec::new();
    log.for_each_batch(0, 1 << 20, |h, _| {
        batches.push((h.base_offset, h.last_offset(), h.records_count));
        Ok::<(), LogError>(())
    })
    .unwrap();
    assert_eq!(batches, vec![(0, 5, 0), (6, 6, 1), (7, 7, 1)], "one empty batch over everything superseded");
    // A pass with nothing to merge or drop writes nothing.
    let bases = log.segment_bases();
    assert!(log.clean(10_000, log.log_end_offset(), map_bytes).unwrap().is_none_or(|s| s.segments_rewritten == 0));
    assert_eq!(log.segment_bases(), bases);
}

#[test]
fn the_active_segment_and_young_records_are_not_cleaned() {
    let tmp = tempfile::tempdir().unwrap();
    let config = LogConfig { min_compaction_lag_ms: 60_000, ..compacted() };
    let (mut log, _) = Log::open(disk(), tmp.path(), config, 0).unwrap();
    updates(&mut log, 4, 20, 1_000);
    assert_eq!(log.clean(30_000, log.log_end_offset(), map_bytes).unwrap(), None, "younger than the lag");
    assert!(log.clean(100_000, log.log_end_offset(), map_bytes).unwrap().is_some());
    let tmp2 = tempfile::tempdir().unwrap();
    let (mut one, _) = Log::open(disk(), tmp2.path(), compacted(), 0).unwrap();
    one.append(&mut build_keyed(&[(Some(b"a"), Some(b"1")), (Some(b"a"), Some(b"2"))], 1_000), 1, 0).unwrap();
    assert_eq!(one.clean(100_000, one.log_end_offset(), map_bytes).unwrap(), None, "the active segment is never cleaned");
}

/// Copies a log directory's files through the Disk API.
fn copy_dir(d: &dyn Disk, from: &Path, to: &Path) {
    d.create_dir_all(to).unwrap();
    for name in d.list(from).unwrap() {
        let src = d.open(&from.join(&name), false).unwrap();
        let mut buf = vec![0u8; src.len().unwrap() as usize];
        crate::storage::read_exact_at(src.as_ref(), &mut buf, 0).unwrap();
        let dst = d.open(&to.join(&name), true).unwrap();
        dst.truncate(0).unwrap();
        dst.write_at(&buf, 0).unwrap();
    }
}

#[test]
fn an_interrupted_swap_recovers_to_the_old_or_the_cleaned_log() {
    let d = disk();
    let tmp = tempfile::tempdir().unwrap();
    let (old, cleaned) = (tmp.path().join("old"), tmp.path().join("cleaned"));
    let (mut log, _) = Log::open(d.clone(), &old, compacted(), 0).unwrap();
    updates(&mut log, 6, 30, 1_000);
    log.roll(0).unwrap();
    let old_contents = contents(&log).0;
    log.close(0).unwrap();
    copy_dir(d.as_ref(), &old, &cleaned);
    // Cleaned as one group (segment.bytes large enough for every closed segment), so the
    // first cleaned segment replaces them all.
    let (mut log, _) = Log::open(d.clone(), &cleaned, LogConfig { segment_bytes: 1 << 20, ..compacted() }, 0).unwrap();
    log.clean(10_000, log.log_end_offset(), map_bytes).unwrap().expect("due");
    let clean_contents = contents(&log).0;
    let first = log.segment_bases()[0];
    log.close(0).unwrap();
    let cleaned_first = {
        let f = d.open(&cleaned.join(format!("{}.log", file_stem(first))), false).unwrap();
        let mut buf = vec![0u8; f.len().unwrap() as usize];
        crate::storage::read_exact_at(f.as_ref(), &mut buf, 0).unwrap();
        buf
    };
    // Each crash point: the old segments with the cleaned bytes as `.cleaned` (before the
    // commit), as `.swap` (committed), and as `.swap` with some old segments already removed.
    for (i, (suffix, remove_old)) in [(".log.cleaned", 0), (".log.swap", 0), (".log.swap", 2)].into_iter().enumerate() {
        let dir = tmp.path().join(format!("crash-{i}"));
        copy_dir(d.as_ref(), &old, &dir);
        let stem = file_stem(first);
        let f = d.open(&dir.join(format!("{stem}{suffix}")), true).unwrap();
        f.write_at(&cleaned_first, 0).unwrap();
        let mut bases: Vec<String> = d.list(&dir).unwrap().into_iter().filter(|n| n.ends_with(".log")).collect();
        bases.sort();
        for name in bases.iter().take(remove_old) {
            d.remove(&dir.join(name)).unwrap();
        }
        let (log, report) = Log::open(d.clone(), &dir, compacted(), 0).unwrap();
        let expected = if suffix == ".log.cleaned" { &old_contents } else { &clean_contents };
        assert_eq!(&contents(&log).0, expected, "crash point {i} ({suffix}, {remove_old} old segments removed): {report:?}");
    }
}

#[test]
fn time_lookups_read_cleaned_batches() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), compacted(), 0).unwrap();
    for t in 0..60i64 {
        let kv: Vec<KeyValue> = vec![(Some(b"a"), Some(b"x")), (Some(b"b"), Some(b"y"))];
        log.append(&mut build_keyed(&kv, 1_000 + t), 1, 0).unwrap();
    }
    log.roll(0).unwrap();
    log.clean(10_000, log.log_end_offset(), map_bytes).unwrap().expect("due");
    // Every batch but the last lost its records: a lookup lands on the survivors, (offset, ts).
    assert_eq!(log.offset_for_timestamp(1_030).unwrap(), Some((118, 1_059)));
    assert_eq!(log.offset_for_timestamp(0).unwrap(), Some((118, 1_059)));
}

#[test]
fn a_swap_that_writes_no_txnindex_removes_a_stale_one_before_its_commit() {
    // A `B.txnindex.cleaned` left by an earlier pass whose removal failed would be renamed over
    // `B.txnindex` by a later swap of the group that removes no marker (`cleaner::swap_in`).
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), compacted(), 0).unwrap();
    updates(&mut log, 6, 40, 1_000);
    log.roll(0).unwrap();
    let stale = tmp.path().join("00000000000000000000.txnindex.cleaned");
    std::fs::write(&stale, [7u8; 34]).unwrap();
    log.clean(10_000, log.log_end_offset(), map_bytes).unwrap().expect("due");
    assert!(!stale.exists(), "the stale index was removed");
    let index = tmp.path().join("00000000000000000000.txnindex");
    assert!(std::fs::metadata(&index).map_or(true, |m| m.len() == 0), "no stale index took B.txnindex's place");
    log.close(0).unwrap();
    let (log, _) = Log::open(disk(), tmp.path(), compacted(), 0).unwrap();
    assert_eq!(log.aborted_transactions(), &[], "no abort came back from a stale index");
}
