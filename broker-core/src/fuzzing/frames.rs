//! Target `request_frames`: any bytes, read as a client's side of one connection — size
//! prefix, frame, size prefix, frame, ... — through the real framing check
//! ([`protocol::frame_len`] with `socket.request.max.bytes`) and the real dispatch
//! ([`node::handle`](crate::node::handle)) on a node with real logs on a temporary directory.
//!
//! Promises checked: no panic anywhere in the broker; every answer is a whole frame (its size
//! prefix counts exactly the bytes that follow) carrying the request's correlation id and a
//! response header that decodes; a frame the broker refuses closes the connection, and then
//! nothing more is read from it, as the shell does. Allocation is bounded by the fuzzer's
//! `-malloc_limit_mb` (scripts/fuzz.sh), which the replay test cannot check.

use super::Scratch;
use crate::constants::request_bytes_max;
use crate::kafka::ApiKey;
use crate::node::Outcome;
use crate::protocol;
use bytes::Bytes;
use kafka_protocol::messages::ResponseHeader;
use kafka_protocol::protocol::Decodable;

/// Frames one input may carry: the seeds are whole client sessions (tens of requests); more
/// would only slow the fuzzer down.
const frames_per_input_max: usize = 64;

pub fn run(data: &[u8]) {
    let mut scratch = Scratch::new();
    let mut rest = data;
    for _ in 0..frames_per_input_max {
        let Some(prefix) = rest.get(..4) else { return };
        let Ok(len) = protocol::frame_len(prefix.try_into().expect("4 bytes"), request_bytes_max) else { return };
        let Some(frame) = rest.get(4..4 + len) else { return }; // cut short: the shell closes
        rest = &rest[4 + len..];
        let frame = Bytes::copy_from_slice(frame);
        // As the shell does: a request of a version Kafka 4.0 removed is bridged, and its
        // answer written back at that version; what does not bridge closes the connection.
        let (asked, bridge) = match protocol::legacy::up(&frame, true) {
            Ok(None) => (frame.clone(), None),
            Ok(Some((bridged, bridge))) => (bridged, Some(bridge)),
            Err(_) => return,
        };
        // An answer the node made at the bridge version must write at the client's: were it
        // refused, the connection would close on a request Kafka 3.9 answered.
        let back = |bytes: Bytes| -> Result<Bytes, String> {
            Ok(match &bridge {
                Some(b) => b.down(&bytes).unwrap_or_else(|e| panic!("a bridged answer does not write back: {e}")),
                None => bytes,
            })
        };
        match scratch.answer(&asked) {
            // As the shell does: an answer that does not encode closes the connection.
            Outcome::Reply(reply) => match reply.encode().and_then(back) {
                Ok(bytes) => check_reply(&frame, &bytes),
                Err(_) => return,
            },
            // A zero-copy Fetch answer, as the socket would get it.
            Outcome::Frame(f) => match back(f.to_bytes().expect("a fetch answer's file regions read")) {
                Ok(bytes) => check_reply(&frame, &bytes),
                Err(_) => return,
            },
            Outcome::NoReply => {}
            Outcome::Close(_) => return,
            other => panic!("answer() returned {other:?}"),
        }
        scratch.now += 1;
        scratch.sync();
    }
}

/// A reply is one frame: the size prefix, then a response header with the request's
/// correlation id in the header version its API and version call for.
fn check_reply(request: &Bytes, reply: &Bytes) {
    assert!(reply.len() >= 8, "a reply of {} bytes cannot hold a size and a correlation id", reply.len());
    let size = i32::from_be_bytes(reply[..4].try_into().expect("4 bytes"));
    assert_eq!(size as usize, reply.len() - 4, "the size prefix counts the bytes that follow");
    let key = ApiKey::try_from(i16::from_be_bytes([request[0], request[1]])).expect("only known APIs are answered");
    let version = i16::from_be_bytes([request[2], request[3]]);
    // An ApiVersions of a version not served is answered in v0 (Kafka's rule).
    let served = crate::kafka::served(key).zip(protocol::legacy::oldest(key, true)).is_some_and(|((_, hi), lo)| (lo..=hi).contains(&version));
    let version = if served { version } else { 0 };
    let mut body = reply.slice(4..);
    let header = ResponseHeader::decode(&mut body, key.response_header_version(version)).expect("the response header decodes");
    assert_eq!(header.correlation_id.to_be_bytes(), request[4..8], "the reply carries the request's correlation id");
}
