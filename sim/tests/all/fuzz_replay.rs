//! Every checked-in input of the simulator-side fuzz targets (log recovery on SimDisk, the
//! scenario parser, the trace reader), replayed through the targets' own functions on the
//! stable toolchain (docs/fuzzing.md).

use broker_core::fuzzing::replay::replay;

#[test]
fn log_recovery_corpus_replays() {
    let n = replay("log_recovery", sim::fuzzing::log_recovery);
    println!("log_recovery: {n} inputs");
}

#[test]
fn scenario_corpus_replays() {
    let n = replay("scenario", sim::fuzzing::scenario);
    println!("scenario: {n} inputs");
}

#[test]
fn trace_corpus_replays() {
    let n = replay("trace", sim::fuzzing::trace);
    println!("trace: {n} inputs");
}
