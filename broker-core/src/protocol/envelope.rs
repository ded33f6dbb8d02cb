//! The envelopes of forwarded controller requests (KIP-590), on the wire: which APIs travel in
//! one, the envelope a forwarder sends, and its answer opened and sealed. Which request is
//! forwarded now and how an envelope is served are the node's (`node/forward.rs`); the sending
//! and retrying are the shell's (`server/forward.rs`).

use super::Response;
use crate::kafka::Code;
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::envelope_request::EnvelopeRequest;
use kafka_protocol::messages::envelope_response::EnvelopeResponse;
use kafka_protocol::messages::ApiKey;
use std::net::IpAddr;

/// The APIs a node that is not the active controller forwards to it.
const forwarded_apis: [ApiKey; 14] = [ApiKey::AlterClientQuotas, ApiKey::UnregisterBroker, ApiKey::AlterPartitionReassignments, ApiKey::ListPartitionReassignments, ApiKey::CreatePartitions, ApiKey::CreateTopics, ApiKey::DeleteTopics, ApiKey::AlterConfigs, ApiKey::IncrementalAlterConfigs, ApiKey::ElectLeaders, ApiKey::AlterUserScramCredentials, ApiKey::CreateAcls, ApiKey::DeleteAcls, ApiKey::DescribeQuorum];

/// Whether requests of `key` are forwarded to the active controller.
pub fn forwarded(key: ApiKey) -> bool {
    forwarded_apis.contains(&key)
}

/// The envelope the forwarder sends: the client's frame (header and body, no size prefix), the
/// client's address and its principal (as text: only this project's brokers read it; the
/// controller takes it only from a peer allowed CLUSTER_ACTION).
pub fn envelope(request: Bytes, client: IpAddr, principal: &str) -> EnvelopeRequest {
    let mut e = EnvelopeRequest::default();
    e.request_data = request;
    e.request_principal = Some(Bytes::copy_from_slice(principal.as_bytes()));
    e.client_host_address = match client {
        IpAddr::V4(a) => Bytes::copy_from_slice(&a.octets()),
        IpAddr::V6(a) => Bytes::copy_from_slice(&a.octets()),
    };
    e
}

/// The client an envelope carries, if it names one (no principal: anonymous).
pub fn caller(req: &EnvelopeRequest) -> Option<crate::security::acl::Caller> {
    let principal = req.request_principal.as_ref().and_then(|p| std::str::from_utf8(p).ok()).filter(|p| !p.is_empty());
    let host = client(req)?;
    Some(crate::security::acl::Caller { principal: principal.unwrap_or(crate::security::acl::anonymous).to_string(), host, internal: false, listener: None, connection: None })
}

/// The client's address an envelope carries, if it names one.
fn client(req: &EnvelopeRequest) -> Option<IpAddr> {
    match req.client_host_address.len() {
        4 => <[u8; 4]>::try_from(&req.client_host_address[..]).ok().map(IpAddr::from),
        16 => <[u8; 16]>::try_from(&req.client_host_address[..]).ok().map(IpAddr::from),
        _ => None,
    }
}

/// The client's answer inside an envelope's answer, size prefix restored; `Err` names why the
/// controller did not answer it (the forwarder then asks again).
pub fn opened(resp: EnvelopeResponse) -> Result<Bytes, String> {
    if resp.error_code != 0 {
        return Err(format!("the envelope was refused with error {:?}", crate::kafka::error(resp.error_code)));
    }
    let data = resp.response_data.ok_or("the envelope's answer carries no response")?;
    let mut out = BytesMut::with_capacity(4 + data.len());
    out.put_i32(data.len() as i32);
    out.put_slice(&data);
    Ok(out.freeze())
}

/// The envelope's answer carrying `reply`, encoded (the inner answer travels as bytes).
pub fn seal(version: i16, correlation_id: i32, reply: &Response) -> Result<Response, String> {
    let mut r = EnvelopeResponse::default();
    r.response_data = Some(reply.encode()?.slice(4..));
    Ok(Response::new(ApiKey::Envelope, version, correlation_id, r))
}

/// The envelope's answer refusing it with `code`.
pub fn refused(version: i16, correlation_id: i32, code: Code) -> Response {
    let mut r = EnvelopeResponse::default();
    r.error_code = code.code();
    Response::new(ApiKey::Envelope, version, correlation_id, r)
}
