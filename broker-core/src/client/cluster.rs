//! What a client knows of the cluster: its connections (one per broker address) and, from
//! Metadata, the brokers and each partition's leader. A failed metadata request moves on to the
//! next known broker (then the bootstrap address), so one dead broker does not blind the client.

use crate::kafka::Code;
use super::conn::Conn;
use super::ClientError;
use kafka_protocol::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_protocol::messages::find_coordinator_response::FindCoordinatorResponse;
use kafka_protocol::messages::metadata_request::{MetadataRequest, MetadataRequestTopic};
use kafka_protocol::messages::TopicName;
use kafka_protocol::protocol::StrBytes;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;


pub struct Cluster {
    bootstrap: Vec<SocketAddr>,
    client_id: String,
    timeout: Duration,
    conns: BTreeMap<SocketAddr, Conn>,
    brokers: BTreeMap<i32, SocketAddr>,
    leaders: BTreeMap<(String, i32), i32>,
    /// Topic ids by name, as Metadata gave them (KIP-848 assignments name topics by id).
    ids: BTreeMap<String, uuid::Uuid>,
    /// Which candidate the next metadata request goes to.
    cursor: usize,
    /// Who every connection authenticates as (SASL SCRAM), if the listener asks.
    login: Option<crate::security::SaslLogin>,
}

impl Cluster {
    /// `bootstrap`: brokers to ask for metadata until some answered (at least one).
    pub fn new(bootstrap: Vec<SocketAddr>, client_id: &str, timeout: Duration) -> Cluster {
        assert!(!bootstrap.is_empty(), "a client needs at least one bootstrap broker");
        Cluster { bootstrap, client_id: client_id.into(), timeout, conns: BTreeMap::new(), brokers: BTreeMap::new(), leaders: BTreeMap::new(), ids: BTreeMap::new(), cursor: 0, login: None }
    }

    /// Authenticates every connection as `login` (a SASL_PLAINTEXT or SASL_SSL listener).
    pub fn set_login(&mut self, login: crate::security::SaslLogin) {
        self.login = Some(login);
    }

    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The connection to `addr`, opened if needed.
    pub async fn conn(&mut self, addr: SocketAddr) -> Result<&mut Conn, ClientError> {
        if !self.conns.contains_key(&addr) {
            let mut c = Conn::connect(addr, &self.client_id, self.timeout).await?;
            if let Some(login) = &self.login {
                c.authenticate(login, &crate::server::nonce()).await?;
            }
            self.conns.insert(addr, c);
        }
        Ok(self.conns.get_mut(&addr).expect("just inserted"))
    }

    /// Forgets a connection after an error: the next request reconnects.
    pub fn drop_conn(&mut self, addr: SocketAddr) {
        self.conns.remove(&addr);
    }

    /// Any broker to ask something of (the one metadata would ask next).
    pub fn any_broker(&self) -> SocketAddr {
        let candidates: Vec<SocketAddr> = self.brokers.values().chain(&self.bootstrap).copied().collect();
        candidates[self.cursor % candidates.len()]
    }

    /// The broker did not answer: ask the next one next time.
    pub fn rotate(&mut self) {
        self.cursor = self.cursor.wrapping_add(1);
    }

    /// Refreshes the brokers and the leaders of `topics`' partitions. A topic-level error is
    /// returned as the error (after what was learned is kept).
    pub async fn refresh(&mut self, topics: &[&str]) -> Result<(), ClientError> {
        let addr = self.any_broker();
        let req = MetadataRequest::default()
            .with_topics(Some(topics.iter().map(|t| MetadataRequestTopic::default().with_name(Some(TopicName(StrBytes::from_string(t.to_string()))))).collect()))
            .with_allow_auto_topic_creation(true);
        let sent = match self.conn(addr).await {
            Ok(conn) => conn.send(&req).await,
            Err(e) => Err(e),
        };
        let resp = match sent {
            Ok(r) => r,
            Err(e) => {
                // Unreachable or failed: ask the next known broker next time.
                self.drop_conn(addr);
                self.rotate();
                return Err(e);
            }
        };
        for b in &resp.brokers {
            if let Ok(a) = format!("{}:{}", b.host, b.port).parse() {
                self.brokers.insert(b.node_id.0, a);
            }
        }
        let mut failure = None;
        for t in &resp.topics {
            let name = t.name.as_ref().map_or(String::new(), |n| n.0.to_string());
            if t.error_code != 0 {
                failure.get_or_insert(ClientError::kafka(t.error_code, format!("metadata for {name}")));
                continue;
            }
            if !t.topic_id.is_nil() {
                self.ids.insert(name.clone(), t.topic_id);
            }
            for p in &t.partitions {
                self.leaders.insert((name.clone(), p.partition_index), p.leader_id.0);
            }
        }
        failure.map_or(Ok(()), Err)
    }

    /// The leader's address of a partition, refreshing metadata when unknown.
    pub async fn leader(&mut self, topic: &str, partition: i32) -> Result<SocketAddr, ClientError> {
        let key = (topic.to_string(), partition);
        if !self.leaders.contains_key(&key) {
            self.refresh(&[topic]).await?;
        }
        let id = *self.leaders.get(&key).ok_or(ClientError::Kafka { code: Code::UnknownTopicOrPartition, message: format!("{topic}-{partition} is not in the metadata") })?;
        let Some(addr) = self.brokers.get(&id).copied() else {
            // No leader when the metadata was read (-1 mid-election): ask again next time, as
            // Kafka's clients request a metadata update, rather than keep the answer for good.
            self.leaders.remove(&key);
            return Err(ClientError::Kafka { code: Code::LeaderNotAvailable, message: format!("{topic}-{partition} has no leader (leader id {id})") });
        };
        Ok(addr)
    }

    /// Partitions of `topic` as the last metadata listed them.
    pub fn partition_count(&self, topic: &str) -> Option<i32> {
        let n = self.leaders.range((topic.to_string(), i32::MIN)..=(topic.to_string(), i32::MAX)).count();
        (n > 0).then_some(n as i32)
    }

    /// A topic's id, as the last metadata for it gave it.
    pub fn topic_id(&self, topic: &str) -> Option<uuid::Uuid> {
        self.ids.get(topic).copied()
    }

    /// The topic with id `id`, among those metadata was asked for.
    pub fn topic_name(&self, id: uuid::Uuid) -> Option<&str> {
        self.ids.iter().find(|(_, x)| **x == id).map(|(n, _)| n.as_str())
    }

    /// Forgets a partition's leader (it moved, or did not answer).
    pub fn forget(&mut self, topic: &str, partition: i32) {
        self.leaders.remove(&(topic.to_string(), partition));
    }
}

/// FindCoordinator for `key` (`key_type`: `kafka::coordinator_type`), to ask any broker.
pub fn find_coordinator(key_type: i8, key: &str) -> FindCoordinatorRequest {
    FindCoordinatorRequest::default().with_key_type(key_type).with_coordinator_keys(vec![StrBytes::from_string(key.to_string())])
}

/// The coordinator's address in `found`, the answer to [`find_coordinator`]; `what` names the
/// lookup in a Kafka error.
pub fn coordinator_in(found: &FindCoordinatorResponse, what: impl FnOnce() -> String) -> Result<SocketAddr, ClientError> {
    let c = found.coordinators.first().ok_or_else(|| ClientError::Protocol("FindCoordinator answered no coordinator".into()))?;
    if c.error_code != 0 {
        return Err(ClientError::kafka(c.error_code, what()));
    }
    format!("{}:{}", c.host.as_str(), c.port).parse().map_err(|_| ClientError::Protocol(format!("coordinator address {}:{} is not ip:port", c.host.as_str(), c.port)))
}
