//! What the real-client tests share: where the workspace is, the client tools they run (found
//! once; a missing tool fails the test with the command that installs it, never skips), broker
//! processes (started on a port, their output kept, signalled, killed and reaped on drop) and
//! client processes run with a bound on their time.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

pub fn workspace_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace above broker-core").to_path_buf()
}

/// `kcat` on PATH, or a failure saying how to get it.
pub fn kcat() -> &'static str {
    static FOUND: OnceLock<Result<(), String>> = OnceLock::new();
    let found = FOUND.get_or_init(|| match Command::new("kcat").arg("-V").stdin(Stdio::null()).output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(format!("`kcat -V` failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr))),
        Err(e) => Err(format!("`kcat` not runnable from PATH: {e}")),
    });
    if let Err(why) = found {
        panic!("{why}\nThese tests need kcat: install it with `apt-get install kcat`, or run `scripts/test.sh` (the README's test command), which does.");
    }
    "kcat"
}

/// Prometheus's `promtool`: `$SEEDLOG_PROMTOOL` if set, else the one `scripts/test.sh` unpacks
/// from Debian's prometheus package into `target/tools/prometheus`; checked by running it.
pub fn promtool() -> &'static Path {
    static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let found = FOUND.get_or_init(|| {
        let path = std::env::var_os("SEEDLOG_PROMTOOL").map_or_else(|| workspace_dir().join("target/tools/prometheus/usr/bin/promtool"), PathBuf::from);
        match Command::new(&path).arg("--version").stdin(Stdio::null()).output() {
            Ok(out) if out.status.success() => Ok(path),
            Ok(out) => Err(format!("`{} --version` failed ({})", path.display(), out.status)),
            Err(e) => Err(format!("{} not runnable: {e}", path.display())),
        }
    });
    match found {
        Ok(path) => path,
        Err(why) => panic!("{why}\nThe /metrics tests lint with promtool: run `scripts/test.sh` (the README's test command), which unpacks Debian's prometheus package into target/tools, or set SEEDLOG_PROMTOOL."),
    }
}

/// `GET /metrics` from `addr`: the body, or why not.
pub fn scrape(addr: &str) -> Result<String, String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(10))).map_err(|e| e.to_string())?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: seedlog\r\n\r\n").map_err(|e| e.to_string())?;
    let mut text = String::new();
    s.read_to_string(&mut text).map_err(|e| format!("read {addr}: {e}"))?;
    let (head, body) = text.split_once("\r\n\r\n").ok_or_else(|| format!("no HTTP header from {addr}: {text}"))?;
    match head.starts_with("HTTP/1.1 200") {
        true => Ok(body.to_string()),
        false => Err(format!("{addr}: {head}")),
    }
}

/// `promtool check metrics` over `text`: None when clean, else what it said.
pub fn lint_metrics(text: &str) -> Option<String> {
    use std::io::Write;
    let mut child = Command::new(promtool()).args(["check", "metrics"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("promtool runs");
    child.stdin.take().expect("piped").write_all(text.as_bytes()).expect("promtool reads");
    let out = child.wait_with_output().expect("promtool ends");
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (!out.status.success() || !said.trim().is_empty()).then_some(said)
}

/// The value of the sample `name{labels}` (labels as written, e.g. `topic="t"`), if listed.
pub fn metric(text: &str, sample: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(sample)?.strip_prefix(' ')?.trim().parse().ok())
}

/// The `node_modules` holding kafkajs: `$SEEDLOG_NODE_MODULES` if set (then it must have it),
/// else `target/node-clients/node_modules` (made by `scripts/test.sh`), checked by running
/// `node` with it.
pub fn kafkajs_modules() -> &'static Path {
    static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let found = FOUND.get_or_init(|| {
        let dir = std::env::var_os("SEEDLOG_NODE_MODULES").map_or_else(|| workspace_dir().join("target/node-clients/node_modules"), PathBuf::from);
        let out = Command::new("node")
            .args(["-e", "require('kafkajs')"])
            .env("NODE_PATH", &dir)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("`node` not runnable from PATH: {e}"))?;
        if out.status.success() {
            Ok(dir)
        } else {
            let stderr = String::from_utf8_lossy(&out.stderr);
            Err(format!("node cannot `require('kafkajs')` from {}: {}", dir.display(), stderr.trim().lines().next().unwrap_or("")))
        }
    });
    match found {
        Ok(dir) => dir,
        Err(why) => panic!(
            "{why}\nThese tests need Node.js and kafkajs: `npm install --prefix target/node-clients kafkajs@2.2.4` \
             (or run `scripts/test.sh`, which does), or set $SEEDLOG_NODE_MODULES to a node_modules that has it."
        ),
    }
}

/// Debian's sarama 1.22 group client (`tests/clients/sarama_group`), built once per run into
/// `target/sarama-group` with Debian's Go in GOPATH mode (`golang-go` and
/// `golang-github-shopify-sarama-dev`, which `scripts/test.sh` installs).
pub fn sarama_group() -> &'static Path {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let gopath = Path::new("/usr/share/gocode");
        if !gopath.join("src/github.com/Shopify/sarama").is_dir() {
            return Err(format!("no sarama source under {}/src/github.com/Shopify/sarama", gopath.display()));
        }
        let out_dir = workspace_dir().join("target/sarama-group");
        let binary = out_dir.join("sarama_group");
        let out = Command::new("go")
            .args(["build", "-o"])
            .arg(&binary)
            .arg(".")
            .current_dir(workspace_dir().join("broker-core/tests/clients/sarama_group"))
            .env("GO111MODULE", "off")
            .env("GOPATH", gopath)
            .env("GOCACHE", out_dir.join("cache"))
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run `go`: {e}"))?;
        match out.status.success() {
            true => Ok(binary),
            false => Err(format!("`go build` of tests/clients/sarama_group failed: {}", String::from_utf8_lossy(&out.stderr))),
        }
    });
    match built {
        Ok(path) => path,
        Err(why) => panic!(
            "{why}\nThis test needs Debian's Go and sarama 1.22: `apt-get install golang-go golang-github-shopify-sarama-dev` \
             (or run `scripts/test.sh`, which does)."
        ),
    }
}

/// A Python that can `import confluent_kafka, kafka`: `$SEEDLOG_PYTHON` if set (then it must
/// work: it was asked for), else `target/client-venv/bin/python` (made by `scripts/test.sh`), else
/// `python3`.
pub fn python() -> &'static Path {
    static FOUND: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let found = FOUND.get_or_init(|| {
        let imports = |python: &Path| -> Result<(), String> {
            let out = Command::new(python)
                .args(["-c", "import confluent_kafka, kafka"])
                .stdin(Stdio::null())
                .output()
                .map_err(|e| format!("cannot run it: {e}"))?;
            if out.status.success() {
                Ok(())
            } else {
                let stderr = String::from_utf8_lossy(&out.stderr);
                Err(stderr.trim().lines().last().map_or_else(|| format!("exited {}", out.status), str::to_string))
            }
        };
        if let Some(explicit) = std::env::var_os("SEEDLOG_PYTHON") {
            let explicit = PathBuf::from(explicit);
            return imports(&explicit)
                .map(|()| explicit.clone())
                .map_err(|e| format!("$SEEDLOG_PYTHON={}: `import confluent_kafka, kafka`: {e}", explicit.display()));
        }
        let venv = workspace_dir().join("target/client-venv/bin/python");
        let mut tried = Vec::new();
        for candidate in [venv, PathBuf::from("python3")] {
            if candidate.is_absolute() && !candidate.exists() {
                tried.push(format!("{}: does not exist", candidate.display()));
                continue;
            }
            match imports(&candidate) {
                Ok(()) => return Ok(candidate),
                Err(e) => tried.push(format!("{}: {e}", candidate.display())),
            }
        }
        Err(format!(
            "no Python that can `import confluent_kafka, kafka`; tried $SEEDLOG_PYTHON (unset), {}",
            tried.join("; ")
        ))
    });
    match found {
        Ok(path) => path,
        Err(why) => panic!(
            "{why}\nThese tests need confluent-kafka and kafka-python: `pip install confluent-kafka kafka-python` \
             (or run `scripts/test.sh`, which makes target/client-venv with them), or set $SEEDLOG_PYTHON to a Python that has them."
        ),
    }
}

/// Keeps the last `lines_max` lines of a broker pipe in `log` (colour codes removed); signals `ready` once a line contains its text.
pub fn keep_lines(
    pipe: impl Read + Send + 'static,
    name: &'static str,
    log: Arc<Mutex<VecDeque<String>>>,
    lines_max: usize,
    mut ready: Option<(String, mpsc::Sender<()>)>,
) {
    thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            let line = strip_ansi(&line);
            if ready.as_ref().is_some_and(|(text, _)| line.contains(text.as_str())) {
                let (_, tx) = ready.take().expect("checked");
                let _ = tx.send(());
            }
            let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
            if log.len() >= lines_max {
                log.pop_front();
            }
            log.push_back(format!("[{name}] {line}"));
        }
    });
}

/// Removes terminal colour sequences (`ESC [ ... letter`), in case the logger adds them to a pipe.
pub fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A running `broker` process listening on 127.0.0.1:`port`, its output kept (the last
/// `lines_max` lines); SIGKILLed and reaped on drop, so no test leaves one behind.
pub struct BrokerProcess {
    pub port: u16,
    child: Child,
    log: Arc<Mutex<VecDeque<String>>>,
    exited: Option<ExitStatus>,
}

impl BrokerProcess {
    /// Spawns `broker --listen 127.0.0.1:<port> <args>` and returns once it printed its
    /// `listening on` line; otherwise why not, with its output.
    pub fn start(port: u16, args: &[String], lines_max: usize, ready_timeout: Duration) -> Result<BrokerProcess, String> {
        let addr = format!("127.0.0.1:{port}");
        // `--listeners` names the address itself (and its security protocol).
        let listen: &[&str] = if args.iter().any(|a| a == "--listeners") { &[] } else { &["--listen", &addr] };
        let mut child = Command::new(env!("CARGO_BIN_EXE_broker"))
            .args(listen)
            .args(args)
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
        keep_lines(child.stdout.take().expect("piped stdout"), "stdout", Arc::clone(&log), lines_max, None);
        keep_lines(child.stderr.take().expect("piped stderr"), "stderr", Arc::clone(&log), lines_max, Some((ready_line.clone(), ready_tx)));
        let mut broker = BrokerProcess { port, child, log, exited: None };
        let deadline = Instant::now() + ready_timeout;
        loop {
            if ready_rx.recv_timeout(Duration::from_millis(50)).is_ok() {
                return Ok(broker);
            }
            if let Some(status) = broker.exited() {
                return Err(format!("exited ({status}) before printing {ready_line:?}\n{}", broker.lines().join("\n")));
            }
            if Instant::now() > deadline {
                return Err(format!("did not print {ready_line:?} within {} s\n{}", ready_timeout.as_secs(), broker.lines().join("\n")));
            }
        }
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn pid(&self) -> libc::pid_t {
        libc::pid_t::try_from(self.child.id()).expect("pid fits pid_t")
    }

    /// How the process exited, or None while it runs.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        if self.exited.is_none() {
            self.exited = self.child.try_wait().expect("try_wait");
        }
        self.exited
    }

    /// Sends `signal` and waits (at most `timeout`) for the process to exit.
    pub fn signal_and_wait(&mut self, signal: libc::c_int, timeout: Duration) -> Result<ExitStatus, String> {
        assert!(self.exited.is_none(), "signal {signal} to a broker that already exited");
        // SAFETY: kill(2) on our own child's pid; the child is not reaped yet, so the pid is ours.
        let rc = unsafe { libc::kill(self.pid(), signal) };
        assert_eq!(rc, 0, "kill({}, {signal}): {}", self.pid(), std::io::Error::last_os_error());
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.exited() {
                return Ok(status);
            }
            if Instant::now() > deadline {
                return Err(format!("still running {} s after signal {signal}", timeout.as_secs()));
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// The output lines kept so far (after a moment for the pipe readers to catch the last
    /// lines of a process that just exited).
    pub fn lines(&self) -> Vec<String> {
        thread::sleep(Duration::from_millis(100));
        self.log.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned().collect()
    }
}

impl Drop for BrokerProcess {
    fn drop(&mut self) {
        if self.exited.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `n` distinct ports the OS just handed out and took back (all listeners are held at once so
/// the ports differ). Another process could grab one before a broker binds it; the OS hands out
/// ephemeral ports round-robin, so in practice it does not.
pub fn free_ports(n: usize) -> Vec<u16> {
    let listeners: Vec<TcpListener> = (0..n).map(|_| TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0")).collect();
    listeners.iter().map(|l| l.local_addr().expect("local_addr").port()).collect()
}

/// A client process (script or tool) whose output is collected as it runs; SIGKILLed and
/// reaped on drop, so a test that fails while a client runs in the background leaves none.
pub struct ClientProcess {
    child: Child,
    stdin: Option<thread::JoinHandle<()>>,
    stdout: Option<thread::JoinHandle<Vec<u8>>>,
    stderr: Option<thread::JoinHandle<Vec<u8>>>,
    reaped: bool,
}

impl ClientProcess {
    /// Starts `cmd` with `stdin` fed in (or no input).
    pub fn spawn(cmd: &mut Command, stdin: Option<Vec<u8>>) -> Result<ClientProcess, String> {
        let mut child = cmd
            .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
        let writer = stdin.map(|bytes| {
            let mut pipe = child.stdin.take().expect("piped stdin");
            thread::spawn(move || {
                let _ = pipe.write_all(&bytes); // a client that died early shows in its own output
            })
        });
        let read_all = |mut pipe: Box<dyn Read + Send>| {
            thread::spawn(move || {
                let mut buf = Vec::new();
                let _ = pipe.read_to_end(&mut buf);
                buf
            })
        };
        let stdout = Some(read_all(Box::new(child.stdout.take().expect("piped stdout"))));
        let stderr = Some(read_all(Box::new(child.stderr.take().expect("piped stderr"))));
        Ok(ClientProcess { child, stdin: writer, stdout, stderr, reaped: false })
    }

    pub fn finished(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_some()
    }

    /// Its exit and output, or (killed after `timeout`) a description with its output so far.
    pub fn wait(mut self, timeout: Duration) -> Result<Output, String> {
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
        if let Some(writer) = self.stdin.take() {
            let _ = writer.join();
        }
        let out = self.stdout.take().expect("joined once").join().unwrap_or_default();
        let err = self.stderr.take().expect("joined once").join().unwrap_or_default();
        match status {
            Some(status) => Ok(Output { status, stdout: out, stderr: err }),
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

/// Runs `cmd` to completion with `stdin` fed in, killing it after `timeout`.
pub fn run_bounded(cmd: &mut Command, stdin: Option<Vec<u8>>, timeout: Duration) -> Result<Output, String> {
    ClientProcess::spawn(cmd, stdin)?.wait(timeout)
}

/// `python -u tests/clients/<script> --bootstrap <bootstrap> args...`, or `node` for a `.js` script
/// (with kafkajs on its `NODE_PATH`).
pub fn client_command(bootstrap: &str, script: &str, args: &[&str]) -> Command {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients").join(script);
    if script.ends_with(".js") {
        let mut cmd = Command::new("node");
        cmd.arg(&path).args(["--bootstrap", bootstrap]).args(args).env("NODE_PATH", kafkajs_modules());
        return cmd;
    }
    let mut cmd = Command::new(python());
    cmd.arg("-u").arg(&path).args(["--bootstrap", bootstrap]).args(args).env("PYTHONDONTWRITEBYTECODE", "1");
    cmd
}

/// A node in this process (real files under `dir`) serving on a fresh 127.0.0.1 port, with
/// `topics` created through it: its address, and its task (abort it when done).
pub async fn node_in_process(dir: &Path, topics: &[broker_core::client::admin::NewTopic]) -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("the listener's address");
    let shared = broker_core::testing::node_serving(Arc::new(broker_core::storage::FileDisk::new()), dir, addr, |_| {});
    let node = tokio::spawn(broker_core::server::serve(listener, shared, std::future::pending()));
    broker_core::client::admin::create_topics(addr, topics, Duration::from_secs(10)).await.expect("create the topics");
    (addr, node)
}

/// A raw Kafka connection for the API-version tests, which encode with two kafka-protocol
/// versions (0.18 and Kafka 3.9's 0.15): it frames what the caller encoded and reads back one
/// answer's frame, so each test keeps only its own crate's header and body.
pub struct RawConnection {
    stream: std::net::TcpStream,
    correlation: i32,
}

impl RawConnection {
    pub fn connect(bootstrap: &str) -> RawConnection {
        let stream = std::net::TcpStream::connect(bootstrap).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
        RawConnection { stream, correlation: 0 }
    }

    /// Sends the request `encode` writes (header and body, given the next correlation id) with
    /// its size in front; the answer's frame and that correlation id, or None when the broker
    /// closed the connection instead of answering.
    pub fn round_trip(&mut self, encode: impl FnOnce(&mut bytes::BytesMut, i32)) -> Option<(bytes::Bytes, i32)> {
        use bytes::BufMut;
        self.correlation += 1;
        let mut out = bytes::BytesMut::new();
        out.put_i32(0);
        encode(&mut out, self.correlation);
        let size = (out.len() - 4) as i32;
        out[..4].copy_from_slice(&size.to_be_bytes());
        self.stream.write_all(&out).expect("write");
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len).ok()?;
        let mut frame = vec![0u8; i32::from_be_bytes(len) as usize];
        self.stream.read_exact(&mut frame).expect("answer body");
        Some((bytes::Bytes::from(frame), self.correlation))
    }
}
