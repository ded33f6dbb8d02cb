//! Producer: one batch per `send`, to the partition's leader found through Metadata, with
//! retries on retriable errors and, when idempotent, a producer id and per-partition sequence
//! numbers so a retried batch is appended at most once.

use super::cluster::Cluster;
use super::ClientError;
use bytes::{Bytes, BytesMut};
use indexmap::IndexMap;
use kafka_protocol::messages::init_producer_id_request::InitProducerIdRequest;
use kafka_protocol::messages::produce_request::{PartitionProduceData, ProduceRequest, TopicProduceData};
use kafka_protocol::messages::{ProducerId, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct ProducerConfig {
    pub client_id: String,
    /// -1 (all), 0 or 1.
    pub acks: i16,
    pub idempotent: bool,
    /// Attempts after the first one.
    pub retries: u32,
    pub retry_backoff: Duration,
    pub request_timeout: Duration,
}

impl Default for ProducerConfig {
    fn default() -> Self {
        ProducerConfig {
            client_id: "seedlog-producer".into(),
            acks: -1,
            idempotent: true,
            retries: 5,
            retry_backoff: Duration::from_millis(100),
            request_timeout: Duration::from_secs(5),
        }
    }
}

pub struct Producer {
    config: ProducerConfig,
    cluster: Cluster,
    producer: Option<(i64, i16)>,
    sequences: BTreeMap<(String, i32), i32>,
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
        let cluster = Cluster::new(bootstrap, &config.client_id, config.request_timeout);
        Producer { config, cluster, producer: None, sequences: BTreeMap::new() }
    }

    async fn ensure_producer_id(&mut self) -> Result<(i64, i16), ClientError> {
        if let Some(p) = self.producer {
            return Ok(p);
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
                transactional: false,
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
                    tokio::time::sleep(self.config.retry_backoff).await;
                }
                Err(e) => {
                    maybe_appended |= e.outcome_unknown();
                    if self.config.idempotent {
                        // The batch failed (or may be in the log, or the broker no longer
                        // accepts our sequence): a fresh producer id restarts sequences, so the
                        // next batch is neither refused as a gap nor mistaken for this one — a
                        // batch that reuses a failed batch's sequence would be "deduplicated"
                        // against it if that one was appended after all.
                        self.producer = None;
                    }
                    if maybe_appended && !e.outcome_unknown() {
                        return Err(ClientError::Ambiguous(format!("an earlier attempt may have been appended; last error: {e}")));
                    }
                    return Err(e);
                }
            }
        }
    }

    async fn try_send(&mut self, topic: &str, partition: i32, batch: Bytes) -> Result<i64, ClientError> {
        let addr = self.cluster.leader(topic, partition).await?;
        let part = PartitionProduceData::default().with_index(partition).with_records(Some(batch));
        let t = TopicProduceData::default().with_name(TopicName(StrBytes::from_string(topic.into()))).with_partition_data(vec![part]);
        // The broker gives up on replication a little before the client gives up on the
        // broker, so a slow ISR is answered with REQUEST_TIMED_OUT rather than a dead socket.
        let broker_wait = self.config.request_timeout.as_millis() as i32 / 10 * 8;
        let req = ProduceRequest::default()
            .with_acks(self.config.acks)
            .with_timeout_ms(broker_wait)
            .with_topic_data(vec![t]);
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
}
