//! The async shell around the broker: listener, one task per connection, the timers that drive
//! time-based log work, graceful shutdown. Written against tokio's API as re-exported by
//! madsim-tokio, so the same code runs on real sockets and on madsim's simulated network.
//!
//! This is the IO edge: it reads the clock and passes `now` into the decision code. Requests
//! on one connection are answered strictly in order (Kafka's rule); a long-polling fetch holds
//! its connection, as in Kafka, and wakes when a produce appends or its wait runs out.

mod answer;
pub mod config;
mod config_coordinators;
mod config_quorum;
mod config_security;
mod connection;
mod forward;
mod jobs;
use jobs::Job;
mod links;
mod markers;
mod share_state;
pub mod metrics;
mod peers;
mod raft;
mod replica_fetch;
mod sasl;
pub use sasl::nonce;
mod send;
mod throttling;
pub mod tls;
mod verify;

use crate::broker::{Action, Answer, Broker, Level, Ticket};
use crate::controller::quorum::Quorum;
use crate::constants::{accept_error_backoff_ms, startup_wait_ms_max, checkpoint_interval_ms, connections_max, tick_interval_ms};
use crate::node::{Input, Node};
use crate::storage::Disk;
use std::sync::{Arc, Mutex};
use tokio::time::Instant;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// Milliseconds since the epoch: real time, or simulated time under madsim.
/// Closes deleted segments' files where blocking stops nobody: on the blocking pool in the real
/// build (the last close frees a large file's blocks, tens of milliseconds); at once in the
/// simulated one, whose disk charges nothing for it.
fn close_off_gate(files: crate::log::Released) {
    #[cfg(not(madsim))]
    drop(tokio::task::spawn_blocking(move || files.close()));
    #[cfg(madsim)]
    files.close();
}

pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// What every connection task shares.
pub struct Shared {
    pub node: Node,
    disk: Arc<dyn Disk>,
    /// Woken whenever the node's data changed (an append, a high watermark, applied metadata),
    /// so parked fetches and waiting requests look again.
    changed: Notify,
    /// Woken when the controller committed metadata, so parked fetches of the metadata log look
    /// again (kept apart: every produce would otherwise wake them for nothing).
    metadata_committed: Notify,
    /// Woken when the metadata quorum may have messages to send or a new deadline.
    raft_wake: Notify,
    /// The requests waiting on coordinator tickets: where each ticket's answer goes
    /// ([`Action::Answer`]). A ticket is entered in the decision that hands it out, so
    /// no later decision's answer can miss it.
    group_waits: Mutex<std::collections::BTreeMap<Ticket, tokio::sync::mpsc::UnboundedSender<(Ticket, Answer)>>>,
    /// This node's own handle, for tasks a decision's actions start (a marker request,
    /// `markers.rs`), spawned only when needed: a run without transactions schedules as before.
    me: std::sync::Weak<Shared>,
    /// Idle connections to brokers for the requests decisions ask the shell to send, by address
    /// and purpose (`links.rs`): taken for one request and given back after it.
    links: Mutex<std::collections::BTreeMap<(std::net::SocketAddr, &'static str), Vec<crate::client::Conn>>>,
    /// Raft messages a decision asked to send, queued when its gate opens (`queue_raft`).
    raft_outgoing: Mutex<Vec<crate::controller::raft::Message>>,
    /// On a voter, each other voter's message queue (set when the Raft task starts).
    raft_queues: std::sync::OnceLock<std::collections::BTreeMap<i32, tokio::sync::mpsc::Sender<crate::controller::raft::Message>>>,
    /// Which voter the peer links ask next when no quorum leader is known (round robin).
    controller_turn: std::sync::atomic::AtomicUsize,
    /// This broker's epoch with the controller, once registered.
    broker_epoch: Mutex<Option<i64>>,
    /// Set once the broker was first unfenced: client requests wait for it at startup.
    started: std::sync::atomic::AtomicBool,
    /// Set by [`Action::Reregister`]; the controller link registers anew and clears it.
    reregister: std::sync::atomic::AtomicBool,
    /// Held for one decision and its disk IO (see [`Shared::decide`]).
    disk_gate: tokio::sync::Mutex<()>,
    /// The metadata quorum's own gate (see [`Shared::decide_quorum`]).
    quorum_gate: tokio::sync::Mutex<()>,
    /// Turns to read a request and take it through its first decision: `requests_read_max`.
    request_turns: Arc<tokio::sync::Semaphore>,
    /// The broker's BUGGIFY handle (for late disk completions; inert outside seeded runs).
    buggify: crate::buggify::Buggify,
    /// Sees every action the broker asks for before it is performed (the simulator records
    /// them in its trace); None in the real broker.
    observer: Option<Observer>,
    /// TLS for the node's SSL and SASL_SSL listeners and links, if it has any.
    tls: Option<tls::Tls>,
    /// What the shell counts for `/metrics` (`metrics`).
    metrics: metrics::Metrics,
    /// `BrokerConfig::legacy_api_versions`: requests of Kafka 3.9's removed versions are
    /// bridged (`protocol::legacy`).
    legacy_api_versions: bool,
}

/// A callback for each [`Action`], see [`Shared::observed`].
pub type Observer = Box<dyn Fn(&Action) + Send + Sync>;

impl Shared {
    /// `controller` is the metadata quorum if this node is the controller.
    pub fn new(broker: Broker, controller: Option<Quorum>, disk: Arc<dyn Disk>) -> Arc<Shared> {
        Shared::build(broker, controller, disk, None, None)
    }

    /// [`Shared::new`], with TLS for the listeners and links that use it (`tls::Tls::load`).
    pub fn secured(broker: Broker, controller: Option<Quorum>, disk: Arc<dyn Disk>, tls: Option<tls::Tls>) -> Arc<Shared> {
        Shared::build(broker, controller, disk, None, tls)
    }

    /// [`Shared::new`], with `observer` called for every action the broker asks for.
    pub fn observed(broker: Broker, controller: Option<Quorum>, disk: Arc<dyn Disk>, observer: Observer) -> Arc<Shared> {
        Shared::build(broker, controller, disk, Some(observer), None)
    }

    fn build(broker: Broker, controller: Option<Quorum>, disk: Arc<dyn Disk>, observer: Option<Observer>, tls: Option<tls::Tls>) -> Arc<Shared> {
        let buggify = broker.config().buggify.clone();
        let legacy_api_versions = broker.config().legacy_api_versions;
        Arc::new_cyclic(|me| Shared {
            me: me.clone(),
            node: Node::new(broker, controller),
            disk,
            changed: Notify::new(),
            metadata_committed: Notify::new(),
            raft_wake: Notify::new(),
            raft_queues: std::sync::OnceLock::new(),
            raft_outgoing: Mutex::new(Vec::new()),
            links: Mutex::new(Default::default()),
            group_waits: Mutex::new(Default::default()),
            controller_turn: Default::default(),
            broker_epoch: Mutex::new(None),
            started: Default::default(),
            reregister: Default::default(),
            disk_gate: tokio::sync::Mutex::new(()),
            quorum_gate: tokio::sync::Mutex::new(()),
            request_turns: Arc::new(tokio::sync::Semaphore::new(crate::constants::requests_read_max)),
            buggify,
            observer,
            tls,
            metrics: Default::default(),
            legacy_api_versions,
        })
    }

    pub fn broker(&self) -> crate::node::BrokerGuard<'_> {
        self.node.broker()
    }

    /// Resolves once this broker has been registered and unfenced and the replicas it opened
    /// meanwhile are open (once; later fencing does not hold requests), or after `startup_wait_ms_max`; at once on a voter-only node, which
    /// never registers.
    async fn started(&self) {
        if self.is_started() {
            return;
        }
        let deadline = Instant::now() + Duration::from_millis(startup_wait_ms_max);
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let ready = {
                let b = self.broker();
                // This process's own registration applied (so every replica it names here was
                // queued to open) and every replica opened, as Kafka loads every log before it
                // serves.
                b.ready() && b.image().brokers.get(&b.config().node_id).is_some_and(|x| !x.fenced) && b.opening() == 0
            };
            if ready || Instant::now() >= deadline {
                self.started.store(true, std::sync::atomic::Ordering::Relaxed);
                return;
            }
            tokio::select! {
                // biased: tokio picks branches with an unseeded RNG otherwise,
                // which breaks replay under madsim.
                biased;
                _ = &mut notified => {}
                _ = tokio::time::sleep_until(deadline) => {}
            }
        }
    }

    /// Enters `tickets` (handed out by the decision running now) to be answered to the returned
    /// receiver; None if there are none.
    fn await_answers(&self, tickets: &[Ticket]) -> Option<tokio::sync::mpsc::UnboundedReceiver<(Ticket, Answer)>> {
        if tickets.is_empty() {
            return None;
        }
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let mut waits = self.group_waits.lock().unwrap_or_else(|p| p.into_inner());
        for t in tickets {
            waits.insert(*t, tx.clone());
        }
        Some(rx)
    }

    /// Takes the Raft messages out of `actions` to be queued for their voters when the
    /// decision's gate opens ([`Shared::decide_under`]): after the disk latency it owes, as a
    /// real voter's messages leave after its fsync, and in the order decisions were made.
    fn queue_raft(&self, actions: &mut Vec<Action>) {
        if !actions.iter().any(|a| matches!(a, Action::Raft(_))) {
            return;
        }
        let mut outgoing = self.raft_outgoing.lock().unwrap_or_else(|p| p.into_inner());
        for a in std::mem::take(actions) {
            match a {
                Action::Raft(m) => outgoing.push(m),
                other => actions.push(other),
            }
        }
    }

    /// `tickets` are no longer waited on.
    fn forget_answers(&self, tickets: &[Ticket]) {
        let mut waits = self.group_waits.lock().unwrap_or_else(|p| p.into_inner());
        for t in tickets {
            waits.remove(t);
        }
    }

    /// Whether [`Shared::started`] resolves at once.
    fn is_started(&self) -> bool {
        self.started.load(std::sync::atomic::Ordering::Relaxed) || !self.broker().config().broker_role
    }

    fn changed(&self) {
        self.changed.notify_waiters();
    }

    /// Does what the broker asked for besides its answer. The writes and syncs it asked for
    /// ([`Action::Sync`]) run off the node's disk gate, one after another, each reported back in
    /// a decision of its own, before this returns: so a produce is answered only after the
    /// writes and syncs its decision asked for, while other requests are decided meanwhile.
    async fn perform(&self, actions: Vec<Action>) {
        let (jobs, checkpoint) = self.perform_now(actions);
        self.run_jobs(jobs).await;
        if let Some(staged) = checkpoint {
            self.finish_checkpoint(staged).await;
        }
    }

    /// The actions that need no waiting, done now; the syncs and the checkpoint's are returned.
    fn perform_now(&self, actions: Vec<Action>) -> (Vec<(String, i32, Job)>, Option<crate::broker::StagedCheckpoints>) {
        let (mut syncs, mut checkpoint, mut retired) = (Vec::new(), None, Vec::new());
        for action in actions {
            if let Some(observe) = &self.observer {
                observe(&action);
            }
            match action {
                Action::Wake => self.changed(),
                Action::Reregister => self.reregister.store(true, std::sync::atomic::Ordering::Relaxed),
                Action::Log(Level::Info, line) => tracing::info!("{line}"),
                Action::Log(Level::Warn, line) => tracing::warn!("{line}"),
                Action::Log(Level::Error, line) => tracing::error!("{line}"),
                // Taken out inside the quorum's gate already (`queue_raft`); one left here
                // is queued now.
                Action::Raft(m) => raft::queue(self, m),
                Action::SendMarkers(send) => markers::spawn(self, send),
                Action::ShareState(send) => share_state::spawn(self, send),
                Action::Answer { ticket, answer } => {
                    // No one waits any more (the request timed out, its connection closed):
                    // the answer is dropped, as Kafka drops a delayed response nobody reads.
                    let waiter = self.group_waits.lock().unwrap_or_else(|p| p.into_inner()).remove(&ticket);
                    if let Some(tx) = waiter {
                        let _ = tx.send((ticket, answer));
                    }
                }
                // Only a fetcher's own round asks for these, and its task takes them first.
                Action::FetchFrom { .. } | Action::FetcherBackOff { .. } => {}
                Action::MetadataMoved => {
                    self.metadata_committed.notify_waiters();
                    self.changed();
                }
                Action::Leading { .. } => {} // logged as a line too
                Action::Sync { topic, partition, job } => syncs.push((topic, partition, Job::Sync(job))),
                Action::Clean { topic, partition, job } => syncs.push((topic, partition, Job::Clean(job))),
                Action::Swap { topic, partition, job } => syncs.push((topic, partition, Job::Swap(job))),
                Action::Truncate { topic, partition, job } => syncs.push((topic, partition, Job::Truncate(job))),
                Action::Load { topic, partition, job } => self.spawn_load(topic, partition, job),
                Action::Release(files) => close_off_gate(files),
                Action::SyncCheckpoint(staged) => checkpoint = Some(staged),
                Action::Open(job) => self.spawn_open(job),
                Action::Remove(dir) => retired.push(dir),
                Action::PersistProducerIds(block) => self.spawn_producer_ids(block),
            }
        }
        if !retired.is_empty() {
            self.spawn_removal(retired);
        }
        (syncs, checkpoint)
    }

    /// Runs one decision that may do disk IO with the node's disk to itself, and lets the next
    /// decision in only once its IO is done: on a real disk the IO happens inside `decide`; on
    /// the simulated disk the latency it owes is slept before the gate opens. A partition's
    /// writes, fsyncs and truncations and the cleaner's steps are not decision IO: they come
    /// out as [`Action::Sync`], [`Action::Truncate`] and [`Action::Clean`] and run off the gate
    /// ([`Shared::perform`]); what is left here (unlinks, the metadata log) delays the node's other decisions
    /// alike, and requests waiting for the gate wait asynchronously instead of blocking runtime
    /// workers on the node's lock.
    pub(crate) async fn decide<T>(&self, decide: impl FnOnce(&Shared) -> T) -> T {
        self.decide_under(&self.disk_gate, decide).await
    }

    /// [`Shared::decide`] for the metadata quorum's work (the Raft voter's ticks and messages,
    /// the controller's APIs) under a gate of its own, as KRaft runs its log on its own thread:
    /// a partition's disk work never holds back an election, a vote or a commit, nor the
    /// quorum's a produce. Its decisions lock only the quorum (never the broker or the
    /// coordinator while holding it), so the two gates cannot deadlock.
    pub(crate) async fn decide_quorum<T>(&self, decide: impl FnOnce(&Shared) -> T) -> T {
        self.decide_under(&self.quorum_gate, decide).await
    }

    async fn decide_under<T>(&self, gate: &tokio::sync::Mutex<()>, decide: impl FnOnce(&Shared) -> T) -> T {
        let _disk = gate.lock().await;
        #[cfg(not(madsim))]
        let (started, what) = (std::time::Instant::now(), type_name_of(&decide));
        let out = decide(self);
        // A decision that held its gate long stopped every request behind it: says which (the
        // closure's name is its call site's function) for the operator and the benchmarks.
        #[cfg(not(madsim))]
        {
            let held = started.elapsed().as_millis();
            if held >= crate::constants::slow_decision_ms {
                let which = if std::ptr::eq(gate, &self.quorum_gate) { "quorum" } else { "disk" };
                tracing::warn!("a decision held the node's {which} gate for {held} ms ({what})");
            }
        }
        let stall = self.disk.take_stall();
        if !stall.is_zero() {
            // BUGGIFY: now and then the disk work completes late (an fsync that takes its time).
            let late = self.buggify.draw(crate::buggify::Site::SlowSync).map_or(0, |n| 20 + n % 381);
            tokio::time::sleep(stall + Duration::from_millis(late)).await;
        }
        // Raft messages come only from the quorum's decisions: sent as its gate opens.
        if std::ptr::eq(gate, &self.quorum_gate) {
            let outgoing = std::mem::take(&mut *self.raft_outgoing.lock().unwrap_or_else(|p| p.into_inner()));
            for m in outgoing {
                raft::queue(self, m);
            }
        }
        out
    }
}

/// Runs `f`, which may block for milliseconds, after telling a multi-threaded runtime, which
/// hands this worker's queued tasks to another thread meanwhile (`block_in_place`): otherwise a
/// connection's task queued behind it waited as long (a Metadata round trip of 190 ms while a
/// CreateTopics synced the metadata log, with no request waiting for a gate). As is in the
/// simulator and on a current-thread runtime.
pub(super) fn may_block<T>(f: impl FnOnce() -> T) -> T {
    #[cfg(not(madsim))]
    if tokio::runtime::Handle::try_current().is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread) {
        return tokio::task::block_in_place(f);
    }
    f()
}

/// The type name of `_value` (a closure's names the function it was written in).
#[cfg(not(madsim))]
fn type_name_of<F>(_value: &F) -> &'static str {
    std::any::type_name::<F>()
}

/// Which listener a connection came in on: its name (None for the CONTROLLER listener, whose
/// clients are the cluster's nodes), its protocol, and whether it takes only the node's own links.
#[derive(Clone)]
struct Door {
    name: Option<Arc<str>>,
    protocol: crate::security::Protocol,
    internal_only: bool,
}

/// Starts the task of one accepted connection on a listener (its TLS handshake first, on a TLS
/// listener), unless `connections_max` are open.
fn accept(stream: tokio::net::TcpStream, peer: std::net::SocketAddr, shared: &Arc<Shared>, open: &Arc<tokio::sync::Semaphore>, door: &Door) {
    let protocol = door.protocol;
    let Ok(permit) = open.clone().try_acquire_owned() else {
        tracing::warn!("refusing connection from {peer}: {connections_max} connections are open");
        return;
    };
    let _ = stream.set_nodelay(true);
    let acceptor = match (protocol.is_tls(), shared.tls.as_ref().and_then(|t| t.acceptor.clone())) {
        (false, _) => None,
        (true, Some(acceptor)) => Some(acceptor),
        (true, None) => {
            tracing::error!("refusing connection from {peer}: a {} listener without a keystore", protocol.name());
            return;
        }
    };
    let (shared, door) = (shared.clone(), door.clone());
    tokio::spawn(async move {
        let local = stream.local_addr().map(|a| a.ip()).unwrap_or(std::net::IpAddr::from([0, 0, 0, 0]));
        let link = match acceptor {
            None => connection::Link::tcp(stream, peer),
            Some(acceptor) => match tls::accept(&acceptor, stream, peer).await {
                Some((rd, wr, principal)) => connection::Link { rd, wr, peer, local, principal: Some(principal) },
                None => return,
            },
        };
        let task = connection::connection(link, shared, protocol, door.name, door.internal_only);
        // What every open connection holds across its awaits (constants.rs).
        debug_assert!(std::mem::size_of_val(&task) <= crate::constants::connection_task_bytes_max, "a connection task takes {} bytes", std::mem::size_of_val(&task));
        task.await;
        drop(permit);
    });
}

/// Accepts connections on one listener (the inter-broker one: a test's, or a single-listener
/// node's) until `shutdown` resolves, then flushes and checkpoints every log.
pub async fn serve(listener: TcpListener, shared: Arc<Shared>, shutdown: impl std::future::Future<Output = ()>) {
    let security = shared.broker().config().security.clone();
    let one = crate::security::Listener { name: security.inter_broker_listener, protocol: security.inter_broker_protocol, addr: listener.local_addr().unwrap_or_else(|_| ([0, 0, 0, 0], 0).into()) };
    serve_listeners(vec![(listener, one)], None, shared, shutdown).await
}

/// [`serve`] on every client listener, with the controllers' own listener beside them, if any.
pub async fn serve_listeners(clients: Vec<(TcpListener, crate::security::Listener)>, controller: Option<TcpListener>, shared: Arc<Shared>, shutdown: impl std::future::Future<Output = ()>) {
    let security = shared.broker().config().security.clone();
    // A PLAINTEXT controller listener beside a secured client one (a one-node cluster's own, on
    // loopback: config_security.rs) takes only the node's links to itself.
    let secured = clients.iter().any(|(_, l)| l.protocol != crate::security::Protocol::Plaintext);
    let internal_only = security.controller_protocol == crate::security::Protocol::Plaintext && secured;
    let open = Arc::new(tokio::sync::Semaphore::new(connections_max));
    let mut doors: Vec<tokio::task::JoinHandle<()>> = Vec::new();
    let controller = controller.map(|l| (l, Door { name: None, protocol: security.controller_protocol, internal_only }));
    let mut clients = clients.into_iter().map(|(l, spec)| (l, Door { name: Some(spec.name.as_str().into()), protocol: spec.protocol, internal_only: false }));
    // The first client listener is accepted on below, in this task (as a one-listener node
    // always has been, so a simulated node's schedule is what it was); the others in their own.
    let Some((first, first_door)) = clients.next() else {
        tracing::error!("no client listener to serve");
        return;
    };
    for (l, door) in controller.into_iter().chain(clients) {
        let (shared, open) = (shared.clone(), open.clone());
        doors.push(tokio::spawn(async move {
            loop {
                match l.accept().await {
                    Ok((stream, peer)) => accept(stream, peer, &shared, &open, &door),
                    Err(e) => {
                        tracing::warn!("accept failed: {e}; accepting again in {accept_error_backoff_ms} ms");
                        tokio::time::sleep(std::time::Duration::from_millis(accept_error_backoff_ms)).await;
                    }
                }
            }
        }));
    }
    let timers = tokio::spawn(run_timers(shared.clone()));
    let cleaner = tokio::spawn(run_cleaner(shared.clone()));
    let mut peers = peers::spawn(shared.clone());
    peers.extend(raft::spawn(shared.clone()));
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            // biased: tokio picks branches with an unseeded RNG otherwise,
            // which breaks replay under madsim.
            biased;
            accepted = first.accept() => match accepted {
                Ok((stream, peer)) => accept(stream, peer, &shared, &open, &first_door),
                Err(e) => {
                    tracing::warn!("accept failed: {e}; accepting again in {accept_error_backoff_ms} ms");
                    tokio::time::sleep(std::time::Duration::from_millis(accept_error_backoff_ms)).await;
                }
            },
            _ = &mut shutdown => break,
        }
    }
    for task in doors {
        task.abort();
    }
    // Hand leaderships over to the other brokers, then stop talking to peers.
    peers::controlled_shutdown(&shared).await;
    timers.abort();
    cleaner.abort();
    for task in peers {
        task.abort();
    }
    tracing::info!("shutting down: flushing and checkpointing every partition");
    let failures = shared.decide(|s| s.node.input(Input::Shutdown, now_ms())).await;
    let clean = !failures.iter().any(|a| matches!(a, Action::Log(Level::Error, _)));
    shared.perform(failures).await;
    // KIP-966: the next start registers as a clean shutdown of this epoch, so it may stay in
    // the ELRs it is in. Any failure above leaves no marker: that start counts as unclean.
    let epoch = *shared.broker_epoch.lock().unwrap_or_else(|p| p.into_inner());
    if let (true, Some(epoch)) = (clean, epoch) {
        if let Err(e) = shared.broker().mark_clean_shutdown(epoch) {
            tracing::error!("clean-shutdown marker: {e}; the next start counts as unclean");
        }
    }
}

/// How often the timers log every replica's state at debug level.
const replica_state_log_ms: u64 = 5_000;

/// Drives flush.ms and retention, and writes recovery-point checkpoints periodically.
async fn run_timers(shared: Arc<Shared>) {
    let mut last_checkpoint = now_ms();
    let mut last_state_log = now_ms();
    let mut last_trim = now_ms();
    loop {
        let wait = {
            let now = now_ms();
            shared.node.next_deadline().map_or(tick_interval_ms, |d| d.saturating_sub(now).clamp(1, tick_interval_ms))
        };
        tokio::time::sleep(Duration::from_millis(wait)).await;
        let now = now_ms();
        let checkpoint_due = now >= last_checkpoint + checkpoint_interval_ms;
        let log_state = now / replica_state_log_ms != last_state_log / replica_state_log_ms;
        let actions = shared
            .decide(|s| {
                let ticked = s.node.input(Input::Tick { checkpoint: checkpoint_due }, now);
                // (Only when someone reads it: a line per partition, every 5 s.)
                if log_state && tracing::enabled!(tracing::Level::DEBUG) {
                    for line in s.broker().describe() {
                        tracing::debug!("{line}");
                    }
                }
                ticked
            })
            .await;
        last_state_log = now;
        if checkpoint_due {
            last_checkpoint = now;
        }
        shared.perform(actions).await;
        if now >= last_trim + heap_trim_interval_ms {
            last_trim = now;
            trim_heap();
        }
    }
}

/// How often the heap's free memory is given back to the OS ([`trim_heap`]).
const heap_trim_interval_ms: u64 = 250;

/// Gives the allocator's free pages back to the OS (glibc's `malloc_trim`): after a burst (many
/// connections' buffers, staged writes) the freed memory leaves the broker's RSS instead of
/// staying in malloc's arenas. The real build on glibc only; elsewhere nothing.
fn trim_heap() {
    #[cfg(all(not(madsim), target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks and releases the allocator's own free memory; 0 keeps no pad.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The log cleaner, in its own task as Kafka's is its own thread: each turn is one bounded
/// step ([`Broker::clean_step`] decides which, and [`Node::cleaner_due`] when the next is), so requests are
/// answered between the steps of a pass.
///
/// [`Broker::clean_step`]: crate::broker::Broker::clean_step
async fn run_cleaner(shared: Arc<Shared>) {
    loop {
        let now = now_ms();
        let (actions, next) = shared.decide(|s| (s.node.input(Input::Clean, now), s.node.cleaner_due())).await;
        shared.perform(actions).await;
        match next.saturating_sub(now_ms()) {
            0 => tokio::task::yield_now().await,
            wait => tokio::time::sleep(Duration::from_millis(wait)).await,
        }
    }
}

