//! Admin requests: topic creation, sent to the controller (the broker Metadata names as
//! `controller_id`, or a known controller address), as Kafka's admin clients do.

use crate::kafka::Code;
use super::conn::Conn;
use super::ClientError;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig, CreateTopicsRequest};
use kafka_protocol::messages::metadata_request::MetadataRequest;
use kafka_protocol::messages::TopicName;
use kafka_protocol::protocol::StrBytes;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

/// How many brokers the broker at `addr` lists in Metadata (the live, unfenced ones).
pub async fn live_brokers(addr: SocketAddr, timeout: Duration) -> Result<usize, ClientError> {
    let mut conn = Conn::connect(addr, "seedlog-admin", timeout).await?;
    // An empty topic list (not null) asks for brokers only.
    let req = MetadataRequest::default().with_topics(Some(Vec::new())).with_allow_auto_topic_creation(false);
    Ok(conn.send(&req).await?.brokers.len())
}

/// The active controller's address as the broker at `addr` knows it (Metadata's
/// `controller_id` among its brokers), or `addr` itself when it names none it lists: Kafka's
/// admin clients find the controller the same way, and ask again after NOT_CONTROLLER.
pub async fn find_controller(addr: SocketAddr, timeout: Duration) -> Result<SocketAddr, ClientError> {
    Ok(named_controller(addr, timeout).await?.unwrap_or(addr))
}

/// The active controller's address as the broker at `addr` names it in Metadata, if it names
/// one it lists (none mid-election).
pub async fn named_controller(addr: SocketAddr, timeout: Duration) -> Result<Option<SocketAddr>, ClientError> {
    let mut conn = Conn::connect(addr, "seedlog-admin", timeout).await?;
    let req = MetadataRequest::default().with_topics(Some(Vec::new())).with_allow_auto_topic_creation(false);
    let resp = conn.send(&req).await?;
    let named = resp.brokers.iter().find(|b| b.node_id == resp.controller_id);
    Ok(named.and_then(|b| Some(SocketAddr::new(b.host.as_str().parse().ok()?, u16::try_from(b.port).ok()?))))
}

/// A topic to create: name, partitions, replication factor.
pub type NewTopic = (String, i32, i16);

/// A topic to create with topic configs (Kafka's names, e.g. `cleanup.policy`), which the
/// controller checks and keeps (INVALID_CONFIG names a bad one).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicToCreate {
    pub name: String,
    pub partitions: i32,
    pub replication_factor: i16,
    pub configs: BTreeMap<String, String>,
}

impl From<&NewTopic> for TopicToCreate {
    fn from((name, partitions, replication_factor): &NewTopic) -> TopicToCreate {
        TopicToCreate { name: name.clone(), partitions: *partitions, replication_factor: *replication_factor, configs: BTreeMap::new() }
    }
}

/// Creates `topics` through the controller at `controller`. A topic that already exists counts
/// as created; any other refusal is the error (the first one).
pub async fn create_topics(controller: SocketAddr, topics: &[NewTopic], timeout: Duration) -> Result<(), ClientError> {
    let topics: Vec<TopicToCreate> = topics.iter().map(TopicToCreate::from).collect();
    create_topics_with_configs(controller, &topics, timeout).await
}

/// [`create_topics`] with each topic's configs. A topic that already exists counts as created
/// (whatever its configs); any other refusal is the error (the first one).
pub async fn create_topics_with_configs(controller: SocketAddr, topics: &[TopicToCreate], timeout: Duration) -> Result<(), ClientError> {
    let mut conn = Conn::connect(controller, "seedlog-admin", timeout).await?;
    let mut req = CreateTopicsRequest::default();
    req.timeout_ms = timeout.as_millis() as i32 / 10 * 8;
    req.topics = topics
        .iter()
        .map(|spec| {
            let mut t = CreatableTopic::default();
            t.name = TopicName(StrBytes::from_string(spec.name.clone()));
            t.num_partitions = spec.partitions;
            t.replication_factor = spec.replication_factor;
            t.configs = spec.configs.iter().map(|(k, v)| CreatableTopicConfig::default().with_name(StrBytes::from_string(k.clone())).with_value(Some(StrBytes::from_string(v.clone())))).collect();
            t
        })
        .collect();
    let resp = conn.send(&req).await?;
    // TOPIC_ALREADY_EXISTS: created earlier, by us or someone else.
    match resp.topics.iter().find(|t| t.error_code != 0 && t.error_code != Code::TopicAlreadyExists.code()) {
        Some(t) => Err(ClientError::kafka(t.error_code, format!("creating {}: {}", t.name.0.as_str(), t.error_message.as_ref().map_or("", |m| m.as_str())))),
        None => Ok(()),
    }
}

/// Adds `acl` through the broker at `addr` (which forwards it to the active controller).
/// Adding an ACL that exists changes nothing, so a retry after an unknown outcome is safe.
pub async fn create_acl(addr: SocketAddr, acl: &crate::security::acl::Acl, timeout: Duration) -> Result<(), ClientError> {
    use kafka_protocol::messages::create_acls_request::{AclCreation, CreateAclsRequest};
    let mut conn = Conn::connect(addr, "seedlog-admin", timeout).await?;
    let s = |t: &str| StrBytes::from_string(t.to_string());
    let c = AclCreation::default()
        .with_resource_type(acl.resource_type.code())
        .with_resource_name(s(&acl.resource_name))
        .with_resource_pattern_type(acl.pattern.code())
        .with_principal(s(&acl.principal))
        .with_host(s(&acl.host))
        .with_operation(acl.operation.code())
        .with_permission_type(acl.permission.code());
    let r = conn.send(&CreateAclsRequest::default().with_creations(vec![c])).await?;
    let result = r.results.first().ok_or_else(|| ClientError::Protocol("CreateAcls answered no result".into()))?;
    answered(result.error_code, result.error_message.as_ref())
}

/// Removes exactly `acl` (a filter naming every field) through the broker at `addr`; removing
/// one that is gone changes nothing, so a retry is safe.
pub async fn delete_acl(addr: SocketAddr, acl: &crate::security::acl::Acl, timeout: Duration) -> Result<(), ClientError> {
    use kafka_protocol::messages::delete_acls_request::{DeleteAclsFilter, DeleteAclsRequest};
    let mut conn = Conn::connect(addr, "seedlog-admin", timeout).await?;
    let s = |t: &str| Some(StrBytes::from_string(t.to_string()));
    let f = DeleteAclsFilter::default()
        .with_resource_type_filter(acl.resource_type.code())
        .with_resource_name_filter(s(&acl.resource_name))
        .with_pattern_type_filter(acl.pattern.code())
        .with_principal_filter(s(&acl.principal))
        .with_host_filter(s(&acl.host))
        .with_operation(acl.operation.code())
        .with_permission_type(acl.permission.code());
    let r = conn.send(&DeleteAclsRequest::default().with_filters(vec![f])).await?;
    let result = r.filter_results.first().ok_or_else(|| ClientError::Protocol("DeleteAcls answered no result".into()))?;
    answered(result.error_code, result.error_message.as_ref())
}

/// Stores `user`'s SCRAM credential for `mechanism` (salted here with `salt`, as Kafka's admin
/// client does: the password never leaves the client) through the broker at `addr`, which
/// forwards it to the active controller; replacing one with the same is safe to retry.
pub async fn upsert_scram(addr: SocketAddr, user: &str, password: &str, mechanism: crate::security::scram::Mechanism, (salt, iterations): (&[u8], i32), timeout: Duration) -> Result<(), ClientError> {
    use kafka_protocol::messages::alter_user_scram_credentials_request::{AlterUserScramCredentialsRequest, ScramCredentialUpsertion};
    let salted = mechanism.salted_password(password.as_bytes(), salt, iterations);
    let up = ScramCredentialUpsertion::default()
        .with_name(StrBytes::from_string(user.to_string()))
        .with_mechanism(mechanism.kafka_type())
        .with_iterations(iterations)
        .with_salt(bytes::Bytes::copy_from_slice(salt))
        .with_salted_password(bytes::Bytes::from(salted));
    alter_scram(addr, AlterUserScramCredentialsRequest::default().with_upsertions(vec![up]), timeout).await
}

/// Removes `user`'s SCRAM credential for `mechanism` through the broker at `addr`. Removing
/// one that is gone answers RESOURCE_NOT_FOUND, which a retry takes as done.
pub async fn delete_scram(addr: SocketAddr, user: &str, mechanism: crate::security::scram::Mechanism, timeout: Duration) -> Result<(), ClientError> {
    use kafka_protocol::messages::alter_user_scram_credentials_request::{AlterUserScramCredentialsRequest, ScramCredentialDeletion};
    let del = ScramCredentialDeletion::default().with_name(StrBytes::from_string(user.to_string())).with_mechanism(mechanism.kafka_type());
    match alter_scram(addr, AlterUserScramCredentialsRequest::default().with_deletions(vec![del]), timeout).await {
        Err(ClientError::Kafka { code: Code::ResourceNotFound, .. }) => Ok(()),
        other => other,
    }
}

async fn alter_scram(addr: SocketAddr, req: kafka_protocol::messages::AlterUserScramCredentialsRequest, timeout: Duration) -> Result<(), ClientError> {
    let mut conn = Conn::connect(addr, "seedlog-admin", timeout).await?;
    let r = conn.send(&req).await?;
    let result = r.results.first().ok_or_else(|| ClientError::Protocol("AlterUserScramCredentials answered no result".into()))?;
    answered(result.error_code, result.error_message.as_ref())
}

/// One result's error code and message as the outcome.
fn answered(code: i16, message: Option<&StrBytes>) -> Result<(), ClientError> {
    match code {
        0 => Ok(()),
        code => Err(ClientError::kafka(code, message.map_or(String::new(), |m| m.to_string()))),
    }
}
