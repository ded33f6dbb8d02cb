//! The metadata controller's decisions (KRaft-like): broker registration, heartbeats and
//! fencing, topic creation and deletion with replica assignment, topic config changes
//! (`configs`), leader election with KIP-966's ELR (`election`, `elr`), the preferred-leader
//! rebalance (`rebalance`), and the ISR changes partition leaders ask for (AlterPartition). It
//! runs on the Raft metadata quorum (`raft/`, `quorum.rs`): the quorum's leader is the active
//! controller, and its image snapshots bound the log (`snapshot`).
//!
//! A plain struct, driven with an explicit `now` (ms). A decision never changes the image: it
//! returns the [`MetadataRecord`]s to commit. `Quorum::commit` proposes them as one Raft entry
//! and applies them to this controller at once, so the next decision sees them exactly as
//! replay will; the request is answered once the entry is committed by a majority. Only
//! volatile state (when each broker last heartbeated) changes outside `apply`, and it is never
//! recorded: a new controller gives every broker a fresh session, as Kafka's does.
//!
//! Never IO, never a clock, never a panic on any request: every refusal is an [`Error`]
//! carrying the Kafka error code the request is answered with.

mod configs;
mod election;
mod error;
pub mod reassign;
mod elr;
pub mod latency;
mod partitions;
pub mod quotas;
pub mod quorum;
mod rebalance;
pub mod raft;
pub mod rules;
pub mod snapshot;
#[cfg(test)]
mod tests;

use crate::metadata::configs::TopicSettings;
use crate::metadata::topic;
use crate::metadata::{no_leader, BrokerInfo, Endpoint, Image, MetadataRecord, PartitionInfo};
use election::Draft;
pub use error::Error;
use crate::constants::{metadata_snapshot_bytes_between_default, num_partitions_default, partitions_per_broker_max, partitions_per_topic_max};
use crate::log::LogConfig;
use crate::planted::Planted;
use std::collections::{BTreeMap, BTreeSet};

/// Kafka `broker.session.timeout.ms` default (see `constants::session_timeout_ms_default`).
pub const broker_session_timeout_ms_default: u64 = crate::constants::session_timeout_ms_default;

/// BrokerRegistration's `previous_broker_epoch` when the broker did not shut down cleanly
/// (Kafka's -1).
pub const no_previous_epoch: i64 = -1;

/// Longest advertised host name a broker may register: DNS's limit, and a bound on the size
/// of every RegisterBroker record.
pub const broker_host_bytes_max: usize = 255;

/// Listeners one broker may register (each an endpoint in every Metadata answer's source).
pub const broker_listeners_max: usize = 16;

/// Cluster-wide controller settings (Kafka names in each field's doc).
#[derive(Debug, Clone)]
pub struct ControllerConfig {
    /// `node.id` of this controller: mixed into topic ids.
    pub node_id: i32,
    /// The secret this controller's topic ids are derived under (`topic::topic_id`).
    pub topic_id_key: crate::metadata::topic::TopicIdKey,
    /// `broker.session.timeout.ms`
    pub session_timeout_ms: u64,
    /// `default.replication.factor`: for CreateTopics with -1.
    pub default_replication_factor: i16,
    /// `num.partitions`: for CreateTopics with -1.
    pub num_partitions: i32,
    /// `unclean.leader.election.enable`, for topics that do not override it.
    pub unclean_leader_election: bool,
    /// `min.insync.replicas`, for topics that do not override it (described to CreateTopics,
    /// and the ELR's threshold).
    pub min_insync_replicas: i32,
    /// `auto.leader.rebalance.enable`: move leadership back to each partition's preferred
    /// replica (the first of its assignment) when it is in the ISR (`rebalance.rs`).
    pub auto_leader_rebalance: bool,
    /// `leader.imbalance.check.interval.seconds`, in ms: how often the rebalance looks.
    pub leader_imbalance_check_interval_ms: u64,
    /// `leader.imbalance.per.broker.percentage`: a broker's partitions are moved back only
    /// when more than this share of those it is preferred for are led elsewhere.
    pub leader_imbalance_per_broker_percentage: u32,
    /// `eligible.leader.replicas.enable` (KIP-966; Kafka 4.0's `eligible.leader.replicas.version=1`):
    /// an ISR may empty into the ELR, and a broker that registers after an unclean shutdown
    /// leaves it. Off by default, as in Kafka 4.0.
    pub eligible_leader_replicas: bool,
    /// `log.*` broker defaults, to validate topic config overrides against.
    pub log: LogConfig,
    /// `metadata.log.max.record.bytes.between.snapshots`: committed metadata bytes after which
    /// a voter snapshots its image and drops the log before it.
    pub snapshot_bytes_between: u64,
    /// Credentials to write first into the metadata log of a cluster being formed
    /// (`--add-scram`; `security::SecurityConfig::scram_bootstrap`).
    pub scram_bootstrap: Vec<(String, crate::security::scram::Credential)>,
    /// The simulator's planted bug, the broker's (`BrokerConfig::planted_bug`); never in the
    /// real build.
    #[doc(hidden)]
    pub planted: Planted,
    /// Who is told what the quorum's decisions make happen (`crate::observe`): the simulator's
    /// checkers; nobody in the real broker.
    pub observer: crate::observe::Observer,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            node_id: 0,
            topic_id_key: [0; 32],
            session_timeout_ms: broker_session_timeout_ms_default,
            default_replication_factor: 1,
            num_partitions: num_partitions_default,
            unclean_leader_election: false,
            min_insync_replicas: 1,
            eligible_leader_replicas: false,
            auto_leader_rebalance: true,
            leader_imbalance_check_interval_ms: crate::constants::leader_imbalance_check_interval_ms_default,
            leader_imbalance_per_broker_percentage: crate::constants::leader_imbalance_per_broker_percentage_default,
            log: LogConfig::default(),
            snapshot_bytes_between: metadata_snapshot_bytes_between_default,
            scram_bootstrap: Vec::new(),
            planted: Planted::default(),
            observer: crate::observe::Observer::default(),
        }
    }
}

impl ControllerConfig {
    /// The controller's rules (`controller::rules`): Kafka's, or the planted bug's.
    pub fn rules(&self) -> &'static dyn rules::Rules {
        #[cfg(madsim)]
        if let Some(rules) = self.planted.0.and_then(rules::planted::of) {
            return rules;
        }
        &rules::Kafka
    }
}

/// What a heartbeat tells the broker, as of the records it returns being applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeartbeatReply {
    pub fenced: bool,
    /// The broker has replayed the metadata log up to its own registration.
    pub caught_up: bool,
}

/// AlterPartition for one partition: the leader asks to shrink or expand its ISR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterPartition {
    pub broker_id: i32,
    pub broker_epoch: i64,
    pub topic: String,
    pub partition: i32,
    /// The leader epoch and partition epoch the leader's request is based on.
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    pub new_isr: Vec<i32>,
    /// Each new member's broker epoch, in `new_isr`'s order (AlterPartition v3, KIP-903); -1
    /// or absent (v2): not checked.
    pub new_isr_epochs: Vec<i64>,
}

pub struct Controller {
    config: ControllerConfig,
    image: Image,
    /// Volatile: when each broker last heartbeated (or registered, or this controller started).
    last_heartbeat: BTreeMap<i32, u64>,
    /// The latest `now` any call brought: the start of the session of a broker that first
    /// appears in a record applied here (see [`Controller::apply`]).
    now: u64,
    /// Volatile: brokers that registered or heartbeated since this controller started. A
    /// broker the image still shows unfenced may have crashed and lost unflushed records while
    /// no controller was running; electing it then would discard committed records, so it is
    /// eligible for leadership only once it has spoken to this controller (and a restarted
    /// broker re-registers, which takes it out of every ISR first).
    heard: BTreeSet<i32>,
    /// Volatile: brokers that asked for a controlled shutdown under their current epoch. A
    /// heartbeat still in flight from such a broker must not unfence it; it registers anew
    /// when it starts again.
    shutting_down: BTreeSet<i32>,
    /// Volatile: when the next preferred-leader rebalance is due (`rebalance.rs`); a new
    /// controller waits one whole interval first.
    next_rebalance_ms: u64,
}

impl Controller {
    /// A controller over `image`, replayed from the metadata log. Every registered broker gets
    /// one session timeout from `now` to heartbeat before it is fenced.
    pub fn new(config: ControllerConfig, image: Image, now: u64) -> Controller {
        let last_heartbeat = image.brokers.keys().map(|&id| (id, now)).collect();
        let heard = config.rules().heard_at_start(&image);
        let next_rebalance_ms = now.saturating_add(config.leader_imbalance_check_interval_ms);
        Controller { config, image, last_heartbeat, now, heard, shutting_down: BTreeSet::new(), next_rebalance_ms }
    }

    pub fn config(&self) -> &ControllerConfig {
        &self.config
    }

    pub fn image(&self) -> &Image {
        &self.image
    }

    /// Applies a committed record to the image.
    pub fn apply(&mut self, offset: i64, record: &MetadataRecord) {
        if let MetadataRecord::RegisterBroker { id, .. } = record {
            // Registered by another decision maker (a future Raft leader): its session starts now.
            self.last_heartbeat.entry(*id).or_insert(self.now);
        }
        self.image.apply(offset, record);
    }

    fn observe(&mut self, now: u64) {
        self.now = self.now.max(now);
    }

    /// Registers broker `id` (again), fenced, with the epoch `next_offset`: the offset the
    /// shell will append the first returned record at (Kafka's rule: unique, increasing). A
    /// re-registering broker may have restarted and lost what it had not flushed, so it leaves
    /// every ISR it was in and every leadership now (as when fenced), not when its old session
    /// would have expired. Mutates only the volatile heartbeat time.
    pub fn register(&mut self, id: i32, host: &str, port: i32, next_offset: i64, now: u64) -> Result<Vec<MetadataRecord>, Error> {
        let one = Endpoint { name: "PLAINTEXT".into(), host: host.into(), port };
        self.register_broker(id, &[one], no_previous_epoch, next_offset, now)
    }

    /// [`Controller::register`] with the epoch the broker held when it last shut down cleanly
    /// (BrokerRegistration v3's `previous_broker_epoch`; [`no_previous_epoch`] after a crash or
    /// a power loss). Another epoch than its current registration's is an unclean shutdown
    /// (KIP-966): with ELR on, the broker also leaves every ELR, since it may have lost records
    /// it had not flushed. `endpoints` are its listeners', the inter-broker listener's first.
    pub fn register_broker(&mut self, id: i32, endpoints: &[Endpoint], previous_epoch: i64, next_offset: i64, now: u64) -> Result<Vec<MetadataRecord>, Error> {
        self.observe(now);
        if id < 0 {
            return Err(Error::InvalidRequest(format!("broker id {id} is negative")));
        }
        if endpoints.is_empty() || endpoints.len() > broker_listeners_max {
            return Err(Error::InvalidRequest(format!("{} listeners; a broker registers 1..={broker_listeners_max}", endpoints.len())));
        }
        for Endpoint { name, host, port } in endpoints {
            if host.is_empty() || host.len() > broker_host_bytes_max || name.len() > broker_host_bytes_max {
                return Err(Error::InvalidRequest(format!("listener {name}: host name of {} bytes; must be 1..={broker_host_bytes_max}", host.len())));
            }
            if !(0..=i32::from(u16::MAX)).contains(port) {
                return Err(Error::InvalidRequest(format!("listener {name}: port {port} is not a TCP port")));
            }
            if endpoints.iter().filter(|e| e.name == *name).count() > 1 {
                return Err(Error::InvalidRequest(format!("listener {name} registered twice")));
            }
        }
        let (host, port) = (endpoints[0].host.clone(), endpoints[0].port);
        let listeners = if endpoints.len() > 1 { endpoints.to_vec() } else { Vec::new() };
        if next_offset <= self.image.offset {
            return Err(Error::InvalidRequest(format!("next metadata offset {next_offset} is not after the last applied {}", self.image.offset)));
        }
        let mut draft = Draft::new(&self.image, &self.heard, &self.config);
        let clean = self.image.brokers.get(&id).is_some_and(|b| b.epoch == previous_epoch);
        draft.push(MetadataRecord::RegisterBroker { id, epoch: next_offset, host, port, listeners });
        let unclean = if clean { Vec::new() } else { vec![id] };
        draft.reelect_after(&[id], &unclean);
        let records = draft.records;
        self.last_heartbeat.insert(id, now);
        self.heard.insert(id);
        self.shutting_down.remove(&id);
        Ok(records)
    }

    /// A broker's heartbeat. A fenced broker that has replayed the log up to its own
    /// registration (`metadata_offset` >= its epoch) is unfenced, and then leads every
    /// leaderless partition it is eligible for. Mutates only the volatile heartbeat time.
    pub fn heartbeat(&mut self, id: i32, broker_epoch: i64, metadata_offset: i64, now: u64) -> Result<(HeartbeatReply, Vec<MetadataRecord>), Error> {
        self.observe(now);
        let broker = self.check_epoch(id, broker_epoch)?;
        let (fenced, epoch) = (broker.fenced, broker.epoch);
        if self.shutting_down.contains(&id) {
            return Ok((HeartbeatReply { fenced: true, caught_up: metadata_offset >= epoch }, Vec::new()));
        }
        self.last_heartbeat.insert(id, now);
        let first_heard = self.heard.insert(id);
        let caught_up = metadata_offset >= epoch;
        if !fenced && first_heard {
            // Eligible from now on: it may lead what has had no eligible leader.
            let mut draft = Draft::new(&self.image, &self.heard, &self.config);
            draft.reelect(&[]);
            return Ok((HeartbeatReply { fenced, caught_up }, draft.records));
        }
        if !fenced || !caught_up {
            return Ok((HeartbeatReply { fenced, caught_up }, Vec::new()));
        }
        let mut draft = Draft::new(&self.image, &self.heard, &self.config);
        draft.push(MetadataRecord::UnfenceBroker { id, epoch });
        draft.reelect(&[]);
        Ok((HeartbeatReply { fenced: false, caught_up }, draft.records))
    }

    /// Controlled shutdown (a heartbeat with `want_shut_down`): the broker is fenced now, its
    /// leaderships move and it leaves every ISR it can, so clients fail over at once instead of
    /// after a session timeout. Kafka moves leadership the same way before a broker stops.
    pub fn shut_down(&mut self, id: i32, broker_epoch: i64, now: u64) -> Result<Vec<MetadataRecord>, Error> {
        self.observe(now);
        let broker = self.check_epoch(id, broker_epoch)?;
        let fenced = broker.fenced;
        self.shutting_down.insert(id);
        if fenced {
            return Ok(Vec::new());
        }
        let mut draft = Draft::new(&self.image, &self.heard, &self.config);
        draft.reelect(&[id]);
        draft.push(MetadataRecord::FenceBroker { id, epoch: broker_epoch });
        Ok(draft.records)
    }

    /// UnregisterBroker: a decommissioned broker's registration is removed. It leaves every
    /// ISR and leadership first, as a fenced broker does, and stays in the assignments it is
    /// in (offline there) until they are reassigned. A broker that is still running registers
    /// again at its next heartbeat, as in Kafka.
    pub fn unregister_broker(&mut self, id: i32, now: u64) -> Result<Vec<MetadataRecord>, Error> {
        self.observe(now);
        let epoch = self.image.brokers.get(&id).map(|b| b.epoch).ok_or(Error::BrokerIdNotRegistered(id))?;
        let mut draft = Draft::new(&self.image, &self.heard, &self.config);
        draft.reelect(&[id]);
        draft.push(MetadataRecord::UnregisterBroker { id, epoch });
        let records = draft.records;
        self.heard.remove(&id);
        self.last_heartbeat.remove(&id);
        Ok(records)
    }

    fn check_epoch(&self, id: i32, epoch: i64) -> Result<&BrokerInfo, Error> {
        let broker = self.image.brokers.get(&id).ok_or(Error::UnknownBroker(id))?;
        if broker.epoch != epoch {
            return Err(Error::StaleBrokerEpoch { id, given: epoch, current: broker.epoch });
        }
        Ok(broker)
    }

    /// Fences every unfenced broker whose session has expired: each leaves every ISR (unless
    /// it is the last member) and every leadership. Partition records come before the fence
    /// records, Kafka's order, so even a prefix of the batch never leaves a fenced leader.
    ///
    /// Check-quorum: it fences only while a majority of the registered brokers are still
    /// heartbeating. A single controller voter cut off from the network sees every other
    /// session expire at once; fencing them would make it elect itself for everything, and a
    /// crash of its own unflushed log would then lose committed records. A Raft quorum gets
    /// this from its majority; one voter must hold back. (A majority of brokers really gone
    /// stalls failover until they return, as a KRaft quorum that lost its majority would.)
    ///
    /// A tick that fences nobody runs the preferred-leader rebalance when it is due
    /// (`rebalance.rs`).
    pub fn tick(&mut self, now: u64) -> Vec<MetadataRecord> {
        let fenced = self.fence_expired(now);
        if !fenced.is_empty() {
            return fenced;
        }
        self.rebalance_if_due(now)
    }

    fn fence_expired(&self, now: u64) -> Vec<MetadataRecord> {
        let expired: Vec<(i32, i64)> = self.image.live_brokers().filter(|b| self.session_end(b.id) < now).map(|b| (b.id, b.epoch)).collect();
        if expired.is_empty() {
            return Vec::new();
        }
        let heard_recently = self.image.brokers.keys().filter(|&&id| self.session_end(id) >= now).count();
        if heard_recently * 2 <= self.image.brokers.len() && self.config.rules().checks_quorum() {
            return Vec::new();
        }
        let mut draft = Draft::new(&self.image, &self.heard, &self.config);
        let ids: Vec<i32> = expired.iter().map(|&(id, _)| id).collect();
        draft.reelect(&ids);
        for (id, epoch) in expired {
            draft.push(MetadataRecord::FenceBroker { id, epoch });
        }
        draft.records
    }

    /// The last moment of `id`'s session (a broker with no heartbeat time has none left).
    fn session_end(&self, id: i32) -> u64 {
        self.last_heartbeat.get(&id).map_or(0, |t| t.saturating_add(self.config.session_timeout_ms))
    }

    /// When [`Controller::tick`] next has work: the first moment a live broker's session is over.
    /// Sessions that already ended are left out: their tick is due (or held back by
    /// check-quorum), and the shell's periodic tick covers them without spinning.
    pub fn next_deadline(&self) -> Option<u64> {
        let sessions = self.image.live_brokers().map(|b| self.session_end(b.id).saturating_add(1)).filter(|&d| d > self.now).min();
        sessions.into_iter().chain(self.rebalance_deadline()).min()
    }

    /// Creates a topic: `partitions` -1 means `num.partitions`, `replication_factor` -1 means
    /// `default.replication.factor`. Returns the topic id and its records (the Topic record,
    /// then one Partition record per partition). Like Kafka, a `min.insync.replicas` above the
    /// replication factor is accepted; acks=all produces then fail with NOT_ENOUGH_REPLICAS.
    pub fn create_topic(&self, name: &str, partitions: i32, replication_factor: i16, config: BTreeMap<String, String>, now: u64) -> Result<([u8; 16], Vec<MetadataRecord>), Error> {
        topic::validate_name(name).map_err(Error::InvalidTopic)?;
        if self.image.topics.contains_key(name) {
            return Err(Error::TopicAlreadyExists(name.to_string()));
        }
        let partitions = if partitions == -1 { self.config.num_partitions } else { partitions };
        if !(1..=partitions_per_topic_max).contains(&partitions) {
            return Err(Error::InvalidPartitions(format!("{partitions} partitions; must be 1..={partitions_per_topic_max}")));
        }
        let live: Vec<i32> = self.image.live_brokers().map(|b| b.id).collect();
        let rf = self.replication_factor(replication_factor, live.len())?;
        TopicSettings::resolve(&self.topic_defaults(), &config).map_err(Error::InvalidConfig)?;
        let assignment = assign(&live, self.image.topics.len(), partitions, rf);
        self.check_broker_load(&assignment)?;
        let id = self.fresh_topic_id(name, now);
        let mut records = vec![MetadataRecord::Topic { name: name.to_string(), id: topic::hex(&id), partitions, config }];
        for (p, replicas) in (0..).zip(assignment) {
            let leader = replicas.first().copied().unwrap_or(no_leader);
            let state = PartitionInfo { leader, isr: replicas.clone(), replicas, leader_epoch: 0, partition_epoch: 0, elr: Vec::new(), last_known_elr: Vec::new(), adding: Vec::new(), removing: Vec::new() };
            records.push(partition_record(name, p, state));
        }
        Ok((id, records))
    }

    fn replication_factor(&self, requested: i16, live: usize) -> Result<usize, Error> {
        let rf = if requested == -1 { self.config.default_replication_factor } else { requested };
        if rf < 1 {
            return Err(Error::InvalidReplicationFactor(format!("replication factor {rf}; must be at least 1, or -1 for the default")));
        }
        if rf as usize > live {
            return Err(Error::InvalidReplicationFactor(format!("replication factor {rf} is larger than the {live} live (unfenced) brokers")));
        }
        Ok(rf as usize)
    }

    /// Every replica holds open files and memory on its broker (see `partitions_per_broker_max`).
    fn check_broker_load(&self, assignment: &[Vec<i32>]) -> Result<(), Error> {
        let mut held: BTreeMap<i32, usize> = BTreeMap::new();
        let existing = self.image.topics.values().flat_map(|t| t.partitions.iter().map(|p| &p.replicas));
        for r in existing.chain(assignment).flatten() {
            *held.entry(*r).or_default() += 1;
        }
        match held.into_iter().find(|&(_, n)| n > partitions_per_broker_max) {
            Some((broker, n)) => Err(Error::InvalidPartitions(format!("broker {broker} would hold {n} partitions; the limit is {partitions_per_broker_max}"))),
            None => Ok(()),
        }
    }

    /// Deterministic from this controller's secret, the name, `now`, this controller and the
    /// next metadata offset; a
    /// (vanishingly unlikely) clash with a live topic's id moves to the next serial.
    fn fresh_topic_id(&self, name: &str, now: u64) -> [u8; 16] {
        let mut serial = self.image.offset.saturating_add(1) as u64;
        loop {
            let id = topic::topic_id(&self.config.topic_id_key, name, now, self.config.node_id, serial);
            if !self.image.topics.values().any(|t| t.id == id) {
                return id;
            }
            serial = serial.wrapping_add(1);
        }
    }

    /// Deletes a topic and its partitions.
    pub fn delete_topic(&self, name: &str) -> Result<Vec<MetadataRecord>, Error> {
        if !self.image.topics.contains_key(name) {
            return Err(Error::UnknownTopicOrPartition(name.to_string()));
        }
        Ok(vec![MetadataRecord::RemoveTopic { name: name.to_string() }])
    }

    /// AlterPartition, checked in Kafka's order (ReplicationControlManager). On success the
    /// leader and leader epoch stay (unless the change completes a reassignment that moves
    /// them, `reassign`), the partition epoch goes up by one; an ISR equal to the current one
    /// returns the current state and no records.
    pub fn alter_partition(&self, req: &AlterPartition) -> Result<(PartitionInfo, Vec<MetadataRecord>), Error> {
        self.check_epoch(req.broker_id, req.broker_epoch)?;
        let name = format!("{}-{}", req.topic, req.partition);
        let part = self.image.partition(&req.topic, req.partition).ok_or_else(|| Error::UnknownTopicOrPartition(name.clone()))?;
        check_epochs(req, part)?;
        if req.broker_id != part.leader {
            return Err(Error::NotLeader { broker: req.broker_id, partition: name, leader: part.leader });
        }
        let isr = self.check_isr(part, &req.new_isr, &req.new_isr_epochs)?;
        if isr == part.isr {
            return Ok((part.clone(), Vec::new()));
        }
        let (elr, last_known_elr) = match self.config.eligible_leader_replicas {
            true => elr::next(part, &isr, election::min_insync(&self.image.topics[&req.topic], self.config.min_insync_replicas), &[]),
            false => (Vec::new(), Vec::new()),
        };
        // The ISR change that brings the last adding replica in completes a reassignment.
        let next = self.complete_if_ready(PartitionInfo { isr, partition_epoch: part.partition_epoch.saturating_add(1), elr, last_known_elr, ..part.clone() });
        Ok((next.clone(), vec![partition_record(&req.topic, req.partition, next)]))
    }

    /// The new ISR in replica order, if it is one: no duplicates, only replicas, holding the
    /// leader, every member unfenced and, where the leader named the broker epoch its progress
    /// was made in, still registered in that epoch (KIP-903: a restarted follower's old
    /// progress does not admit its new log).
    fn check_isr(&self, part: &PartitionInfo, new_isr: &[i32], epochs: &[i64]) -> Result<Vec<i32>, Error> {
        let isr: Vec<i32> = part.replicas.iter().copied().filter(|r| new_isr.contains(r)).collect();
        if isr.len() != new_isr.len() {
            return Err(Error::InvalidRequest(format!("ISR {new_isr:?} has duplicates or non-replicas (replicas {:?})", part.replicas)));
        }
        if !isr.contains(&part.leader) {
            return Err(Error::InvalidRequest(format!("ISR {new_isr:?} does not include the leader {}", part.leader)));
        }
        if let Some(r) = isr.iter().find(|&&r| !self.image.is_live(r)) {
            return Err(Error::IneligibleReplica(format!("broker {r} in ISR {new_isr:?} is fenced or not registered")));
        }
        let stale = new_isr.iter().zip(epochs).find(|&(&r, &e)| e >= 0 && e != self.image.broker_epoch(r));
        match stale {
            Some((r, e)) => Err(Error::IneligibleReplica(format!("broker {r} in ISR {new_isr:?} was named at broker epoch {e}, and it has registered again since (epoch {})", self.image.broker_epoch(*r)))),
            None => Ok(isr),
        }
    }
}

/// The requester's epochs against the partition's, Kafka's order: newer means this controller
/// is behind, older means the requester is.
fn check_epochs(req: &AlterPartition, part: &PartitionInfo) -> Result<(), Error> {
    if req.leader_epoch > part.leader_epoch || req.partition_epoch > part.partition_epoch {
        return Err(Error::NotController(format!(
            "request at leader epoch {} / partition epoch {} is ahead of this controller's {} / {}",
            req.leader_epoch, req.partition_epoch, part.leader_epoch, part.partition_epoch
        )));
    }
    if req.leader_epoch < part.leader_epoch {
        return Err(Error::FencedLeaderEpoch { given: req.leader_epoch, current: part.leader_epoch });
    }
    if req.partition_epoch < part.partition_epoch {
        return Err(Error::InvalidUpdateVersion { given: req.partition_epoch, current: part.partition_epoch });
    }
    Ok(())
}

/// Replicas of each partition: live brokers by id, partition `p` starting at broker
/// `(existing_topics + p) mod n` and taking the next `rf` in a ring. Rotating the start by the
/// topic count spreads leaders of one-partition topics over the brokers.
fn assign(live: &[i32], existing_topics: usize, partitions: i32, rf: usize) -> Vec<Vec<i32>> {
    let n = live.len().max(1);
    (0..partitions as usize).map(|p| (0..rf).filter_map(|k| live.get((existing_topics + p + k) % n).copied()).collect()).collect()
}

fn partition_record(topic: &str, partition: i32, p: PartitionInfo) -> MetadataRecord {
    MetadataRecord::Partition {
        topic: topic.to_string(),
        partition,
        replicas: p.replicas,
        isr: p.isr,
        leader: p.leader,
        leader_epoch: p.leader_epoch,
        partition_epoch: p.partition_epoch,
        elr: p.elr,
        last_known_elr: p.last_known_elr,
        adding: p.adding,
        removing: p.removing,
    }
}
