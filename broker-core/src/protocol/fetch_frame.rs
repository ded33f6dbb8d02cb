//! A Fetch response as a [`Frame`]: its header, per-topic and per-partition framing encoded in
//! memory, and the records of file-backed partitions left as file regions for the shell to send
//! with `sendfile` (Kafka's `FileRecords.writeTo` inside its `Send` objects). The bytes on the
//! wire are exactly what the kafka-protocol crate encodes for the same response with the
//! records in memory (checked for every served version by the tests below).
//!
//! Each partition's fields are encoded by the crate, and the records field found exactly in
//! that encoding (`around_records`): the bytes before it, the real length with the file
//! regions, then the bytes after it (a flexible version's tagged fields) as the crate wrote them. A topic is its name, or from v13 its id
//! (KIP-516); the response's own tagged fields (v16's leader endpoints, KIP-951) are the
//! crate's encoding of them. No IO here: regions are only carried.

use crate::log::FileRegion;
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::fetch_response::{FetchResponse, PartitionData};
use kafka_protocol::messages::{ApiKey, ResponseHeader};
use kafka_protocol::protocol::Encodable;

/// Fetch versions the splicing encoder knows the outer layout of (those served).
const versions: std::ops::RangeInclusive<i16> = 4..=17;
const _: () = assert!(*versions.end() == crate::kafka::served_newest(kafka_protocol::messages::ApiKey::Fetch), "the zero-copy writer must know the layout of every Fetch version served");
/// The first flexible (compact, tagged-field) version of Fetch.
const flexible_from: i16 = 12;
/// The first version naming topics by id (KIP-516).
const topic_ids_from: i16 = crate::kafka::since::fetch_topic_ids;

/// A response frame, size prefix included, in parts sent back to back.
#[derive(Debug, Clone)]
pub struct Frame {
    pub parts: Vec<Part>,
}

#[derive(Debug, Clone)]
pub enum Part {
    /// Header, framing, in-memory records: written through the connection's buffer.
    Memory(Bytes),
    /// A partition's records (or one segment's share of them): sent from the file.
    File(FileRegion),
}

impl Frame {
    pub fn len(&self) -> usize {
        self.parts.iter().map(|p| match p { Part::Memory(b) => b.len(), Part::File(r) => r.len as usize }).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// Sets the response's `throttle_time_ms` (a client quota's, `crate::throttle`): the first
    /// field after the header, in the part after the size prefix.
    pub fn set_throttle_ms(&mut self, version: i16, ms: i32) {
        let at = 4 + usize::from(version >= flexible_from);
        if let Some(Part::Memory(first)) = self.parts.get_mut(1) {
            if first.len() >= at + 4 {
                let mut patched = BytesMut::from(&first[..]);
                patched[at..at + 4].copy_from_slice(&ms.to_be_bytes());
                *first = patched.freeze();
            }
        }
    }

    /// The whole frame in memory, the regions read (the copying path; tests).
    pub fn to_bytes(&self) -> Result<Bytes, crate::log::RegionError> {
        let mut out = Vec::with_capacity(self.len());
        for p in &self.parts {
            match p {
                Part::Memory(b) => out.extend_from_slice(b),
                Part::File(r) => r.read_into(&mut out)?,
            }
        }
        Ok(out.into())
    }
}

/// The records of partition `partition` of topic `topic` (indexes into the response) are these
/// file regions; the response holds an empty placeholder there.
pub struct FileRecords {
    pub topic: usize,
    pub partition: usize,
    pub regions: Vec<FileRegion>,
}

/// Encodes `resp` as a frame whose file-backed partitions' records are `files`' regions
/// (`files` in response order, as the fetch handler builds them).
pub fn encode(version: i16, correlation_id: i32, resp: &FetchResponse, files: &[FileRecords]) -> Result<Frame, String> {
    if !versions.contains(&version) {
        return Err(format!("Fetch v{version} cannot be sent with file regions"));
    }
    let flexible = version >= flexible_from;
    let err = failed(version);
    let mut parts = Vec::new();
    let mut cur = BytesMut::new();
    ResponseHeader::default()
        .with_correlation_id(correlation_id)
        .encode(&mut cur, ApiKey::Fetch.response_header_version(version))
        .map_err(&err)?;
    cur.put_i32(resp.throttle_time_ms);
    if version >= 7 {
        cur.put_i16(resp.error_code);
        cur.put_i32(resp.session_id);
    }
    put_len(&mut cur, flexible, resp.responses.len());
    let mut files = files.iter().peekable();
    for (ti, topic) in resp.responses.iter().enumerate() {
        if version >= topic_ids_from {
            cur.put_slice(topic.topic_id.as_bytes());
        } else {
            let name = topic.topic.0.as_bytes();
            match flexible {
                true => put_uvarint(&mut cur, name.len() as u32 + 1),
                false => cur.put_i16(name.len() as i16),
            }
            cur.put_slice(name);
        }
        put_len(&mut cur, flexible, topic.partitions.len());
        for (pi, pd) in topic.partitions.iter().enumerate() {
            let Some(file) = files.next_if(|f| f.topic == ti && f.partition == pi) else {
                pd.encode(&mut cur, version).map_err(&err)?;
                continue;
            };
            let (before, after) = around_records(pd, version)?;
            cur.put_slice(&before);
            let len: usize = file.regions.iter().map(|r| r.len as usize).sum();
            match flexible {
                true => put_uvarint(&mut cur, len as u32 + 1),
                false => cur.put_i32(len as i32),
            }
            if len > 0 {
                parts.push(Part::Memory(cur.split().freeze()));
                parts.extend(file.regions.iter().cloned().map(Part::File));
            }
            cur.put_slice(&after);
        }
        if flexible {
            cur.put_u8(0);
        }
    }
    if flexible {
        cur.put_slice(&tagged_fields(version, resp)?);
    }
    if let Some(f) = files.next() {
        return Err(format!("Fetch v{version}: file records for topic {} partition {} are out of order or absent from the response", f.topic, f.partition));
    }
    parts.push(Part::Memory(cur.freeze()));
    let mut frame = Frame { parts };
    let size = frame.len();
    if size > i32::MAX as usize {
        return Err(format!("Fetch response of {size} bytes"));
    }
    frame.parts.insert(0, Part::Memory(Bytes::copy_from_slice(&(size as i32).to_be_bytes())));
    Ok(frame)
}

/// A partition's encoding without its records: the bytes before the records field and those
/// after it (a flexible version's tagged fields, carried as they are). Found exactly, not by a
/// guess at the tail: the partition is encoded with null records and with empty ones, which
/// differ in the records field alone (null: compact length 0, or i32 -1 before v12; empty: 1,
/// or 0), so where they first differ is where the records go.
fn around_records(pd: &PartitionData, version: i16) -> Result<(Bytes, Bytes), String> {
    let encoded = |records: Option<Bytes>| -> Result<Bytes, String> {
        let mut enc = BytesMut::new();
        pd.clone().with_records(records).encode(&mut enc, version).map_err(|e| format!("encoding Fetch v{version}: {e}"))?;
        Ok(enc.freeze())
    };
    let (null, empty) = (encoded(None)?, encoded(Some(Bytes::new()))?);
    let (null_mark, empty_mark): (&[u8], &[u8]) = if version >= flexible_from { (&[0], &[1]) } else { (&[0xff; 4], &[0; 4]) };
    let at = null.iter().zip(empty.iter()).position(|(a, b)| a != b).unwrap_or(null.len());
    let end = at + null_mark.len();
    let exact = null.len() == empty.len() && null.get(at..end) == Some(null_mark) && empty.get(at..end) == Some(empty_mark) && null[end..] == empty[end..];
    match exact {
        true => Ok((null.slice(..at), null.slice(end..))),
        false => Err(format!("Fetch v{version}: partition {} has no records field where the layout puts it", pd.partition_index)),
    }
}

/// The response's own tagged fields, as the crate encodes them: those of the same response
/// with no topics, after its fixed fields and the empty topic array.
fn tagged_fields(version: i16, resp: &FetchResponse) -> Result<Bytes, String> {
    let mut outer = FetchResponse::default().with_throttle_time_ms(resp.throttle_time_ms).with_error_code(resp.error_code).with_session_id(resp.session_id).with_node_endpoints(resp.node_endpoints.clone());
    outer.unknown_tagged_fields = resp.unknown_tagged_fields.clone();
    let mut enc = BytesMut::new();
    outer.encode(&mut enc, version).map_err(failed(version))?;
    // throttle_time_ms, error_code, session_id, and the empty array's length (one byte).
    let fixed = 4 + 2 + 4 + 1;
    if enc.len() < fixed {
        return Err(format!("Fetch v{version}: the response's fixed fields encode in {} bytes", enc.len()));
    }
    Ok(enc.freeze().slice(fixed..))
}

/// Maps an encoder error to the reason the connection closes.
fn failed<E: std::fmt::Display>(version: i16) -> impl Fn(E) -> String {
    move |e| format!("encoding Fetch v{version}: {e}")
}

/// An array's length: compact (unsigned varint of n+1) in flexible versions, else an i32.
fn put_len(buf: &mut BytesMut, flexible: bool, n: usize) {
    match flexible {
        true => put_uvarint(buf, n as u32 + 1),
        false => buf.put_i32(n as i32),
    }
}

fn put_uvarint(buf: &mut BytesMut, mut v: u32) {
    while v >= 0x80 {
        buf.put_u8((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    buf.put_u8(v as u8);
}

#[cfg(test)]
mod tests;
