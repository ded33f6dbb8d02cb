//! Preferred-leader election (`auto.leader.rebalance.enable`): leadership goes back to the first
//! replica once it is in the ISR again, at the next check of the interval, only past the
//! imbalance percentage, with a new leader epoch; never while the option is off.

use super::*;

const interval: u64 = 10_000;

fn config(enabled: bool, percentage: u32) -> ControllerConfig {
    ControllerConfig { auto_leader_rebalance: enabled, leader_imbalance_check_interval_ms: interval, leader_imbalance_per_broker_percentage: percentage, ..ControllerConfig::default() }
}

/// t (3 partitions on 1, 2, 3, led by 1, 2, 3); broker 1's session expires and t-0 moves to
/// broker 2; broker 1 comes back (same epoch) and broker 2 takes it back into t-0's ISR.
fn after_a_failover(config: ControllerConfig) -> Cluster {
    let mut c = Cluster::with_brokers(config, &[1, 2, 3]);
    c.create("t", 3, 3, &[]);
    c.add_bystanders(&[4, 5], 5_000);
    c.heartbeats(&[2, 3], 5_000);
    assert!(c.tick(session + 1).starts_with("t-0 replicas=[1, 2, 3] isr=[2, 3] leader=2 epochs=1/1"));
    c.heartbeat(1, 12_000);
    c.heartbeats(&[2, 3, 4, 5], 12_000);
    c
}

#[test]
fn leadership_goes_back_to_the_preferred_replica_once_it_is_in_sync() {
    let mut c = after_a_failover(config(true, 10));
    assert_eq!(c.ctl.next_deadline(), Some(12_000 + session + 1).min(Some(interval)), "the check is a deadline");
    assert_eq!(c.tick(12_000), "", "due, but broker 1 is not in t-0's ISR yet");
    let (_, records) = c.ctl.alter_partition(&c.alter(2, "t", &[1, 2, 3])).unwrap();
    c.commit(records);
    assert_eq!(c.tick(15_000), "", "the next check is one interval after the last");
    c.heartbeats(&[1, 2, 3, 4, 5], 20_000);
    assert_eq!(c.tick(22_000), "t-0 replicas=[1, 2, 3] isr=[1, 2, 3] leader=1 epochs=2/3");
    assert_eq!(c.tick(32_000), "", "balanced: nothing moves");
}

#[test]
fn no_rebalance_when_off_or_within_the_percentage() {
    for config in [config(false, 10), config(true, 100)] {
        let mut c = after_a_failover(config);
        let (_, records) = c.ctl.alter_partition(&c.alter(2, "t", &[1, 2, 3])).unwrap();
        c.commit(records);
        c.heartbeats(&[1, 2, 3, 4, 5], 20_000);
        assert_eq!(c.tick(22_000), "");
        assert_eq!(c.part("t", 0).leader, 2);
    }
}

#[test]
fn elect_leaders_preferred_moves_what_it_can_and_names_why_not() {
    let mut c = after_a_failover(config(false, 10));
    let asked = [("t".to_string(), 0), ("t".to_string(), 1), ("nope".to_string(), 0)];
    let (results, records) = c.ctl.elect_leaders(false, Some(&asked));
    assert!(records.is_empty());
    let codes: Vec<Option<Code>> = results.iter().map(|r| r.2).collect();
    assert_eq!(codes, vec![Some(Code::PreferredLeaderNotAvailable), Some(Code::ElectionNotNeeded), Some(Code::UnknownTopicOrPartition)], "broker 1 is not in t-0's ISR yet");
    let (_, records) = c.ctl.alter_partition(&c.alter(2, "t", &[1, 2, 3])).unwrap();
    c.commit(records);
    let (results, records) = c.ctl.elect_leaders(false, Some(&asked[..1]));
    assert_eq!(results, vec![("t".to_string(), 0, None)]);
    assert_eq!(c.commit(records), "t-0 replicas=[1, 2, 3] isr=[1, 2, 3] leader=1 epochs=2/3");
    let (results, records) = c.ctl.elect_leaders(false, None);
    assert!(results.is_empty() && records.is_empty(), "every partition is led by its preferred replica: nothing to answer");
}

#[test]
fn elect_leaders_unclean_elects_a_live_replica_only_where_no_leader_is_left() {
    let mut c = Cluster::with_brokers(config(false, 10), &[1, 2, 3]);
    c.create("t", 2, 3, &[]);
    // t-0's ISR shrinks to its leader, broker 1, whose session then expires: nobody left.
    let (_, records) = c.ctl.alter_partition(&c.alter(1, "t", &[1])).unwrap();
    c.commit(records);
    c.heartbeats(&[2, 3], 5_000);
    c.tick(session + 1);
    assert_eq!(c.part("t", 0).leader, crate::metadata::no_leader, "unclean election is off for the topic");
    let asked = [("t".to_string(), 0), ("t".to_string(), 1), ("nope".to_string(), 0)];
    let (results, records) = c.ctl.elect_leaders(true, Some(&asked));
    let codes: Vec<Option<Code>> = results.iter().map(|r| r.2).collect();
    assert_eq!(codes, vec![None, Some(Code::ElectionNotNeeded), Some(Code::UnknownTopicOrPartition)]);
    let moved = c.commit(records);
    assert!(moved.starts_with("t-0 replicas=[1, 2, 3] isr=[2] leader=2"), "the first live replica, alone in the ISR: {moved}");
    // With every replica gone there is nobody to elect.
    let mut c = Cluster::with_brokers(config(false, 10), &[1, 2, 3]);
    c.create("t", 1, 1, &[]);
    c.heartbeats(&[2, 3], 5_000);
    c.tick(session + 1);
    let (results, records) = c.ctl.elect_leaders(true, None);
    assert!(records.is_empty());
    assert_eq!(results, vec![("t".to_string(), 0, Some(Code::EligibleLeadersNotAvailable))]);
}
