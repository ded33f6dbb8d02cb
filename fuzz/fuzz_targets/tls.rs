#![no_main]
// See docs/fuzzing.md; the body is replayed on stable by the test suites.

libfuzzer_sys::fuzz_target!(|data: &[u8]| broker_core::fuzzing::tls::run(data));
