//! One node's state and the decisions of its requests: the broker, the group coordinator and,
//! on a voter, the metadata quorum, with the requests that act on them. A request frame comes
//! in with `now` and the attempt; an [`Outcome`] for the shell comes out, with the [`Action`]s
//! the decision asks for besides. `protocol/` reads and writes the bytes; this module decides
//! what they mean for the node; `server/` performs what comes out. Never a socket, a clock or a
//! sleep here.
//!
//! Files by responsibility: `handlers` (the broker's APIs: produce, fetch, metadata, offsets),
//! `controller_handlers` and `elect_leaders` (the quorum's), `config_handlers`, `group_handlers`
//! (the coordinator's APIs) and `group_link` (where the coordinator meets the broker: ownership,
//! loading, its appends), `waiting` (requests answered later), `forward` (KIP-590 on this node).

mod config_handlers;
mod controller_handlers;
mod elect_leaders;
mod forward;
mod group_handlers;
mod group_link;
mod group_reply;
mod handlers;
mod waiting;

use crate::broker::{Action, Broker};
use crate::controller::quorum::Quorum;
use crate::controller::raft::wire;
use crate::group::Coordinator;
use crate::protocol::{decode, encode, fetch_frame};
use std::sync::{Mutex, MutexGuard};
use bytes::Bytes;
use kafka_protocol::messages::fetch_request::FetchRequest;
use kafka_protocol::messages::produce_request::ProduceRequest;
use kafka_protocol::messages::{ApiKey, RequestHeader};
use kafka_protocol::protocol::Decodable;

pub use waiting::Waiting;

/// What requests act on: this node's broker and group coordinator, under one lock (a group
/// request decides with both, so no request ever holds one and waits for the other), and, on
/// a voter, the metadata quorum under its own (the quorum's work never waits for the broker's).
pub struct Node {
    parts: Mutex<Parts>,
    controller: Option<Mutex<Quorum>>,
    /// The quorum leader a voter last named to this node's peer links (-1: none known).
    controller_hint: std::sync::atomic::AtomicI32,
}

/// The broker and the group coordinator of a node, locked together ([`Node::parts`]).
pub struct Parts {
    pub broker: Broker,
    pub groups: Coordinator,
}

/// The broker of a locked [`Parts`] ([`Node::broker`]).
pub struct BrokerGuard<'a>(MutexGuard<'a, Parts>);

impl std::ops::Deref for BrokerGuard<'_> {
    type Target = Broker;
    fn deref(&self) -> &Broker {
        &self.0.broker
    }
}

impl std::ops::DerefMut for BrokerGuard<'_> {
    fn deref_mut(&mut self) -> &mut Broker {
        &mut self.0.broker
    }
}

impl Node {
    pub fn new(broker: Broker, controller: Option<Quorum>) -> Node {
        let mut groups = Coordinator::new(broker.config().groups.clone());
        groups.planted = broker.config().planted_set();
        Node { parts: Mutex::new(Parts { broker, groups }), controller: controller.map(Mutex::new), controller_hint: (-1).into() }
    }

    /// The broker and the coordinator, even if a request handler panicked while holding them
    /// (a bug, logged there): their state is still the last consistent one, since every
    /// mutation is a whole call.
    pub fn parts(&self) -> MutexGuard<'_, Parts> {
        self.parts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The broker alone ([`Node::parts`]).
    pub fn broker(&self) -> BrokerGuard<'_> {
        BrokerGuard(self.parts())
    }

    /// The group coordinator's timers (sessions, rebalance deadlines, loading, expiry).
    pub fn tick_groups(&self, now: u64) -> Vec<Action> {
        let mut parts = self.parts();
        let Parts { broker, groups } = &mut *parts;
        group_link::tick(broker, groups, now)
    }

    /// The metadata quorum's voter, on a node that is one (active as controller or not).
    pub fn controller(&self) -> Option<MutexGuard<'_, Quorum>> {
        self.controller.as_ref().map(|c| c.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// The quorum leader a voter last named to this node, if any.
    pub fn controller_hint(&self) -> Option<i32> {
        Some(self.controller_hint.load(std::sync::atomic::Ordering::Relaxed)).filter(|&id| id >= 0)
    }

    /// Remembers (or, with None, forgets) the quorum leader a voter named.
    pub fn set_controller_hint(&self, id: Option<i32>) {
        self.controller_hint.store(id.unwrap_or(-1), std::sync::atomic::Ordering::Relaxed);
    }

    /// The controller id clients are told (Metadata): the quorum leader this node knows, else
    /// the one last named to it, else the first voter (so a client always has one to ask); but
    /// a leader that is not a registered broker (a voter-only node) is replaced by this broker
    /// (or, on a voter-only node, the first live broker), which forwards controller requests.
    pub fn controller_id(&self) -> i32 {
        let own = self.controller().and_then(|q| q.leader());
        let leader = own.or_else(|| self.controller_hint()).unwrap_or_else(|| self.broker().config().voters.keys().next().copied().unwrap_or(-1));
        let b = self.broker();
        if leader < 0 || b.image().brokers.contains_key(&leader) {
            return leader;
        }
        // A voter-only controller is no broker a client can reach by Metadata: name a broker,
        // which forwards (as KRaft's brokers name one of themselves).
        let me = b.config().node_id;
        match b.config().broker_role {
            true => me,
            false => b.image().brokers.iter().find(|(_, x)| !x.fenced).map_or(leader, |(id, _)| *id),
        }
    }
}

/// What the shell does with a request.
#[derive(Debug)]
pub enum Outcome {
    /// Send this frame (size prefix included).
    Reply(Bytes),
    /// Send this frame, parts of which are file regions (a zero-copy Fetch response).
    Frame(fetch_frame::Frame),
    /// Send nothing (produce with acks=0).
    NoReply,
    /// Not enough data for a fetch yet: ask again when data arrives (new metadata, for a fetch
    /// of the metadata log) or after this many ms, with `final_attempt` set once the wait is over.
    Park { wait_ms: u64, metadata: bool },
    /// Close the connection; the reason is for the log.
    Close(String),
    /// Answer once a condition holds (acks=all replicated, metadata applied) or a timeout
    /// passes: ask [`Waiting::poll`] again whenever the node changed.
    Wait(Waiting),
    /// This node is not the active controller: forward `request` (the client's frame without
    /// its size prefix) to it in an envelope and relay its answer, or answer `fallback`
    /// (NOT_CONTROLLER) if none answers in time (`forward`).
    Forward { request: Bytes, fallback: Bytes },
}

impl Outcome {
    /// The outcome's name, for the log.
    pub fn kind(&self) -> &'static str {
        match self {
            Outcome::Reply(_) => "a reply",
            Outcome::Frame(_) => "a zero-copy frame",
            Outcome::NoReply => "no reply",
            Outcome::Park { .. } => "a parked fetch",
            Outcome::Close(_) => "a closed connection",
            Outcome::Wait(_) => "a wait",
            Outcome::Forward { .. } => "a forward",
        }
    }
}

/// A Raft message from another voter (`controller::raft::wire`): fed to this node's voter,
/// never answered. One that does not decode, or reaches a node that is not a voter, closes the
/// connection: the sender is misconfigured or hostile.
fn raft_message(node: &Node, body: Bytes, now: u64) -> Result<Outcome, String> {
    let m = wire::decode_body(body)?;
    let Some(mut q) = node.controller() else {
        return Err(format!("raft message from node {} to node {}, which is not a controller voter", m.from, m.to));
    };
    if let Err(e) = q.receive(now, m) {
        tracing::error!("controller: {e}");
    }
    Ok(Outcome::NoReply)
}

/// Which time a request is handled: a parked fetch is handled again when data arrives and a
/// last time when its wait is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    First,
    Again,
    Final,
}

/// Handles one request frame (without its size prefix). What the broker asks of the shell
/// besides the answer (wake waiting requests, log a line) is added to `out`.
pub fn handle(node: &Node, frame: &Bytes, now: u64, attempt: Attempt, out: &mut Vec<Action>) -> Outcome {
    handle_from(node, frame, None, None, now, attempt, out)
}

/// A Produce request decoded and its batches checked ([`prepare`]) before its decision.
pub struct Prepared {
    req: ProduceRequest,
    batches: Vec<Option<crate::broker::Incoming>>,
}

/// The work of a Produce request that needs only its bytes (decoding, and checking every batch:
/// CRC, records, decompression), for the shell to do before it takes the node's lock; None for
/// any other request, or one this cannot read (then [`handle_from`] reads it and says why).
pub fn prepare(frame: &Bytes) -> Option<Prepared> {
    let lead = crate::protocol::leading(frame)?;
    if lead.key != ApiKey::Produce as i16 {
        return None;
    }
    let version = lead.version;
    let (lo, hi) = crate::kafka::served(ApiKey::Produce)?;
    if !(lo..=hi).contains(&version) {
        return None;
    }
    let mut body = frame.clone();
    RequestHeader::decode(&mut body, ApiKey::Produce.request_header_version(version)).ok()?;
    let req = ProduceRequest::decode(&mut body, version).ok()?;
    let batches = handlers::produce_batches(&req);
    Some(Prepared { req, batches })
}

/// [`handle`] for a request from `peer` (the address group members are described with), with
/// what [`prepare`] made of this same frame, if anything.
pub fn handle_from(node: &Node, frame: &Bytes, prepared: Option<Prepared>, peer: Option<std::net::IpAddr>, now: u64, attempt: Attempt, out: &mut Vec<Action>) -> Outcome {
    match handle_inner(node, frame, prepared, peer, now, attempt, out, false) {
        Ok(outcome) => outcome,
        Err(reason) => Outcome::Close(reason),
    }
}

/// `enveloped`: the request was forwarded here by another node (never forwarded again).
#[allow(clippy::too_many_arguments)]
fn handle_inner(node: &Node, frame: &Bytes, prepared: Option<Prepared>, peer: Option<std::net::IpAddr>, now: u64, attempt: Attempt, out: &mut Vec<Action>, enveloped: bool) -> Result<Outcome, String> {
    let final_attempt = attempt == Attempt::Final;
    let Some(crate::protocol::Leading { key: raw_key, version, correlation_id }) = crate::protocol::leading(frame) else {
        return Err("request shorter than its header".into());
    };
    if raw_key == wire::api_key {
        return raft_message(node, frame.slice(8..), now);
    }
    let key = ApiKey::try_from(raw_key).map_err(|_| format!("unknown API key {raw_key}"))?;
    let Some((lo, hi)) = crate::kafka::served(key) else {
        return Err(format!("API {key:?} is not supported by this broker"));
    };
    if !(lo..=hi).contains(&version) {
        if key == ApiKey::ApiVersions {
            // Kafka answers with a v0 body so any client can read the supported range.
            let body = crate::protocol::api_versions_response(crate::kafka::Code::UnsupportedVersion.code());
            return encode(key, 0, correlation_id, &body).map(Outcome::Reply);
        }
        return Err(format!("{key:?} v{version} is not supported (v{lo}..=v{hi})"));
    }
    let mut body = frame.clone();
    let header = RequestHeader::decode(&mut body, key.request_header_version(version))
        .map_err(|e| format!("malformed request header: {e}"))?;
    let client_id = header.client_id.as_ref().map_or("", |c| c.as_str());
    macro_rules! reply {
        ($resp:expr) => {
            encode(key, version, correlation_id, &$resp).map(Outcome::Reply)
        };
    }
    let b = || node.broker();
    let forwards = forward::forwards(node, key, enveloped);
    let outcome = match key {
        ApiKey::ApiVersions => reply!(crate::protocol::api_versions_response(0)),
        ApiKey::Metadata => {
            let controller_id = node.controller_id();
            reply!(handlers::metadata(&mut b(), version, decode(key, version, &mut body)?, controller_id))
        }
        ApiKey::Produce => {
            let Prepared { req, batches } = match prepared {
                Some(p) => p,
                None => {
                    let req = decode(key, version, &mut body)?;
                    Prepared { batches: handlers::produce_batches(&req), req }
                }
            };
            handlers::produce(&mut b(), version, correlation_id, req, batches, now, out)
        }
        ApiKey::Fetch => {
            let req: FetchRequest = decode(key, version, &mut body)?;
            let metadata = controller_handlers::is_metadata_fetch(&req);
            let decision = match metadata {
                true => controller_handlers::metadata_fetch(node, req, final_attempt),
                false => handlers::fetch(&mut b(), version, req, attempt, now, out),
            };
            match decision {
                handlers::FetchDecision::Respond(resp, files) if files.is_empty() => reply!(resp),
                handlers::FetchDecision::Respond(resp, files) => fetch_frame::encode(version, correlation_id, &resp, &files).map(Outcome::Frame),
                handlers::FetchDecision::Park(wait_ms) => Ok(Outcome::Park { wait_ms, metadata }),
            }
        }
        ApiKey::ListOffsets => reply!(handlers::list_offsets(&b(), version, decode(key, version, &mut body)?)),
        ApiKey::CreateTopics => controller_handlers::create_topics(node, version, correlation_id, decode(key, version, &mut body)?, now),
        ApiKey::DeleteTopics => controller_handlers::delete_topics(node, version, correlation_id, decode(key, version, &mut body)?, now),
        ApiKey::ElectLeaders => elect_leaders::elect_leaders(node, version, correlation_id, decode(key, version, &mut body)?, now),
        ApiKey::DescribeConfigs => reply!(config_handlers::describe_configs(&b(), decode(key, version, &mut body)?)),
        ApiKey::AlterConfigs => config_handlers::alter_configs(node, version, correlation_id, decode(key, version, &mut body)?, now),
        ApiKey::IncrementalAlterConfigs => config_handlers::incremental_alter_configs(node, version, correlation_id, decode(key, version, &mut body)?, now),
        ApiKey::DeleteRecords => handlers::delete_records(&mut b(), version, correlation_id, decode(key, version, &mut body)?, now),
        ApiKey::InitProducerId => reply!(handlers::init_producer_id(&mut b(), decode(key, version, &mut body)?)),
        ApiKey::OffsetForLeaderEpoch => reply!(handlers::offset_for_leader_epoch(&b(), version, decode(key, version, &mut body)?)),
        ApiKey::BrokerRegistration => controller_handlers::broker_registration(node, version, correlation_id, decode(key, version, &mut body)?, now),
        ApiKey::BrokerHeartbeat => controller_handlers::broker_heartbeat(node, version, correlation_id, decode(key, version, &mut body)?, now),
        ApiKey::AlterPartition => controller_handlers::alter_partition(node, version, correlation_id, decode(key, version, &mut body)?, now),
        ApiKey::FindCoordinator => reply!(group_handlers::find_coordinator(&mut b(), version, decode(key, version, &mut body)?)),
        ApiKey::JoinGroup => group_handlers::join_group(node, version, correlation_id, (client_id, peer), decode(key, version, &mut body)?, now, out),
        ApiKey::SyncGroup => group_handlers::sync_group(node, version, correlation_id, decode(key, version, &mut body)?, now, out),
        ApiKey::Heartbeat => reply!(group_handlers::heartbeat(node, decode(key, version, &mut body)?, now, out)),
        ApiKey::LeaveGroup => reply!(group_handlers::leave_group(node, version, decode(key, version, &mut body)?, now, out)),
        ApiKey::OffsetCommit => group_handlers::offset_commit(node, version, correlation_id, decode(key, version, &mut body)?, now, out),
        ApiKey::OffsetFetch => reply!(group_handlers::offset_fetch(node, version, decode(key, version, &mut body)?, now, out)),
        ApiKey::ListGroups => reply!(group_handlers::list_groups(node, version, decode(key, version, &mut body)?, now, out)),
        ApiKey::DescribeGroups => reply!(group_handlers::describe_groups(node, decode(key, version, &mut body)?, now, out)),
        ApiKey::DeleteGroups => group_handlers::delete_groups(node, version, correlation_id, decode(key, version, &mut body)?, now, out),
        ApiKey::OffsetDelete => group_handlers::offset_delete(node, version, correlation_id, decode(key, version, &mut body)?, now, out),
        ApiKey::Envelope => forward::serve(node, version, correlation_id, decode(key, version, &mut body)?, now, attempt, out),
        other => Err(format!("API {other:?} is not supported by this broker")),
    };
    match outcome {
        // What this node answers alone (NOT_CONTROLLER) is what the client gets if no
        // controller answers the forward.
        Ok(Outcome::Reply(fallback)) if forwards => Ok(Outcome::Forward { request: frame.clone(), fallback }),
        other => other,
    }
}

#[cfg(test)]
mod tests;
