//! Broker settings from three layers — embedded defaults, an optional TOML file with Kafka's
//! setting names, command-line flags — into a [`BrokerConfig`] and a listen address. A bad
//! file names the setting at fault; unknown settings are errors, not silently ignored.

use crate::broker::BrokerConfig;
pub use super::config_quorum::{controller_config, open_quorum, raft_config};
use super::config_quorum::{parse_roles, parse_voters};
use crate::log::FlushPolicy;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

/// Flags of the `broker` binary (Kafka's names, dots as dashes).
#[derive(Debug, Clone, Default, clap::Parser)]
#[command(name = "broker", about = "Seedlog broker: a Kafka-compatible broker; one node, or one of a cluster")]
pub struct Flags {
    /// Address to listen on: the one-PLAINTEXT-listener shorthand of --listeners.
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// listeners: `NAME://host:port,...`: client listeners (PLAINTEXT, SSL, SASL_PLAINTEXT,
    /// SASL_SSL, or names mapped to them) and optionally a CONTROLLER one.
    #[arg(long)]
    pub listeners: Option<String>,
    /// listener.security.protocol.map: `NAME:PROTOCOL,...` for listener names other than the
    /// four protocols' own (CONTROLLER is PLAINTEXT unless mapped).
    #[arg(long)]
    pub listener_security_protocol_map: Option<String>,
    /// sasl.enabled.mechanisms on a SASL listener: SCRAM-SHA-256, SCRAM-SHA-512, PLAIN (default
    /// the two SCRAM ones).
    #[arg(long)]
    pub sasl_enabled_mechanisms: Option<String>,
    /// sasl.mechanism.inter.broker.protocol: how this broker authenticates to SASL listeners of
    /// the cluster (SCRAM-SHA-256, the default here, or SCRAM-SHA-512).
    #[arg(long)]
    pub sasl_mechanism_inter_broker_protocol: Option<String>,
    /// sasl.jaas.config: this broker's own user on SASL listeners, as Kafka's ScramLoginModule
    /// takes it: 'org.apache.kafka.common.security.scram.ScramLoginModule required
    /// username="admin" password="admin-secret";'. Needed with a SASL listener.
    #[arg(long)]
    pub sasl_jaas_config: Option<String>,
    /// A user's credential to store when the cluster's metadata is first written, as
    /// `kafka-storage format --add-scram` takes it: 'SCRAM-SHA-256=[name=admin,password=secret]'
    /// (repeatable; optional iterations=N, salt=BASE64).
    #[arg(long)]
    pub add_scram: Vec<String>,
    /// ssl.keystore.type: PEM (Kafka's JKS and PKCS12 are not read).
    #[arg(long)]
    pub ssl_keystore_type: Option<String>,
    /// ssl.keystore.location: a PEM file with this node's private key (if encrypted, with
    /// --ssl-key-password) and its certificate chain; needed by SSL and SASL_SSL listeners.
    #[arg(long)]
    pub ssl_keystore_location: Option<PathBuf>,
    /// ssl.key.password: the password of the keystore's private key, when it is encrypted
    /// (PKCS#8, `-----BEGIN ENCRYPTED PRIVATE KEY-----`).
    #[arg(long)]
    pub ssl_key_password: Option<String>,
    /// ssl.truststore.type: PEM.
    #[arg(long)]
    pub ssl_truststore_type: Option<String>,
    /// ssl.truststore.location: a PEM file of trusted authorities' certificates, for client
    /// certificates and for this node's TLS links to the cluster's listeners.
    #[arg(long)]
    pub ssl_truststore_location: Option<PathBuf>,
    /// ssl.client.auth: none (default), requested or required; a client certificate's subject is
    /// the connection's principal (`User:CN=…`).
    #[arg(long)]
    pub ssl_client_auth: Option<String>,
    /// authorizer.class.name: org.apache.kafka.metadata.authorizer.StandardAuthorizer turns
    /// ACLs on (empty: off, the default).
    #[arg(long)]
    pub authorizer_class_name: Option<String>,
    /// super.users: `User:admin;User:broker`, allowed everything whatever the ACLs.
    #[arg(long)]
    pub super_users: Option<String>,
    /// allow.everyone.if.no.acl.found: a resource no ACL names is open to all (default false).
    #[arg(long)]
    pub allow_everyone_if_no_acl_found: Option<bool>,
    /// connections.max.reauth.ms: how long a SASL authentication lasts before the client must
    /// re-authenticate on its connection (KIP-368); 0 (the default): for the connection's life.
    #[arg(long)]
    pub connections_max_reauth_ms: Option<u64>,
    /// Address clients are told to connect to (defaults to --listen): the one-listener
    /// shorthand of --advertised-listeners.
    #[arg(long)]
    pub advertised: Option<String>,
    /// advertised.listeners: `NAME://host:port,...`, where the clients of each listener are told
    /// to connect (a listener left out advertises its own address).
    #[arg(long)]
    pub advertised_listeners: Option<String>,
    /// inter.broker.listener.name: the listener the cluster's nodes link to each other on
    /// (default: the only one, or the one named PLAINTEXT).
    #[arg(long)]
    pub inter_broker_listener_name: Option<String>,
    /// node.id
    #[arg(long)]
    pub node_id: Option<i32>,
    /// log.dirs: where partition logs live.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// TOML file of Kafka-named settings (flags win over it).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// auto.create.topics.enable
    #[arg(long)]
    pub auto_create_topics_enable: Option<bool>,
    /// num.partitions
    #[arg(long)]
    pub num_partitions: Option<i32>,
    /// min.insync.replicas
    #[arg(long)]
    pub min_insync_replicas: Option<i32>,
    /// log.segment.bytes
    #[arg(long)]
    pub log_segment_bytes: Option<u64>,
    /// log.roll.ms
    #[arg(long)]
    pub log_roll_ms: Option<u64>,
    /// log.retention.ms
    #[arg(long)]
    pub log_retention_ms: Option<i64>,
    /// log.retention.bytes
    #[arg(long)]
    pub log_retention_bytes: Option<i64>,
    /// log.index.interval.bytes
    #[arg(long)]
    pub log_index_interval_bytes: Option<u64>,
    /// log.flush.interval.messages (1 = fsync every batch)
    #[arg(long)]
    pub log_flush_interval_messages: Option<u64>,
    /// log.flush.interval.ms
    #[arg(long)]
    pub log_flush_interval_ms: Option<u64>,
    /// message.max.bytes
    #[arg(long)]
    pub message_max_bytes: Option<usize>,
    /// controller.quorum.voters: the Raft metadata quorum as `id@host:port,...` (1 to 7
    /// voters; default: this node alone). A node named there runs a voter too (combined mode).
    #[arg(long)]
    pub controller_quorum_voters: Option<String>,
    /// process.roles: `broker,controller` (combined mode, the default for a node named in
    /// controller.quorum.voters), `broker` (the default for any other node) or `controller` (a
    /// voter that is not a broker: it never registers, so no partition is placed on it).
    #[arg(long)]
    pub process_roles: Option<String>,
    /// controller.quorum.election.timeout.ms (the quorum's fetch timeout is twice it, its
    /// request timeout and election backoff equal to it, as KRaft's defaults are)
    #[arg(long)]
    pub controller_quorum_election_timeout_ms: Option<u64>,
    /// metadata.log.max.record.bytes.between.snapshots: committed metadata bytes after which a
    /// voter snapshots its image and deletes the metadata log before it (default 4 MiB)
    #[arg(long)]
    pub metadata_log_max_record_bytes_between_snapshots: Option<u64>,
    /// default.replication.factor
    #[arg(long)]
    pub default_replication_factor: Option<i16>,
    /// replica.lag.time.max.ms
    #[arg(long)]
    pub replica_lag_time_max_ms: Option<u64>,
    /// broker.session.timeout.ms (read by the controller)
    #[arg(long)]
    pub broker_session_timeout_ms: Option<u64>,
    /// broker.heartbeat.interval.ms
    #[arg(long)]
    pub broker_heartbeat_interval_ms: Option<u64>,
    /// unclean.leader.election.enable (read by the controller)
    #[arg(long)]
    pub unclean_leader_election_enable: Option<bool>,
    /// eligible.leader.replicas.enable (KIP-966; read by the controller and by every leader,
    /// so give it to every node)
    #[arg(long)]
    pub eligible_leader_replicas_enable: Option<bool>,
    /// auto.leader.rebalance.enable (read by the controller; default true)
    #[arg(long)]
    pub auto_leader_rebalance_enable: Option<bool>,
    /// leader.imbalance.check.interval.seconds (read by the controller; default 300)
    #[arg(long)]
    pub leader_imbalance_check_interval_seconds: Option<u64>,
    /// leader.imbalance.per.broker.percentage (read by the controller; default 10)
    #[arg(long)]
    pub leader_imbalance_per_broker_percentage: Option<u32>,
    /// group.initial.rebalance.delay.ms
    #[arg(long)]
    pub group_initial_rebalance_delay_ms: Option<u64>,
    /// group.min.session.timeout.ms
    #[arg(long)]
    pub group_min_session_timeout_ms: Option<u64>,
    /// group.max.session.timeout.ms
    #[arg(long)]
    pub group_max_session_timeout_ms: Option<u64>,
    /// group.max.size
    #[arg(long)]
    pub group_max_size: Option<usize>,
    /// group.consumer.session.timeout.ms (KIP-848 groups; default 45000)
    #[arg(long)]
    pub group_consumer_session_timeout_ms: Option<u64>,
    /// group.consumer.heartbeat.interval.ms (KIP-848 groups; default 5000)
    #[arg(long)]
    pub group_consumer_heartbeat_interval_ms: Option<u64>,
    /// group.consumer.assignors, comma-separated: uniform, range (the first is the default)
    #[arg(long)]
    pub group_consumer_assignors: Option<String>,
    /// group.consumer.migration.policy: bidirectional (default), upgrade, downgrade, disabled
    #[arg(long)]
    pub group_consumer_migration_policy: Option<String>,
    /// group.share.session.timeout.ms (KIP-932 share groups; default 45000)
    #[arg(long)]
    pub group_share_session_timeout_ms: Option<u64>,
    /// group.share.heartbeat.interval.ms (default 5000)
    #[arg(long)]
    pub group_share_heartbeat_interval_ms: Option<u64>,
    /// group.share.max.size: members one share group admits (default 200)
    #[arg(long)]
    pub group_share_max_size: Option<usize>,
    /// group.share.record.lock.duration.ms: how long acquired records stay a member's (1000..=3600000; default 30000)
    #[arg(long)]
    pub group_share_record_lock_duration_ms: Option<u64>,
    /// group.share.delivery.count.limit: deliveries before a record is archived (2..=10; default 5)
    #[arg(long)]
    pub group_share_delivery_count_limit: Option<i16>,
    /// group.share.partition.max.record.locks: records of a share-partition in flight (100..=10000; default 2000)
    #[arg(long)]
    pub group_share_partition_max_record_locks: Option<i64>,
    /// offsets.topic.num.partitions
    #[arg(long)]
    pub offsets_topic_num_partitions: Option<i32>,
    /// offsets.topic.replication.factor
    #[arg(long)]
    pub offsets_topic_replication_factor: Option<i16>,
    /// offsets.retention.minutes
    #[arg(long)]
    pub offsets_retention_minutes: Option<u64>,
    /// offset.metadata.max.bytes
    #[arg(long)]
    pub offset_metadata_max_bytes: Option<usize>,
    /// transaction.max.timeout.ms (default 900000: a longer transaction.timeout.ms is refused)
    #[arg(long)]
    pub transaction_max_timeout_ms: Option<i32>,
    /// transactional.id.expiration.ms (default 604800000, 7 days)
    #[arg(long)]
    pub transactional_id_expiration_ms: Option<i64>,
    /// transaction.abort.timed.out.transaction.cleanup.interval.ms (default 10000)
    #[arg(long)]
    pub transaction_abort_timed_out_transaction_cleanup_interval_ms: Option<i64>,
    /// transaction.remove.expired.transaction.cleanup.interval.ms (default 3600000)
    #[arg(long)]
    pub transaction_remove_expired_transaction_cleanup_interval_ms: Option<i64>,
    /// transaction.state.log.num.partitions (default 50)
    #[arg(long)]
    pub transaction_state_log_num_partitions: Option<i32>,
    /// transaction.state.log.replication.factor (default 3, capped by the brokers present)
    #[arg(long)]
    pub transaction_state_log_replication_factor: Option<i16>,
    /// transaction.state.log.min.isr (default 2, capped by the replication factor)
    #[arg(long)]
    pub transaction_state_log_min_isr: Option<i16>,
    /// Kafka's transaction.version feature: 2 (default) bumps the producer epoch at every
    /// transaction's end for clients that ask (KIP-890); 1 is the classic protocol
    #[arg(long)]
    pub transaction_version: Option<i64>,
    /// transaction.partition.verification.enable (default true): a partition leader asks the
    /// coordinator before a producer's first transactional write to it (KIP-890 part 1)
    #[arg(long)]
    pub transaction_partition_verification_enable: Option<bool>,
    /// log.cleaner.backoff.ms
    #[arg(long)]
    pub log_cleaner_backoff_ms: Option<u64>,
    /// log.cleaner.io.max.bytes.per.second (read and written by the cleaner; default no limit)
    #[arg(long, value_parser = positive_rate)]
    pub log_cleaner_io_max_bytes_per_second: Option<f64>,
    /// Zero-copy fetch: send records from the segment files with sendfile (default true);
    /// false reads them into memory, CRC-checked, and copies them (Seedlog's own setting).
    #[arg(long)]
    pub fetch_zero_copy: Option<bool>,
    /// Serve Kafka 3.9's API versions that Kafka 4.0 removed (KIP-896: Produce v0-2, Fetch
    /// v0-3, OffsetCommit v0-1, ...), as old clients send them (default true); false answers as
    /// Kafka 4.0 does, closing the connection (Seedlog's own setting).
    #[arg(long)]
    pub legacy_api_versions: Option<bool>,
    /// Threads of the broker's runtime, which read, decide and answer requests (Kafka splits
    /// them into num.network.threads and num.io.threads; Seedlog's own setting). Default: one
    /// per core. Decisions take the node's lock one at a time, so a second thread helps with
    /// socket work only; where clients share the machine, one thread may do more (see
    /// docs/benchmarks.md, "Many connections").
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub worker_threads: Option<u16>,
    /// Where to serve `GET /metrics` (Prometheus text format), if anywhere.
    #[arg(long)]
    pub metrics_listen: Option<SocketAddr>,
}

/// A byte rate: a positive number (Kafka's setting is a double).
fn positive_rate(text: &str) -> Result<f64, String> {
    text.parse::<f64>().ok().filter(|v| *v > 0.0).ok_or_else(|| format!("{text} is not a positive number"))
}

/// The settings a file may carry, as Kafka names them.
pub const FILE_SETTINGS: &[&str] = &[
    "listeners",
    "advertised.listeners",
    "inter.broker.listener.name",
    "sasl.enabled.mechanisms",
    "listener.security.protocol.map",
    "sasl.mechanism.inter.broker.protocol",
    "sasl.jaas.config",
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.key.password",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.client.auth",
    "authorizer.class.name",
    "super.users",
    "allow.everyone.if.no.acl.found",
    "connections.max.reauth.ms",
    "node.id",
    "log.dirs",
    "auto.create.topics.enable",
    "num.partitions",
    "min.insync.replicas",
    "log.segment.bytes",
    "log.roll.ms",
    "log.retention.ms",
    "log.retention.bytes",
    "log.index.interval.bytes",
    "log.flush.interval.messages",
    "log.flush.interval.ms",
    "message.max.bytes",
    "controller.quorum.voters",
    "process.roles",
    "controller.quorum.election.timeout.ms",
    "metadata.log.max.record.bytes.between.snapshots",
    "default.replication.factor",
    "replica.lag.time.max.ms",
    "broker.session.timeout.ms",
    "broker.heartbeat.interval.ms",
    "unclean.leader.election.enable",
    "eligible.leader.replicas.enable",
    "auto.leader.rebalance.enable",
    "leader.imbalance.check.interval.seconds",
    "leader.imbalance.per.broker.percentage",
    "group.initial.rebalance.delay.ms",
    "group.min.session.timeout.ms",
    "group.max.session.timeout.ms",
    "group.max.size",
    "group.consumer.session.timeout.ms",
    "group.consumer.heartbeat.interval.ms",
    "group.consumer.assignors",
    "group.consumer.migration.policy",
    "group.share.session.timeout.ms",
    "group.share.heartbeat.interval.ms",
    "group.share.max.size",
    "group.share.record.lock.duration.ms",
    "group.share.delivery.count.limit",
    "group.share.partition.max.record.locks",
    "offsets.topic.num.partitions",
    "offsets.topic.replication.factor",
    "offsets.retention.minutes",
    "offset.metadata.max.bytes",
    "transaction.max.timeout.ms",
    "transactional.id.expiration.ms",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms",
    "transaction.remove.expired.transaction.cleanup.interval.ms",
    "transaction.state.log.num.partitions",
    "transaction.state.log.replication.factor",
    "transaction.state.log.min.isr",
    "transaction.version",
    "transaction.partition.verification.enable",
    "log.cleaner.backoff.ms",
    "log.cleaner.io.max.bytes.per.second",
    "fetch.zero.copy",
    "legacy.api.versions",
    "worker.threads",
    "metrics.listen",
];

/// Reads a TOML file's text into flags (file values first; `over` wins where it sets a value).
pub fn merge_file(text: &str, over: Flags) -> Result<Flags, String> {
    let table: BTreeMap<String, toml::Value> = toml::from_str(text).map_err(|e| format!("config file: {e}"))?;
    let mut f = Flags::default();
    for (key, value) in &table {
        let bad = |want: &str| format!("config file: {key} = {value} is not {want}");
        let int = || value.as_integer().ok_or_else(|| bad("an integer"));
        let text = || value.as_str().map(str::to_string).ok_or_else(|| bad("a string"));
        match key.as_str() {
            "listeners" => f.listeners = Some(text()?),
            "advertised.listeners" => f.advertised_listeners = Some(text()?),
            "connections.max.reauth.ms" => f.connections_max_reauth_ms = Some(u64::try_from(int()?).map_err(|_| bad("a number of milliseconds"))?),
            "allow.everyone.if.no.acl.found" => f.allow_everyone_if_no_acl_found = Some(value.as_bool().ok_or_else(|| bad("true or false"))?),
            k if k.starts_with("sasl.") || k.starts_with("ssl.") || ["listener.security.protocol.map", "authorizer.class.name", "super.users", "inter.broker.listener.name"].contains(&k) => super::config_security::file_setting(&mut f, k, text()?)?,
            "node.id" => f.node_id = Some(int()? as i32),
            "log.dirs" => f.data_dir = Some(PathBuf::from(text()?)),
            "auto.create.topics.enable" => f.auto_create_topics_enable = Some(value.as_bool().ok_or_else(|| bad("true or false"))?),
            "num.partitions" => f.num_partitions = Some(int()? as i32),
            "min.insync.replicas" => f.min_insync_replicas = Some(int()? as i32),
            "log.segment.bytes" => f.log_segment_bytes = Some(int()? as u64),
            "log.roll.ms" => f.log_roll_ms = Some(int()? as u64),
            "log.retention.ms" => f.log_retention_ms = Some(int()?),
            "log.retention.bytes" => f.log_retention_bytes = Some(int()?),
            "log.index.interval.bytes" => f.log_index_interval_bytes = Some(int()? as u64),
            "log.flush.interval.messages" => f.log_flush_interval_messages = Some(int()? as u64),
            "log.flush.interval.ms" => f.log_flush_interval_ms = Some(int()? as u64),
            "message.max.bytes" => f.message_max_bytes = Some(int()? as usize),
            "controller.quorum.voters" => f.controller_quorum_voters = Some(text()?),
            "process.roles" => f.process_roles = Some(text()?),
            "controller.quorum.election.timeout.ms" => f.controller_quorum_election_timeout_ms = Some(int()? as u64),
            "metadata.log.max.record.bytes.between.snapshots" => f.metadata_log_max_record_bytes_between_snapshots = Some(int()? as u64),
            "default.replication.factor" => f.default_replication_factor = Some(int()? as i16),
            "replica.lag.time.max.ms" => f.replica_lag_time_max_ms = Some(int()? as u64),
            "broker.session.timeout.ms" => f.broker_session_timeout_ms = Some(int()? as u64),
            "broker.heartbeat.interval.ms" => f.broker_heartbeat_interval_ms = Some(int()? as u64),
            "unclean.leader.election.enable" => f.unclean_leader_election_enable = Some(value.as_bool().ok_or_else(|| bad("true or false"))?),
            "eligible.leader.replicas.enable" => f.eligible_leader_replicas_enable = Some(value.as_bool().ok_or_else(|| bad("true or false"))?),
            "auto.leader.rebalance.enable" => f.auto_leader_rebalance_enable = Some(value.as_bool().ok_or_else(|| bad("true or false"))?),
            "leader.imbalance.check.interval.seconds" => f.leader_imbalance_check_interval_seconds = Some(u64::try_from(int()?).map_err(|_| bad("a positive integer"))?),
            "leader.imbalance.per.broker.percentage" => f.leader_imbalance_per_broker_percentage = Some(u32::try_from(int()?).map_err(|_| bad("a percentage"))?),
            "group.initial.rebalance.delay.ms" => f.group_initial_rebalance_delay_ms = Some(int()? as u64),
            "group.min.session.timeout.ms" => f.group_min_session_timeout_ms = Some(int()? as u64),
            "group.max.session.timeout.ms" => f.group_max_session_timeout_ms = Some(int()? as u64),
            "group.max.size" => f.group_max_size = Some(int()? as usize),
            "group.consumer.session.timeout.ms" => f.group_consumer_session_timeout_ms = Some(int()? as u64),
            "group.consumer.heartbeat.interval.ms" => f.group_consumer_heartbeat_interval_ms = Some(int()? as u64),
            "group.consumer.assignors" => f.group_consumer_assignors = Some(value.as_str().ok_or_else(|| bad("a list like \"uniform,range\""))?.to_string()),
            "group.consumer.migration.policy" => f.group_consumer_migration_policy = Some(text()?),
            "group.share.session.timeout.ms" => f.group_share_session_timeout_ms = Some(int()? as u64),
            "group.share.heartbeat.interval.ms" => f.group_share_heartbeat_interval_ms = Some(int()? as u64),
            "group.share.max.size" => f.group_share_max_size = Some(int()? as usize),
            "group.share.record.lock.duration.ms" => f.group_share_record_lock_duration_ms = Some(int()? as u64),
            "group.share.delivery.count.limit" => f.group_share_delivery_count_limit = Some(i16::try_from(int()?).map_err(|_| bad("a small integer"))?),
            "group.share.partition.max.record.locks" => f.group_share_partition_max_record_locks = Some(int()?),
            "offsets.topic.num.partitions" => f.offsets_topic_num_partitions = Some(int()? as i32),
            "offsets.topic.replication.factor" => f.offsets_topic_replication_factor = Some(int()? as i16),
            "offsets.retention.minutes" => f.offsets_retention_minutes = Some(int()? as u64),
            "offset.metadata.max.bytes" => f.offset_metadata_max_bytes = Some(int()? as usize),
            "transaction.max.timeout.ms" => f.transaction_max_timeout_ms = Some(i32::try_from(int()?).map_err(|_| bad("a 32-bit integer"))?),
            "transactional.id.expiration.ms" => f.transactional_id_expiration_ms = Some(int()?),
            "transaction.abort.timed.out.transaction.cleanup.interval.ms" => f.transaction_abort_timed_out_transaction_cleanup_interval_ms = Some(int()?),
            "transaction.remove.expired.transaction.cleanup.interval.ms" => f.transaction_remove_expired_transaction_cleanup_interval_ms = Some(int()?),
            "transaction.state.log.num.partitions" => f.transaction_state_log_num_partitions = Some(i32::try_from(int()?).map_err(|_| bad("a 32-bit integer"))?),
            "transaction.state.log.replication.factor" => f.transaction_state_log_replication_factor = Some(i16::try_from(int()?).map_err(|_| bad("a 16-bit integer"))?),
            "transaction.state.log.min.isr" => f.transaction_state_log_min_isr = Some(i16::try_from(int()?).map_err(|_| bad("a 16-bit integer"))?),
            "transaction.version" => f.transaction_version = Some(int()?),
            "transaction.partition.verification.enable" => f.transaction_partition_verification_enable = Some(value.as_bool().ok_or_else(|| bad("true or false"))?),
            "log.cleaner.backoff.ms" => f.log_cleaner_backoff_ms = Some(int()? as u64),
            "log.cleaner.io.max.bytes.per.second" => f.log_cleaner_io_max_bytes_per_second = Some(value.as_float().or(value.as_integer().map(|i| i as f64)).filter(|v| *v > 0.0).ok_or_else(|| bad("a positive number"))?),
            "fetch.zero.copy" => f.fetch_zero_copy = Some(value.as_bool().ok_or_else(|| bad("true or false"))?),
            "legacy.api.versions" => f.legacy_api_versions = Some(value.as_bool().ok_or_else(|| bad("true or false"))?),
            "metrics.listen" => f.metrics_listen = Some(text()?.parse().map_err(|_| bad("host:port"))?),
            "worker.threads" => f.worker_threads = Some(u16::try_from(int()?).ok().filter(|n| (1..=1024).contains(n)).ok_or_else(|| bad("a thread count from 1 to 1024"))?),
            other => return Err(format!("config file: unknown setting '{other}' (known: {})", FILE_SETTINGS.join(", "))),
        }
    }
    macro_rules! take { ($($field:ident),*) => { $( if over.$field.is_some() { f.$field = over.$field.clone(); } )* } }
    // A --listen flag (the PLAINTEXT shorthand) wins over the file's listeners.
    if over.listen.is_some() && over.listeners.is_none() {
        f.listeners = None;
    }
    if over.advertised.is_some() && over.advertised_listeners.is_none() {
        f.advertised_listeners = None;
    }
    if !over.add_scram.is_empty() {
        f.add_scram = over.add_scram.clone();
    }
    take!(listen, listeners, listener_security_protocol_map, sasl_enabled_mechanisms, sasl_mechanism_inter_broker_protocol, sasl_jaas_config, ssl_keystore_type, ssl_keystore_location, ssl_key_password, ssl_truststore_type, ssl_truststore_location, ssl_client_auth, authorizer_class_name, super_users, allow_everyone_if_no_acl_found, connections_max_reauth_ms, advertised, advertised_listeners, inter_broker_listener_name, node_id, data_dir, config, auto_create_topics_enable, num_partitions, min_insync_replicas,
        log_segment_bytes, log_roll_ms, log_retention_ms, log_retention_bytes, log_index_interval_bytes,
        log_flush_interval_messages, log_flush_interval_ms, message_max_bytes, controller_quorum_voters, process_roles, controller_quorum_election_timeout_ms, metadata_log_max_record_bytes_between_snapshots,
        default_replication_factor, replica_lag_time_max_ms, broker_session_timeout_ms, broker_heartbeat_interval_ms,
        unclean_leader_election_enable, eligible_leader_replicas_enable, auto_leader_rebalance_enable, leader_imbalance_check_interval_seconds, leader_imbalance_per_broker_percentage, group_initial_rebalance_delay_ms, group_min_session_timeout_ms, group_max_session_timeout_ms, group_max_size, group_consumer_session_timeout_ms, group_consumer_heartbeat_interval_ms, group_consumer_assignors, group_consumer_migration_policy, group_share_session_timeout_ms, group_share_heartbeat_interval_ms, group_share_max_size, group_share_record_lock_duration_ms, group_share_delivery_count_limit, group_share_partition_max_record_locks, offsets_topic_num_partitions, offsets_topic_replication_factor, offsets_retention_minutes, offset_metadata_max_bytes, transaction_max_timeout_ms, transactional_id_expiration_ms, transaction_abort_timed_out_transaction_cleanup_interval_ms, transaction_remove_expired_transaction_cleanup_interval_ms, transaction_state_log_num_partitions, transaction_state_log_replication_factor, transaction_state_log_min_isr, transaction_version, transaction_partition_verification_enable, log_cleaner_backoff_ms, log_cleaner_io_max_bytes_per_second, fetch_zero_copy, legacy_api_versions, worker_threads, metrics_listen);
    Ok(f)
}

/// Default listen address (Kafka's port).
pub const listen_default: &str = "127.0.0.1:9092";

/// Resolves flags into the inter-broker listener's address and the broker's config (every
/// listener in `security.listeners`), checking ranges.
pub fn resolve(f: &Flags) -> Result<(SocketAddr, BrokerConfig), String> {
    let mut c = BrokerConfig { topic_id_key: os_random_key()?, ..BrokerConfig::default() };
    let listen = super::config_security::resolve_listeners(f, &mut c)?;
    let advertised = format!("{}:{}", c.advertised_host, c.advertised_port);
    if let Some(v) = f.node_id { c.node_id = v }
    if let Some(v) = &f.data_dir { c.data_dir = v.clone() }
    if let Some(v) = f.auto_create_topics_enable { c.auto_create_topics = v }
    if let Some(v) = f.num_partitions {
        if !(1..=crate::constants::partitions_per_topic_max).contains(&v) {
            return Err(format!("num.partitions={v} must be 1..={}", crate::constants::partitions_per_topic_max));
        }
        c.num_partitions = v;
    }
    if let Some(v) = f.min_insync_replicas {
        if v < 1 {
            return Err(format!("min.insync.replicas={v} must be at least 1"));
        }
        c.min_insync_replicas = v;
    }
    if let Some(v) = f.log_segment_bytes { c.log.segment_bytes = v }
    if let Some(v) = f.log_roll_ms { c.log.segment_ms = v }
    if let Some(v) = f.log_retention_ms { c.log.retention_ms = v }
    if let Some(v) = f.log_retention_bytes { c.log.retention_bytes = v }
    if let Some(v) = f.log_index_interval_bytes { c.log.index_interval_bytes = v }
    if let Some(v) = f.message_max_bytes { c.log.max_message_bytes = v }
    c.log.flush = match (f.log_flush_interval_messages, f.log_flush_interval_ms) {
        (Some(1), _) => FlushPolicy::EveryBatch,
        (Some(n), _) if n < i64::MAX as u64 => FlushPolicy::EveryMessages(n),
        (_, Some(t)) if t < i64::MAX as u64 => FlushPolicy::EveryMs(t),
        _ => FlushPolicy::Never,
    };
    c.log.validate().map_err(|e| e.to_string())?;
    // A one-node cluster's quorum is this node, on its controller listener if it has one.
    let own = c.security.controller_listener.map_or(advertised.clone(), |a| a.to_string());
    let voters = f.controller_quorum_voters.clone().unwrap_or_else(|| format!("{}@{own}", c.node_id));
    c.voters = parse_voters(&voters)?;
    if let Some(roles) = &f.process_roles {
        c.broker_role = parse_roles(roles, c.voters.contains_key(&c.node_id), c.node_id)?;
    }
    if let Some(ms) = f.controller_quorum_election_timeout_ms {
        c.quorum_election_timeout_ms = ms;
    }
    raft_config(&c).validate().map_err(|e| e.to_string())?;
    if let Some(bytes) = f.metadata_log_max_record_bytes_between_snapshots {
        if bytes < 1 {
            return Err("metadata.log.max.record.bytes.between.snapshots must be at least 1".into());
        }
        c.metadata_snapshot_bytes_between = bytes;
    }
    if let Some(v) = f.default_replication_factor {
        if v < 1 {
            return Err(format!("default.replication.factor={v} must be at least 1"));
        }
        c.default_replication_factor = v;
    }
    if let Some(v) = f.replica_lag_time_max_ms { c.replica_lag_ms_max = v }
    if let Some(v) = f.broker_session_timeout_ms { c.session_timeout_ms = v }
    if let Some(v) = f.broker_heartbeat_interval_ms { c.heartbeat_interval_ms = v }
    if let Some(v) = f.unclean_leader_election_enable { c.unclean_leader_election = v }
    if let Some(v) = f.eligible_leader_replicas_enable { c.eligible_leader_replicas = v }
    if let Some(v) = f.auto_leader_rebalance_enable { c.auto_leader_rebalance = v }
    if let Some(v) = f.leader_imbalance_check_interval_seconds {
        if v == 0 {
            return Err("leader.imbalance.check.interval.seconds=0 must be at least 1".into());
        }
        c.leader_imbalance_check_interval_ms = v.saturating_mul(1_000);
    }
    if let Some(v) = f.leader_imbalance_per_broker_percentage {
        if v > 100 {
            return Err(format!("leader.imbalance.per.broker.percentage={v} must be 0..=100"));
        }
        c.leader_imbalance_per_broker_percentage = v;
    }
    super::config_coordinators::resolve_groups(f, &mut c.groups)?;
    super::config_coordinators::resolve_txns(f, &mut c.txns)?;
    super::config_security::resolve_security(f, &mut c)?;
    if let Some(v) = f.log_cleaner_backoff_ms { c.cleaner_backoff_ms = v.max(1) }
    // Kafka's default is Double.MaxValue: no limit. A rate beyond u64 is none either.
    if let Some(v) = f.fetch_zero_copy { c.fetch_zero_copy = v }
    if let Some(v) = f.legacy_api_versions { c.legacy_api_versions = v }
    if let Some(v) = f.log_cleaner_io_max_bytes_per_second { c.cleaner_io_bytes_per_second = (v < u64::MAX as f64).then_some(v as u64) }
    if c.heartbeat_interval_ms == 0 || c.heartbeat_interval_ms * 2 > c.session_timeout_ms {
        return Err(format!(
            "broker.heartbeat.interval.ms={} must be positive and at most half of broker.session.timeout.ms={}",
            c.heartbeat_interval_ms, c.session_timeout_ms
        ));
    }
    Ok((listen, c))
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;

/// 32 bytes from the OS's randomness (`/dev/urandom`): the secret this start's topic ids are
/// derived under. The one place the broker reads OS randomness; never the simulator's path.
fn os_random_key() -> Result<crate::metadata::topic::TopicIdKey, String> {
    use std::io::Read;
    let mut key = [0u8; 32];
    std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut key)).map_err(|e| format!("reading /dev/urandom for the topic id key: {e}"))?;
    Ok(key)
}
