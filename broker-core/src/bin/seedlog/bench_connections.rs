//! `seedlog bench-connections`: many client connections against one running broker (issue 13
//! item 5). `--producers` connections send fixed Produce batches (acks=1 or all) as fast as the
//! broker answers them, each with at most `--in-flight` requests outstanding, all drawing from one
//! shared budget of `--records`, so that one connection and a thousand send the same total;
//! `--idle` connections are opened first (ApiVersions, then silence until the end). Reported:
//! records/s, MB/s, request latency (write to answer) p50/p99/max, and the broker's resident
//! memory and CPU from /proc (given `--broker-pid`): with no connection, with the idle ones, with
//! every producer connected, the peak under load and after it. One JSON line on stdout, a
//! readable summary on stderr; `scripts/bench-connections.sh` starts the broker and tabulates.
//!
//! A load generator at the IO edge: it reads the wall clock and /proc. Every frame is built once
//! (the crate's batch encoder, kafka-protocol's ProduceRequest) and only its correlation id is
//! patched per send, and the client runs on one thread, so it costs the shared CPU little next
//! to the broker. It is bounded: connections by the descriptor limit it checks first, time by
//! `--secs-max`, records by the budget.

use broker_core::constants::{connections_max, message_bytes_max};
use broker_core::client::conn::{answer, request_frame};
use broker_core::kafka::{sent, ApiKey};
use bytes::Bytes;
use kafka_protocol::messages::produce_request::{PartitionProduceData, ProduceRequest, TopicProduceData};
use kafka_protocol::messages::TopicName;
use kafka_protocol::protocol::StrBytes;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

#[derive(clap::Args)]
pub struct Args {
    /// The broker, host:port (it must lead the topic's partitions: one broker).
    #[arg(long, default_value = "127.0.0.1:9092")]
    bootstrap: SocketAddr,
    /// The broker's process id: its VmRSS and CPU are read from /proc/PID (else not reported).
    #[arg(long)]
    broker_pid: Option<i32>,
    /// Producer connections.
    #[arg(long, default_value_t = 1)]
    producers: usize,
    /// Idle connections, opened before the producers: ApiVersions, then silent.
    #[arg(long, default_value_t = 0)]
    idle: usize,
    /// Produce requests outstanding per producer connection (librdkafka's max.in.flight is 5).
    #[arg(long, default_value_t = 5)]
    in_flight: usize,
    /// acks of every Produce: 1 or -1 (all).
    #[arg(long, default_value_t = 1, allow_hyphen_values = true)]
    acks: i16,
    /// Records sent in all, drawn batch by batch from one budget by every producer connection.
    #[arg(long, default_value_t = 2_000_000)]
    records: u64,
    /// The load stops after this many seconds even if the budget is not spent.
    #[arg(long, default_value_t = 60)]
    secs_max: u64,
    /// Records per batch (one batch per Produce request).
    #[arg(long, default_value_t = 100)]
    batch_records: usize,
    /// Bytes of each record's value.
    #[arg(long, default_value_t = 100)]
    record_bytes: usize,
    /// Partitions of the topic; connection i sends its k-th batch to partition (i + k) mod this.
    #[arg(long, default_value_t = 6)]
    partitions: i32,
    /// Topic to create (if missing) and produce to.
    #[arg(long, default_value = "bench-connections")]
    topic: String,
    /// Pause before each memory and CPU reading, so the broker settles (ms).
    #[arg(long, default_value_t = 1000)]
    settle_ms: u64,
    /// Free-form label copied into the JSON line.
    #[arg(long, default_value = "")]
    tag: String,
}

/// Connections opened at once: the listener's backlog must not overflow (a dropped SYN costs a
/// one-second retransmit), and a thousand connects in flight measure nothing useful.
const connect_parallel: usize = 100;
/// How long a connect or a setup answer may take before the run fails.
const setup_timeout: Duration = Duration::from_secs(30);
/// The largest answer read: Produce and ApiVersions answers are a few hundred bytes.
const answer_bytes_max: usize = 1 << 20;

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

pub fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    check(&args).map_err(|e| e.to_string())?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    Ok(runtime.block_on(bench(args)).map_err(|e| e.to_string())?)
}

fn check(a: &Args) -> Res<()> {
    let batch_bytes = a.batch_records * (a.record_bytes + 16) + 61;
    if a.producers == 0 || a.producers + a.idle > connections_max {
        return Err(format!("--producers must be 1.. and --producers + --idle at most {connections_max} (the broker's connections_max)").into());
    }
    if !(1..=100).contains(&a.in_flight) || !(a.acks == 1 || a.acks == -1) || a.partitions < 1 || a.batch_records == 0 || batch_bytes > message_bytes_max {
        return Err(format!("--in-flight must be 1..=100, --acks 1 or -1, --partitions and --batch-records at least 1, a batch at most {message_bytes_max} bytes").into());
    }
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // `&mut limit` points to a live, initialized rlimit of ours, the type getrlimit
    // writes for RLIMIT_NOFILE; nothing else is written.
    // SAFETY: as the lines above say.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 && (limit.rlim_cur as usize) < a.producers + a.idle + 64 {
        return Err(format!("{} connections need more descriptors than RLIMIT_NOFILE={} (raise it: ulimit -n)", a.producers + a.idle, limit.rlim_cur).into());
    }
    Ok(())
}

/// The broker's resident memory and CPU time at one moment.
#[derive(Clone, Copy, Default)]
struct Sample {
    rss_bytes: u64,
    cpu_s: f64,
}

fn sample(pid: Option<i32>) -> Sample {
    let Some(pid) = pid else { return Sample::default() };
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss_kib: u64 = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).unwrap_or(0);
    // utime and stime are the 14th and 15th fields; the command name before them may hold spaces.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit_once(')').map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let ticks: u64 = fields.get(11..13).map_or(0, |f| f.iter().filter_map(|t| t.parse::<u64>().ok()).sum());
    // Sysconf takes a name by value and no pointers; an unknown name gives -1, which
    // `max(1)` turns into a usable divisor.
    // SAFETY: as the lines above say.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    Sample { rss_bytes: rss_kib * 1024, cpu_s: ticks as f64 / hz }
}

/// This process's own CPU seconds (user + system).
fn own_cpu_s() -> f64 {
    // Rusage is a plain C struct of integers and timevals: all zero bytes is a valid
    // value of it (and what getrusage's failure would leave).
    // SAFETY: as the lines above say.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // `&mut u` points to a live rusage of ours, the struct getrusage(RUSAGE_SELF)
    // fills; nothing else is written.
    // SAFETY: as the lines above say.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 / 1e6;
    t(u.ru_utime) + t(u.ru_stime)
}

/// Where the correlation id sits in a frame: after the size, the API key and the version.
const correlation_at: usize = 8;

/// One Produce frame per partition, each holding the same batch.
fn produce_frames(a: &Args) -> Res<Vec<Vec<u8>>> {
    let value = vec![b'v'; a.record_bytes];
    let values: Vec<&[u8]> = (0..a.batch_records).map(|_| value.as_slice()).collect();
    let batch = Bytes::from(broker_core::log::batch::build(&values, 0));
    (0..a.partitions)
        .map(|p| {
            let part = PartitionProduceData::default().with_index(p).with_records(Some(batch.clone()));
            let topic = TopicProduceData::default().with_name(TopicName(StrBytes::from_string(a.topic.clone()))).with_partition_data(vec![part]);
            let req = ProduceRequest::default().with_acks(a.acks).with_timeout_ms(30_000).with_topic_data(vec![topic]);
            Ok(request_frame(&req, 0, "bench-connections")?.1.to_vec())
        })
        .collect()
}

/// An ApiVersions v0 frame, as clients open a connection with.
fn api_versions() -> Vec<u8> {
    let mut msg = Vec::new();
    msg.extend_from_slice(&(ApiKey::ApiVersions as i16).to_be_bytes());
    msg.extend_from_slice(&0i16.to_be_bytes());
    msg.extend_from_slice(&0i32.to_be_bytes());
    msg.extend_from_slice(&(-1i16).to_be_bytes());
    let mut f = (msg.len() as i32).to_be_bytes().to_vec();
    f.extend_from_slice(&msg);
    f
}

/// Reads one answer frame (without its size prefix) into `buf`.
async fn read_answer<R: tokio::io::AsyncRead + Unpin>(rd: &mut R, buf: &mut Vec<u8>) -> Res<()> {
    let mut prefix = [0u8; 4];
    rd.read_exact(&mut prefix).await?;
    let len = i32::from_be_bytes(prefix);
    if len < 4 || len as usize > answer_bytes_max {
        return Err(format!("answer of {len} bytes").into());
    }
    buf.resize(len as usize, 0);
    rd.read_exact(buf).await?;
    Ok(())
}

/// The first error a Produce answer to request `id` names, if any.
fn produce_error(body: &[u8], id: i32) -> Res<Option<i16>> {
    let version = sent(ApiKey::Produce as i16).ok_or("Produce is not sent")?;
    let resp = answer::<ProduceRequest>(Bytes::copy_from_slice(body), id, version)?;
    Ok(resp.responses.iter().flat_map(|t| t.partition_responses.iter()).map(|p| p.error_code).find(|&c| c != 0))
}

/// A connection that has sent ApiVersions and read the answer.
async fn open(addr: SocketAddr) -> Res<TcpStream> {
    let mut s = tokio::time::timeout(setup_timeout, TcpStream::connect(addr)).await.map_err(|_| "connect timed out")??;
    s.set_nodelay(true)?;
    s.write_all(&api_versions()).await?;
    let mut buf = Vec::new();
    tokio::time::timeout(setup_timeout, read_answer(&mut s, &mut buf)).await.map_err(|_| "ApiVersions not answered")??;
    Ok(s)
}

/// `n` connections opened [`connect_parallel`] at a time.
async fn open_many(addr: SocketAddr, n: usize) -> Res<Vec<TcpStream>> {
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let wave: Vec<_> = (0..connect_parallel.min(n - out.len())).map(|_| tokio::spawn(open(addr))).collect();
        for t in wave {
            out.push(t.await?.map_err(|e| format!("connection {} of {n}: {e}", out.len()))?);
        }
    }
    Ok(out)
}

/// Creates the topic (one replica per partition) and waits until every partition takes a batch.
async fn prepare(a: &Args, frames: &[Vec<u8>]) -> Res<()> {
    broker_core::client::admin::create_topics(a.bootstrap, &[(a.topic.clone(), a.partitions, 1)], setup_timeout).await?;
    let mut s = open(a.bootstrap).await?;
    let deadline = Instant::now() + setup_timeout;
    let mut buf = Vec::new();
    for f in frames {
        loop {
            s.write_all(f).await?;
            read_answer(&mut s, &mut buf).await?;
            match produce_error(&buf, 0)? {
                None => break,
                Some(code) if Instant::now() > deadline => return Err(format!("the topic's partitions still answer error {code}").into()),
                Some(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }
    Ok(())
}

/// What one producer connection did.
#[derive(Default)]
struct Tally {
    requests: u64,
    latencies_us: Vec<u32>,
    /// The connection, kept open (and silent) after the load until the last memory reading.
    kept: Option<(BufReader<tokio::net::tcp::OwnedReadHalf>, tokio::net::tcp::OwnedWriteHalf)>,
}

/// Sends batches from `budget` until it is spent or `deadline` passes, `in_flight` at most
/// outstanding, and reads every answer; any error answer fails the run.
async fn produce(stream: TcpStream, frames: Arc<Vec<Vec<u8>>>, first: usize, in_flight: usize, budget: Arc<AtomicI64>, deadline: Instant) -> Res<Tally> {
    let (rd, mut wr) = stream.into_split();
    let mut rd = BufReader::with_capacity(16 << 10, rd);
    let mut tally = Tally::default();
    let (mut pending, mut out, mut reply) = (VecDeque::with_capacity(in_flight), Vec::new(), Vec::new());
    let (mut next, mut correlation) = (first, 1i32);
    loop {
        out.clear();
        let ids = correlation;
        while pending.len() + ((correlation - ids) as usize) < in_flight && Instant::now() < deadline && budget.fetch_sub(1, Ordering::Relaxed) > 0 {
            let at = out.len();
            out.extend_from_slice(&frames[next % frames.len()]);
            out[at + correlation_at..at + correlation_at + 4].copy_from_slice(&correlation.to_be_bytes());
            next += 1;
            correlation += 1;
        }
        if !out.is_empty() {
            let t = Instant::now();
            wr.write_all(&out).await?;
            pending.extend((ids..correlation).map(|id| (id, t)));
        }
        let Some((id, t)) = pending.pop_front() else {
            tally.kept = Some((rd, wr));
            return Ok(tally);
        };
        read_answer(&mut rd, &mut reply).await?;
        if let Some(code) = produce_error(&reply, id)? {
            return Err(format!("Produce answered error {code}").into());
        }
        tally.requests += 1;
        tally.latencies_us.push(t.elapsed().as_micros().min(u32::MAX as u128) as u32);
    }
}

fn percentile_ms(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1] as f64 / 1000.0
}

/// The broker after a pause of `settle_ms`, and its CPU over a second such pause (ms per s):
/// what the connections open at that point cost while nothing is sent.
async fn settle(a: &Args) -> (Sample, f64) {
    tokio::time::sleep(Duration::from_millis(a.settle_ms)).await;
    let first = sample(a.broker_pid);
    tokio::time::sleep(Duration::from_millis(a.settle_ms)).await;
    let second = sample(a.broker_pid);
    (second, (second.cpu_s - first.cpu_s) * 1000.0 / (a.settle_ms.max(1) as f64 / 1000.0))
}

async fn bench(a: Args) -> Res<()> {
    let frames = Arc::new(produce_frames(&a)?);
    prepare(&a, &frames).await?;
    let (base, cpu_base) = settle(&a).await;
    let idle = open_many(a.bootstrap, a.idle).await?;
    let (with_idle, cpu_idle) = settle(&a).await;
    let producers = open_many(a.bootstrap, a.producers).await?;
    let (connected, cpu_connected) = settle(&a).await;

    // The load: every producer drawing batches from one budget, memory sampled meanwhile.
    let batches = a.records.div_ceil(a.batch_records as u64);
    let budget = Arc::new(AtomicI64::new(batches as i64));
    let peak_rss = Arc::new(AtomicU64::new(connected.rss_bytes));
    let done = Arc::new(tokio::sync::Notify::new());
    let sampler = {
        let (peak, done, pid) = (peak_rss.clone(), done.clone(), a.broker_pid);
        tokio::spawn(async move {
            loop {
                peak.fetch_max(sample(pid).rss_bytes, Ordering::Relaxed);
                tokio::select! {
                    // biased: the rule everywhere in the crate (tests/all/tidy.rs).
                    biased;
                    _ = done.notified() => return,
                    _ = tokio::time::sleep(Duration::from_millis(100)) => {}
                }
            }
        })
    };
    let (start, client_cpu) = (Instant::now(), own_cpu_s());
    let deadline = start + Duration::from_secs(a.secs_max);
    let tasks: Vec<_> = producers.into_iter().enumerate().map(|(i, s)| tokio::spawn(produce(s, frames.clone(), i, a.in_flight, budget.clone(), deadline))).collect();
    let (mut requests, mut latencies, mut kept) = (0u64, Vec::new(), Vec::new());
    for t in tasks {
        let tally = t.await?.map_err(|e| format!("a producer connection failed: {e}"))?;
        requests += tally.requests;
        latencies.extend(tally.latencies_us);
        kept.push(tally.kept);
    }
    let elapsed = start.elapsed().as_secs_f64();
    let (client_cpu, loaded) = (own_cpu_s() - client_cpu, sample(a.broker_pid));
    done.notify_one();
    sampler.await?;
    // Every connection still open, the producers silent now: what the broker keeps holding.
    let (after, _) = settle(&a).await;
    drop((idle, kept));

    latencies.sort_unstable();
    let records = requests * a.batch_records as u64;
    let broker_cpu = loaded.cpu_s - connected.cpu_s;
    let per_conn = |later: u64, earlier: u64, n: usize| if n == 0 { 0 } else { later.saturating_sub(earlier) / n as u64 };
    let line = serde_json::json!({
        "kind": "connections", "tag": a.tag, "producers": a.producers, "idle": a.idle, "in_flight": a.in_flight,
        "acks": a.acks, "partitions": a.partitions, "batch_records": a.batch_records, "record_bytes": a.record_bytes,
        "records": records, "requests": requests, "secs": round(elapsed, 3), "complete": budget.load(Ordering::Relaxed) <= 0,
        "records_per_s": (records as f64 / elapsed).round(), "mb_per_s": round(records as f64 * a.record_bytes as f64 / elapsed / 1e6, 1),
        "p50_ms": percentile_ms(&latencies, 0.5), "p99_ms": percentile_ms(&latencies, 0.99), "max_ms": percentile_ms(&latencies, 1.0),
        "broker_cpu_s": round(broker_cpu, 2), "broker_cpu_s_per_1m": round(broker_cpu / records.max(1) as f64 * 1e6, 3),
        "client_cpu_s": round(client_cpu, 2),
        "rss_base_mib": mib(base.rss_bytes), "rss_idle_mib": mib(with_idle.rss_bytes), "rss_connected_mib": mib(connected.rss_bytes),
        "rss_peak_mib": mib(peak_rss.load(Ordering::Relaxed)), "rss_after_mib": mib(after.rss_bytes),
        "idle_bytes_per_conn": per_conn(with_idle.rss_bytes, base.rss_bytes, a.idle),
        "producer_bytes_per_conn": per_conn(connected.rss_bytes, with_idle.rss_bytes, a.producers),
        "after_bytes_per_conn": per_conn(after.rss_bytes, with_idle.rss_bytes, a.producers),
        "broker_cpu_ms_per_s_no_conns": round(cpu_base, 1), "broker_cpu_ms_per_s_idle_open": round(cpu_idle, 1),
        "broker_cpu_ms_per_s_all_open": round(cpu_connected, 1),
    });
    eprintln!(
        "bench-connections: {} producers (in flight {}, acks {}), {} idle: {records} records in {elapsed:.2} s = {:.0} records/s, p50 {:.2} ms p99 {:.2} ms; broker CPU {broker_cpu:.2} s, RSS {} -> {} (idle) -> {} (connected) -> peak {} -> {} MiB after",
        a.producers, a.in_flight, a.acks, a.idle, records as f64 / elapsed, percentile_ms(&latencies, 0.5), percentile_ms(&latencies, 0.99),
        mib(base.rss_bytes), mib(with_idle.rss_bytes), mib(connected.rss_bytes), mib(peak_rss.load(Ordering::Relaxed)), mib(after.rss_bytes)
    );
    println!("{line}");
    Ok(())
}

fn round(v: f64, digits: i32) -> f64 {
    let m = 10f64.powi(digits);
    (v * m).round() / m
}

fn mib(bytes: u64) -> f64 {
    round(bytes as f64 / (1 << 20) as f64, 1)
}
