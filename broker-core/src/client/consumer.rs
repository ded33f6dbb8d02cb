//! Assign-mode consumer: fetch from chosen partitions at chosen offsets, decode the batches
//! (gzip and snappy included), return the records at or after each position.

use super::cluster::Cluster;
use super::ClientError;
use bytes::{Buf, Bytes};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchRequest, FetchTopic};
use kafka_protocol::messages::{BrokerId, TopicName};
use kafka_protocol::protocol::StrBytes;
use crate::log::compressed;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;


/// A record as the consumer saw it, with the high watermark of the response that carried it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumedRecord {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub timestamp: i64,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    /// Record headers in the order they were written: name, value.
    pub headers: Vec<(String, Option<Bytes>)>,
    pub high_watermark: i64,
    /// Whether the client takes it: false for a record at or below one this fetch already
    /// returned (a repeat, or a step back a broker must never send). Callers act on fresh
    /// records only; a history of what the broker sent keeps them all.
    pub fresh: bool,
}

/// The last offset a v2 batch covers (base offset + last offset delta), from its header.
fn batch_last_offset(batch: &[u8]) -> Option<i64> {
    let base = i64::from_be_bytes(batch.get(0..8)?.try_into().ok()?);
    let delta = i32::from_be_bytes(batch.get(23..27)?.try_into().ok()?);
    Some(base + delta as i64)
}

/// A decoded record: offset, key, value.
pub type DecodedRecord = (i64, Option<Bytes>, Option<Bytes>);

/// The records in `bytes` (whole v2 batches, any codec). Control batches (transaction markers)
/// are no one's records and are skipped, as every Kafka consumer skips them.
pub fn decode_records(mut bytes: Bytes) -> Result<Vec<DecodedRecord>, ClientError> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        if let Some(h) = crate::log::batch::read_header(&bytes).ok().filter(|h| h.is_control() && h.size <= bytes.len()) {
            bytes.advance(h.size);
            continue;
        }
        let set = compressed::decode_batch(&mut bytes).map_err(|e| ClientError::Protocol(format!("decode: {e}")))?;
        out.extend(set.records.into_iter().map(|r| (r.offset, r.key, r.value)));
    }
    Ok(out)
}

/// Kafka's consumer-side rule for read_committed fetches: the aborted transactions the broker
/// listed, by first offset, become "aborting" once a batch reaches them, and stay so for their
/// producer until its ABORT marker; a transactional batch of an aborting producer is dropped.
/// Markers are never records, whatever the isolation.
struct Aborted {
    /// (first offset, producer id), sorted; `next` is the first not yet reached.
    listed: Vec<(i64, i64)>,
    next: usize,
    aborting: std::collections::BTreeSet<i64>,
}

impl Aborted {
    fn new(read_committed: bool, listed: &[kafka_protocol::messages::fetch_response::AbortedTransaction]) -> Aborted {
        let mut listed: Vec<(i64, i64)> = listed.iter().filter(|_| read_committed).map(|a| (a.first_offset, a.producer_id.0)).collect();
        listed.sort_unstable();
        Aborted { listed, next: 0, aborting: Default::default() }
    }

    /// Whether the batch `raw` gives no records to the caller.
    fn skips(&mut self, raw: &[u8]) -> bool {
        let Ok(h) = crate::log::batch::read_header(raw) else { return false };
        while self.listed.get(self.next).is_some_and(|(first, _)| *first <= h.last_offset()) {
            self.aborting.insert(self.listed[self.next].1);
            self.next += 1;
        }
        if h.is_control() {
            if let Ok(crate::log::batch::control::Control::Marker { kind: crate::log::batch::control::MarkerKind::Abort, .. }) = crate::log::batch::control::read_control(raw) {
                self.aborting.remove(&h.producer_id);
            }
            return true;
        }
        h.is_transactional() && self.aborting.contains(&h.producer_id)
    }
}

pub struct Consumer {
    cluster: Cluster,
    positions: BTreeMap<(String, i32), i64>,
    /// Bytes per partition per fetch.
    pub partition_max_bytes: i32,
    /// Kafka's `isolation.level=read_committed`: fetches stop at the last stable offset and
    /// aborted transactions' records are dropped ([`Consumer::set_read_committed`]).
    read_committed: bool,
}

impl Consumer {
    /// A consumer that finds partition leaders through the broker at `bootstrap`.
    pub fn new(bootstrap: SocketAddr, client_id: &str, timeout: Duration) -> Consumer {
        Consumer::with_bootstrap(vec![bootstrap], client_id, timeout)
    }

    /// A consumer that may ask any of `bootstrap` for metadata (at least one address).
    pub fn with_bootstrap(bootstrap: Vec<SocketAddr>, client_id: &str, timeout: Duration) -> Consumer {
        Consumer { cluster: Cluster::new(bootstrap, client_id, timeout), positions: BTreeMap::new(), partition_max_bytes: 1 << 20, read_committed: false }
    }

    /// Authenticates every connection as `login` (a SASL listener).
    pub fn set_login(&mut self, login: crate::security::SaslLogin) {
        self.cluster.set_login(login);
    }

    /// Reads committed records only (`isolation.level=read_committed`): up to each partition's
    /// last stable offset, without the records of aborted transactions. Either way transaction
    /// markers are never returned as records.
    pub fn set_read_committed(&mut self, on: bool) {
        self.read_committed = on;
    }

    /// Reads `topic`/`partition` from `offset` on.
    pub fn assign(&mut self, topic: &str, partition: i32, offset: i64) {
        self.positions.insert((topic.to_string(), partition), offset);
    }

    /// Stops reading `topic`/`partition`.
    pub fn unassign(&mut self, topic: &str, partition: i32) {
        self.positions.remove(&(topic.to_string(), partition));
    }

    /// The cluster view it fetches through (shared with a group consumer's requests).
    pub fn cluster(&mut self) -> &mut Cluster {
        &mut self.cluster
    }

    pub fn position(&self, topic: &str, partition: i32) -> Option<i64> {
        self.positions.get(&(topic.to_string(), partition)).copied()
    }

    /// One fetch from each leader of the assigned partitions, the first waiting up to
    /// `max_wait_ms` for data (the others answer at once). Positions advance past what is
    /// returned. Every record the brokers sent at or after the fetch position is returned, in
    /// their order; those the client would not take are marked not [`ConsumedRecord::fresh`]. A partition-level error is returned as the error, after forgetting that
    /// partition's leader so the next poll looks it up again.
    pub async fn poll(&mut self, max_wait_ms: i32) -> Result<Vec<ConsumedRecord>, ClientError> {
        let mut by_leader: BTreeMap<SocketAddr, Vec<(String, i32, i64)>> = BTreeMap::new();
        for ((t, p), offset) in self.positions.clone() {
            let leader = self.cluster.leader(&t, p).await?;
            by_leader.entry(leader).or_default().push((t, p, offset));
        }
        let mut out = Vec::new();
        for (i, (addr, parts)) in by_leader.into_iter().enumerate() {
            let wait = if i == 0 { max_wait_ms } else { 0 };
            match self.fetch_from(addr, &parts, wait).await {
                Ok(records) => out.extend(records),
                Err(e) if out.is_empty() => return Err(e),
                // Positions already moved past what `out` holds: return it; the next poll
                // meets the error again.
                Err(_) => break,
            }
        }
        Ok(out)
    }

    async fn fetch_from(&mut self, addr: SocketAddr, parts: &[(String, i32, i64)], max_wait_ms: i32) -> Result<Vec<ConsumedRecord>, ClientError> {
        let mut topics: BTreeMap<&str, Vec<FetchPartition>> = BTreeMap::new();
        for (t, p, offset) in parts {
            topics.entry(t).or_default().push(FetchPartition::default().with_partition(*p).with_fetch_offset(*offset).with_partition_max_bytes(self.partition_max_bytes));
        }
        let req = FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(max_wait_ms)
            .with_min_bytes(1)
            .with_max_bytes(50 << 20)
            .with_session_epoch(-1)
            .with_isolation_level(if self.read_committed { crate::kafka::isolation::read_committed } else { 0 })
            .with_topics(topics.into_iter().map(|(t, ps)| FetchTopic::default().with_topic(TopicName(StrBytes::from_string(t.into()))).with_partitions(ps)).collect());
        let resp = match self.cluster.conn(addr).await?.send(&req).await {
            Ok(r) => r,
            Err(e) => {
                self.cluster.drop_conn(addr);
                for (t, p, _) in parts {
                    self.cluster.forget(t, *p);
                }
                return Err(e);
            }
        };
        let mut out = Vec::new();
        // Positions move only if the whole response is good: an error on one partition must
        // not drop records already decoded for another while their positions advanced.
        let mut next_positions = Vec::new();
        for t in resp.responses {
            let topic = t.topic.0.to_string();
            for p in t.partitions {
                if p.error_code != 0 {
                    self.cluster.forget(&topic, p.partition_index);
                    return Err(ClientError::kafka(p.error_code, format!("fetch {topic}-{}", p.partition_index)));
                }
                let key = (topic.clone(), p.partition_index);
                let Some(pos) = self.positions.get(&key).copied() else { continue };
                let mut records = p.records.unwrap_or_default();
                let mut next = pos;
                let mut first_batch = true;
                let mut aborted = Aborted::new(self.read_committed, p.aborted_transactions.as_deref().unwrap_or_default());
                while !records.is_empty() {
                    let whole = records.clone();
                    let set = compressed::decode_batch(&mut records).map_err(|e| ClientError::Protocol(format!("decode {topic}-{}: {e}", p.partition_index)))?;
                    // A compacted batch may hold fewer records than its offsets, or none: the
                    // position moves past the batch's last offset, as Kafka's consumers do.
                    let raw = &whole[..whole.len() - records.len()];
                    let batch_end = batch_last_offset(raw).map(|last| last + 1);
                    // A marker, or (read_committed) an aborted transaction's batch: passed over.
                    let skipped = aborted.skips(raw);
                    for r in set.records.into_iter().filter(|_| !skipped) {
                        // The first batch holds the fetch offset and may start before it (Kafka
                        // returns whole batches): that prefix is expected and skipped. Anything
                        // else at or below what this fetch returned is passed on, not fresh.
                        if first_batch && r.offset < pos {
                            continue;
                        }
                        let fresh = r.offset >= next;
                        if fresh {
                            next = r.offset + 1;
                        }
                        out.push(ConsumedRecord {
                            topic: topic.clone(),
                            partition: p.partition_index,
                            offset: r.offset,
                            timestamp: r.timestamp,
                            key: r.key,
                            value: r.value,
                            headers: r.headers.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
                            high_watermark: p.high_watermark,
                            fresh,
                        });
                    }
                    if let Some(end) = batch_end.filter(|&e| e > pos) {
                        next = next.max(end);
                    }
                    first_batch = false;
                }
                next_positions.push((key, next));
            }
        }
        self.positions.extend(next_positions);
        Ok(out)
    }
}
