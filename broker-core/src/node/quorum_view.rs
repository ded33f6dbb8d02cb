//! What a voter's quorum decision leaves for readers outside the quorum's lock: a decision
//! holds that lock across its metadata log's writes and syncs, so Metadata, the Raft driver and
//! a controller request's wait for its commit read this copy instead ([`super::Node::quorum_view`]).

use crate::controller::quorum::Quorum;

/// What a voter's quorum decision left for readers outside it ([`super::Node::quorum_view`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QuorumView {
    /// The quorum leader it knows.
    pub leader: Option<i32>,
    /// Its epoch as the active controller, if it is that.
    pub active_epoch: Option<i32>,
    /// The metadata log's committed end.
    pub committed_end: i64,
    /// When the quorum's next tick is due, if it has a deadline.
    pub next_deadline: Option<u64>,
}

impl QuorumView {
    pub(super) fn of(q: &Quorum) -> QuorumView {
        QuorumView { leader: q.leader(), active_epoch: q.active_epoch(), committed_end: q.committed_end(), next_deadline: q.next_deadline() }
    }
}
