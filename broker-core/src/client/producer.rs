//! Producer: one batch per `send`, or up to [`in_flight_max`] batches in flight at once
//! (`send_batches`, pipelined on each leader's connection: Kafka's
//! `max.in.flight.requests.per.connection`), to the partition's leader found through Metadata,
//! with retries on retriable errors and, when idempotent, a producer id and per-partition
//! sequence numbers so a retried batch is appended at most once and in its place.

use super::cluster::Cluster;
use super::ClientError;
use bytes::{Bytes, BytesMut};
use indexmap::IndexMap;
use kafka_protocol::messages::init_producer_id_request::InitProducerIdRequest;
use crate::kafka::Code;
use kafka_protocol::messages::produce_request::{PartitionProduceData, ProduceRequest, TopicProduceData};
use kafka_protocol::messages::{ProduceResponse, ProducerId, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

/// Most batches an idempotent producer keeps in flight: Kafka's limit for idempotence, since
/// the broker remembers the last five batches of each producer to answer a retry of any of
/// them as a duplicate (`broker::producer::batches_remembered`).
pub const in_flight_max: usize = 5;
const _: () = assert!(in_flight_max <= crate::broker::producer::batches_remembered);

/// One batch for [`Producer::send_batches`]: records for one partition.
#[derive(Debug, Clone, Copy)]
pub struct BatchTo<'a> {
    pub topic: &'a str,
    pub partition: i32,
    pub records: &'a [ProducerRecord],
}

/// A batch of [`Producer::send_batches`] on its way: its bytes (the same on every retry, so its
/// sequence numbers stay), what it has come to, and whether any attempt may be in the log.
struct InFlight<'a> {
    to: BatchTo<'a>,
    bytes: Bytes,
    result: Option<Result<i64, ClientError>>,
    last_error: Option<ClientError>,
    maybe_appended: bool,
}

#[derive(Debug, Clone)]
pub struct ProducerConfig {
    pub client_id: String,
    /// -1 (all), 0 or 1.
    pub acks: i16,
    pub idempotent: bool,
    /// Attempts after the first one.
    pub retries: u32,
    /// The wait before the first retry, doubled before each next one up to `retry_backoff_max`
    /// (KIP-580, Kafka's `retry.backoff.ms` and `retry.backoff.max.ms`): five retries cover
    /// about 2.5 s, as long as a new topic's first leader may take to be ready
    /// (`broker::opening`). Equal values: a constant wait.
    pub retry_backoff: Duration,
    pub retry_backoff_max: Duration,
    pub request_timeout: Duration,
    /// Who it authenticates as on a SASL listener.
    pub login: Option<crate::security::SaslLogin>,
}

impl Default for ProducerConfig {
    fn default() -> Self {
        ProducerConfig {
            client_id: "seedlog-producer".into(),
            acks: -1,
            idempotent: true,
            retries: 5,
            retry_backoff: Duration::from_millis(100),
            retry_backoff_max: Duration::from_secs(1),
            request_timeout: Duration::from_secs(5),
            login: None,
        }
    }
}

impl ProducerConfig {
    /// The wait before retry number `attempt` (from 1): `retry_backoff` doubled each time, at
    /// most `retry_backoff_max`.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let doubled = self.retry_backoff.saturating_mul(1 << attempt.saturating_sub(1).min(16));
        doubled.min(self.retry_backoff_max.max(self.retry_backoff))
    }
}

pub struct Producer {
    config: ProducerConfig,
    cluster: Cluster,
    producer: Option<(i64, i16)>,
    sequences: BTreeMap<(String, i32), i32>,
    /// Set for a transactional producer (`client::transactions`): its batches are
    /// transactional, its produce requests name the id, and its producer id comes from the
    /// transaction coordinator, never from any broker.
    transactional_id: Option<String>,
}

/// One record to send: key and value.
pub type KeyValue = (Option<Bytes>, Option<Bytes>);

/// One record to send with headers (Kafka record headers: name, value).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProducerRecord {
    pub key: Option<Bytes>,
    /// `None` is a tombstone: on a compacted topic, the key's deletion.
    pub value: Option<Bytes>,
    pub headers: Vec<(String, Option<Bytes>)>,
}

impl From<&KeyValue> for ProducerRecord {
    fn from((key, value): &KeyValue) -> ProducerRecord {
        ProducerRecord { key: key.clone(), value: value.clone(), headers: Vec::new() }
    }
}

impl Producer {
    pub fn new(bootstrap: SocketAddr, config: ProducerConfig) -> Producer {
        Producer::with_bootstrap(vec![bootstrap], config)
    }

    /// A producer that may ask any of `bootstrap` for metadata (at least one address).
    pub fn with_bootstrap(bootstrap: Vec<SocketAddr>, config: ProducerConfig) -> Producer {
        let mut cluster = Cluster::new(bootstrap, &config.client_id, config.request_timeout);
        if let Some(login) = &config.login {
            cluster.set_login(login.clone());
        }
        Producer { config, cluster, producer: None, sequences: BTreeMap::new(), transactional_id: None }
    }

    /// Makes this producer transactional under `id` (its producer id then comes from
    /// [`Producer::set_producer_id`], never from InitProducerId without an id).
    pub(super) fn set_transactional(&mut self, id: &str) {
        self.transactional_id = Some(id.to_string());
        self.config.idempotent = true;
    }

    /// The producer id and epoch a transaction coordinator gave: sequences start over.
    pub(super) fn set_producer_id(&mut self, producer: Option<(i64, i16)>) {
        self.producer = producer;
        self.sequences.clear();
    }

    /// The cluster view, for requests to the transaction coordinator.
    pub(super) fn cluster(&mut self) -> &mut Cluster {
        &mut self.cluster
    }

    pub(super) fn config(&self) -> &ProducerConfig {
        &self.config
    }

    pub(super) fn producer_id(&self) -> Option<(i64, i16)> {
        self.producer
    }

    async fn ensure_producer_id(&mut self) -> Result<(i64, i16), ClientError> {
        if let Some(p) = self.producer {
            return Ok(p);
        }
        if self.transactional_id.is_some() {
            return Err(ClientError::Protocol("a transactional producer gets its producer id from init_transactions".into()));
        }
        let addr = self.cluster.any_broker();
        let req = InitProducerIdRequest::default().with_transactional_id(None).with_transaction_timeout_ms(60_000).with_producer_id(ProducerId(-1)).with_producer_epoch(-1);
        let sent = match self.cluster.conn(addr).await {
            Ok(conn) => conn.send(&req).await,
            Err(e) => Err(e),
        };
        let resp = match sent {
            Ok(r) => r,
            Err(e) => {
                self.cluster.drop_conn(addr);
                self.cluster.rotate();
                return Err(e);
            }
        };
        if resp.error_code != 0 {
            return Err(ClientError::kafka(resp.error_code, "InitProducerId"));
        }
        let p = (resp.producer_id.0, resp.producer_epoch);
        self.producer = Some(p);
        self.sequences.clear();
        Ok(p)
    }

    fn encode_batch(&self, records: &[ProducerRecord], timestamp: i64, seq: i32) -> Result<Bytes, ClientError> {
        let (pid, epoch) = self.producer.filter(|_| self.config.idempotent).unwrap_or((-1, -1));
        let recs: Vec<Record> = records
            .iter()
            .enumerate()
            .map(|(i, r)| Record {
                transactional: self.transactional_id.is_some(),
                control: false,
                delete_horizon: false,
                partition_leader_epoch: -1,
                producer_id: pid,
                producer_epoch: epoch,
                timestamp_type: TimestampType::Creation,
                offset: i as i64,
                // The encoder keeps records in one batch while offset - sequence is constant, and
                // takes the first record's sequence as the base: -1, 0, 1, ... gives one batch with
                // base sequence -1, as a non-idempotent batch must have.
                sequence: if pid >= 0 { seq.wrapping_add(i as i32) } else { i as i32 - 1 },
                timestamp,
                key: r.key.clone(),
                value: r.value.clone(),
                headers: r.headers.iter().map(|(k, v)| (StrBytes::from_string(k.clone()), v.clone())).collect::<IndexMap<_, _>>(),
            })
            .collect();
        let mut buf = BytesMut::new();
        let options = RecordEncodeOptions { version: crate::kafka::batch_magic, compression: Compression::None };
        RecordBatchEncoder::encode(&mut buf, recs.iter(), &options).map_err(|e| ClientError::Protocol(e.to_string()))?;
        Ok(buf.freeze())
    }

    /// Sends `records` as one batch to `topic`/`partition` and returns its base offset
    /// (`-1` with acks=0, which gets no answer). Retries retriable failures up to
    /// `config.retries` times, resending the same batch (same sequence numbers).
    pub async fn send(&mut self, topic: &str, partition: i32, records: &[KeyValue], timestamp: i64) -> Result<i64, ClientError> {
        let records: Vec<ProducerRecord> = records.iter().map(ProducerRecord::from).collect();
        self.send_records(topic, partition, &records, timestamp).await
    }

    /// [`Producer::send`] for records with headers.
    pub async fn send_records(&mut self, topic: &str, partition: i32, records: &[ProducerRecord], timestamp: i64) -> Result<i64, ClientError> {
        if records.is_empty() {
            return Err(ClientError::Protocol("a batch needs at least one record".into()));
        }
        if self.config.idempotent {
            self.ensure_producer_id().await?;
        }
        let key = (topic.to_string(), partition);
        let seq = *self.sequences.get(&key).unwrap_or(&0);
        let batch = self.encode_batch(records, timestamp, seq)?;
        let mut attempt = 0;
        // Whether any attempt may have reached the log: then a later definite error does not
        // make the batch certainly absent.
        let mut maybe_appended = false;
        loop {
            let result = self.try_send(topic, partition, batch.clone()).await;
            match result {
                Ok(offset) => {
                    self.sequences.insert(key, seq.wrapping_add(records.len() as i32) & i32::MAX);
                    return Ok(offset);
                }
                Err(e) if e.retriable() && attempt < self.config.retries => {
                    maybe_appended |= e.outcome_unknown();
                    attempt += 1;
                    self.cluster.forget(topic, partition);
                    tokio::time::sleep(self.config.backoff(attempt)).await;
                }
                Err(e) => {
                    maybe_appended |= e.outcome_unknown();
                    if e.retriable() {
                        // Not retried (retries spent, or 0): the next batch must still ask where
                        // the partition went, not go back to the broker that refused it.
                        self.cluster.forget(topic, partition);
                    }
                    return Err(self.gave_up(e, maybe_appended));
                }
            }
        }
    }

    /// A batch failed for good with `e`: the error to report, ambiguous when an earlier attempt
    /// may have been appended.
    /// (A transactional producer keeps its id: its transaction is aborted instead, and its next
    /// init_transactions bumps the epoch, `client::transactions`.)
    fn gave_up(&mut self, e: ClientError, maybe_appended: bool) -> ClientError {
        if self.config.idempotent && self.transactional_id.is_none() {
            // The batch failed (or may be in the log, or the broker no longer accepts our
            // sequence): a fresh producer id restarts sequences, so the next batch is neither
            // refused as a gap nor mistaken for this one — a batch that reuses a failed batch's
            // sequence would be "deduplicated" against it if that one was appended after all.
            self.producer = None;
        }
        if maybe_appended && !e.outcome_unknown() {
            return ClientError::RefusedRetry(Box::new(e));
        }
        e
    }

    /// Sends `batches` (at most [`in_flight_max`]; idempotent producers only) with all of them
    /// in flight at once: each leader gets its share pipelined on its connection, in order, and
    /// answers in order. Returns one result per batch, as [`Producer::send_records`] would.
    ///
    /// As Kafka's idempotent producer does with several batches in flight: every batch gets
    /// its sequence numbers when first sent and keeps them (and its bytes) on every retry;
    /// the batches still unanswered are retried together, in their order, up to
    /// `config.retries` times; OUT_OF_ORDER_SEQUENCE_NUMBER on a batch behind one being
    /// retried only means it came before its turn, and is retried too. A batch that fails for
    /// good takes with it the later batches of its partition not yet appended (their sequences
    /// follow one that will never be in the log): they fail as certainly absent if no attempt
    /// of theirs may have been appended, ambiguously otherwise.
    pub async fn send_batches(&mut self, batches: &[BatchTo<'_>], timestamp: i64) -> Vec<Result<i64, ClientError>> {
        let refuse = |why: String| batches.iter().map(|_| Err(ClientError::Protocol(why.clone()))).collect();
        if !self.config.idempotent || self.config.acks == 0 {
            return refuse("several batches in flight need an idempotent producer (acks=all)".into());
        }
        if batches.len() > in_flight_max || batches.iter().any(|b| b.records.is_empty()) {
            return refuse(format!("1..={in_flight_max} batches in flight, each of at least one record"));
        }
        if let Err(e) = self.ensure_producer_id().await {
            return batches.iter().map(|_| Err(e.clone())).collect();
        }
        let mut flights = Vec::with_capacity(batches.len());
        for b in batches {
            let key = (b.topic.to_string(), b.partition);
            let seq = *self.sequences.get(&key).unwrap_or(&0);
            self.sequences.insert(key, seq.wrapping_add(b.records.len() as i32) & i32::MAX);
            let bytes = match self.encode_batch(b.records, timestamp, seq) {
                Ok(bytes) => bytes,
                Err(e) => {
                    // Sequences were given out to batches that will not be sent: start afresh.
                    self.producer = None;
                    return batches.iter().map(|_| Err(e.clone())).collect();
                }
            };
            flights.push(InFlight { to: *b, bytes, result: None, last_error: None, maybe_appended: false });
        }
        for attempt in 0..=self.config.retries {
            if attempt > 0 {
                tokio::time::sleep(self.config.backoff(attempt)).await;
            }
            self.attempt_in_flight(&mut flights).await;
            self.settle_attempt(&mut flights, attempt < self.config.retries);
            if flights.iter().all(|f| f.result.is_some()) {
                break;
            }
        }
        flights.into_iter().map(|f| f.result.expect("the last attempt settles every batch")).collect()
    }

    /// One attempt of every unsettled batch: grouped by leader, pipelined in order on each
    /// leader's connection. Each batch attempted gets `result` Ok or `last_error`.
    async fn attempt_in_flight(&mut self, flights: &mut [InFlight<'_>]) {
        let mut by_leader: BTreeMap<SocketAddr, Vec<usize>> = BTreeMap::new();
        for (i, f) in flights.iter_mut().enumerate().filter(|(_, f)| f.result.is_none()) {
            f.last_error = None;
            match self.cluster.leader(f.to.topic, f.to.partition).await {
                Ok(addr) => by_leader.entry(addr).or_default().push(i),
                Err(e) => f.last_error = Some(e),
            }
        }
        for (addr, group) in by_leader {
            let reqs: Vec<ProduceRequest> = group.iter().map(|&i| self.produce_request(flights[i].to.topic, flights[i].to.partition, flights[i].bytes.clone())).collect();
            let answers = match self.cluster.conn(addr).await {
                Ok(conn) => conn.send_all(&reqs).await,
                Err(e) => reqs.iter().map(|_| Err(e.clone())).collect(),
            };
            if answers.iter().any(|a| a.is_err()) {
                self.cluster.drop_conn(addr);
            }
            for (&i, answer) in group.iter().zip(answers) {
                match answer.and_then(|resp| partition_answer(&resp)) {
                    Ok(offset) => flights[i].result = Some(Ok(offset)),
                    Err(e) => flights[i].last_error = Some(e),
                }
            }
        }
    }

    /// After an attempt: which failed batches are retried (`retry_left`), and which fail for
    /// good — each with the later unsettled batches of its partition.
    fn settle_attempt(&mut self, flights: &mut [InFlight<'_>], retry_left: bool) {
        for i in 0..flights.len() {
            let Some(e) = flights[i].last_error.take() else { continue };
            flights[i].maybe_appended |= e.outcome_unknown();
            let (topic, partition) = (flights[i].to.topic, flights[i].to.partition);
            let same_partition = |f: &InFlight| f.to.topic == topic && f.to.partition == partition;
            // Refused because an earlier batch of its partition is missing, which is retried.
            let behind_a_retry = matches!(e, ClientError::Kafka { code: Code::OutOfOrderSequenceNumber, .. }) && flights[..i].iter().any(|f| same_partition(f) && f.result.is_none());
            if e.retriable() || behind_a_retry {
                self.cluster.forget(topic, partition); // retried or not, ask where it went
            }
            if retry_left && (e.retriable() || behind_a_retry) {
                continue;
            }
            let gave_up = self.gave_up(e, flights[i].maybe_appended);
            flights[i].result = Some(Err(gave_up.clone()));
            for j in i + 1..flights.len() {
                if same_partition(&flights[j]) && flights[j].result.is_none() {
                    let why = format!("an earlier batch of {topic}-{partition} failed: {gave_up}");
                    let after = if flights[j].maybe_appended || flights[j].last_error.as_ref().is_some_and(ClientError::outcome_unknown) { ClientError::Ambiguous(why) } else { ClientError::Protocol(why) };
                    flights[j].result = Some(Err(after));
                    flights[j].last_error = None;
                }
            }
        }
    }

    /// The Produce request of one batch to one partition.
    fn produce_request(&self, topic: &str, partition: i32, batch: Bytes) -> ProduceRequest {
        let part = PartitionProduceData::default().with_index(partition).with_records(Some(batch));
        let t = TopicProduceData::default().with_name(TopicName(StrBytes::from_string(topic.into()))).with_partition_data(vec![part]);
        // The broker gives up on replication a little before the client gives up on the
        // broker, so a slow ISR is answered with REQUEST_TIMED_OUT rather than a dead socket.
        let broker_wait = self.config.request_timeout.as_millis() as i32 / 10 * 8;
        let id = self.transactional_id.as_ref().map(|id| kafka_protocol::messages::TransactionalId(StrBytes::from_string(id.clone())));
        ProduceRequest::default().with_acks(self.config.acks).with_timeout_ms(broker_wait).with_transactional_id(id).with_topic_data(vec![t])
    }

    async fn try_send(&mut self, topic: &str, partition: i32, batch: Bytes) -> Result<i64, ClientError> {
        let addr = self.cluster.leader(topic, partition).await?;
        let req = self.produce_request(topic, partition, batch);
        let acks = self.config.acks;
        let conn = self.cluster.conn(addr).await?;
        if acks == 0 {
            let r = conn.send_only(&req).await;
            if r.is_err() {
                self.cluster.drop_conn(addr);
            }
            return r.map(|_| -1);
        }
        let resp = match conn.send(&req).await {
            Ok(r) => r,
            Err(e) => {
                self.cluster.drop_conn(addr);
                return Err(e);
            }
        };
        partition_answer(&resp)
    }
}

/// What a Produce response of one partition says: the batch's base offset, or the error.
fn partition_answer(resp: &ProduceResponse) -> Result<i64, ClientError> {
    let p = resp
        .responses
        .first()
        .and_then(|t| t.partition_responses.first())
        .ok_or_else(|| ClientError::Protocol("produce response without the partition".into()))?;
    if p.error_code != 0 {
        let message = p.error_message.as_ref().map_or(String::new(), |m| m.to_string());
        return Err(ClientError::kafka(p.error_code, message));
    }
    Ok(p.base_offset)
}

#[cfg(test)]
mod tests {
    use super::ProducerConfig;
    use std::time::Duration;

    #[test]
    fn the_retry_backoff_doubles_up_to_its_maximum() {
        let config = ProducerConfig::default();
        let waits: Vec<u64> = (1..=6).map(|n| config.backoff(n).as_millis() as u64).collect();
        assert_eq!(waits, [100, 200, 400, 800, 1000, 1000]);
        let constant = ProducerConfig { retry_backoff: Duration::from_millis(50), retry_backoff_max: Duration::from_millis(50), ..ProducerConfig::default() };
        assert!((1..=40).all(|n| constant.backoff(n) == Duration::from_millis(50)));
    }
}
