//! Compaction in bounded steps on real files (the cleaner's turn, `Log::clean_step`): a pass
//! in small steps cleans as a whole pass does while appends go on, a truncation or retention
//! aborts the pass in flight, each producer's last batch survives, dead batches are passed over
//! unread, replaced segments are freed a slice per step, and a step's read cut short inside a
//! source segment goes on from there (as does a fetch's). A log whose owner takes jobs runs
//! its steps as jobs: `clean_job`.

use super::*;
use super::cleaning::{compacted, contents, latest_of, map_bytes, updates};
use crate::log::batch::{build_keyed, KeyValue};
use super::ProbeDisk;
use std::collections::BTreeMap;

/// Runs a pass a few bytes at a time, calling `between` after every step that leaves it in
/// flight; returns the steps taken and what the pass did.
fn clean_in_steps(log: &mut Log, now: u64, budget: usize, mut between: impl FnMut(&mut Log)) -> (usize, Option<CleanStats>) {
    let mut steps = 0;
    loop {
        steps += 1;
        match log.clean_step(now, log.log_end_offset(), map_bytes, budget, clean::Keep::Latest).unwrap() {
            CleanStep::Idle => return (steps, None),
            CleanStep::Working { bytes } => {
                assert!(bytes > 0, "a step makes progress");
                between(log);
            }
            CleanStep::Done { stats, .. } => return (steps, stats),
        }
    }
}

/// Steps a pass (300 bytes a step) until its first group's `.cleaned` files exist.
fn step_until_rewriting(log: &mut Log, now: u64) {
    while cleaned_files(log.dir()).is_empty() {
        assert!(matches!(log.clean_step(now, log.log_end_offset(), map_bytes, 300, clean::Keep::Latest).unwrap(), CleanStep::Working { .. }));
    }
}

fn cleaned_files(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).filter(|n| n.ends_with(".cleaned") || n.ends_with(".swap")).collect()
}

#[test]
fn a_pass_in_small_steps_cleans_as_a_whole_pass_does_while_appends_go_on() {
    let tmp = tempfile::tempdir().unwrap();
    let whole_tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), compacted(), 0).unwrap();
    let (mut whole, _) = Log::open(disk(), whole_tmp.path(), compacted(), 0).unwrap();
    let latest = updates(&mut log, 6, 40, 1_000);
    updates(&mut whole, 6, 40, 1_000);
    log.roll(0).unwrap();
    whole.roll(0).unwrap();
    let expected = whole.clean(10_000, whole.log_end_offset(), map_bytes).unwrap().expect("due");
    let mut appended = Vec::new();
    let (steps, stats) = clean_in_steps(&mut log, 10_000, 200, |log| {
        // Appends land in the active segment between steps, never in the pass's way.
        let value = format!("late-{}", appended.len());
        let info = log.append(&mut build_keyed(&[(Some(b"late"), Some(value.as_bytes()))], 9_000), 2, 0).unwrap();
        appended.push((info.base_offset, value));
    });
    assert_eq!(stats.as_ref(), Some(&expected), "the same pass, in {steps} steps");
    assert!(steps > 20, "small budgets make many steps: {steps}");
    let (after, _) = contents(&log);
    let mut want = latest;
    let (o, v) = appended.last().unwrap().clone();
    want.insert("late".into(), (o, Some(v)));
    assert_eq!(latest_of(&after), want);
    assert_eq!(after.iter().filter(|(_, k, _)| k == "late").count(), appended.len(), "the active segment is not cleaned");
    assert!(cleaned_files(tmp.path()).is_empty());
    log.verify_indexes().unwrap();
}

#[test]
fn a_truncation_aborts_the_pass_in_flight_and_lowers_the_clean_point() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), compacted(), 0).unwrap();
    updates(&mut log, 6, 40, 1_000);
    log.roll(0).unwrap();
    log.clean(10_000, log.log_end_offset(), map_bytes).unwrap().expect("due");
    let clean_point = log.cleaned_to();
    assert_eq!(clean_point, log.log_end_offset());
    // A second dirty range; its pass is cut short mid-rewrite by a truncation below the clean
    // point (a follower told to truncate after an unclean election).
    updates(&mut log, 6, 40, 2_000);
    log.roll(0).unwrap();
    step_until_rewriting(&mut log, 10_000);
    let (before, _) = contents(&log);
    let cut = clean_point - 3;
    log.truncate_to(cut, 0).unwrap();
    assert!(!log.cleaning(), "the pass is gone");
    assert!(cleaned_files(tmp.path()).is_empty(), "and its file");
    let end = log.log_end_offset();
    assert!(end <= cut);
    assert_eq!(log.cleaned_to(), end, "refilled offsets are dirty");
    let (after, _) = contents(&log);
    assert_eq!(after, before.into_iter().filter(|(o, _, _)| *o < end).collect::<Vec<_>>());
    // The lowered clean point is durable.
    log.close(0).unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), compacted(), 0).unwrap();
    assert_eq!(log.cleaned_to(), end);
    // A later pass starts over and finishes.
    updates(&mut log, 6, 5, 3_000);
    log.roll(0).unwrap();
    assert!(log.clean(10_000, log.log_end_offset(), map_bytes).unwrap().is_some());
    log.verify_indexes().unwrap();
}

#[test]
fn retention_aborts_the_pass_in_flight() {
    let tmp = tempfile::tempdir().unwrap();
    let config = LogConfig { cleanup: CleanupPolicy { delete: true, compact: true }, retention_ms: 1_000, ..compacted() };
    let (mut log, _) = Log::open(disk(), tmp.path(), config, 0).unwrap();
    updates(&mut log, 6, 40, 1_000);
    log.roll(0).unwrap();
    step_until_rewriting(&mut log, 3_000);
    assert!(log.apply_retention(10_000, log.log_end_offset()).unwrap() > 0);
    assert!(!log.cleaning());
    assert!(cleaned_files(tmp.path()).is_empty());
    assert_eq!(log.clean_step(10_000, log.log_end_offset(), map_bytes, 300, clean::Keep::Latest).unwrap(), CleanStep::Idle, "nothing closed is left to clean");
}

/// `b` as producer `pid`'s batch number `seq` (producer fields set, CRC redone).
fn as_producer(mut b: Vec<u8>, pid: i64, seq: i32) -> Vec<u8> {
    b[43..51].copy_from_slice(&pid.to_be_bytes());
    b[51..53].copy_from_slice(&0i16.to_be_bytes());
    b[53..57].copy_from_slice(&seq.to_be_bytes());
    let crc = crc32c::crc32c(&b[21..]);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    b
}

#[test]
fn each_producers_last_batch_survives_as_its_own_batch_when_its_records_go() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), compacted(), 0).unwrap();
    let mut last_of_7 = 0;
    for seq in 0..30 {
        let b = as_producer(build_keyed(&[(Some(b"a"), Some(format!("v{seq}").as_bytes()))], 1_000), 7, seq);
        last_of_7 = log.append(&mut b.clone(), 1, 0).unwrap().base_offset;
    }
    // A later write of the same key, by no producer: every record of producer 7 goes.
    log.append(&mut build_keyed(&[(Some(b"a"), Some(b"final"))], 1_000), 1, 0).unwrap();
    log.roll(0).unwrap();
    // In small steps, so the header scan for producers spans several.
    let (steps, stats) = clean_in_steps(&mut log, 10_000, 100, |_| {});
    assert!(stats.is_some() && steps > 5, "{steps} steps");
    let mut batches = Vec::new();
    log.for_each_batch(0, 1 << 20, |h, _| {
        batches.push((h.base_offset, h.producer_id, h.records_count));
        Ok::<(), LogError>(())
    })
    .unwrap();
    let of_7: Vec<_> = batches.iter().filter(|b| b.1 == 7).collect();
    assert_eq!(of_7, vec![&(last_of_7, 7, 0)], "only producer 7's last batch is kept, empty: {batches:?}");
    assert!(batches.len() <= 4, "the rest merged (a group ends at segment.bytes of old segments): {batches:?}");
}

/// A real disk that counts the bytes read through it.
#[test]
fn with_large_batches_the_rewrite_reads_only_the_headers_of_batches_that_lose_everything() {
    // 60 batches of 8 records of ~1.2 KB (~9.8 KB each) over 20 keys in turn: the last 20
    // records survive (two and a half batches), every other batch loses everything.
    let tmp = tempfile::tempdir().unwrap();
    let (d, read, _) = ProbeDisk::shared();
    let config = LogConfig { segment_bytes: 64 << 10, index_interval_bytes: 4096, cleanup: CleanupPolicy::COMPACT, min_cleanable_dirty_ratio_ppm: 0, ..LogConfig::default() };
    let (mut log, _) = Log::open(d.clone(), tmp.path(), config.clone(), 0).unwrap();
    let mut latest = BTreeMap::new();
    for b in 0..60u64 {
        let entries: Vec<(String, String)> = (0..8).map(|i| (format!("k{}", (b * 8 + i) % 20), format!("{b}-{i}-{}", "v".repeat(1_200)))).collect();
        let kv: Vec<KeyValue> = entries.iter().map(|(k, v)| (Some(k.as_bytes()), Some(v.as_bytes()))).collect();
        let info = log.append(&mut build_keyed(&kv, 1_000), 1, 0).unwrap();
        for (i, (k, v)) in entries.into_iter().enumerate() {
            latest.insert(k, (info.base_offset + i as i64, Some(v)));
        }
    }
    log.roll(0).unwrap();
    let size = log.size_bytes();
    read.store(0, std::sync::atomic::Ordering::Relaxed);
    let stats = log.clean(10_000, log.log_end_offset(), map_bytes).unwrap().expect("due");
    let cleaning_read = read.load(std::sync::atomic::Ordering::Relaxed);
    assert!(stats.segments_rewritten >= 5 && stats.keys == 20, "{stats:?}");
    // The map walk reads every byte once; the rewrite reads the survivors' batches and ~61 bytes
    // of each other one (reading them all would be 2x the log).
    assert!(cleaning_read < size + size / 4, "read {cleaning_read} bytes cleaning a {size}-byte log");
    let (after, batches) = contents(&log);
    assert_eq!(latest_of(&after), latest, "the latest of each key, at its offset");
    assert_eq!(after.len(), 20);
    // Each group is one old segment here (they were full): one merged empty batch each, and
    // the survivors' three batches.
    assert!(batches <= stats.segments_rewritten + 3, "the empty batches merged: {batches}");
    log.verify_indexes().unwrap();
    let end = log.log_end_offset();
    log.close(0).unwrap();
    let (log, report) = Log::open(d, tmp.path(), config, 0).unwrap();
    assert!(report.cut.is_none(), "{report:?}");
    assert_eq!((contents(&log).0, log.log_end_offset()), (after, end));
}

#[test]
fn runs_of_dead_batches_passed_over_unread_stop_at_epochs_and_at_producers_last_batches() {
    // One closed segment: 12 batches of epoch 1 (the 6th is producer 9's only batch), 12 of
    // epoch 2, then the one live batch (every key again). Every batch before it loses all.
    // Cleaned whole (1 MiB reads: the first run is passed over, the rest read) and in small
    // steps (each step starts a run where it can: the epoch-2 run is passed over too).
    for step_bytes in [None, Some(150)] {
        let tmp = tempfile::tempdir().unwrap();
        let config = LogConfig { segment_bytes: 1 << 20, index_interval_bytes: 256, cleanup: CleanupPolicy::COMPACT, min_cleanable_dirty_ratio_ppm: 0, ..LogConfig::default() };
        let (mut log, _) = Log::open(disk(), tmp.path(), config, 0).unwrap();
        let kv = |r: usize| -> Vec<u8> { build_keyed(&[(Some(b"a"), Some(format!("a{r}").as_bytes())), (Some(b"b"), Some(format!("b{r}").as_bytes()))], 1_000 + r as i64) };
        let mut producer_batch = 0;
        for r in 0..24 {
            let b = if r == 5 { as_producer(kv(r), 9, 0) } else { kv(r) };
            let info = log.append(&mut b.clone(), 1 + (r >= 12) as i32, 0).unwrap();
            if r == 5 {
                producer_batch = info.base_offset;
            }
        }
        let live = log.append(&mut kv(99), 2, 0).unwrap().base_offset;
        log.roll(0).unwrap();
        match step_bytes {
            None => assert!(log.clean(10_000, log.log_end_offset(), map_bytes).unwrap().is_some()),
            Some(budget) => assert!(clean_in_steps(&mut log, 10_000, budget, |_| {}).1.is_some()),
        }
        let mut batches = Vec::new();
        log.for_each_batch(0, 1 << 20, |h, _| {
            batches.push((h.base_offset, h.last_offset(), h.leader_epoch, h.producer_id, h.records_count));
            Ok::<(), LogError>(())
        })
        .unwrap();
        assert_eq!(
            batches,
            vec![
                (0, producer_batch - 1, 1, -1, 0),
                (producer_batch, producer_batch + 1, 1, 9, 0),
                (producer_batch + 2, 23, 1, -1, 0),
                (24, live - 1, 2, -1, 0),
                (live, live + 1, 2, -1, 2),
            ],
            "one empty batch per run of one epoch, the producer's last batch apart, then the survivors ({step_bytes:?})"
        );
        // Each merged run's timestamps are its first batch's base and its ends' max, as a
        // batch-by-batch walk makes them.
        let first = log.read(0, 1 << 20, log.log_end_offset()).unwrap();
        let h = crate::log::batch::read_header(&first.bytes).unwrap();
        assert_eq!((h.base_timestamp, h.max_timestamp), (1_000, 1_004));
    }
}

/// What this process holds open of files removed from `dir`: their sizes, summed.
fn held_removed(dir: &std::path::Path) -> u64 {
    let prefix = dir.to_string_lossy().into_owned();
    std::fs::read_dir("/proc/self/fd").unwrap().filter_map(|e| {
        let fd = e.ok()?.path();
        let link = std::fs::read_link(&fd).ok()?.to_string_lossy().into_owned();
        (link.starts_with(&prefix) && link.ends_with(" (deleted)")).then(|| std::fs::metadata(&fd).map_or(0, |m| m.len()))
    }).sum()
}

/// The files a swap replaced are freed a slice per later step of the cleaner, then closed,
/// rather than all at once inside the swap's step.
#[test]
fn replaced_segments_are_freed_a_slice_per_step_then_closed() {
    use crate::constants::retired_slice_bytes;
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), LogConfig { segment_bytes: 4 << 20, ..compacted() }, 0).unwrap();
    let value = vec![b'v'; 1000];
    for i in 0..12_000 {
        let key = format!("k{}", i % 10);
        log.append(&mut build_keyed(&[(Some(key.as_bytes()), Some(&value))], 1), 1, 0).unwrap();
    }
    log.roll(0).unwrap();
    let stats = log.clean(10_000, log.log_end_offset(), map_bytes).unwrap().expect("due");
    assert!(stats.segments_rewritten >= 3, "{stats:?}");
    let mut held = held_removed(tmp.path());
    assert!(held > 2 * retired_slice_bytes, "the replaced segments are held after the swap: {held} bytes");
    let mut steps = 0;
    while log.cleaning() {
        assert_eq!(log.clean_step(10_000, log.log_end_offset(), map_bytes, 1 << 20, clean::Keep::Latest).unwrap(), CleanStep::Working { bytes: 0 });
        let now = held_removed(tmp.path());
        assert!(now < held && held - now <= retired_slice_bytes, "one step freed {} bytes", held - now);
        (held, steps) = (now, steps + 1);
    }
    assert_eq!(held, 0, "every replaced file is closed once freed");
    assert!(steps > 3, "{steps} steps");
    assert_eq!(log.clean_step(10_000, log.log_end_offset(), map_bytes, 1 << 20, clean::Keep::Latest).unwrap(), CleanStep::Idle);
}

/// Appends rounds `rounds` of two batches each: the hot keys' large values (superseded by the
/// next round) and one cold key's (never superseded), so a cleaned segment holds an empty
/// batch before each live one.
fn hot_and_cold(log: &mut Log, rounds: std::ops::Range<usize>) {
    let (hot, cold) = ("h".repeat(150), "c".repeat(100));
    for r in rounds {
        log.append(&mut build_keyed(&[(Some(b"hot-a"), Some(hot.as_bytes())), (Some(b"hot-b"), Some(hot.as_bytes()))], 1_000), 1, 0).unwrap();
        log.append(&mut build_keyed(&[(Some(format!("cold-{r}").as_bytes()), Some(cold.as_bytes()))], 1_000), 1, 0).unwrap();
    }
}

#[test]
fn a_group_rewritten_in_small_steps_keeps_the_batches_at_the_end_of_each_source_segment() {
    // The second pass rewrites groups of several segments that the first left as an empty
    // batch before each live one. A step whose read holds only empty batches, cut short by its
    // budget inside one source segment, must go on from there, not from the next segment's
    // base: that skipped the rest of the segment, and the group was swapped in missing a run
    // of offsets (the simulator's seed 600). Every budget must clean as one whole pass does.
    let config = LogConfig { segment_bytes: 755, index_interval_bytes: 183, ..compacted() };
    let passes = [0..12, 12..16];
    let whole_tmp = tempfile::tempdir().unwrap();
    let (mut whole, _) = Log::open(disk(), whole_tmp.path(), config.clone(), 0).unwrap();
    let mut expected = Vec::new();
    for rounds in passes.clone() {
        hot_and_cold(&mut whole, rounds.clone());
        whole.roll(0).unwrap();
        if rounds.start > 0 {
            // What the second pass reads first: segments holding an empty batch with a live
            // one after it, several to a group.
            let closed = &whole.segments[..whole.segments.len() - 1];
            let layouts: Vec<Vec<i32>> = closed.iter().map(|s| {
                let mut counts = Vec::new();
                s.for_each_header(&mut |h| counts.push(h.records_count)).unwrap();
                counts
            }).collect();
            assert!(layouts.iter().filter(|c| c.windows(2).any(|w| w[0] == 0 && w[1] > 0)).count() > 1, "{layouts:?}");
        }
        expected.push(whole.clean(10_000, whole.log_end_offset(), map_bytes).unwrap().expect("due"));
    }
    let want = contents(&whole);
    let mut differ = Vec::new();
    for budget in (100..260).step_by(4) {
        let tmp = tempfile::tempdir().unwrap();
        let (mut log, _) = Log::open(disk(), tmp.path(), config.clone(), 0).unwrap();
        let mut stats = Vec::new();
        for rounds in passes.clone() {
            hot_and_cold(&mut log, rounds);
            log.roll(0).unwrap();
            stats.push(clean_in_steps(&mut log, 10_000, budget, |_| {}).1.expect("due"));
        }
        // `contents` checks that the batches tile the offsets from the log start to the end.
        if stats != expected || contents(&log) != want {
            differ.push(budget);
        }
        log.verify_indexes().unwrap();
    }
    assert_eq!(differ, Vec::<usize>::new(), "budgets whose passes differ from one whole pass");
}

#[test]
fn a_read_of_empty_batches_cut_short_inside_a_segment_skips_no_batch() {
    // The same cut seen by a fetch: from an empty batch with a live one after it in its
    // segment, `max_bytes` fits the empty batch and the next segment's first, not the live one.
    // Both `Log::read` and `Log::slice` answer the empty batch alone (batches tile from it).
    let config = LogConfig { segment_bytes: 755, index_interval_bytes: 183, ..compacted() };
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), config, 0).unwrap();
    hot_and_cold(&mut log, 0..12);
    log.roll(0).unwrap();
    log.clean(10_000, log.log_end_offset(), map_bytes).unwrap().expect("due");
    let mut cases = 0;
    for pair in log.segments.windows(2) {
        let mut headers = Vec::new();
        pair[0].for_each_header(&mut |h| headers.push(*h)).unwrap();
        let Some(first_after) = pair[1].position_of(pair[1].base_offset).unwrap().map(|(_, h)| h) else { continue };
        for w in headers.windows(2) {
            let (empty, live) = (&w[0], &w[1]);
            let max_bytes = empty.size + first_after.size;
            if empty.records_count != 0 || live.records_count == 0 || max_bytes >= empty.size + live.size {
                continue;
            }
            cases += 1;
            let upper = log.log_end_offset();
            let read = log.read(empty.base_offset, max_bytes, upper).unwrap().bytes;
            let slice = log.slice(empty.base_offset, max_bytes, upper).unwrap().to_bytes().unwrap();
            assert_eq!(slice, read);
            let mut next = empty.base_offset;
            for (h, _) in crate::log::read::batch_ranges(&read).unwrap() {
                assert_eq!(h.base_offset, next, "batches tile from the read's offset");
                next = h.next_offset();
            }
            assert_eq!(next, empty.next_offset(), "the empty batch alone");
        }
    }
    assert!(cases > 0, "some segment holds an empty batch before a live one that does not fit");
}
