//! Unit tests of the partition log on real files (`FileDisk`); crash behaviour is tested on
//! `SimDisk` in the `sim` crate.

mod hardening;
mod replica;
mod cleaning;
mod cleaning_steps;
mod cleaning_txn;
mod region;
mod deferred;
mod behind;
mod cut;
mod snapshots;
mod swap;
mod fence;
mod clean_job;
mod clean_point;

use super::batch::{build, validate};
use super::*;
use crate::storage::hooked::{Hook, Hooked, Op};
use crate::storage::{Disk, FileDisk};

fn disk() -> Arc<dyn Disk> {
    Arc::new(FileDisk::new())
}

/// Truncates a log whose owner takes jobs (`log::cut`) and runs and reports the job at once,
/// as the broker's shell does.
fn truncate_deferred(log: &mut Log, offset: i64) {
    log.truncate_to(offset, 0).unwrap();
    let job = log.take_cut().expect("a truncation's job");
    let done = job.run().map(drop);
    assert!(log.cut_done(job.stamp, done), "the report is the log's");
}

/// One cleaner step of a log whose owner takes jobs, the step's job (if it handed one out)
/// run and reported at once, as the broker's shell does; a swap it owes is the caller's.
fn clean_step_now(log: &mut Log, now: u64, upper: i64, budget: usize) -> CleanStep {
    let step = log.clean_step(now, upper, cleaning::map_bytes, budget, clean::Keep::Latest).unwrap();
    match log.take_clean() {
        Some(job) => log.cleaned(job.run(), now).unwrap(),
        None => step,
    }
}

/// The real disk, watched: counts the bytes read, and fails the next sync (of a file or of
/// the file system) once `fail_sync` is set.
#[derive(Default)]
struct ProbeDisk {
    read: Arc<std::sync::atomic::AtomicU64>,
    fail_sync: Arc<std::sync::atomic::AtomicBool>,
}

impl ProbeDisk {
    /// A new one as the log takes it, with its read counter and its sync switch.
    fn shared() -> (Arc<dyn Disk>, Arc<std::sync::atomic::AtomicU64>, Arc<std::sync::atomic::AtomicBool>) {
        let d = ProbeDisk::default();
        let (read, fail_sync) = (d.read.clone(), d.fail_sync.clone());
        (Arc::new(Hooked::new(Arc::new(FileDisk::new()), Arc::new(d))), read, fail_sync)
    }
}

impl Hook for ProbeDisk {
    fn before(&self, op: Op<'_>) -> std::io::Result<()> {
        match op {
            Op::Sync { .. } | Op::SyncAll { .. } if self.fail_sync.swap(false, std::sync::atomic::Ordering::SeqCst) => Err(std::io::Error::other("EIO (injected sync failure)")),
            _ => Ok(()),
        }
    }
    fn read(&self, _path: &Path, n: usize) {
        self.read.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
    }
}

fn small() -> LogConfig {
    LogConfig { segment_bytes: 4096, index_interval_bytes: 256, ..LogConfig::default() }
}

fn value(i: usize) -> Vec<u8> {
    format!("record-{i:05}-{}", "x".repeat(i % 40)).into_bytes()
}

/// Appends `n` batches of 3 records each, timestamps 1000 + batch number.
fn fill(log: &mut Log, n: usize, now: u64) -> Vec<Vec<u8>> {
    let mut sent = Vec::new();
    for b in 0..n {
        let vals: Vec<Vec<u8>> = (0..3).map(|r| value(b * 3 + r)).collect();
        let refs: Vec<&[u8]> = vals.iter().map(|v| v.as_slice()).collect();
        let mut batch = build(&refs, 1000 + b as i64);
        let info = log.append(&mut batch, 5, now).unwrap();
        assert_eq!(info.base_offset, (b * 3) as i64);
        assert_eq!(info.last_offset, (b * 3 + 2) as i64);
        sent.push(batch);
    }
    sent
}

/// Reads the whole log batch by batch and returns each batch's bytes.
fn read_all(log: &Log) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut at = log.log_start_offset();
    while at < log.log_end_offset() {
        let r = log.read(at, 1, log.log_end_offset()).unwrap();
        let h = validate(&r.bytes, usize::MAX).unwrap();
        assert!(h.base_offset <= at && at <= h.last_offset());
        out.push(r.bytes.to_vec());
        at = h.next_offset();
    }
    out
}

#[test]
fn append_assigns_dense_offsets_and_reads_back_across_segments() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, report) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    assert_eq!(report.segments_scanned, 0);
    let sent = fill(&mut log, 200, 0);
    assert!(log.segment_bases().len() > 3, "4 KiB segments must roll: {:?}", log.segment_bases());
    assert_eq!(log.log_end_offset(), 600);
    assert_eq!(read_all(&log), sent);
    log.verify_indexes().unwrap();
    // File names follow Kafka's 20-digit convention.
    let names = FileDisk::new().list(tmp.path()).unwrap();
    assert!(names.contains(&"00000000000000000000.log".to_string()));
    let second = format!("{:020}.timeindex", log.segment_bases()[1]);
    assert!(names.contains(&second), "{names:?}");
}

#[test]
fn reads_respect_upper_bound_and_byte_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), LogConfig::default(), 0).unwrap();
    let sent = fill(&mut log, 10, 0);
    // An offset inside a batch returns that whole batch.
    let r = log.read(4, 1, 30).unwrap();
    assert_eq!((r.first_batch_offset, r.bytes.to_vec()), (3, sent[1].clone()));
    // A byte limit smaller than one batch still returns one batch.
    assert_eq!(log.read(0, 10, 30).unwrap().bytes.len(), sent[0].len());
    // A limit covering two and a half batches returns two.
    let two = sent[0].len() + sent[1].len() + sent[2].len() / 2;
    assert_eq!(log.read(0, two, 30).unwrap().bytes.len(), sent[0].len() + sent[1].len());
    // The upper bound (high watermark) stops before a batch that reaches it.
    let r = log.read(0, 1 << 20, 7).unwrap();
    assert_eq!(r.bytes.len(), sent[0].len() + sent[1].len(), "batch 6..8 reaches offset 7");
    assert!(log.read(6, 1 << 20, 7).unwrap().bytes.is_empty());
    // At the end: empty; beyond it: out of range.
    assert!(log.read(30, 1 << 20, 30).unwrap().bytes.is_empty());
    assert!(matches!(log.read(31, 100, 31), Err(LogError::OffsetOutOfRange { requested: 31, start: 0, end: 30 })));
    assert!(matches!(log.read(-1, 100, 30), Err(LogError::OffsetOutOfRange { .. })));
}

#[test]
fn invalid_batches_are_refused_and_change_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), LogConfig { max_message_bytes: 200, ..LogConfig::default() }, 0).unwrap();
    fill(&mut log, 1, 0);
    let mut bad_crc = build(&[b"a"], 1);
    *bad_crc.last_mut().unwrap() ^= 1;
    assert!(matches!(log.append(&mut bad_crc, 0, 0), Err(LogError::InvalidBatch(BatchError::BadCrc { .. }))));
    let mut big = build(&[&[7u8; 300]], 1);
    assert!(matches!(log.append(&mut big, 0, 0), Err(LogError::InvalidBatch(BatchError::TooLarge { .. }))));
    let mut short = vec![0u8; 20];
    assert!(matches!(log.append(&mut short, 0, 0), Err(LogError::InvalidBatch(BatchError::TooShort(20)))));
    assert_eq!(log.log_end_offset(), 3);
    assert_eq!(log.size_bytes(), read_all(&log)[0].len() as u64);
}

#[test]
fn rolls_by_time_and_finds_offsets_by_timestamp() {
    let tmp = tempfile::tempdir().unwrap();
    // segment.ms counts record time once a segment has a batch (Kafka's rule): batches are
    // 10 ms apart in record time, so a 25 ms segment.ms rolls every third batch, whatever the
    // caller's clock says.
    let config = LogConfig { segment_ms: 25, index_interval_bytes: 64, ..LogConfig::default() };
    let (mut log, _) = Log::open(disk(), tmp.path(), config, 0).unwrap();
    for b in 0..20i64 {
        let mut batch = build(&[b"a", b"b"], 10_000 + b * 10);
        log.append(&mut batch, 0, 0).unwrap();
    }
    assert_eq!(log.segment_bases(), vec![0, 6, 12, 18, 24, 30, 36], "rolls by record time");
    assert_eq!(log.offset_for_timestamp(0).unwrap(), Some((0, 10_000)));
    assert_eq!(log.offset_for_timestamp(10_070).unwrap(), Some((14, 10_070)));
    assert_eq!(log.offset_for_timestamp(10_071).unwrap(), Some((16, 10_080)));
    assert_eq!(log.offset_for_timestamp(10_191).unwrap(), None);
    log.verify_indexes().unwrap();
}

#[test]
fn timestamp_lookup_finds_the_record_inside_a_batch() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), LogConfig::default(), 0).unwrap();
    // Hand-made batch whose records carry timestamps 100, 105, 110.
    let mut batch = build(&[b"a", b"b", b"c"], 100);
    // Rewrite timestamp deltas (byte after attributes in each record) and max timestamp.
    let mut pos = crate::constants::batch_header_bytes;
    for delta in [0u8, 10, 20] {
        // record: len varint (1 byte here), attributes, timestamp delta varint (zigzag: 2*d)
        batch[pos + 2] = delta;
        let len = (batch[pos] >> 1) as usize;
        pos += 1 + len;
    }
    batch[35..43].copy_from_slice(&110i64.to_be_bytes());
    let crc = crc32c::crc32c(&batch[21..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
    log.append(&mut batch, 0, 0).unwrap();
    assert_eq!(log.offset_for_timestamp(101).unwrap(), Some((1, 105)));
    assert_eq!(log.offset_for_timestamp(106).unwrap(), Some((2, 110)));
}

#[test]
fn retention_deletes_whole_old_segments() {
    let tmp = tempfile::tempdir().unwrap();
    let config = LogConfig { retention_bytes: 8192, ..small() };
    let (mut log, _) = Log::open(disk(), tmp.path(), config, 0).unwrap();
    fill(&mut log, 200, 0);
    let before = log.segment_bases();
    let deleted = log.apply_retention(0, i64::MAX).unwrap();
    assert!(deleted > 0);
    assert!(log.size_bytes() < 8192 + 4096);
    assert_eq!(log.log_start_offset(), before[deleted]);
    assert!(matches!(log.read(0, 10, 600), Err(LogError::OffsetOutOfRange { .. })));
    assert!(!FileDisk::new().exists(&tmp.path().join("00000000000000000000.log")));
    // Time retention: batch timestamps are 1000..1200, so at now = 1000 + 1 day + 150 with
    // retention 1 day the segments whose newest record is < 1150 go.
    let mut log = log;
    log.config.retention_bytes = -1;
    log.config.retention_ms = 86_400_000;
    log.tick(86_400_000 + 1150, i64::MAX).unwrap();
    let start = log.log_start_offset();
    let first = log.read(start, 1, 600).unwrap();
    let ts = validate(&first.bytes, usize::MAX).unwrap().max_timestamp;
    assert!(ts >= 1100, "oldest remaining segment still has data past the cutoff: {ts}");
    assert_eq!(log.log_end_offset(), 600, "retention never touches the log end");
}

#[test]
fn flush_policies_decide_when_appends_are_synced() {
    let tmp = tempfile::tempdir().unwrap();
    let batch = || build(&[b"v"], 0);
    let (mut every, _) = Log::open(disk(), &tmp.path().join("a"), LogConfig { flush: FlushPolicy::EveryBatch, ..LogConfig::default() }, 0).unwrap();
    assert!(every.append(&mut batch(), 0, 0).unwrap().flushed);
    assert_eq!(every.recovery_point(), 1);

    let (mut n, _) = Log::open(disk(), &tmp.path().join("b"), LogConfig { flush: FlushPolicy::EveryMessages(3), ..LogConfig::default() }, 0).unwrap();
    let flags: Vec<bool> = (0..6).map(|_| n.append(&mut batch(), 0, 0).unwrap().flushed).collect();
    assert_eq!(flags, [false, false, true, false, false, true]);

    let (mut t, _) = Log::open(disk(), &tmp.path().join("c"), LogConfig { flush: FlushPolicy::EveryMs(50), ..LogConfig::default() }, 0).unwrap();
    assert!(!t.append(&mut batch(), 0, 10).unwrap().flushed);
    assert_eq!(t.next_deadline(), Some(60));
    t.tick(59, i64::MAX).unwrap();
    assert_eq!(t.recovery_point(), 0);
    t.tick(60, i64::MAX).unwrap();
    assert_eq!((t.recovery_point(), t.next_deadline()), (1, None));

    let (mut never, _) = Log::open(disk(), &tmp.path().join("d"), LogConfig::default(), 0).unwrap();
    assert!(!never.append(&mut batch(), 0, 0).unwrap().flushed);
    assert_eq!(never.next_deadline(), None);
}

#[test]
fn clean_reopen_trusts_checkpointed_segments() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    let sent = fill(&mut log, 100, 0);
    let segments = log.segment_bases().len();
    log.close(0).unwrap();
    let (log, report) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    assert_eq!(report.recovery_point, 300);
    assert_eq!(report.segments_trusted, segments - 1);
    assert_eq!(report.segments_scanned, 1);
    assert_eq!(report.cut, None);
    assert!(report.indexes_rebuilt.is_empty());
    assert_eq!(read_all(&log), sent);
    log.verify_indexes().unwrap();
}

fn truncate_file(path: &Path, len: u64) {
    std::fs::OpenOptions::new().write(true).open(path).unwrap().set_len(len).unwrap();
}

fn flip_byte(path: &Path, at: u64) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().read(true).write(true).open(path).unwrap();
    let mut b = [0u8];
    f.read_exact_at(&mut b, at).unwrap();
    f.write_all_at(&[b[0] ^ 0x10], at).unwrap();
}

#[test]
fn torn_tail_after_the_recovery_point_is_cut_and_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), LogConfig::default(), 0).unwrap();
    let sent = fill(&mut log, 10, 0);
    drop(log); // no checkpoint: everything is after the recovery point
    let path = tmp.path().join("00000000000000000000.log");
    let full: u64 = sent.iter().map(|b| b.len() as u64).sum();
    let keep: u64 = sent[..7].iter().map(|b| b.len() as u64).sum();
    truncate_file(&path, full - 5);
    let (log, report) = Log::open(disk(), tmp.path(), LogConfig::default(), 0).unwrap();
    let cut = report.cut.expect("a torn batch is cut");
    assert_eq!(cut.position, full - sent[9].len() as u64);
    assert_eq!(cut.bytes_removed, sent[9].len() as u64 - 5);
    assert!(cut.reason.contains("torn"), "{}", cut.reason);
    assert_eq!(log.log_end_offset(), 27);
    // The cut was made durable and checkpointed: the 9 batches left are now synced. More
    // appends, never flushed; then a bad CRC in the first of them cuts it and what follows.
    let mut log = log;
    let more = fill_from(&mut log, 9, 4);
    drop(log);
    let synced: u64 = sent[..9].iter().map(|b| b.len() as u64).sum();
    flip_byte(&path, synced + 70);
    let (mut log, report) = Log::open(disk(), tmp.path(), LogConfig::default(), 0).unwrap();
    let cut = report.cut.expect("bad CRC after the recovery point is cut");
    assert_eq!(cut.position, synced);
    assert!(cut.reason.contains("CRC"), "{}", cut.reason);
    assert_eq!(log.log_end_offset(), 27);
    assert_eq!(read_all(&log), sent[..9].to_vec());
    assert_eq!(more.len(), 4);
    // Appends continue densely after the cut.
    assert_eq!(log.append(&mut build(&[b"z"], 5), 0, 0).unwrap().base_offset, 27);
    drop(log);
    // A bad CRC below the recovery point is synced data gone bad: an error, nothing cut.
    flip_byte(&path, keep + 70);
    let err = Log::open(disk(), tmp.path(), LogConfig::default(), 0).err().expect("synced corruption refuses to open");
    assert!(matches!(&err, LogError::Corrupt { position, .. } if *position == keep), "{err}");
    assert!(err.to_string().contains("recovery point"), "{err}");
}

/// Appends `n` batches numbered from `first` (3 records each), returning their bytes.
fn fill_from(log: &mut Log, first: usize, n: usize) -> Vec<Vec<u8>> {
    (first..first + n)
        .map(|b| {
            let vals: Vec<Vec<u8>> = (0..3).map(|r| value(b * 3 + r)).collect();
            let refs: Vec<&[u8]> = vals.iter().map(|v| v.as_slice()).collect();
            let mut batch = build(&refs, 1000 + b as i64);
            log.append(&mut batch, 5, 0).unwrap();
            batch
        })
        .collect()
}

#[test]
fn segments_after_a_cut_are_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    fill(&mut log, 100, 0);
    let bases = log.segment_bases();
    drop(log);
    // Zero a region in the middle of the second segment (a dropped write with later ones kept).
    let second = tmp.path().join(format!("{:020}.log", bases[1]));
    use std::os::unix::fs::FileExt;
    std::fs::OpenOptions::new().write(true).open(&second).unwrap().write_all_at(&[0u8; 64], 300).unwrap();
    let (log, report) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    assert_eq!(report.segments_removed.len(), bases.len() - 2);
    assert_eq!(report.cut.as_ref().unwrap().file, second);
    assert_eq!(log.segment_bases(), bases[..2].to_vec());
    assert!(log.log_end_offset() > bases[1] && log.log_end_offset() < bases[2]);
}

#[test]
fn corruption_in_a_flushed_segment_is_an_error_naming_file_and_position() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    fill(&mut log, 100, 0);
    let bases = log.segment_bases();
    log.close(0).unwrap();
    let first = tmp.path().join("00000000000000000000.log");
    let len = std::fs::metadata(&first).unwrap().len();
    flip_byte(&first, len - 3);
    let err = Log::open(disk(), tmp.path(), small(), 0).err().expect("corrupt flushed data must not open");
    match &err {
        LogError::Corrupt { file, position, reason } => {
            assert_eq!(file, &first);
            assert!(*position < len && *position > 0);
            assert!(reason.contains("CRC"), "{reason}");
        }
        other => panic!("expected Corrupt, got {other}"),
    }
    assert!(err.to_string().contains("00000000000000000000.log"));
    // Nothing was truncated.
    assert_eq!(std::fs::metadata(&first).unwrap().len(), len);
    assert!(tmp.path().join(format!("{:020}.log", bases[1])).exists());
}

#[test]
fn corruption_read_from_the_middle_is_reported_not_served() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), LogConfig::default(), 0).unwrap();
    let sent = fill(&mut log, 5, 0);
    let first = tmp.path().join("00000000000000000000.log");
    flip_byte(&first, sent[0].len() as u64 + 65);
    match log.read(3, 1 << 20, 15) {
        Err(LogError::Corrupt { position, .. }) => assert_eq!(position, sent[0].len() as u64),
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[test]
fn bad_indexes_are_rebuilt_from_the_log() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    let sent = fill(&mut log, 100, 0);
    log.close(0).unwrap();
    let idx0 = tmp.path().join("00000000000000000000.index");
    let idx_len = std::fs::metadata(&idx0).unwrap().len();
    assert!(idx_len >= 16, "small index interval gives entries");
    truncate_file(&idx0, idx_len - 3); // partial entry
    std::fs::remove_file(tmp.path().join(format!("{:020}.index", log_second_base(&sent)))).unwrap();
    let (log, report) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    assert_eq!(report.indexes_rebuilt.len(), 2, "{:?}", report.indexes_rebuilt);
    assert_eq!(std::fs::metadata(&idx0).unwrap().len(), idx_len);
    log.verify_indexes().unwrap();
    assert_eq!(read_all(&log), sent);
}

/// Base offset of the second segment for `fill(.., 100, ..)` with `small()`.
fn log_second_base(sent: &[Vec<u8>]) -> i64 {
    let mut size = 0u64;
    for (i, b) in sent.iter().enumerate() {
        if size + b.len() as u64 > 4096 {
            return (i * 3) as i64;
        }
        size += b.len() as u64;
    }
    unreachable!()
}

#[test]
fn stray_files_are_cleaned_and_bad_config_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("00000000000000000042.index"), b"").unwrap();
    std::fs::write(tmp.path().join("recovery-point-offset-checkpoint.tmp"), b"9").unwrap();
    let (_log, report) = Log::open(disk(), tmp.path(), LogConfig::default(), 0).unwrap();
    assert_eq!(report.stray_files_removed.len(), 2);
    let bad = LogConfig { segment_bytes: 10, ..LogConfig::default() };
    let err = Log::open(disk(), tmp.path(), bad, 0).err().unwrap();
    assert!(err.to_string().contains("segment.bytes=10"), "{err}");
    std::fs::write(tmp.path().join(RECOVERY_POINT_FILE), b"garbage").unwrap();
    let err = Log::open(disk(), tmp.path(), LogConfig::default(), 0).err().unwrap();
    assert!(err.to_string().contains("recovery point"), "{err}");
}

#[test]
fn a_compacted_log_is_not_cut_by_retention() {
    let tmp = tempfile::tempdir().unwrap();
    let config = LogConfig { retention_bytes: 8192, cleanup: crate::log::CleanupPolicy::COMPACT, ..small() };
    let (mut log, _) = Log::open(disk(), tmp.path(), config, 0).unwrap();
    for i in 0..200 {
        log.append(&mut build(&[format!("value-{i:04}-{}", "x".repeat(60)).as_bytes()], 0), 0, 0).unwrap();
    }
    assert!(log.segment_bases().len() > 3);
    assert_eq!(log.apply_retention(1_000_000_000, log.log_end_offset()).unwrap(), 0);
    assert_eq!(log.log_start_offset(), 0);
}

#[test]
fn a_staged_checkpoint_of_an_unchanged_log_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let d = disk();
    let (mut log, _) = Log::open(d.clone(), tmp.path(), small(), 0).unwrap();
    fill(&mut log, 5, 1);
    let staged = log.checkpoint_stage().unwrap().expect("a changed log stages");
    d.sync_all(tmp.path()).unwrap();
    log.checkpoint_commit(staged).unwrap();
    assert_eq!(log.recovery_point(), log.log_end_offset());
    assert!(log.checkpoint_stage().unwrap().is_none(), "nothing changed since");
    let one = || build(&[b"more"], 2000);
    log.append(&mut one(), 5, 2).unwrap();
    let staged = log.checkpoint_stage().unwrap().expect("an append changes it");
    d.sync_all(tmp.path()).unwrap();
    log.append(&mut one(), 5, 3).unwrap();
    log.checkpoint_commit(staged).unwrap();
    let text = std::fs::read_to_string(tmp.path().join(RECOVERY_POINT_FILE)).unwrap();
    assert_eq!((text.as_str(), log.recovery_point()), ("16\n", 16), "an append between the halves lies past what the sync covered");
    assert!(log.checkpoint_stage().unwrap().is_some(), "and is left for the next checkpoint");
}

/// A header scan (producer state at open and after a truncation) reads the header after a
/// large batch alone, and small batches in chunks; either way it finds every header.
#[test]
fn header_scans_read_the_headers_of_large_batches_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let (d, read, _) = ProbeDisk::shared();
    let (mut log, _) = Log::open(d, tmp.path(), LogConfig::default(), 0).unwrap();
    let big = vec![7u8; 64 << 10];
    for _ in 0..32 {
        log.append(&mut build(&[&big], 1), 0, 0).unwrap();
    }
    for _ in 0..200 {
        log.append(&mut build(&[b"small"], 1), 0, 0).unwrap();
    }
    let before = read.load(std::sync::atomic::Ordering::Relaxed);
    let mut seen = Vec::new();
    log.for_each_header(|h| seen.push(h.base_offset)).unwrap();
    assert_eq!(seen, (0..232).collect::<Vec<i64>>());
    let bytes = read.load(std::sync::atomic::Ordering::Relaxed) - before;
    let small_part = log.size_bytes() - 32 * (64 << 10);
    assert!(bytes <= small_part + 64 * 61, "read {bytes} bytes of a {}-byte log to find 232 headers", log.size_bytes());
}
