//! Many connections on the real broker binary (issue 13 item 5): 1,000 idle connections
//! (ApiVersions, then silent) and 100 producing ones, each of which pipelines its requests four
//! at a time and sends one batch larger than the broker's read buffer. Every request must be
//! answered, in order and without error, and the broker's resident memory (VmRSS) must grow by
//! less than `connection_idle_bytes_max` per open connection: once the idle ones are open, and
//! again once the producers have gone silent (their buffers, grown or not, given back).
//!
//! No timing is asserted; the figures are printed. docs/benchmarks.md ("Many connections") has
//! the throughput side, measured by `scripts/bench-connections.sh`.

use crate::real_clients::Broker;
use broker_core::client::conn::{answer, request_frame};
use broker_core::constants::{connection_idle_bytes_max, connection_read_buffer_bytes};
use broker_core::kafka::{sent, ApiKey};
use kafka_protocol::messages::produce_request::{PartitionProduceData, ProduceRequest, TopicProduceData};
use kafka_protocol::messages::TopicName;
use kafka_protocol::protocol::StrBytes;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::Duration;

const idle_connections: usize = 1_000;
const producer_connections: usize = 100;
/// Produce requests per producer connection, sent `pipelined` at a time.
const requests_per_producer: usize = 24;
const pipelined: usize = 4;
/// Records per ordinary batch (about 4 KiB), and the record count of the one large batch each
/// producer sends (about 64 KiB, four times the broker's read buffer).
const batch_records: usize = 40;
const large_batch_records: usize = 640;
/// Threads the connections are opened and driven from.
const threads: usize = 10;
/// Any read or write on a connection.
const io_timeout: Duration = Duration::from_secs(60);
/// How long the broker is left to settle before its memory is read.
const settle: Duration = Duration::from_millis(500);

fn rss_bytes(pid: libc::pid_t) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc/PID/status");
    let kib: u64 = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).expect("VmRSS line");
    kib * 1024
}

/// This process and the broker it starts need two descriptors per connection between them:
/// raise the soft limit to the hard one if it is lower than what the test opens.
fn enough_descriptors() {
    let need = (idle_connections + producer_connections) as libc::rlim_t + 256;
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit read and write the struct given.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        if limit.rlim_cur < need {
            assert!(limit.rlim_max >= need, "RLIMIT_NOFILE hard limit {} is below the {need} descriptors this test needs", limit.rlim_max);
            limit.rlim_cur = need;
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
        }
    }
}

/// Writes `frame` with correlation id `id` patched in.
fn with_id(frame: &[u8], id: i32) -> Vec<u8> {
    let mut f = frame.to_vec();
    f[8..12].copy_from_slice(&id.to_be_bytes());
    f
}

/// Reads one answer frame's body.
fn read_answer(s: &mut TcpStream) -> Vec<u8> {
    let mut prefix = [0u8; 4];
    s.read_exact(&mut prefix).expect("an answer's size");
    let mut body = vec![0u8; i32::from_be_bytes(prefix) as usize];
    s.read_exact(&mut body).expect("an answer's body");
    body
}

/// A connection that sent ApiVersions and read its (error-free) answer.
fn open(addr: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(io_timeout)).unwrap();
    s.set_write_timeout(Some(io_timeout)).unwrap();
    // ApiVersions v0, as clients open with (this crate's client sends none): key, version,
    // correlation id, no client id.
    let mut msg = (ApiKey::ApiVersions as i16).to_be_bytes().to_vec();
    msg.extend_from_slice(&[0, 0, 0, 0, 0, 7, 0xff, 0xff]);
    let mut frame = (msg.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&msg);
    s.write_all(&frame).unwrap();
    let body = read_answer(&mut s);
    assert_eq!(body[..6], [0, 0, 0, 7, 0, 0], "ApiVersions answered request 7 without error");
    s
}

/// `n` connections opened from [`threads`] threads.
fn open_many(addr: &str, n: usize) -> Vec<TcpStream> {
    thread::scope(|scope| {
        let parts: Vec<_> = (0..threads).map(|t| scope.spawn(move || (0..n).filter(|i| i % threads == t).map(|_| open(addr)).collect::<Vec<_>>())).collect();
        parts.into_iter().flat_map(|p| p.join().expect("opening connections")).collect()
    })
}

fn produce_frame(records: usize) -> Vec<u8> {
    let value = [b'm'; 100];
    let values: Vec<&[u8]> = (0..records).map(|_| &value[..]).collect();
    let batch = broker_core::log::batch::build(&values, 0);
    let part = PartitionProduceData::default().with_index(0).with_records(Some(batch.into()));
    let topic = TopicProduceData::default().with_name(TopicName(StrBytes::from_static_str("many"))).with_partition_data(vec![part]);
    request_frame(&ProduceRequest::default().with_acks(1).with_timeout_ms(30_000).with_topic_data(vec![topic]), 0, "many-connections").unwrap().1.to_vec()
}

/// Sends this connection's requests, `pipelined` at a time, one of them the large batch, and
/// checks every answer: its correlation id, in order, and no error. Returns the records sent.
fn produce(s: &mut TcpStream, small: &[u8], large: &[u8]) -> u64 {
    let version = sent(ApiKey::Produce as i16).expect("Produce is sent");
    let mut records = 0;
    for wave in 0..requests_per_producer / pipelined {
        let mut out = Vec::new();
        for i in 0..pipelined {
            let id = (wave * pipelined + i) as i32;
            let big = wave == 1 && i == 2;
            out.extend(with_id(if big { large } else { small }, id));
            records += if big { large_batch_records } else { batch_records } as u64;
        }
        s.write_all(&out).expect("send a wave of requests");
        for i in 0..pipelined {
            let id = (wave * pipelined + i) as i32;
            let resp = answer::<ProduceRequest>(read_answer(s).into(), id, version).unwrap_or_else(|e| panic!("answer to request {id}: {e}"));
            let code = resp.responses.first().and_then(|t| t.partition_responses.first()).map(|p| p.error_code);
            assert_eq!(code, Some(0), "request {id} answered {code:?}");
        }
    }
    records
}

#[test]
fn a_thousand_idle_and_a_hundred_producing_connections_are_all_served_within_their_memory_bound() {
    enough_descriptors();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = Broker::start(dir.path(), &[]);
    let addr = broker.bootstrap();
    let pid = broker.pid();
    let (small, large) = (produce_frame(batch_records), produce_frame(large_batch_records));
    assert!(large.len() > 2 * connection_read_buffer_bytes, "the large batch ({} bytes) must outgrow the read buffer", large.len());
    // The topic exists, and takes batches, before memory is measured.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let topics = [("many".to_string(), 1, 1)];
    runtime.block_on(broker_core::client::admin::create_topics(addr.parse().unwrap(), &topics, io_timeout)).expect("create the topic");
    let mut first = open(&addr);
    for attempt in 0.. {
        first.write_all(&with_id(&small, 0)).unwrap();
        let resp = answer::<ProduceRequest>(read_answer(&mut first).into(), 0, sent(ApiKey::Produce as i16).unwrap()).unwrap();
        match resp.responses[0].partition_responses[0].error_code {
            0 => break,
            _ if attempt < 100 => thread::sleep(Duration::from_millis(100)),
            code => panic!("the topic never took a batch: error {code}"),
        }
    }
    drop(first);
    thread::sleep(settle);
    let base = rss_bytes(pid);

    let idle = open_many(&addr, idle_connections);
    thread::sleep(settle);
    let with_idle = rss_bytes(pid);

    let mut producers = open_many(&addr, producer_connections);
    let records: u64 = thread::scope(|scope| {
        let (small, large) = (&small, &large);
        let chunks: Vec<_> = producers.chunks_mut(producer_connections / threads).map(|chunk| scope.spawn(move || chunk.iter_mut().map(|s| produce(s, small, large)).sum::<u64>())).collect();
        chunks.into_iter().map(|c| c.join().expect("a producer failed")).sum()
    });
    thread::sleep(settle);
    let after = rss_bytes(pid);
    broker.assert_alive("with every connection open");

    let per_idle = with_idle.saturating_sub(base) / idle_connections as u64;
    let per_open = after.saturating_sub(base) / (idle_connections + producer_connections) as u64;
    eprintln!(
        "many connections: {records} records over {producer_connections} connections beside {idle_connections} idle ones; broker RSS {} KiB, {} KiB with the idle ones ({per_idle} bytes each), {} KiB after the producers ({per_open} bytes per open connection; limit {connection_idle_bytes_max})",
        base >> 10, with_idle >> 10, after >> 10
    );
    assert!(per_idle < connection_idle_bytes_max as u64, "an idle connection costs {per_idle} bytes of RSS (limit {connection_idle_bytes_max})\n{}", broker.log_tail());
    assert!(per_open < connection_idle_bytes_max as u64, "an open connection costs {per_open} bytes of RSS after its requests (limit {connection_idle_bytes_max})\n{}", broker.log_tail());
    drop((idle, producers));
}
