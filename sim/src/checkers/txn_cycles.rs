//! Circular information flow between transactions: Adya's G1c over write-read dependencies
//! alone. A committed transaction R depends on W when R read (read_committed, `Txn::reads`) a
//! record W wrote; a cycle of such dependencies means some transaction read, directly or
//! through others, what it had not committed yet. That cannot happen while read_committed
//! shows only committed records: along every edge W committed before R read, so before R
//! committed, and a cycle would commit a transaction before itself (Jepsen found such cycles
//! in Redpanda 21.10.1 through aborted reads). A transaction reading its own record is a
//! cycle of one.
//!
//! Cycles that need a write-write edge (G0, and G1c through one) are not judged: Kafka puts
//! no isolation between concurrent writers, so two transactions' appends interleave in
//! different orders on different partitions by design (Jepsen's Redpanda analysis discusses
//! it at length). Only transactions whose commit was acknowledged are nodes; petgraph finds
//! the strongly connected components.

use crate::history::{History, Outcome, Txn, Violation};
use petgraph::algo::tarjan_scc;
use petgraph::graph::{DiGraph, NodeIndex};
use std::collections::BTreeMap;

/// Transactions named in a violation's detail, at most.
const cycle_shown_max: usize = 6;

pub fn txn_wr_cycle(h: &History, out: &mut Vec<Violation>) {
    let committed = |t: &Txn| t.commit && matches!(t.end, Some(Outcome::Ok(_)));
    let mut g: DiGraph<usize, ()> = DiGraph::new();
    let nodes: BTreeMap<usize, NodeIndex> = h.txns.iter().enumerate().filter(|(_, t)| committed(t)).map(|(i, _)| (i, g.add_node(i))).collect();
    if nodes.is_empty() {
        return;
    }
    // Who wrote each value (a value is unique to one send of one transaction).
    let mut writer: BTreeMap<&[u8], usize> = BTreeMap::new();
    for (i, t) in h.txns.iter().enumerate() {
        for (_, _, v) in &t.records {
            writer.entry(v.as_slice()).or_insert(i);
        }
    }
    let mut self_reads = Vec::new();
    for (&r, &rn) in &nodes {
        for (_, _, _, v) in &h.txns[r].reads {
            let Some(&w) = writer.get(v.as_slice()) else { continue };
            match (w == r, nodes.get(&w)) {
                (true, _) => self_reads.push(r),
                (false, Some(&wn)) => drop(g.update_edge(wn, rn, ())),
                (false, None) => {}
            }
        }
    }
    let mut cycles: Vec<Vec<usize>> = tarjan_scc(&g).into_iter().filter(|c| c.len() > 1).map(|c| c.into_iter().map(|n| g[n]).collect()).collect();
    self_reads.dedup();
    cycles.extend(self_reads.into_iter().map(|r| vec![r]));
    for mut cycle in cycles {
        cycle.sort_unstable();
        let first = &h.txns[cycle[0]];
        let (topic, partition) = first.reads.first().map_or((String::new(), -1), |(t, p, _, _)| (t.clone(), *p));
        let named: Vec<String> = cycle.iter().take(cycle_shown_max).map(|i| format!("{} transaction {}", h.txns[*i].process, h.txns[*i].serial)).collect();
        let more = cycle.len().saturating_sub(cycle_shown_max);
        let detail = match cycle.len() {
            1 => format!("{} read its own record before committing it (read_committed showed an open transaction's write)", named[0]),
            n => format!("{n} committed transactions read each other's records in a cycle: {}{}", named.join(", "), if more > 0 { format!(" and {more} more") } else { String::new() }),
        };
        out.push(Violation { checker: "txn_wr_cycle", topic, partition, offsets: Vec::new(), at_ms: first.complete_ms, detail, loss: false, acks: None });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkers::judged;

    fn txn(process: &str, serial: u64, wrote: &[&str], read: &[&str]) -> Txn {
        let records = wrote.iter().map(|v| ("ring".to_string(), 0, v.as_bytes().to_vec())).collect();
        let reads = read.iter().enumerate().map(|(i, v)| ("ring".to_string(), 1, i as i64, v.as_bytes().to_vec())).collect();
        Txn { process: process.into(), serial, records, reads, commit: true, end: Some(Outcome::Ok(0)), invoke_ms: 0, complete_ms: 10 }
    }

    #[test]
    fn sees_transactions_that_read_each_other_and_nothing_else() {
        // A chain: b read a's record, c read b's.
        let chain = History { txns: vec![txn("p0", 0, &["x"], &[]), txn("p1", 0, &["y"], &["x"]), txn("p0", 1, &["z"], &["y"])], ..History::default() };
        assert!(judged(txn_wr_cycle, &chain).is_empty());
        let cycle = History { txns: vec![txn("p0", 0, &["x"], &["y"]), txn("p1", 0, &["y"], &["x"]), txn("p0", 1, &[], &["x"])], ..History::default() };
        let v = judged(txn_wr_cycle, &cycle);
        assert!(v.len() == 1 && v[0].detail.contains("2 committed transactions"), "{v:?}");
        let own = History { txns: vec![txn("p0", 0, &["x"], &["x"])], ..History::default() };
        assert_eq!(judged(txn_wr_cycle, &own).len(), 1);
        // An aborted reader is not a node: nothing it read was committed on its behalf.
        let mut aborted = cycle.clone();
        aborted.txns[1].commit = false;
        assert!(judged(txn_wr_cycle, &aborted).is_empty());
    }
}
