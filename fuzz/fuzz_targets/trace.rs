#![no_main]
// See docs/fuzzing.md; the body is replayed on stable by the test suites.

// Allocate as the broker binary does (huge requests get address space only).
#[global_allocator]
static ALLOCATOR: broker_core::alloc::LazyHuge = broker_core::alloc::LazyHuge;

libfuzzer_sys::fuzz_target!(|data: &[u8]| sim::fuzzing::trace(data));
