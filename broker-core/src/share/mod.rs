//! KIP-932 share groups on the partition leader's side: what a share-partition leader knows of
//! each (group, topic, partition) it serves — which records are in flight, acquired by whom,
//! delivered how often — and the share sessions of ShareFetch and ShareAcknowledge. The
//! membership of share groups is the group coordinator's (`group::share`); the durable copy of
//! each share-partition's state is kept by the group coordinator too (`group::share_state`).

pub mod partition;
pub mod leader;
pub mod sessions;
