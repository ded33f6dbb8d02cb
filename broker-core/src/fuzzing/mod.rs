//! The bodies of the fuzz targets (`fuzz/`, run with `cargo +nightly fuzz`), here so that the
//! stable test suite replays every checked-in corpus and crash input through exactly the code
//! the fuzzer ran (`tests/all/fuzz_replay.rs`). Each target is one function over arbitrary
//! bytes; the `fuzz_target!` macros only call it. See docs/fuzzing.md.
//!
//! A target panics only when the broker broke a promise (a panic inside the broker, a reply
//! that is not a well-formed frame, an acknowledged record that cannot be read back): that is
//! what the fuzzer reports as a crash. Targets never read a clock: time is a counter the
//! target advances, so an input replays the same way every time.

pub mod batch;
pub mod frames;
pub mod requests;
mod node;
pub mod replay;
pub mod sasl;
pub mod tls;
mod wire;

pub use node::Scratch;
