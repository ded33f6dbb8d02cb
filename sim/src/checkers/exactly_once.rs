//! Exactly-once consume-transform-produce (`History::processors`), judged from what a
//! read_committed reader sees after healing (`final_committed`) and each processor group's
//! committed offsets after healing (`final_commits`). An output names the input it was made
//! from (`history::processed_from`), so for every group:
//!
//! - no input is processed twice: at most one visible output of the group's processors was
//!   made from any one record (Kafka's exactly-once: the outputs and the consumer's position
//!   commit or abort together, and a processor that starts over resumes where the group's
//!   offsets say);
//! - no input is skipped: every visible input below the group's committed offset of its
//!   partition that still had a step to take (`hops`) has a visible output (offsets committed
//!   without the outputs they stand for: an aborted transaction's offsets kept);
//! - nothing is made from what never committed: every visible output's input is visible
//!   (an aborted read carried on through a processor, Jepsen's G1a one step removed).
//!
//! Partitions the committed read did not finish are not judged (`liveness`'s).

use crate::history::{hops, processed_from, History, Processors, Violation};
use std::collections::{BTreeMap, BTreeSet};

/// Visible outputs by the input they were made from: (partition, offset, value) each.
type Outputs<'a> = BTreeMap<&'a [u8], Vec<(i32, i64, &'a [u8])>>;

fn violation(topic: &str, partition: i32, offsets: Vec<i64>, h: &History, detail: String, loss: bool) -> Violation {
    Violation { checker: "exactly_once", topic: topic.to_string(), partition, offsets, at_ms: h.final_read_ms, detail, loss, acks: Some(-1) }
}

pub fn exactly_once(h: &History, out: &mut Vec<Violation>) {
    for g in &h.processors {
        judge(h, g, out);
    }
}

fn judge(h: &History, g: &Processors, out: &mut Vec<Violation>) {
    let processes: BTreeSet<&str> = g.processes.iter().map(String::as_str).collect();
    // Every visible output of this group, by the input it was made from.
    let mut made: Outputs = BTreeMap::new();
    for ((_, p), log) in h.final_committed.iter().filter(|((t, _), _)| *t == g.to) {
        for (offset, v) in log {
            if let Some((input, _)) = processed_from(v).filter(|(_, process)| processes.contains(process)) {
                made.entry(input).or_default().push((*p, *offset, v.as_slice()));
            }
        }
    }
    for (input, outputs) in made.iter().filter(|(_, o)| o.len() > 1) {
        let (p, _, _) = outputs[0];
        let detail = format!("group {}: input {} was processed {} times, outputs visible to read_committed: {}", g.group, show(input), outputs.len(), outputs.iter().map(|(_, _, v)| show(v)).collect::<Vec<_>>().join(", "));
        out.push(violation(&g.to, p, outputs.iter().map(|(_, o, _)| *o).collect(), h, detail, false));
    }
    let inputs: BTreeMap<&[u8], (i32, i64)> = h.final_committed.iter().filter(|((t, _), _)| *t == g.from).flat_map(|((_, p), log)| log.iter().map(move |(o, v)| (v.as_slice(), (*p, *o)))).collect();
    // A topic some partition of which the committed read did not finish.
    let unread = |topic: &str| h.final_errors.keys().any(|(t, _)| *t == format!("committed:{topic}"));
    if !unread(&g.from) {
        for (input, outputs) in &made {
            if !inputs.contains_key(input) {
                let (p, o, v) = outputs[0];
                let detail = format!("group {}: output {} was made from {}, which read_committed does not show in {} (an uncommitted input processed)", g.group, show(v), show(input), g.from);
                out.push(violation(&g.to, p, vec![o], h, detail, false));
            }
        }
    }
    if unread(&g.to) {
        return;
    }
    for ((topic, p), log) in h.final_committed.iter().filter(|((t, _), _)| *t == g.from) {
        let committed = h.final_commits.get(&(g.group.clone(), topic.clone(), *p)).copied().unwrap_or(0);
        let skipped: Vec<(i64, &[u8])> = log.iter().filter(|(o, v)| *o < committed && hops(v) < g.hops && !made.contains_key(v.as_slice())).map(|(o, v)| (*o, v.as_slice())).collect();
        if let Some((o, v)) = skipped.first() {
            let detail = format!("group {}: committed offset {committed} of {topic}-{p} passes {} input(s) with no visible output, the first {} at offset {o}", g.group, skipped.len(), show(v));
            out.push(violation(topic, *p, skipped.iter().map(|(o, _)| *o).collect(), h, detail, true));
        }
    }
}

/// A value for a message: its text, cut short.
fn show(v: &[u8]) -> String {
    let s = String::from_utf8_lossy(v);
    let s = s.trim_end_matches('.');
    match s.len() > 80 {
        true => format!("{}…", &s[..80]),
        false => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkers::judged;

    fn history(ring: &[(i32, &[&str])], committed: &[(i32, i64)]) -> History {
        let mut h = History { processors: vec![Processors { group: "g".into(), from: "ring".into(), to: "ring".into(), processes: vec!["processor-0".into(), "processor-1".into()], hops: 2 }], ..History::default() };
        for (p, values) in ring {
            h.final_committed.insert(("ring".into(), *p), values.iter().enumerate().map(|(i, v)| (i as i64, v.as_bytes().to_vec())).collect());
        }
        for (p, o) in committed {
            h.final_commits.insert(("g".into(), "ring".into(), *p), *o);
        }
        h
    }

    #[test]
    fn sees_a_second_processing_a_skipped_input_and_an_output_of_nothing() {
        // p0: an input and its second step's output; p1: the first step's output.
        let clean = history(&[(0, &["a", "a>processor-1.3>processor-0.4"]), (1, &["a>processor-1.3"])], &[(0, 2), (1, 1)]);
        assert!(judged(exactly_once, &clean).is_empty(), "{:?}", judged(exactly_once, &clean));
        let twice = history(&[(0, &["a"]), (1, &["a>processor-0.1", "a>processor-0.2"])], &[(0, 1)]);
        let v = judged(exactly_once, &twice);
        assert!(v.len() == 1 && v[0].detail.contains("processed 2 times"), "{v:?}");
        let skipped = history(&[(0, &["a", "b"]), (1, &["a>processor-0.1"])], &[(0, 2)]);
        let v = judged(exactly_once, &skipped);
        assert!(v.len() == 1 && v[0].loss && v[0].offsets == vec![1], "{v:?}");
        let from_nothing = history(&[(0, &[]), (1, &["x>processor-0.1"])], &[]);
        let v = judged(exactly_once, &from_nothing);
        assert!(v.len() == 1 && v[0].detail.contains("uncommitted input"), "{v:?}");
        // Another group's outputs are not this group's.
        let other = history(&[(0, &["a"]), (1, &["a>processor-0.1", "a>mapper-0.1"])], &[(0, 1)]);
        assert!(judged(exactly_once, &other).is_empty());
    }
}
