//! The cluster's topology: one madsim node per broker, each running the real broker process
//! over its own `SimDisk`, the address plan for every node, and the broker configuration a
//! scenario's settings give.
//!
//! Addresses: broker i is 10.0.0.(i+1):9092 and broker-0 is also the controller; client k
//! (producers first, then consumers) is 10.0.1.(11+k); the harness's own nodes sit at 10.0.2.x:
//! the final reader .1, the admin .2, the commit reader .3, the ACL admin .4, the
//! reassignment admin .5 and the quota admin .6 (the last three only in scenarios that use
//! them). Nodes are created in that order — brokers, admin, the ACL, reassignment and quota
//! admins, clients, final reader — and
//! the order must never change: madsim numbers nodes as they are created.

use broker_core::observe::{self, Observation};
use super::inject::DiskFaultState;
use super::recorder::{event, Rec};
use crate::disk::{DiskFaults, SimDisk};
use crate::history::Leadership;
use crate::scenario::Scenario;
use broker_core::broker::{Action, Broker, BrokerConfig, PlantedBug};
use broker_core::buggify::{Buggify, Site};
use broker_core::log::FlushPolicy;
use broker_core::server::{self, Observer, Shared};
use broker_core::storage::Disk;
use madsim::runtime::{Handle, NodeHandle};
use serde_json::json;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracing::Instrument;

const broker_port: u16 = 9092;

pub(super) use super::timing::{controller_failover_ms, session_ms, sim_offsets_partitions, voters};
use super::timing::{group_min_session_ms, share_lock_ms, heartbeat_ms, quorum_election_ms, replica_lag_ms, supervisor_restart_ms, txn_abort_check_ms};

/// The admin node, which creates the topics.
pub(super) const admin_ip: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 2, 2));
/// The final reader's node.
pub(super) const final_reader_ip: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 2, 1));
/// The harness node that reads every group's committed offsets after healing.
pub(super) const commit_reader_ip: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 2, 3));

/// Every node by name — brokers, then clients — with its address.
pub(super) type Nodes = BTreeMap<String, (NodeHandle, IpAddr)>;
/// Every broker's disk with the fault state `inject` changes, by node name.
pub(super) type Disks = BTreeMap<String, (SimDisk, Arc<Mutex<DiskFaultState>>)>;

/// The nodes of a run, as the later phases need them.
pub(super) struct Cluster {
    /// Every broker's address started with the cluster (not those joining late: clients were
    /// configured before they existed), broker-0 (the controller) first: what clients
    /// bootstrap from.
    pub(super) brokers: Vec<SocketAddr>,
    /// Each broker joining late, by node name: set when its process may start
    /// (`cluster::membership`); until then its node's init does nothing.
    pub(super) joining: BTreeMap<String, Arc<AtomicBool>>,
    pub(super) nodes: Nodes,
    pub(super) disks: Disks,
    /// Client nodes created so far.
    clients: usize,
    /// Each broker's BUGGIFY handle (unseeded, so inert, unless the scenario asks for it).
    buggify: Vec<Buggify>,
    /// Each broker's SIGTERM, by node name (the `terminate` fault).
    pub(super) stops: BTreeMap<String, Arc<Stop>>,
}

/// A broker process's SIGTERM: notified, its server shuts down cleanly (controlled shutdown,
/// logs flushed and checkpointed) and `stopped` is set once it has.
#[derive(Default)]
pub(super) struct Stop {
    pub(super) now: tokio::sync::Notify,
    pub(super) stopped: AtomicBool,
}

/// Broker i's address: 10.0.0.(i+1). `run` refuses scenarios with more than `brokers_max`
/// brokers (`Scenario::runnable`), and a const assertion keeps that below the octet's end.
fn broker_ip(i: u32) -> IpAddr {
    let octet = u8::try_from(i + 1).expect("Scenario::runnable bounds the brokers");
    IpAddr::from([10, 0, 0, octet])
}

/// Client k's address, 10.0.1.(11+k): validation keeps the count far below where the octet
/// would run out, and past it (`None`) clients are not started.
fn client_ip(k: usize) -> Option<IpAddr> {
    u8::try_from(11 + k).ok().map(|o| IpAddr::from([10, 0, 1, o]))
}

/// Creates one node per broker, each over its own disk (seeded from `disk_seed`) with the
/// scenario's base disk latency. The nodes start their broker process at once.
pub(super) fn start_brokers(s: &Scenario, disk_seed: u64, bug: Option<PlantedBug>, rec: &Rec) -> Cluster {
    let handle = Handle::current();
    let base = base_disk_faults(s);
    let brokers = s.initial_brokers().into_iter().map(|i| SocketAddr::new(broker_ip(i), broker_port)).collect();
    let mut cluster = Cluster { brokers, joining: BTreeMap::new(), nodes: BTreeMap::new(), disks: BTreeMap::new(), clients: 0, buggify: Vec::new(), stops: BTreeMap::new() };
    for i in 0..s.brokers {
        let name = format!("broker-{i}");
        // Each broker's disk has its own seed, derived from the run's.
        let disk = SimDisk::new(disk_seed.wrapping_add(i as u64));
        let faults = Arc::new(Mutex::new(DiskFaultState::new(base.clone())));
        faults.lock().expect("disk faults").apply(&disk);
        let mut config = broker_config(s, i, bug);
        if s.buggify {
            config.buggify = Buggify::seeded(buggify_seed(disk_seed, i), &buggify_sites(s));
        }
        config.topic_id_key = broker_core::metadata::topic::topic_id_key_from_seed(disk_seed, i);
        cluster.buggify.push(config.buggify.clone());
        let (d, r) = (disk.clone(), rec.clone());
        let stop: Arc<Stop> = Arc::default();
        cluster.stops.insert(name.clone(), stop.clone());
        // A broker joining late: its node exists from the start (madsim numbers nodes as they
        // are created), but its process starts only once `membership` lets it.
        let started = Arc::new(AtomicBool::new(s.join_ms(i).is_none()));
        if s.join_ms(i).is_some() {
            cluster.joining.insert(name.clone(), started.clone());
        }
        let init = move || {
            let (started, d, config, r, stop) = (started.clone(), d.clone(), config.clone(), r.clone(), stop.clone());
            async move {
                if started.load(Ordering::SeqCst) {
                    broker_main(d, config, r, stop).await;
                }
            }
            .instrument(tracing::info_span!("broker", id = i))
        };
        let node = handle.create_node().name(&name).ip(broker_ip(i)).init(init).build();
        cluster.nodes.insert(name.clone(), (node, broker_ip(i)));
        cluster.disks.insert(name, (disk, faults));
    }
    cluster
}

/// The BUGGIFY sites a scenario's brokers may enable: `ShortLag` only where every batch is
/// fsynced before it is acknowledged (see [`Site::ShortLag`]).
pub(super) fn buggify_sites(s: &Scenario) -> Vec<Site> {
    Site::ALL.into_iter().filter(|&site| site != Site::ShortLag || s.broker.flush_messages == Some(1)).collect()
}

/// Broker i's BUGGIFY seed, derived from the run's disk seed (itself drawn from the run's seed).
pub(super) fn buggify_seed(disk_seed: u64, i: u32) -> u64 {
    disk_seed ^ 0xb066_1f7e_0000_0000 ^ u64::from(i)
}

impl Cluster {
    /// Healing begins: every BUGGIFY point goes quiet (FoundationDB's quiet phase), so the
    /// liveness phase judges the broker, not the perturbations.
    pub(super) fn quiet_buggify(&self) {
        for b in &self.buggify {
            b.quiet();
        }
    }

    /// The next client node, named `name` and counted among the nodes faults may target; or
    /// `None` (logged) when client addresses ran out.
    pub(super) fn add_client(&mut self, name: &str, rec: &Rec) -> Option<NodeHandle> {
        let Some(ip) = client_ip(self.clients) else {
            event(rec, "harness", "clients_skipped", json!({"from": name, "why": "no address left in 10.0.1.0/24"}));
            return None;
        };
        self.clients += 1;
        let node = Handle::current().create_node().name(name).ip(ip).build();
        self.nodes.insert(name.into(), (node.clone(), ip));
        Some(node)
    }
}

/// A node of the harness's own (the admin, the final reader): no fault targets it.
pub(super) fn harness_node(name: &str, ip: IpAddr) -> NodeHandle {
    Handle::current().create_node().name(name).ip(ip).build()
}

/// The scenario's `broker.disk_latency_us`, as every broker disk's standing faults.
fn base_disk_faults(s: &Scenario) -> DiskFaults {
    match s.broker.disk_latency_us {
        Some([lo, hi]) => DiskFaults { latency_ns_min: lo.saturating_mul(1000), latency_ns_max: hi.max(lo).saturating_mul(1000), ..DiskFaults::default() },
        None => DiskFaults::default(),
    }
}

/// The observer every simulated node is built with: what its decisions make happen goes to
/// the run's watches (`broker_core::simprobe`), which the checkers read at the end.
fn probe() -> observe::Observer {
    use broker_core::simprobe as p;
    observe::Observer::new(|o| match *o {
        Observation::ReplicaLogEnd { node, topic, topic_id, partition, log_end, now } => p::replica_log_end(node, topic, topic_id, partition, log_end, now),
        Observation::LeaderHighWatermark { node, topic, topic_id, partition, leader_epoch, high_watermark, last_stable_offset, below_min_isr, now } => {
            p::leader_high_watermark(node, topic, topic_id, partition, high_watermark, below_min_isr, now);
            p::leader_stable(node, topic, topic_id, partition, leader_epoch, last_stable_offset, now);
        }
        Observation::LeaderLogFailed { node, topic, topic_id, partition, now } => p::leader_log_failed(node, topic, topic_id, partition, now),
        Observation::PartitionCommitted { topic, topic_id, partition, offset, leader, isr, now } => p::partition_committed(topic, topic_id, partition, offset, leader, isr, now),
        Observation::BrokerFenced { broker, offset, now } => p::broker_fenced(broker, offset, now),
        Observation::RaftState { node, restored, state } => p::raft_state(node, restored, state),
        Observation::RaftElected { node, epoch, log } => p::raft_elected(node, epoch, log),
        Observation::RaftCommitted { node, node_epoch, leader, entry } => p::raft_committed(node, node_epoch, leader, entry),
        Observation::ActiveController { node, epoch, now } => p::active_controller(node, epoch, now),
    })
}

pub(super) fn broker_config(s: &Scenario, i: u32, bug: Option<PlantedBug>) -> BrokerConfig {
    let mut c = BrokerConfig {
        node_id: i as i32,
        data_dir: "/data".into(),
        advertised_host: broker_ip(i).to_string(),
        advertised_port: broker_port as i32,
        voters: voters(s).map(|v| (v, SocketAddr::new(broker_ip(v as u32), broker_port).to_string())).collect(),
        quorum_election_timeout_ms: quorum_election_ms,
        heartbeat_interval_ms: heartbeat_ms,
        session_timeout_ms: session_ms,
        replica_lag_ms_max: replica_lag_ms,
        planted_bug: bug,
        observer: probe(),
        ..BrokerConfig::default()
    };
    // Three offsets partitions keep group scenarios cheap; sessions as short as a second let
    // them churn within a fast scenario.
    (c.groups.offsets_partitions, c.groups.min_session_timeout_ms) = (sim_offsets_partitions, group_min_session_ms);
    // KIP-848 sessions and heartbeats are the coordinator's to set: the scenario's groups' own.
    for g in s.groups.iter().filter(|g| matches!(g.protocol.as_str(), "consumer" | "mixed")) {
        c.groups.consumer_session_timeout_ms = g.session_timeout_ms;
        c.groups.consumer_heartbeat_interval_ms = g.heartbeat_interval_ms;
    }
    // A share group's session and heartbeat are the coordinator's too; locks are short so
    // records a crashed member held come back within a fast scenario.
    for g in s.groups.iter().filter(|g| g.protocol == "share") {
        c.groups.share_session_timeout_ms = g.session_timeout_ms;
        c.groups.share_heartbeat_interval_ms = g.heartbeat_interval_ms;
        c.groups.share_record_lock_duration_ms = share_lock_ms;
    }
    // Planted `ShareDeliveryLimitOff`: a setting chosen when the node is built.
    if bug == Some(PlantedBug::ShareDeliveryLimitOff) {
        c.groups.share_delivery_count_limit = i16::MAX;
    }
    // The same for the transaction coordinator's state topic; abandoned transactions are
    // checked for their timeout every second, so a fast scenario sees them aborted.
    (c.txns.state_partitions, c.txns.abort_timed_out_interval_ms) = (sim_offsets_partitions, txn_abort_check_ms);
    if let Some(v) = s.broker.transaction_partition_verification {
        c.txns.partition_verification = v;
    }
    if let Some(v) = s.broker.transaction_version.and_then(broker_core::kafka::TxnVersion::from_level) {
        c.txns.transaction_version = v;
    }
    if let Some(n) = s.broker.flush_messages {
        c.log.flush = if n == 1 { FlushPolicy::EveryBatch } else { FlushPolicy::EveryMessages(n) };
    }
    // Planted `FlushSkipsBatches`: a rule chosen when the node is built, not a branch in the log.
    if bug == Some(PlantedBug::FlushSkipsBatches) && c.log.flush == FlushPolicy::EveryBatch {
        c.log.flush = FlushPolicy::EveryMessages(32);
    }
    if let Some(b) = s.broker.segment_bytes {
        c.log.segment_bytes = b;
    }
    if let Some(m) = s.broker.min_insync_replicas {
        c.min_insync_replicas = m;
    }
    if let Some(u) = s.broker.unclean_leader_election {
        c.unclean_leader_election = u;
    }
    c.auto_leader_rebalance = s.broker.auto_leader_rebalance.unwrap_or(false);
    if let Some(ms) = s.broker.leader_imbalance_check_interval_ms {
        c.leader_imbalance_check_interval_ms = ms.max(1);
    }
    if let Some(e) = s.broker.eligible_leader_replicas {
        c.eligible_leader_replicas = e;
    }
    if let Some(d) = s.broker.group_initial_rebalance_delay_ms {
        c.groups.initial_rebalance_delay_ms = d;
    }
    if let Some(ms) = s.broker.cleaner_backoff_ms {
        c.cleaner_backoff_ms = ms;
    }
    if let Some(z) = s.broker.fetch_zero_copy {
        c.fetch_zero_copy = z;
    }
    if let Some(b) = s.broker.metadata_snapshot_bytes {
        c.metadata_snapshot_bytes_between = b;
    }
    super::security::configure(s, &mut c, broker_ip(i), broker_port, bug);
    c
}

/// The broker process: open the data dir on the node's disk (and, on the controller node, the
/// metadata log), serve until killed. If opening fails (a full or failing disk), the process
/// exits and its supervisor starts it again.
async fn broker_main(disk: SimDisk, config: BrokerConfig, rec: Rec, stop: Arc<Stop>) {
    let name = format!("broker-{}", config.node_id);
    stop.stopped.store(false, Ordering::SeqCst);
    // Listening for SIGTERM from the process's first moment: one sent while the broker still
    // opens its logs stops it as soon as it serves.
    let shutdown = stop.now.notified();
    tokio::pin!(shutdown);
    shutdown.as_mut().enable();
    broker_core::simprobe::node_started(config.node_id);
    // Planted `LogSyncsParentDir`: a rule chosen when the node is built, at the disk's edge.
    let d: Arc<dyn Disk> = match config.planted(PlantedBug::LogSyncsParentDir) {
        true => Arc::new(SyncsParentDir(disk)),
        false => Arc::new(disk),
    };
    let (broker, quorum) = loop {
        let now = server::now_ms();
        let quorum = server::config::open_quorum(d.clone(), &config, now).map(|q| q.map(|(q, _)| q));
        let opened = quorum.and_then(|q| Broker::open(d.clone(), config.clone(), now).map(|b| (b, q)).map_err(|e| e.to_string()));
        match opened {
            Ok(x) => break x,
            Err(e) => {
                event(&rec, &name, "open_failed", json!({"error": e, "restart_in_ms": supervisor_restart_ms}));
                tokio::time::sleep(Duration::from_millis(supervisor_restart_ms)).await;
            }
        }
    };
    event(&rec, &name, "started", json!({}));
    let addr = SocketAddr::new(IpAddr::from([0, 0, 0, 0]), broker_port);
    let listener = bind(addr, &name, &rec).await;
    // With the scenario's security, its SASL listener too (`cluster::security`).
    let mut others = Vec::new();
    for spec in config.security.listeners.iter().skip(1) {
        others.push((bind(spec.addr, &name, &rec).await, spec.clone()));
    }
    // The broker's own account of what it did (leaderships taken, replicas opened or removed,
    // recovery cuts, storage failures) goes into the trace beside the harness's events.
    let (r, node) = (rec.clone(), name.clone());
    let observer: Observer = Box::new(move |action| match action {
        Action::Wake => {} // every produce: noise in a trace
        Action::Sync { .. } => {} // every flushed produce: its effect is in the disk's history
        Action::SyncCheckpoint(_) => {} // every checkpoint: its effect is in the disk's history
        Action::Open(_) => {} // replicas to open: their report's lines say what opened
        Action::Raft(_) => {} // every Raft message: the network's to trace
        Action::MetadataMoved => {} // every metadata commit: the quorum's lines and observations say what moved
        Action::FetchFrom { .. } | Action::FetcherBackOff { .. } => {} // every fetcher round: the network's to trace
        Action::Answer { .. } => {} // the request's response is in the client's history
        Action::SendMarkers(_) => {} // the markers' requests: the network's to trace
        Action::ShareState(_) => {} // a share-partition leader's state requests: the network's to trace
        Action::Release(_) => {} // retention's deletions: their effect is in the disk's history
        Action::Remove(_) => {} // a removed replica's files: their effect is in the disk's history
        Action::PersistProducerIds(_) => {} // a producer-id block: its effect is in the disk's history
        Action::Clean { .. } => {} // a cleaning step: its effect is in the disk's history
        Action::Swap { .. } => {} // a cleaning swap: its effect is in the disk's history
        Action::Truncate { .. } => {} // a truncation's IO: the fetcher's line says what was cut
        Action::Load { .. } => {} // a coordinator's load step: its lines say what loaded
        Action::Reregister => event(&r, &node, "reregister", json!({})),
        Action::Log(level, line) => event(&r, &node, "broker_log", json!({"level": format!("{level:?}").to_lowercase(), "line": line})),
        // In the trace as its log line already; the history keeps it for `leader_epochs`.
        Action::Leading { topic, topic_id, partition, leader_epoch } => {
            let mut rec = r.lock().expect("recorder");
            let at_ms = rec.now_ms();
            rec.history.leaderships.push(Leadership { at_ms, broker: node.clone(), topic: topic.clone(), topic_id: *topic_id, partition: *partition, leader_epoch: *leader_epoch });
        }
    });
    let shared = Shared::observed(broker, quorum, d, observer);
    match config.security.listeners.first() {
        None => server::serve(listener, shared, shutdown).await,
        Some(first) => server::serve_listeners([(listener, first.clone())].into_iter().chain(others).collect(), None, shared, shutdown).await,
    }
    stop.stopped.store(true, Ordering::SeqCst);
    event(&rec, &name, "stopped", json!({}));
}

/// Binds `addr`, trying again while the previous incarnation's socket may not be released yet
/// (a restart landing on a restart).
async fn bind(addr: SocketAddr, name: &str, rec: &Rec) -> tokio::net::TcpListener {
    loop {
        match tokio::net::TcpListener::bind(addr).await {
            Ok(l) => return l,
            Err(e) => {
                event(rec, name, "bind_failed", json!({"error": e.to_string(), "restart_in_ms": supervisor_restart_ms}));
                tokio::time::sleep(Duration::from_millis(supervisor_restart_ms)).await;
            }
        }
    }
}

/// The planted `LogSyncsParentDir`: a log directory's fsync goes to the data directory above
/// it instead — code that syncs the wrong directory. A file system that commits one journal
/// for every directory (ext4, and SimDisk before issue 26) makes that look right; POSIX, and
/// SimDisk's per-directory model now, lose the log's new names to a power loss.
struct SyncsParentDir(SimDisk);

impl Disk for SyncsParentDir {
    fn open(&self, path: &std::path::Path, create: bool) -> std::io::Result<Box<dyn broker_core::storage::DiskFile>> {
        self.0.open(path, create)
    }
    fn exists(&self, path: &std::path::Path) -> bool {
        self.0.exists(path)
    }
    fn create_dir_all(&self, dir: &std::path::Path) -> std::io::Result<()> {
        self.0.create_dir_all(dir)
    }
    fn list(&self, dir: &std::path::Path) -> std::io::Result<Vec<String>> {
        self.0.list(dir)
    }
    fn rename(&self, from: &std::path::Path, to: &std::path::Path) -> std::io::Result<()> {
        self.0.rename(from, to)
    }
    fn remove(&self, path: &std::path::Path) -> std::io::Result<()> {
        self.0.remove(path)
    }
    fn remove_dir(&self, dir: &std::path::Path) -> std::io::Result<()> {
        self.0.remove_dir(dir)
    }
    fn sync_dir(&self, dir: &std::path::Path) -> std::io::Result<()> {
        // A log directory is one below the data directory (`/data/orders-0`).
        match dir.parent().filter(|&p| p == std::path::Path::new("/data")) {
            Some(data) => self.0.sync_dir(data),
            None => self.0.sync_dir(dir),
        }
    }
    fn sync_all(&self, dir: &std::path::Path) -> std::io::Result<()> {
        self.0.sync_all(dir)
    }
    fn take_stall(&self) -> Duration {
        self.0.take_stall()
    }
}
