//! The replica fetchers: one task per leader this node follows, with its own connection —
//! epoch truncation (OffsetForLeaderEpoch, KIP-279) and then Fetch with this node's replica
//! id, appending what the leader sends. Fetches go in a KIP-227 session, as Kafka's followers'
//! do: after a full fetch, each names only the partitions whose position changed and gets only
//! those with news (`broker::fetch_session::Asking`). IO only: each round enters the node as a
//! `node::FetcherInput` (what to ask next comes back as `Action::FetchFrom`, the leader's answer
//! goes in), and what to fetch, truncate and append is the node's fetcher's decision. Failures
//! are logged, the connection dropped (the next fetch a full one) and retried after a pause.

use super::peers::{backoff, connect, fetch_request, resolve, s};
use super::{now_ms, Shared};
use crate::broker::fetch_session::{Asking, Wanted};
use crate::broker::{Action, Following, Step, Then};
use crate::node::{FetcherInput, Input};
use crate::client::{ClientError, Conn};
use crate::constants::{replica_fetch_bytes, tick_interval_ms};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ForgottenTopic};
use kafka_protocol::messages::offset_for_leader_epoch_request::{OffsetForLeaderEpochRequest, OffsetForLeaderPartition, OffsetForLeaderTopic};
use kafka_protocol::messages::{BrokerId, TopicName};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

/// Starts one fetcher per leader this node follows, as leaders appear. A fetcher idles while
/// it has nothing to follow, so there are at most as many as there are brokers.
pub(super) async fn replica_fetchers(shared: Arc<Shared>) {
    let mut started = BTreeSet::new();
    loop {
        let leaders = shared.broker().leaders_followed();
        for leader in leaders {
            if started.insert(leader) {
                tokio::spawn(replica_fetcher(shared.clone(), leader));
            }
        }
        tokio::time::sleep(Duration::from_millis(tick_interval_ms)).await;
    }
}

async fn replica_fetcher(shared: Arc<Shared>, leader: i32) {
    let me = shared.broker().config().node_id;
    let mut conn: Option<Conn> = None;
    let mut session = Asking::new();
    loop {
        let (step, _) = round(&shared, leader, FetcherInput::Next).await;
        // A round always names its step; none would be nothing to fetch.
        let step = step.unwrap_or(Step::Idle);
        if step == Step::Idle {
            conn = None;
            session.reset();
            tokio::time::sleep(Duration::from_millis(tick_interval_ms)).await;
            continue;
        }
        if conn.is_none() {
            // The endpoint is copied out and resolved after: a name lookup may take its time,
            // never under the node's lock.
            let endpoint = {
                let b = shared.broker();
                let inter = &b.config().security.inter_broker_listener;
                b.image().brokers.get(&leader).and_then(|x| x.endpoint(inter)).map(|(host, port)| (host.to_string(), port))
            };
            let addr = endpoint.map(|(host, port)| resolve(&host, port));
            let Some(Ok(addr)) = addr else {
                backoff().await;
                continue;
            };
            conn = connect(&shared, addr, &format!("replica-fetcher-{me}")).await;
        }
        let Some(c) = conn.as_mut() else { continue };
        let result = match step {
            Step::Truncate(ask) => truncate(&shared, c, me, leader, ask).await,
            Step::Fetch(following) => replicate(&shared, c, me, leader, following, &mut session).await,
            Step::Idle => Ok(Then::Continue),
        };
        match result {
            Ok(Then::Continue) => {}
            Ok(Then::BackOff) => backoff().await,
            Err(e) => {
                tracing::info!("replica fetcher from {leader}: {e}");
                conn = None;
                session.reset();
                backoff().await;
            }
        }
    }
}

/// Decides one input of `leader`'s fetcher and performs what it asks for: returns the step it
/// asks to send next (for [`FetcherInput::Next`]) and whether it asks for a pause.
async fn round(shared: &Shared, leader: i32, input: FetcherInput) -> (Option<Step>, Then) {
    let actions = shared.decide(|s| s.node.input(Input::Fetcher { leader, input }, now_ms())).await;
    let (mut step, mut then) = (None, Then::Continue);
    let mut rest = Vec::with_capacity(actions.len());
    for a in actions {
        match a {
            Action::FetchFrom { leader: l, step: s } if l == leader => step = Some(s),
            Action::FetcherBackOff { leader: l } if l == leader => then = Then::BackOff,
            other => rest.push(other),
        }
    }
    shared.perform(rest).await;
    (step, then)
}

/// Groups per-partition request entries under their topics, in first-seen order (the first
/// partition of a request is the one that may exceed its byte limit, so order matters).
fn by_topic<P, T>(entries: Vec<(Arc<str>, P)>, topic: impl Fn(&str, Vec<P>) -> T) -> Vec<T> {
    let mut groups: Vec<(Arc<str>, Vec<P>)> = Vec::new();
    for (name, p) in entries {
        match groups.iter_mut().find(|(n, _)| *n == name) {
            Some((_, ps)) => ps.push(p),
            None => groups.push((name, vec![p])),
        }
    }
    groups.into_iter().map(|(n, ps)| topic(&n, ps)).collect()
}

/// KIP-279: asks the leader where each diverging epoch ends; the fetcher cuts the local logs.
async fn truncate(shared: &Shared, conn: &mut Conn, me: i32, leader: i32, ask: Vec<(Following, i32)>) -> Result<Then, ClientError> {
    let entries = ask
        .iter()
        .map(|(f, latest)| {
            let mut p = OffsetForLeaderPartition::default();
            p.partition = f.partition;
            p.current_leader_epoch = f.leader_epoch;
            p.leader_epoch = *latest;
            (f.topic.clone(), p)
        })
        .collect();
    let topics = by_topic(entries, |name, partitions| {
        let mut t = OffsetForLeaderTopic::default();
        t.topic = TopicName(s(name));
        t.partitions = partitions;
        t
    });
    if topics.is_empty() {
        return Ok(Then::Continue);
    }
    let mut req = OffsetForLeaderEpochRequest::default();
    req.replica_id = BrokerId(me);
    req.topics = topics;
    let response = conn.send(&req).await?;
    Ok(round(shared, leader, FetcherInput::EpochAnswers { ask, response }).await.1)
}

/// One Fetch as a follower in the fetcher's session with its leader: every partition followed
/// from it in a full fetch, only those whose position changed in an incremental one; the
/// fetcher appends what the answer carries. A top-level error (the session is unknown or at
/// another epoch) makes the next fetch a full one, at once.
async fn replicate(shared: &Shared, conn: &mut Conn, me: i32, leader: i32, following: Vec<Following>, session: &mut Asking) -> Result<Then, ClientError> {
    let wanted: Vec<(Arc<str>, i32, Wanted)> = following
        .iter()
        .map(|f| (f.topic.clone(), f.partition, Wanted { fetch_offset: f.fetch_offset, log_start_offset: f.log_start_offset, leader_epoch: f.leader_epoch, max_bytes: replica_fetch_bytes }))
        .collect();
    let ask = session.next_fetch(&wanted);
    let mut named = Vec::new();
    for &i in &ask.named {
        let f = &following[i];
        let mut p = FetchPartition::default();
        p.partition = f.partition;
        p.fetch_offset = f.fetch_offset;
        p.current_leader_epoch = f.leader_epoch;
        p.last_fetched_epoch = -1;
        p.log_start_offset = f.log_start_offset;
        p.partition_max_bytes = replica_fetch_bytes;
        named.push((f.topic.clone(), p));
    }
    let topics = by_topic(named, |name, partitions| {
        let mut t = FetchTopic::default();
        t.topic = TopicName(s(name));
        t.partitions = partitions;
        t
    });
    let mut req = fetch_request(me, topics, crate::constants::fetch_bytes_max as i32);
    req.session_id = ask.session_id;
    req.session_epoch = ask.epoch;
    req.forgotten_topics_data = by_topic(ask.forgotten, |name, partitions| {
        let mut t = ForgottenTopic::default();
        t.topic = TopicName(s(name));
        t.partitions = partitions;
        t
    });
    let resp = match conn.send(&req).await {
        Ok(resp) => resp,
        Err(e) => {
            session.reset();
            return Err(e);
        }
    };
    let error = crate::kafka::error(resp.error_code);
    session.answered(error, resp.session_id);
    if let Some(code) = error {
        tracing::info!("replica fetcher from {leader}: {code:?}; the next fetch is a full one");
        return Ok(Then::Continue);
    }
    if resp.responses.is_empty() {
        return Ok(Then::Continue); // an incremental answer with no news
    }
    Ok(round(shared, leader, FetcherInput::Fetched { following, response: resp }).await.1)
}
