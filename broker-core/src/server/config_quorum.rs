//! The metadata quorum's part of the broker's settings: the voters (`controller.quorum.voters`),
//! this node's roles, and the Raft and controller configurations built from a [`BrokerConfig`].

use crate::broker::BrokerConfig;

/// `controller.quorum.voters` with one voter, `id@host:port` (Kafka's syntax).
pub(super) fn parse_voters(text: &str) -> Result<std::collections::BTreeMap<i32, String>, String> {
    let bad = |why: &str| format!("controller.quorum.voters={text}: {why}; expected id@host:port,...");
    let mut voters = std::collections::BTreeMap::new();
    for voter in text.split(',') {
        let (id, addr) = voter.split_once('@').ok_or_else(|| bad(&format!("'{voter}' has no '@'")))?;
        let id: i32 = id.trim().parse().ok().filter(|&i| i >= 0).ok_or_else(|| bad(&format!("'{id}' is not a node id")))?;
        let (_, port) = addr.rsplit_once(':').ok_or_else(|| bad(&format!("'{addr}' has no port")))?;
        port.parse::<u16>().map_err(|_| bad(&format!("'{port}' is not a port")))?;
        if voters.insert(id, addr.trim().to_string()).is_some() {
            return Err(bad(&format!("voter {id} is named twice")));
        }
    }
    if voters.len() > crate::constants::quorum_voters_max {
        return Err(bad(&format!("{} voters; at most {}", voters.len(), crate::constants::quorum_voters_max)));
    }
    Ok(voters)
}

/// `process.roles` (Kafka's syntax): whether the node is a broker. A node runs a voter exactly
/// when `controller.quorum.voters` names it, so the roles must agree with that list.
pub(super) fn parse_roles(text: &str, voter: bool, node_id: i32) -> Result<bool, String> {
    let roles: std::collections::BTreeSet<&str> = text.split(',').map(str::trim).filter(|r| !r.is_empty()).collect();
    if let Some(bad) = roles.iter().find(|r| !["broker", "controller"].contains(*r)) {
        return Err(format!("process.roles={text}: unknown role '{bad}'; expected broker, controller or both"));
    }
    match (roles.contains("controller"), voter) {
        _ if roles.is_empty() => Err(format!("process.roles={text}: no role; expected broker, controller or both")),
        (true, false) => Err(format!("process.roles={text}: node {node_id} is not in controller.quorum.voters, so it cannot be a controller")),
        (false, true) => Err(format!("process.roles={text}: node {node_id} is in controller.quorum.voters, so it must include controller")),
        _ => Ok(roles.contains("broker")),
    }
}

/// The Raft node's settings: the voters, and timeouts in KRaft's default ratios to the election
/// timeout (fetch timeout 2x, request timeout and election backoff 1x, a held fetch 0.5x).
pub fn raft_config(c: &BrokerConfig) -> crate::controller::raft::RaftConfig {
    let mut r = crate::controller::raft::RaftConfig::new(c.node_id, c.voters.keys().copied());
    let e = c.quorum_election_timeout_ms;
    (r.election_timeout_ms, r.fetch_timeout_ms, r.request_timeout_ms, r.election_backoff_ms_max, r.fetch_wait_ms) = (e, 2 * e, e, e, e / 2);
    use crate::broker::PlantedBug;
    use crate::controller::raft::PlantedRaftBug;
    let planted = c.planted_set();
    r.plant = [(PlantedBug::RaftVoteBeforeSync, PlantedRaftBug::VoteBeforeSync), (PlantedBug::RaftCommitOldEpochByCount, PlantedRaftBug::CommitOldEpochByCount), (PlantedBug::RaftStateUnsynced, PlantedRaftBug::StateUnsynced)]
        .into_iter()
        .find(|(bug, _)| planted.is(*bug))
        .map(|(_, raft)| raft);
    r
}

/// The metadata quorum's voter on this node, if `node.id` is among `controller.quorum.voters`:
/// the metadata log and quorum state opened under the data directory, and what opening noted.
pub fn open_quorum(disk: std::sync::Arc<dyn crate::storage::Disk>, c: &BrokerConfig, now: u64) -> Result<Option<(crate::controller::quorum::Quorum, Vec<String>)>, String> {
    if !c.voters.contains_key(&c.node_id) {
        return Ok(None);
    }
    crate::controller::quorum::Quorum::open(disk, &c.data_dir, controller_config(c), raft_config(c), now).map(Some)
}


/// The controller's settings, from the broker's (the node that runs the controller).
pub fn controller_config(c: &BrokerConfig) -> crate::controller::ControllerConfig {
    crate::controller::ControllerConfig {
        node_id: c.node_id,
        topic_id_key: c.topic_id_key,
        session_timeout_ms: c.session_timeout_ms,
        default_replication_factor: c.default_replication_factor,
        num_partitions: c.num_partitions,
        unclean_leader_election: c.unclean_leader_election,
        min_insync_replicas: c.min_insync_replicas,
        eligible_leader_replicas: c.eligible_leader_replicas,
        auto_leader_rebalance: c.auto_leader_rebalance,
        leader_imbalance_check_interval_ms: c.leader_imbalance_check_interval_ms,
        leader_imbalance_per_broker_percentage: c.leader_imbalance_per_broker_percentage,
        log: c.log.clone(),
        snapshot_bytes_between: c.metadata_snapshot_bytes_between,
        scram_bootstrap: c.security.scram_bootstrap.clone(),
        planted: c.planted_set(),
        observer: c.observer.clone(),
    }
}
