//! Tests of the Raft state machine: scripted rules (`rules`), and the seeded simulated cluster
//! (`cluster`) with its checkers (`checks`) swept over many seeds, with and without the planted
//! bugs (`sweep`).

mod checks;
mod cluster;
mod disk_model;
mod rules;
mod sweep;
