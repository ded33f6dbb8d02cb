//! Client quotas (KIP-13, KIP-219): a producer's client id under a `producer_byte_rate` gets no
//! more acknowledged than Kafka's windowed rate allows, and a client id under none is not held
//! to it. It judges only what the producers had acknowledged, never the broker's meters.
//!
//! Bytes are counted as each acknowledged record's value and key lengths. The broker meters a
//! Produce by its whole request size (header, batch framing, per-record overhead besides value
//! and key), so every count here is at most what the broker metered: a bound the metered bytes
//! obey, the counted bytes obey too.
//!
//! The bound, from the change's answer (`from`) to the next change of the same client id or
//! the end of the safety phase (`until`), `elapsed = until - from`:
//!
//! `leaders * quota * elapsed + meters * (quota * window + request) + throttles * request`
//!
//! - Kafka's quotas are per broker: each broker meters the client on its own, so it may get
//!   the quota from each partition leader it writes to at once — `leaders`, the partitions it
//!   wrote in the span, at most the brokers.
//! - One meter (`broker_core::throttle`, a window of `quota_window_samples` samples of
//!   `quota_window_sample_ms`) throttles once its rate over the window passes the quota, so
//!   over any span it lets through `quota * span` plus what its window may hold when the span
//!   starts, at most `quota * window` (window = 11 s) — plus the request that pushed it over:
//!   the broker records a request, answers it, then mutes the connection.
//! - The meter is per broker and in memory, and leadership moves: `meters` counts one per
//!   broker, one more per broker restart (each `kill` or `power_loss` span, a fresh meter) and
//!   one more per leader election of a partition it wrote (a meter idle a window long may burst
//!   again when leadership comes back).
//! `request` is the largest acknowledged batch of that client id in the span. The other half:
//! when an answered quota holds some client id and another producer's client id has none, that
//! one's acknowledged bytes over the same span must exceed the throttled one's bound — else
//! the check could pass because the workload never reached the quota.

use crate::history::{History, QuotaChange, Violation, Write};
use crate::scenario::FaultKind;
use broker_core::throttle::{quota_window_sample_ms, quota_window_samples};
use std::collections::{BTreeMap, BTreeSet};

/// The harness's producer request timeout (`cluster::request_timeout_ms`), for a process the
/// history names none for.
const producer_request_timeout_ms: u64 = 1_000;

/// quota-respected: see the module header.
pub fn quota_respected(h: &History, out: &mut Vec<Violation>) {
    let client_of = |w: &Write| h.client_ids.get(&w.process).cloned().unwrap_or_else(|| w.process.clone());
    let mut acked: BTreeMap<String, Vec<&Write>> = BTreeMap::new();
    for w in h.writes.iter().filter(|w| w.acknowledged().is_some()) {
        acked.entry(client_of(w)).or_default().push(w);
    }
    let until_end = if h.healed_at_ms > 0 { h.healed_at_ms } else { u64::MAX };
    let quoted: BTreeSet<&str> = h.quota_changes.iter().map(|q| q.client_id.as_str()).collect();
    for (i, q) in h.quota_changes.iter().enumerate() {
        let (Some(rate), Some(0), Some(from)) = (q.producer_byte_rate, q.code, q.complete_ms) else { continue };
        let next = h.quota_changes[i + 1..].iter().find(|n| n.client_id == q.client_id).map_or(u64::MAX, |n| n.invoke_ms);
        let until = next.min(until_end);
        if until <= from {
            continue;
        }
        let within = |w: &&&Write| w.invoke_ms >= from && w.complete_ms <= until;
        let mine: Vec<&Write> = acked.get(&q.client_id).map_or(Vec::new(), |ws| ws.iter().filter(within).copied().collect());
        let bound = bound(h, rate, (from, until), &mine);
        let got = bytes(&mine);
        if got as f64 > bound {
            out.push(violation(q, from, format!("client id '{}' under producer_byte_rate {rate} from {from} ms: {got} bytes acknowledged by {until} ms, above the bound {bound:.0}", q.client_id)));
        }
        let free = acked.iter().filter(|(c, _)| !quoted.contains(c.as_str())).map(|(c, ws)| (c, bytes(&ws.iter().filter(within).copied().collect::<Vec<_>>()))).max_by_key(|(_, b)| *b);
        if let Some((c, b)) = free {
            if b as f64 <= bound {
                out.push(violation(q, from, format!("client id '{c}' under no quota had only {b} bytes acknowledged from {from} to {until} ms, within '{}''s bound {bound:.0}: the quota was never tested", q.client_id)));
            }
        }
    }
}

/// Acknowledged value and key bytes of `writes`.
fn bytes(writes: &[&Write]) -> u64 {
    writes.iter().map(|w| record_bytes(w)).sum()
}

/// One record's value and key lengths.
fn record_bytes(w: &Write) -> u64 {
    (w.value.len() + w.key.as_ref().map_or(0, |k| k.len())) as u64
}

/// The module header's bound for `writes`, the client's acknowledged writes in `from..until`.
fn bound(h: &History, rate: f64, (from, until): (u64, u64), writes: &[&Write]) -> f64 {
    let window_s = (quota_window_samples as u64 * quota_window_sample_ms) as f64 / 1000.0;
    let partitions: BTreeSet<(&str, i32)> = writes.iter().map(|w| (w.topic.as_str(), w.partition)).collect();
    let leaders = partitions.len().min(h.brokers as usize);
    let restarts = h.faults.iter().filter(|f| matches!(f.kind, FaultKind::Kill | FaultKind::Terminate | FaultKind::PowerLoss) && f.until_ms > from && f.from_ms < until).count();
    let elections = h.elections.iter().filter(|e| e.at_ms > from && e.at_ms < until && partitions.contains(&(e.topic.as_str(), e.partition))).count();
    let meters = h.brokers as usize + restarts + elections;
    // Batches: a producer's records sent together share (process, invoke_ms).
    let mut batches: BTreeMap<(&str, u64), (u64, u64)> = BTreeMap::new();
    for w in writes {
        let b = batches.entry((&w.process, w.invoke_ms)).or_insert((0, 0));
        b.0 += record_bytes(w);
        let timeout = h.request_timeouts_ms.get(&w.process).copied().unwrap_or(producer_request_timeout_ms).max(1);
        b.1 = b.1.max((w.complete_ms - w.invoke_ms) / timeout);
    }
    let request = batches.values().map(|b| b.0).max().unwrap_or(0) as f64;
    let throttles: u64 = batches.values().map(|b| b.1).sum();
    leaders as f64 * rate * (until - from) as f64 / 1000.0 + meters as f64 * (rate * window_s + request) + throttles as f64 * request
}

fn violation(q: &QuotaChange, at_ms: u64, detail: String) -> Violation {
    Violation { checker: "quota_respected", topic: q.client_id.clone(), partition: -1, offsets: vec![], at_ms, detail, loss: false, acks: None }
}
