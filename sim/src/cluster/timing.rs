//! The cluster's timing and sizes, scaled to scenarios of tens of seconds, shared by the
//! simulated nodes (`topology`) and the real processes of `sim chaos` (`crate::chaos`), so the
//! two worlds run the same broker settings.

use crate::scenario::Scenario;

/// Heartbeats, sessions and ISR lag scaled to scenarios of tens of seconds, whose faults last
/// up to a few seconds (Kafka's 2 s / 9 s / 30 s would see no failover at all).
pub(crate) const heartbeat_ms: u64 = 250;
pub(crate) const session_ms: u64 = 1_500;
pub(crate) const replica_lag_ms: u64 = 2_000;
/// The metadata quorum's election timeout, scaled like the sessions (KRaft's 1 s against its 9 s
/// session): a dead quorum leader is replaced within about a second.
pub(crate) const quorum_election_ms: u64 = 300;
/// How long the voters take to replace an active controller that stopped answering: the fetch
/// timeout (twice the election timeout, `server/config.rs`), then one election round, whose
/// timeout is drawn from one to two election timeouts.
pub(crate) const controller_failover_ms: u64 = 2 * quorum_election_ms + 2 * quorum_election_ms;

/// How long a terminated broker has to stop cleanly before it is killed (its controlled
/// shutdown asks the controller, then every log is flushed and checkpointed): the `terminate`
/// fault's bound in both worlds.
pub(crate) const terminate_grace_ms: u64 = 5_000;

/// How long the node's supervisor (systemd's `Restart=on-failure` in a real deployment) waits
/// before starting a broker process that exited.
#[cfg(madsim)]
pub(crate) const supervisor_restart_ms: u64 = 1_000;

/// Partitions of `__consumer_offsets` and of the transaction state topic: three keep group and
/// transaction scenarios cheap.
pub(crate) const sim_offsets_partitions: i32 = 3;
/// Shortest group session a member may ask for: a second lets groups churn within a scenario.
pub(crate) const group_min_session_ms: u64 = 1_000;

/// How long a share-group member holds records it acquired (`group.share.record.lock.duration.ms`,
/// Kafka's least): what a crashed member held comes back within a fast scenario.
#[cfg(madsim)]
pub(crate) const share_lock_ms: u64 = 1_000;
/// How often abandoned transactions are checked for their timeout: a scenario sees them aborted.
pub(crate) const txn_abort_check_ms: i64 = 1_000;

/// The metadata quorum's voters: the first `controller_voters` brokers (one by default).
pub(crate) fn voters(s: &Scenario) -> impl Iterator<Item = i32> {
    (0..s.broker.controller_voters.unwrap_or(1).clamp(1, s.brokers)).map(|v| v as i32)
}
