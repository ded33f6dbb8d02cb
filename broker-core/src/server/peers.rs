//! This node's conversations with other nodes, each a task with its own connection:
//! - the controller link: register, heartbeat, send the ISR changes leaders propose and the
//!   topics Metadata requests asked to auto-create;
//! - the metadata follower: long-polling Fetch of the controller's metadata log, applying what
//!   arrives (a replay is applied only once it has reached the log's end, so no request ever
//!   sees a half-replayed past);
//! - one replica fetcher per leader this node follows (`replica_fetch.rs`).
//!
//! IO only: every decision is the broker's or the controller's. Failures are logged, the
//! connection dropped and retried after a pause; nothing here panics or gives up.

use crate::buggify::Site;
use crate::kafka::Code;
use super::{now_ms, Shared};
use crate::broker::IsrReply;
use crate::node::Input;
use crate::client::{ClientError, Conn};
use crate::constants::{heartbeat_interval_ms_default, metadata_fetch_bytes, peer_backoff_ms, peer_request_ms_max, replica_fetch_wait_ms, tick_interval_ms};
use crate::metadata::{decode_records, metadata_topic, MetadataRecord};
use kafka_protocol::messages::alter_partition_request::{AlterPartitionRequest, PartitionData as AlterPartitionData, TopicData};
use kafka_protocol::messages::AlterPartitionResponse;
use kafka_protocol::messages::broker_heartbeat_request::BrokerHeartbeatRequest;
use kafka_protocol::messages::broker_registration_request::{BrokerRegistrationRequest, Listener};
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreateTopicsRequest};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchRequest, FetchTopic};
use kafka_protocol::messages::{BrokerId, TopicName};
use kafka_protocol::protocol::StrBytes;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;


pub(super) fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_string())
}

/// Starts the controller link, the metadata follower and the replica fetcher supervisor; on a
/// voter-only node (not a broker) the metadata follower alone, so it answers Metadata with the
/// committed cluster but never registers.
pub fn spawn(shared: Arc<Shared>) -> Vec<tokio::task::JoinHandle<()>> {
    if !shared.broker().config().broker_role {
        return vec![tokio::spawn(metadata_follower(shared))];
    }
    vec![
        tokio::spawn(controller_link(shared.clone())),
        tokio::spawn(metadata_follower(shared.clone())),
        tokio::spawn(super::replica_fetch::replica_fetchers(shared)),
    ]
}

/// `host:port` as a socket address: an IP literal, or (real builds only) a name to look up.
pub(super) fn resolve(host: &str, port: i32) -> Result<SocketAddr, String> {
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        return Ok(SocketAddr::new(ip, port as u16));
    }
    #[cfg(not(madsim))]
    {
        use std::net::ToSocketAddrs;
        if let Some(a) = (host, port as u16).to_socket_addrs().ok().and_then(|mut a| a.next()) {
            return Ok(a);
        }
    }
    Err(format!("cannot resolve {host}:{port}"))
}

/// `host:port` (a voter's address in `controller.quorum.voters`) as a socket address.
pub(super) fn resolve_addr(addr: &str) -> Result<SocketAddr, String> {
    let (host, port) = addr.rsplit_once(':').ok_or_else(|| format!("address {addr} is not host:port"))?;
    resolve(host, port.parse().map_err(|_| format!("address {addr}: bad port"))?)
}

/// The voter to ask for the active controller: the quorum leader this node knows (its own
/// voter's view, or the last one a voter named), else the next voter in turn after `tried`.
pub(super) fn controller_addr(shared: &Shared) -> Result<SocketAddr, String> {
    let voters = shared.broker().config().voters.clone();
    let known = shared.node.quorum_leader().or_else(|| shared.node.controller_hint());
    let id = match known.filter(|id| voters.contains_key(id)) {
        Some(id) => id,
        None => {
            let turn = shared.controller_turn.fetch_add(1, Ordering::Relaxed);
            *voters.keys().nth(turn % voters.len().max(1)).ok_or("controller.quorum.voters is empty")?
        }
    };
    resolve_addr(&voters[&id])
}

/// A connection to another node's listener at `addr` (a voter's CONTROLLER listener if the
/// cluster has those, else a broker's client listener), authenticated as this broker where that
/// listener is SASL (`--sasl-jaas-config`; the cluster's listeners are alike on every node).
pub(super) async fn connect_within(shared: &Shared, addr: SocketAddr, who: &str, within: Duration) -> Result<Conn, ClientError> {
    let protocol = protocol_of(shared, addr);
    let mut conn = match (protocol.is_tls(), shared.tls.as_ref().and_then(|t| t.connector.as_ref())) {
        (false, _) => Conn::connect(addr, who, within).await?,
        (true, Some(tls)) => Conn::connect_tls(addr, peer_name(shared, addr).as_deref(), who, within, tls).await?,
        (true, None) => return Err(ClientError::Protocol(format!("{addr} is a {} listener and this node has no truststore (--ssl-truststore-location)", protocol.name()))),
    };
    if protocol.is_sasl() {
        let login = shared.broker().config().security.inter_broker.clone();
        let login = login.ok_or_else(|| ClientError::Protocol(format!("{addr} is a {} listener and this node has no login (--sasl-jaas-config)", protocol.name())))?;
        conn.authenticate(&login, &super::sasl::nonce()).await?;
    }
    Ok(conn)
}

/// The host name `addr` was given by (a voter in `controller.quorum.voters`, or a broker's
/// registered address), which its certificate must carry as Kafka's default
/// `ssl.endpoint.identification.algorithm=https` checks; None when it was named by IP address
/// (then the certificate must carry the IP).
fn peer_name(shared: &Shared, addr: SocketAddr) -> Option<String> {
    let named: Vec<String> = {
        let broker = shared.broker();
        let voters = broker.config().voters.values().cloned();
        let inter = &broker.config().security.inter_broker_listener;
        let brokers = broker.image().brokers.values().filter_map(|b| b.endpoint(inter)).map(|(host, port)| format!("{host}:{port}"));
        voters.chain(brokers).collect()
    };
    let host = named.into_iter().find(|n| resolve_addr(n).ok() == Some(addr))?.rsplit_once(':')?.0.to_string();
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    bare.parse::<std::net::IpAddr>().is_err().then(|| bare.to_string())
}

/// The protocol of the listener at `addr`: a voter's CONTROLLER listener, else a broker's
/// client listener (the cluster's nodes are configured alike).
fn protocol_of(shared: &Shared, addr: SocketAddr) -> crate::security::Protocol {
    let (listener, controller, inter_broker) = {
        let broker = shared.broker();
        let s = &broker.config().security;
        (s.controller_listener.is_some(), s.controller_protocol, s.inter_broker_protocol)
    };
    if listener && voter_at(shared, addr).is_some() { controller } else { inter_broker }
}

/// The voter `controller.quorum.voters` names at `addr`, if any. The names are copied out and
/// resolved after: a name lookup may take its time, never under the node's lock.
fn voter_at(shared: &Shared, addr: SocketAddr) -> Option<i32> {
    let voters = shared.broker().config().voters.clone();
    voters.iter().find(|(_, a)| resolve_addr(a).ok() == Some(addr)).map(|(id, _)| *id)
}

pub(super) async fn connect(shared: &Shared, addr: SocketAddr, who: &str) -> Option<Conn> {
    match connect_within(shared, addr, who, Duration::from_millis(peer_request_ms_max)).await {
        Ok(c) => Some(c),
        Err(e) => {
            tracing::debug!("{who}: connecting to {addr}: {e}");
            backoff().await;
            None
        }
    }
}

pub(super) async fn backoff() {
    tokio::time::sleep(Duration::from_millis(peer_backoff_ms)).await;
}

pub(super) fn kafka(code: i16) -> Result<(), ClientError> {
    if code == 0 { Ok(()) } else { Err(ClientError::kafka(code, String::new())) }
}

// ---- controller link ------------------------------------------------------------------------

/// Controlled shutdown: asks the controller to fence this broker now, so its leaderships move
/// before it stops (instead of after a session timeout). Best effort, bounded by
/// `peer_request_ms_max`; a broker that never registered has nothing to hand over, and the
/// controller's own node has nobody to hand over to.
pub async fn controlled_shutdown(shared: &Shared) {
    if !shared.broker().config().broker_role {
        return; // never registered: nothing to fence
    }
    // From what the quorum last published: a quorum decision may hold its lock across a sync.
    if shared.node.quorum_view().active_epoch.is_some() {
        // The active controller stops with this node (its listener is already closed): the
        // next one fences it when its session ends, or nobody is left to.
        return;
    }
    let Some(epoch) = *shared.broker_epoch.lock().unwrap_or_else(|p| p.into_inner()) else { return };
    let Ok(addr) = controller_addr(shared) else { return };
    let me = shared.broker().config().node_id;
    let attempt = async {
        let mut conn = connect_within(shared, addr, "controlled-shutdown", Duration::from_millis(peer_request_ms_max)).await?;
        let mut hb = BrokerHeartbeatRequest::default();
        hb.broker_id = BrokerId(me);
        hb.broker_epoch = epoch;
        hb.current_metadata_offset = shared.broker().image().offset;
        hb.want_shut_down = true;
        let reply = conn.send(&hb).await?;
        kafka(reply.error_code)
    };
    match attempt.await {
        Ok(()) => tracing::info!("controlled shutdown: the controller moved this broker's leaderships"),
        Err(e) => tracing::warn!("controlled shutdown: {e}; leaderships move when the session expires"),
    }
}

async fn controller_link(shared: Arc<Shared>) {
    loop {
        let addr = match controller_addr(&shared) {
            Ok(a) => a,
            Err(e) => {
                tracing::error!("controller link: {e}");
                tokio::time::sleep(Duration::from_millis(heartbeat_interval_ms_default)).await;
                continue;
            }
        };
        let Some(mut conn) = connect(&shared, addr, "controller-link").await else { continue };
        if let Err(e) = session(&shared, &mut conn).await {
            // Only the controller saying the epoch is stale means registering again: a lost
            // connection (or a restarted controller) keeps the epoch, and with it the ISRs.
            // Whoever was named leader did not answer as the controller: ask around again.
            shared.node.set_controller_hint(None);
            if matches!(e, ClientError::Kafka { code: Code::StaleBrokerEpoch, .. }) {
                tracing::info!("controller link to {addr}: {e}; registering again");
                *shared.broker_epoch.lock().unwrap_or_else(|p| p.into_inner()) = None;
            } else {
                tracing::info!("controller link to {addr}: {e}; reconnecting");
            }
            backoff().await;
        }
    }
}

/// Registers this process (a new broker epoch) and tells the broker, which drops its roles
/// until the metadata log shows the registration.
async fn register(shared: &Shared, conn: &mut Conn, c: &crate::broker::BrokerConfig) -> Result<i64, ClientError> {
    let mut reg = BrokerRegistrationRequest::default();
    reg.broker_id = BrokerId(c.node_id);
    reg.cluster_id = s(&c.cluster_id);
    let protocol_of = |name: &str| c.security.listeners.iter().find(|l| l.name == name).map_or(c.security.inter_broker_protocol, |l| l.protocol);
    reg.listeners = c
        .endpoints()
        .into_iter()
        .map(|e| {
            let mut listener = Listener::default();
            listener.security_protocol = protocol_of(&e.name).id();
            (listener.name, listener.host, listener.port) = (s(&e.name), s(&e.host), e.port as u16);
            listener
        })
        .collect();
    reg.previous_broker_epoch = shared.broker().take_previous_epoch();
    let resp = conn.send(&reg).await?;
    kafka(resp.error_code)?;
    let epoch = resp.broker_epoch;
    *shared.broker_epoch.lock().unwrap_or_else(|p| p.into_inner()) = Some(epoch);
    tracing::info!("registered with the controller: broker epoch {epoch}");
    let actions = shared.decide(|s| s.node.input(Input::Registered { epoch }, now_ms())).await;
    shared.perform(actions).await;
    shared.changed();
    Ok(epoch)
}

/// Heartbeats (registering first if this process has no epoch yet) and forwards work until
/// something fails.
async fn session(shared: &Shared, conn: &mut Conn) -> Result<(), ClientError> {
    let c = shared.broker().config().clone();
    let known = *shared.broker_epoch.lock().unwrap_or_else(|p| p.into_inner());
    let mut epoch = match known {
        Some(epoch) => epoch,
        None => register(shared, conn, &c).await?,
    };
    let mut next_heartbeat = now_ms();
    let mut fenced = true;
    loop {
        if shared.reregister.swap(false, Ordering::Relaxed) {
            // A log it led failed: give up every leadership by registering anew; it rejoins
            // as a follower (after epoch truncation) once the log is reopened.
            tracing::warn!("a partition log this broker led went offline: registering again to hand leaderships over");
            match register(shared, conn, &c).await {
                Ok(new_epoch) => (epoch, fenced) = (new_epoch, true),
                Err(e) => {
                    shared.reregister.store(true, Ordering::Relaxed); // try again on the next session
                    return Err(e);
                }
            }
        }
        let now = now_ms();
        let applied = shared.broker().image().offset;
        // A fenced broker that has caught up with its registration says so at once: that is
        // what unfences it, and clients wait for it at startup.
        if now >= next_heartbeat || (fenced && applied >= epoch) {
            let mut hb = BrokerHeartbeatRequest::default();
            hb.broker_id = BrokerId(c.node_id);
            hb.broker_epoch = epoch;
            hb.current_metadata_offset = applied;
            let reply = conn.send(&hb).await?;
            kafka(reply.error_code)?;
            fenced = reply.is_fenced;
            next_heartbeat = now + c.heartbeat_interval_ms;
        }
        alter_partitions(shared, conn, c.node_id, epoch).await?;
        auto_create(shared, conn).await?;
        tokio::time::sleep(Duration::from_millis(tick_interval_ms.min(c.heartbeat_interval_ms))).await;
    }
}

/// Sends the ISR changes partition leaders propose, and hands what it heard of each back to
/// the node, which reads it (`Broker::isr_reply`): after a failure, the rest of the round is
/// not sent.
async fn alter_partitions(shared: &Shared, conn: &mut Conn, me: i32, epoch: i64) -> Result<(), ClientError> {
    let proposals = {
        let mut b = shared.broker();
        // BUGGIFY: this round's proposals take a replica-lag window a fifth as long.
        let window = b.config().replica_lag_ms_max;
        let lag = if b.config().buggify.fires(Site::ShortLag) { window / 5 } else { window };
        b.isr_proposals_within(now_ms(), lag)
    };
    let mut failure = None;
    for (name, p, prop) in proposals {
        let topic_id = shared.broker().image().topics.get(&name).map(|t| uuid::Uuid::from_bytes(t.id));
        let reply = match failure {
            Some(_) => IsrReply::NotSent,
            None => match topic_id {
                None => IsrReply::NoTopic,
                Some(topic_id) => match conn.send(&alter_partition(me, epoch, topic_id, p, &prop)).await {
                    Ok(_) if shared.broker().config().buggify.fires(Site::IsrAnswerDropped) => {
                        // BUGGIFY: the controller answered (perhaps committed it); we never hear it.
                        failure = Some(ClientError::Timeout(peer_request_ms_max));
                        IsrReply::NoAnswer
                    }
                    Ok(answer) => heard(shared, &name, p, &prop.isr, &answer),
                    Err(e) => {
                        // The request may have reached the controller and been committed.
                        failure = Some(e);
                        IsrReply::NoAnswer
                    }
                },
            },
        };
        let answered = matches!(reply, IsrReply::Answered(_));
        // Under the gate like every decision: its answers (a commit this ISR change replicated)
        // must not overtake the decision that handed out their tickets.
        let actions = shared.decide(|s| s.node.input(Input::IsrReply { topic: name, partition: p, reply }, now_ms())).await;
        shared.perform(actions).await;
        if answered {
            shared.changed();
        }
    }
    failure.map_or(Ok(()), Err)
}

/// The AlterPartition request proposing `prop` for partition `p` of `topic_id`.
fn alter_partition(me: i32, epoch: i64, topic_id: uuid::Uuid, p: i32, prop: &crate::replication::IsrProposal) -> AlterPartitionRequest {
    let mut req = AlterPartitionRequest::default();
    req.broker_id = BrokerId(me);
    req.broker_epoch = epoch;
    let mut part = AlterPartitionData::default();
    part.partition_index = p;
    part.leader_epoch = prop.leader_epoch;
    part.partition_epoch = prop.partition_epoch;
    part.new_isr_with_epochs = prop
        .isr
        .iter()
        .zip(&prop.epochs)
        .map(|(&b, &e)| {
            let mut member = kafka_protocol::messages::alter_partition_request::BrokerState::default();
            member.broker_id = BrokerId(b);
            member.broker_epoch = e;
            member
        })
        .collect();
    let mut topic = TopicData::default();
    topic.topic_id = topic_id;
    topic.partitions = vec![part];
    req.topics = vec![topic];
    req
}

/// What the controller's answer to one AlterPartition says: its error code, and on success
/// the partition's new state.
fn heard(shared: &Shared, name: &str, p: i32, isr: &[i32], answer: &AlterPartitionResponse) -> IsrReply {
    let part = answer.topics.first().and_then(|t| t.partitions.first());
    let code = if answer.error_code != 0 { answer.error_code } else { part.map_or(-1, |x| x.error_code) };
    // BUGGIFY: the change is committed, and the controller says its log failed.
    let code = if code == 0 && shared.broker().config().buggify.fires(Site::IsrAnswerStorageError) { Code::KafkaStorageError.code() } else { code };
    let state = part.filter(|_| code == 0).map(|x| crate::metadata::PartitionInfo {
        replicas: Vec::new(),
        isr: x.isr.iter().map(|b| b.0).collect(),
        leader: x.leader_id.0,
        leader_epoch: x.leader_epoch,
        partition_epoch: x.partition_epoch,
        // AlterPartition's answer carries no ELR; the leader takes only the ISR and epochs.
        elr: Vec::new(),
        last_known_elr: Vec::new(),
        adding: Vec::new(),
        removing: Vec::new(),
    });
    tracing::info!("{name}-{p}: ISR change to {isr:?}: {}", if code == 0 { "committed".to_string() } else { format!("error {code}") });
    // A code of 0 comes with its partition (a missing one is -1 above).
    IsrReply::Answered(state.ok_or_else(|| crate::kafka::error(code)))
}

/// Asks the controller to create the topics Metadata requests wanted auto-created.
async fn auto_create(shared: &Shared, conn: &mut Conn) -> Result<(), ClientError> {
    use crate::group::{offsets_topic, offsets_topic_spec};
    use kafka_protocol::messages::create_topics_request::CreatableTopicConfig;
    let names = shared.broker().auto_create_requests();
    if names.is_empty() {
        return Ok(());
    }
    let mut req = CreateTopicsRequest::default();
    req.timeout_ms = peer_request_ms_max as i32;
    req.topics = names
        .iter()
        .map(|n| {
            let mut t = CreatableTopic::default();
            t.name = TopicName(s(n));
            (t.num_partitions, t.replication_factor) = (-1, -1);
            // The coordinators' state topics: Kafka's offsets.topic.* and
            // transaction.state.log.* settings, the replication factor capped by the brokers
            // present (Kafka would refuse until enough register).
            let b = shared.broker();
            let present = b.image().brokers.values().filter(|x| !x.fenced).count();
            let spec = match n.as_str() {
                offsets_topic => {
                    let (partitions, rf, configs) = offsets_topic_spec(&b.config().groups, present);
                    Some((partitions, rf, configs.into_iter().map(|(k, v)| (k, v.to_string())).collect()))
                }
                crate::txn::transaction_state_topic => Some(crate::txn::state_topic_spec(&b.config().txns, present)),
                _ => None,
            };
            if let Some((partitions, rf, configs)) = spec {
                (t.num_partitions, t.replication_factor) = (partitions, rf);
                t.configs = configs.into_iter().map(|(k, v)| CreatableTopicConfig::default().with_name(s(k)).with_value(Some(s(&v)))).collect();
            }
            t
        })
        .collect();
    let resp = conn.send(&req).await?;
    for t in resp.topics {
        // TOPIC_ALREADY_EXISTS: someone else created it; it arrives with the metadata.
        if t.error_code != 0 && t.error_code != Code::TopicAlreadyExists.code() {
            tracing::warn!("auto-creating {}: error {} {}", t.name.0.as_str(), t.error_code, t.error_message.as_ref().map_or("", |m| m.as_str()));
            let actions = shared.decide(|s| s.node.input(Input::AutoCreateRefused(t.name.0.to_string()), now_ms())).await;
            shared.perform(actions).await;
        }
    }
    Ok(())
}

// ---- metadata follower ----------------------------------------------------------------------

async fn metadata_follower(shared: Arc<Shared>) {
    let me = shared.broker().config().node_id;
    // Records fetched but not applied yet: a replay is applied whole, at the log's end.
    let mut pending = Vec::new();
    loop {
        let addr = match controller_addr(&shared) {
            Ok(a) => a,
            Err(_) => {
                backoff().await;
                continue;
            }
        };
        let Some(mut conn) = connect(&shared, addr, "metadata-follower").await else { continue };
        loop {
            let next = pending.last().map_or_else(|| shared.broker().image().offset + 1, |(o, _)| o + 1);
            match fetch_metadata(&shared, &mut conn, me, next).await {
                Ok((records, end, Some(start))) => {
                    // Below the log start: the controller sent its snapshot instead. It replaces
                    // this broker's image (topics it does not name are gone), then the log from
                    // its end follows; applied together once the end is reached, like a replay.
                    let topics: Vec<String> = shared.broker().image().topics.keys().cloned().collect();
                    pending = topics.into_iter().map(|name| (start - 1, MetadataRecord::RemoveTopic { name })).collect();
                    pending.extend(records.into_iter().map(|(_, r)| (start - 1, r)));
                    // Takes the offset even when the snapshot holds nothing (Image ignores it).
                    pending.push((start - 1, MetadataRecord::LeaderChange { leader: -1, epoch: -1 }));
                    if start >= end {
                        let run = std::mem::take(&mut pending);
                        let actions = shared.decide(|s| s.node.input(Input::Metadata(run), now_ms())).await;
                        shared.perform(actions).await;
                        shared.changed();
                    }
                }
                Ok((records, end, None)) => {
                    pending.extend(records.into_iter().filter(|(o, _)| *o >= next));
                    let reached = pending.last().map_or(next, |(o, _)| o + 1) >= end;
                    if reached && !pending.is_empty() {
                        let late = shared.broker().config().buggify.draw(Site::MetadataLate);
                        if let Some(n) = late {
                            // BUGGIFY: these records reach this broker late.
                            tokio::time::sleep(Duration::from_millis(50 + n % 951)).await;
                        }
                        let run = std::mem::take(&mut pending);
                        let actions = shared.decide(|s| s.node.input(Input::Metadata(run), now_ms())).await;
                        shared.perform(actions).await;
                        shared.changed();
                    }
                }
                Err(e) => {
                    tracing::info!("metadata follower: {e}");
                    if !matches!(e, ClientError::Kafka { .. }) {
                        shared.node.set_controller_hint(None); // that voter is gone: ask around
                    }
                    backoff().await;
                    break;
                }
            }
        }
    }
}

/// One long-polling fetch of the metadata log: its records from `offset`, its end, and, when
/// `offset` was below the log start, the end of the snapshot whose records these are. The
/// voter that answers is the quorum leader (remembered for the controller link), or names the
/// one it knows with its refusal.
async fn fetch_metadata(shared: &Shared, conn: &mut Conn, me: i32, offset: i64) -> Result<(Vec<(i64, MetadataRecord)>, i64, Option<i64>), ClientError> {
    let mut p = FetchPartition::default();
    p.partition = 0;
    p.fetch_offset = offset;
    p.partition_max_bytes = metadata_fetch_bytes;
    p.current_leader_epoch = -1;
    p.last_fetched_epoch = -1;
    let mut t = FetchTopic::default();
    t.topic = TopicName(s(metadata_topic));
    t.partitions = vec![p];
    let req = fetch_request(me, vec![t], metadata_fetch_bytes);
    let resp = conn.send(&req).await?;
    let pd = resp.responses.first().and_then(|t| t.partitions.first()).ok_or_else(|| ClientError::Protocol("empty metadata fetch response".into()))?;
    if pd.error_code != 0 {
        shared.node.set_controller_hint(Some(pd.current_leader.leader_id.0).filter(|&l| l >= 0));
    }
    kafka(pd.error_code)?;
    let answered_by = voter_at(shared, conn.addr());
    if answered_by.is_some() {
        shared.node.set_controller_hint(answered_by);
    }
    let records = match &pd.records {
        Some(bytes) if !bytes.is_empty() => decode_records(bytes).map_err(ClientError::Protocol)?,
        _ => Vec::new(),
    };
    Ok((records, pd.high_watermark, Some(pd.log_start_offset).filter(|&start| start > offset)))
}

pub(super) fn fetch_request(me: i32, topics: Vec<FetchTopic>, max_bytes: i32) -> FetchRequest {
    let mut req = FetchRequest::default();
    req.replica_id = BrokerId(me);
    req.max_wait_ms = replica_fetch_wait_ms as i32;
    req.min_bytes = 1;
    req.max_bytes = max_bytes;
    req.isolation_level = 0;
    req.session_epoch = -1;
    req.topics = topics;
    req
}
