//! `--metrics-listen HOST:PORT`: `GET /metrics` in the Prometheus text exposition format
//! (0.0.4, what `promtool check metrics` lints and every Prometheus scrapes). Counting is
//! cheap on the hot paths — a broker's per-topic counters (`broker::stats`), one histogram
//! observation per request here, two atomics for waits and throttles — and everything else is
//! read from the node's state when scraped: partitions, ISRs, the quorum, groups and lags.
//!
//! The text is written here rather than by prometheus-client: that crate writes OpenMetrics,
//! whose counter families (`# TYPE x counter` over samples `x_total`) Debian's promtool 2.42
//! reports as untyped metrics without help; the 0.0.4 format below names each family as its
//! samples are named.

use super::Shared;
use crate::kafka::ApiKey;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::time::Instant;

/// Request latency buckets, seconds: from a cached answer to a long poll's end.
const latency_buckets_s: [f64; 12] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0];
/// Largest scrape request read: a GET line and a few headers.
const scrape_request_bytes_max: usize = 8 * 1024;
/// How long a scrape connection may take to send its request.
const scrape_read_ms_max: u64 = 5_000;

/// The parts of a request's time (Kafka's RequestMetrics, as this broker's requests go), from the
/// moment it was read whole and given its read turn: `queue` until the node first takes it up
/// (startup, the node's gate), `local` in its decisions and the disk work they ask for (wall
/// time, so a decision's fsync waits count: more than Kafka's handler-thread time), `remote`
/// waiting on others (replicas for acks=all,
/// a coordinator's answer, the controller, a fetch's wait), `send` writing the answer, and
/// `throttle` the muted connection after it (a client quota).
const phases: [&str; 5] = ["queue", "local", "remote", "send", "throttle"];

/// Where one request's time went, in seconds, in the order of `phases`.
pub(super) type Phases = [f64; phases.len()];

/// When a request was read, when the node first took it up, and how long its decisions took.
pub(super) struct Clock {
    read: Instant,
    first: Option<Instant>,
    local: Duration,
}

impl Clock {
    pub(super) fn start() -> Clock {
        Clock { read: Instant::now(), first: None, local: Duration::ZERO }
    }

    /// A decision of the request that began at `entered` is done, its disk work too.
    pub(super) fn decided(&mut self, entered: Instant) {
        self.first.get_or_insert(entered);
        self.local += entered.elapsed();
    }

    /// The node's time on the request so far (what `request_percentage` counts).
    pub(super) fn local(&self) -> Duration {
        self.local
    }

    /// The phases up to now, the answer decided: send and throttle are the caller's.
    pub(super) fn phases(&self) -> Phases {
        let total = self.read.elapsed();
        let queue = self.first.map_or(total, |f| f.saturating_duration_since(self.read));
        let remote = total.saturating_sub(queue + self.local);
        [queue.as_secs_f64(), self.local.as_secs_f64(), remote.as_secs_f64(), 0.0, 0.0]
    }
}

/// One API's request count and latency.
#[derive(Debug, Default, Clone)]
struct Histogram {
    buckets: [u64; latency_buckets_s.len()],
    count: u64,
    sum_s: f64,
}

/// What the shell counts as it answers requests.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Per API: the whole time, then each phase's.
    requests: Mutex<BTreeMap<i16, [Histogram; 1 + phases.len()]>>,
    /// Requests answered later (acks=all produce, topic changes): Kafka's produce purgatory.
    pub(super) waiting: AtomicI64,
    /// Throttle time handed out, ms, by `throttle::Kind`: produce, fetch, request time
    /// (`throttling`).
    pub(super) throttle_ms: [AtomicU64; 3],
}

impl Metrics {
    /// One request of API `key` answered, its time spent as `parts` says.
    pub(super) fn request(&self, key: i16, parts: Phases) {
        let mut all = self.requests.lock().unwrap_or_else(|p| p.into_inner());
        let hs = all.entry(key).or_default();
        hs[0].observe(parts.iter().sum());
        for (h, seconds) in hs[1..].iter_mut().zip(parts) {
            h.observe(seconds);
        }
    }
}

impl Histogram {
    fn observe(&mut self, seconds: f64) {
        self.count += 1;
        self.sum_s += seconds;
        if let Some(i) = latency_buckets_s.iter().position(|b| seconds <= *b) {
            self.buckets[i] += 1;
        }
    }

    /// Its samples: cumulative buckets, then sum and count, each with `labels` and `le`.
    fn write(&self, t: &mut Text, name: &str, labels: &[(&str, &str)]) {
        let mut cumulative = 0;
        let with = |le: &str| -> Vec<(&str, String)> { labels.iter().map(|(k, v)| (*k, v.to_string())).chain([("le", le.to_string())]).collect() };
        for (b, n) in latency_buckets_s.iter().zip(self.buckets) {
            cumulative += n;
            t.sample_owned(&format!("{name}_bucket"), &with(&b.to_string()), cumulative as f64);
        }
        t.sample_owned(&format!("{name}_bucket"), &with("+Inf"), self.count as f64);
        t.sample(&format!("{name}_sum"), labels, self.sum_s);
        t.sample(&format!("{name}_count"), labels, self.count as f64);
    }
}

/// Serves scrapes until the process ends: each connection one request, one answer.
pub async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((mut stream, _)) = listener.accept().await else { continue };
        let shared = shared.clone();
        tokio::spawn(async move {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 1024];
            let read = tokio::time::timeout(std::time::Duration::from_millis(scrape_read_ms_max), async {
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < scrape_request_bytes_max {
                    match stream.read(&mut chunk).await {
                        Ok(0) | Err(_) => return false,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                true
            });
            if !matches!(read.await, Ok(true)) {
                return;
            }
            let line = buf.split(|&b| b == b'\r').next().unwrap_or(&[]);
            let (status, body) = match line.starts_with(b"GET /metrics ") || line == b"GET /metrics" {
                true => ("200 OK", render(&shared).await),
                false => ("404 Not Found", "only GET /metrics is served here\n".to_string()),
            };
            let head = format!("HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(body.as_bytes()).await;
            let _ = stream.shutdown().await;
        });
    }
}

/// The exposition text, in the 0.0.4 format: per family its help, type and samples.
#[derive(Default)]
struct Text(String);

impl Text {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        writeln!(self.0, "# HELP {name} {help}\n# TYPE {name} {kind}").expect("writing to a String");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.0.push_str(name);
        if !labels.is_empty() {
            let inner: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", escape(v))).collect();
            write!(self.0, "{{{}}}", inner.join(",")).expect("writing to a String");
        }
        writeln!(self.0, " {value}").expect("writing to a String");
    }

    fn sample_owned(&mut self, name: &str, labels: &[(&str, String)], value: f64) {
        let borrowed: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
        self.sample(name, &borrowed, value);
    }

    /// A family of one unlabelled sample.
    fn one(&mut self, name: &str, kind: &str, help: &str, value: f64) {
        self.family(name, kind, help);
        self.sample(name, &[], value);
    }
}

fn escape(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// Everything, read from the node at once; the quorum's part once its gate is free (a quorum
/// decision holds the quorum's lock across its metadata log's syncs: a scrape must not block a
/// runtime thread on it).
async fn render(shared: &Shared) -> String {
    let mut t = Text::default();
    requests(&mut t, &shared.metrics);
    t.one("seedlog_produce_purgatory_size", "gauge", "Requests answered later: acks=all produces waiting for the ISR, topic changes waiting to be applied.", shared.metrics.waiting.load(Ordering::Relaxed) as f64);
    t.family("seedlog_client_throttle_seconds_total", "counter", "Throttle time handed to clients over their quotas.");
    for (i, kind) in ["produce", "fetch", "request"].into_iter().enumerate() {
        t.sample("seedlog_client_throttle_seconds_total", &[("kind", kind)], shared.metrics.throttle_ms[i].load(Ordering::Relaxed) as f64 / 1000.0);
    }
    partitions(&mut t, shared);
    shared.decide_quorum(|s| quorum(&mut t, s)).await;
    t.0
}

fn requests(t: &mut Text, m: &Metrics) {
    let all = m.requests.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let api = |key: i16| ApiKey::try_from(key).map_or_else(|_| key.to_string(), |k| format!("{k:?}"));
    t.family("seedlog_request_duration_seconds", "histogram", "Requests by API, from read to answer sent (queue, local, remote, send, throttle).");
    for (key, hs) in &all {
        hs[0].write(t, "seedlog_request_duration_seconds", &[("api", &api(*key))]);
    }
    t.family("seedlog_request_phase_seconds", "histogram", "Requests by API and phase: queue (until the node takes it up), local (its decisions and their disk work), remote (waiting on replicas, coordinators, the controller, a fetch's wait), send (writing the answer), throttle (muted after it).");
    for (key, hs) in &all {
        for (phase, h) in phases.iter().zip(&hs[1..]) {
            h.write(t, "seedlog_request_phase_seconds", &[("api", &api(*key)), ("phase", phase)]);
        }
    }
}

/// The broker's replicas and counters, and the groups it coordinates.
fn partitions(t: &mut Text, shared: &Shared) {
    let parts = shared.node.parts();
    let b = &parts.broker;
    let stats = b.stats();
    for (name, help, pick) in [
        ("seedlog_topic_bytes_in_total", "Bytes clients produced to the topic's partitions led here.", 0),
        ("seedlog_topic_messages_in_total", "Records clients produced to the topic's partitions led here.", 1),
        ("seedlog_topic_bytes_out_total", "Bytes consumers fetched from the topic's partitions led here.", 2),
    ] {
        t.family(name, "counter", help);
        for (topic, s) in &stats.topics {
            t.sample(name, &[("topic", topic)], [s.bytes_in, s.messages_in, s.bytes_out][pick] as f64);
        }
    }
    t.one("seedlog_isr_shrinks_total", "counter", "ISR shrinks committed for partitions led here.", stats.isr_shrinks as f64);
    t.one("seedlog_isr_expands_total", "counter", "ISR expansions committed for partitions led here.", stats.isr_expands as f64);
    let (mut replicas, mut leaders, mut under) = (0, 0, 0);
    let (mut dirty_max, mut backlog) = (0.0f64, 0u64);
    let now = super::now_ms();
    let mut hw: BTreeMap<(String, i32), i64> = BTreeMap::new();
    for ((topic, p), part) in b.partitions().iter() {
        replicas += 1;
        if part.log.config().cleanup.compact {
            let (dirty, total) = part.log.dirty_bytes(now, part.high_watermark());
            backlog += dirty;
            dirty_max = dirty_max.max(dirty as f64 / total.max(1) as f64);
        }
        if part.replication.is_leader() {
            leaders += 1;
            let assigned = b.image().partition(topic, p).map_or(0, |i| i.replicas.len());
            under += usize::from(part.replication.isr.len() < assigned);
            hw.insert((topic.to_string(), p), part.high_watermark());
        }
    }
    t.one("seedlog_partitions", "gauge", "Replicas on this broker.", replicas as f64);
    t.one("seedlog_leader_partitions", "gauge", "Partitions this broker leads.", leaders as f64);
    t.one("seedlog_under_replicated_partitions", "gauge", "Partitions led here whose ISR is smaller than their replica set.", under as f64);
    let offline = b.image().topics.values().flat_map(|t| &t.partitions).filter(|p| p.leader == crate::metadata::no_leader).count();
    t.one("seedlog_cleaner_max_dirty_ratio", "gauge", "The largest dirty share of a compacted log here (what min.cleanable.dirty.ratio compares).", dirty_max);
    t.one("seedlog_cleaner_dirty_bytes", "gauge", "Bytes of closed segments not yet cleaned, over the compacted logs here: the cleaner's backlog.", backlog as f64);
    t.one("seedlog_offline_partitions", "gauge", "Partitions of the cluster with no leader, as this broker's metadata says.", offline as f64);
    let groups: Vec<_> = parts.groups.groups().collect();
    let mut by_state: BTreeMap<String, usize> = BTreeMap::new();
    for g in &groups {
        *by_state.entry(format!("{:?}", g.state)).or_default() += 1;
    }
    t.family("seedlog_groups", "gauge", "Consumer groups this broker coordinates, by state.");
    for (state, n) in &by_state {
        t.sample("seedlog_groups", &[("state", state)], *n as f64);
    }
    t.one("seedlog_group_members", "gauge", "Members of the groups this broker coordinates.", groups.iter().map(|g| g.members.len()).sum::<usize>() as f64);
    t.family("seedlog_consumer_lag", "gauge", "Records between a group's committed offset and the high watermark, for partitions led here.");
    for g in &groups {
        for ((topic, p), committed) in parts.groups.fetch_offsets(&g.id, None).unwrap_or_default() {
            let (Some(c), Some(h)) = (committed, hw.get(&(topic.clone(), p))) else { continue };
            let partition = p.to_string();
            t.sample("seedlog_consumer_lag", &[("group", &g.id), ("topic", &topic), ("partition", &partition)], (h - c.offset).max(0) as f64);
        }
    }
}

/// The metadata quorum, on a voter.
fn quorum(t: &mut Text, shared: &Shared) {
    let q = shared.node.controller();
    let active = q.as_ref().is_some_and(|q| q.is_active());
    t.one("seedlog_active_controller", "gauge", "1 on the active controller (the quorum's leader), else 0.", f64::from(u8::from(active)));
    let Some(q) = q else { return };
    t.one("seedlog_raft_epoch", "gauge", "This voter's Raft epoch.", f64::from(q.raft().epoch()));
    t.one("seedlog_raft_leader", "gauge", "The quorum leader this voter knows (-1: none).", f64::from(q.leader().unwrap_or(-1)));
    t.one("seedlog_raft_high_watermark", "gauge", "The metadata log's committed end on this voter.", q.committed_end() as f64);
    let l = q.commit_latency();
    t.family("seedlog_raft_commit_latency_seconds", "histogram", "From a proposal of the active controller on this voter to its commit by the quorum.");
    let mut cumulative = 0;
    for (b, n) in crate::controller::latency::commit_latency_buckets_ms.iter().zip(l.buckets) {
        cumulative += n;
        t.sample("seedlog_raft_commit_latency_seconds_bucket", &[("le", &(*b as f64 / 1000.0).to_string())], cumulative as f64);
    }
    t.sample("seedlog_raft_commit_latency_seconds_bucket", &[("le", "+Inf")], l.count as f64);
    t.sample("seedlog_raft_commit_latency_seconds_sum", &[], l.sum_ms as f64 / 1000.0);
    t.sample("seedlog_raft_commit_latency_seconds_count", &[], l.count as f64);
}
