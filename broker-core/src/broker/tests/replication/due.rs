//! The upkeep visits only what is due (`broker::due`): a leader's ISR is looked at when a
//! member's lag window ends or an event touched it, not at every round; a retention deadline
//! is acted on when it is reached, once.

use super::*;
use crate::node::Node;
use crate::testing::{config, create, one_node};

#[test]
fn a_follower_that_starts_lagging_is_looked_at_and_shrunk_when_its_window_ends() {
    let lag = BrokerConfig::default().replica_lag_ms_max;
    let mut c = Cluster::new(&[1, 2, 3]);
    c.create(3);
    c.produce(1, &[b"a"]);
    c.now = 1_000;
    c.catch_up(2);
    c.catch_up(3);
    assert_eq!(c.hw(1), 1);
    // After new metadata every leader is looked at; then this one is due when its members'
    // windows end (both caught up at 1,000).
    assert_eq!(c.broker(1).isr_proposals(1_000), vec![]);
    let due: Vec<u64> = c.broker(1).due.isr.by_time().map(|(t, _)| t).collect();
    assert_eq!(due, vec![1_000 + lag + 1]);
    // 2 keeps fetching, 3 goes silent: a member's fetch schedules nothing new.
    c.now = 5_000;
    c.catch_up(2);
    assert_eq!(c.broker(1).due.isr.len(), 1, "a member's fetch only moves its own window's end");
    assert_eq!(c.broker(1).isr_proposals(1_000 + lag), vec![], "not yet due, and nothing to propose");
    assert_eq!(c.broker(1).due.isr.len(), 1, "not looked at: the entry stands");
    let props = c.broker(1).isr_proposals(1_000 + lag + 1);
    let prop = IsrProposal { leader_epoch: 0, partition_epoch: 0, isr: vec![1, 2], epochs: vec![-1, c.ctl.image().broker_epoch(2)] };
    assert_eq!(props, vec![(topic_name.to_string(), 0, prop.clone())], "3 lagged for the whole window");
    assert_eq!(c.broker(1).due.isr.len(), 0, "in flight: only the answer makes it due");
    assert_eq!(c.broker(1).isr_proposals(1_000 + lag + 2), vec![]);
    // The answer: due at once (nothing more to propose), then at 2's window end.
    let epoch = c.ctl.image().brokers[&1].epoch;
    let req = crate::controller::AlterPartition { broker_id: 1, broker_epoch: epoch, topic: topic_name.into(), partition: 0, leader_epoch: 0, partition_epoch: 0, new_isr: prop.isr, new_isr_epochs: prop.epochs };
    let (info, records) = c.ctl.alter_partition(&req).unwrap();
    c.broker(1).isr_answer(topic_name, 0, IsrAnswer::Committed(&info), 1_000 + lag + 2);
    c.commit(records);
    assert_eq!(c.broker(1).isr_proposals(1_000 + lag + 3), vec![]);
    let due: Vec<u64> = c.broker(1).due.isr.by_time().map(|(t, _)| t).collect();
    assert_eq!(due, vec![5_000 + lag + 1], "2's window, from its last fetch");
    // 3 comes back: a fetch from outside the ISR makes the partition due at once.
    c.now = 1_000 + lag + 10;
    c.catch_up(3);
    let now = c.now;
    let props = c.broker(1).isr_proposals(now);
    assert_eq!(props.len(), 1);
    assert_eq!(props[0].2.isr, vec![1, 2, 3], "caught up: proposed back in");
}

#[test]
fn a_retention_deadline_is_acted_on_when_reached_and_once() {
    let tmp = tempfile::tempdir().unwrap();
    let node: Node = one_node(config(tmp.path()));
    let cfg = [("segment.bytes", "200"), ("retention.ms", "10000")];
    create(&node, "t", 1, cfg.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()).unwrap();
    for _ in 0..4 {
        // Records stamped 1,000: each closed segment expires from 1,000 + 10,000 + 1 on.
        node.broker().produce("t", 0, &build(&[&[1u8; 80]], 1_000), 1, 0, &mut Vec::new()).unwrap();
    }
    let mut b = node.broker();
    assert!(b.partitions()[("t", 0)].log.segment_bases().len() >= 2);
    assert_eq!(b.due.logs.len(), (0, 1), "one retention entry, no flush.ms deadline");
    b.tick(11_000);
    assert_eq!(b.partitions()[("t", 0)].log_start_offset(), 0, "not expired yet");
    assert_eq!(b.due.logs.len(), (0, 1), "not due: not looked at");
    b.tick(11_001);
    let start = b.partitions()[("t", 0)].log_start_offset();
    assert!(start > 0, "expired segments deleted at their deadline");
    assert_eq!(b.partitions()[("t", 0)].log.segment_bases().len(), 1, "only the active segment is left");
    assert_eq!(b.due.logs.len(), (0, 0), "nothing left to delete: the log is no longer due");
    b.tick(20_000);
    assert_eq!(b.partitions()[("t", 0)].log_start_offset(), start);
    assert_eq!(b.next_deadline(), None);
}

#[test]
fn the_leaders_followed_are_counted_again_after_a_role_changes() {
    let mut c = Cluster::new(&[1, 2, 3]);
    c.create(3);
    assert_eq!(c.broker(2).leaders_followed(), BTreeSet::from([1]));
    assert!(c.broker(2).due.followed.is_some(), "kept until a role may change");
    c.elect(2, &[1, 2, 3]);
    assert_eq!(c.broker(2).leaders_followed(), BTreeSet::new(), "2 leads now");
    assert_eq!(c.broker(1).leaders_followed(), BTreeSet::from([2]));
    assert_eq!(c.broker(3).leaders_followed(), BTreeSet::from([2]));
}
