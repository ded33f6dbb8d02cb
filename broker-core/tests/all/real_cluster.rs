//! Three real `broker` processes on loopback as one cluster, driven by real Kafka clients:
//! confluent-kafka (librdkafka) creates a replicated topic, produces with acks=all and
//! idempotence and reads everything back; a leader is SIGKILLed mid-produce and every
//! acknowledged record must survive on the new leaders, and the killed broker must rejoin the
//! ISR after a restart; kcat and kafka-python bootstrapped from a non-controller node see the
//! whole cluster.
//!
//! Node 0 also runs the metadata controller, in the same process and on the same port, and it
//! is the only controller voter for now: no test here kills node 0, since that would stop the
//! cluster's metadata rather than fail over a partition leader.
//!
//! Every wait is bounded and every failure names what was waited for, with the last lines of
//! every broker's output. Processes are SIGKILLed and reaped on drop, so a failed test leaves
//! none behind. Missing tools (kcat, a Python with confluent_kafka and kafka-python) fail the
//! test with the command that installs them; nothing skips. The harness pieces are copied from
//! `real_clients.rs` rather than shared, so the two files can change independently.

use serde_json::Value;
use crate::support::{kcat, keep_lines, python};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io::Read;
use std::net::TcpListener;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

/// Brokers per cluster: enough for replication factor 3 and min.insync.replicas 2 to survive
/// one dead broker.
const cluster_size: usize = 3;
/// How long one broker may take to print its `listening on` line.
const broker_ready_timeout_s: u64 = 20;
/// How long a SIGKILLed broker may take to be reaped.
const broker_exit_timeout_s: u64 = 10;
/// One client script (20,000 records through a debug-build cluster on a shared 2-core machine
/// fits in a fraction of this; a hang must still end).
const client_timeout_s: u64 = 90;
/// Metadata waits inside `cluster_topic.py`: brokers registered, a topic fully replicated.
const metadata_timeout_s: u64 = 20;
/// From SIGKILL of a leader to metadata naming new leaders for all its partitions: the
/// session timeout (2 s) plus heartbeats, the election, metadata propagation and a Python start.
const failover_s_max: f64 = 8.0;
/// Longest time from SIGTERM to metadata naming new leaders: under the 2 s session timeout
/// the brokers run with here, so only a controlled shutdown can meet it.
const handover_s_max: f64 = 1.5;
/// From restarting the killed broker to every ISR having all three members again: start,
/// registration, metadata replay, and the follower catching up on what it missed.
const isr_rejoin_s_max: u64 = 20;
/// Records produced in the round-trip and failover tests.
const records_n: usize = 20_000;
/// Failover producer pace, records/s: 20,000 records take ~10 s, so the kill (after 1,000
/// acknowledgements) and the ~2 s failover fall well inside the run.
const failover_rate: u32 = 2_000;
/// Acknowledgements before the leader is killed.
const failover_kill_after_acks: usize = 1_000;
/// Output lines kept per broker process, and how many of them a failure message shows.
const broker_log_lines_max: usize = 300;
const broker_log_lines_shown: usize = 40;

/// Broker settings: three replicas that tolerate one loss, and failure detection fast enough
/// (heartbeat 200 ms, fenced after 2 s, ISR shrink after 3 s) to fit the failover in seconds.
const cluster_flags: &[&str] = &[
    "--default-replication-factor",
    "3",
    "--min-insync-replicas",
    "2",
    "--broker-heartbeat-interval-ms",
    "200",
    "--broker-session-timeout-ms",
    "2000",
    "--replica-lag-time-max-ms",
    "3000",
];

// ---------------------------------------------------------------------------------------------
// One broker process.

/// A `broker` process of the cluster, or the memory of one that was killed (its port, data
/// directory and last output stay, for a restart and for failure messages).
struct Node {
    id: i32,
    port: u16,
    data_dir: PathBuf,
    controller_port: u16,
    child: Child,
    log: Arc<Mutex<VecDeque<String>>>,
    exited: Option<ExitStatus>,
    /// Output of earlier lives of this node (before a restart), kept for failure messages.
    earlier_log: Vec<String>,
}

impl Node {
    fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Spawns the process; returns once it printed `listening on`, or a description of why not.
    fn start(id: i32, port: u16, data_dir: &Path, controller_port: u16) -> Result<Node, String> {
        let addr = format!("127.0.0.1:{port}");
        let voters = format!("0@127.0.0.1:{controller_port}");
        let mut child = Command::new(env!("CARGO_BIN_EXE_broker"))
            .args([
                "--node-id",
                &id.to_string(),
                "--listen",
                &addr,
                "--controller-quorum-voters",
                &voters,
            ])
            .arg("--data-dir")
            .arg(data_dir)
            .args(cluster_flags)
            .env("RUST_LOG", "info")
            .env("RUST_BACKTRACE", "1")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("spawn {}: {e}", env!("CARGO_BIN_EXE_broker")))?;
        let log = Arc::new(Mutex::new(VecDeque::new()));
        let (ready_tx, ready_rx) = mpsc::channel();
        let ready_line = format!("listening on {addr}");
        // Both pipes are drained for the process's whole life, so it never blocks on a full pipe.
        keep_lines(
            child.stdout.take().expect("piped stdout"),
            "stdout",
            Arc::clone(&log),
            broker_log_lines_max,
            None,
        );
        keep_lines(
            child.stderr.take().expect("piped stderr"),
            "stderr",
            Arc::clone(&log),
            broker_log_lines_max,
            Some((ready_line.clone(), ready_tx)),
        );
        let mut node = Node {
            id,
            port,
            data_dir: data_dir.to_path_buf(),
            controller_port,
            child,
            log,
            exited: None,
            earlier_log: Vec::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(broker_ready_timeout_s);
        loop {
            if ready_rx.recv_timeout(Duration::from_millis(50)).is_ok() {
                return Ok(node);
            }
            if let Some(status) = node.child.try_wait().expect("try_wait") {
                node.exited = Some(status);
                return Err(format!(
                    "node {id} exited ({status}) before printing {ready_line:?}\n{}",
                    node.log_tail()
                ));
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "node {id} did not print {ready_line:?} within {broker_ready_timeout_s} s\n{}",
                    node.log_tail()
                ));
            }
        }
    }

    fn pid(&self) -> libc::pid_t {
        libc::pid_t::try_from(self.child.id()).expect("pid fits pid_t")
    }

    /// Why this node is not running, or None if it is.
    fn dead(&mut self) -> Option<ExitStatus> {
        if self.exited.is_none() {
            self.exited = self.child.try_wait().expect("try_wait");
        }
        self.exited
    }

    fn log_tail(&self) -> String {
        let log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let lines: Vec<&String> = self.earlier_log.iter().chain(log.iter()).collect();
        let shown = &lines[lines.len().saturating_sub(broker_log_lines_shown)..];
        let state = match self.exited {
            Some(status) => format!("exited: {status}"),
            None => "running".to_string(),
        };
        let mut out = format!(
            "--- node {} ({}, {state}): last {} lines ---\n",
            self.id,
            self.addr(),
            shown.len()
        );
        for line in shown {
            out.push_str(line);
            out.push('\n');
        }
        out
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if self.exited.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}


// ---------------------------------------------------------------------------------------------
// The cluster.

/// Cluster tests run one at a time: three brokers plus clients already fill a 2-core machine,
/// and the failover test measures failure detection against a 2 s session timeout, which a
/// second cluster competing for the CPU would turn into noise.
fn one_cluster_at_a_time() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner()) // a failed test poisons it; the next may run
}

struct Cluster {
    nodes: Vec<Node>,
    _dir: tempfile::TempDir,
    _serial: MutexGuard<'static, ()>,
}

impl Cluster {
    /// `cluster_size` brokers on free loopback ports with their own data directories; node 0
    /// also runs the controller. Returns once each printed `listening on` (clients then wait
    /// by themselves until their broker is registered and unfenced).
    fn start() -> Cluster {
        let serial = one_cluster_at_a_time();
        let dir = tempfile::tempdir().expect("tempdir");
        let ports = free_ports(cluster_size);
        let mut cluster = Cluster {
            nodes: Vec::new(),
            _dir: dir,
            _serial: serial,
        };
        for (id, port) in (0..).zip(&ports) {
            let data = cluster._dir.path().join(format!("node-{id}"));
            std::fs::create_dir_all(&data).expect("create data dir");
            match Node::start(id, *port, &data, ports[0]) {
                Ok(node) => cluster.nodes.push(node),
                Err(why) => cluster.fail(&format!("starting the cluster: {why}")),
            }
        }
        cluster
    }

    fn addr(&self, id: i32) -> String {
        self.node(id).addr()
    }

    fn node(&self, id: i32) -> &Node {
        &self.nodes[usize::try_from(id).expect("node ids are small and non-negative")]
    }

    fn node_mut(&mut self, id: i32) -> &mut Node {
        &mut self.nodes[usize::try_from(id).expect("node ids are small and non-negative")]
    }

    /// The last lines of every broker's output, node by node.
    fn logs(&self) -> String {
        // Let the pipe readers catch the last lines of a process that just exited.
        thread::sleep(Duration::from_millis(100));
        self.nodes
            .iter()
            .map(Node::log_tail)
            .collect::<Vec<_>>()
            .join("")
    }

    fn fail(&self, what: &str) -> ! {
        panic!("{what}\n{}", self.logs());
    }

    /// Fails if a broker that should be running has exited.
    fn assert_alive(&mut self, when: &str, except: Option<i32>) {
        let mut died = Vec::new();
        for node in self.nodes.iter_mut().filter(|n| Some(n.id) != except) {
            if let Some(status) = node.dead() {
                died.push(format!("node {} ({status})", node.id));
            }
        }
        if !died.is_empty() {
            self.fail(&format!("broker died {when}: {}", died.join(", ")));
        }
    }

    fn sigkill(&mut self, id: i32) {
        let status = self.stop(id, libc::SIGKILL, "SIGKILL");
        assert_eq!(status.signal(), Some(libc::SIGKILL), "node {id} after SIGKILL: {status}");
    }

    /// SIGTERM: the broker hands its leaderships over and exits cleanly.
    fn sigterm(&mut self, id: i32) {
        let status = self.stop(id, libc::SIGTERM, "SIGTERM");
        if !status.success() {
            self.fail(&format!("node {id} after SIGTERM exited with {status}, expected a clean exit"));
        }
    }

    /// Sends `sig` to node `id` and waits for it to exit.
    fn stop(&mut self, id: i32, sig: libc::c_int, name: &str) -> ExitStatus {
        let node = self.node_mut(id);
        assert!(node.exited.is_none(), "{name} to node {id}, which already exited");
        // SAFETY: kill(2) on our own child's pid; the child is not reaped yet, so the pid is ours.
        let rc = unsafe { libc::kill(node.pid(), sig) };
        assert_eq!(rc, 0, "kill({}, {name}): {}", node.pid(), std::io::Error::last_os_error());
        let deadline = Instant::now() + Duration::from_secs(broker_exit_timeout_s);
        let status = loop {
            if let Some(status) = node.child.try_wait().expect("try_wait") {
                break status;
            }
            if Instant::now() > deadline {
                self.fail(&format!("node {id} still running {broker_exit_timeout_s} s after {name}"));
            }
            thread::sleep(Duration::from_millis(10));
        };
        self.node_mut(id).exited = Some(status);
        status
    }

    /// Starts node `id` again on its port and data directory.
    fn restart(&mut self, id: i32) {
        let (port, data, controller_port) = {
            let node = self.node(id);
            assert!(
                node.exited.is_some(),
                "restart of node {id}, which is still running"
            );
            (node.port, node.data_dir.clone(), node.controller_port)
        };
        let earlier: Vec<String> = {
            let node = self.node(id);
            let log = node.log.lock().unwrap_or_else(|e| e.into_inner());
            node.earlier_log
                .iter()
                .cloned()
                .chain(log.iter().cloned())
                .chain(["--- restarted ---".to_string()])
                .collect()
        };
        match Node::start(id, port, &data, controller_port) {
            Ok(mut node) => {
                node.earlier_log = earlier;
                *self.node_mut(id) = node;
            }
            Err(why) => self.fail(&format!("restarting node {id}: {why}")),
        }
    }

    /// Runs `tests/clients/<script> --bootstrap <node's address> args...`; fails with the
    /// script's output and every broker's log unless it exits 0. Returns its stdout.
    fn script(&mut self, bootstrap: i32, script: &str, args: &[&str]) -> String {
        let out = run_bounded(
            &mut client_command(&self.addr(bootstrap), script, args),
            Duration::from_secs(client_timeout_s),
        )
        .unwrap_or_else(|why| self.fail(&format!("{script} {args:?}: {why}")));
        self.check_script(script, args, &out)
    }

    fn check_script(&self, script: &str, args: &[&str], out: &Output) -> String {
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            self.fail(&format!(
                "{script} {args:?} failed ({})\n--- its stdout ---\n{}\n--- its stderr ---\n{stderr}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
            ));
        }
        eprintln!("{}", stderr.trim());
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `cluster_topic.py` against node `bootstrap`: waits until metadata lists `brokers` brokers
    /// (only live ones are listed) and the state `args` ask for, then returns what it saw.
    /// The wait is bounded by `metadata_timeout_s` unless `args` give their own `--timeout`.
    fn metadata(&mut self, bootstrap: i32, brokers: usize, args: &[&str]) -> Metadata {
        let (brokers, timeout) = (brokers.to_string(), metadata_timeout_s.to_string());
        let mut all = vec!["--brokers", brokers.as_str()];
        if !args.contains(&"--timeout") {
            all.extend(["--timeout", timeout.as_str()]);
        }
        all.extend_from_slice(args);
        let stdout = self.script(bootstrap, "cluster_topic.py", &all);
        Metadata::parse(&stdout)
            .unwrap_or_else(|why| self.fail(&format!("cluster_topic.py {args:?}: {why}")))
    }

    /// `kcat -L` against node `bootstrap`, optionally for one topic.
    fn kcat_metadata(&self, bootstrap: i32, topic: Option<&str>) -> String {
        let addr = self.addr(bootstrap);
        let mut cmd = Command::new(kcat());
        cmd.args(["-L", "-b", &addr, "-m", "10"]);
        if let Some(topic) = topic {
            cmd.args(["-t", topic]);
        }
        let out = run_bounded(&mut cmd, Duration::from_secs(30))
            .unwrap_or_else(|why| self.fail(&format!("kcat -L: {why}")));
        if !out.status.success() {
            self.fail(&format!(
                "kcat -L -b {addr} failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// `n` distinct ports the OS just handed out and took back: all listeners are held at once so
/// the ports differ. Another process could grab one before a broker binds it; the OS hands out
/// ephemeral ports round-robin, so in practice it does not.
fn free_ports(n: usize) -> Vec<u16> {
    let listeners: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0"))
        .collect();
    listeners
        .iter()
        .map(|l| l.local_addr().expect("local_addr").port())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Metadata as `cluster_topic.py` prints it.

#[derive(Debug)]
struct PartitionMetadata {
    leader: i32,
    replicas: Vec<i32>,
    isr: Vec<i32>,
}

#[derive(Debug)]
struct Metadata {
    brokers: BTreeMap<i32, String>,
    partitions: BTreeMap<i32, PartitionMetadata>,
    /// How long the script waited for the state it was asked for.
    elapsed_s: f64,
    raw: String,
}

impl Metadata {
    fn parse(stdout: &str) -> Result<Metadata, String> {
        let raw = stdout
            .trim()
            .lines()
            .last()
            .ok_or("printed nothing")?
            .to_string();
        let v: Value = serde_json::from_str(&raw).map_err(|e| format!("not JSON ({e}): {raw}"))?;
        let int = |v: &Value| {
            v.as_i64()
                .and_then(|i| i32::try_from(i).ok())
                .ok_or_else(|| format!("not an i32: {v}"))
        };
        let ints = |v: &Value| -> Result<Vec<i32>, String> {
            let mut out = v
                .as_array()
                .ok_or_else(|| format!("not an array: {v}"))?
                .iter()
                .map(int)
                .collect::<Result<Vec<_>, _>>()?;
            out.sort_unstable();
            Ok(out)
        };
        let key = |k: &str| k.parse::<i32>().map_err(|_| format!("bad id {k:?}"));
        let mut brokers = BTreeMap::new();
        for (id, addr) in v["brokers"].as_object().ok_or("no brokers")? {
            brokers.insert(
                key(id)?,
                addr.as_str()
                    .ok_or("broker address not a string")?
                    .to_string(),
            );
        }
        let mut partitions = BTreeMap::new();
        for (p, info) in v["partitions"].as_object().ok_or("no partitions")? {
            partitions.insert(
                key(p)?,
                PartitionMetadata {
                    leader: int(&info["leader"])?,
                    replicas: ints(&info["replicas"])?,
                    isr: ints(&info["isr"])?,
                },
            );
        }
        let elapsed_s = v["elapsed_s"].as_f64().ok_or("no elapsed_s")?;
        Ok(Metadata {
            brokers,
            partitions,
            elapsed_s,
            raw,
        })
    }

    fn leaders(&self) -> BTreeSet<i32> {
        self.partitions.values().map(|p| p.leader).collect()
    }
}

// ---------------------------------------------------------------------------------------------
// Tools and subprocesses.

/// A client process (script or tool) whose output is collected as it runs; SIGKILLed and
/// reaped on drop, so a test that fails while a client runs in the background leaves none.
struct ClientProcess {
    child: Child,
    stdout: Option<thread::JoinHandle<Vec<u8>>>,
    stderr: Option<thread::JoinHandle<Vec<u8>>>,
    reaped: bool,
}

impl ClientProcess {
    fn spawn(cmd: &mut Command) -> Result<ClientProcess, String> {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
        let read_all = |mut pipe: Box<dyn Read + Send>| {
            thread::spawn(move || {
                let mut buf = Vec::new();
                let _ = pipe.read_to_end(&mut buf);
                buf
            })
        };
        let stdout = Some(read_all(Box::new(
            child.stdout.take().expect("piped stdout"),
        )));
        let stderr = Some(read_all(Box::new(
            child.stderr.take().expect("piped stderr"),
        )));
        Ok(ClientProcess {
            child,
            stdout,
            stderr,
            reaped: false,
        })
    }

    fn finished(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_some()
    }

    /// Its exit and output, or (killed after `timeout`) a description with its output so far.
    fn wait(mut self, timeout: Duration) -> Result<Output, String> {
        let deadline = Instant::now() + timeout;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                break Some(status);
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                break None;
            }
            thread::sleep(Duration::from_millis(20));
        };
        self.reaped = true;
        let out = self
            .stdout
            .take()
            .expect("joined once")
            .join()
            .unwrap_or_default();
        let err = self
            .stderr
            .take()
            .expect("joined once")
            .join()
            .unwrap_or_default();
        match status {
            Some(status) => Ok(Output {
                status,
                stdout: out,
                stderr: err,
            }),
            None => Err(format!(
                "still running after {} s, killed\n--- its stdout ---\n{}\n--- its stderr ---\n{}",
                timeout.as_secs(),
                String::from_utf8_lossy(&out),
                String::from_utf8_lossy(&err)
            )),
        }
    }
}

impl Drop for ClientProcess {
    fn drop(&mut self) {
        if !self.reaped {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Runs `cmd` to completion, killing it after `timeout`.
fn run_bounded(cmd: &mut Command, timeout: Duration) -> Result<Output, String> {
    ClientProcess::spawn(cmd)?.wait(timeout)
}

fn client_command(bootstrap: &str, script: &str, args: &[&str]) -> Command {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/clients")
        .join(script);
    let mut cmd = Command::new(python());
    cmd.arg("-u")
        .arg(&path)
        .args(["--bootstrap", bootstrap])
        .args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    cmd
}




// ---------------------------------------------------------------------------------------------
// The tests.

/// Checks what every fresh replicated topic must look like: the three brokers at their
/// addresses, `partitions` partitions each on all three brokers and all three in sync.
fn check_fully_replicated(cluster: &Cluster, md: &Metadata, topic: &str, partitions: i32) {
    let want_brokers: BTreeMap<i32, String> = (0..)
        .zip(&cluster.nodes)
        .map(|(id, n)| (id, n.addr()))
        .collect();
    if md.brokers != want_brokers {
        cluster.fail(&format!(
            "metadata lists brokers {:?}, expected {want_brokers:?}\n{}",
            md.brokers, md.raw
        ));
    }
    let ids: Vec<i32> = want_brokers.keys().copied().collect();
    if md.partitions.keys().copied().collect::<Vec<_>>() != (0..partitions).collect::<Vec<_>>() {
        cluster.fail(&format!(
            "{topic}: metadata lists partitions {:?}, created {partitions}\n{}",
            md.partitions.keys(),
            md.raw
        ));
    }
    for (p, info) in &md.partitions {
        if info.replicas != ids || info.isr != ids || !ids.contains(&info.leader) {
            cluster.fail(&format!(
                "{topic}-{p}: leader {}, replicas {:?}, ISR {:?}; expected replicas and ISR {ids:?} and a leader among them\n{}",
                info.leader, info.replicas, info.isr, md.raw
            ));
        }
    }
}

/// Creates `topic` (3 partitions, fully replicated) so that its partition 0 is not led by node 0,
/// the controller, which the failover tests must not stop (one controller voter for now).
/// Replicas are assigned on a ring whose start rotates by the number of existing topics, so a
/// one-partition warm-up topic first moves it. Returns the metadata and partition 0's leader.
fn topic_led_off_the_controller(cluster: &mut Cluster, topic: &str) -> (Metadata, i32) {
    let warmup = cluster.metadata(0, cluster_size, &["--topic", "warmup", "--create", "--partitions", "1", "--min-isr", "3"]);
    check_fully_replicated(cluster, &warmup, "warmup", 1);
    let md = cluster.metadata(0, cluster_size, &["--topic", topic, "--create", "--partitions", "3", "--min-isr", "3"]);
    check_fully_replicated(cluster, &md, topic, 3);
    let leader = md.partitions[&0].leader;
    (md, leader)
}

/// A topic with 3 partitions and replication factor 3 on 3 brokers: fully replicated, leaders
/// on three different brokers; 20,000 idempotent acks=all records read back exactly once, in
/// order per partition (confluent-kafka both ways).
#[test]
fn cluster_replicated_topic_roundtrip_confluent() {
    let mut cluster = Cluster::start();
    let topic = "replicated";
    let md = cluster.metadata(
        0,
        cluster_size,
        &[
            "--topic",
            topic,
            "--create",
            "--partitions",
            "3",
            "--replication-factor",
            "3",
            "--min-isr",
            "3",
        ],
    );
    check_fully_replicated(&cluster, &md, topic, 3);
    if md.leaders().len() != cluster_size {
        cluster.fail(&format!(
            "{topic}: leaders {:?} are not spread over the {cluster_size} brokers\n{}",
            md.leaders(),
            md.raw
        ));
    }
    let n = records_n.to_string();
    cluster.script(0, "cluster_roundtrip.py", &["--topic", topic, "--n", &n]);
    cluster.assert_alive("after the round trip", None);
}

/// SIGKILL the leader of partition 0 while an acks=all producer runs: metadata names new
/// leaders within `failover_s_max`, production continues on them, every acknowledged record
/// is read back; the killed broker, restarted on its data directory, rejoins every ISR.
#[test]
fn cluster_leader_sigkill_mid_produce_then_rejoin() {
    let mut cluster = Cluster::start();
    let topic = "failover";
    let (md, victim) = topic_led_off_the_controller(&mut cluster, topic);
    if victim == 0 {
        cluster.fail(&format!(
            "{topic}-0 is led by node 0, the controller, even after a warm-up topic; this test needs a \
             non-controller leader to kill\n{}",
            md.raw
        ));
    }
    let victim_partitions: Vec<i32> = md
        .partitions
        .iter()
        .filter(|(_, p)| p.leader == victim)
        .map(|(p, _)| *p)
        .collect();

    let work = tempfile::tempdir().expect("tempdir");
    let path = |name: &str| {
        work.path()
            .join(name)
            .to_str()
            .expect("utf-8 temp path")
            .to_string()
    };
    let (started, killed, acked) = (path("started"), path("killed"), path("acked.json"));
    let (n, rate, kill_after) = (
        records_n.to_string(),
        failover_rate.to_string(),
        failover_kill_after_acks.to_string(),
    );
    let produce_args: Vec<String> = [
        "--topic",
        topic,
        "--n",
        &n,
        "--rate",
        &rate,
        "--started",
        &started,
        "--started-after",
        &kill_after,
        "--killed",
        &killed,
        "--out",
        &acked,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let producer_cmd = &mut client_command(
        &cluster.addr(0),
        "cluster_failover_produce.py",
        &produce_args.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let mut producer = ClientProcess::spawn(producer_cmd)
        .unwrap_or_else(|why| cluster.fail(&format!("cluster_failover_produce.py: {why}")));

    let deadline = Instant::now() + Duration::from_secs(30);
    while !Path::new(&started).exists() {
        if producer.finished() || Instant::now() > deadline {
            let out = producer.wait(Duration::ZERO);
            cluster.fail(&format!(
                "cluster_failover_produce.py: no {failover_kill_after_acks} acknowledgements within 30 s: {}",
                match out {
                    Ok(out) => format!("exited {}: {}", out.status, String::from_utf8_lossy(&out.stderr)),
                    Err(why) => why,
                }
            ));
        }
        thread::sleep(Duration::from_millis(10));
    }

    cluster.sigkill(victim);
    let killed_at = Instant::now();
    std::fs::write(&killed, b"").expect("write the kill marker");
    eprintln!("SIGKILLed node {victim}, leader of {topic} partitions {victim_partitions:?}");

    let victim_arg = victim.to_string();
    let after = cluster.metadata(
        0,
        cluster_size - 1,
        &["--topic", topic, "--leader-not", &victim_arg],
    );
    let failover_s = killed_at.elapsed().as_secs_f64();
    eprintln!(
        "new leaders after {failover_s:.2} s (metadata polled for {:.2} s): {}",
        after.elapsed_s, after.raw
    );
    if failover_s > failover_s_max {
        cluster.fail(&format!(
            "metadata named new leaders for partitions {victim_partitions:?} only {failover_s:.2} s after node {victim} \
             was killed; expected within {failover_s_max} s\n{}",
            after.raw
        ));
    }
    for p in &victim_partitions {
        let info = &after.partitions[p];
        if info.isr.contains(&victim) || info.isr.len() < 2 || !info.isr.contains(&info.leader) {
            cluster.fail(&format!(
                "{topic}-{p} after node {victim} died: leader {}, ISR {:?}; expected the dead node out of the ISR, \
                 the new leader in it, and at least min.insync.replicas=2 members\n{}",
                info.leader, info.isr, after.raw
            ));
        }
    }

    let out = producer
        .wait(Duration::from_secs(client_timeout_s))
        .unwrap_or_else(|why| cluster.fail(&format!("cluster_failover_produce.py: {why}")));
    cluster.check_script("cluster_failover_produce.py", &[], &out);
    cluster.assert_alive("while producing through the failover", Some(victim));
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&acked).expect("read the producer's report"))
            .expect("producer report is JSON");
    let acked_after_kill = report["acked_after_kill"].as_u64().unwrap_or(0);
    if report["killed_seen"] != Value::Bool(true) || acked_after_kill == 0 {
        cluster.fail(&format!(
            "no record was acknowledged after node {victim} was killed (killed_seen {}): production did not resume \
             on the new leaders; {} acknowledged before, {} failed",
            report["killed_seen"],
            report["acked"].as_array().map_or(0, Vec::len),
            report["failed"].as_array().map_or(0, Vec::len)
        ));
    }

    // Read back from the survivors, before the killed broker returns: the new leaders alone
    // must hold every acknowledged record.
    cluster.script(
        0,
        "cluster_verify_acked.py",
        &["--topic", topic, "--acked", &acked, "--no-duplicates"],
    );

    cluster.restart(victim);
    let rejoin = isr_rejoin_s_max.to_string();
    let restarted_at = Instant::now();
    let back = cluster.metadata(
        0,
        cluster_size,
        &["--topic", topic, "--min-isr", "3", "--timeout", &rejoin],
    );
    check_fully_replicated(&cluster, &back, topic, 3);
    eprintln!(
        "node {victim} back in every ISR {:.2} s after its restart: {}",
        restarted_at.elapsed().as_secs_f64(),
        back.raw
    );
    cluster.assert_alive("after the restart", None);
}

/// SIGTERM to a leader that is not the controller: the broker asks the controller to fence it
/// (controlled shutdown), so metadata names new leaders for its partitions well before its
/// session (2 s here) could have expired, and it exits cleanly.
#[test]
fn cluster_sigterm_hands_leadership_over_at_once() {
    let mut cluster = Cluster::start();
    let topic = "handover";
    let (md, victim) = topic_led_off_the_controller(&mut cluster, topic);
    if victim == 0 {
        cluster.fail(&format!("{topic}-0 is led by node 0, the controller; this test needs another leader\n{}", md.raw));
    }
    let stopped_at = Instant::now();
    cluster.sigterm(victim);
    let victim_arg = victim.to_string();
    let after = cluster.metadata(0, cluster_size - 1, &["--topic", topic, "--leader-not", &victim_arg]);
    let handover_s = stopped_at.elapsed().as_secs_f64();
    eprintln!("node {victim} stopped with SIGTERM; new leaders after {handover_s:.2} s: {}", after.raw);
    if handover_s > handover_s_max {
        cluster.fail(&format!(
            "new leaders for node {victim}'s partitions only {handover_s:.2} s after SIGTERM (exit included); \
             a controlled shutdown must beat the 2 s session timeout (limit {handover_s_max} s)\n{}",
            after.raw
        ));
    }
    cluster.assert_alive("after the controlled shutdown", Some(victim));
}

/// kcat bootstrapped from node 1 and from node 2 lists all three brokers at their addresses;
/// kafka-python bootstrapped from node 2 auto-creates a topic (replication factor 3 by
/// default), round-trips 1,000 records, and kcat from node 1 sees it fully replicated.
#[test]
fn cluster_any_node_bootstraps_kcat_and_kafka_python() {
    let mut cluster = Cluster::start();
    // Registration is asynchronous: wait until node 2 itself lists all three.
    cluster.metadata(2, cluster_size, &[]);
    for bootstrap in [1, 2] {
        let text = cluster.kcat_metadata(bootstrap, None);
        let mut want = vec![
            format!("from broker {bootstrap}: {}", cluster.addr(bootstrap)),
            format!("{cluster_size} brokers:"),
        ];
        want.extend(
            (0..)
                .zip(&cluster.nodes)
                .map(|(id, n)| format!("broker {id} at {}", n.addr())),
        );
        for w in want {
            if !text.contains(&w) {
                cluster.fail(&format!(
                    "kcat -L -b {} lacks {w:?}:\n{text}",
                    cluster.addr(bootstrap)
                ));
            }
        }
    }

    let topic = "kafka-python-cluster";
    cluster.script(
        2,
        "kafka_python_roundtrip.py",
        &["--topic", topic, "--n", "1000"],
    );
    // The ISR could still be settling right after the produce; give it a bounded moment.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = cluster.kcat_metadata(1, Some(topic));
        let partitions: Vec<&str> = text
            .lines()
            .filter(|l| l.trim_start().starts_with("partition "))
            .collect();
        let full = !partitions.is_empty()
            && partitions.iter().all(|l| {
                let (replicas, isrs) = (field(l, "replicas: "), field(l, "isrs: "));
                sorted_ids(replicas) == [0, 1, 2] && sorted_ids(isrs) == [0, 1, 2]
            });
        if full {
            break;
        }
        if Instant::now() > deadline {
            cluster.fail(&format!(
                "kcat -L from node 1: auto-created {topic} is not on all three brokers and in sync after 10 s:\n{text}"
            ));
        }
        thread::sleep(Duration::from_millis(200));
    }
    cluster.assert_alive("after kcat and kafka-python", None);
}

/// In a kcat -L partition line (`partition 0, leader 1, replicas: 1,2,0, isrs: 1,2,0`), the
/// text after `name` up to the next `, ` that starts another field.
fn field<'a>(line: &'a str, name: &str) -> &'a str {
    let Some(start) = line.find(name) else {
        return "";
    };
    let rest = &line[start + name.len()..];
    rest.split(", ").next().unwrap_or("")
}

fn sorted_ids(list: &str) -> Vec<i32> {
    let mut ids: Vec<i32> = list
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    ids.sort_unstable();
    ids
}
