//! Partition reassignment (`controller::reassign`): the three steps as records — start, the
//! ISR change that brings the new replicas in, completion in that same record — and the
//! refusals, a cancel, a shrink that completes at once and a target changed midway.

use super::*;

/// Brokers 0..=3 (ids as kafka-reassign-partitions users write them), topic t on [0, 1] led by 0.
fn two_on_four() -> Cluster {
    let mut c = Cluster::with_brokers(ControllerConfig::default(), &[0, 1, 2, 3]);
    c.create("t", 1, 2, &[]);
    assert_eq!(c.tail(1), "t-0 replicas=[0, 1] isr=[0, 1] leader=0 epochs=0/0");
    c
}

fn reassign(c: &mut Cluster, target: Option<&[i32]>) -> (Result<(), Error>, String) {
    let (mut answers, records) = c.ctl.alter_reassignments(&[("t".into(), 0, target.map(<[i32]>::to_vec))], false);
    assert_eq!(answers.len(), 1);
    (answers.remove(0).2, c.commit(records))
}

/// What the leader's AlterPartition commits.
fn isr(c: &mut Cluster, leader: i32, new_isr: &[i32]) -> (PartitionInfo, String) {
    let (info, records) = c.ctl.alter_partition(&c.alter(leader, "t", new_isr)).expect("accepted");
    (info, c.commit(records))
}

#[test]
fn a_partition_moves_to_its_target_once_the_new_replicas_are_in_sync() {
    let mut c = two_on_four();
    assert_eq!(reassign(&mut c, Some(&[1, 2])), (Ok(()), "t-0 replicas=[1, 2, 0] isr=[1, 0] leader=0 adding=[2] removing=[0] epochs=0/1".into()));
    assert_eq!(c.ctl.reassignments(None).len(), 1, "listed while in progress");
    // The leader may add the new replica to the ISR; the record that does so completes the
    // reassignment, and leadership leaves broker 0 for the first target replica in the ISR.
    let (info, line) = isr(&mut c, 0, &[0, 1, 2]);
    assert_eq!(line, "t-0 replicas=[1, 2] isr=[1, 2] leader=1 epochs=1/2");
    assert_eq!((info.leader, info.leader_epoch), (1, 1), "AlterPartition's answer names the new leader");
    assert!(c.ctl.reassignments(None).is_empty());
    let (answer, _) = reassign(&mut c, None);
    assert_eq!(answer.map_err(|e| e.kafka_error()), Err(Code::NoReassignmentInProgress));
}

#[test]
fn a_shrink_of_the_isr_does_not_complete_it_and_the_leader_stays_when_it_is_kept() {
    let mut c = two_on_four();
    assert_eq!(reassign(&mut c, Some(&[0, 2, 3])).1, "t-0 replicas=[0, 2, 3, 1] isr=[0, 1] leader=0 adding=[2, 3] removing=[1] epochs=0/1");
    assert_eq!(isr(&mut c, 0, &[0]).1, "t-0 replicas=[0, 2, 3, 1] isr=[0] leader=0 adding=[2, 3] removing=[1] epochs=0/2");
    assert_eq!(isr(&mut c, 0, &[0, 2]).1, "t-0 replicas=[0, 2, 3, 1] isr=[0, 2] leader=0 adding=[2, 3] removing=[1] epochs=0/3", "3 is not in yet");
    assert_eq!(isr(&mut c, 0, &[0, 2, 3]).1, "t-0 replicas=[0, 2, 3] isr=[0, 2, 3] leader=0 epochs=0/4", "the leader stays: same leader epoch");
}

#[test]
fn a_shrink_completes_at_once_and_a_grow_waits() {
    let mut c = two_on_four();
    assert_eq!(reassign(&mut c, Some(&[1])).1, "t-0 replicas=[1] isr=[1] leader=1 epochs=1/1");
    let mut c = two_on_four();
    isr(&mut c, 0, &[0]);
    assert_eq!(reassign(&mut c, Some(&[1])).1, "t-0 replicas=[1, 0] isr=[0] leader=0 adding=[] removing=[0] epochs=0/2", "1 is out of the ISR: the move waits for it");
    assert_eq!(isr(&mut c, 0, &[0, 1]).1, "t-0 replicas=[1] isr=[1] leader=1 epochs=1/3");
}

#[test]
fn cancelling_reverts_to_the_original_replicas() {
    let mut c = two_on_four();
    reassign(&mut c, Some(&[2, 3])).0.expect("accepted");
    assert_eq!(c.tail(1), "t-0 replicas=[2, 3, 0, 1] isr=[0, 1] leader=0 adding=[2, 3] removing=[0, 1] epochs=0/1");
    isr(&mut c, 0, &[0, 1, 2]);
    assert_eq!(reassign(&mut c, None), (Ok(()), "t-0 replicas=[0, 1] isr=[0, 1] leader=0 epochs=0/3".into()), "2 leaves the ISR it had joined");
}

#[test]
fn a_new_target_midway_starts_from_the_grown_assignment() {
    let mut c = two_on_four();
    reassign(&mut c, Some(&[1, 2])).0.expect("accepted");
    // Back to where it was: 2 is removed as any leaving replica, and nothing needs to catch up.
    assert_eq!(reassign(&mut c, Some(&[0, 1])).1, "t-0 replicas=[0, 1] isr=[0, 1] leader=0 epochs=0/2");
    reassign(&mut c, Some(&[1, 2])).0.expect("accepted");
    assert_eq!(reassign(&mut c, Some(&[1, 3])).1, "t-0 replicas=[1, 3, 2, 0] isr=[1, 0] leader=0 adding=[3] removing=[2, 0] epochs=0/4");
    assert_eq!(reassign(&mut c, Some(&[1, 3])), (Ok(()), String::new()), "the same target again changes nothing");
}

#[test]
fn targets_are_checked_like_kafka() {
    let mut c = two_on_four();
    let cases: [(&[i32], Code); 3] = [(&[], Code::InvalidReplicaAssignment), (&[1, 1], Code::InvalidReplicaAssignment), (&[1, 9], Code::InvalidReplicaAssignment)];
    for (target, code) in cases {
        let (answer, line) = reassign(&mut c, Some(target));
        assert_eq!((answer.map_err(|e| e.kafka_error()), line), (Err(code), String::new()), "target {target:?}");
    }
    let asked = [("t".to_string(), 0, Some(vec![1, 2, 3])), ("nope".to_string(), 0, Some(vec![1])), ("t".to_string(), 0, Some(vec![1, 3]))];
    let (answers, records) = c.ctl.alter_reassignments(&asked, true);
    let codes: Vec<Option<Code>> = answers.iter().map(|a| a.2.as_ref().err().map(Error::kafka_error)).collect();
    assert_eq!(codes, vec![Some(Code::InvalidReplicationFactor), Some(Code::UnknownTopicOrPartition), None], "v1's allow_replication_factor_change=false");
    assert_eq!(render(&records), "t-0 replicas=[1, 3, 0] isr=[1, 0] leader=0 adding=[3] removing=[0] epochs=0/1");
}

#[test]
fn cancelling_is_refused_where_it_would_empty_the_isr() {
    let mut c = two_on_four();
    reassign(&mut c, Some(&[2, 3])).0.expect("accepted");
    isr(&mut c, 0, &[0, 1, 2]);
    // Broker 0 and 1 fail: the ISR is [2] (the last member stays) and 2 leads.
    c.add_bystanders(&[4, 5], 5_000);
    c.heartbeats(&[2, 3], 5_000);
    c.tick(session + 1);
    assert_eq!(c.part("t", 0).isr, vec![2]);
    let (answer, line) = reassign(&mut c, None);
    assert_eq!((answer.map_err(|e| e.kafka_error()), line), (Err(Code::InvalidReplicaAssignment), String::new()));
}

#[test]
fn a_decommissioned_broker_is_unregistered_then_moved_off() {
    let mut c = two_on_four();
    let records = c.ctl.unregister_broker(0, 1_000).expect("registered");
    let epoch = c.epoch(0);
    assert_eq!(c.commit(records), format!("t-0 replicas=[0, 1] isr=[1] leader=1 epochs=1/1\nunregister 0 epoch={epoch}"), "out of the ISR and leadership first");
    assert!(!c.ctl.image().brokers.contains_key(&0));
    assert_eq!(c.ctl.unregister_broker(0, 1_000).map_err(|e| e.kafka_error()), Err(Code::BrokerIdNotRegistered));
    // Still named as a replica, offline there, until moved: to a registered broker only.
    let (answer, _) = reassign(&mut c, Some(&[0, 1]));
    assert_eq!(answer.map_err(|e| e.kafka_error()), Err(Code::InvalidReplicaAssignment), "broker 0 is gone");
    assert_eq!(reassign(&mut c, Some(&[1, 2])).1, "t-0 replicas=[1, 2, 0] isr=[1] leader=1 adding=[2] removing=[0] epochs=1/2");
    assert_eq!(isr(&mut c, 1, &[1, 2]).1, "t-0 replicas=[1, 2] isr=[1, 2] leader=1 epochs=1/3");
}
