//! Replication throttles (KIP-73). At the leader: a follower outside the ISR, of a partition the
//! topic's `leader.replication.throttled.replicas` names on the leader, is served nothing once
//! what the leader served throttled followers is over its `leader.replication.throttled.rate`,
//! and catches up as the window slides; an in-sync follower and an unthrottled partition never
//! wait. At the follower: a partition `follower.replication.throttled.replicas` names on it sits
//! its fetcher's rounds out while over its `follower.replication.throttled.rate`.

use super::*;
use crate::metadata::throttles;

#[test]
fn a_throttled_follower_outside_the_isr_waits_for_the_rate() {
    let mut c = Cluster::new(&[1, 2]);
    c.create(2);
    c.elect(1, &[1]); // broker 2 is out of the ISR: it has a log to catch up on
    let big = vec![7u8; 30_000];
    for _ in 0..4 {
        c.produce(1, &[&big]);
    }
    let config = [(throttles::leader_replicas.to_string(), "0:1".to_string())].into();
    c.commit(vec![MetadataRecord::TopicConfig { name: topic_name.into(), config }]);
    // 10 kB/s: a window's worth (100 kB) goes first, then nothing until the window slides.
    c.commit(vec![MetadataRecord::BrokerConfig { broker: throttles::cluster_default, config: [(throttles::leader_rate.to_string(), "10000".to_string())].into() }]);
    // The first fetch is served whole (the rate is looked at before, counted after: Kafka's
    // order), and puts the throttled partitions over the rate.
    c.catch_up(2);
    assert_eq!(c.leo(2), c.leo(1));
    c.produce(1, &[&big]);
    for _ in 0..5 {
        assert_eq!(c.round(2), Round::Fetched(Bytes::new()), "over the rate: nothing is served");
    }
    let held = c.leo(2);
    assert!(held < c.leo(1));
    // Twelve seconds on, the window has slid past the first burst: it catches up.
    c.now += 12_000;
    c.catch_up(2);
    assert!(c.leo(2) > held);
    c.assert_same_log(2, 1);
    // Once in the ISR it is never throttled, whatever the rate says.
    c.elect(1, &[1, 2]);
    for _ in 0..4 {
        c.produce(1, &[&big]);
    }
    c.catch_up(2);
    c.assert_same_log(2, 1);
}

#[test]
fn a_throttled_follower_sits_rounds_out_while_over_its_rate() {
    let mut c = Cluster::new(&[1, 2]);
    c.create(2);
    c.elect(1, &[1]);
    let big = vec![7u8; 30_000];
    for _ in 0..4 {
        c.produce(1, &[&big]);
    }
    // The follower's side only: broker 2 fetches t-0 throttled at 10 kB/s.
    let config = [(throttles::follower_replicas.to_string(), "0:2".to_string())].into();
    c.commit(vec![MetadataRecord::TopicConfig { name: topic_name.into(), config }]);
    c.commit(vec![MetadataRecord::BrokerConfig { broker: 2, config: [(throttles::follower_rate.to_string(), "10000".to_string())].into() }]);
    // Epoch truncation first, then one fetch that goes out whole and puts it over the rate.
    while c.leo(2) < c.leo(1) {
        c.round(2);
    }
    c.produce(1, &[&big]);
    let now = c.now;
    let step = ReplicaFetcher::new(1).next(c.broker(2), now, &mut Vec::new());
    assert_eq!(step, Step::Idle, "over the rate, its one throttled partition waits the round out");
    c.now += 12_000;
    c.catch_up(2);
    c.assert_same_log(2, 1);
}
