//! One node's state and the decisions of its requests: the broker, the group coordinator and,
//! on a voter, the metadata quorum, with the requests that act on them. A decoded request comes
//! in ([`prepare`] then [`handle_from`]) with `now` and the attempt; everything else the shell
//! hears — its timers, the IO completions, what the peer links heard from the controller —
//! comes in as one typed [`Input`] ([`Node::input`]). An [`Outcome`] for a request and the
//! [`Action`]s each decision asks for come out. `protocol/` reads and writes the bytes; this
//! module decides what they mean for the node; `server/` performs what comes out. Never a
//! socket, a clock or a sleep here.
//!
//! Files by responsibility: `handlers` (the broker's APIs: produce, fetch, metadata, offsets),
//! `controller_handlers` and `elect_leaders` (the quorum's), `config_handlers`, `group_handlers`
//! (the group coordinator's APIs) with `group_reply` (their answers under construction),
//! `txn_handlers` (the transaction coordinator's APIs and a partition leader's markers),
//! `cluster_handlers` (DescribeCluster, DescribeLogDirs, DescribeQuorum), `placement_handlers`
//! (AlterPartitionReassignments, ListPartitionReassignments, UnregisterBroker), `quota_handlers`
//! (DescribeClientQuotas, AlterClientQuotas),
//! `coordinator_link` (where both coordinators meet the broker: ownership, loading, their
//! appends, the markers' channel),
//! `waiting` (requests answered later), `forward` (KIP-590 on this node), `input` (the shell's
//! other inputs), `fetching` (the replica fetchers' rounds), `leader_hints` (KIP-951: where a
//! wrong leader's Produce and Fetch answers send the client).

mod acl_handlers;
mod authz;
mod cluster_handlers;
mod config_handlers;
mod controller_handlers;
mod consumer_handlers;
mod elect_leaders;
mod coordinator_link;
mod coordinator_load;
mod fetching;
mod forward;
mod group_handlers;
mod group_reply;
mod handlers;
mod input;
mod leader_hints;
mod placement_handlers;
mod quota_handlers;
mod quorum_view;
mod share_fetch;
pub mod share_handlers;
mod share_offsets;
pub mod txn_handlers;
mod user_handlers;
pub mod verify;
mod waiting;

use crate::broker::share_read::{ShareReadJob, ShareReads};
use crate::broker::{Action, Broker};
use crate::controller::quorum::Quorum;
use crate::controller::raft::Message;
use crate::group::Coordinator;
use crate::protocol::request::{decode_request, Decoded, Request};
use crate::protocol::{fetch_frame, Response};
use crate::security::acl::Caller;
use std::sync::{Mutex, MutexGuard};
use bytes::Bytes;
use kafka_protocol::messages::RequestKind;

pub use coordinator_load::{LoadDone, LoadJob};
pub use fetching::FetcherInput;
pub use input::{Input, MarkersResult, QuorumInput};
pub use quorum_view::QuorumView;
pub use waiting::Waiting;

/// What requests act on: this node's broker and coordinators, under one lock (a coordinator's
/// request decides with the broker too, so no request ever holds one and waits for another), and, on
/// a voter, the metadata quorum under its own (the quorum's work never waits for the broker's).
pub struct Node {
    parts: Mutex<Parts>,
    controller: Option<Mutex<Quorum>>,
    /// The quorum leader a voter last named to this node's peer links (-1: none known).
    controller_hint: std::sync::atomic::AtomicI32,
    /// What this node's own voter knew at the end of its last decision, read without the
    /// quorum's lock, which a decision holds across its metadata log's writes and syncs: so a
    /// Metadata request never waits for those. A leaf lock, held only to copy it.
    quorum_view: Mutex<QuorumView>,
    /// Client quota meters (`crate::throttle`): a leaf lock, taken alone, never across IO.
    throttles: Mutex<crate::throttle::Throttles>,
    /// The broker's authorizer settings (fixed at start), so a caller they exempt from every
    /// check is told apart without the broker's lock ([`Node::checked`]).
    authorizer: crate::security::acl::AuthorizerConfig,
}

/// The broker and the coordinators of a node, locked together ([`Node::parts`]).
pub struct Parts {
    pub broker: Broker,
    pub groups: Coordinator,
    /// The transaction coordinator and its markers' channel.
    pub txns: coordinator_link::Txns,
    /// The share-partitions this node leads and serves (KIP-932), and their share sessions.
    pub shares: crate::share::leader::Shares,
    /// One replica fetcher per leader this node has followed (`fetching`).
    fetchers: std::collections::BTreeMap<i32, crate::broker::ReplicaFetcher>,
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

impl Parts {
    /// Settles both coordinators' writes whose fate a decision just decided.
    pub(crate) fn settle(&mut self, now: u64, out: &mut Vec<Action>) {
        let Parts { broker, groups, txns, .. } = self;
        coordinator_link::settle(broker, groups, now, out);
        coordinator_link::settle(broker, txns, now, out);
    }
}

impl Node {
    pub fn new(broker: Broker, controller: Option<Quorum>) -> Node {
        let mut groups = Coordinator::new(broker.config().groups.clone());
        groups.planted = broker.config().planted_set();
        let txns = coordinator_link::Txns::new(broker.config().txns.clone(), broker.config().prepared_commits());
        let unit = broker.config().throttle_unit();
        let shares = share_handlers::new_shares(broker.config());
        let authorizer = broker.config().security.authorizer.clone();
        Node { authorizer, parts: Mutex::new(Parts { broker, groups, txns, shares, fetchers: Default::default() }), quorum_view: Mutex::new(controller.as_ref().map(QuorumView::of).unwrap_or_default()), controller: controller.map(Mutex::new), controller_hint: (-1).into(), throttles: Mutex::new(crate::throttle::Throttles::new(unit)) }
    }

    /// The broker and the coordinator, even if a request handler panicked while holding them
    /// (a bug, logged there): their state is still the last consistent one, since every
    /// mutation is a whole call.
    pub fn parts(&self) -> MutexGuard<'_, Parts> {
        self.parts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The client quota meters, held to the quotas of the metadata this node last applied.
    pub fn throttles(&self) -> MutexGuard<'_, crate::throttle::Throttles> {
        self.throttles.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The broker alone ([`Node::parts`]).
    pub fn broker(&self) -> BrokerGuard<'_> {
        BrokerGuard(self.parts())
    }

    /// When [`Input::Tick`] is next due, if the broker or a coordinator has a deadline.
    pub fn next_deadline(&self) -> Option<u64> {
        let parts = self.parts();
        parts.broker.next_deadline().into_iter().chain(parts.groups.next_deadline()).chain(parts.txns.next_deadline()).chain(parts.shares.next_deadline()).min()
    }

    /// The metadata quorum's voter, on a node that is one (active as controller or not).
    pub fn controller(&self) -> Option<MutexGuard<'_, Quorum>> {
        self.controller.as_ref().map(|c| c.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// [`Node::controller`] if its lock is free now: Err while a quorum decision holds it
    /// (across its metadata log's IO), for a poll outside the gates that must not block.
    pub fn try_controller(&self) -> Result<Option<MutexGuard<'_, Quorum>>, ()> {
        match &self.controller {
            None => Ok(None),
            Some(c) => match c.try_lock() {
                Ok(q) => Ok(Some(q)),
                Err(std::sync::TryLockError::Poisoned(p)) => Ok(Some(p.into_inner())),
                Err(std::sync::TryLockError::WouldBlock) => Err(()),
            },
        }
    }

    /// The quorum leader a voter last named to this node, if any.
    pub fn controller_hint(&self) -> Option<i32> {
        Some(self.controller_hint.load(std::sync::atomic::Ordering::Relaxed)).filter(|&id| id >= 0)
    }

    /// What this node's own voter knew after its last decision (the default on a node with
    /// none): without the quorum's lock.
    pub fn quorum_view(&self) -> QuorumView {
        *self.quorum_view.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The quorum leader this node's own voter knew after its last decision, if any.
    pub fn quorum_leader(&self) -> Option<i32> {
        self.quorum_view().leader
    }

    /// What [`Node::quorum_view`] reads: published at the end of each quorum decision, before
    /// the shell wakes anyone with what it did.
    fn publish_quorum_view(&self, q: &Quorum) {
        *self.quorum_view.lock().unwrap_or_else(|p| p.into_inner()) = QuorumView::of(q);
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
        let own = self.quorum_leader();
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
    /// Send this answer (the shell encodes it).
    Reply(Response),
    /// Send these bytes as they are: the answer a forwarded request got from the controller.
    Relay(Bytes),
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
    Forward { request: Bytes, fallback: Response },
    /// A produce with producers' first transactional writes here (KIP-890 part 1): ask the
    /// coordinator `job`, then decide `prepared` again with its answer
    /// ([`Prepared::verified`]).
    Verify { prepared: Prepared, job: verify::VerifyJob },
    /// A ShareFetch that found records it had not read (`share_fetch::share_plan`): read `job`
    /// off the gate, then decide the request again with it ([`Prepared::share_reads`]), as a
    /// parked fetch is (`wait_ms`: its wait, if it has none yet).
    ShareRead { job: ShareReadJob, wait_ms: u64 },
}

impl Outcome {
    /// The outcome's name, for the log.
    pub fn kind(&self) -> &'static str {
        match self {
            Outcome::Reply(_) => "a reply",
            Outcome::Relay(_) => "a relayed reply",
            Outcome::Frame(_) => "a zero-copy frame",
            Outcome::NoReply => "no reply",
            Outcome::Park { .. } => "a parked fetch",
            Outcome::Close(_) => "a closed connection",
            Outcome::Wait(_) => "a wait",
            Outcome::Forward { .. } => "a forward",
            Outcome::Verify { .. } => "a verification",
            Outcome::ShareRead { .. } => "a share read",
        }
    }
}

/// A Raft message from another voter (`controller::raft::wire`): fed to this node's voter
/// ([`QuorumInput::Message`]), never answered. One that reaches a node that is not a voter
/// closes the connection: the sender is misconfigured or hostile.
fn raft_message(node: &Node, m: Message, now: u64, out: &mut Vec<Action>) -> Result<Outcome, String> {
    if node.controller.is_none() {
        return Err(format!("raft message from node {} to node {}, which is not a controller voter", m.from, m.to));
    }
    out.extend(node.input(Input::Quorum(QuorumInput::Message(m)), now));
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

/// Handles one request frame (without its size prefix): [`decode_request`], [`prepare`] and
/// [`handle_from`] in one, for callers without a connection (tests, fuzzing). What the broker
/// asks of the shell besides the answer (wake waiting requests, log a line) is added to `out`.
pub fn handle(node: &Node, frame: &Bytes, now: u64, attempt: Attempt, out: &mut Vec<Action>) -> Outcome {
    handle_read(node, frame, now, attempt, None, out)
}

/// [`handle`] with a ShareFetch's records read here, where the shell reads them off the gate:
/// those `reads` (what an `Outcome::ShareRead` asked for), or with None what its plan asks for
/// ([`Prepared::share_plan`]).
pub fn handle_read(node: &Node, frame: &Bytes, now: u64, attempt: Attempt, reads: Option<ShareReads>, out: &mut Vec<Action>) -> Outcome {
    let legacy = node.broker().config().legacy_api_versions;
    let prepared = match decode_request(frame, legacy) {
        Ok(decoded) => prepare(decoded),
        Err(reason) => return Outcome::Close(reason),
    };
    let prepared = match (reads, prepared.share_plan(node, None, attempt == Attempt::First)) {
        (Some(reads), _) => prepared.with_share_reads(reads),
        (None, Some(job)) => prepared.with_share_reads(job.run(false)),
        (None, None) => prepared,
    };
    handle_from(node, prepared, None, now, attempt, out)
}

/// A decoded frame ready for its decision: a Produce request's batches are checked already.
#[derive(Debug)]
pub struct Prepared {
    decoded: Decoded,
    batches: Option<Vec<Option<crate::broker::Incoming>>>,
    /// A produce's verification, answered (`Outcome::Verify`).
    verified: Option<verify::Verified>,
    /// A ShareFetch's records, read off the gate before its decision.
    share_reads: Option<ShareReads>,
}

/// The work of a request that needs only its bytes, for the shell to do before it takes the
/// node's lock: checking every batch of a Produce (CRC, records, decompression).
pub fn prepare(decoded: Decoded) -> Prepared {
    let batches = match &decoded {
        Decoded::Request(Request { body: RequestKind::Produce(req), .. }) => Some(handlers::produce_batches(req)),
        _ => None,
    };
    Prepared { decoded, batches, verified: None, share_reads: None }
}

impl Prepared {
    /// A copy to decide again (a parked fetch), for a request without batches: None for one
    /// with them (a produce is decided once).
    pub fn copy_without_batches(&self) -> Option<Prepared> {
        self.batches.is_none().then(|| Prepared { decoded: self.decoded.clone(), batches: None, verified: None, share_reads: None })
    }

    /// What this request reads before its decision, off the gate: a ShareFetch's records not
    /// yet read for it (`share_fetch::share_plan`), for the callers `refused` does not name
    /// (None: anything else).
    /// `first`: the request's first decision is still to come (its acknowledgements move the
    /// fetch point; a request decided again applied them already).
    pub fn share_plan(&self, node: &Node, caller: Option<&Caller>, first: bool) -> Option<ShareReadJob> {
        let Decoded::Request(Request { body: RequestKind::ShareFetch(req), .. }) = &self.decoded else { return None };
        if !self.wants_share_plan() {
            return None;
        }
        let refused = match caller {
            Some(c) => authz::share_refused(&node.broker(), c, req.group_id.as_ref().map_or("", |g| g.0.as_str()))?,
            None => authz::Denied::none(),
        };
        Some(share_fetch::share_plan(node, req, &refused, first))
    }

    /// Whether this request (of API `key`) is decided under the metadata quorum's gate rather
    /// than the node's: the controller APIs, and the requests that read the quorum alone (a
    /// broker's Fetch of the metadata log, ListPartitionReassignments). They lock the quorum,
    /// which a quorum decision holds across its metadata log's writes and syncs: under the
    /// node's gate they would stop every request of the node meanwhile.
    pub fn decided_by_quorum(&self, key: i16) -> bool {
        match &self.decoded {
            Decoded::Request(Request { body: RequestKind::Fetch(req), .. }) => controller_handlers::is_metadata_fetch(req),
            Decoded::Request(Request { body: RequestKind::ListPartitionReassignments(_), .. }) => true,
            _ => crate::protocol::is_controller_api(key),
        }
    }

    /// Whether this is a ShareFetch whose records are not read yet ([`Prepared::share_plan`]).
    pub fn wants_share_plan(&self) -> bool {
        matches!(&self.decoded, Decoded::Request(Request { body: RequestKind::ShareFetch(_), .. })) && self.share_reads.is_none()
    }

    /// What was read for this ShareFetch (`share_plan`, `Outcome::ShareRead`): its decision
    /// takes it.
    pub fn with_share_reads(mut self, reads: ShareReads) -> Prepared {
        self.share_reads = Some(reads);
        self
    }

    /// This produce's verification came back (`Outcome::Verify`): decide it again with it.
    pub fn verified(mut self, verified: verify::Verified) -> Prepared {
        self.verified = Some(verified);
        self
    }
}

/// Decides one prepared request from `peer` (the address group members are described with).
pub fn handle_from(node: &Node, prepared: Prepared, caller: Option<&Caller>, now: u64, attempt: Attempt, out: &mut Vec<Action>) -> Outcome {
    let outcome = handle_inner(node, prepared, caller, now, attempt, out, false);
    // A high watermark that moved may settle the coordinators' writes (a follower's fetch
    // replicated a commit): their answers come out of this decision.
    if out.contains(&Action::Wake) {
        node.parts().settle(now, out);
    }
    outcome.unwrap_or_else(Outcome::Close)
}

/// `enveloped`: the request was forwarded here by another node (never forwarded again).
fn handle_inner(node: &Node, prepared: Prepared, caller: Option<&Caller>, now: u64, attempt: Attempt, out: &mut Vec<Action>, enveloped: bool) -> Result<Outcome, String> {
    let peer = caller.map(|c| c.host);
    let Prepared { decoded, batches, verified, share_reads } = prepared;
    // Only a caller the checks apply to locks the broker for its image's ACLs: a Raft message
    // or a metadata fetch from this cluster's own, decided under the quorum's gate, never
    // waits for the node's lock (held across a decision's disk work).
    let checked = caller.filter(|c| !authz::exempt(&node.authorizer, &c.principal, c.internal));
    let mut request = match decoded {
        Decoded::Request(r) => r,
        Decoded::Raft(m) => {
            if checked.is_some_and(|c| !authz::raft(Some(&authz::Access::of(&node.broker(), c)))) {
                return Ok(Outcome::Close("not authorized: a Raft message needs CLUSTER_ACTION on the cluster".into()));
            }
            return raft_message(node, m, now, out);
        }
        Decoded::Answer(reply) => return Ok(Outcome::Reply(reply)),
    };
    let check = match checked {
        None => authz::Check::Pass,
        Some(c) => authz::check(Some(&authz::Access::of(&node.broker(), c)), &mut request),
    };
    let filter = matches!(check, authz::Check::Filter);
    let (denied, without) = match check {
        authz::Check::Pass | authz::Check::Filter => (authz::Denied::none(), None),
        authz::Check::Within(denied) => (denied, None),
        authz::Check::Without { topics, hide } => (authz::Denied::none(), Some((topics, hide))),
        authz::Check::Refuse(outcome) => return Ok(outcome),
    };
    // What a filtered answer is filtered with (the caller's access, over the image now).
    macro_rules! filtered {
        ($resp:expr, $after:path) => {{
            let mut resp = $resp;
            if let (true, Some(caller)) = (filter, caller) {
                let b = node.broker();
                $after(&authz::Access::of(&b, caller), &mut resp);
            }
            resp
        }};
    }
    // An answer handled without the resources the check took out, given them back with
    // their errors (`Check::Without`).
    macro_rules! readded {
        ($resp:expr, $after:path) => {{
            let mut resp = $resp;
            if let Some((refused, _)) = &without {
                $after(&mut resp, refused);
            }
            resp
        }};
    }
    if let (RequestKind::Produce(req), Some(checked), None) = (&request.body, &batches, &verified) {
        let job = req.transactional_id.as_ref().and_then(|id| verify::start(&mut node.broker(), id.0.as_str(), req, checked));
        if let Some(job) = job {
            return Ok(Outcome::Verify { prepared: Prepared { decoded: Decoded::Request(request), batches, verified: None, share_reads: None }, job });
        }
    }
    let final_attempt = attempt == Attempt::Final;
    let (key, version, correlation_id) = (request.key, request.version, request.correlation_id());
    macro_rules! reply {
        ($resp:expr) => {
            Ok(Outcome::Reply(Response::new(key, version, correlation_id, $resp)))
        };
    }
    let b = || node.broker();
    // The listener the client came in on, whose endpoints the answers name.
    let listener = || caller.and_then(|c| c.listener.as_deref()).map_or_else(|| b().config().security.inter_broker_listener.clone(), str::to_string);
    let forwards = forward::forwards(node, key, enveloped);
    let client_id = request.client_id().to_string();
    let outcome = match request.body {
        RequestKind::ApiVersions(_) => reply!(crate::protocol::api_versions_response(0, b().config().legacy_api_versions)),
        RequestKind::Metadata(req) => {
            let controller_id = node.controller_id();
            let listener = listener();
            let mut resp = handlers::metadata(&mut b(), version, req, controller_id, &listener);
            if let (Some((refused, hide)), Some(caller)) = (without, caller) {
                let b = b();
                authz::metadata_after(&authz::Access::of(&b, caller), &mut resp, refused, hide);
            }
            reply!(resp)
        }
        RequestKind::Produce(req) => {
            let batches = batches.unwrap_or_else(|| handlers::produce_batches(&req));
            let listener = listener();
            handlers::produce(&mut b(), (version, correlation_id, &listener), req, batches, verified.as_ref(), &denied, now, out)
        }
        RequestKind::Fetch(req) => {
            let metadata = controller_handlers::is_metadata_fetch(&req);
            let mut decision = match metadata {
                true => controller_handlers::metadata_fetch(node, req, final_attempt, now),
                false => handlers::fetch(&mut b(), version, req, caller, attempt, now, out),
            };
            // KIP-951: where a partition led elsewhere is led (v16+; the metadata log is
            // fetched by name, so before v13).
            let hints = version >= crate::kafka::since::fetch_leader_hints;
            if let (true, handlers::FetchDecision::Respond(resp, _)) = (hints, &mut decision) {
                let listener = listener();
                leader_hints::fetch(&b(), &listener, resp);
            }
            match decision {
                handlers::FetchDecision::Respond(resp, files) if files.is_empty() => reply!(resp),
                handlers::FetchDecision::Respond(resp, files) => fetch_frame::encode(version, correlation_id, &resp, &files).map(Outcome::Frame),
                handlers::FetchDecision::Park(wait_ms) => Ok(Outcome::Park { wait_ms, metadata }),
            }
        }
        RequestKind::ListOffsets(req) => reply!(readded!(handlers::list_offsets(&b(), version, req), authz::list_offsets_after)),
        RequestKind::DescribeProducers(req) => reply!(filtered!(txn_handlers::describe_producers(&b(), req), authz::describe_producers_after)),
        RequestKind::WriteTxnMarkers(req) => Ok(txn_handlers::write_txn_markers(node, version, correlation_id, req, now, out)),
        RequestKind::CreateTopics(req) => controller_handlers::create_topics(node, version, correlation_id, req, &denied, now),
        RequestKind::DeleteTopics(req) => controller_handlers::delete_topics(node, version, correlation_id, req, &denied, now),
        RequestKind::CreatePartitions(req) => controller_handlers::create_partitions(node, version, correlation_id, req, &denied, now),
        RequestKind::ElectLeaders(req) => elect_leaders::elect_leaders(node, version, correlation_id, req, now),
        RequestKind::AlterPartitionReassignments(req) => placement_handlers::alter(node, version, correlation_id, req, now),
        RequestKind::ListPartitionReassignments(req) => placement_handlers::list(node, version, correlation_id, req),
        RequestKind::UnregisterBroker(req) => placement_handlers::unregister(node, version, correlation_id, req, now),
        RequestKind::DescribeClientQuotas(req) => reply!(quota_handlers::describe(&b(), req)),
        RequestKind::AlterClientQuotas(req) => quota_handlers::alter(node, version, correlation_id, req, now),
        RequestKind::DescribeConfigs(req) => reply!(filtered!(config_handlers::describe_configs(&b(), req), authz::describe_configs_after)),
        RequestKind::AlterConfigs(req) => config_handlers::alter_configs(node, version, correlation_id, req, &denied, now),
        RequestKind::IncrementalAlterConfigs(req) => config_handlers::incremental_alter_configs(node, version, correlation_id, req, &denied, now),
        RequestKind::DeleteRecords(req) => handlers::delete_records(&mut b(), (version, correlation_id), req, &denied, now),
        RequestKind::InitProducerId(req) => Ok(txn_handlers::init_producer_id(node, version, correlation_id, req, now, out)),
        RequestKind::AddPartitionsToTxn(req) => Ok(txn_handlers::add_partitions_to_txn(node, version, correlation_id, req, now, out)),
        RequestKind::AddOffsetsToTxn(req) => Ok(txn_handlers::add_offsets_to_txn(node, version, correlation_id, req, now, out)),
        RequestKind::EndTxn(req) => Ok(txn_handlers::end_txn(node, version, correlation_id, req, now, out)),
        RequestKind::DescribeTransactions(req) => reply!(filtered!(txn_handlers::describe_transactions(node, req, now, out), authz::describe_transactions_after)),
        RequestKind::ListTransactions(req) => reply!(filtered!(txn_handlers::list_transactions(node, version, req, now, out), authz::list_transactions_after)),
        RequestKind::OffsetForLeaderEpoch(req) => reply!(readded!(handlers::offset_for_leader_epoch(&b(), version, req), authz::offset_for_leader_epoch_after)),
        RequestKind::BrokerRegistration(req) => controller_handlers::broker_registration(node, version, correlation_id, req, now),
        RequestKind::BrokerHeartbeat(req) => controller_handlers::broker_heartbeat(node, version, correlation_id, req, now),
        RequestKind::AlterPartition(req) => controller_handlers::alter_partition(node, version, correlation_id, req, now),
        RequestKind::FindCoordinator(req) => {
            let listener = listener();
            reply!(readded!(group_handlers::find_coordinator(&mut b(), version, req, &listener), authz::find_coordinator_after))
        }
        RequestKind::JoinGroup(req) => group_handlers::join_group(node, version, correlation_id, (&client_id, peer), req, now, out),
        RequestKind::SyncGroup(req) => group_handlers::sync_group(node, version, correlation_id, req, now, out),
        RequestKind::Heartbeat(req) => reply!(group_handlers::heartbeat(node, req, now, out)),
        RequestKind::LeaveGroup(req) => reply!(group_handlers::leave_group(node, version, req, now, out)),
        RequestKind::OffsetCommit(req) => group_handlers::offset_commit(node, (version, correlation_id), req, &denied, now, out),
        RequestKind::TxnOffsetCommit(req) => group_handlers::txn_offset_commit(node, (version, correlation_id), req, &denied, now, out),
        RequestKind::OffsetFetch(req) => {
            // Which groups named their topics (else: every committed one), for the filter.
            let named: Vec<bool> = match version >= 8 {
                true => req.groups.iter().map(|g| g.topics.is_some()).collect(),
                false => vec![req.topics.is_some()],
            };
            let mut resp = group_handlers::offset_fetch(node, version, req, now, out);
            if let (true, Some(caller)) = (filter || without.is_some(), caller) {
                let b = node.broker();
                authz::offset_fetch_topics_after(&authz::Access::of(&b, caller), &mut resp, &named);
            }
            reply!(readded!(resp, authz::offset_fetch_after))
        }
        RequestKind::ConsumerGroupHeartbeat(req) => consumer_handlers::consumer_group_heartbeat(node, (version, correlation_id), (&client_id, peer), req, caller, now, out),
        RequestKind::ConsumerGroupDescribe(req) => reply!(readded!(consumer_handlers::consumer_group_describe(node, req, caller, now, out), consumer_handlers::consumer_group_describe_after)),
        RequestKind::ShareGroupHeartbeat(req) => share_handlers::share_group_heartbeat(node, (version, correlation_id), (&client_id, peer), req, now, out),
        RequestKind::ShareGroupDescribe(req) => reply!(readded!(share_handlers::share_group_describe(node, req, now, out), share_handlers::share_group_describe_after)),
        RequestKind::ShareFetch(req) => share_fetch::share_fetch(node, (version, correlation_id), req, (&denied, caller.and_then(|c| c.connection)), (attempt, share_reads.unwrap_or_default()), now, out),
        RequestKind::ShareAcknowledge(req) => share_fetch::share_acknowledge(node, (version, correlation_id), req, (&denied, caller.and_then(|c| c.connection)), now, out),
        RequestKind::ReadShareGroupState(req) => share_handlers::read_share_group_state(node, (version, correlation_id), req, now, out),
        RequestKind::WriteShareGroupState(req) => share_handlers::write_share_group_state(node, (version, correlation_id), req, now, out),
        RequestKind::DescribeShareGroupOffsets(req) => reply!(share_offsets::describe(node, req, &denied, now, out)),
        RequestKind::AlterShareGroupOffsets(req) => share_offsets::alter(node, (version, correlation_id), req, &denied, now, out),
        RequestKind::DeleteShareGroupOffsets(req) => share_offsets::delete(node, (version, correlation_id), req, &denied, now, out),
        RequestKind::ListGroups(req) => reply!(filtered!(group_handlers::list_groups(node, version, req, now, out), authz::list_groups_after)),
        RequestKind::DescribeGroups(req) => reply!(readded!(group_handlers::describe_groups(node, req, now, out), authz::describe_groups_after)),
        RequestKind::DeleteGroups(req) => group_handlers::delete_groups(node, (version, correlation_id), req, &denied, now, out),
        RequestKind::OffsetDelete(req) => group_handlers::offset_delete(node, (version, correlation_id), req, &denied, now, out),
        RequestKind::Envelope(req) => forward::serve(node, version, correlation_id, req, now, attempt, out),
        RequestKind::DescribeUserScramCredentials(req) => reply!(user_handlers::describe(&b(), req)),
        RequestKind::AlterUserScramCredentials(req) => user_handlers::alter(node, version, correlation_id, req, now),
        RequestKind::DescribeCluster(req) => {
            let (controller_id, listener) = (node.controller_id(), listener());
            reply!(cluster_handlers::describe_cluster(&b(), version, req, controller_id, &listener))
        }
        RequestKind::DescribeLogDirs(req) => reply!(cluster_handlers::describe_log_dirs(&b(), req)),
        RequestKind::DescribeQuorum(req) => reply!(cluster_handlers::describe_quorum(node, version, req, now)),
        RequestKind::DescribeAcls(req) => reply!(acl_handlers::describe(&b(), version, req)),
        RequestKind::CreateAcls(req) => acl_handlers::create(node, version, correlation_id, req, now),
        RequestKind::DeleteAcls(req) => acl_handlers::delete(node, version, correlation_id, req, now),
        _ => Err(format!("API {key:?} is not supported by this broker")),
    };
    match outcome {
        // What this node answers alone (NOT_CONTROLLER) is what the client gets if no
        // controller answers the forward.
        Ok(Outcome::Reply(fallback)) if forwards => Ok(Outcome::Forward { request: request.frame, fallback }),
        other => other,
    }
}

#[cfg(test)]
mod tests;
