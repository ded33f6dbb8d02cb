//! `broker-core`'s integration tests, one binary, modules by theme.

mod certs;
mod codecs;
mod compaction;
mod fetch_sessions;
mod fuzz_replay;
mod group_consumer;
mod group_migration;
mod groups_cli;
mod groups;
mod hostile_peers;
mod many_connections;
mod new_versions;
mod old_versions;
mod operations;
mod producer_in_flight;
mod real_clients;
mod real_cluster;
mod security;
mod share_groups;
mod share_offsets;
mod slow_disk;
mod support;
mod tidy;
mod topic_configs;
mod transactions;
mod zero_copy;
