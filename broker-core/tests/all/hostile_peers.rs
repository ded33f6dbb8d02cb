//! Hostile peers on the real socket (issue 14, item 4), against the real broker binary on
//! loopback: slowloris connections dribbling one byte a second, a client that pipelines
//! requests and never reads an answer, 10,000 connections opened and dropped, frames declaring
//! 2 GiB and 100 MiB. Meanwhile a well-behaved producer (the crate's own client, acks=1, no
//! retries) keeps sending: every one of its requests must be answered, and the broker's
//! resident memory (VmRSS from /proc) must stay under `broker_rss_bytes_max` throughout.
//!
//! Timing is not asserted (a loaded 2-core machine makes any ratio flaky); the producer's p50
//! and p99 while idle and under attack are printed, and docs/fuzzing.md records them.

use crate::real_clients::Broker;
use broker_core::client::{Producer, ProducerConfig};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// Resident memory the broker may reach under the attacks. The debug build sits near 13 MiB
/// idle and reached 23 MiB under them (measured); they may cost buffers per open connection
/// (16 KiB each way, during a burst) and the 100 MiB frame's bytes as far as they arrived (the 8 MiB sent), but
/// never a frame's declared size or one buffer per connection ever opened.
const broker_rss_bytes_max: u64 = 128 << 20;
/// Slowloris connections, each sending one byte a second of a valid request.
const slowloris_connections: usize = 50;
/// How long the slowloris and never-reading clients keep at it.
const attack_s: u64 = 6;
/// Connections opened and dropped at once.
const churn_connections: usize = 10_000;
/// How long the producer runs alone to measure its idle latency.
const idle_s: u64 = 3;

fn rss_bytes(pid: libc::pid_t) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc/PID/status");
    let kib: u64 = status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).expect("VmRSS line");
    kib * 1024
}

/// An ApiVersions v0 request frame.
fn api_versions(correlation_id: i32) -> Vec<u8> {
    let mut msg = Vec::new();
    msg.extend_from_slice(&18i16.to_be_bytes());
    msg.extend_from_slice(&0i16.to_be_bytes());
    msg.extend_from_slice(&correlation_id.to_be_bytes());
    msg.extend_from_slice(&4i16.to_be_bytes());
    msg.extend_from_slice(b"evil");
    let mut frame = (msg.len() as i32).to_be_bytes().to_vec();
    frame.extend_from_slice(&msg);
    frame
}

/// Produce latencies in µs while `stop` is unset; panics on any failed produce.
fn produce_until(addr: SocketAddr, topic: &str, stop: &AtomicBool, min: Duration) -> Vec<u64> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        let config = ProducerConfig { acks: 1, idempotent: false, retries: 0, request_timeout: Duration::from_secs(10), ..ProducerConfig::default() };
        let mut p = Producer::new(addr, config);
        // The first sends auto-create the topic (LEADER_NOT_AVAILABLE until it exists).
        for attempt in 0.. {
            match p.send(topic, 0, &[(None, Some("warm".into()))], 0).await {
                Ok(_) => break,
                Err(_) if attempt < 50 => tokio::time::sleep(Duration::from_millis(100)).await,
                Err(e) => panic!("warm-up produce: {e}"),
            }
        }
        let start = Instant::now();
        let mut lat = Vec::new();
        while !stop.load(Ordering::SeqCst) || start.elapsed() < min {
            let t = Instant::now();
            p.send(topic, 0, &[(None, Some(format!("record {}", lat.len()).into()))], 0).await.unwrap_or_else(|e| panic!("produce {} failed: {e}", lat.len()));
            lat.push(t.elapsed().as_micros() as u64);
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        lat
    })
}

fn percentile(lat: &mut [u64], p: f64) -> f64 {
    lat.sort_unstable();
    lat[((lat.len() as f64 * p).ceil() as usize).clamp(1, lat.len()) - 1] as f64 / 1000.0
}

#[test]
fn hostile_peers_do_not_starve_a_good_client_or_grow_memory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broker = Broker::start(dir.path(), &[]);
    let addr: SocketAddr = broker.bootstrap().parse().expect("address");
    let pid = broker.pid();
    let never = AtomicBool::new(true);
    let mut idle = produce_until(addr, "good", &never, Duration::from_secs(idle_s));
    let idle_rss = rss_bytes(pid);

    let attack_started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let max_rss = Arc::new(AtomicU64::new(idle_rss));
    let mut attackers = Vec::new();
    // Memory, sampled every 20 ms until the attacks end.
    attackers.push({
        let (stop, max_rss) = (stop.clone(), max_rss.clone());
        thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                max_rss.fetch_max(rss_bytes(pid), Ordering::SeqCst);
                thread::sleep(Duration::from_millis(20));
            }
        })
    });
    // Slowloris: every connection sends its request one byte a second, for attack_s seconds.
    attackers.push(thread::spawn(move || {
        let mut conns: Vec<TcpStream> = (0..slowloris_connections).map(|_| TcpStream::connect(addr).expect("slowloris connect")).collect();
        let frame = api_versions(1);
        for byte in frame.iter().take(attack_s as usize) {
            for c in &mut conns {
                let _ = c.write_all(&[*byte]);
            }
            thread::sleep(Duration::from_secs(1));
        }
    }));
    // Never reads: pipelines requests as fast as the broker takes them in, reads nothing.
    attackers.push(thread::spawn(move || {
        let mut c = TcpStream::connect(addr).expect("never-reader connect");
        c.set_write_timeout(Some(Duration::from_millis(200))).expect("write timeout");
        let end = Instant::now() + Duration::from_secs(attack_s);
        let mut sent = 0u64;
        let frame = api_versions(2).repeat(64);
        while Instant::now() < end {
            match c.write(&frame) {
                Ok(n) => sent += n as u64,
                Err(_) => thread::sleep(Duration::from_millis(50)), // the broker stopped reading: good
            }
        }
        assert!(sent > 0, "the never-reading client could not send anything");
    }));
    // 10,000 connections opened and dropped, and frames declaring 2 GiB and 100 MiB.
    attackers.push(thread::spawn(move || {
        let mut huge = TcpStream::connect(addr).expect("connect");
        huge.write_all(&i32::MAX.to_be_bytes()).expect("send a 2 GiB size prefix");
        let mut large = TcpStream::connect(addr).expect("connect");
        large.write_all(&(100i32 << 20).to_be_bytes()).expect("send a 100 MiB size prefix");
        let chunk = vec![0u8; 1 << 20];
        for _ in 0..8 {
            let _ = large.write_all(&chunk);
        }
        for i in 0..churn_connections {
            match TcpStream::connect(addr) {
                Ok(c) => drop(c),
                Err(e) => panic!("connection {i} of {churn_connections} refused: {e}"),
            }
        }
        // The 2 GiB frame's connection was closed by the broker, not left open.
        huge.set_read_timeout(Some(Duration::from_secs(5))).expect("read timeout");
        let mut buf = [0u8; 16];
        assert!(matches!(huge.read(&mut buf), Ok(0) | Err(_)), "a 2 GiB frame must close its connection");
        drop(large);
    }));
    let producer_stop = Arc::new(AtomicBool::new(false));
    let good = {
        let stop = producer_stop.clone();
        thread::spawn(move || produce_until(addr, "good", &stop, Duration::from_secs(attack_s)))
    };
    for a in attackers.drain(1..) {
        a.join().expect("an attacker failed");
    }
    let attack = attack_started.elapsed();
    producer_stop.store(true, Ordering::SeqCst);
    let mut attacked = good.join().expect("the good producer failed under attack");
    stop.store(true, Ordering::SeqCst);
    attackers.pop().expect("the sampler").join().expect("sampler");
    broker.assert_alive("after the attacks");
    // Still serving a fresh client once the attackers are gone.
    let after = produce_until(addr, "good", &never, Duration::from_millis(200));
    assert!(!after.is_empty());

    let max_rss = max_rss.load(Ordering::SeqCst);
    eprintln!(
        "hostile peers: good producer idle p50 {:.2} ms p99 {:.2} ms ({} sends); under attack ({:.1} s) p50 {:.2} ms p99 {:.2} ms ({} sends); broker RSS idle {} MiB, max under attack {} MiB (limit {} MiB)",
        percentile(&mut idle, 0.5), percentile(&mut idle, 0.99), idle.len(),
        attack.as_secs_f64(),
        percentile(&mut attacked, 0.5), percentile(&mut attacked, 0.99), attacked.len(),
        idle_rss >> 20, max_rss >> 20, broker_rss_bytes_max >> 20
    );
    assert!(attacked.len() >= 10, "the good producer was served only {} times during the attacks", attacked.len());
    assert!(max_rss < broker_rss_bytes_max, "broker RSS reached {} MiB under attack (limit {} MiB)\n{}", max_rss >> 20, broker_rss_bytes_max >> 20, broker.log_tail());
}
