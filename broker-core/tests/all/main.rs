//! `broker-core`'s integration tests, one binary, modules by theme.

mod real_clients;
mod real_cluster;
mod support;
mod tidy;
