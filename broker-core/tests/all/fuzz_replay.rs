//! Every checked-in input of broker-core's fuzz targets (fuzz/corpus and fuzz/regressions),
//! replayed through the targets' own functions on the stable toolchain: a crash once found
//! and fixed stays fixed (docs/fuzzing.md). The simulator's targets replay in sim's tests.

use broker_core::fuzzing::{batch, frames, replay::replay, requests, sasl, tls};

// Allocate as the broker binary and the fuzz targets do: a request claiming a huge array
// count reserves address space only (broker_core::alloc).
#[global_allocator]
static allocator: broker_core::alloc::LazyHuge = broker_core::alloc::LazyHuge;

/// One replay at a time: an input may have the broker open thousands of files at once (a
/// CreateTopics of thousands of partitions, refused cleanly when descriptors run out), and
/// another replay's node set up meanwhile would find none left.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

#[test]
fn request_frames_corpus_replays() {
    let _one = one_at_a_time();
    let n = replay("request_frames", frames::run);
    println!("request_frames: {n} inputs");
}

#[test]
fn request_sequence_corpus_replays() {
    let _one = one_at_a_time();
    let n = replay("request_sequence", requests::run);
    println!("request_sequence: {n} inputs");
}

#[test]
fn sasl_corpus_replays() {
    let n = replay("sasl", sasl::run);
    println!("sasl: {n} inputs");
    // The seeds reach the end of an exchange both ways (fuzz/corpus/sasl).
    let seed = |name: &str| std::fs::read(broker_core::fuzzing::replay::fuzz_dir().join("corpus/sasl").join(name)).unwrap();
    for (name, ok) in [("scram256-ok", true), ("scram512-v0-ok", true), ("plain-ok", true), ("plain-wrong", false), ("scram256-bad-proof", false)] {
        assert_eq!(sasl::authenticates(&seed(name)), ok, "{name}");
    }
}

#[test]
fn tls_corpus_replays() {
    let n = replay("tls", tls::run);
    println!("tls: {n} inputs");
    // The genuine ClientHellos get the server's flight back, whole or fed byte by byte; a Kafka
    // frame sent in clear gets nothing.
    let seed = |name: &str| std::fs::read(broker_core::fuzzing::replay::fuzz_dir().join("corpus/tls").join(name)).unwrap();
    for name in ["client-hello-tls13", "client-hello-tls12", "client-hello-byte-by-byte"] {
        assert!(tls::server_answered(&seed(name)) > 100, "{name}: no ServerHello");
    }
    assert_eq!(tls::server_answered(&seed("kafka-frame-on-a-tls-port")), 0);
}

#[test]
fn record_batch_corpus_replays() {
    let _one = one_at_a_time();
    let n = replay("record_batch", batch::run);
    println!("record_batch: {n} inputs");
}
