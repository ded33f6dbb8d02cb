use super::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use AckType::{Accept, Gap, Reject, Release};
use RecordState::{Acknowledged, Archived, Available};

const A: &str = "member-a";
const B: &str = "member-b";

fn limits() -> Limits {
    Limits { lock_ms: 1000, delivery_limit: 3, max_locks: 100 }
}

fn run(first: i64, last: i64, count: i16) -> Acquired {
    Acquired { first, last, count }
}

/// Acquires and checks the invariant after.
fn take(p: &mut SharePartition, member: &str, batches: &[(i64, i64)], max_records: usize, now: u64) -> Acquisition {
    let got = p.acquire(member, batches, max_records, now);
    p.check();
    got
}

fn ack(p: &mut SharePartition, member: &str, first: i64, last: i64, types: &[AckType]) -> Result<(), Code> {
    let result = p.acknowledge(member, first, last, types, 0);
    p.check();
    result
}

const FIFTEEN: [(i64, i64); 3] = [(0, 4), (5, 9), (10, 14)];

#[test]
fn wire_numbers_are_kafkas() {
    for (state, n) in [(Available, 0), (RecordState::Acquired, 1), (Acknowledged, 2), (Archived, 4)] {
        assert_eq!(state.wire(), n);
        assert_eq!(RecordState::from_wire(n), Some(state));
    }
    assert_eq!(RecordState::from_wire(3), None);
    for (t, n) in [(Gap, 0), (Accept, 1), (Release, 2), (Reject, 3)] {
        assert_eq!(t.wire(), n);
        assert_eq!(AckType::from_wire(n), Some(t));
    }
    assert_eq!(AckType::from_wire(4), None);
}

#[test]
fn new_records_are_taken_in_whole_batches() {
    let mut p = SharePartition::new(0, limits());
    assert_eq!(p.fetch_from(), Some(0));
    // 7 records asked: the second batch is begun at 5 taken, and finished.
    let got = take(&mut p, A, &FIFTEEN, 7, 0);
    assert_eq!(got, Acquisition { runs: vec![run(0, 9, 1)], batches_used: 2 });
    assert_eq!(got.records(), 10);
    assert_eq!((p.start(), p.end(), p.in_flight()), (0, 10, 10));
    assert_eq!(p.state_of(3), Some((RecordState::Acquired, 1)));
    assert_eq!(p.fetch_from(), Some(10));
    assert_eq!(p.acquired_by(A), 10);
    // Exactly 5 asked: one batch, the next one is not begun.
    let got = take(&mut p, B, &[(10, 14), (15, 19)], 5, 0);
    assert_eq!(got, Acquisition { runs: vec![run(10, 14, 1)], batches_used: 1 });
    // Nothing asked: nothing taken.
    assert_eq!(take(&mut p, B, &[(15, 19)], 0, 0), Acquisition::default());
    assert_eq!(p.end(), 15);
}

#[test]
fn released_records_are_redelivered_before_new_ones() {
    let mut p = SharePartition::new(0, limits());
    take(&mut p, A, &FIFTEEN[..2], 10, 0);
    ack(&mut p, A, 0, 4, &[Release]).unwrap();
    assert_eq!(p.state_of(0), Some((Available, 1)));
    assert_eq!(p.fetch_from(), Some(0));
    let mut q = p.clone();
    // Room for more: the released ones again (A's 5..9 skipped), then the new batch.
    let got = take(&mut p, B, &FIFTEEN, 100, 0);
    assert_eq!(got, Acquisition { runs: vec![run(0, 4, 2), run(10, 14, 1)], batches_used: 3 });
    // Redeliveries are not rounded up to the batch.
    let got = take(&mut q, B, &FIFTEEN, 3, 0);
    assert_eq!(got, Acquisition { runs: vec![run(0, 2, 2)], batches_used: 1 });
    assert_eq!(q.fetch_from(), Some(3));
    assert_eq!(q.end(), 10);
}

#[test]
fn a_lock_times_out_and_the_delivery_limit_archives() {
    let mut p = SharePartition::new(0, Limits { delivery_limit: 2, ..limits() });
    take(&mut p, A, &FIFTEEN[..2], 10, 0);
    assert_eq!(p.next_deadline(), Some(1000));
    assert!(!p.tick(999));
    assert!(p.tick(1000));
    assert_eq!(p.state_of(0), Some((Available, 1)));
    assert_eq!(p.next_deadline(), None);
    assert_eq!(p.acquired_by(A), 0);
    // An expired lock cannot be acknowledged.
    assert_eq!(ack(&mut p, A, 0, 4, &[Accept]), Err(Code::InvalidRecordState));
    let got = take(&mut p, B, &FIFTEEN[..2], 10, 1000);
    assert_eq!(got.runs, vec![run(0, 9, 2)]);
    assert_eq!(p.next_deadline(), Some(2000));
    assert!(p.tick(2000));
    // Delivered twice: archived, and the start moves past them all.
    assert_eq!((p.start(), p.end()), (10, 10));
    assert_eq!(p.state_of(0), None);
    assert_eq!(p.fetch_from(), Some(10));
}

#[test]
fn deadlines_are_kept_in_order() {
    let mut p = SharePartition::new(0, limits());
    take(&mut p, A, &[(0, 1)], 10, 500);
    take(&mut p, B, &[(2, 3)], 10, 100);
    assert_eq!(p.next_deadline(), Some(1100));
    assert!(p.tick(1100));
    assert_eq!((p.acquired_by(A), p.acquired_by(B)), (2, 0));
    assert_eq!(p.next_deadline(), Some(1500));
    ack(&mut p, A, 0, 1, &[Accept]).unwrap();
    assert_eq!(p.next_deadline(), None);
}

#[test]
fn reject_and_gap_archive_release_offers_again() {
    let mut p = SharePartition::new(0, limits());
    take(&mut p, A, &[(0, 4)], 10, 0);
    ack(&mut p, A, 0, 4, &[Accept, Reject, Gap, Release, Accept]).unwrap();
    assert_eq!(p.start(), 3);
    assert_eq!(p.state_of(3), Some((Available, 1)));
    assert_eq!(p.state_of(4), Some((Acknowledged, 1)));
    assert_eq!(p.acquired_by(A), 0);
    // A release at the delivery limit archives.
    let mut p = SharePartition::new(0, Limits { delivery_limit: 1, ..limits() });
    take(&mut p, A, &[(0, 4)], 10, 0);
    ack(&mut p, A, 0, 4, &[Release]).unwrap();
    assert_eq!((p.start(), p.end()), (5, 5));
}

#[test]
fn only_the_holder_acknowledges_and_a_refused_batch_changes_nothing() {
    let mut p = SharePartition::new(0, limits());
    take(&mut p, A, &[(0, 4)], 5, 0);
    take(&mut p, B, &[(5, 9)], 5, 0);
    let before = p.clone();
    assert_eq!(ack(&mut p, B, 0, 4, &[Accept]), Err(Code::InvalidRecordState));
    // Partly A's, partly B's: all or nothing.
    assert_eq!(ack(&mut p, A, 3, 6, &[Accept]), Err(Code::InvalidRecordState));
    // Past the end, before the start.
    assert_eq!(ack(&mut p, B, 5, 10, &[Accept]), Err(Code::InvalidRecordState));
    assert_eq!(ack(&mut p, A, -1, 2, &[Accept]), Err(Code::InvalidRecordState));
    assert_eq!(p, before);
    ack(&mut p, A, 0, 4, &[Accept]).unwrap();
    // Acknowledged (and gone past the start): not again.
    assert_eq!(ack(&mut p, A, 0, 0, &[Accept]), Err(Code::InvalidRecordState));
}

#[test]
fn malformed_acknowledgements_are_invalid_requests() {
    let mut p = SharePartition::new(0, limits());
    take(&mut p, A, &[(0, 4)], 5, 0);
    let before = p.clone();
    assert_eq!(ack(&mut p, A, 4, 0, &[Accept]), Err(Code::InvalidRequest));
    assert_eq!(ack(&mut p, A, 0, 4, &[]), Err(Code::InvalidRequest));
    assert_eq!(ack(&mut p, A, 0, 4, &[Accept, Accept]), Err(Code::InvalidRequest));
    assert_eq!(ack(&mut p, A, 0, 4, &[Accept; 6]), Err(Code::InvalidRequest));
    assert_eq!(ack(&mut p, A, i64::MIN, i64::MAX, &[Accept, Accept]), Err(Code::InvalidRequest));
    assert_eq!(ack(&mut p, A, i64::MIN, i64::MAX, &[Accept]), Err(Code::InvalidRecordState));
    assert_eq!(p, before);
}

#[test]
fn the_start_moves_past_the_terminal_prefix_only() {
    let mut p = SharePartition::new(0, limits());
    take(&mut p, A, &FIFTEEN[..2], 10, 0);
    ack(&mut p, A, 2, 4, &[Accept]).unwrap();
    assert_eq!(p.start(), 0);
    assert_eq!(p.state_of(3), Some((Acknowledged, 1)));
    ack(&mut p, A, 0, 1, &[Accept]).unwrap();
    assert_eq!(p.start(), 5);
    ack(&mut p, A, 7, 7, &[Reject]).unwrap();
    assert_eq!(p.start(), 5);
    ack(&mut p, A, 5, 6, &[Accept]).unwrap();
    assert_eq!(p.start(), 8);
    assert_eq!(p.in_flight(), 2);
}

#[test]
fn max_locks_stops_new_records_until_the_start_moves() {
    let mut p = SharePartition::new(0, Limits { max_locks: 10, ..limits() });
    let batches = [(0, 3), (4, 7), (8, 11), (12, 15)];
    // Never more than 10 in flight, even inside a batch: the third stops at offset 9.
    let got = take(&mut p, A, &batches, 100, 0);
    assert_eq!(got, Acquisition { runs: vec![run(0, 9, 1)], batches_used: 3 });
    assert_eq!(p.fetch_from(), None);
    assert_eq!(take(&mut p, B, &batches[2..], 100, 0), Acquisition::default());
    // A released record is still offered at the limit.
    ack(&mut p, A, 5, 5, &[Release]).unwrap();
    assert_eq!(p.fetch_from(), Some(5));
    assert_eq!(take(&mut p, B, &batches[1..], 100, 0).runs, vec![run(5, 5, 2)]);
    assert_eq!(p.fetch_from(), None);
    ack(&mut p, A, 0, 3, &[Accept]).unwrap();
    // The rest of the third batch first (a read at `end` starts at its batch), then the fourth.
    assert_eq!(p.fetch_from(), Some(10));
    assert_eq!(take(&mut p, B, &batches[2..], 100, 0).runs, vec![run(10, 13, 1)]);
}

#[test]
fn compaction_gaps_are_archived() {
    let mut p = SharePartition::new(0, limits());
    let got = take(&mut p, A, &[(0, 2), (10, 12)], 100, 0);
    assert_eq!(got, Acquisition { runs: vec![run(0, 2, 1), run(10, 12, 1)], batches_used: 2 });
    assert_eq!(p.state_of(5), Some((Archived, 0)));
    ack(&mut p, A, 0, 2, &[Accept]).unwrap();
    assert_eq!(p.start(), 10);
    // With nothing in flight the start jumps over a gap.
    ack(&mut p, A, 10, 12, &[Accept]).unwrap();
    assert_eq!(take(&mut p, A, &[(20, 21)], 100, 0).runs, vec![run(20, 21, 1)]);
    assert_eq!((p.start(), p.end()), (20, 22));
    // Behind records in flight, a gap as wide as max_locks is not opened.
    let mut p = SharePartition::new(0, Limits { max_locks: 10, ..limits() });
    take(&mut p, A, &[(0, 2)], 100, 0);
    assert_eq!(take(&mut p, A, &[(50, 52)], 100, 0), Acquisition::default());
    assert_eq!(p.end(), 3);
    ack(&mut p, A, 0, 2, &[Accept]).unwrap();
    assert_eq!(take(&mut p, A, &[(50, 52)], 100, 0).runs, vec![run(50, 52, 1)]);
    assert_eq!(p.start(), 50);
}

#[test]
fn available_records_compacted_away_are_archived() {
    let mut p = SharePartition::new(0, limits());
    take(&mut p, A, &FIFTEEN, 100, 0);
    ack(&mut p, A, 0, 9, &[Release]).unwrap();
    // 5..=7 are gone from the log: between the batches read.
    let got = take(&mut p, B, &[(0, 4), (8, 9)], 100, 0);
    assert_eq!(got.runs, vec![run(0, 4, 2), run(8, 9, 2)]);
    assert_eq!(p.state_of(6), Some((Archived, 1)));
    // Before the first batch read, only the caller knows: it says so.
    ack(&mut p, B, 0, 4, &[Release]).unwrap();
    assert!(p.log_gap(0, 3));
    assert_eq!(p.start(), 3);
    assert!(!p.log_gap(0, 3));
}

#[test]
fn snapshot_and_restore_round_trip() {
    let mut p = SharePartition::new(0, limits());
    take(&mut p, A, &FIFTEEN[..2], 100, 0);
    ack(&mut p, A, 0, 1, &[Accept]).unwrap();
    ack(&mut p, A, 3, 3, &[Reject]).unwrap();
    ack(&mut p, A, 4, 5, &[Release]).unwrap();
    let s = p.snapshot();
    let batch = |first, last, state, count| StateBatch { first, last, state, count };
    // Acquired is written as Available with its count.
    let want = vec![batch(2, 2, Available, 1), batch(3, 3, Archived, 1), batch(4, 9, Available, 1)];
    assert_eq!(s, Snapshot { start: 2, batches: want });
    let q = SharePartition::restore(&s, limits());
    q.check();
    assert_eq!((q.start(), q.end()), (2, 10));
    assert_eq!(q.state_of(6), Some((Available, 1)));
    assert_eq!(q.snapshot(), s);
    assert_eq!(q.fetch_from(), Some(2));
    // Available at the delivery limit comes back Archived; uncovered offsets are Available, and
    // an Acquired batch (never written by us) is Available.
    let s = Snapshot {
        start: 5,
        batches: vec![batch(0, 6, Available, 3), batch(7, 8, RecordState::Acquired, 2), batch(12, 12, Acknowledged, 1)],
    };
    let q = SharePartition::restore(&s, limits());
    q.check();
    assert_eq!((q.start(), q.end()), (7, 13));
    assert_eq!(q.state_of(7), Some((Available, 2)));
    assert_eq!(q.state_of(10), Some((Available, 0)));
    assert_eq!(q.state_of(12), Some((Acknowledged, 1)));
    let empty = SharePartition::restore(&Snapshot { start: 40, batches: vec![] }, limits());
    assert_eq!((empty.start(), empty.end(), empty.fetch_from()), (40, 40, Some(40)));
}

#[test]
fn a_closed_session_gives_back_its_records_still_counted() {
    let mut p = SharePartition::new(0, limits());
    take(&mut p, A, &[(0, 4)], 100, 0);
    take(&mut p, B, &[(5, 9)], 100, 0);
    assert!(p.release_member(A));
    p.check();
    assert_eq!(p.state_of(0), Some((Available, 1)));
    assert_eq!(p.acquired_by(B), 5);
    assert_eq!(p.next_deadline(), Some(1000));
    assert!(!p.release_member(A));
    assert_eq!(take(&mut p, B, &FIFTEEN[..1], 100, 0).runs, vec![run(0, 4, 2)]);
}

#[test]
fn a_moved_log_start_archives_what_is_gone() {
    let mut p = SharePartition::new(0, limits());
    take(&mut p, A, &[(0, 4)], 100, 0);
    ack(&mut p, A, 0, 1, &[Release]).unwrap();
    assert!(p.log_start_moved(3));
    p.check();
    // 0..=1 archived; 2 is still A's, so the start stops there.
    assert_eq!(p.start(), 2);
    assert_eq!(p.state_of(2), Some((RecordState::Acquired, 1)));
    assert!(!p.log_start_moved(3));
    // Released below the log start, it is gone: archived, not offered.
    ack(&mut p, A, 2, 2, &[Release]).unwrap();
    assert_eq!(p.start(), 3);
    // Nothing in flight: the start jumps.
    let mut p = SharePartition::new(0, limits());
    assert!(p.log_start_moved(50));
    assert_eq!((p.start(), p.end(), p.fetch_from()), (50, 50, Some(50)));
    assert!(!p.log_start_moved(40));
}

#[test]
fn records_deleted_behind_a_held_one_are_never_acquired() {
    let mut p = SharePartition::new(0, limits());
    take(&mut p, A, &[(0, 4)], 100, 0);
    // All still A's: nothing to archive, nothing to write.
    assert!(!p.log_start_moved(20));
    assert_eq!((p.start(), p.end()), (0, 5));
    assert_eq!(p.fetch_from(), Some(20));
    // The batch holding the log start begins below it: 18 and 19 are gone.
    let got = take(&mut p, B, &[(18, 22)], 100, 0);
    assert_eq!(got.runs, vec![run(20, 22, 1)]);
    assert_eq!(p.state_of(19), Some((Archived, 0)));
    // A timed-out lock below the log start comes back archived.
    assert!(p.tick(1000));
    assert_eq!((p.start(), p.end()), (20, 23));
    assert_eq!(p.state_of(20), Some((Available, 1)));
}

/// One seeded run of random operations by three members against a log of batches with gaps.
fn random_sequence(seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let limits = Limits { lock_ms: 50, delivery_limit: 3, max_locks: 16 };
    let members = ["m0", "m1", "m2"];
    let mut log = Vec::new();
    let mut offset = 0i64;
    for _ in 0..80 {
        if rng.gen_ratio(1, 8) {
            offset += rng.gen_range(1..4); // compacted away
        }
        let records = rng.gen_range(1..5);
        log.push((offset, offset + records - 1));
        offset += records;
    }
    let (mut p, mut now, mut log_start, mut produced) = (SharePartition::new(0, limits), 0u64, 0i64, 5usize);
    let mut accepted = BTreeSet::new();
    for step in 0..80 {
        let ctx = format!("seed={seed} step={step}");
        let member = members[rng.gen_range(0..3)];
        match rng.gen_range(0..20) {
            0..=6 => {
                let from = p.fetch_from();
                let visible = &log[..produced];
                let first = visible.iter().position(|&(b, l)| l >= from.unwrap_or(p.end()).max(log_start) && b <= l);
                let read: Vec<(i64, i64)> = first.map_or(vec![], |i| visible[i..].iter().take(rng.gen_range(1..6)).copied().collect());
                let max_records = rng.gen_range(1..8);
                let before = p.clone();
                let got = p.acquire(member, &read, max_records, now);
                if from.is_none() {
                    assert_eq!(got, Acquisition::default(), "{ctx}");
                }
                if from.is_some_and(|f| f < before.end()) && !read.is_empty() {
                    assert!(!got.runs.is_empty(), "{ctx}: an Available record not acquired");
                }
                assert!(got.records() <= max_records as i64 + 3, "{ctx}: {got:?}");
                assert!(got.batches_used <= read.len(), "{ctx}");
                for r in &got.runs {
                    assert!(r.count >= 1 && r.count <= limits.delivery_limit, "{ctx}: {r:?}");
                    for o in r.first..=r.last {
                        assert!(o >= log_start && !accepted.contains(&o), "{ctx}: {o} acquired");
                        assert_eq!(p.owner(o), Some(member), "{ctx}");
                        match before.state_of(o) {
                            Some((Available, c)) => assert_eq!(r.count, c + 1, "{ctx}: {o}"),
                            None => assert!(o >= before.end() && r.count == 1, "{ctx}: {o}"),
                            held => panic!("{ctx}: {o} acquired from {held:?}"),
                        }
                    }
                }
            }
            7..=11 => {
                let held: Vec<i64> = (p.start()..p.end()).filter(|&o| p.owner(o) == Some(member)).collect();
                let before = p.clone();
                if held.is_empty() || rng.gen_ratio(1, 6) {
                    // Anything, most likely refused: then nothing changed.
                    let first = rng.gen_range(p.start() - 2..p.end() + 2);
                    let last = first + rng.gen_range(-1..4);
                    let result = p.acknowledge(member, first, last, &[Accept], now);
                    if result.is_err() {
                        assert_eq!(p, before, "{ctx}");
                    } else {
                        accepted.extend(first..=last);
                    }
                } else {
                    let first = held[rng.gen_range(0..held.len())];
                    let mut last = first;
                    while held.contains(&(last + 1)) && rng.gen_ratio(3, 4) {
                        last += 1;
                    }
                    let kinds = [Gap, Accept, Release, Reject];
                    let types: Vec<AckType> = if rng.gen_bool(0.5) {
                        vec![kinds[rng.gen_range(0..4)]]
                    } else {
                        (first..=last).map(|_| kinds[rng.gen_range(0..4)]).collect()
                    };
                    assert_eq!(p.acknowledge(member, first, last, &types, now), Ok(()), "{ctx}");
                    for (i, o) in (first..=last).enumerate() {
                        let t = types[if types.len() == 1 { 0 } else { i }];
                        if t == Accept {
                            accepted.insert(o);
                        }
                        assert!(p.owner(o).is_none(), "{ctx}");
                    }
                }
            }
            12..=14 => {
                now += rng.gen_range(0..40);
                p.tick(now);
                assert!(p.next_deadline().is_none_or(|d| d > now), "{ctx}");
            }
            15 => {
                p.release_member(member);
                assert_eq!(p.acquired_by(member), 0, "{ctx}");
            }
            16 | 17 => produced = (produced + rng.gen_range(1..4)).min(log.len()),
            18 => {
                let s = p.snapshot();
                let q = SharePartition::restore(&s, limits);
                q.check();
                assert_eq!(q.end(), p.end(), "{ctx}");
                for o in p.start()..p.end() {
                    let (state, count) = p.state_of(o).unwrap();
                    let want = match state {
                        Available | RecordState::Acquired if count >= limits.delivery_limit => Archived,
                        Available | RecordState::Acquired => Available,
                        terminal => terminal,
                    };
                    match q.state_of(o) {
                        Some(got) => assert_eq!(got, (want, count), "{ctx}: {o}"),
                        None => assert!(o < q.start() && want.terminal(), "{ctx}: {o}"),
                    }
                }
                let s2 = q.snapshot();
                assert_eq!(SharePartition::restore(&s2, limits).snapshot(), s2, "{ctx}");
                // A failover: the new leader is told the log start it finds.
                p = q;
                p.log_start_moved(log_start);
            }
            _ => {
                let top = log[produced - 1].1 + 1;
                if log_start < top {
                    log_start = rng.gen_range(log_start..=top);
                    p.log_start_moved(log_start);
                }
            }
        }
        p.check();
        assert!(p.available.range(..log_start).next().is_none(), "{ctx}: a deleted record is offered");
        let held: usize = members.iter().map(|m| p.acquired_by(m)).sum();
        assert_eq!(held, p.deadlines.len(), "{ctx}");
        for &o in &accepted {
            assert!(matches!(p.state_of(o), None | Some((Acknowledged, _))), "{ctx}: {o}");
            assert!(o < p.end(), "{ctx}");
        }
    }
}

#[test]
fn random_sequences_keep_the_invariants() {
    for seed in 0..300 {
        random_sequence(seed);
    }
}

#[test]
fn records_a_committed_read_left_out_are_passed_over() {
    let mut p = SharePartition::new(0, limits());
    // Nothing in flight: the start jumps past them.
    assert!(p.skip_to(4));
    p.check();
    assert_eq!((p.start(), p.end(), p.fetch_from()), (4, 4, Some(4)));
    assert!(!p.skip_to(3), "behind the end: nothing to pass over");
    // Behind a record in flight they are Archived, never delivered; the start moves past them
    // once that record ends.
    take(&mut p, A, &[(4, 5)], 10, 0);
    assert!(p.skip_to(9));
    p.check();
    assert_eq!((p.end(), p.fetch_from()), (9, Some(9)));
    ack(&mut p, A, 4, 5, &[Accept]).unwrap();
    assert_eq!(p.start(), 9);
}
