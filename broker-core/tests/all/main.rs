//! `broker-core`'s integration tests, one binary, modules by theme.

mod tidy;
