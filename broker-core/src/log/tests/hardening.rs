//! Hostile-input tests from a review of the log: corrupt files, lying headers, failing syncs.
//! Each asserts what docs/storage.md promises; each failed on the code before its fix.
use super::super::batch::{build, validate};
use super::super::index::{Entry, OffsetEntry};
use super::super::*;
use crate::storage::{Disk, FileDisk};
use super::ProbeDisk;
use std::os::unix::fs::FileExt;
use std::sync::atomic::Ordering;

fn disk() -> Arc<dyn Disk> {
    Arc::new(FileDisk::new())
}
fn small() -> LogConfig {
    LogConfig { segment_bytes: 4096, index_interval_bytes: 256, ..LogConfig::default() }
}
fn fill(log: &mut Log, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|b| {
            let vals: Vec<Vec<u8>> = (0..3).map(|r| format!("record-{:05}-{}", b * 3 + r, "x".repeat((b * 3 + r) % 40)).into_bytes()).collect();
            let refs: Vec<&[u8]> = vals.iter().map(|v| v.as_slice()).collect();
            let mut batch = build(&refs, 1000 + b as i64);
            log.append(&mut batch, 5, 0).unwrap();
            batch
        })
        .collect()
}
fn patch(path: &Path, at: u64, bytes: &[u8]) {
    std::fs::OpenOptions::new().write(true).open(path).unwrap().write_all_at(bytes, at).unwrap();
}
fn recrc(b: &mut [u8]) {
    let crc = crc32c::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
}

/// F1: docs: "data below the recovery point is never cut". After a clean close the active
/// segment is wholly below the recovery point, yet one bad byte in it silently cuts synced data.
#[test]
fn f1_synced_corruption_in_active_segment_must_not_be_cut() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), LogConfig::default(), 0).unwrap();
    let sent = fill(&mut log, 10);
    log.close(0).unwrap(); // flush + checkpoint: recovery point = 30
    let path = tmp.path().join("00000000000000000000.log");
    let at = sent[..3].iter().map(|b| b.len() as u64).sum::<u64>() + 70;
    let mut b = [0u8];
    std::fs::File::open(&path).unwrap().read_exact_at(&mut b, at).unwrap();
    patch(&path, at, &[b[0] ^ 0x10]);
    match Log::open(disk(), tmp.path(), LogConfig::default(), 0) {
        Err(LogError::Corrupt { .. }) => {}
        Ok((log, report)) => panic!(
            "synced data silently cut: recovery_point={} cut={:?} log end now {}",
            report.recovery_point, report.cut, log.log_end_offset()
        ),
        Err(e) => panic!("{e}"),
    }
}

/// F2: a batch accepted under a larger max.message.bytes is synced, then the topic config is
/// lowered (legal in Kafka); recovery treats the old batch as implausible and cuts it.
#[test]
fn f2_lowering_max_message_bytes_cuts_synced_batches() {
    let tmp = tempfile::tempdir().unwrap();
    let big = LogConfig { max_message_bytes: 4 << 20, ..LogConfig::default() };
    let (mut log, _) = Log::open(disk(), tmp.path(), big, 0).unwrap();
    fill(&mut log, 2);
    let v = vec![7u8; 2 << 20];
    log.append(&mut build(&[&v], 5), 0, 0).unwrap();
    fill(&mut log, 2);
    let end = log.log_end_offset();
    log.close(0).unwrap();
    let (log, report) = Log::open(disk(), tmp.path(), LogConfig::default(), 0).unwrap();
    assert_eq!(log.log_end_offset(), end, "synced data cut: {:?}", report.cut);
}

/// F3: a middle `.index` entry is not checked on open (only the last is). One whose position
/// points at a later batch makes a read silently skip records.
#[test]
fn f3_corrupt_middle_index_entry_skips_records() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    fill(&mut log, 100);
    log.close(0).unwrap();
    let ip = tmp.path().join("00000000000000000000.index");
    let bytes = std::fs::read(&ip).unwrap();
    let e: Vec<OffsetEntry> = bytes.chunks_exact(8).map(OffsetEntry::decode).collect();
    assert!(e.len() >= 3);
    // Entry 0 keeps its offset but gets entry 1's position: keys still increase, last entry intact.
    let mut bad = [0u8; 8];
    OffsetEntry { relative_offset: e[0].relative_offset, position: e[1].position }.encode(&mut bad);
    patch(&ip, 0, &bad);
    let (log, report) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    assert_eq!(report.indexes_rebuilt.len(), 1, "an index with repeated positions is rebuilt");
    let want = e[0].relative_offset as i64;
    let r = log.read(want, 1, log.log_end_offset()).unwrap();
    assert!(r.first_batch_offset <= want, "asked for {want}, served a batch starting at {}", r.first_batch_offset);
}

/// F4: baseOffset is outside the CRC; reads "validate every batch" but never check offsets, and
/// bytes before the last index entry of a trusted segment are never checked on open. A batch whose
/// baseOffset field reads low is skipped by position_of, so the read serves later offsets.
/// (Since the epoch cache is derived at open, open walks every header and refuses this; the
/// read path is checked by corrupting the bytes under an open log.)
#[test]
fn f4_wrong_base_offset_in_trusted_segment_is_served() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    let sent = fill(&mut log, 100);
    log.close(0).unwrap();
    let (log, report) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    assert!(report.cut.is_none());
    // Batch 1 holds offsets 3..=5; its baseOffset field now says 0.
    patch(&tmp.path().join("00000000000000000000.log"), sent[0].len() as u64, &0i64.to_be_bytes());
    match log.read(3, 1, log.log_end_offset()) {
        Err(LogError::Corrupt { .. }) => {}
        other => panic!("expected Corrupt for offset 3, got a batch starting at {:?}", other.map(|r| r.first_batch_offset)),
    }
    match Log::open(disk(), tmp.path(), small(), 0) {
        Err(LogError::Corrupt { position, .. }) => assert_eq!(position, sent[0].len() as u64),
        other => panic!("expected Corrupt at open, got {:?}", other.map(|(l, _)| l.log_end_offset())),
    }
}

/// F5: find_timestamp's forward scan trusts a header's length: batchLength 0 in a trusted segment
/// => `vec![0; 12]` then `buf[61..]` panics (slice index out of range).
#[test]
fn f5_timestamp_lookup_panics_on_short_batch_length() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    let sent = fill(&mut log, 100);
    log.close(0).unwrap();
    let ip = tmp.path().join("00000000000000000000.index");
    let e: Vec<OffsetEntry> = std::fs::read(&ip).unwrap().chunks_exact(8).map(OffsetEntry::decode).collect();
    // The batch right after the first indexed batch.
    let first = e[0];
    let b = (first.relative_offset / 3) as usize;
    let pos = first.position as u64 + sent[b].len() as u64;
    let (log, _) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    patch(&tmp.path().join("00000000000000000000.log"), pos + 8, &0i32.to_be_bytes());
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| log.offset_for_timestamp(1000 + b as i64 + 1)));
    assert!(r.is_ok(), "offset_for_timestamp panicked on a corrupt length field");
}

/// F6: arithmetic on client timestamps overflows (panic in debug, wrong answer in release).
#[test]
fn f6_timestamp_overflow_from_client_batch() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), LogConfig::default(), 0).unwrap();
    let mut b = build(&[b"a"], i64::MAX);
    assert_eq!(b[63], 0, "timestamp delta byte");
    b[63] = 2; // zigzag(+1)
    recrc(&mut b);
    let err = log.append(&mut b, 0, 0).err().expect("a record timestamp past i64::MAX is refused");
    assert!(err.to_string().contains("overflows"), "{err}");
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| log.offset_for_timestamp(i64::MAX)));
    assert!(r.is_ok(), "lookup at i64::MAX must not panic");
}

#[test]
fn f6b_timestamp_min_overflows() {
    let tmp = tempfile::tempdir().unwrap();
    let (log, _) = Log::open(disk(), tmp.path(), LogConfig::default(), 0).unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| log.offset_for_timestamp(i64::MIN)));
    assert!(r.is_ok(), "ts - 1 overflowed");
}

/// F7: "On any error nothing was appended" — false when the policy flush fails after the write.
#[test]
fn f7_failed_flush_takes_the_log_offline_until_reopened() {
    let tmp = tempfile::tempdir().unwrap();
    let (d, _, fail) = ProbeDisk::shared();
    let cfg = LogConfig { flush: FlushPolicy::EveryBatch, ..LogConfig::default() };
    let (mut log, _) = Log::open(d, tmp.path(), cfg, 0).unwrap();
    fail.store(true, Ordering::SeqCst);
    assert!(log.append(&mut build(&[b"a"], 1), 0, 0).is_err());
    // No later fsync may vouch for the batch whose fsync failed: the log is offline.
    fail.store(false, Ordering::SeqCst);
    assert!(matches!(log.append(&mut build(&[b"b"], 1), 0, 0), Err(LogError::Failed(_))));
    assert!(matches!(log.flush(0), Err(LogError::Failed(_))));
    assert_eq!(log.recovery_point(), 0);
    assert!(log.failure().is_some());
    drop(log);
    // Reopening recovers: the batch is kept or cut by the scan, never vouched for blindly.
    let (log, _) = Log::open(Arc::new(FileDisk::new()), tmp.path(), LogConfig::default(), 0).unwrap();
    assert!(log.log_end_offset() <= 1);
}

/// F8: walk_records only parses length/attributes/timestampDelta/offsetDelta, so records with
/// garbage key/value/header framing are accepted and later served to consumers.
#[test]
fn f8_malformed_record_body_is_accepted() {
    let mut b = build(&[b"hello"], 1);
    // record: len, attr, tsDelta, offDelta, keyLen(-1 = 0x01), valueLen(5 = 0x0a), "hello", headers
    let key_len_at = 61 + 1 + 1 + 1 + 1;
    assert_eq!(b[key_len_at], 0x01);
    b[key_len_at] = 0x7e; // key length 63: runs far past the record
    recrc(&mut b);
    assert!(validate(&b, 1 << 20).is_err(), "record whose key runs past its end was accepted");
}

/// F9: compression codec ids 5..7 do not exist, yet such a batch passes (and skips record checks).
#[test]
fn f9_unknown_codec_is_accepted() {
    let mut b = build(&[b"hello"], 1);
    b[22] |= 7;
    b[61..].fill(0xAB); // garbage records
    recrc(&mut b);
    assert!(validate(&b, 1 << 20).is_err(), "codec 7 with garbage records was accepted");
}

/// F10: the header's maxTimestamp is trusted; a batch claiming a lower max than its records makes
/// timestamp lookup miss them (and one claiming i64::MAX pins its segment against retention).
#[test]
fn f10_max_timestamp_not_checked_against_records() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), LogConfig::default(), 0).unwrap();
    let mut b = build(&[b"a"], 5000);
    b[35..43].copy_from_slice(&10i64.to_be_bytes());
    recrc(&mut b);
    log.append(&mut b, 0, 0).unwrap();
    assert_eq!(log.offset_for_timestamp(4000).unwrap(), Some((0, 5000)));
}

/// F11: IndexFile::load allocates the index file's length. A sparse/corrupt 1 TiB `.index` aborts
/// the process (memory allocation failure) instead of being rebuilt. Run alone: it aborts.
#[test]
fn f11_huge_index_file_aborts() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    fill(&mut log, 100);
    log.close(0).unwrap();
    std::fs::OpenOptions::new().write(true).open(tmp.path().join("00000000000000000000.index")).unwrap().set_len(1 << 40).unwrap();
    let _ = Log::open(disk(), tmp.path(), small(), 0);
}
