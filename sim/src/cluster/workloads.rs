//! The workloads: the scenario's topics, created through the controller from an admin node,
//! then one client node per producer and per consumer, each running the real Rust client and
//! recording every operation it invokes — with what came back — into the history.
//!
//! Clients only ever talk to brokers over the simulated network, like any Kafka client; they
//! must never look inside a broker or its disk, and never decide what the checkers conclude.

use super::recorder::{event, now_ms, producing, Rec};
use super::request_timeout_ms;
#[cfg(madsim)]
use super::topology::{admin_ip, harness_node, Cluster};
use crate::history::{record_identity, write_header, Outcome, Read, Txn, Write};
use crate::scenario::{ProducerSpec, Scenario};
use broker_core::client::admin::{self, TopicToCreate};
use broker_core::client::producer::{in_flight_max, BatchTo, ProducerRecord};
use broker_core::client::{ClientError, Consumer, Producer, ProducerConfig, TransactionalProducer};
use broker_core::server;
use bytes::Bytes;
#[cfg(madsim)]
use madsim::task::JoinHandle;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::time::Duration;

/// How long the harness keeps trying to create the scenario's topics before starting the
/// workload anyway (it then fails, and the checkers say so).
const topics_deadline_ms: u64 = 10_000;

/// Most value bytes in one batch, so that a batch of large records stays under the broker's
/// `message.max.bytes` (1,048,588); a batch always carries at least one record.
const batch_value_bytes_max: u64 = 1_000_000;

/// The running client tasks, awaited at different points of the run.
#[cfg(madsim)]
pub(super) struct Clients {
    pub(super) producers: Vec<JoinHandle<()>>,
    pub(super) consumers: Vec<JoinHandle<()>>,
}

/// Creates the scenario's topics from the admin node; returns once they exist or the harness
/// gave up on them.
#[cfg(madsim)]
pub(super) async fn create_topics(s: &Scenario, cluster: &Cluster, rec: &Rec) {
    let admin = harness_node("admin", admin_ip);
    let topics: Vec<TopicToCreate> = s.topics.iter().map(|t| TopicToCreate { name: t.name.clone(), partitions: t.partitions, replication_factor: t.replication_factor, configs: t.config.clone() }).collect();
    let _ = admin.spawn(admin_main(cluster.brokers[0], cluster.brokers.len(), topics, rec.clone())).await;
    // Share groups read their topics from the start (the group config `share.auto.offset.reset`;
    // Kafka's default, `latest`, would skip what was produced before a share-partition was
    // first read).
    let changes: Vec<broker_core::client::placement::ConfigChange> = s.groups.iter().filter(|g| g.protocol == "share").map(|g| (broker_core::kafka::config_resource::group, g.id.clone(), "share.auto.offset.reset".to_string(), Some("earliest".to_string()))).collect();
    if !changes.is_empty() {
        let _ = admin.spawn(group_configs_main(cluster.brokers[0], changes, rec.clone())).await;
    }
}

/// Sets group configs through the active controller, trying again until the topics' deadline.
#[cfg(madsim)]
async fn group_configs_main(broker: SocketAddr, changes: Vec<broker_core::client::placement::ConfigChange>, rec: Rec) {
    let start = now_ms(&rec);
    loop {
        let target = admin::find_controller(broker, Duration::from_millis(request_timeout_ms)).await.unwrap_or(broker);
        match broker_core::client::placement::alter_configs(target, &changes, Duration::from_millis(request_timeout_ms)).await {
            Ok(()) => return event(&rec, "admin", "group_configs_set", json!({"groups": changes.iter().map(|c| &c.1).collect::<Vec<_>>()})),
            Err(e) if now_ms(&rec) - start > topics_deadline_ms => return event(&rec, "admin", "group_configs_failed", json!({"error": e.to_string()})),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Starts every producer (each spec `count` times), then every processor, then every
/// consumer, each on its own client node (processors are awaited as producers are). Consumers read until half-way through the healing phase.
#[cfg(madsim)]
pub(super) fn start_clients(s: &Scenario, cluster: &mut Cluster, rec: &Rec) -> Clients {
    let partitions = |topic: &str| s.topics.iter().find(|t| t.name == topic).map_or(1, |t| t.partitions);
    let mut clients = Clients { producers: Vec::new(), consumers: Vec::new() };
    for (i, p) in s.producers.iter().flat_map(|p| std::iter::repeat_n(p, p.count as usize)).enumerate() {
        let name = format!("producer-{i}");
        let Some(node) = cluster.add_client(&name, rec) else { break };
        let (brokers, topic, partitions, spec, rec) = (cluster.brokers.clone(), p.topic.clone(), partitions(&p.topic), p.clone(), rec.clone());
        let task = async move {
            match spec.transactional {
                true => txn_producer_main(name, brokers, topic, partitions, spec, rec).await,
                false => producer_main(name, brokers, topic, partitions, spec, rec).await,
            }
        };
        clients.producers.push(node.spawn(task));
    }
    clients.producers.extend(super::processors::start(s, cluster, rec));
    let until_ms = s.duration_ms + s.heal_ms / 2;
    for (i, c) in s.consumers.iter().enumerate() {
        let name = format!("consumer-{i}");
        let Some(node) = cluster.add_client(&name, rec) else { break };
        let task = consumer_main(name, cluster.brokers.clone(), c.topic.clone(), partitions(&c.topic), (c.max_wait_ms, c.user.clone()), until_ms, rec.clone());
        clients.consumers.push(node.spawn(task));
    }
    clients
}

/// Creates the scenario's topics through the controller once every broker is registered and
/// unfenced (retrying while they register). Gives up after `topics_deadline_ms`.
pub(crate) async fn admin_main(controller: SocketAddr, brokers: usize, topics: Vec<TopicToCreate>, rec: Rec) {
    let start = now_ms(&rec);
    // Every broker first, so replica placement does not depend on which registered first.
    while now_ms(&rec) - start <= topics_deadline_ms {
        match admin::live_brokers(controller, Duration::from_millis(request_timeout_ms)).await {
            Ok(n) if n >= brokers => break,
            _ => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    loop {
        // The active controller moves with the quorum's leader: ask broker-0 which one it is.
        let target = admin::find_controller(controller, Duration::from_millis(request_timeout_ms)).await.unwrap_or(controller);
        match admin::create_topics_with_configs(target, &topics, Duration::from_millis(request_timeout_ms)).await {
            Ok(()) => {
                event(&rec, "admin", "topics_created", json!({"topics": topics.iter().map(|t| &t.name).collect::<Vec<_>>()}));
                return;
            }
            Err(e) if now_ms(&rec) - start > topics_deadline_ms => {
                event(&rec, "admin", "create_topics_failed", json!({"error": e.to_string()}));
                return;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// A producer at `rate` records/s: every round carries the records that fell due while the
/// previous round was in flight (Kafka's linger, driven by simulated time) — one batch, or
/// with `in_flight` k > 1 up to k batches sent at once (pipelined per leader, partitions in
/// turn), the next round starting when all are answered. It produces through the healing
/// phase until the harness sets `produce_until_ms`, so that `write_liveness` can see whether
/// writes succeed again once faults are gone.
pub(crate) async fn producer_main(name: String, brokers: Vec<SocketAddr>, topic: String, partitions: i32, spec: ProducerSpec, rec: Rec) {
    let (acks, idempotent, rate, bytes) = (Scenario::acks(&spec), spec.idempotent(), spec.rate.max(1), spec.record_bytes);
    let partitions = partitions.max(1);
    let batch_records = spec.batch_records.min((batch_value_bytes_max / bytes.max(1) as u64).max(1));
    let in_flight = (spec.in_flight.max(1) as u64).min(in_flight_max as u64);
    let login = spec.user.as_deref().map(super::security::login);
    if let Some(user) = &spec.user {
        super::security::record_principal(&rec, &name, user);
    }
    let brokers = if login.is_some() { super::security::sasl_brokers(&brokers) } else { brokers };
    let client_id = spec.client_id.clone().unwrap_or_else(|| name.clone());
    if spec.client_id.is_some() {
        rec.lock().expect("recorder").history.client_ids.insert(name.clone(), client_id.clone());
    }
    let request_timeout = Duration::from_millis(spec.request_timeout_ms.unwrap_or(request_timeout_ms));
    rec.lock().expect("recorder").history.request_timeouts_ms.insert(name.clone(), request_timeout.as_millis() as u64);
    let config = ProducerConfig { client_id, acks, idempotent, retries: spec.retries, retry_backoff: Duration::from_millis(50), retry_backoff_max: Duration::from_millis(50), request_timeout, login };
    let mut producer = Producer::with_bootstrap(brokers, config);
    let start = now_ms(&rec);
    let mut n: u64 = 0;
    let mut batch_no: u64 = 0;
    while producing(&rec) {
        let due = (now_ms(&rec) - start + 1) * rate as u64 / 1000;
        if due <= n {
            tokio::time::sleep(Duration::from_micros(1_000_000 / rate as u64)).await;
            continue;
        }
        let invoke_ms = now_ms(&rec);
        if in_flight == 1 {
            let count = (due - n).min(batch_records);
            let partition = (batch_no % partitions as u64) as i32;
            batch_no += 1;
            let records: Vec<ProducerRecord> = (n..n + count).map(|i| record(&name, &spec, i, bytes)).collect();
            let result = producer.send_records(&topic, partition, &records, server::now_ms() as i64).await;
            record_batch(&rec, &name, &topic, partition, n, records, &result, (acks, idempotent), (invoke_ms, now_ms(&rec)));
            n += count;
            continue;
        }
        // Up to `in_flight` batches of at least one record each, the records spread evenly.
        let count = (due - n).min(batch_records * in_flight);
        let batches = count.min(in_flight);
        let mut round: Vec<(i32, u64, Vec<ProducerRecord>)> = Vec::new();
        for b in 0..batches {
            let (from, to) = (n + count * b / batches, n + count * (b + 1) / batches);
            let partition = (batch_no % partitions as u64) as i32;
            batch_no += 1;
            round.push((partition, from, (from..to).map(|i| record(&name, &spec, i, bytes)).collect()));
        }
        let to: Vec<BatchTo> = round.iter().map(|(partition, _, records)| BatchTo { topic: &topic, partition: *partition, records }).collect();
        let results = producer.send_batches(&to, server::now_ms() as i64).await;
        let complete_ms = now_ms(&rec);
        for ((partition, first, records), result) in round.into_iter().zip(results) {
            record_batch(&rec, &name, &topic, partition, first, records, &result, (acks, idempotent), (invoke_ms, complete_ms));
        }
        n += count;
    }
}

/// `transaction.timeout.ms` of the simulated transactional producers: a transaction its
/// producer gave up on is aborted by its coordinator within this and a check interval.
pub(super) const txn_timeout_ms: i32 = 5_000;

/// A transactional producer at `rate` records/s: each round is one transaction holding the
/// records that fell due, one batch to each of (up to) two partitions in turn, then committed
/// — or aborted, for the serials `abort_per_mille` picks (by name and serial, no draw). A send
/// that fails makes it abort the transaction and init again (which also ends, by fencing,
/// anything its coordinator still has open). Every write goes to the history as any producer's
/// does, and every transaction to `txns`.
pub(crate) async fn txn_producer_main(name: String, brokers: Vec<SocketAddr>, topic: String, partitions: i32, spec: ProducerSpec, rec: Rec) {
    let (rate, bytes) = (spec.rate.max(1), spec.record_bytes);
    let partitions = partitions.max(1);
    let batch_records = spec.batch_records.min((batch_value_bytes_max / bytes.max(1) as u64).max(1));
    let config = ProducerConfig { client_id: name.clone(), acks: -1, idempotent: true, retries: spec.retries, retry_backoff: Duration::from_millis(50), retry_backoff_max: Duration::from_millis(50), request_timeout: Duration::from_millis(request_timeout_ms), login: None };
    let mut producer = TransactionalProducer::new(brokers, config, &format!("{name}-txn"), txn_timeout_ms);
    producer.set_end_timeout((spec.end_txn_timeout_ms > 0).then(|| Duration::from_millis(spec.end_txn_timeout_ms)));
    let start = now_ms(&rec);
    let (mut n, mut serial, mut batch_no): (u64, u64, u64) = (0, 0, 0);
    let mut ready = false;
    while producing(&rec) {
        if !ready {
            match producer.init().await {
                Ok((pid, epoch)) => {
                    event(&rec, &name, "txn_init", json!({"producer_id": pid, "epoch": epoch}));
                    ready = true;
                }
                Err(e) => {
                    event(&rec, &name, "txn_init", json!({"error": e.to_string()}));
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
            continue;
        }
        let due = (now_ms(&rec) - start + 1) * rate as u64 / 1000;
        if due <= n {
            tokio::time::sleep(Duration::from_micros(1_000_000 / rate as u64)).await;
            continue;
        }
        let invoke_ms = now_ms(&rec);
        let count = (due - n).min(batch_records);
        let parts = (partitions as u64).min(2).min(count);
        let mut txn = Txn { process: name.clone(), serial, records: Vec::new(), reads: Vec::new(), commit: false, end: None, invoke_ms, complete_ms: invoke_ms };
        let _ = producer.begin();
        let mut failed = false;
        for b in 0..parts {
            let (from, to) = (n + count * b / parts, n + count * (b + 1) / parts);
            let partition = (batch_no % partitions as u64) as i32;
            batch_no += 1;
            let records: Vec<ProducerRecord> = (from..to).map(|i| record(&name, &spec, i, bytes)).collect();
            txn.records.extend(records.iter().map(|r| (topic.clone(), partition, record_identity(r.value.as_deref(), r.headers.iter().map(|(k, v)| (k.as_str(), v.as_deref()))))));
            let result = producer.send(&topic, partition, &records, server::now_ms() as i64).await;
            failed |= result.is_err();
            record_batch(&rec, &name, &topic, partition, from, records, &result, (-1, true), (invoke_ms, now_ms(&rec)));
            if failed {
                break;
            }
        }
        n += count;
        txn.commit = !failed && !aborts_on_purpose(&name, serial, spec.abort_per_mille);
        let ended = end_txn(&mut producer, &mut txn).await;
        txn.complete_ms = now_ms(&rec);
        event(&rec, &name, "txn_end", json!({"serial": serial, "commit": txn.commit, "ok": ended.is_ok(), "error": ended.as_ref().err().map(|e| e.to_string())}));
        // After a failure the producer starts over: init aborts whatever its coordinator still
        // holds open for it and bumps the epoch.
        ready = !failed && ended.is_ok();
        serial += 1;
        rec.lock().expect("recorder").history.txns.push(txn);
    }
}

/// Whether `name`'s transaction `serial` is one `per_mille` picks to abort on purpose (a hash
/// of both: no draw).
pub(super) fn aborts_on_purpose(name: &str, serial: u64, per_mille: u32) -> bool {
    per_mille > 0 && broker_core::hash::fnv1a(broker_core::hash::fnv_offset, format!("{name}-txn-{serial}").bytes()) % 1000 < per_mille as u64
}

/// Ends the open transaction as `txn.commit` says and records what came back in `txn.end`.
pub(super) async fn end_txn(producer: &mut TransactionalProducer, txn: &mut Txn) -> Result<(), ClientError> {
    let ended = match txn.commit {
        true => producer.commit().await,
        false => producer.abort().await,
    };
    txn.end = Some(match &ended {
        Ok(()) => Outcome::Ok(0),
        Err(e) if e.outcome_unknown() => Outcome::Unknown(e.to_string()),
        Err(e) => Outcome::Fail(e.to_string()),
    });
    ended
}

/// One batch's `produce` event and its records' writes in the history. Writes of one producer
/// may overlap in time (several batches in flight): each carries its own invoke and complete
/// times, and they are recorded in the order they were sent.
#[allow(clippy::too_many_arguments)]
pub(super) fn record_batch(rec: &Rec, name: &str, topic: &str, partition: i32, first: u64, records: Vec<ProducerRecord>, result: &Result<i64, ClientError>, (acks, idempotent): (i16, bool), (invoke_ms, complete_ms): (u64, u64)) {
    event(rec, name, "produce", produce_fields(partition, first, records.len() as u64, result));
    let mut r = rec.lock().expect("recorder");
    for (i, x) in records.into_iter().enumerate() {
        let outcome = match outcome_of(result) {
            Outcome::Ok(base) if base >= 0 => Outcome::Ok(base + i as i64),
            other => other,
        };
        let value = record_identity(x.value.as_deref(), x.headers.iter().map(|(k, v)| (k.as_str(), v.as_deref())));
        let (key, tombstone) = (x.key.map(|k| k.to_vec()), x.value.is_none());
        let retry_refused = result.as_ref().is_err_and(ClientError::sequence_refused);
        r.history.writes.push(Write { process: name.to_string(), topic: topic.to_string(), partition, value, key, tombstone, acks, idempotent, invoke_ms, complete_ms, outcome, retry_refused });
    }
}

/// Record `i` of producer `name`: key `key-{i % keys}` (none without keys), value `{name}-{i}-`
/// padded with dots to `bytes`, so every value is unique and says who wrote it — or, for the
/// serials `tombstone_per_mille` picks, a tombstone (null value) whose `seedlog.write` header
/// names it instead.
fn record(name: &str, spec: &ProducerSpec, i: u64, bytes: usize) -> ProducerRecord {
    let key = (spec.keys > 0).then(|| Bytes::from(format!("key-{}", i % spec.keys as u64)));
    let id = format!("{name}-{i}");
    // Which serials are tombstones depends on the producer and serial only (no draw).
    let tombstone = spec.tombstone_per_mille > 0 && broker_core::hash::fnv1a(broker_core::hash::fnv_offset, id.bytes()) % 1000 < spec.tombstone_per_mille as u64;
    if tombstone {
        return ProducerRecord { key, value: None, headers: vec![(write_header.to_string(), Some(Bytes::from(id)))] };
    }
    let mut v = format!("{id}-").into_bytes();
    v.resize(bytes.max(v.len()), b'.');
    ProducerRecord { key, value: Some(Bytes::from(v)), headers: Vec::new() }
}

/// The `produce` event of a batch: where it went and what came back.
fn produce_fields(partition: i32, first: u64, count: u64, result: &Result<i64, ClientError>) -> Value {
    match result {
        Ok(o) => json!({"partition": partition, "first": first, "count": count, "ok": o}),
        Err(e) if e.outcome_unknown() => json!({"partition": partition, "first": first, "count": count, "unknown": e.to_string()}),
        Err(e) => json!({"partition": partition, "first": first, "count": count, "fail": e.to_string()}),
    }
}

fn outcome_of(r: &Result<i64, ClientError>) -> Outcome {
    match r {
        Ok(o) => Outcome::Ok(*o),
        Err(e) if e.outcome_unknown() => Outcome::Unknown(e.to_string()),
        Err(e) => Outcome::Fail(e.to_string()),
    }
}

/// An assign-mode consumer of every partition of `topic` until `until_ms`. A poll error ends
/// the session; the next one starts where this one got to (from 0 if the log lost it).
pub(crate) async fn consumer_main(name: String, brokers: Vec<SocketAddr>, topic: String, partitions: i32, (max_wait_ms, user): (i32, Option<String>), until_ms: u64, rec: Rec) {
    if let Some(user) = &user {
        super::security::record_principal(&rec, &name, user);
    }
    let brokers = if user.is_some() { super::security::sasl_brokers(&brokers) } else { brokers };
    let mut session = 0u32;
    let mut positions: Vec<i64> = vec![0; partitions as usize];
    while now_ms(&rec) < until_ms {
        // Each session starts from another broker, so a dead one does not blind every session.
        let mut bootstrap = brokers.clone();
        let shift = session as usize % bootstrap.len().max(1);
        bootstrap.rotate_left(shift);
        let mut c = Consumer::with_bootstrap(bootstrap, &name, Duration::from_millis(request_timeout_ms));
        if let Some(user) = &user {
            c.set_login(super::security::login(user));
        }
        for (p, pos) in positions.iter().enumerate() {
            c.assign(&topic, p as i32, *pos);
        }
        let Err(e) = poll_session(&mut c, &name, session, max_wait_ms, until_ms, &mut positions, &rec).await else {
            return;
        };
        event(&rec, &name, "poll_error", json!({"error": e.to_string()}));
        if let ClientError::Kafka { code: broker_core::kafka::Code::OffsetOutOfRange, .. } = e {
            // Offset out of range: the log lost what we had read past. Start over.
            positions.iter_mut().for_each(|p| *p = 0);
        }
        session += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Polls until `until_ms` (`Ok`) or the first error, recording every record read and moving
/// `positions` past it.
async fn poll_session(c: &mut Consumer, name: &str, session: u32, max_wait_ms: i32, until_ms: u64, positions: &mut [i64], rec: &Rec) -> Result<(), ClientError> {
    loop {
        if now_ms(rec) >= until_ms {
            return Ok(());
        }
        let records = c.poll(max_wait_ms).await?;
        let at_ms = now_ms(rec);
        if !records.is_empty() {
            event(rec, name, "poll", json!({"records": records.len(), "first": records[0].offset, "last": records[records.len() - 1].offset}));
        }
        let mut r = rec.lock().expect("recorder");
        // Every record the broker sent is history (a repeat or a step back is what
        // nonmonotonic_poll looks for); only fresh ones move this consumer on.
        for x in records {
            if x.fresh {
                positions[x.partition as usize] = x.offset + 1;
            }
            let value = identity(&x);
            r.history.reads.push(Read { process: name.to_string(), session, topic: x.topic, partition: x.partition, offset: x.offset, value, high_watermark: x.high_watermark, at_ms });
        }
    }
}

/// What the history records as a consumed record's value (see [`record_identity`]).
pub(super) fn identity(x: &broker_core::client::consumer::ConsumedRecord) -> Vec<u8> {
    record_identity(x.value.as_deref(), x.headers.iter().map(|(k, v)| (k.as_str(), v.as_deref())))
}
