//! The operator's questions about consumer groups, asked as kafka-consumer-groups.sh asks them:
//! which groups exist (ListGroups to every broker, since each answers only for the groups it
//! coordinates), and where one group stands (FindCoordinator, then ConsumerGroupDescribe for a
//! KIP-848 group, ShareGroupDescribe for a KIP-932 share group or DescribeGroups for a classic
//! one, and OffsetFetch (DescribeShareGroupOffsets for a share group), to its coordinator,
//! then ListOffsets "latest" to each partition's leader for the log end).
//! Answers are plain structs; formatting is the caller's.
//!
//! It must never change what it looks at: no JoinGroup, no commit, and its Metadata requests
//! ask with auto-creation off, so describing a group whose topic was deleted does not bring the
//! topic back. Coordinator errors that pass on their own are retried a bounded number of times
//! ([`crate::constants::admin_coordinator_attempts_max`]); every other error is returned.

use super::assignor::wire::decode_assignment;
use super::assignor::TopicPartitions;
use super::cluster::Cluster;
use super::ClientError;
use crate::constants::{admin_backoff_ms_first, admin_backoff_ms_max, admin_coordinator_attempts_max};
use crate::kafka::{list_offsets, Code};
use kafka_protocol::messages::consumer_group_describe_request::ConsumerGroupDescribeRequest;
use kafka_protocol::messages::describe_groups_request::DescribeGroupsRequest;
use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_protocol::messages::list_groups_request::ListGroupsRequest;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::{MetadataRequest, MetadataRequestTopic};
use kafka_protocol::messages::offset_fetch_request::{OffsetFetchRequest, OffsetFetchRequestGroup};
use kafka_protocol::messages::share_group_describe_request::ShareGroupDescribeRequest;
use kafka_protocol::messages::{BrokerId, GroupId, TopicName};
use kafka_protocol::protocol::StrBytes;
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::Duration;

/// The client id these requests carry (brokers log it).
const client_id: &str = "seedlog-groups";

/// The protocol type of groups whose assignments are the consumer protocol's bytes.
pub const consumer_protocol_type: &str = "consumer";

/// The protocol type of KIP-932 share groups, as ListGroups reports it.
pub const share_protocol_type: &str = "share";

/// A broker as Metadata or FindCoordinator names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerAddr {
    pub id: i32,
    pub host: String,
    pub port: i32,
}

impl std::fmt::Display for BrokerAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}:{})", self.id, self.host, self.port)
    }
}

/// One group as ListGroups reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedGroup {
    pub group_id: String,
    pub state: String,
    pub protocol_type: String,
    /// The broker that reported it (its coordinator).
    pub coordinator: i32,
}

/// Every group the brokers reported, and the brokers that could not be asked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupListing {
    /// Sorted by group id, one entry per id.
    pub groups: Vec<ListedGroup>,
    /// Brokers that did not answer: the groups they coordinate are missing from `groups`.
    pub failures: Vec<(BrokerAddr, ClientError)>,
}

/// What a member was assigned, as far as it can be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemberAssignment {
    /// No assignment to read: the group is not Stable, or not a consumer group (other
    /// protocol types give the coordinator bytes it cannot interpret).
    Unknown,
    /// The consumer protocol's assignment, decoded.
    Partitions(TopicPartitions),
    /// The bytes are not a consumer protocol assignment; why.
    Undecodable(String),
}

/// One member of a group (DescribeGroups).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberDescription {
    pub member_id: String,
    /// KIP-345 `group.instance.id` of a static member.
    pub instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub assignment: MemberAssignment,
    /// A KIP-848 member's epoch and target assignment (None: a classic member).
    pub kip848: Option<(i32, TopicPartitions)>,
}

/// One partition the group has a committed offset for, or a member is assigned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionOffsets {
    pub topic: String,
    pub partition: i32,
    /// The group's committed offset; None if it has none.
    pub committed: Option<i64>,
    /// The partition's high watermark, or why it could not be learned.
    pub log_end: Result<i64, ClientError>,
    /// The member assigned this partition, if any: (member id, client id).
    pub owner: Option<(String, String)>,
}

impl PartitionOffsets {
    /// Records the group has yet to consume (negative if it committed past the end, which a
    /// truncated log can cause); None unless both offsets are known.
    pub fn lag(&self) -> Option<i64> {
        Some(*self.log_end.as_ref().ok()? - self.committed?)
    }
}

/// Where one group stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDescription {
    pub group_id: String,
    pub coordinator: BrokerAddr,
    /// Kafka's state name; "Dead" for a group the coordinator does not know.
    pub state: String,
    pub protocol_type: String,
    /// The chosen assignor while Stable, else empty.
    pub protocol: String,
    pub members: Vec<MemberDescription>,
    /// Sorted by topic, then partition.
    pub partitions: Vec<PartitionOffsets>,
    /// A KIP-848 group's epoch and the epoch of its target assignment (None: a classic group).
    pub epochs: Option<(i32, i32)>,
}

impl GroupDescription {
    /// Nothing to show: no members and no committed offset (an unknown group reads as Dead
    /// with neither, so both cases look the same to the coordinator's answers). A share group
    /// commits no offsets; one its coordinator described exists, even empty.
    pub fn is_unknown(&self) -> bool {
        self.members.is_empty() && self.partitions.iter().all(|p| p.committed.is_none()) && self.protocol_type != share_protocol_type
    }
}

/// `host:port` to an address (the first one it resolves to).
pub async fn resolve(host_port: &str) -> Result<SocketAddr, ClientError> {
    let io = |reason: String| ClientError::Io { addr: host_port.to_string(), reason };
    tokio::net::lookup_host(host_port).await.map_err(|e| io(e.to_string()))?.next().ok_or_else(|| io("resolves to no address".into()))
}

async fn broker_socket(b: &BrokerAddr) -> Result<SocketAddr, ClientError> {
    resolve(&format!("{}:{}", b.host, b.port)).await
}

/// Whether `code` is a coordinator condition that passes on its own (retried): the offsets
/// topic is being created or has no leader, a new coordinator is loading, or it moved.
fn coordinator_transient(code: Code) -> bool {
    matches!(code, Code::CoordinatorNotAvailable | Code::CoordinatorLoadInProgress | Code::NotCoordinator)
}

/// The pauses between attempts at a coordinator: doubling from
/// [`admin_backoff_ms_first`] up to [`admin_backoff_ms_max`], at most
/// [`admin_coordinator_attempts_max`] attempts.
pub(super) struct Backoff {
    tried: u32,
    next_ms: u64,
}

impl Backoff {
    pub(super) fn new() -> Backoff {
        Backoff { tried: 1, next_ms: admin_backoff_ms_first }
    }

    /// After attempt `what` failed with `e`: waits and returns Ok (try again) if `e` is a
    /// transient coordinator condition and attempts remain; else the error to give up with.
    pub(super) async fn again(&mut self, what: &str, e: ClientError) -> Result<(), ClientError> {
        match e {
            ClientError::Kafka { code, message } if coordinator_transient(code) => {
                if self.tried >= admin_coordinator_attempts_max {
                    return Err(ClientError::Kafka { code, message: format!("{what}: gave up after {} attempts: {message}", self.tried) });
                }
                tokio::time::sleep(Duration::from_millis(self.next_ms)).await;
                self.next_ms = (self.next_ms * 2).min(admin_backoff_ms_max);
                self.tried += 1;
                Ok(())
            }
            e => Err(e),
        }
    }
}

/// Every group in the cluster: the brokers from Metadata at `bootstrap`, then ListGroups to
/// each. A broker that cannot be asked is listed in [`GroupListing::failures`], not an error.
pub async fn list_groups(bootstrap: &str, timeout: Duration) -> Result<GroupListing, ClientError> {
    let mut cluster = Cluster::new(vec![resolve(bootstrap).await?], client_id, timeout);
    let (brokers, _) = metadata(&mut cluster, &[]).await?;
    let mut listing = GroupListing::default();
    let mut seen = BTreeSet::new();
    for b in brokers.values() {
        let mut backoff = Backoff::new();
        let listed = loop {
            match list_on(&mut cluster, b).await {
                Err(e) => match backoff.again(&format!("ListGroups to broker {b}"), e).await {
                    Ok(()) => continue,
                    Err(e) => break Err(e),
                },
                ok => break ok,
            }
        };
        match listed {
            // While a group's coordinator moves, the old and the new one may both report it.
            Ok(groups) => listing.groups.extend(groups.into_iter().filter(|g| seen.insert(g.group_id.clone()))),
            Err(e) => listing.failures.push((b.clone(), e)),
        }
    }
    listing.groups.sort_by(|a, b| a.group_id.cmp(&b.group_id));
    Ok(listing)
}

async fn list_on(cluster: &mut Cluster, b: &BrokerAddr) -> Result<Vec<ListedGroup>, ClientError> {
    let addr = broker_socket(b).await?;
    let resp = send(cluster, addr, &ListGroupsRequest::default()).await?;
    if resp.error_code != 0 {
        return Err(ClientError::kafka(resp.error_code, "ListGroups"));
    }
    Ok(resp
        .groups
        .into_iter()
        .map(|g| ListedGroup { group_id: g.group_id.0.to_string(), state: g.group_state.to_string(), protocol_type: g.protocol_type.to_string(), coordinator: b.id })
        .collect())
}

/// Sends `req` on the pooled connection to `addr`, forgetting the connection if it failed.
pub(super) async fn send<R: kafka_protocol::protocol::Request<Response: 'static>>(cluster: &mut Cluster, addr: SocketAddr, req: &R) -> Result<R::Response, ClientError> {
    let sent = match cluster.conn(addr).await {
        Ok(conn) => conn.send(req).await,
        Err(e) => Err(e),
    };
    if sent.is_err() {
        cluster.drop_conn(addr);
    }
    sent
}

/// Leaders by partition, from Metadata.
type Leaders = BTreeMap<(String, i32), Result<i32, ClientError>>;

/// The brokers, and the leaders of `topics`' partitions (a topic Metadata refuses maps its
/// error to partition -1), asked of the bootstrap broker without creating any topic.
async fn metadata(cluster: &mut Cluster, topics: &[String]) -> Result<(BTreeMap<i32, BrokerAddr>, Leaders), ClientError> {
    let addr = cluster.any_broker();
    let req = MetadataRequest::default()
        .with_topics(Some(topics.iter().map(|t| MetadataRequestTopic::default().with_name(Some(TopicName(StrBytes::from_string(t.clone()))))).collect()))
        .with_allow_auto_topic_creation(false);
    let resp = send(cluster, addr, &req).await?;
    let brokers = resp.brokers.iter().map(|b| (b.node_id.0, BrokerAddr { id: b.node_id.0, host: b.host.to_string(), port: b.port })).collect();
    let mut leaders = Leaders::new();
    for t in resp.topics {
        let name = t.name.map_or(String::new(), |n| n.0.to_string());
        if t.error_code != 0 {
            leaders.insert((name.clone(), -1), Err(ClientError::kafka(t.error_code, format!("metadata for {name}"))));
            continue;
        }
        for p in t.partitions {
            let leader = match p.error_code {
                0 => Ok(p.leader_id.0),
                code => Err(ClientError::kafka(code, format!("metadata for {name}-{}", p.partition_index))),
            };
            leaders.insert((name.clone(), p.partition_index), leader);
        }
    }
    Ok((brokers, leaders))
}

/// Where `group` stands: its coordinator's view (state, members, assignments, committed offsets)
/// and each partition's log end. A group the coordinator does not know comes back as Dead with
/// no members and no offsets ([`GroupDescription::is_unknown`]).
pub async fn describe_group(bootstrap: &str, group: &str, timeout: Duration) -> Result<GroupDescription, ClientError> {
    let mut cluster = Cluster::new(vec![resolve(bootstrap).await?], client_id, timeout);
    let mut backoff = Backoff::new();
    let (mut d, committed) = loop {
        match coordinator_view(&mut cluster, group).await {
            Ok(view) => break view,
            Err(e) => backoff.again(&format!("group {group}"), e).await?,
        }
    };
    let mut owners = BTreeMap::new();
    for m in &d.members {
        if let MemberAssignment::Partitions(tps) = &m.assignment {
            for (t, ps) in tps {
                for p in ps {
                    owners.insert((t.clone(), *p), (m.member_id.clone(), m.client_id.clone()));
                }
            }
        }
    }
    // Assigned partitions without a commit are shown too, as kafka-consumer-groups.sh does.
    let mut rows = committed;
    for tp in owners.keys() {
        rows.entry(tp.clone()).or_insert(None);
    }
    let log_ends = log_ends(&mut cluster, rows.keys().cloned().collect()).await?;
    d.partitions = rows
        .into_iter()
        .map(|((topic, partition), committed)| {
            let log_end = log_ends.get(&(topic.clone(), partition)).cloned().unwrap_or_else(|| Err(ClientError::Protocol("no ListOffsets answer".into())));
            let owner = owners.remove(&(topic.clone(), partition));
            PartitionOffsets { topic, partition, committed, log_end, owner }
        })
        .collect();
    Ok(d)
}

/// The committed offset of each partition (None: the coordinator answered -1, no offset).
type Committed = BTreeMap<(String, i32), Option<i64>>;

/// FindCoordinator, then DescribeGroups and OffsetFetch to the coordinator: one attempt. The
/// description's `partitions` are left empty; the committed offsets come beside it.
async fn coordinator_view(cluster: &mut Cluster, group: &str) -> Result<(GroupDescription, Committed), ClientError> {
    let bootstrap = cluster.any_broker();
    let req = FindCoordinatorRequest::default().with_key_type(0).with_coordinator_keys(vec![StrBytes::from_string(group.to_string())]);
    let found = send(cluster, bootstrap, &req).await?;
    let c = found.coordinators.into_iter().next().ok_or_else(|| ClientError::Protocol("FindCoordinator answered no coordinator".into()))?;
    if c.error_code != 0 {
        let why = c.error_message.map_or(String::new(), |m| m.to_string());
        return Err(ClientError::kafka(c.error_code, format!("FindCoordinator: {why}")));
    }
    let coordinator = BrokerAddr { id: c.node_id.0, host: c.host.to_string(), port: c.port };
    // "Connection refused" alone does not say which broker the operator should look at.
    let at_coordinator = |e: ClientError| match e {
        ClientError::Io { addr, reason } => ClientError::Io { addr, reason: format!("{reason} (broker {coordinator}, the coordinator of group {group})") },
        e => e,
    };
    let addr = broker_socket(&coordinator).await.map_err(at_coordinator)?;

    let found = match consumer_group(cluster, addr, group).await.map_err(at_coordinator)? {
        Some(found) => Some(found),
        None => share_group(cluster, addr, group).await.map_err(at_coordinator)?,
    };
    let (state, protocol_type, protocol, members, epochs) = match found {
        Some(found) => found,
        None => classic_group(cluster, addr, group, &coordinator).await.map_err(at_coordinator)?,
    };

    // A share group commits no offsets: its share-partitions' start offsets stand for them.
    if protocol_type == share_protocol_type {
        let committed = super::share_offsets::started(cluster, addr, group).await.map_err(at_coordinator)?;
        return Ok((GroupDescription { group_id: group.to_string(), coordinator, state, protocol_type, protocol, members, partitions: Vec::new(), epochs }, committed));
    }
    // Null topics: every offset the group committed.
    let req = OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default().with_group_id(GroupId(StrBytes::from_string(group.to_string()))).with_topics(None)]);
    let fetched = send(cluster, addr, &req).await.map_err(at_coordinator)?;
    let og = fetched.groups.into_iter().find(|x| x.group_id.0.as_str() == group).ok_or_else(|| ClientError::Protocol(format!("OffsetFetch did not answer for {group}")))?;
    if og.error_code != 0 {
        return Err(ClientError::kafka(og.error_code, format!("OffsetFetch to coordinator {coordinator}")));
    }
    let mut committed = Committed::new();
    for t in og.topics {
        for p in t.partitions {
            if p.error_code != 0 {
                return Err(ClientError::kafka(p.error_code, format!("OffsetFetch for {}-{}", t.name.0.as_str(), p.partition_index)));
            }
            committed.insert((t.name.0.to_string(), p.partition_index), (p.committed_offset >= 0).then_some(p.committed_offset));
        }
    }
    let d = GroupDescription { group_id: group.to_string(), coordinator, state, protocol_type, protocol, members, partitions: Vec::new(), epochs };
    Ok((d, committed))
}

/// A group as described: state, protocol type, assignor, members, KIP-848 epochs.
type Described = (String, String, String, Vec<MemberDescription>, Option<(i32, i32)>);

/// Whether a describe of one kind of group answered `code` for a group of that kind (Ok(true))
/// or for another kind (Ok(false): asked as the next kind). The coordinator still loading
/// (after a restart) or moving is an error for the caller's backoff, never "another kind".
fn of_this_kind(code: i16, api: &str, group: &str) -> Result<bool, ClientError> {
    match crate::kafka::error(code) {
        Some(c) if coordinator_transient(c) => Err(ClientError::kafka(code, format!("{api} of {group}"))),
        _ => Ok(code == 0),
    }
}

/// ConsumerGroupDescribe: None when the group is not a KIP-848 group (GROUP_ID_NOT_FOUND) or
/// the broker does not serve the API (a broker before Kafka 4).
async fn consumer_group(cluster: &mut Cluster, addr: SocketAddr, group: &str) -> Result<Option<Described>, ClientError> {
    let req = ConsumerGroupDescribeRequest::default().with_group_ids(vec![GroupId(StrBytes::from_string(group.to_string()))]);
    let g = match send(cluster, addr, &req).await {
        Ok(r) => r.groups.into_iter().find(|g| g.group_id.0.as_str() == group),
        Err(e @ ClientError::Io { .. }) => return Err(e),
        Err(_) => None,
    };
    let Some(g) = g else { return Ok(None) };
    if !of_this_kind(g.error_code, "ConsumerGroupDescribe", group)? {
        return Ok(None);
    }
    let tps = |a: &kafka_protocol::messages::consumer_group_describe_response::Assignment| -> TopicPartitions {
        a.topic_partitions.iter().map(|t| (t.topic_name.0.to_string(), t.partitions.clone())).collect()
    };
    let members = g
        .members
        .iter()
        .map(|m| MemberDescription {
            member_id: m.member_id.to_string(),
            instance_id: m.instance_id.as_ref().map(|i| i.to_string()),
            client_id: m.client_id.to_string(),
            client_host: m.client_host.to_string(),
            assignment: MemberAssignment::Partitions(tps(&m.assignment)),
            kip848: Some((m.member_epoch, tps(&m.target_assignment))),
        })
        .collect();
    Ok(Some((g.group_state.to_string(), consumer_protocol_type.to_string(), g.assignor_name.to_string(), members, Some((g.group_epoch, g.assignment_epoch)))))
}

/// ShareGroupDescribe: None when the group is not a share group (GROUP_ID_NOT_FOUND) or the
/// broker does not serve the API. A share member's epoch and partitions are its `kip848`
/// (its target is what it was given: a share group revokes nothing).
async fn share_group(cluster: &mut Cluster, addr: SocketAddr, group: &str) -> Result<Option<Described>, ClientError> {
    let req = ShareGroupDescribeRequest::default().with_group_ids(vec![GroupId(StrBytes::from_string(group.to_string()))]);
    let g = match send(cluster, addr, &req).await {
        Ok(r) => r.groups.into_iter().find(|g| g.group_id.0.as_str() == group),
        Err(e @ ClientError::Io { .. }) => return Err(e),
        Err(_) => None,
    };
    let Some(g) = g else { return Ok(None) };
    if !of_this_kind(g.error_code, "ShareGroupDescribe", group)? {
        return Ok(None);
    }
    let members = g
        .members
        .iter()
        .map(|m| {
            let tps: TopicPartitions = m.assignment.topic_partitions.iter().map(|t| (t.topic_name.0.to_string(), t.partitions.clone())).collect();
            MemberDescription {
                member_id: m.member_id.to_string(),
                instance_id: None,
                client_id: m.client_id.to_string(),
                client_host: m.client_host.to_string(),
                assignment: MemberAssignment::Partitions(tps.clone()),
                kip848: Some((m.member_epoch, tps)),
            }
        })
        .collect();
    Ok(Some((g.group_state.to_string(), share_protocol_type.to_string(), g.assignor_name.to_string(), members, Some((g.group_epoch, g.assignment_epoch)))))
}

/// DescribeGroups, for a classic group.
async fn classic_group(cluster: &mut Cluster, addr: SocketAddr, group: &str, coordinator: &BrokerAddr) -> Result<Described, ClientError> {
    let req = DescribeGroupsRequest::default().with_groups(vec![GroupId(StrBytes::from_string(group.to_string()))]);
    let described = send(cluster, addr, &req).await?;
    let g = described.groups.into_iter().find(|g| g.group_id.0.as_str() == group).ok_or_else(|| ClientError::Protocol(format!("DescribeGroups did not answer for {group}")))?;
    if g.error_code != 0 {
        let why = g.error_message.map_or(String::new(), |m| m.to_string());
        return Err(ClientError::kafka(g.error_code, format!("DescribeGroups to coordinator {coordinator}: {why}")));
    }
    let protocol_type = g.protocol_type.to_string();
    let members = g
        .members
        .into_iter()
        .map(|m| {
            // Members' assignments are empty bytes outside Stable.
            let assignment = match protocol_type == consumer_protocol_type && !m.member_assignment.is_empty() {
                false => MemberAssignment::Unknown,
                true => match decode_assignment(&m.member_assignment) {
                    Ok(a) => MemberAssignment::Partitions(a.partitions),
                    Err(e) => MemberAssignment::Undecodable(e.to_string()),
                },
            };
            MemberDescription {
                member_id: m.member_id.to_string(),
                instance_id: m.group_instance_id.map(|i| i.to_string()),
                client_id: m.client_id.to_string(),
                client_host: m.client_host.to_string(),
                assignment,
                kip848: None,
            }
        })
        .collect();
    Ok((g.group_state.to_string(), protocol_type, g.protocol_data.to_string(), members, None))
}

/// The high watermark of each partition in `parts`, asked of its leader; a partition whose
/// leader is unknown or refuses gets its error. Only Metadata failing is an error.
async fn log_ends(cluster: &mut Cluster, parts: Vec<(String, i32)>) -> Result<BTreeMap<(String, i32), Result<i64, ClientError>>, ClientError> {
    let mut out = BTreeMap::new();
    if parts.is_empty() {
        return Ok(out);
    }
    let topics: Vec<String> = parts.iter().map(|(t, _)| t.clone()).collect::<BTreeSet<_>>().into_iter().collect();
    let (brokers, leaders) = metadata(cluster, &topics).await?;
    let mut by_leader: BTreeMap<i32, Vec<(String, i32)>> = BTreeMap::new();
    for (t, p) in parts {
        let leader = leaders
            .get(&(t.clone(), p))
            .or_else(|| leaders.get(&(t.clone(), -1)))
            .cloned()
            .unwrap_or_else(|| Err(ClientError::Kafka { code: Code::UnknownTopicOrPartition, message: format!("{t}-{p} is not in the metadata") }));
        match leader {
            Ok(id) if id >= 0 => by_leader.entry(id).or_default().push((t, p)),
            Ok(id) => {
                out.insert((t.clone(), p), Err(ClientError::Kafka { code: Code::LeaderNotAvailable, message: format!("{t}-{p} has no leader (leader id {id})") }));
            }
            Err(e) => {
                out.insert((t, p), Err(e));
            }
        }
    }
    for (id, parts) in by_leader {
        let answered = match brokers.get(&id) {
            Some(b) => list_latest(cluster, b, &parts).await,
            None => Err(ClientError::Kafka { code: Code::LeaderNotAvailable, message: format!("leader {id} is not among the brokers") }),
        };
        match answered {
            Ok(ends) => out.extend(ends),
            Err(e) => out.extend(parts.into_iter().map(|tp| (tp, Err(e.clone())))),
        }
    }
    Ok(out)
}

/// ListOffsets "latest" (the high watermark, as consumers read up to it) for `parts`, all led by `b`.
async fn list_latest(cluster: &mut Cluster, b: &BrokerAddr, parts: &[(String, i32)]) -> Result<Vec<((String, i32), Result<i64, ClientError>)>, ClientError> {
    let mut topics: BTreeMap<&str, Vec<ListOffsetsPartition>> = BTreeMap::new();
    for (t, p) in parts {
        topics.entry(t).or_default().push(ListOffsetsPartition::default().with_partition_index(*p).with_current_leader_epoch(-1).with_timestamp(list_offsets::latest));
    }
    let req = ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        // READ_UNCOMMITTED: "latest" is the high watermark.
        .with_isolation_level(0)
        .with_topics(topics.into_iter().map(|(t, ps)| ListOffsetsTopic::default().with_name(TopicName(StrBytes::from_string(t.to_string()))).with_partitions(ps)).collect());
    let resp = send(cluster, broker_socket(b).await?, &req).await?;
    let mut out = Vec::new();
    for t in resp.topics {
        for p in t.partitions {
            let end = match p.error_code {
                0 => Ok(p.offset),
                code => Err(ClientError::kafka(code, format!("ListOffsets for {}-{} to broker {b}", t.name.0.as_str(), p.partition_index))),
            };
            out.push(((t.name.0.to_string(), p.partition_index), end));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(committed: Option<i64>, log_end: Result<i64, ClientError>) -> PartitionOffsets {
        PartitionOffsets { topic: "t".into(), partition: 0, committed, log_end, owner: None }
    }

    #[test]
    fn lag_needs_both_offsets() {
        assert_eq!(row(Some(7), Ok(10)).lag(), Some(3));
        assert_eq!(row(None, Ok(10)).lag(), None);
        assert_eq!(row(Some(7), Err(ClientError::Timeout(1))).lag(), None);
        // Committed past a truncated log's end: shown, not hidden.
        assert_eq!(row(Some(12), Ok(10)).lag(), Some(-2));
    }

    #[test]
    fn unknown_means_no_member_and_no_commit() {
        let mut d = GroupDescription {
            group_id: "g".into(),
            coordinator: BrokerAddr { id: 0, host: "h".into(), port: 1 },
            state: "Dead".into(),
            protocol_type: String::new(),
            protocol: String::new(),
            members: vec![],
            partitions: vec![row(None, Ok(5))],
            epochs: None,
        };
        assert!(d.is_unknown(), "an assigned-but-uncommitted row alone does not make a group known");
        d.partitions.push(row(Some(1), Ok(5)));
        assert!(!d.is_unknown());
        d.partitions.clear();
        d.members.push(MemberDescription { member_id: "m".into(), instance_id: None, client_id: "c".into(), client_host: String::new(), assignment: MemberAssignment::Unknown, kip848: None });
        assert!(!d.is_unknown());
    }

    #[test]
    fn only_coordinator_conditions_are_retried() {
        assert!(coordinator_transient(Code::CoordinatorLoadInProgress));
        assert!(coordinator_transient(Code::CoordinatorNotAvailable));
        assert!(coordinator_transient(Code::NotCoordinator));
        assert!(!coordinator_transient(Code::GroupAuthorizationFailed));
        assert!(!coordinator_transient(Code::InvalidGroupId));
    }
}
