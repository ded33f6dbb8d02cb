//! Share-group workloads (KIP-932, `protocol = "share"`): each member on its own client node
//! runs the real Rust share consumer (`broker_core::client::share::ShareConsumer`) and records
//! every record it is handed (with its delivery count) and what became of every
//! acknowledgement. What a member does with a record is fixed by the record's value, so every
//! delivery of it asks the same: one in ten is rejected, one in ten is released every time (it
//! must end archived at the delivery-count limit), one in ten is released the first time only,
//! the rest accepted. With `churn`, members crash (their records come back when their locks run
//! out) or leave (closing their sessions) at times drawn from the run's seed, during the safety
//! phase only, and come back under a new member id.
//!
//! Like every workload, members talk to brokers only over the simulated network and never
//! decide what the checkers conclude.

use super::recorder::{event, now_ms, Rec};
use super::request_timeout_ms;
use crate::history::{ShareAck, ShareDelivery};
use crate::scenario::GroupSpec;
use broker_core::client::share::{AckOutcome, ShareConfig, ShareConsumer, ShareRecord};
use broker_core::share::partition::AckType;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use std::net::SocketAddr;
use std::time::Duration;

/// How long a member's fetch waits for records.
const poll_wait_ms: i32 = 100;
/// Records one fetch may acquire (librdkafka's `max.poll.records` default).
const max_records: i32 = 500;
/// Shortest and longest time between two churn actions of one member, ms.
const churn_gap_ms: (u64, u64) = (2_000, 8_000);
/// How long a left or crashed member stays away, ms.
const away_ms: (u64, u64) = (300, 3_000);

/// What every member does with a record, by its value.
pub fn disposition(value: &[u8], delivery_count: i16) -> AckType {
    match broker_core::hash::fnv1a(broker_core::hash::fnv_offset, value.iter().copied()) % 10 {
        0 => AckType::Reject,
        1 => AckType::Release,
        2 if delivery_count == 1 => AckType::Release,
        _ => AckType::Accept,
    }
}

pub fn kind_name(k: AckType) -> &'static str {
    match k {
        AckType::Gap => "gap",
        AckType::Accept => "accept",
        AckType::Release => "release",
        AckType::Reject => "reject",
    }
}

/// What an acknowledgement's result tells (see [`ShareAck`]).
fn outcome(a: &AckOutcome) -> &'static str {
    use broker_core::kafka::Code;
    match a.result {
        Ok(()) => "taken",
        Err(Code::InvalidRecordState | Code::InvalidRequest | Code::InvalidShareSessionEpoch | Code::ShareSessionNotFound) => "refused",
        Err(_) => "unknown",
    }
}

pub(super) struct ShareMember {
    pub name: String,
    pub spec: GroupSpec,
    pub brokers: Vec<SocketAddr>,
    pub churn_until_ms: u64,
    pub until_ms: u64,
    pub rng: ChaCha8Rng,
    pub rec: Rec,
}

fn consumer(m: &ShareMember, incarnation: u32) -> ShareConsumer {
    let config = ShareConfig { group_id: m.spec.id.clone(), member_id: format!("{}.{incarnation}", m.name), topics: vec![m.spec.topic.clone()], max_records, request_timeout: Duration::from_millis(request_timeout_ms) };
    let mut bootstrap = m.brokers.clone();
    let shift = incarnation as usize % bootstrap.len().max(1);
    bootstrap.rotate_left(shift);
    ShareConsumer::new(bootstrap, config)
}

fn record(m: &ShareMember, records: &[ShareRecord], acks: &[AckOutcome]) {
    let at_ms = now_ms(&m.rec);
    let mut r = m.rec.lock().expect("recorder");
    for x in records {
        r.history.share_deliveries.push(ShareDelivery { process: m.name.clone(), group: m.spec.id.clone(), topic: x.topic.clone(), partition: x.partition, offset: x.offset, delivery_count: x.delivery_count, at_ms });
    }
    for a in acks {
        r.history.share_acks.push(ShareAck { process: m.name.clone(), group: m.spec.id.clone(), topic: a.topic.clone(), partition: a.partition, offset: a.offset, kind: kind_name(a.kind), outcome: outcome(a), at_ms });
    }
}

/// One member: poll, record, acknowledge; now and then (with churn) crash or leave.
pub(super) async fn member_main(mut m: ShareMember) {
    let mut incarnation = 0u32;
    let mut c = consumer(&m, incarnation);
    let mut next_churn = now_ms(&m.rec) + m.rng.gen_range(churn_gap_ms.0..=churn_gap_ms.1);
    while now_ms(&m.rec) < m.until_ms {
        let polled = c.poll(poll_wait_ms).await;
        record(&m, &polled.records, &polled.acks);
        if !polled.unanswered.is_empty() {
            let at_ms = now_ms(&m.rec);
            let lost = polled.unanswered.iter().map(|(_, p)| (m.spec.id.clone(), *p, at_ms));
            m.rec.lock().expect("recorder").history.share_unanswered.extend(lost);
        }
        if let Some(e) = &polled.error {
            event(&m.rec, &m.name, "share_error", json!({"error": e.to_string()}));
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        for x in &polled.records {
            let value = x.value.as_deref().unwrap_or_default();
            c.acknowledge(x, disposition(value, x.delivery_count));
        }
        let churning = m.spec.churn && now_ms(&m.rec) >= next_churn && now_ms(&m.rec) + m.spec.session_timeout_ms <= m.churn_until_ms;
        if !churning {
            continue;
        }
        next_churn = now_ms(&m.rec) + m.rng.gen_range(churn_gap_ms.0..=churn_gap_ms.1);
        if m.rng.gen_bool(0.5) {
            let acks = c.close().await;
            record(&m, &[], &acks);
            event(&m.rec, &m.name, "share_left", json!({}));
        } else {
            // A crashed process sends nothing more: its acknowledgements owed are gone.
            event(&m.rec, &m.name, "share_crashed", json!({}));
        }
        incarnation += 1;
        tokio::time::sleep(Duration::from_millis(m.rng.gen_range(away_ms.0..=away_ms.1))).await;
        c = consumer(&m, incarnation);
    }
    let acks = c.close().await;
    record(&m, &[], &acks);
}
