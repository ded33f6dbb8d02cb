//! Zero-copy reads (`Log::slice`): the same batches as `Log::read`, and regions that keep their
//! bytes when their segment is deleted and refuse to send once it is cut.

use super::*;
use crate::log::{Records, RegionError};

fn regions(r: &Records) -> &[FileRegion] {
    match r {
        Records::File(regions) => regions,
        Records::Memory(_) => panic!("slice returns file regions"),
    }
}

#[test]
fn slice_answers_the_batches_read_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    fill(&mut log, 200, 0);
    let end = log.log_end_offset();
    let mut spanned = 0;
    for offset in (0..end).step_by(7) {
        for max_bytes in [1, 60, 100, 300, 1000, 5000, 100_000] {
            for upper in [offset + 1, offset + 4, offset + 50, end] {
                let read = log.read(offset, max_bytes, upper).unwrap().bytes;
                let slice = log.slice(offset, max_bytes, upper).unwrap();
                assert_eq!(slice.len(), read.len(), "offset {offset} max {max_bytes} upper {upper}");
                assert_eq!(slice.to_bytes().unwrap(), read, "offset {offset} max {max_bytes} upper {upper}");
                spanned += (regions(&slice).len() > 1) as usize;
            }
        }
    }
    assert!(log.slice(end, 1000, end).unwrap().is_empty());
    assert!(matches!(log.slice(end + 1, 1000, end), Err(LogError::OffsetOutOfRange { .. })));
    // (Index entries every 256 bytes: the large slices skipped ahead through the index.)
    assert_eq!(spanned, 0, "a segment whose batches hold records answers alone, as in Log::read");
}

#[test]
fn a_region_of_a_deleted_segment_still_sends_the_bytes_it_was_read_with() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    fill(&mut log, 200, 0);
    let first = log.segment_bases()[0];
    let bytes = log.read(first, 3000, log.log_end_offset()).unwrap().bytes;
    let slice = log.slice(first, 3000, log.log_end_offset()).unwrap();
    // Every segment file removed (a follower starting over above the leader's log start).
    log.truncate_fully(10_000, 0).unwrap();
    assert!(!tmp.path().join(format!("{}.log", file_stem(first))).exists());
    assert_eq!(slice.to_bytes().unwrap(), bytes, "the open file keeps the unlinked inode's bytes");
}

#[test]
fn a_region_of_a_cut_segment_refuses_to_send_even_after_refilling() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut log, _) = Log::open(disk(), tmp.path(), small(), 0).unwrap();
    fill(&mut log, 20, 0);
    let active = *log.segment_bases().last().unwrap();
    let end = log.log_end_offset();
    let slice = log.slice(active, 100_000, end).unwrap();
    assert!(slice.len() > 200);
    log.truncate_to(active + 3, 0).unwrap();
    assert!(matches!(slice.to_bytes(), Err(RegionError::Cut(..))));
    // Refilled past the region's end with other batches: still refused, never other bytes.
    fill_from(&mut log, active + 3, 30);
    assert!(log.log_end_offset() > end);
    assert!(matches!(slice.to_bytes(), Err(RegionError::Cut(..))));
    // A region bounded after the cut sends the new bytes.
    let again = log.slice(active, 100_000, log.log_end_offset()).unwrap();
    assert_eq!(again.to_bytes().unwrap(), log.read(active, 100_000, log.log_end_offset()).unwrap().bytes);
}

/// Appends `n` batches of 3 records, the first at `offset` (the log end).
fn fill_from(log: &mut Log, offset: i64, n: usize) {
    assert_eq!(log.log_end_offset(), offset);
    for b in 0..n {
        let vals: Vec<Vec<u8>> = (0..3).map(|r| format!("refill-{b}-{r}").into_bytes()).collect();
        let refs: Vec<&[u8]> = vals.iter().map(|v| v.as_slice()).collect();
        log.append(&mut build(&refs, 5000 + b as i64), 6, 0).unwrap();
    }
}
