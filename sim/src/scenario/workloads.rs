//! The scenario's workloads: producers (acks, rate, record size, idempotence, keys, how many)
//! and consumers (which topic, how long a fetch may wait), each on its own client node.
//! Declarations and their validation only; the harness's `cluster::workloads` runs them.

use super::{batch_records_max, clients_max, max_wait_ms_max, record_bytes_max, Scenario};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProducerSpec {
    pub topic: String,
    /// "0", "1" or "all".
    #[serde(default = "acks_all")]
    pub acks: String,
    /// Records per second, 1..=10000. Batching is linger-driven: each round carries every
    /// record that fell due while the previous round was in flight (`in_flight` batches).
    pub rate: u32,
    /// Bytes per record value, 1..=`record_bytes_max`.
    #[serde(default = "record_bytes_default")]
    pub record_bytes: usize,
    /// Idempotent producer (Kafka's `enable.idempotence`). Unset: true with acks=all, false
    /// otherwise — Kafka clients refuse idempotence without acks=all, so an explicit `true`
    /// with acks 0 or 1 is an error. Read it through [`ProducerSpec::idempotent`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// Distinct record keys to cycle through (`key-0` .. `key-{keys-1}`); 0 for no keys.
    #[serde(default)]
    pub keys: u32,
    /// Producers of this spec (each its own client node).
    #[serde(default = "super::one_u")]
    pub count: u32,
    /// Per mille of records sent as tombstones (null value: the key's deletion on a compacted
    /// topic); needs `keys`. Which serials are tombstones follows from the producer's name and
    /// serial alone.
    #[serde(default, skip_serializing_if = "super::is_zero")]
    pub tombstone_per_mille: u32,
    /// Batches in flight at once, 1..=5 (Kafka's `max.in.flight.requests.per.connection`,
    /// at most 5 with idempotence); more than 1 needs an idempotent producer. Each round sends
    /// up to this many batches pipelined and waits for all of them.
    #[serde(default = "super::one_u", skip_serializing_if = "is_one")]
    pub in_flight: u32,
    /// Attempts after a batch's first (Kafka's `retries`), 0..=`producer_retries_max`: with 0
    /// (Kafka's default before 2.1) the first error is the batch's outcome, so a definite
    /// error the broker should not have given reaches the history instead of being retried
    /// away.
    #[serde(default = "retries_default", skip_serializing_if = "is_retries_default")]
    pub retries: u32,
    /// Most records in one batch, 1..=`batch_records_max` (Kafka's `batch.size`, counted in
    /// records; default the maximum). 1 is `batch.size` of one record with `linger.ms` 0:
    /// every record is a batch of its own, so the high watermark an acks=all answer waits for
    /// sits on the boundary of a one-record batch, where `hw > last_offset` and
    /// `hw >= last_offset` differ.
    #[serde(default = "batch_records_default", skip_serializing_if = "is_batch_records_default")]
    pub batch_records: u64,
    /// A transactional producer (Kafka's `transactional.id`, `{name}-txn`): each round is one
    /// transaction of one batch per partition it writes (at most two), committed, or aborted
    /// for the serials `abort_per_mille` picks; a failed send aborts it. Needs acks = "all",
    /// idempotence and `in_flight` 1.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub transactional: bool,
    /// Per mille of transactions aborted on purpose (by serial, no draw); needs `transactional`.
    #[serde(default, skip_serializing_if = "super::is_zero")]
    pub abort_per_mille: u32,
    /// How long the producer waits for its EndTxn to be answered before it gives up (as an
    /// application's `commit_transaction(timeout)` does) and inits again, the outcome unknown;
    /// 0 (the default): it keeps asking. Needs `transactional`.
    #[serde(default, skip_serializing_if = "is_zero_ms")]
    pub end_txn_timeout_ms: u64,
    /// Who it authenticates as (one of `security.users`), on the brokers' SASL listener; None:
    /// the harness's anonymous super user on PLAINTEXT.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// The client id in its requests' headers (Kafka's `client.id`, what a client-id quota
    /// names); None: its process name, `producer-{i}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// How long it waits for an answer before it drops the connection and retries on a new one
    /// (Kafka's `request.timeout.ms`), 100..=`producer_request_timeout_ms_max`; None: the
    /// harness's 1 s. A quota's throttle mutes a connection for up to 11 s: a producer that
    /// gives up sooner escapes it on its next connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_timeout_ms: Option<u64>,
}

/// The longest producer `request_timeout_ms` (Kafka's default `request.timeout.ms`).
pub const producer_request_timeout_ms_max: u64 = 30_000;

fn is_zero_ms(n: &u64) -> bool {
    *n == 0
}

fn batch_records_default() -> u64 {
    batch_records_max
}

fn is_batch_records_default(n: &u64) -> bool {
    *n == batch_records_default()
}

/// The most retries a producer may ask for (each waits its backoff: more only slows a run).
pub const producer_retries_max: u32 = 10;

fn retries_default() -> u32 {
    3
}

fn is_retries_default(n: &u32) -> bool {
    *n == retries_default()
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

fn acks_all() -> String {
    "all".into()
}
fn record_bytes_default() -> usize {
    64
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsumerSpec {
    pub topic: String,
    /// Milliseconds a fetch may wait for data.
    #[serde(default = "max_wait_default")]
    pub max_wait_ms: i32,
    /// Who it authenticates as (one of `security.users`), as a producer's `user`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

impl ProducerSpec {
    /// Whether acks is "all" (or its wire spelling "-1").
    pub fn acks_all(&self) -> bool {
        matches!(self.acks.as_str(), "all" | "-1")
    }

    /// Whether this producer is idempotent: as set, or by default exactly when acks=all.
    pub fn idempotent(&self) -> bool {
        self.idempotent.unwrap_or(self.acks_all())
    }
}

/// A consumer group: `members` members subscribed to `topic`, each on its own client node,
/// reading, committing after each poll, and (with `churn`) leaving, crashing and stalling at
/// times drawn from the seed during the safety phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupSpec {
    /// The group id.
    pub id: String,
    pub topic: String,
    pub members: u32,
    /// `group.protocol`: "classic" (JoinGroup/SyncGroup, a member assigns) or "consumer"
    /// (KIP-848: the coordinator assigns, members reconcile by ConsumerGroupHeartbeat; the
    /// brokers' group.consumer session and heartbeat interval are this group's), or "mixed":
    /// member i's incarnation k speaks consumer when i + k is odd and classic otherwise, so
    /// the group starts with both kinds (KIP-848's online migration) and each restart under
    /// churn switches a member's protocol, upgrading and downgrading the group as it goes.
    #[serde(default = "protocol_default")]
    pub protocol: String,
    /// classic: range, roundrobin, sticky or cooperative-sticky; consumer: the server's
    /// uniform or range; mixed: range (the classic members' and the server's).
    #[serde(default = "assignor_default")]
    pub assignor: String,
    /// Static members (KIP-345): each keeps a group.instance.id across restarts.
    #[serde(default)]
    pub static_members: bool,
    #[serde(default = "session_default")]
    pub session_timeout_ms: u64,
    #[serde(default = "heartbeat_default")]
    pub heartbeat_interval_ms: u64,
    /// Members leave, crash and stall (past their session) during the safety phase.
    #[serde(default)]
    pub churn: bool,
    /// 0: each member commits what it read itself, before polling again. Above 0: its commits
    /// go out from a committer of its own (another client and connection, as a producer's
    /// `sendOffsetsToTransaction` does with the consumer's group metadata, KIP-447), carrying
    /// the member id and generation of the poll that read the records, up to this many ms
    /// after it (drawn per commit: processing and queueing), in order, while the member keeps
    /// polling, heartbeating and rejoining. A rebalance in between makes the commit a current
    /// member's with a generation the group has left.
    #[serde(default)]
    pub commit_lag_ms: u64,
}

/// Consume-transform-produce under exactly-once (Kafka Streams' `exactly_once_v2` loop, one
/// transactional producer per processor): `count` processors, `processor-{i}`, each reading
/// the partitions `p` of `from` with `p % count == i` with read_committed, and for every record
/// it reads writing one to `to`'s partition `(p + 1) % partitions` — its value the input's
/// followed by `>{processor}.{transaction}` — while fewer than `hops` such steps are in it;
/// each transaction (two polls) commits its outputs together with the processor's positions
/// in group `group` (`send_offsets`), or aborts them (`abort_per_mille`). A failure aborts it; the processor then starts over from
/// the group's committed offsets (read with `require_stable`). With `from` = `to`, records go
/// round the partitions `hops` times: a ring, where processors read each other's outputs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessorSpec {
    pub group: String,
    pub from: String,
    pub to: String,
    #[serde(default = "super::one_u")]
    pub count: u32,
    /// Steps a record takes before it is no longer forwarded, 1..=`processor_hops_max`.
    #[serde(default = "super::one_u")]
    pub hops: u32,
    /// Per mille of transactions aborted on purpose once their outputs and offsets are sent
    /// (by processor and serial, no draw); the processor then starts over, as after a failure.
    #[serde(default, skip_serializing_if = "super::is_zero")]
    pub abort_per_mille: u32,
}

/// Most steps of a record through processors (each adds about 20 bytes to its value).
pub const processor_hops_max: u32 = 8;

/// Longest `commit_lag_ms`: a commit lagging past a session is a zombie's, which churn's
/// stalls already make.
pub const commit_lag_ms_max: u64 = 10_000;

fn protocol_default() -> String {
    "classic".into()
}
fn assignor_default() -> String {
    "range".into()
}
fn session_default() -> u64 {
    3_000
}
fn heartbeat_default() -> u64 {
    500
}

/// Most members of one group in a scenario.
pub const group_members_max: u32 = 16;

fn max_wait_default() -> i32 {
    100
}

impl Scenario {
    /// Producers and consumers name known topics with sane settings, and the client nodes fit
    /// the harness's address plan; errors name the field.
    pub(super) fn validate_workloads(&self) -> Result<(), String> {
        let known = |topic: &str| self.topics.iter().any(|t| t.name == topic);
        for g in &self.groups {
            if !known(&g.topic) {
                return Err(format!("scenario: groups.topic '{}' is not in topics", g.topic));
            }
            if g.id.is_empty() || !(1..=group_members_max).contains(&g.members) {
                return Err(format!("scenario: groups '{}' needs an id and 1..={group_members_max} members", g.id));
            }
            match g.protocol.as_str() {
                "classic" if broker_core::client::assignor::by_name(&g.assignor).is_none() => {
                    return Err(format!("scenario: groups.assignor '{}' must be range, roundrobin, sticky or cooperative-sticky", g.assignor));
                }
                "consumer" if broker_core::group::assignors::ServerAssignor::by_name(&g.assignor).is_none() => {
                    return Err(format!("scenario: groups.assignor '{}' must be uniform or range with protocol \"consumer\"", g.assignor));
                }
                "mixed" if g.assignor != "range" => {
                    return Err(format!("scenario: groups.assignor '{}' must be range with protocol \"mixed\" (the assignor both kinds of member know)", g.assignor));
                }
                "classic" | "consumer" | "mixed" | "share" => {}
                other => return Err(format!("scenario: groups.protocol '{other}' must be classic, consumer, mixed or share")),
            }
            if !(1_000..=60_000).contains(&g.session_timeout_ms) || g.heartbeat_interval_ms == 0 || g.heartbeat_interval_ms * 2 > g.session_timeout_ms {
                return Err(format!("scenario: groups '{}': session_timeout_ms must be 1000..=60000 and heartbeat_interval_ms at most half of it", g.id));
            }
            if g.commit_lag_ms > commit_lag_ms_max.min(g.session_timeout_ms) {
                return Err(format!("scenario: groups '{}': commit_lag_ms {} must be at most {commit_lag_ms_max} and at most session_timeout_ms", g.id, g.commit_lag_ms));
            }
        }
        // KIP-848's and KIP-932's session and heartbeat interval are the brokers' settings: one
        // for all groups of a protocol.
        for protocol in ["consumer", "share"] {
            let same: Vec<&GroupSpec> = self.groups.iter().filter(|g| g.protocol == protocol || (protocol == "consumer" && g.protocol == "mixed")).collect();
            if same.windows(2).any(|w| (w[0].session_timeout_ms, w[0].heartbeat_interval_ms) != (w[1].session_timeout_ms, w[1].heartbeat_interval_ms)) {
                return Err(format!("scenario: groups with protocol \"{protocol}\" must share session_timeout_ms and heartbeat_interval_ms (the brokers' group.{protocol}.* settings)"));
            }
        }
        for p in &self.producers {
            if !known(&p.topic) {
                return Err(format!("scenario: producers.topic '{}' is not in topics", p.topic));
            }
            if !matches!(p.acks.as_str(), "0" | "1" | "all" | "-1") {
                return Err(format!("scenario: producers.acks '{}' must be 0, 1 or all", p.acks));
            }
            if p.idempotent == Some(true) && !p.acks_all() {
                return Err(format!("scenario: producers.idempotent = true needs producers.acks = \"all\" (is \"{}\"): Kafka clients refuse idempotence without it", p.acks));
            }
            if p.rate == 0 || p.rate > 10_000 {
                return Err(format!("scenario: producers.rate {} must be 1..=10000", p.rate));
            }
            if p.record_bytes == 0 || p.record_bytes > record_bytes_max {
                return Err(format!("scenario: producers.record_bytes {} must be 1..={record_bytes_max}", p.record_bytes));
            }
            let in_flight_max = broker_core::client::producer::in_flight_max as u32;
            if let Some(t) = p.request_timeout_ms.filter(|t| !(100..=producer_request_timeout_ms_max).contains(t)) {
                return Err(format!("scenario: producers.request_timeout_ms {t} must be 100..={producer_request_timeout_ms_max}"));
            }
            if p.client_id.as_deref() == Some("") {
                return Err("scenario: producers.client_id is empty; leave it out for the process name".into());
            }
            if p.retries > producer_retries_max {
                return Err(format!("scenario: producers.retries {} must be 0..={producer_retries_max}", p.retries));
            }
            if !(1..=in_flight_max).contains(&p.in_flight) || (p.in_flight > 1 && !p.idempotent()) {
                return Err(format!("scenario: producers.in_flight {} must be 1..={in_flight_max}, and above 1 needs an idempotent producer (acks = \"all\")", p.in_flight));
            }
            if !(1..=batch_records_max).contains(&p.batch_records) {
                return Err(format!("scenario: producers.batch_records {} must be 1..={batch_records_max}", p.batch_records));
            }
            if p.transactional && !(p.acks_all() && p.idempotent() && p.in_flight == 1) {
                return Err("scenario: producers.transactional needs acks = \"all\", idempotence and in_flight = 1".into());
            }
            if p.abort_per_mille > 1000 || (p.abort_per_mille > 0 && !p.transactional) {
                return Err(format!("scenario: producers.abort_per_mille {} must be 0..=1000, and needs transactional", p.abort_per_mille));
            }
            if p.end_txn_timeout_ms > 0 && !p.transactional {
                return Err(format!("scenario: producers.end_txn_timeout_ms {} needs transactional", p.end_txn_timeout_ms));
            }
            if p.tombstone_per_mille > 1000 || (p.tombstone_per_mille > 0 && p.keys == 0) {
                return Err(format!("scenario: producers.tombstone_per_mille {} must be 0..=1000, and needs keys", p.tombstone_per_mille));
            }
            if p.keys == 0 && self.topics.iter().any(|t| t.name == p.topic && t.compaction().is_some()) {
                return Err(format!("scenario: producers of compacted topic '{}' need keys (the broker refuses keyless records there)", p.topic));
            }
        }
        for p in &self.processors {
            if !known(&p.from) || !known(&p.to) {
                return Err(format!("scenario: processors '{}': from '{}' and to '{}' must be in topics", p.group, p.from, p.to));
            }
            if p.group.is_empty() || p.count == 0 || !(1..=processor_hops_max).contains(&p.hops) || p.abort_per_mille > 1000 {
                return Err(format!("scenario: processors need a group, count >= 1, hops 1..={processor_hops_max} and abort_per_mille 0..=1000 (group '{}', count {}, hops {}, abort_per_mille {})", p.group, p.count, p.hops, p.abort_per_mille));
            }
        }
        for c in &self.consumers {
            if !known(&c.topic) {
                return Err(format!("scenario: consumers.topic '{}' is not in topics", c.topic));
            }
            if !(0..=max_wait_ms_max).contains(&c.max_wait_ms) {
                return Err(format!("scenario: consumers.max_wait_ms {} must be 0..={max_wait_ms_max}", c.max_wait_ms));
            }
        }
        let clients = self.client_count();
        if clients > clients_max as u64 {
            return Err(format!("scenario: producers.count and consumers add up to {clients} client nodes, more than {clients_max}"));
        }
        Ok(())
    }
}
