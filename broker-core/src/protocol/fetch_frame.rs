//! A Fetch response as a [`Frame`]: its header, per-topic and per-partition framing encoded in
//! memory, and the records of file-backed partitions left as file regions for the shell to send
//! with `sendfile` (Kafka's `FileRecords.writeTo` inside its `Send` objects). The bytes on the
//! wire are exactly what the kafka-protocol crate encodes for the same response with the
//! records in memory (checked for every served version by the tests below).
//!
//! Each partition's fixed fields are encoded by the crate with its records null; `records` is
//! the last field before the (flexible versions') tagged fields, so the null's encoding is cut
//! off and the real length written in its place. No IO here: regions are only carried.

use crate::log::FileRegion;
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::fetch_response::FetchResponse;
use kafka_protocol::messages::{ApiKey, ResponseHeader};
use kafka_protocol::protocol::Encodable;

/// Fetch versions the splicing encoder knows the outer layout of (those served, up to the first
/// with topic ids, whose layout differs).
const versions: std::ops::RangeInclusive<i16> = 4..=12;
/// The first flexible (compact, tagged-field) version of Fetch.
const flexible_from: i16 = 12;

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
        let name = topic.topic.0.as_bytes();
        match flexible {
            true => put_uvarint(&mut cur, name.len() as u32 + 1),
            false => cur.put_i16(name.len() as i16),
        }
        cur.put_slice(name);
        put_len(&mut cur, flexible, topic.partitions.len());
        for (pi, pd) in topic.partitions.iter().enumerate() {
            let Some(file) = files.next_if(|f| f.topic == ti && f.partition == pi) else {
                pd.encode(&mut cur, version).map_err(&err)?;
                continue;
            };
            let mut fixed = pd.clone();
            fixed.records = None;
            let mut enc = BytesMut::new();
            fixed.encode(&mut enc, version).map_err(&err)?;
            // Null records, then (flexible) zero tagged fields: what is cut off below.
            let tail: &[u8] = if flexible { &[0, 0] } else { &[0xff; 4] };
            if !enc.ends_with(tail) {
                return Err(format!("Fetch v{version}: partition {pi} of {} has tagged fields, which file records do not carry", topic.topic.0));
            }
            cur.put_slice(&enc[..enc.len() - tail.len()]);
            let len: usize = file.regions.iter().map(|r| r.len as usize).sum();
            match flexible {
                true => put_uvarint(&mut cur, len as u32 + 1),
                false => cur.put_i32(len as i32),
            }
            if len > 0 {
                parts.push(Part::Memory(cur.split().freeze()));
                parts.extend(file.regions.iter().cloned().map(Part::File));
            }
            if flexible {
                cur.put_u8(0); // no tagged fields
            }
        }
        if flexible {
            cur.put_u8(0);
        }
    }
    if flexible {
        cur.put_u8(0);
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
