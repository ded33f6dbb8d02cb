//! Each checker against a clean history (no violation) and a history with its flaw planted.

use super::*;
use crate::history::{Compaction, Outcome, Read, Write};

fn w(value: &str, offset: i64) -> Write {
    Write {
        process: "producer-0".into(),
        topic: "t".into(),
        partition: 0,
        value: value.into(),
        key: None,
        tombstone: false,
        acks: -1,
        idempotent: true,
        invoke_ms: 1,
        complete_ms: 2,
        outcome: Outcome::Ok(offset),
        retry_refused: false,
    }
}

fn r(value: &str, offset: i64, session: u32) -> Read {
    Read { process: "consumer-0".into(), session, topic: "t".into(), partition: 0, offset, value: value.into(), high_watermark: 10, at_ms: 3 }
}

fn clean() -> History {
    let mut h = History::default();
    h.writes = vec![w("a", 0), w("b", 1), w("c", 2)];
    h.reads = vec![r("a", 0, 0), r("b", 1, 0), r("c", 2, 0)];
    h.final_read.insert(("t".into(), 0), vec![(0, "a".into()), (1, "b".into()), (2, "c".into())]);
    h
}

fn fired(h: &History) -> Vec<&'static str> {
    let mut names: Vec<&str> = check_all(h).iter().map(|v| v.checker).collect();
    names.dedup();
    names
}

#[test]
fn a_clean_history_passes_every_checker() {
    assert_eq!(check_all(&clean()), vec![]);
}

#[test]
fn each_planted_flaw_is_caught_by_its_checker() {
    // The final log lost "b" (offset 1): durable and dense both fire; a consumer had read it.
    let mut h = clean();
    h.final_read.insert(("t".into(), 0), vec![(0, "a".into()), (2, "c".into())]);
    assert_eq!(fired(&h), vec!["acknowledged_durable", "offsets_dense", "dirty_read"]);

    // Violation texts spell acks as Kafka's configs do: acks=all, not the wire's -1.
    let lost = check_all(&h).into_iter().find(|v| v.checker == "acknowledged_durable").unwrap();
    assert!(lost.detail.contains("(acks=all)") && !lost.detail.contains("acks=-1"), "{}", lost.detail);

    // A consumer read past "b" but never saw it.
    let mut h = clean();
    h.reads = vec![r("a", 0, 0), r("c", 2, 1)];
    assert_eq!(fired(&h), vec!["lost_write"]);

    // Served above the high watermark.
    let mut h = clean();
    h.reads[2].high_watermark = 2;
    assert_eq!(fired(&h), vec!["read_above_hw"]);

    // The same value twice in the log: a violation only for an idempotent producer's write.
    let mut h = clean();
    h.final_read.get_mut(&("t".into(), 0)).unwrap().push((3, "a".into()));
    assert_eq!(fired(&h), vec!["duplicate"]);
    h.writes[0].idempotent = false;
    assert_eq!(fired(&h), Vec::<&str>::new());

    // Two reads disagree on offset 1.
    let mut h = clean();
    h.reads.push(r("z", 1, 1));
    assert_eq!(fired(&h), vec!["inconsistent_offsets", "dirty_read"], "and \"z\" is in no final record");

    // Within a session: backwards, then a skip.
    let mut h = clean();
    h.reads = vec![r("a", 0, 0), r("b", 1, 0), r("a", 0, 0), r("c", 2, 0)];
    assert_eq!(fired(&h), vec!["nonmonotonic_poll", "poll_skip"]);

    // Unreadable after healing.
    let mut h = clean();
    h.final_errors.insert(("t".into(), 0), "timed out".into());
    assert_eq!(fired(&h), vec!["liveness"]);

    // Every write refused after healing (a broker that never forgives a lost producer state).
    let mut h = clean();
    (h.healed_at_ms, h.heal_ms) = (10, 10);
    h.writes.push(Write { invoke_ms: 20, complete_ms: 21, outcome: Outcome::Fail("broker error 45: OUT_OF_ORDER_SEQUENCE_NUMBER".into()), ..w("d", -1) });
    h.writes.push(Write { invoke_ms: 22, complete_ms: 23, outcome: Outcome::Unknown("timed out".into()), ..w("e", -1) });
    assert_eq!(fired(&h), vec!["write_liveness"]);
    assert!(check_all(&h).iter().all(|v| !v.loss), "refusing writes loses nothing: never an allowed loss");
}

#[test]
fn the_gaps_the_older_checkers_left_are_caught_by_the_new_ones() {
    // A write refused with a definite error that is in the log anyway: no older checker
    // looks at refused writes.
    let mut h = clean();
    h.writes.push(Write { outcome: Outcome::Fail("broker error 21: acks".into()), ..w("d", -1) });
    h.final_read.get_mut(&("t".into(), 0)).unwrap().push((3, "d".into()));
    h.reads.push(r("d", 3, 0));
    assert_eq!(fired(&h), vec!["definite_failure"]);

    // A retry refused for its sequence number, its batch in the log: the client rightly calls
    // the outcome unknown, so only refused_retry judges it. Not in the log, it is no lie.
    let mut h = clean();
    let refused = || Write { outcome: Outcome::Unknown("last error: broker error 45".into()), retry_refused: true, ..w("d", -1) };
    h.writes.push(refused());
    h.final_read.get_mut(&("t".into(), 0)).unwrap().push((3, "d".into()));
    h.reads.push(r("d", 3, 0));
    assert_eq!(fired(&h), vec!["refused_retry"]);
    let mut h = clean();
    h.writes.push(refused());
    assert_eq!(fired(&h), Vec::<&str>::new());

    // A value read below the reported high watermark that the final log lacks, its offset
    // never refilled (so no other read or final record disagrees at that offset): only
    // dirty_read sees it. It is a loss (the scenario may allow losing its acks setting).
    let mut h = clean();
    h.writes.push(Write { acks: 1, outcome: Outcome::Ok(3), ..w("d", 3) });
    h.reads.push(r("d", 3, 0));
    let v = check_all(&h);
    let names: Vec<&str> = v.iter().map(|v| v.checker).collect();
    assert_eq!(names, vec!["acknowledged_durable", "dirty_read"], "{v:?}");
    assert!(v.iter().all(|v| v.loss && v.acks == Some(1)));
    // The same with an unacknowledged write (acks=all that timed out): only dirty_read.
    let mut h = clean();
    h.writes.push(Write { outcome: Outcome::Unknown("timed out".into()), ..w("d", -1) });
    h.reads.push(r("d", 3, 0));
    assert_eq!(fired(&h), vec!["dirty_read"]);
    // Below the final log's start (retention), a read value may be gone.
    let mut h = clean();
    h.final_read.insert(("t".into(), 0), vec![(2, "c".into())]);
    h.writes.truncate(0);
    assert_eq!(fired(&h), Vec::<&str>::new());

    // A replica log that does not open at the end.
    let mut h = clean();
    h.replica_errors.entry(("t".into(), 0)).or_default().insert("broker-1".into(), "corrupt segment".into());
    assert_eq!(fired(&h), vec!["replica_readable"]);
}

#[test]
fn write_liveness_judges_each_partition_only_after_half_the_healing_phase() {
    let late = |value: &str, partition: i32, invoke_ms: u64, outcome: Outcome| Write { partition, invoke_ms, complete_ms: invoke_ms + 1, outcome, ..w(value, -1) };
    let failed = || Outcome::Fail("broker error 56".into());
    let mut h = clean();
    (h.healed_at_ms, h.heal_ms) = (100, 40);
    // Failures before healed_at + heal_ms/2 = 120 are the faults' doing: not judged.
    h.writes.push(late("d", 0, 50, failed()));
    h.writes.push(late("e", 0, 119, failed()));
    assert_eq!(check_all(&h), vec![]);
    // From 120 on, one success per partition is enough ...
    h.writes.push(late("f", 0, 120, failed()));
    h.writes.push(Write { acks: 1, ..late("g", 0, 125, Outcome::Ok(3)) });
    h.final_read.get_mut(&("t".into(), 0)).unwrap().push((3, "g".into()));
    assert_eq!(check_all(&h), vec![]);
    // ... but a healthy partition does not excuse an offline one.
    h.writes.push(late("h", 1, 126, failed()));
    let v = check_all(&h);
    assert_eq!((v.len(), v[0].checker, v[0].partition), (1, "write_liveness", 1), "{v:?}");
    // Another producer's success does not count for this one.
    h.writes.push(Write { process: "producer-1".into(), ..late("i", 1, 127, Outcome::Ok(0)) });
    h.final_read.insert(("t".into(), 1), vec![(0, "i".into())]);
    assert_eq!(check_all(&h).len(), 1);
    // acks=0 hears nothing back: sent without error is its success.
    h.writes.push(Write { acks: 0, ..late("j", 1, 128, Outcome::Ok(-1)) });
    assert_eq!(check_all(&h), vec![]);
}

#[test]
fn acks_zero_and_unknown_outcomes_promise_nothing() {
    let mut h = clean();
    h.writes.push(Write { acks: 0, outcome: Outcome::Ok(-1), ..w("d", -1) });
    h.writes.push(Write { outcome: Outcome::Unknown("timeout".into()), ..w("e", -1) });
    assert_eq!(check_all(&h), vec![]);
}

/// A compacted topic "c" (delete.retention.ms 100): c1, a1, b1, a2 at offsets 0..=3, then b
/// deleted by a tombstone at 4 (invoked at 10 ms). consumer-0 read c1 and a1 before the cleaner
/// ran, consumer-1 read what was left after it; the final read (ended at 50 ms) and broker-0
/// hold the cleaned log, broker-1 the uncleaned one.
fn compacted() -> History {
    let kw = |value: &str, key: &str, offset: i64| Write { topic: "c".into(), key: Some(key.into()), ..w(value, offset) };
    let mut h = History::default();
    h.compacted_topics.insert("c".into(), Compaction { delete_retention_ms: 100 });
    h.writes = vec![kw("c1", "c", 0), kw("a1", "a", 1), kw("b1", "b", 2), kw("a2", "a", 3), Write { tombstone: true, invoke_ms: 10, complete_ms: 11, ..kw("tombstone:b", "b", 4) }];
    let cr = |value: &str, offset: i64, consumer: &str| Read { topic: "c".into(), process: consumer.into(), ..r(value, offset, 0) };
    h.reads = vec![cr("c1", 0, "consumer-0"), cr("a1", 1, "consumer-0"), cr("c1", 0, "consumer-1"), cr("a2", 3, "consumer-1"), cr("tombstone:b", 4, "consumer-1")];
    let cleaned: Vec<(i64, Vec<u8>)> = vec![(0, "c1".into()), (3, "a2".into()), (4, "tombstone:b".into())];
    let whole: Vec<(i64, Vec<u8>)> = ["c1", "a1", "b1", "a2", "tombstone:b"].iter().enumerate().map(|(o, v)| (o as i64, v.as_bytes().to_vec())).collect();
    h.final_read.insert(("c".into(), 0), cleaned.clone());
    h.final_read_ms = 50;
    h.replica_logs.insert(("c".into(), 0), [("broker-0".to_string(), cleaned), ("broker-1".to_string(), whole)].into_iter().collect());
    h
}

fn final_log(h: &mut History) -> &mut Vec<(i64, Vec<u8>)> {
    h.final_read.get_mut(&("c".into(), 0)).unwrap()
}

#[test]
fn a_compacted_log_may_lose_superseded_records_and_skip_offsets() {
    assert_eq!(check_all(&compacted()), vec![], "the cleaned log passes every checker");
    // The same log in a topic that is not compacted: the gaps are violations.
    let mut h = compacted();
    h.compacted_topics.clear();
    assert_eq!(fired(&h), vec!["acknowledged_durable", "offsets_dense", "lost_write", "poll_skip", "dirty_read"]);
    // The tombstone itself may go once its retention passed before the final read ended.
    let mut h = compacted();
    final_log(&mut h).pop();
    h.replica_logs.clear();
    h.final_read_ms = 110;
    assert_eq!(check_all(&h), vec![]);
}

#[test]
fn the_compaction_checker_catches_a_cleaner_keeping_old_values_or_deleting_early() {
    // A cleaner that kept a's first value, not its last.
    let mut h = compacted();
    *final_log(&mut h) = vec![(0, "c1".into()), (1, "a1".into()), (4, "tombstone:b".into())];
    h.replica_logs.clear();
    let v = check_all(&h);
    assert_eq!(fired(&h), vec!["acknowledged_durable", "dirty_read", "compaction"], "{v:?}");
    let c = v.iter().find(|v| v.checker == "compaction").unwrap();
    assert!(c.loss && c.offsets == vec![1, 3] && c.detail.contains("below"), "{c:?}");
    // A tombstone dropped before delete.retention.ms: b is gone at 50 ms (written at 10).
    let mut h = compacted();
    final_log(&mut h).pop();
    h.replica_logs.clear();
    assert!(fired(&h).contains(&"compaction"));
    // A value acknowledged below reappearing as a key's last record: only compaction sees it
    // (a1 is superseded at its own offset, so acknowledged_durable excuses its absence there).
    let mut h = compacted();
    final_log(&mut h).push((5, "a1".into()));
    let v = check_all(&h);
    assert_eq!((v.len(), v[0].checker), (1, "compaction"), "{v:?}");
    assert!(v[0].detail.contains("acknowledged at 1"), "{v:?}");
    // Record offsets must still increase.
    let mut h = compacted();
    final_log(&mut h).push((4, "c1".into()));
    assert!(fired(&h).contains(&"offsets_dense"));
}

#[test]
fn compacted_replicas_agree_on_shared_offsets_and_each_keys_latest() {
    let with = |log: Vec<(i64, &str)>| {
        let mut h = compacted();
        h.replica_logs.get_mut(&("c".into(), 0)).unwrap().insert("broker-2".into(), log.into_iter().map(|(o, v)| (o, v.as_bytes().to_vec())).collect());
        check_all(&h)
    };
    // broker-2 kept a's old value and lost its new one, though it reaches offset 4.
    let v = with(vec![(0, "c1"), (1, "a1"), (4, "tombstone:b")]);
    assert_eq!((v.len(), v[0].checker), (1, "committed_consistent"), "{v:?}");
    assert!(v[0].detail.contains("broker-2") && v[0].detail.contains("at 1"), "{v:?}");
    // Two replicas disagreeing at an offset the final read no longer holds.
    let v = with(vec![(0, "c1"), (1, "zz"), (2, "b1")]);
    assert_eq!((v.len(), v[0].checker, v[0].offsets.clone()), (1, "committed_consistent", vec![1]), "{v:?}");
    // A replica that lags (reaches only offset 1) need not hold the later latest records.
    assert_eq!(with(vec![(0, "c1"), (1, "a1")]), vec![]);
    // A replica whose own pass already dropped b's tombstone: fine once its retention was up
    // when the brokers stopped (written at 10 ms, 100 ms retention), not before.
    let mut h = compacted();
    h.replica_logs.get_mut(&("c".into(), 0)).unwrap().insert("broker-2".into(), vec![(0, "c1".into()), (3, "a2".into()), (5, "x".into())]);
    h.replica_logs_ms = 60;
    assert_eq!(fired(&h), vec!["committed_consistent"]);
    h.replica_logs_ms = 110;
    assert_eq!(check_all(&h), vec![]);
}

/// Issue 26, group-commit-lag seed 65804: a commit of 669 timed out (its request still in the
/// network), the next one of 675 was acknowledged, then the late 669 landed. The next owner
/// starting at 669 is Kafka's last-writer-wins, not a lost commit; had the 669 commit been
/// refused (so it never landed), starting there would be one.
#[test]
fn a_start_below_an_acknowledged_commit_is_judged_unless_a_commit_of_unknown_outcome_explains_it() {
    use crate::history::{Commit, GroupEvent, GroupEventKind};
    let event = |process: &str, at_ms: u64, kind: GroupEventKind| GroupEvent { process: process.into(), group: "g".into(), topic: "t".into(), at_ms, kind };
    let commit = |offset: i64, generation: i32, invoke_ms: u64, complete_ms: u64, outcome: Outcome| Commit { process: "member-a".into(), group: "g".into(), topic: "t".into(), member_id: "a".into(), generation, offsets: vec![(0, offset)], invoke_ms, complete_ms, outcome };
    let history = |late: Outcome, late_generation: i32, acked_generation: i32| {
        let mut h = History::default();
        h.group_events = vec![
            event("member-a", 1, GroupEventKind::Joined { generation: 1, member_id: "a".into(), leader: true }),
            event("member-a", 1, GroupEventKind::Owned { generation: 1, member_id: "a".into(), partitions: vec![0], starts: vec![(0, 0)] }),
            event("member-b", 30, GroupEventKind::Joined { generation: 2, member_id: "b".into(), leader: true }),
            event("member-b", 30, GroupEventKind::Owned { generation: 2, member_id: "b".into(), partitions: vec![0], starts: vec![(0, 669)] }),
        ];
        h.commits = vec![commit(669, late_generation, 10, 20, late), commit(675, acked_generation, 20, 22, Outcome::Ok(0))];
        h
    };
    let delivery = |h: &History| check_all(h).into_iter().filter(|v| v.checker == "group_delivery").map(|v| v.detail).collect::<Vec<_>>();
    let timed_out = || Outcome::Unknown("request timed out after 1000 ms".into());
    assert_eq!(delivery(&history(timed_out(), 1, 1)), Vec::<String>::new());
    let refused = delivery(&history(Outcome::Fail("broker error 22".into()), 1, 1));
    assert!(refused.len() == 1 && refused[0].contains("below the commit of 675"), "{refused:?}");
    // A commit of an older generation than the acknowledged one cannot have been written after
    // it (the coordinator had moved on), nor one of a generation after the joining member's:
    // neither explains the start. One of the joining member's own generation can.
    assert_eq!(delivery(&history(timed_out(), 2, 1)), Vec::<String>::new());
    for (late_generation, acked_generation) in [(0, 1), (3, 1)] {
        let lost = delivery(&history(timed_out(), late_generation, acked_generation));
        assert!(lost.len() == 1 && lost[0].contains("below the commit of 675"), "late commit of generation {late_generation}: {lost:?}");
    }
}
