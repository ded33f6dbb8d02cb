//! Test support (for this crate's tests and the simulator's): a one-node cluster in process — the real broker and the real controller with
//! its metadata log on real files — with [`sync`] doing synchronously what the shell's peer
//! tasks do over the network (register, heartbeat, forward auto-creation, apply metadata).

use crate::broker::{Broker, BrokerConfig};
use crate::metadata::decode_records;
use crate::node::Node;
use crate::storage::{Disk, FileDisk};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// A broker's config for tests that call its decisions directly: appends written inline, as
/// no shell runs the write-behind's jobs ([`run_syncs`] runs the syncs a test asks for).
pub fn config(dir: &Path) -> BrokerConfig {
    BrokerConfig { data_dir: dir.to_path_buf(), write_behind: false, ..BrokerConfig::default() }
}

/// A node that is its own controller, registered and unfenced, with no topics, on real files.
pub fn one_node(config: BrokerConfig) -> Node {
    one_node_on(Arc::new(FileDisk::new()), config)
}

/// [`one_node`] on any disk.
pub fn one_node_on(disk: Arc<dyn Disk>, config: BrokerConfig) -> Node {
    let (quorum, _) = crate::server::config::open_quorum(disk.clone(), &config, 0).unwrap().expect("a node of its own quorum");
    let broker = Broker::open(disk, config, 0).unwrap();
    let node = Node::new(broker, Some(quorum));
    register(&node, 0);
    node
}

/// Registers the node with its controller and heartbeats until it is unfenced.
pub fn register(node: &Node, now: u64) -> i64 {
    let c = node.broker().config().clone();
    let epoch = {
        let mut q = node.controller().unwrap();
        let next = q.end_offset();
        let records = q.controller_mut().register_broker(c.node_id, &c.endpoints(), crate::controller::no_previous_epoch, next, now).unwrap();
        q.commit(records, now).unwrap();
        next
    };
    let actions = node.input(crate::node::Input::Registered { epoch }, now);
    let _ = run_opens(node, actions, now);
    for _ in 0..2 {
        sync(node, now);
    }
    epoch
}

/// One round of the peer tasks: heartbeat, forward auto-creations, apply new metadata.
pub fn sync(node: &Node, now: u64) {
    let (id, epoch_offset) = {
        let b = node.broker();
        (b.config().node_id, b.image().offset)
    };
    let names = node.broker().auto_create_requests();
    {
        let mut q = node.controller().unwrap();
        if let Some(epoch) = q.controller().image().brokers.get(&id).map(|b| b.epoch) {
            let (_, records) = q.controller_mut().heartbeat(id, epoch, epoch_offset, now).unwrap();
            q.commit(records, now).unwrap();
        }
        for n in names {
            let (partitions, rf, configs) = match n.as_str() {
                crate::group::offsets_topic => {
                    let (p, rf, c) = crate::group::offsets_topic_spec(&node.broker().config().groups, 1);
                    (p, rf, c.into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
                }
                crate::txn::transaction_state_topic => {
                    let (p, rf, c) = crate::txn::state_topic_spec(&node.broker().config().txns, 1);
                    (p, rf, c.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
                }
                _ => (-1, -1, Vec::new()),
            };
            match q.controller().create_topic(&n, partitions, rf, configs.into_iter().collect(), now) {
                Ok((_, records)) => {
                    q.commit(records, now).unwrap();
                }
                Err(e) => {
                    eprintln!("auto-creating {n}: {e}");
                    drop(node.input(crate::node::Input::AutoCreateRefused(n), now))
                }
            }
        }
    }
    apply_metadata(node, now);
}

/// Applies every committed metadata record the broker has not seen, running the open jobs it
/// hands out; returns the other actions.
pub fn apply_metadata(node: &Node, now: u64) -> Vec<crate::broker::Action> {
    let actions = node.input(crate::node::Input::Metadata(metadata_run(node)), now);
    run_opens(node, actions, now)
}

/// The committed metadata records the broker has not applied yet.
pub fn metadata_run(node: &Node) -> Vec<(i64, crate::metadata::MetadataRecord)> {
    let from = node.broker().image().offset + 1;
    let bytes = node.controller().unwrap().read(from, 1 << 30);
    decode_records(&bytes).unwrap().into_iter().filter(|(o, _)| *o >= from).collect()
}

/// Runs the open jobs among `actions` ([`crate::broker::Action::Open`]) at once, as the shell
/// does off the node's lock, and reports each back, so the replicas are installed and take
/// their roles; returns the other actions and the reports'.
pub fn run_opens(node: &Node, actions: Vec<crate::broker::Action>, now: u64) -> Vec<crate::broker::Action> {
    let mut rest = Vec::new();
    for action in actions {
        match action {
            crate::broker::Action::Open(job) => {
                let reported = node.input(crate::node::Input::Opened(job.run()), now);
                rest.extend(run_opens(node, reported, now));
            }
            other => rest.push(other),
        }
    }
    rest
}

/// Runs the syncs, cleaning steps, swaps, truncations and open jobs among
/// `actions` ([`crate::broker::Action::Sync`], [`crate::broker::Action::Clean`],
/// [`crate::broker::Action::Swap`], [`crate::broker::Action::Truncate`],
/// [`crate::broker::Action::Open`]) at once, as the shell
/// does off the node's lock, and reports each back; returns the other actions and the reports'
/// (a cleaning step's report's own jobs, its swap, run too).
/// For tests that drive the broker directly.
pub fn run_syncs(b: &mut Broker, actions: Vec<crate::broker::Action>, now: u64) -> Vec<crate::broker::Action> {
    let mut rest = Vec::new();
    for action in actions {
        match action {
            crate::broker::Action::Sync { topic, partition, job } => {
                let result = job.run();
                rest.extend(b.synced(&topic, partition, job.stamp, result, now));
            }
            crate::broker::Action::Clean { topic, partition, job } => {
                let reported = b.cleaned(&topic, partition, job.run(), now);
                rest.extend(run_syncs(b, reported, now));
            }
            crate::broker::Action::Swap { topic, partition, job } => rest.extend(b.swapped(&topic, partition, job.run(), now)),
            crate::broker::Action::Truncate { topic, partition, job } => rest.extend(b.truncated(&topic, partition, job.run(), now)),
            crate::broker::Action::Open(job) => {
                let reported = b.opened(job.run(), now);
                rest.extend(run_syncs(b, reported, now));
            }
            other => rest.push(other),
        }
    }
    rest
}

/// Creates a topic through the controller and applies it.
pub fn create(node: &Node, name: &str, partitions: i32, config: BTreeMap<String, String>) -> Result<[u8; 16], crate::controller::Error> {
    let (id, records) = node.controller().unwrap().controller().create_topic(name, partitions, -1, config, 0)?;
    node.controller().unwrap().commit(records, 0).unwrap();
    apply_metadata(node, 0);
    Ok(id)
}

/// Changes a topic's config through the controller (IncrementalAlterConfigs' decision) and
/// applies it.
pub fn alter_config(node: &Node, name: &str, ops: &[(&str, crate::metadata::configs::Op)]) -> Result<(), crate::controller::Error> {
    let ops: Vec<(String, crate::metadata::configs::Op)> = ops.iter().map(|(k, op)| (k.to_string(), op.clone())).collect();
    let records = node.controller().unwrap().controller().alter_topic_config(name, &ops)?;
    node.controller().unwrap().commit(records, 0).unwrap();
    apply_metadata(node, 0);
    Ok(())
}

/// Deletes a topic through the controller and applies it.
pub fn delete(node: &Node, name: &str) -> Result<(), crate::controller::Error> {
    let records = node.controller().unwrap().controller().delete_topic(name)?;
    node.controller().unwrap().commit(records, 0).unwrap();
    apply_metadata(node, 0);
    Ok(())
}

/// A [`Hook`](crate::storage::hooked::Hook) that makes one kind of disk work slow for files
/// whose path contains `slow_path`, once armed: syncs ([`SlowDisk::syncs`]; `sync_all` too,
/// which syncs them), writes to `.log` files ([`SlowDisk::writes`]: the kernel throttling a
/// writer), or only file-system syncs ([`SlowDisk::sync_all`]: a `syncfs` flushing a loaded
/// broker's dirty pages). The real build sleeps the thread, the simulated build owes the time as stall (as
/// `SimDisk`'s latency does). Used by [`slow_io_stops_only_its_partition`] over a
/// [`Hooked`](crate::storage::hooked::Hooked) disk.
pub struct SlowDisk {
    slow_path: String,
    delay: std::time::Duration,
    kind: Slow,
    /// Set by the test just before the write it wants slowed.
    pub armed: Arc<std::sync::atomic::AtomicBool>,
    /// Set once a slow call has begun.
    pub started: Arc<std::sync::atomic::AtomicBool>,
    /// The simulated build's stall owed (the real build sleeps instead).
    #[cfg_attr(not(madsim), allow(dead_code))]
    owed_ns: std::sync::atomic::AtomicU64,
}

/// Which disk work a [`SlowDisk`] slows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slow {
    Syncs,
    Writes,
    SyncAll,
}

impl SlowDisk {
    /// Slow syncs.
    pub fn syncs(slow_path: &str, delay: std::time::Duration) -> SlowDisk {
        SlowDisk { slow_path: slow_path.into(), delay, kind: Slow::Syncs, armed: Default::default(), started: Default::default(), owed_ns: Default::default() }
    }

    /// Slow writes to segment files.
    pub fn writes(slow_path: &str, delay: std::time::Duration) -> SlowDisk {
        SlowDisk { kind: Slow::Writes, ..SlowDisk::syncs(slow_path, delay) }
    }

    /// Slow file-system syncs, nothing else.
    pub fn sync_all(delay: std::time::Duration) -> SlowDisk {
        SlowDisk { kind: Slow::SyncAll, ..SlowDisk::syncs("", delay) }
    }
}

impl crate::storage::hooked::Hook for SlowDisk {
    fn before(&self, op: crate::storage::hooked::Op<'_>) -> std::io::Result<()> {
        use crate::storage::hooked::Op;
        use std::sync::atomic::Ordering::SeqCst;
        let ours = |path: &Path| path.to_string_lossy().contains(&self.slow_path);
        let slow = match (op, self.kind) {
            (Op::Sync { path }, Slow::Syncs) => ours(path),
            (Op::SyncAll { .. }, Slow::Syncs | Slow::SyncAll) => true,
            (Op::WriteAt { path, .. } | Op::Append { path, .. }, Slow::Writes) => ours(path) && path.extension().is_some_and(|e| e == "log"),
            _ => false,
        };
        if slow && self.armed.load(SeqCst) {
            self.started.store(true, SeqCst);
            #[cfg(not(madsim))]
            std::thread::sleep(self.delay);
            #[cfg(madsim)]
            self.owed_ns.fetch_add(self.delay.as_nanos() as u64, SeqCst);
        }
        Ok(())
    }
    fn take_stall(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.owed_ns.swap(0, std::sync::atomic::Ordering::SeqCst))
    }
}

/// A [`Hook`](crate::storage::hooked::Hook) that fails every write to a `.log` file while its
/// switch is on: a write job of the write-behind that fails (`log::deferred`).
pub struct FailLogWrites(pub Arc<std::sync::atomic::AtomicBool>);

impl crate::storage::hooked::Hook for FailLogWrites {
    fn before(&self, op: crate::storage::hooked::Op<'_>) -> std::io::Result<()> {
        let on = self.0.load(std::sync::atomic::Ordering::Relaxed);
        match op {
            crate::storage::hooked::Op::WriteAt { path, .. } if on && path.extension().is_some_and(|e| e == "log") => Err(std::io::Error::other("injected write error")),
            _ => Ok(()),
        }
    }
}

/// How long each request took in [`slow_io_stops_only_its_partition`], from the moment the
/// produce to `a` was sent.
#[derive(Debug)]
pub struct SlowIoTimes {
    /// The produce to `b`, sent once `a`'s fsync had begun.
    pub other_partition: std::time::Duration,
    /// A Metadata round trip, sent right after it.
    pub metadata: std::time::Duration,
    /// The produce to `a` itself.
    pub own: std::time::Duration,
}

impl SlowIoTimes {
    /// Asserts what [`slow_io_stops_only_its_partition`] promises for a slow call (`what`, as
    /// "fsync" or "write") of `slow`: the other partition's produce and Metadata waited less than
    /// half of it (generous margins: the machine may be busy), the slow partition's produce all
    /// of it.
    pub fn assert_only_its_partition_waited(&self, slow: std::time::Duration, what: &str) {
        assert!(self.other_partition < slow / 2, "the produce to b waited for a's {slow:?} {what}: {self:?}");
        assert!(self.metadata < slow / 2, "Metadata waited for a's {slow:?} {what}: {self:?}");
        assert!(self.own >= slow, "the produce to a was answered before its {slow:?} {what}: {self:?}");
    }
}

/// What waits for what when one partition's disk work is slow, the same in the real and the
/// simulated build: against a one-node broker at `addr` whose disk is slow on topic `a`'s
/// files ([`SlowDisk`]: its fsyncs under a flush-every-batch config, or its writes), a produce
/// to `b` and a Metadata request sent while `a`'s slow call is under way are answered without
/// waiting for it (Kafka holds only that partition's log lock across its flush), and the produce
/// to `a` is answered only after it (acks=1 promises the record is written, and under
/// flush-every-batch on disk).
pub async fn slow_io_stops_only_its_partition(addr: std::net::SocketAddr, armed: Arc<std::sync::atomic::AtomicBool>, started: Arc<std::sync::atomic::AtomicBool>) -> SlowIoTimes {
    use crate::client::{cluster::Cluster, Producer, ProducerConfig};
    use std::sync::atomic::Ordering::SeqCst;
    use std::time::Duration;
    let config = ProducerConfig { acks: 1, idempotent: false, request_timeout: Duration::from_secs(30), ..ProducerConfig::default() };
    let mut to_a = Producer::new(addr, config.clone());
    let mut to_b = Producer::new(addr, config);
    let mut cluster = Cluster::new(vec![addr], "slow-fsync", Duration::from_secs(30));
    // Both topics exist and both producers know their leader before the measured sends.
    to_a.send("a", 0, &[(None, Some("warm".into()))], 0).await.expect("produce to a");
    to_b.send("b", 0, &[(None, Some("warm".into()))], 0).await.expect("produce to b");
    cluster.refresh(&["a", "b"]).await.expect("metadata");
    armed.store(true, SeqCst);
    let sent = crate::server::now_ms();
    // Larger than `write_inline_bytes_max`: its write goes to the blocking pool, as every sync
    // does (a small write runs on the connection's own task, off the node's gate but on a
    // runtime worker, docs/architecture.md "IO at the edge").
    let slow_value = vec![b's'; 2 * crate::constants::write_inline_bytes_max as usize];
    let slow = tokio::spawn(async move {
        to_a.send("a", 0, &[(None, Some(slow_value.into()))], 0).await.expect("produce to a");
        crate::server::now_ms()
    });
    while !started.load(SeqCst) {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    to_b.send("b", 0, &[(None, Some("fast".into()))], 0).await.expect("produce to b during a's slow call");
    let other_partition = Duration::from_millis(crate::server::now_ms() - sent);
    cluster.refresh(&["a", "b"]).await.expect("metadata during a's slow call");
    let metadata = Duration::from_millis(crate::server::now_ms() - sent);
    let own = Duration::from_millis(slow.await.expect("task") - sent);
    SlowIoTimes { other_partition, metadata, own }
}

/// What waits for a topic's creation when the file-system sync that makes its replicas
/// durable is slow ([`SlowDisk::sync_all`]): against a one-node broker at `addr`, a topic `c`
/// is created (auto-created by a produce to it) while the disk is armed; once that sync has
/// begun, a produce to `b` and a Metadata request are answered without waiting for it, and the
/// produce to `c` only after it (its replica takes no write before, `broker::opening`). Times as
/// [`SlowIoTimes`], `own` the produce to `c`.
pub async fn slow_creation_stops_only_its_topic(addr: std::net::SocketAddr, armed: Arc<std::sync::atomic::AtomicBool>, started: Arc<std::sync::atomic::AtomicBool>) -> SlowIoTimes {
    use crate::client::{cluster::Cluster, Producer, ProducerConfig};
    use std::sync::atomic::Ordering::SeqCst;
    use std::time::Duration;
    let config = ProducerConfig { acks: 1, idempotent: false, request_timeout: Duration::from_secs(30), ..ProducerConfig::default() };
    let mut to_c = Producer::new(addr, config.clone());
    let mut to_b = Producer::new(addr, config);
    let mut cluster = Cluster::new(vec![addr], "slow-create", Duration::from_secs(30));
    to_b.send("b", 0, &[(None, Some("warm".into()))], 0).await.expect("produce to b");
    cluster.refresh(&["b"]).await.expect("metadata");
    armed.store(true, SeqCst);
    let sent = crate::server::now_ms();
    let create = tokio::spawn(async move {
        to_c.send("c", 0, &[(None, Some("first".into()))], 0).await.expect("produce to c, creating it");
        crate::server::now_ms()
    });
    while !started.load(SeqCst) {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    to_b.send("b", 0, &[(None, Some("fast".into()))], 0).await.expect("produce to b during c's creation sync");
    let other_partition = Duration::from_millis(crate::server::now_ms() - sent);
    cluster.refresh(&["b"]).await.expect("metadata during c's creation sync");
    let metadata = Duration::from_millis(crate::server::now_ms() - sent);
    let own = Duration::from_millis(create.await.expect("task") - sent);
    SlowIoTimes { other_partition, metadata, own }
}

/// What waits for a slow sync of the metadata log, which a quorum decision makes holding the
/// quorum's lock: against a one-node broker at `addr` whose disk is slow on the metadata log's
/// syncs ([`SlowDisk`]), a broker's Fetch of the metadata log sent while a CreateTopics' sync is
/// under way waits for the quorum, and a produce to `b` and a Metadata request sent after it
/// are answered without waiting (the Fetch is decided under the quorum's gate, not the node's:
/// `node::Prepared::decided_by_quorum`); the CreateTopics is answered only after the sync.
pub async fn slow_metadata_sync_stops_only_the_quorum(addr: std::net::SocketAddr, armed: Arc<std::sync::atomic::AtomicBool>, started: Arc<std::sync::atomic::AtomicBool>) -> SlowIoTimes {
    use crate::client::{cluster::Cluster, conn::Conn, Producer, ProducerConfig};
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchRequest, FetchTopic};
    use kafka_protocol::messages::{BrokerId, TopicName};
    use std::sync::atomic::Ordering::SeqCst;
    use std::time::Duration;
    let config = ProducerConfig { acks: 1, idempotent: false, request_timeout: Duration::from_secs(30), ..ProducerConfig::default() };
    let mut to_b = Producer::new(addr, config);
    let mut cluster = Cluster::new(vec![addr], "slow-metadata", Duration::from_secs(30));
    to_b.send("b", 0, &[(None, Some("warm".into()))], 0).await.expect("produce to b");
    cluster.refresh(&["b"]).await.expect("metadata");
    let mut follower = Conn::connect(addr, "metadata-follower", Duration::from_secs(30)).await.expect("connect");
    armed.store(true, SeqCst);
    let sent = crate::server::now_ms();
    let create = tokio::spawn(async move {
        crate::client::admin::create_topics(addr, &[("c".into(), 1, 1)], Duration::from_secs(30)).await.expect("create c");
        crate::server::now_ms()
    });
    while !started.load(SeqCst) {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let follow = tokio::spawn(async move {
        let mut p = FetchPartition::default();
        p.fetch_offset = 0;
        p.partition_max_bytes = 1 << 20;
        let mut t = FetchTopic::default();
        t.topic = TopicName(crate::protocol::s(crate::metadata::metadata_topic));
        t.partitions = vec![p];
        let mut req = FetchRequest::default();
        req.replica_id = BrokerId(1);
        req.max_bytes = 1 << 20;
        req.session_epoch = -1;
        req.topics = vec![t];
        follower.send_at(&req, Some(12), Duration::from_secs(30)).await.expect("fetch of the metadata log")
    });
    // Let the Fetch reach its gate first.
    tokio::time::sleep(Duration::from_millis(50)).await;
    to_b.send("b", 0, &[(None, Some("fast".into()))], 0).await.expect("produce to b during the metadata log's sync");
    let other_partition = Duration::from_millis(crate::server::now_ms() - sent);
    cluster.refresh(&["b"]).await.expect("metadata during the metadata log's sync");
    let metadata = Duration::from_millis(crate::server::now_ms() - sent);
    armed.store(false, SeqCst);
    let own = Duration::from_millis(create.await.expect("task") - sent);
    let fetched = follow.await.expect("task");
    assert_eq!(fetched.responses[0].partitions[0].error_code, 0, "the metadata log's Fetch was refused");
    SlowIoTimes { other_partition, metadata, own }
}

/// A one-node broker (its own controller) for the slow-disk test, advertised at `addr`, data
/// in `data_dir`, flushing every batch so each produce fsyncs: the shell state to `serve`.
pub fn flush_every_batch_node(disk: Arc<dyn Disk>, data_dir: &Path, addr: std::net::SocketAddr) -> Arc<crate::server::Shared> {
    node_serving(disk, data_dir, addr, |_| {})
}

/// A one-node broker and controller to serve on `addr` (with [`crate::server::serve`]), every
/// batch flushed, its config adjusted by `adjust`.
pub fn node_serving(disk: Arc<dyn Disk>, data_dir: &Path, addr: std::net::SocketAddr, adjust: impl FnOnce(&mut BrokerConfig)) -> Arc<crate::server::Shared> {
    let mut config = BrokerConfig {
        data_dir: data_dir.to_path_buf(),
        advertised_host: addr.ip().to_string(),
        advertised_port: addr.port() as i32,
        voters: [(0, addr.to_string())].into(),
        log: crate::log::LogConfig { flush: crate::log::FlushPolicy::EveryBatch, ..crate::log::LogConfig::default() },
        ..BrokerConfig::default()
    };
    adjust(&mut config);
    let now = crate::server::now_ms();
    let (quorum, _) = crate::server::config::open_quorum(disk.clone(), &config, now).expect("open the metadata log").expect("a node of its own quorum");
    let broker = Broker::open(disk.clone(), config, now).expect("open the broker");
    crate::server::Shared::new(broker, Some(quorum), disk)
}

/// xorshift64: enough randomness for test cases, seeded, no extra crate.
pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> Self {
        XorShift(seed | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform enough in `0..n`; 0 when `n` is 0.
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next_u64() % n as u64) as usize }
    }
}
