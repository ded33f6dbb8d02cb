//! Tests of the Raft state machine.
