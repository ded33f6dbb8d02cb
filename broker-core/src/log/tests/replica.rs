//! Replication on the log: the leader-epoch cache, follower appends, durable truncation. Each
//! change is checked against a reopen of the same directory: the log that comes back must equal
//! the one left (batches, bounds, epoch cache), since the cache is derived and never stored.
use super::super::batch::{build, validate};
use super::super::epochs::EpochEntry;
use super::super::*;
use super::{disk, read_all, small, truncate_file, value};
use crate::storage::hooked::{Hook, Hooked, Op};
use crate::storage::{Disk, FileDisk};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Appends `n` leader batches of 3 records under `epoch`; timestamps 1000 + batch number.
fn lead(log: &mut Log, epoch: i32, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|_| {
            let b = (log.log_end_offset() / 3) as usize;
            let vals: Vec<Vec<u8>> = (0..3).map(|r| value(b * 3 + r)).collect();
            let refs: Vec<&[u8]> = vals.iter().map(|v| v.as_slice()).collect();
            let mut batch = build(&refs, 1000 + b as i64);
            log.append(&mut batch, epoch, 0).unwrap();
            batch
        })
        .collect()
}

/// Everything a reopen must give back.
#[derive(Debug, PartialEq)]
struct State {
    start: i64,
    end: i64,
    bases: Vec<i64>,
    batches: Vec<Vec<u8>>,
    epochs: Vec<EpochEntry>,
}

fn state(log: &Log) -> State {
    State {
        start: log.log_start_offset(),
        end: log.log_end_offset(),
        bases: log.segment_bases(),
        batches: read_all(log),
        epochs: log.epochs().entries().to_vec(),
    }
}

/// Drops `log` without closing it (a crash of the process, page cache kept) and checks that
/// reopening gives the same log, with nothing cut.
fn assert_reopens_equal(log: Log, dir: &Path, config: LogConfig) -> Log {
    let before = state(&log);
    drop(log);
    let (log, report) = Log::open(disk(), dir, config, 0).unwrap();
    assert_eq!(report.cut, None);
    assert_eq!(state(&log), before);
    log.verify_indexes().unwrap();
    log
}

fn entries(pairs: &[(i32, i64)]) -> Vec<EpochEntry> {
    pairs.iter().map(|&(epoch, start_offset)| EpochEntry { epoch, start_offset }).collect()
}

fn seg_path(dir: &Path, base: i64, ext: &str) -> PathBuf {
    dir.join(format!("{}.{ext}", file_stem(base)))
}

fn read_checkpoint(dir: &Path) -> i64 {
    std::fs::read_to_string(dir.join(RECOVERY_POINT_FILE)).unwrap().trim().parse().unwrap()
}

#[test]
fn epoch_cache_follows_appends_and_is_derived_again_at_open() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    assert_eq!(log.latest_epoch(), None);
    lead(&mut log, -1, 2); // unstamped: no epoch
    lead(&mut log, 0, 20);
    lead(&mut log, 2, 30);
    lead(&mut log, 1, 5); // a stale leader's epoch: ignored
    lead(&mut log, 3, 20);
    assert!(log.segment_bases().len() >= 4, "epochs span segments: {:?}", log.segment_bases());
    assert_eq!(log.epochs().entries(), entries(&[(0, 6), (2, 66), (3, 171)]));
    assert_eq!(log.latest_epoch(), Some(3));
    assert_eq!(log.end_offset_for_epoch(3, None), (3, 231));
    assert_eq!(log.end_offset_for_epoch(2, None), (2, 171));
    assert_eq!(log.end_offset_for_epoch(1, None), (0, 66));
    assert_eq!(log.end_offset_for_epoch(4, Some(4)), (4, 231));
    assert_eq!(log.end_offset_for_epoch(3, Some(4)), (3, 231));
    // Unclosed (segments scanned) and closed (segments trusted) opens both derive it.
    let log = assert_reopens_equal(log, tmp.path(), small());
    log.close(0).unwrap();
    let (log, report) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    assert_eq!(report.segments_trusted, log.segment_bases().len() - 1);
    assert_eq!(log.epochs().entries(), entries(&[(0, 6), (2, 66), (3, 171)]));
}

#[test]
fn retention_trims_the_epoch_cache_to_the_log_start() {
    let tmp = tempfile::tempdir().unwrap();
    let config = LogConfig { retention_bytes: 8192, ..small() };
    let (mut log, _) = Log::open(disk(), tmp.path(), config.clone(), 0).unwrap();
    lead(&mut log, 1, 60);
    lead(&mut log, 2, 20);
    assert!(log.apply_retention(0, i64::MAX).unwrap() > 0);
    let start = log.log_start_offset();
    assert!(start > 0 && start < 180, "retention must stop inside epoch 1: {start}");
    assert_eq!(log.epochs().entries(), entries(&[(1, start), (2, 180)]));
    assert_eq!(log.end_offset_for_epoch(0, None), (0, start), "below the first epoch: it ends where the first starts");
    assert_reopens_equal(log, tmp.path(), config);
}

/// A leader with three epochs over several segments, and its batches.
fn leader(dir: &Path) -> (Log, Vec<Vec<u8>>) {
    let (mut log, _) = Log::open(disk(), dir, small(), 0).unwrap();
    let mut sent = lead(&mut log, 1, 30);
    sent.extend(lead(&mut log, 4, 30));
    sent.extend(lead(&mut log, 6, 30));
    (log, sent)
}

#[test]
fn follower_append_keeps_the_leaders_bytes_and_drops_a_partial_tail() {
    let tmp = tempfile::tempdir().unwrap();
    let (leader, sent) = leader(&tmp.path().join("leader"));
    let dir = tmp.path().join("follower");
    let (mut follower, _) = Log::open(disk(), &dir, small(), 0).unwrap();
    let mut fetches = 0;
    while follower.log_end_offset() < leader.log_end_offset() {
        // A fetch of at most 1000 bytes that ends mid-batch, as a byte-limited response does.
        let fetched = leader.read(follower.log_end_offset(), 1 << 20, leader.log_end_offset()).unwrap();
        let cut = fetched.bytes.len().min(1000);
        let whole = batch::whole_batches(&fetched.bytes[..cut]).unwrap();
        let before = follower.log_end_offset();
        let info = follower.append_replicated(&fetched.bytes[..cut], 0).unwrap().expect("a whole batch");
        assert_eq!(info.base_offset, before);
        assert_eq!(info.last_offset, whole.last().unwrap().last_offset());
        assert_eq!(info.max_timestamp, whole.iter().map(|h| h.max_timestamp).max().unwrap());
        assert!(!info.flushed);
        fetches += 1;
    }
    assert!(fetches > 10);
    assert_eq!(state(&follower), state(&leader), "same bytes, same segments, same epochs");
    assert_eq!(read_all(&follower).len(), sent.len());
    let h = validate(&read_all(&follower)[40], usize::MAX).unwrap();
    assert_eq!((h.base_offset, h.leader_epoch), (120, 4), "offsets and epochs are the leader's");
    follower.verify_indexes().unwrap();
    assert_eq!(follower.offset_for_timestamp(1070).unwrap(), Some((210, 1070)));
    assert_reopens_equal(follower, &dir, small());
}

#[test]
fn follower_append_refuses_gaps_and_bad_batches_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (leader, sent) = leader(&tmp.path().join("leader"));
    let (mut follower, _) = Log::open(disk(), &tmp.path().join("follower"), small(), 0).unwrap();
    follower.append_replicated(&sent[..2].concat(), 0).unwrap();
    let before = state(&follower);
    let ahead = follower.append_replicated(&sent[3], 0);
    assert!(matches!(ahead, Err(LogError::NonContiguous { expected: 6, found: 9 })), "{ahead:?}");
    let behind = follower.append_replicated(&sent[1], 0);
    assert!(matches!(behind, Err(LogError::NonContiguous { expected: 6, found: 3 })), "{behind:?}");
    let gap = follower.append_replicated(&[sent[2].clone(), sent[4].clone()].concat(), 0);
    assert!(matches!(gap, Err(LogError::NonContiguous { expected: 9, found: 12 })), "{gap:?}");
    let mut bad = [sent[2].clone(), sent[3].clone()].concat();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    let crc = follower.append_replicated(&bad, 0);
    assert!(matches!(crc, Err(LogError::InvalidBatch(BatchError::BadCrc { .. }))), "{crc:?}");
    assert_eq!(follower.append_replicated(&sent[2][..50], 0).unwrap(), None, "only a partial batch");
    assert_eq!(follower.append_replicated(&[], 0).unwrap(), None);
    assert_eq!(state(&follower), before, "a refused fetch changes nothing");
    drop(leader);
}

#[test]
fn follower_append_follows_the_flush_policy_by_records() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, sent) = leader(&tmp.path().join("leader"));
    let config = LogConfig { flush: FlushPolicy::EveryMessages(7), ..small() };
    let (mut follower, _) = Log::open(disk(), &tmp.path().join("follower"), config, 0).unwrap();
    let flushed = |log: &mut Log, from: usize, to: usize| log.append_replicated(&sent[from..to].concat(), 0).unwrap().unwrap().flushed;
    assert!(!flushed(&mut follower, 0, 2), "6 records of 7");
    assert!(flushed(&mut follower, 2, 3), "9 records: one flush for the whole fetch");
    assert_eq!(follower.recovery_point(), 9);
    assert!(flushed(&mut follower, 3, 6), "9 records in one fetch");
    assert_eq!(follower.recovery_point(), 18);
}

#[test]
fn truncation_inside_the_active_segment_and_inside_a_batch() {
    let tmp = tempfile::tempdir().unwrap();
    let config = LogConfig::default();
    let (mut log, _) = Log::open(disk(), tmp.path(), config.clone(), 0).unwrap();
    let mut sent = lead(&mut log, 1, 5);
    sent.extend(lead(&mut log, 2, 5));
    log.truncate_to(log.log_end_offset(), 0).unwrap();
    log.truncate_to(1_000, 0).unwrap();
    assert_eq!(log.log_end_offset(), 30, "at or past the end: nothing to do");
    log.truncate_to(22, 0).unwrap();
    assert_eq!(log.log_end_offset(), 21, "offset 22 is inside batch 21..=23: the whole batch goes");
    assert_eq!(read_all(&log), sent[..7].to_vec());
    assert_eq!(log.epochs().entries(), entries(&[(1, 0), (2, 15)]));
    log.truncate_to(15, 0).unwrap();
    assert_eq!(log.epochs().entries(), entries(&[(1, 0)]), "epoch 2 started at the cut");
    assert_eq!((log.log_end_offset(), log.recovery_point(), read_checkpoint(tmp.path())), (15, 15, 15));
    let bytes: u64 = sent[..5].iter().map(|b| b.len() as u64).sum();
    assert_eq!(std::fs::metadata(seg_path(tmp.path(), 0, "log")).unwrap().len(), bytes);
    assert_eq!(log.offset_for_timestamp(1005).unwrap(), None, "timestamps of removed batches are gone");
    // Appends continue from the cut, under a new epoch.
    let more = lead(&mut log, 3, 2);
    assert_eq!(log.epochs().entries(), entries(&[(1, 0), (3, 15)]));
    assert_eq!(read_all(&log), [&sent[..5], &more[..]].concat());
    assert_reopens_equal(log, tmp.path(), config);
}

#[test]
fn truncation_at_a_segment_boundary_leaves_that_segment_empty() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    let mut sent = lead(&mut log, 1, 60);
    sent.extend(lead(&mut log, 2, 60));
    let bases = log.segment_bases();
    assert!(bases.len() >= 5, "{bases:?}");
    log.truncate_to(bases[2], 0).unwrap();
    assert_eq!(log.segment_bases(), bases[..3].to_vec());
    assert_eq!(log.log_end_offset(), bases[2]);
    assert_eq!(std::fs::metadata(seg_path(tmp.path(), bases[2], "log")).unwrap().len(), 0);
    for &gone in &bases[3..] {
        for ext in ["log", "index", "timeindex"] {
            assert!(!seg_path(tmp.path(), gone, ext).exists(), "{gone}.{ext} survived");
        }
    }
    assert_eq!(read_all(&log), sent[..(bases[2] / 3) as usize].to_vec());
    let log = assert_reopens_equal(log, tmp.path(), small());
    let mut log = log;
    let info = log.append(&mut build(&[b"next"], 5), 7, 0).unwrap();
    assert_eq!(info.base_offset, bases[2]);
    assert_eq!(log.latest_epoch(), Some(7));
    assert_reopens_equal(log, tmp.path(), small());
}

#[test]
fn truncation_across_several_segments_fixes_indexes_and_timestamps() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    let mut sent = lead(&mut log, 1, 60);
    sent.extend(lead(&mut log, 2, 40));
    log.close(0).unwrap(); // checkpoint at 300: the truncation must lower it
    let (mut log, _) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    let bases = log.segment_bases();
    // Deep inside the second segment, several segments back from the end.
    let offset = bases[1] + (bases[2] - bases[1]) / 2 + 1;
    log.truncate_to(offset, 0).unwrap();
    let end = log.log_end_offset();
    assert!(end <= offset && end > offset - 3 && end % 3 == 0, "cut at the base of the batch holding {offset}: {end}");
    assert_eq!(log.segment_bases(), bases[..2].to_vec());
    assert_eq!((log.recovery_point(), read_checkpoint(tmp.path())), (end, end));
    assert_eq!(log.epochs().entries(), entries(&[(1, 0)]));
    log.verify_indexes().unwrap();
    let last_ts = 1000 + end / 3 - 1;
    assert_eq!(log.offset_for_timestamp(last_ts).unwrap(), Some((end - 3, last_ts)));
    assert_eq!(log.offset_for_timestamp(last_ts + 1).unwrap(), None);
    assert_eq!(log.segments[1].max_timestamp(), last_ts, "time retention must see the cut segment's real age");
    // Index entries past the cut are gone from the files as well as from memory.
    let idx = std::fs::metadata(seg_path(tmp.path(), bases[1], "index")).unwrap().len() as usize;
    let cut_pos: usize = sent[(bases[1] / 3) as usize..(end / 3) as usize].iter().map(|b| b.len()).sum();
    assert!(idx / 8 <= cut_pos / 256 + 1, "{idx} index bytes for {cut_pos} log bytes");
    // Appends continue from the cut, roll and reopen as usual.
    let more = lead(&mut log, 3, 40);
    assert!(log.segment_bases().len() > 2);
    assert_eq!(log.epochs().entries(), entries(&[(1, 0), (3, end)]));
    assert_eq!(read_all(&log), [&sent[..(end / 3) as usize], &more[..]].concat());
    log.verify_indexes().unwrap();
    assert_reopens_equal(log, tmp.path(), small());
}

#[test]
fn truncation_below_the_log_start_starts_over_there() {
    let tmp = tempfile::tempdir().unwrap();
    let config = LogConfig { retention_bytes: 8192, ..small() };
    let (mut log, _) = Log::open(disk(), tmp.path(), config.clone(), 0).unwrap();
    lead(&mut log, 1, 100);
    log.apply_retention(0, i64::MAX).unwrap();
    let (start, old) = (log.log_start_offset(), log.segment_bases());
    assert!(start > 3);
    log.truncate_to(start - 2, 0).unwrap();
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (start - 2, start - 2));
    assert_eq!(log.segment_bases(), vec![start - 2]);
    assert_eq!(log.latest_epoch(), None);
    assert_eq!((log.recovery_point(), read_checkpoint(tmp.path())), (start - 2, start - 2));
    for base in old {
        assert!(!seg_path(tmp.path(), base, "log").exists());
    }
    assert!(matches!(log.read(0, 100, 1000), Err(LogError::OffsetOutOfRange { .. })));
    let log = assert_reopens_equal(log, tmp.path(), config.clone());
    // A follower far behind the leader's log start jumps ahead of its own end.
    let mut log = log;
    log.truncate_fully(5_000, 0).unwrap();
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (5_000, 5_000));
    assert_eq!(log.append(&mut build(&[b"x"], 5), 9, 0).unwrap().base_offset, 5_000);
    assert_eq!(log.epochs().entries(), entries(&[(9, 5_000)]));
    assert_reopens_equal(log, tmp.path(), config);
}

/// The checkpoint said 30 when the log was cut to 15. Appends after the cut are unsynced; if
/// one tears, reopening must cut it, not call it synced data gone bad (which a stale
/// checkpoint at 30 would).
#[test]
fn truncation_leaves_no_checkpoint_vouching_for_removed_offsets() {
    let tmp = tempfile::tempdir().unwrap();
    let config = LogConfig::default();
    let (mut log, _) = Log::open(disk(), tmp.path(), config.clone(), 0).unwrap();
    let sent = lead(&mut log, 1, 10);
    log.close(0).unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), config.clone(), 0).unwrap();
    log.truncate_to(15, 0).unwrap();
    let more = lead(&mut log, 2, 4);
    drop(log);
    let path = seg_path(tmp.path(), 0, "log");
    let kept: u64 = sent[..5].iter().chain(&more[..2]).map(|b| b.len() as u64).sum();
    truncate_file(&path, kept + 20); // the third batch after the cut is torn
    let (log, report) = Log::open(disk(), tmp.path(), config, 0).expect("a torn unsynced tail is cut, not corruption");
    assert_eq!(report.cut.map(|c| c.position), Some(kept));
    assert_eq!(log.log_end_offset(), 21);
    assert_eq!(read_all(&log), [&sent[..5], &more[..2]].concat());
    assert_eq!(log.epochs().entries(), entries(&[(1, 0), (2, 15)]));
}

/// A disk hook that records the namespace and sync operations the log makes, in order.
/// It can also fail every file truncation, on demand.
#[derive(Default)]
struct Recorder {
    ops: Arc<Mutex<Vec<String>>>,
    fail_truncate: Arc<AtomicBool>,
}
fn name_of(p: &Path) -> String {
    p.file_name().map_or(String::new(), |n| n.to_string_lossy().into_owned())
}
impl Recorder {
    /// The real disk, recorded by `self`.
    fn disk(self) -> Arc<dyn Disk> {
        Arc::new(Hooked::new(Arc::new(FileDisk::new()), Arc::new(self)))
    }
}
impl Hook for Recorder {
    fn before(&self, op: Op<'_>) -> std::io::Result<()> {
        let note = match op {
            Op::Truncate { .. } if self.fail_truncate.load(Ordering::SeqCst) => return Err(std::io::Error::other("EIO")),
            Op::Truncate { path, len } => format!("truncate {} {len}", name_of(path)),
            Op::Sync { path } => format!("sync {}", name_of(path)),
            Op::Rename { to, .. } => format!("rename {}", name_of(to)),
            Op::Remove { path } => format!("remove {}", name_of(path)),
            Op::SyncDir { .. } => "sync_dir".into(),
            Op::SyncAll { .. } => "sync_all".into(),
            Op::WriteAt { .. } | Op::Append { .. } => return Ok(()),
        };
        self.ops.lock().unwrap().push(note);
        Ok(())
    }
}

#[test]
fn truncation_removes_newest_first_and_syncs_the_directory_before_the_cut() {
    let tmp = tempfile::tempdir().unwrap();
    let ops = Arc::new(Mutex::new(Vec::new()));
    let d = Recorder { ops: ops.clone(), fail_truncate: Default::default() }.disk();
    let (mut log, _) = Log::open(d, tmp.path(), small(), 0).unwrap();
    lead(&mut log, 1, 100);
    let bases = log.segment_bases();
    assert!(bases.len() >= 4);
    ops.lock().unwrap().clear();
    log.truncate_to(bases[1] + 4, 0).unwrap();
    let ops = ops.lock().unwrap().clone();
    let at = |op: &str| ops.iter().position(|o| o.starts_with(op)).unwrap_or_else(|| panic!("no `{op}` in {ops:?}"));
    let removed: Vec<&String> = ops.iter().filter(|o| o.starts_with("remove") && o.ends_with(".log")).collect();
    let expected: Vec<String> = bases[2..].iter().rev().map(|&b| format!("remove {}.log", file_stem(b))).collect();
    assert_eq!(removed, expected.iter().collect::<Vec<_>>(), "newest first");
    let cut_log = format!("{}.log", file_stem(bases[1]));
    let last_remove = ops.iter().rposition(|o| o.starts_with("remove")).unwrap();
    let dir_sync = at("sync_dir");
    let cut = at(&format!("truncate {cut_log}"));
    let cut_sync = at(&format!("sync {cut_log}"));
    assert!(last_remove < dir_sync && dir_sync < cut && cut < cut_sync, "{ops:?}");
    assert!(at(&format!("rename {RECOVERY_POINT_FILE}")) > cut_sync, "checkpoint after the cut: {ops:?}");
}

#[test]
fn a_failed_truncation_takes_the_log_offline_and_reopens_valid() {
    let tmp = tempfile::tempdir().unwrap();
    let fail = Arc::new(AtomicBool::new(false));
    let d = Recorder { ops: Default::default(), fail_truncate: fail.clone() }.disk();
    let (mut log, _) = Log::open(d, tmp.path(), small(), 0).unwrap();
    let sent = lead(&mut log, 1, 100);
    let bases = log.segment_bases();
    fail.store(true, Ordering::SeqCst);
    assert!(log.truncate_to(bases[0] + 4, 0).is_err());
    fail.store(false, Ordering::SeqCst);
    assert!(log.failure().unwrap().contains("truncation failed"), "{:?}", log.failure());
    assert!(matches!(log.append(&mut build(&[b"x"], 1), 1, 0), Err(LogError::Failed(_))));
    assert!(matches!(log.truncate_to(0, 0), Err(LogError::Failed(_))));
    drop(log);
    // The later segments were removed before the cut failed: what is left is a dense prefix.
    let (log, _) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    assert_eq!(log.log_end_offset(), bases[1]);
    assert_eq!(read_all(&log), sent[..(bases[1] / 3) as usize].to_vec());
    log.verify_indexes().unwrap();
}
