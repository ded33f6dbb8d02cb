//! The operator's requests about a KIP-932 share group's offsets, as kafka-share-groups.sh's
//! `--describe --offsets`, `--reset-offsets` and `--delete-offsets` ask them: FindCoordinator,
//! then DescribeShareGroupOffsets, AlterShareGroupOffsets or DeleteShareGroupOffsets to the
//! group's coordinator, retried while it loads or moves (`groups_admin`'s backoff). Answers
//! are plain structs; formatting is the caller's. Describe never changes anything; Alter and
//! Delete change only the share-partitions they name (the broker refuses them while the group
//! has members: NON_EMPTY_GROUP).

use super::cluster::Cluster;
use super::groups_admin::{resolve, send, Backoff, BrokerAddr};
use super::ClientError;
use kafka_protocol::messages::alter_share_group_offsets_request::{AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsRequestPartition, AlterShareGroupOffsetsRequestTopic};
use kafka_protocol::messages::delete_share_group_offsets_request::{DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsRequestTopic};
use kafka_protocol::messages::describe_share_group_offsets_request::{DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsRequestGroup};
use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_protocol::messages::{GroupId, TopicName};
use kafka_protocol::protocol::StrBytes;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

const client_id: &str = "seedlog-share-offsets";

/// Each share-partition's start offset (None: not initialized), by (topic, partition).
pub type StartOffsets = BTreeMap<(String, i32), Option<i64>>;

fn sb(x: &str) -> StrBytes {
    StrBytes::from_string(x.to_string())
}

/// The coordinator of `group`, and its address.
async fn coordinator(cluster: &mut Cluster, group: &str) -> Result<(BrokerAddr, SocketAddr), ClientError> {
    let req = FindCoordinatorRequest::default().with_key_type(0).with_coordinator_keys(vec![sb(group)]);
    let found = send(cluster, cluster.any_broker(), &req).await?;
    let c = found.coordinators.into_iter().next().ok_or_else(|| ClientError::Protocol("FindCoordinator answered no coordinator".into()))?;
    if c.error_code != 0 {
        return Err(ClientError::kafka(c.error_code, format!("FindCoordinator: {}", c.error_message.map_or(String::new(), |m| m.to_string()))));
    }
    let b = BrokerAddr { id: c.node_id.0, host: c.host.to_string(), port: c.port };
    let addr = resolve(&format!("{}:{}", b.host, b.port)).await?;
    Ok((b, addr))
}

/// Runs `ask` at `group`'s coordinator until it answers something other than a coordinator
/// condition that passes on its own.
async fn at_coordinator<T>(bootstrap: &str, group: &str, timeout: Duration, ask: impl AsyncFn(&mut Cluster, SocketAddr) -> Result<T, ClientError>) -> Result<T, ClientError> {
    let mut cluster = Cluster::new(vec![resolve(bootstrap).await?], client_id, timeout);
    let mut backoff = Backoff::new();
    loop {
        let asked = match coordinator(&mut cluster, group).await {
            Ok((_, addr)) => ask(&mut cluster, addr).await,
            Err(e) => Err(e),
        };
        match asked {
            Ok(v) => return Ok(v),
            Err(e) => backoff.again(&format!("share group {group}"), e).await?,
        }
    }
}

/// DescribeShareGroupOffsets of every initialized share-partition of `group`, at its
/// coordinator `addr` (one attempt): GROUP_ID_NOT_FOUND when it is no share group.
pub(super) async fn started(cluster: &mut Cluster, addr: SocketAddr, group: &str) -> Result<StartOffsets, ClientError> {
    let req = DescribeShareGroupOffsetsRequest::default().with_groups(vec![DescribeShareGroupOffsetsRequestGroup::default().with_group_id(GroupId(sb(group))).with_topics(None)]);
    let r = send(cluster, addr, &req).await?;
    let g = r.groups.into_iter().find(|g| g.group_id.0.as_str() == group).ok_or_else(|| ClientError::Protocol(format!("DescribeShareGroupOffsets did not answer for {group}")))?;
    if g.error_code != 0 {
        return Err(ClientError::kafka(g.error_code, format!("DescribeShareGroupOffsets of {group}")));
    }
    let mut out = StartOffsets::new();
    for t in g.topics {
        for p in t.partitions {
            if p.error_code != 0 {
                return Err(ClientError::kafka(p.error_code, format!("DescribeShareGroupOffsets for {}-{}", t.topic_name.as_str(), p.partition_index)));
            }
            out.insert((t.topic_name.to_string(), p.partition_index), (p.start_offset >= 0).then_some(p.start_offset));
        }
    }
    Ok(out)
}

/// Every initialized share-partition of share group `group` with its start offset.
pub async fn describe_share_offsets(bootstrap: &str, group: &str, timeout: Duration) -> Result<StartOffsets, ClientError> {
    at_coordinator(bootstrap, group, timeout, async |c: &mut Cluster, addr| started(c, addr, group).await).await
}

/// A group-level error of an Alter or Delete (NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND, ...).
fn top_level(code: i16, what: &str, group: &str) -> Result<(), ClientError> {
    match code {
        0 => Ok(()),
        code => Err(ClientError::kafka(code, format!("{what} of share group {group}"))),
    }
}

/// AlterShareGroupOffsets: each (topic, partition) of an empty share group starts at the offset
/// given; the result of each, or the group-level error.
pub async fn alter_share_offsets(bootstrap: &str, group: &str, offsets: &[(String, i32, i64)], timeout: Duration) -> Result<Vec<((String, i32), Result<(), ClientError>)>, ClientError> {
    let mut topics: BTreeMap<&str, Vec<AlterShareGroupOffsetsRequestPartition>> = BTreeMap::new();
    for (t, p, o) in offsets {
        topics.entry(t).or_default().push(AlterShareGroupOffsetsRequestPartition::default().with_partition_index(*p).with_start_offset(*o));
    }
    let topics: Vec<AlterShareGroupOffsetsRequestTopic> = topics.into_iter().map(|(t, ps)| AlterShareGroupOffsetsRequestTopic::default().with_topic_name(TopicName(sb(t))).with_partitions(ps)).collect();
    let req = AlterShareGroupOffsetsRequest::default().with_group_id(GroupId(sb(group))).with_topics(topics);
    let r = at_coordinator(bootstrap, group, timeout, async |c: &mut Cluster, addr| {
        let r = send(c, addr, &req).await?;
        top_level(r.error_code, "AlterShareGroupOffsets", group).map(|()| r)
    })
    .await?;
    let each = r.responses.into_iter().flat_map(|t| {
        let name = t.topic_name.to_string();
        t.partitions.into_iter().map(move |p| ((name.clone(), p.partition_index), top_level(p.error_code, &format!("AlterShareGroupOffsets of {name}-{}", p.partition_index), group)))
    });
    Ok(each.collect())
}

/// DeleteShareGroupOffsets: every share-partition state of each topic of an empty share group
/// deleted (its share-partitions start afresh); the result of each topic, or the group-level
/// error.
pub async fn delete_share_offsets(bootstrap: &str, group: &str, topics: &[String], timeout: Duration) -> Result<Vec<(String, Result<(), ClientError>)>, ClientError> {
    let req = DeleteShareGroupOffsetsRequest::default().with_group_id(GroupId(sb(group))).with_topics(topics.iter().map(|t| DeleteShareGroupOffsetsRequestTopic::default().with_topic_name(TopicName(sb(t)))).collect());
    let r = at_coordinator(bootstrap, group, timeout, async |c: &mut Cluster, addr| {
        let r = send(c, addr, &req).await?;
        top_level(r.error_code, "DeleteShareGroupOffsets", group).map(|()| r)
    })
    .await?;
    Ok(r.responses.into_iter().map(|t| (t.topic_name.to_string(), top_level(t.error_code, &format!("DeleteShareGroupOffsets of {}", t.topic_name.as_str()), group))).collect())
}
