//! Where replicas live, asked of a running cluster: each partition's replicas (Metadata), the
//! reassignments in progress (ListPartitionReassignments), starting or cancelling them
//! (AlterPartitionReassignments), removing a decommissioned broker (UnregisterBroker) and the
//! brokers registered (DescribeCluster). Any broker will do for the first four: it forwards
//! the last three to the active controller; DescribeCluster is answered from the broker's own
//! image.

use super::conn::Conn;
use super::plan::Assignment;
use super::ClientError;
use crate::kafka::Code;
use kafka_protocol::messages::describe_cluster_request::DescribeClusterRequest;
use kafka_protocol::messages::alter_partition_reassignments_request::{AlterPartitionReassignmentsRequest, ReassignablePartition, ReassignableTopic};
use kafka_protocol::messages::list_partition_reassignments_request::ListPartitionReassignmentsRequest;
use kafka_protocol::messages::metadata_request::{MetadataRequest, MetadataRequestTopic};
use kafka_protocol::messages::unregister_broker_request::UnregisterBrokerRequest;
use kafka_protocol::messages::{BrokerId, TopicName};
use kafka_protocol::protocol::StrBytes;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

/// A reassignment in progress: the whole replica set, and the replicas being added and removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ongoing {
    pub replicas: Vec<i32>,
    pub adding: Vec<i32>,
    pub removing: Vec<i32>,
}

/// One partition's answer to a reassignment: None when accepted, else its error and message.
pub type Answer = ((String, i32), Option<(Code, String)>);

fn name(t: &str) -> TopicName {
    TopicName(StrBytes::from_string(t.to_string()))
}

/// The replicas of every partition of `topics` (None: every topic), and the live brokers' ids,
/// as the broker at `addr` knows them. A topic it does not know is an error.
pub async fn assignment(addr: SocketAddr, topics: Option<&[String]>, timeout: Duration) -> Result<(Assignment, Vec<i32>), ClientError> {
    let mut conn = Conn::connect(addr, "seedlog-admin", timeout).await?;
    let asked = topics.map(|ts| ts.iter().map(|t| MetadataRequestTopic::default().with_name(Some(name(t)))).collect());
    let r = conn.send(&MetadataRequest::default().with_topics(asked).with_allow_auto_topic_creation(false)).await?;
    let mut out = Assignment::new();
    for t in &r.topics {
        let topic = t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default();
        if t.error_code != 0 {
            return Err(ClientError::kafka(t.error_code, format!("topic {topic}")));
        }
        for p in &t.partitions {
            out.insert((topic.clone(), p.partition_index), p.replica_nodes.iter().map(|b| b.0).collect());
        }
    }
    Ok((out, r.brokers.iter().map(|b| b.node_id.0).collect()))
}

/// Asks for each partition's target (None: cancel its reassignment); every partition's answer.
pub async fn alter_reassignments(addr: SocketAddr, targets: &[((String, i32), Option<Vec<i32>>)], timeout: Duration) -> Result<Vec<Answer>, ClientError> {
    let mut topics: Vec<ReassignableTopic> = Vec::new();
    for ((topic, p), target) in targets {
        if topics.last().is_none_or(|t| t.name.0.as_str() != topic) {
            topics.push(ReassignableTopic::default().with_name(name(topic)));
        }
        let part = ReassignablePartition::default().with_partition_index(*p).with_replicas(target.as_ref().map(|r| r.iter().map(|&b| BrokerId(b)).collect()));
        topics.last_mut().expect("pushed above").partitions.push(part);
    }
    let mut conn = Conn::connect(addr, "seedlog-admin", timeout).await?;
    let req = AlterPartitionReassignmentsRequest::default().with_topics(topics).with_timeout_ms(i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX));
    let r = conn.send(&req).await?;
    if r.error_code != 0 {
        return Err(ClientError::kafka(r.error_code, r.error_message.map(|m| m.to_string()).unwrap_or_default()));
    }
    Ok(r.responses
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| {
                let error = (p.error_code != 0).then(|| (crate::kafka::error(p.error_code).unwrap_or(Code::UnknownServerError), p.error_message.as_ref().map(|m| m.to_string()).unwrap_or_default()));
                ((t.name.0.to_string(), p.partition_index), error)
            })
        })
        .collect())
}

/// Every reassignment in progress.
pub async fn list_reassignments(addr: SocketAddr, timeout: Duration) -> Result<BTreeMap<(String, i32), Ongoing>, ClientError> {
    let mut conn = Conn::connect(addr, "seedlog-admin", timeout).await?;
    let r = conn.send(&ListPartitionReassignmentsRequest::default().with_topics(None).with_timeout_ms(i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX))).await?;
    if r.error_code != 0 {
        return Err(ClientError::kafka(r.error_code, r.error_message.map(|m| m.to_string()).unwrap_or_default()));
    }
    let ids = |l: &[BrokerId]| l.iter().map(|b| b.0).collect::<Vec<i32>>();
    Ok(r.topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(move |p| ((t.name.0.to_string(), p.partition_index), Ongoing { replicas: ids(&p.replicas), adding: ids(&p.adding_replicas), removing: ids(&p.removing_replicas) })))
        .collect())
}

/// Removes broker `id`'s registration (a decommissioned broker).
pub async fn unregister_broker(addr: SocketAddr, id: i32, timeout: Duration) -> Result<(), ClientError> {
    let mut conn = Conn::connect(addr, "seedlog-admin", timeout).await?;
    let r = conn.send(&UnregisterBrokerRequest::default().with_broker_id(BrokerId(id))).await?;
    match r.error_code {
        0 => Ok(()),
        code => Err(ClientError::kafka(code, r.error_message.map(|m| m.to_string()).unwrap_or_default())),
    }
}

/// The brokers registered in the image of the broker at `addr` (ask the active controller for
/// the committed one), fenced ones too (DescribeCluster v2, `include_fenced_brokers`, KIP-1073):
/// id → fenced. A decommissioned broker is not among them once unregistered.
pub async fn registered_brokers(addr: SocketAddr, timeout: Duration) -> Result<BTreeMap<i32, bool>, ClientError> {
    let mut conn = Conn::connect(addr, "seedlog-admin", timeout).await?;
    let r = conn.send_at(&DescribeClusterRequest::default().with_include_fenced_brokers(true), Some(2), timeout).await?;
    if r.error_code != 0 {
        return Err(ClientError::kafka(r.error_code, r.error_message.map(|m| m.to_string()).unwrap_or_default()));
    }
    Ok(r.brokers.iter().map(|b| (b.broker_id.0, b.is_fenced)).collect())
}

/// One config change of IncrementalAlterConfigs: resource type and name, key, and the value to
/// set (None: delete, back to the default).
pub type ConfigChange = (i8, String, String, Option<String>);

/// Changes configs (IncrementalAlterConfigs, forwarded to the active controller): topic
/// configs, and the dynamic broker configs (resource name "" for the cluster's default).
pub async fn alter_configs(addr: SocketAddr, changes: &[ConfigChange], timeout: Duration) -> Result<(), ClientError> {
    use kafka_protocol::messages::incremental_alter_configs_request::{AlterConfigsResource, AlterableConfig, IncrementalAlterConfigsRequest};
    let mut resources: Vec<AlterConfigsResource> = Vec::new();
    for (kind, res, key, value) in changes {
        if resources.last().is_none_or(|r| r.resource_type != *kind || r.resource_name.as_str() != res) {
            resources.push(AlterConfigsResource::default().with_resource_type(*kind).with_resource_name(StrBytes::from_string(res.clone())));
        }
        let op = if value.is_some() { crate::kafka::config_op::set } else { crate::kafka::config_op::delete };
        let c = AlterableConfig::default().with_name(StrBytes::from_string(key.clone())).with_config_operation(op).with_value(value.as_ref().map(|v| StrBytes::from_string(v.clone())));
        resources.last_mut().expect("pushed above").configs.push(c);
    }
    let mut conn = Conn::connect(addr, "seedlog-admin", timeout).await?;
    let r = conn.send(&IncrementalAlterConfigsRequest::default().with_resources(resources)).await?;
    match r.responses.iter().find(|x| x.error_code != 0) {
        Some(x) => Err(ClientError::kafka(x.error_code, format!("{} {}: {}", x.resource_type, x.resource_name.as_str(), x.error_message.as_ref().map(|m| m.to_string()).unwrap_or_default()))),
        None => Ok(()),
    }
}
