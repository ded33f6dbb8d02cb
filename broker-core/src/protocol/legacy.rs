//! Kafka 3.9's API versions that Kafka 4.0 removed (KIP-896), served for the clients that still
//! send them (what distributions ship: sarama's group consumer commits with OffsetCommit v1,
//! kafka-python pinned to an old `api_version` produces v0-v2 with magic 0 and 1 messages).
//! Kafka 3.9 served them; 4.0 closes the connection. Both are possible here
//! (`BrokerConfig::legacy_api_versions`, on by default; off answers as Kafka 4.0 does).
//!
//! A request of a removed version is *bridged*: read with kafka-protocol 0.15 (made from Kafka
//! 3.9's message specs) and written again at the oldest version the broker reads (its bridge,
//! `kafka::served`'s lower end), so the node decides on one set of versions, unaware of the old
//! client. Its answer goes the other way: read at the bridge version, written at the client's.
//! Fields a version lacks take their defaults (Kafka's own meaning for an old request: no
//! transactional id, read_uncommitted, no current leader epoch to check). What the old versions
//! mean beyond their fields is converted here as Kafka 3.9 converted it:
//! * Produce v0-v2 carry message sets of magic 0 or 1: read into one record batch in the set's
//!   codec (`message_set::read`, all of a request's wrappers within one decompression bound);
//!   a set that does not read is answered CORRUPT_MESSAGE, unwritten; a record batch (magic 2)
//!   is taken as it is, as Kafka 3.9 took it;
//! * Fetch v0-v3 answers carry message sets: magic 0 for v0-v1, 1 for v2-v3, written from the
//!   stored batches from the fetch offset on, within the partition's max bytes, without
//!   control records (`message_set::from_batches`);
//! * ListOffsets v0 answers a list of offsets (`old_style_offsets`): the one offset found
//!   (Kafka 3.9 could list several segment bases when asked for more), none when asked for 0;
//! * OffsetCommit v1's per-partition commit timestamp is dropped (v2 has none; Kafka 3.9
//!   ignored it too once offsets expire by group);
//! * DescribeConfigs v0 says `is_default` where later versions give the config's source.

use super::{leading, message_set, Leading};
use crate::kafka::{ApiKey, Code};
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol_39::messages as k39;
use kafka_protocol_39::protocol::{Decodable, Encodable};
use std::collections::{BTreeMap, BTreeSet};

/// The oldest version of `key` served: Kafka 3.9's with the removed versions on, else the
/// oldest the broker reads itself.
pub fn oldest(key: ApiKey, legacy: bool) -> Option<i16> {
    let own = crate::kafka::served(key)?.0;
    Some(crate::kafka::REMOVED_IN_4.iter().find(|(k, _)| legacy && *k == key).map_or(own, |(_, v)| *v))
}

/// A request read at a removed version: what its answer is written back to.
#[derive(Debug, Clone)]
pub struct Legacy {
    key: ApiKey,
    version: i16,
    bridge: i16,
    needs: Needs,
}

/// What an answer needs besides its version.
#[derive(Debug, Clone)]
enum Needs {
    Nothing,
    /// A produce's partitions whose message sets did not read, sent on unconverted (the node
    /// refuses a set of magic 0 or 1 and writes nothing): answered CORRUPT_MESSAGE.
    Corrupt(BTreeSet<(String, i32)>),
    /// A fetch's offset and max bytes per partition: where each message set starts and what
    /// bounds it.
    FetchFrom(BTreeMap<(String, i32), (i64, i32)>),
    /// ListOffsets v0's `max_num_offsets` per partition.
    OffsetsAsked(BTreeMap<(String, i32), i32>),
}

/// `frame` (a request, no size prefix) bridged when it is of a removed version: the frame at
/// its bridge version and what its answer needs. None for any other frame (left to
/// `request::decode_request`), or for every frame with `legacy` off. Err (the connection
/// closes, as for any request that does not decode) when its header or body does not decode.
pub fn up(frame: &Bytes, legacy: bool) -> Result<Option<(Bytes, Legacy)>, String> {
    let Some(Leading { key: raw, version, .. }) = leading(frame) else { return Ok(None) };
    // Every request passes here: the common case (a served version) leaves after one lookup.
    let Ok(key) = ApiKey::try_from(raw) else { return Ok(None) };
    let Some((bridge, _)) = crate::kafka::served(key).filter(|(lo, _)| legacy && version < *lo) else { return Ok(None) };
    if oldest(key, legacy).is_none_or(|first| version < first) {
        return Ok(None);
    }
    let k = k39::ApiKey::try_from(raw).map_err(|_| format!("unknown API key {raw}"))?;
    let mut rest = frame.clone();
    let mut header = k39::RequestHeader::decode(&mut rest, k.request_header_version(version)).map_err(|e| format!("malformed request header: {e}"))?;
    let mut body = k39::RequestKind::decode(k, &mut rest, version).map_err(|e| format!("malformed {key:?} v{version} request: {e}"))?;
    let needs = match &mut body {
        k39::RequestKind::Produce(p) => Needs::Corrupt(up_produce(p)),
        k39::RequestKind::Fetch(f) => Needs::FetchFrom(f.topics.iter().flat_map(|t| t.partitions.iter().map(|p| ((t.topic.to_string(), p.partition), (p.fetch_offset, p.partition_max_bytes)))).collect()),
        k39::RequestKind::ListOffsets(l) => {
            let asked = l.topics.iter().flat_map(|t| t.partitions.iter().map(|p| ((t.name.to_string(), p.partition_index), p.max_num_offsets))).collect();
            // v1 has no such field: left set, it would not encode.
            l.topics.iter_mut().flat_map(|t| t.partitions.iter_mut()).for_each(|p| p.max_num_offsets = 1);
            Needs::OffsetsAsked(asked)
        }
        k39::RequestKind::OffsetCommit(c) => {
            c.topics.iter_mut().flat_map(|t| t.partitions.iter_mut()).for_each(|p| p.commit_timestamp = -1);
            Needs::Nothing
        }
        _ => Needs::Nothing,
    };
    header.request_api_version = bridge;
    let mut out = BytesMut::new();
    header.encode(&mut out, k.request_header_version(bridge)).map_err(|e| e.to_string())?;
    body.encode(&mut out, bridge).map_err(|e| format!("{key:?} v{version} does not bridge to v{bridge}: {e}"))?;
    Ok(Some((out.freeze(), Legacy { key, version, bridge, needs })))
}

/// Each partition's message set read into one record batch, all within one decompression
/// bound. A record batch (magic 2 where a message set has its first message's magic) is left
/// as it is; so is a set that does not read, which the node then refuses, writing nothing
/// (magic 0 or 1 is no batch it takes): those partitions are returned, to be answered
/// CORRUPT_MESSAGE.
fn up_produce(p: &mut k39::ProduceRequest) -> BTreeSet<(String, i32)> {
    let mut corrupt = BTreeSet::new();
    let mut budget = crate::constants::batch_decompressed_bytes_max;
    for t in &mut p.topic_data {
        for part in &mut t.partition_data {
            let Some(set) = &part.records else { continue };
            if set.get(batch_magic_at) == Some(&(crate::kafka::batch_magic as u8)) {
                continue;
            }
            match message_set::read(set, &mut budget).and_then(|read| message_set::to_batch(&read)) {
                Ok(batch) => part.records = Some(batch),
                Err(_) => {
                    corrupt.insert((t.name.to_string(), part.index));
                }
            }
        }
    }
    corrupt
}

/// Where a record batch and a message set both keep a magic byte: a batch's own, and the
/// first message's (after its offset, size and CRC).
const batch_magic_at: usize = 16;

impl Legacy {
    /// The answer's frame (size prefix included) at the bridge version, written at the
    /// client's version. Err (the connection closes) when it does not read or write.
    pub fn down(&self, frame: &[u8]) -> Result<Bytes, String> {
        let k = k39::ApiKey::try_from(self.key as i16).map_err(|_| "an API kafka-protocol 0.15 does not know".to_string())?;
        let mut rest = Bytes::copy_from_slice(frame.get(4..).ok_or("an answer shorter than its size")?);
        let header = k39::ResponseHeader::decode(&mut rest, k.response_header_version(self.bridge)).map_err(|e| e.to_string())?;
        let mut body = k39::ResponseKind::decode(k, &mut rest, self.bridge).map_err(|e| format!("{:?} v{} answer: {e}", self.key, self.bridge))?;
        self.convert(&mut body);
        let mut out = BytesMut::new();
        out.put_i32(0);
        header.encode(&mut out, k.response_header_version(self.version)).map_err(|e| e.to_string())?;
        body.encode(&mut out, self.version).map_err(|e| format!("{:?} v{} answer: {e}", self.key, self.version))?;
        let size = (out.len() - 4) as i32;
        out[..4].copy_from_slice(&size.to_be_bytes());
        Ok(out.freeze())
    }

    fn convert(&self, body: &mut k39::ResponseKind) {
        match (body, &self.needs) {
            (k39::ResponseKind::Produce(r), Needs::Corrupt(corrupt)) => {
                for t in &mut r.responses {
                    for p in &mut t.partition_responses {
                        if corrupt.contains(&(t.name.to_string(), p.index)) {
                            p.error_code = Code::CorruptMessage.code();
                        }
                    }
                }
            }
            (k39::ResponseKind::Fetch(r), Needs::FetchFrom(from)) => {
                let magic = if self.version >= 2 { 1 } else { 0 };
                for t in &mut r.responses {
                    for p in &mut t.partitions {
                        let (first, max) = from.get(&(t.topic.to_string(), p.partition_index)).copied().unwrap_or((0, 0));
                        match p.records.as_ref().map(|b| message_set::from_batches(b, magic, first, max.max(0) as usize)).transpose() {
                            Ok(set) => p.records = set,
                            Err(_) => {
                                p.error_code = Code::CorruptMessage.code();
                                p.records = Some(Bytes::new());
                            }
                        }
                    }
                }
            }
            (k39::ResponseKind::ListOffsets(r), Needs::OffsetsAsked(asked)) => {
                for t in &mut r.topics {
                    for p in &mut t.partitions {
                        let wanted = asked.get(&(t.name.to_string(), p.partition_index)).is_some_and(|&n| n > 0);
                        p.old_style_offsets = if wanted && p.error_code == 0 && p.offset >= 0 { vec![p.offset] } else { Vec::new() };
                        // v0 has neither field: left set, it would not encode.
                        (p.timestamp, p.offset) = (-1, -1);
                    }
                }
            }
            (k39::ResponseKind::DescribeConfigs(r), _) if self.version == 0 => {
                for c in r.results.iter_mut().flat_map(|r| r.configs.iter_mut()) {
                    c.is_default = c.config_source == crate::kafka::config_source::default;
                }
            }
            _ => {}
        }
    }
}
