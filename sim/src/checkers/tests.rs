//! Each checker against a clean history (no violation) and a history with its flaw planted.

use super::*;
use crate::history::{Outcome, Read, Write};

fn w(value: &str, offset: i64) -> Write {
    Write {
        process: "producer-0".into(),
        topic: "t".into(),
        partition: 0,
        value: value.into(),
        acks: -1,
        idempotent: true,
        invoke_ms: 1,
        complete_ms: 2,
        outcome: Outcome::Ok(offset),
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
    // The final log lost "b" (offset 1): durable and dense both fire; consumers saw it.
    let mut h = clean();
    h.final_read.insert(("t".into(), 0), vec![(0, "a".into()), (2, "c".into())]);
    assert_eq!(fired(&h), vec!["acknowledged_durable", "offsets_dense"]);

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
    assert_eq!(fired(&h), vec!["inconsistent_offsets"]);

    // Within a session: backwards, then a skip.
    let mut h = clean();
    h.reads = vec![r("a", 0, 0), r("b", 1, 0), r("a", 0, 0), r("c", 2, 0)];
    assert_eq!(fired(&h), vec!["nonmonotonic_poll", "poll_skip"]);

    // Unreadable after healing.
    let mut h = clean();
    h.final_errors.insert(("t".into(), 0), "timed out".into());
    assert_eq!(fired(&h), vec!["liveness"]);
}

#[test]
fn acks_zero_and_unknown_outcomes_promise_nothing() {
    let mut h = clean();
    h.writes.push(Write { acks: 0, outcome: Outcome::Ok(-1), ..w("d", -1) });
    h.writes.push(Write { outcome: Outcome::Unknown("timeout".into()), ..w("e", -1) });
    assert_eq!(check_all(&h), vec![]);
}
