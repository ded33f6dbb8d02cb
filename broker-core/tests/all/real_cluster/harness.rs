//! The cluster the tests drive: three broker processes on loopback (node 0 the one controller
//! voter, or all three voters of a Raft quorum), their output for failure messages, and the
//! metadata `cluster_topic.py` prints.

use super::*;

// ---------------------------------------------------------------------------------------------
// One broker process.

/// A `broker` process of the cluster, or the memory of one that was killed (its port, data
/// directory and last output stay, for a restart and for failure messages).
pub(super) struct Node {
    pub(super) id: i32,
    pub(super) data_dir: PathBuf,
    /// `--controller-quorum-voters`, as every node of the cluster is given it.
    pub(super) voters: String,
    /// Flags beyond `cluster_flags` this node was started with (kept for a restart).
    pub(super) extra_flags: Vec<String>,
    pub(super) process: BrokerProcess,
    /// Output of earlier lives of this node (before a restart), kept for failure messages.
    pub(super) earlier_log: Vec<String>,
}

impl Node {
    pub(super) fn addr(&self) -> String {
        self.process.addr()
    }

    /// Spawns the process; returns once it printed `listening on`, or a description of why not.
    /// `extra_flags` come after `cluster_flags`, so they may override them.
    pub(super) fn start(id: i32, port: u16, data_dir: &Path, voters: &str, extra_flags: &[String]) -> Result<Node, String> {
        let mut args: Vec<String> = vec!["--node-id".into(), id.to_string(), "--controller-quorum-voters".into(), voters.to_string()];
        args.extend(["--data-dir".to_string(), data_dir.display().to_string()]);
        args.extend(cluster_flags.iter().map(|f| f.to_string()));
        args.extend(extra_flags.iter().cloned());
        let ready = Duration::from_secs(broker_ready_timeout_s);
        let process = BrokerProcess::start(port, &args, broker_log_lines_max, ready).map_err(|why| format!("node {id}: {why}"))?;
        Ok(Node { id, data_dir: data_dir.to_path_buf(), voters: voters.to_string(), extra_flags: extra_flags.to_vec(), process, earlier_log: Vec::new() })
    }

    /// Why this node is not running, or None if it is.
    pub(super) fn dead(&mut self) -> Option<ExitStatus> {
        self.process.exited()
    }

    pub(super) fn log_tail(&self) -> String {
        let lines: Vec<String> = self.earlier_log.iter().cloned().chain(self.process.lines()).collect();
        let shown = &lines[lines.len().saturating_sub(broker_log_lines_shown)..];
        format!("--- node {} ({}): last {} lines ---\n{}\n", self.id, self.addr(), shown.len(), shown.join("\n"))
    }
}

// ---------------------------------------------------------------------------------------------
// The cluster.

/// Cluster tests run one at a time: three brokers plus clients already fill a 2-core machine,
/// and the failover test measures failure detection against a 2 s session timeout, which a
/// second cluster competing for the CPU would turn into noise.
pub(super) fn one_cluster_at_a_time() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner()) // a failed test poisons it; the next may run
}

pub(super) struct Cluster {
    pub(super) nodes: Vec<Node>,
    pub(super) _dir: tempfile::TempDir,
    pub(super) _serial: MutexGuard<'static, ()>,
}

impl Cluster {
    /// `cluster_size` brokers on free loopback ports with their own data directories; node 0
    /// also runs the controller. Returns once each printed `listening on` (clients then wait
    /// by themselves until their broker is registered and unfenced).
    pub(super) fn start() -> Cluster {
        Cluster::start_with(&[])
    }

    /// [`Cluster::start`] with more broker flags on every node (after `cluster_flags`).
    pub(super) fn start_with(extra_flags: &[&str]) -> Cluster {
        Cluster::start_voters(1, extra_flags)
    }

    /// [`Cluster::start_with`], nodes 0 to `voters - 1` the metadata quorum's voters.
    pub(super) fn start_voters(voters: usize, extra_flags: &[&str]) -> Cluster {
        Cluster::start_nodes(voters, extra_flags, |_| Vec::new())
    }

    /// [`Cluster::start_voters`] with `node_flags(id)` added to node `id`'s flags.
    pub(super) fn start_nodes(voters: usize, extra_flags: &[&str], node_flags: impl Fn(i32) -> Vec<&'static str>) -> Cluster {
        let extra_flags: Vec<String> = extra_flags.iter().map(|f| f.to_string()).collect();
        let serial = one_cluster_at_a_time();
        let dir = tempfile::tempdir().expect("tempdir");
        let ports = free_ports(cluster_size);
        let mut cluster = Cluster {
            nodes: Vec::new(),
            _dir: dir,
            _serial: serial,
        };
        let voters: Vec<String> = (0..).zip(&ports).take(voters).map(|(id, port)| format!("{id}@127.0.0.1:{port}")).collect();
        let voters = voters.join(",");
        for (id, port) in (0..).zip(&ports) {
            let data = cluster._dir.path().join(format!("node-{id}"));
            std::fs::create_dir_all(&data).expect("create data dir");
            let flags: Vec<String> = extra_flags.iter().cloned().chain(node_flags(id).into_iter().map(String::from)).collect();
            match Node::start(id, *port, &data, &voters, &flags) {
                Ok(node) => cluster.nodes.push(node),
                Err(why) => cluster.fail(&format!("starting the cluster: {why}")),
            }
        }
        cluster
    }

    pub(super) fn addr(&self, id: i32) -> String {
        self.node(id).addr()
    }

    pub(super) fn node(&self, id: i32) -> &Node {
        &self.nodes[usize::try_from(id).expect("node ids are small and non-negative")]
    }

    pub(super) fn node_mut(&mut self, id: i32) -> &mut Node {
        &mut self.nodes[usize::try_from(id).expect("node ids are small and non-negative")]
    }

    /// The last lines of every broker's output, node by node.
    pub(super) fn logs(&self) -> String {
        // Let the pipe readers catch the last lines of a process that just exited.
        thread::sleep(Duration::from_millis(100));
        self.nodes
            .iter()
            .map(Node::log_tail)
            .collect::<Vec<_>>()
            .join("")
    }

    pub(super) fn fail(&self, what: &str) -> ! {
        panic!("{what}\n{}", self.logs());
    }

    /// Fails if a broker that should be running has exited.
    pub(super) fn assert_alive(&mut self, when: &str, except: Option<i32>) {
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

    pub(super) fn sigkill(&mut self, id: i32) {
        let status = self.stop(id, libc::SIGKILL, "SIGKILL");
        assert_eq!(status.signal(), Some(libc::SIGKILL), "node {id} after SIGKILL: {status}");
    }

    /// SIGTERM: the broker hands its leaderships over and exits cleanly.
    pub(super) fn sigterm(&mut self, id: i32) {
        let status = self.stop(id, libc::SIGTERM, "SIGTERM");
        if !status.success() {
            self.fail(&format!("node {id} after SIGTERM exited with {status}, expected a clean exit"));
        }
    }

    /// Sends `sig` to node `id` and waits for it to exit.
    pub(super) fn stop(&mut self, id: i32, sig: libc::c_int, name: &str) -> ExitStatus {
        let timeout = Duration::from_secs(broker_exit_timeout_s);
        match self.node_mut(id).process.signal_and_wait(sig, timeout) {
            Ok(status) => status,
            Err(why) => self.fail(&format!("node {id} after {name}: {why}")),
        }
    }

    /// Starts node `id` again on its port and data directory.
    pub(super) fn restart(&mut self, id: i32) {
        let node = self.node_mut(id);
        assert!(node.dead().is_some(), "restart of node {id}, which is still running");
        let (port, data, voters, extra) = (node.process.port, node.data_dir.clone(), node.voters.clone(), node.extra_flags.clone());
        let earlier: Vec<String> = node.earlier_log.iter().cloned().chain(node.process.lines()).chain(["--- restarted ---".to_string()]).collect();
        match Node::start(id, port, &data, &voters, &extra) {
            Ok(mut node) => {
                node.earlier_log = earlier;
                *self.node_mut(id) = node;
            }
            Err(why) => self.fail(&format!("restarting node {id}: {why}")),
        }
    }

    /// Runs `tests/clients/<script> --bootstrap <node's address> args...`; fails with the
    /// script's output and every broker's log unless it exits 0. Returns its stdout.
    pub(super) fn script(&mut self, bootstrap: i32, script: &str, args: &[&str]) -> String {
        let out = run_bounded(
            &mut client_command(&self.addr(bootstrap), script, args),
            None,
            Duration::from_secs(client_timeout_s),
        )
        .unwrap_or_else(|why| self.fail(&format!("{script} {args:?}: {why}")));
        self.check_script(script, args, &out)
    }

    /// Waits up to `max_s` for `client`, running `script`, to write the JSON file `ready` (the
    /// moment a test strikes), and returns what it says; fails with the script's output if it
    /// ends first or the time runs out (`what`: what the file means). Hands the client back.
    pub(super) fn await_ready(&self, mut client: ClientProcess, script: &str, ready: &str, max_s: u64, what: &str) -> (ClientProcess, Value) {
        let deadline = Instant::now() + Duration::from_secs(max_s);
        while !Path::new(ready).exists() {
            if client.finished() || Instant::now() > deadline {
                let out = client.wait(Duration::ZERO);
                self.fail(&format!(
                    "{script}: no {ready} ({what}) within {max_s} s: {}",
                    match out {
                        Ok(out) => format!("exited {}\n--- stdout ---\n{}\n--- stderr ---\n{}", out.status, String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
                        Err(why) => why,
                    }
                ));
            }
            thread::sleep(Duration::from_millis(5));
        }
        let text = std::fs::read_to_string(ready).unwrap_or_else(|e| self.fail(&format!("{ready}: {e}")));
        let said = serde_json::from_str(&text).unwrap_or_else(|e| self.fail(&format!("{ready} is not JSON ({e}): {text}")));
        (client, said)
    }

    pub(super) fn check_script(&self, script: &str, args: &[&str], out: &Output) -> String {
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
    pub(super) fn metadata(&mut self, bootstrap: i32, brokers: usize, args: &[&str]) -> Metadata {
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
    pub(super) fn kcat_metadata(&self, bootstrap: i32, topic: Option<&str>) -> String {
        let addr = self.addr(bootstrap);
        let mut cmd = Command::new(kcat());
        cmd.args(["-L", "-b", &addr, "-m", "10"]);
        if let Some(topic) = topic {
            cmd.args(["-t", topic]);
        }
        let out = run_bounded(&mut cmd, None, Duration::from_secs(30))
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

// ---------------------------------------------------------------------------------------------
// Metadata as `cluster_topic.py` prints it.

#[derive(Debug)]
pub(super) struct PartitionMetadata {
    pub(super) leader: i32,
    pub(super) replicas: Vec<i32>,
    pub(super) isr: Vec<i32>,
}

#[derive(Debug)]
pub(super) struct Metadata {
    pub(super) brokers: BTreeMap<i32, String>,
    pub(super) partitions: BTreeMap<i32, PartitionMetadata>,
    /// The controller id metadata named.
    pub(super) controller: i32,
    /// How long the script waited for the state it was asked for.
    pub(super) elapsed_s: f64,
    pub(super) raw: String,
}

impl Metadata {
    pub(super) fn parse(stdout: &str) -> Result<Metadata, String> {
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
        let controller = int(&v["controller"])?;
        Ok(Metadata {
            brokers,
            partitions,
            controller,
            elapsed_s,
            raw,
        })
    }

    pub(super) fn leaders(&self) -> BTreeSet<i32> {
        self.partitions.values().map(|p| p.leader).collect()
    }
}
