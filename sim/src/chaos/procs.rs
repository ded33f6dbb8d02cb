//! The real broker processes of a `sim chaos` run: one `broker` process per scenario broker on
//! a loopback port of its own, each with its own data directory and log file under the run's
//! directory, started with the settings the simulated nodes get (`cluster::timing`, the
//! scenario's `broker` table), and the process faults done to them with signals: SIGKILL,
//! SIGTERM, SIGSTOP / SIGCONT, restart.
//!
//! Every process started is also in a process-wide list, so that an interrupted run (Ctrl-C,
//! SIGTERM to `sim`) and a dropped `Brokers` kill them all: a run never leaves a broker behind.

use super::net::{Net, Way};
use crate::cluster::timing;
use crate::scenario::Scenario;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a started broker has to accept connections before the run gives up on it.
const ready_timeout_ms: u64 = 30_000;

/// Every broker process alive, by pid: what an interrupted run kills.
static alive: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// Kills every broker process this run started that is still alive (SIGCONT first, so a
/// paused one dies too). For an interrupted run.
pub fn kill_all() {
    let pids = std::mem::take(&mut *alive.lock().unwrap_or_else(|p| p.into_inner()));
    for pid in pids {
        signal(pid, libc::SIGCONT);
        signal(pid, libc::SIGKILL);
    }
    super::net::cleanup_all();
}

fn signal(pid: u32, sig: libc::c_int) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    // SAFETY: kill(2) takes a pid and a signal number and touches no memory of ours.
    unsafe { libc::kill(pid, sig) == 0 }
}

/// One broker of the run: its address, directory and flags, and its process while it has one.
struct Node {
    id: i32,
    addr: SocketAddr,
    data: PathBuf,
    log: PathBuf,
    args: Vec<String>,
    child: Option<Child>,
    paused: bool,
}

/// The run's broker processes, each behind its own lock (a fault on one broker never waits
/// for another's restart or clean stop), and the network they are on (dropped after them).
pub struct Brokers {
    bin: PathBuf,
    nodes: Vec<Mutex<Node>>,
    net: Net,
}

impl Brokers {
    /// Starts `s.brokers` brokers of `bin` under `dir` (which must exist) on `net` and returns
    /// once every one accepts connections.
    pub fn start(bin: &Path, dir: &Path, s: &Scenario, net: Net) -> Result<Brokers, String> {
        let n = s.brokers as usize;
        let addrs = match net.addr(0) {
            None => free_addrs(n)?,
            Some(_) => (0..n).filter_map(|i| net.addr(i)).map(|ip| SocketAddr::new(ip, super::net::namespaced_port)).collect(),
        };
        let voters: Vec<String> = timing::voters(s).map(|v| format!("{v}@{}", addrs[v as usize])).collect();
        let mut brokers = Brokers { bin: bin.to_path_buf(), nodes: Vec::new(), net };
        for (id, addr) in (0..).zip(addrs) {
            let data = dir.join(format!("broker-{id}"));
            std::fs::create_dir_all(&data).map_err(|e| format!("{}: {e}", data.display()))?;
            let mut args = vec!["--node-id".to_string(), id.to_string(), "--listen".into(), addr.to_string(), "--data-dir".into(), data.display().to_string(), "--controller-quorum-voters".into(), voters.join(",")];
            args.extend(flags(s));
            let log = dir.join(format!("broker-{id}.log"));
            brokers.nodes.push(Mutex::new(Node { id, addr, data, log, args, child: None, paused: false }));
        }
        for i in 0..brokers.nodes.len() {
            brokers.spawn(i)?;
        }
        for i in 0..brokers.nodes.len() {
            brokers.await_ready(i)?;
        }
        Ok(brokers)
    }

    fn node(&self, i: usize) -> Result<std::sync::MutexGuard<'_, Node>, String> {
        Ok(self.nodes.get(i).ok_or_else(|| format!("no broker {i}"))?.lock().unwrap_or_else(|p| p.into_inner()))
    }

    pub fn addrs(&self) -> Vec<SocketAddr> {
        self.nodes.iter().map(|n| n.lock().unwrap_or_else(|p| p.into_inner()).addr).collect()
    }

    /// Each broker's data directory, by name (`broker-0`, ...).
    pub fn data_dirs(&self) -> Vec<(String, PathBuf)> {
        self.nodes.iter().map(|n| n.lock().unwrap_or_else(|p| p.into_inner())).map(|n| (format!("broker-{}", n.id), n.data.clone())).collect()
    }

    fn spawn(&self, i: usize) -> Result<(), String> {
        let mut node = self.node(i)?;
        let out = std::fs::OpenOptions::new().create(true).append(true).open(&node.log).map_err(|e| format!("{}: {e}", node.log.display()))?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        let mut alive_now = alive.lock().unwrap_or_else(|p| p.into_inner());
        let child = self.net.command(i, &self.bin).args(&node.args).stdin(Stdio::null()).stdout(out).stderr(err).spawn().map_err(|e| format!("starting {}: {e}", self.bin.display()))?;
        alive_now.push(child.id());
        node.child = Some(child);
        node.paused = false;
        Ok(())
    }

    /// Waits (holding only this broker's lock between attempts) until broker `i` accepts
    /// connections; a process that exited meanwhile is reaped and forgotten.
    fn await_ready(&self, i: usize) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_millis(ready_timeout_ms);
        let (addr, id, log) = {
            let n = self.node(i)?;
            (n.addr, n.id, n.log.clone())
        };
        while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
            {
                let mut n = self.node(i)?;
                if let Some(Ok(Some(status))) = n.child.as_mut().map(Child::try_wait) {
                    let pid = n.child.take().map(|c| c.id());
                    alive.lock().unwrap_or_else(|p| p.into_inner()).retain(|p| Some(*p) != pid);
                    return Err(format!("broker-{id} exited at start ({status}): see {}", log.display()));
                }
            }
            if Instant::now() >= deadline {
                return Err(format!("broker-{id} did not accept connections within {ready_timeout_ms} ms: see {}", log.display()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    /// Whether broker `i` has a process (running or paused).
    pub fn up(&self, i: usize) -> bool {
        self.node(i).is_ok_and(|n| n.child.is_some())
    }

    /// SIGKILL: the process dies at once; what it wrote stays in the page cache.
    pub fn kill(&self, i: usize) -> Result<(), String> {
        self.stop(i, libc::SIGKILL, Duration::ZERO)
    }

    /// SIGTERM: the broker shuts down cleanly (killed if it has not within the bound).
    pub fn terminate(&self, i: usize) -> Result<(), String> {
        self.stop(i, libc::SIGTERM, Duration::from_millis(timing::terminate_grace_ms))
    }

    fn stop(&self, i: usize, sig: libc::c_int, grace: Duration) -> Result<(), String> {
        let Some(mut child) = ({
            let mut node = self.node(i)?;
            let paused = std::mem::take(&mut node.paused);
            let child = node.child.take();
            // Signalled only while it is ours and not yet reaped (its pid cannot be reused).
            if let Some(c) = child.as_ref().filter(|_| paused) {
                signal(c.id(), libc::SIGCONT);
            }
            child
        }) else {
            return Ok(());
        };
        if matches!(child.try_wait(), Ok(None)) {
            signal(child.id(), sig);
        }
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline && matches!(child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        alive.lock().unwrap_or_else(|p| p.into_inner()).retain(|pid| *pid != child.id());
        Ok(())
    }

    /// SIGSTOP: the process stops being scheduled (a long GC pause), its sockets stay open.
    pub fn pause(&self, i: usize) -> bool {
        let Ok(mut node) = self.node(i) else { return false };
        let Some(child) = node.child.as_mut() else { return false };
        if !matches!(child.try_wait(), Ok(None)) {
            return false;
        }
        let id = child.id();
        node.paused = signal(id, libc::SIGSTOP);
        node.paused
    }

    /// SIGCONT after [`Brokers::pause`].
    pub fn resume(&self, i: usize) {
        if let Ok(mut node) = self.node(i) {
            let paused = std::mem::take(&mut node.paused);
            if let Some(child) = node.child.as_mut().filter(|_| paused) {
                if matches!(child.try_wait(), Ok(None)) {
                    signal(child.id(), libc::SIGCONT);
                }
            }
        }
    }

    /// Starts broker `i` again on its directory, if it has no process; returns once it accepts
    /// connections.
    pub fn restart(&self, i: usize) -> Result<(), String> {
        if self.up(i) {
            return Ok(());
        }
        self.spawn(i)?;
        self.await_ready(i)
    }

    /// Cuts broker `i`'s traffic `way` (`heal`: lets it through again).
    pub fn cut(&self, i: usize, way: Way, heal: bool) -> Result<(), String> {
        self.net.cut(i, way, heal)
    }

    /// Stops every broker cleanly (SIGTERM), for reading their directories.
    pub fn stop_all(&self) {
        for i in 0..self.nodes.len() {
            let _ = self.terminate(i);
        }
    }
}

impl Drop for Brokers {
    fn drop(&mut self) {
        for i in 0..self.nodes.len() {
            let _ = self.kill(i);
        }
    }
}

/// `n` loopback addresses free right now (bound, then released).
fn free_addrs(n: usize) -> Result<Vec<SocketAddr>, String> {
    let listeners: Vec<TcpListener> = (0..n).map(|_| TcpListener::bind("127.0.0.1:0")).collect::<Result<_, _>>().map_err(|e| format!("finding free ports: {e}"))?;
    listeners.iter().map(|l| l.local_addr().map_err(|e| e.to_string())).collect()
}

/// The broker flags every node of the run gets: the simulated nodes' timing and sizes
/// (`cluster::timing`), then the scenario's `broker` settings, as `cluster::topology` gives
/// them to simulated nodes.
fn flags(s: &Scenario) -> Vec<String> {
    let b = &s.broker;
    let mut f: Vec<(&str, String)> = vec![
        ("--broker-heartbeat-interval-ms", timing::heartbeat_ms.to_string()),
        ("--broker-session-timeout-ms", timing::session_ms.to_string()),
        ("--replica-lag-time-max-ms", timing::replica_lag_ms.to_string()),
        ("--controller-quorum-election-timeout-ms", timing::quorum_election_ms.to_string()),
        ("--offsets-topic-num-partitions", timing::sim_offsets_partitions.to_string()),
        ("--transaction-state-log-num-partitions", timing::sim_offsets_partitions.to_string()),
        ("--group-min-session-timeout-ms", timing::group_min_session_ms.to_string()),
        ("--transaction-abort-timed-out-transaction-cleanup-interval-ms", timing::txn_abort_check_ms.to_string()),
        ("--auto-leader-rebalance-enable", b.auto_leader_rebalance.unwrap_or(false).to_string()),
        ("--fetch-zero-copy", b.fetch_zero_copy.unwrap_or(false).to_string()),
        ("--auto-create-topics-enable", "false".into()),
    ];
    let mut opt = |flag: &'static str, v: Option<String>| f.extend(v.map(|v| (flag, v)));
    opt("--min-insync-replicas", b.min_insync_replicas.map(|v| v.to_string()));
    opt("--unclean-leader-election-enable", b.unclean_leader_election.map(|v| v.to_string()));
    opt("--log-flush-interval-messages", b.flush_messages.map(|v| v.to_string()));
    opt("--log-segment-bytes", b.segment_bytes.map(|v| v.to_string()));
    opt("--eligible-leader-replicas-enable", b.eligible_leader_replicas.map(|v| v.to_string()));
    opt("--leader-imbalance-check-interval-seconds", b.leader_imbalance_check_interval_ms.map(|ms| ms.div_ceil(1000).max(1).to_string()));
    opt("--group-initial-rebalance-delay-ms", b.group_initial_rebalance_delay_ms.map(|v| v.to_string()));
    opt("--log-cleaner-backoff-ms", b.cleaner_backoff_ms.map(|v| v.to_string()));
    opt("--metadata-log-max-record-bytes-between-snapshots", b.metadata_snapshot_bytes.map(|v| v.to_string()));
    opt("--transaction-version", b.transaction_version.map(|v| v.to_string()));
    opt("--transaction-partition-verification-enable", b.transaction_partition_verification.map(|v| v.to_string()));
    f.into_iter().flat_map(|(k, v)| [k.to_string(), v]).collect()
}
