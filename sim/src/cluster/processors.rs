//! Consume-transform-produce processors (`scenario::ProcessorSpec`): each its own client node
//! running this crate's read_committed consumer and transactional producer the way Kafka
//! Streams' exactly-once loop does. A transaction is two polls, one output per input read
//! (while the record has fewer than `hops` steps), and the processor's positions sent to the
//! transaction for its group; then commit, or abort for the serials `abort_per_mille` picks.
//! A failure aborts too, and after any abort the processor starts over:
//! `init` (which fences and aborts whatever its previous incarnation left open), the group's
//! committed offsets read with `require_stable`, a new consumer there.
//!
//! Every output goes to the history as a write, and every transaction to `txns` with the
//! records it read (`Txn::reads`), for `exactly_once` and `txn_wr_cycle`.

use super::recorder::{event, now_ms, producing, Rec};
use super::request_timeout_ms;
use super::topology::Cluster;
use super::workloads::{aborts_on_purpose, end_txn, identity, record_batch, txn_timeout_ms};
use crate::history::{hop_mark, hops, record_identity, Processors, Txn};
use crate::scenario::{ProcessorSpec, Scenario};
use broker_core::client::assignor::TopicPartitions;
use broker_core::client::group::{GroupConfig, GroupConsumer};
use broker_core::client::producer::ProducerRecord;
use broker_core::client::{ClientError, Consumer, ProducerConfig, TransactionalProducer};
use broker_core::server;
use bytes::Bytes;
use madsim::task::JoinHandle;
use serde_json::json;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

/// Polls in one transaction: two, so that a transaction is open while others' commit and
/// processors can read what the others wrote between their own reads.
const polls_per_txn: usize = 2;

/// How long one poll may wait for records (`fetch.max.wait.ms`).
const poll_wait_ms: i32 = 100;

/// Pause after a failed poll (its leader moving, say) before going on.
const poll_error_backoff_ms: u64 = 100;

/// Pause after a failed start-over (init or the committed offsets' read) before the next.
const start_over_backoff_ms: u64 = 200;

/// The processors of every spec, `processor-{k}` in file order, for the history.
pub(super) fn of(s: &Scenario) -> Vec<Processors> {
    let mut names = s.processor_names().into_iter();
    s.processors.iter().map(|p| Processors { group: p.group.clone(), from: p.from.clone(), to: p.to.clone(), processes: names.by_ref().take(p.count as usize).collect(), hops: p.hops }).collect()
}

/// Starts every processor on its own client node.
pub(super) fn start(s: &Scenario, cluster: &mut Cluster, rec: &Rec) -> Vec<JoinHandle<()>> {
    let partitions = |topic: &str| s.topics.iter().find(|t| t.name == topic).map_or(1, |t| t.partitions.max(1));
    let mut tasks = Vec::new();
    for (spec, group) in s.processors.iter().zip(of(s)) {
        for (j, name) in group.processes.iter().enumerate() {
            let Some(node) = cluster.add_client(name, rec) else { return tasks };
            let owned: Vec<i32> = (0..partitions(&spec.from)).filter(|p| *p as u32 % spec.count == j as u32).collect();
            let shape = Shape { spec: spec.clone(), owned, to_partitions: partitions(&spec.to) };
            tasks.push(node.spawn(processor_main(name.clone(), cluster.brokers.clone(), shape, rec.clone())));
        }
    }
    tasks
}

/// What one processor reads and where it writes.
struct Shape {
    spec: ProcessorSpec,
    /// The partitions of `from` it reads.
    owned: Vec<i32>,
    to_partitions: i32,
}

async fn processor_main(name: String, brokers: Vec<SocketAddr>, shape: Shape, rec: Rec) {
    if shape.owned.is_empty() {
        return;
    }
    let spec = &shape.spec;
    let config = ProducerConfig { client_id: name.clone(), acks: -1, idempotent: true, retries: 3, retry_backoff: Duration::from_millis(50), retry_backoff_max: Duration::from_millis(50), request_timeout: Duration::from_millis(request_timeout_ms), login: None };
    let mut producer = TransactionalProducer::new(brokers.clone(), config, &format!("{}-{name}", spec.group), txn_timeout_ms);
    let mut consumer: Option<Consumer> = None;
    let mut serial: u64 = 0;
    while producing(&rec) {
        let Some(c) = consumer.as_mut() else {
            match start_over(&mut producer, &brokers, &shape, &name).await {
                Ok((c, offsets)) => {
                    event(&rec, &name, "processor_start", json!({"offsets": offsets}));
                    consumer = Some(c);
                }
                Err(e) => {
                    event(&rec, &name, "processor_start", json!({"error": e.to_string()}));
                    tokio::time::sleep(Duration::from_millis(start_over_backoff_ms)).await;
                }
            }
            continue;
        };
        let invoke_ms = now_ms(&rec);
        let mut txn = Txn { process: name.clone(), serial, records: Vec::new(), reads: Vec::new(), commit: false, end: None, invoke_ms, complete_ms: invoke_ms };
        let _ = producer.begin();
        let mut failed: Option<ClientError> = None;
        for _ in 0..polls_per_txn {
            let records = match c.poll(poll_wait_ms).await {
                Ok(r) => r,
                Err(e) => {
                    // The consumer finds the leader again on its next poll; this transaction
                    // commits what it read so far.
                    event(&rec, &name, "poll_error", json!({"error": e.to_string()}));
                    tokio::time::sleep(Duration::from_millis(poll_error_backoff_ms)).await;
                    break;
                }
            };
            let mut out: BTreeMap<i32, Vec<ProducerRecord>> = BTreeMap::new();
            for r in records.iter().filter(|r| r.fresh) {
                let value = identity(r);
                if hops(&value) < spec.hops {
                    let mut v = value.clone();
                    v.extend(format!("{hop_mark}{name}.{serial}").bytes());
                    out.entry((r.partition + 1) % shape.to_partitions).or_default().push(ProducerRecord { key: None, value: Some(Bytes::from(v)), headers: Vec::new() });
                }
                txn.reads.push((r.topic.clone(), r.partition, r.offset, value));
            }
            for (p, records) in out {
                let first = txn.records.len() as u64;
                txn.records.extend(records.iter().map(|r| (spec.to.clone(), p, record_identity(r.value.as_deref(), std::iter::empty()))));
                let result = producer.send(&spec.to, p, &records, server::now_ms() as i64).await;
                record_batch(&rec, &name, &spec.to, p, first, records, &result, (-1, true), (invoke_ms, now_ms(&rec)));
                if let Err(e) = result {
                    failed = Some(e);
                    break;
                }
            }
            if failed.is_some() {
                break;
            }
        }
        if txn.reads.is_empty() && failed.is_none() {
            // Nothing read, nothing written: nothing reached a coordinator.
            let _ = producer.abort().await;
            continue;
        }
        if failed.is_none() {
            let offsets: Vec<(String, i32, i64)> = shape.owned.iter().filter_map(|p| Some((spec.from.clone(), *p, c.position(&spec.from, *p)?))).collect();
            failed = producer.send_offsets(&spec.group, &offsets).await.err();
        }
        txn.commit = failed.is_none() && !aborts_on_purpose(&name, serial, spec.abort_per_mille);
        let ended = end_txn(&mut producer, &mut txn).await;
        txn.complete_ms = now_ms(&rec);
        event(&rec, &name, "txn_end", json!({"serial": serial, "commit": txn.commit, "reads": txn.reads.len(), "ok": ended.is_ok(), "error": failed.as_ref().or(ended.as_ref().err()).map(|e| e.to_string())}));
        if !txn.commit || ended.is_err() {
            // Start over from what the group holds (Kafka Streams does the same after a
            // failed transaction: its task is closed dirty and revived).
            consumer = None;
        }
        serial += 1;
        rec.lock().expect("recorder").history.txns.push(txn);
    }
}

/// A fresh start: `init` (fencing this id's previous incarnation, whose open transaction the
/// coordinator aborts), then the group's committed offsets of the owned partitions, stable
/// (an aborted transaction's offsets are gone once its markers are written), and a new
/// read_committed consumer there (offset 0 where none is committed).
async fn start_over(producer: &mut TransactionalProducer, brokers: &[SocketAddr], shape: &Shape, name: &str) -> Result<(Consumer, Vec<(i32, i64)>), ClientError> {
    producer.init().await?;
    let from = &shape.spec.from;
    let config = GroupConfig { request_timeout: Duration::from_millis(request_timeout_ms), ..GroupConfig::new(&shape.spec.group, name) };
    let mut group = GroupConsumer::new(brokers.to_vec(), config);
    let wanted: TopicPartitions = [(from.clone(), shape.owned.clone())].into_iter().collect();
    let committed = group.committed(&wanted).await?;
    let mut c = Consumer::with_bootstrap(brokers.to_vec(), name, Duration::from_millis(request_timeout_ms));
    c.set_read_committed(true);
    let mut offsets = Vec::new();
    for p in &shape.owned {
        let at = committed.get(&(from.clone(), *p)).copied().filter(|o| *o >= 0).unwrap_or(0);
        c.assign(from, *p, at);
        offsets.push((*p, at));
    }
    Ok((c, offsets))
}
