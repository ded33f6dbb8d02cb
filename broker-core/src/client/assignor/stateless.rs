//! The assignors that look only at subscriptions: Kafka's `range` and `roundrobin`. They must
//! never look at what members own (neither is sticky), so a rebalance may move any partition.
//! Member order is Kafka's `MemberInfo` order since KIP-345 (static members by
//! `group.instance.id` first, then member ids), not member ids alone as before Kafka 2.3.
//!
//! `range` (`RangeAssignor`, Kafka 3.x without rack ids): topic by topic, the members
//! subscribed to it each get a contiguous run of its partitions, the first
//! `partitions % members` of them one more. Members early in the order collect the extra
//! partition of every topic, so with many topics it is uneven by design; consumers that
//! co-partition topics rely on that (partition i of every topic goes to the same member).
//!
//! `roundrobin` (`RoundRobinAssignor`): every partition of every subscribed topic, by topic
//! then partition, is dealt to the members in order, one each in turn, passing over members
//! not subscribed to its topic. With equal subscriptions the counts differ by at most one;
//! with unequal ones they can differ more (Kafka documents this too).

use std::collections::BTreeMap;
use std::ops::Range;

use super::{empty_assignment, give, member_order, subscribed_topics, GroupAssignment, Members};

/// Kafka's `range`: contiguous runs per topic, in member order.
pub(super) fn range(members: &Members, partitions_per_topic: &BTreeMap<String, i32>) -> GroupAssignment {
    let mut out = empty_assignment(members);
    let order = member_order(members);
    for (topic, count) in subscribed_topics(members, partitions_per_topic) {
        let takers: Vec<&str> = order.iter().filter(|(_, m)| m.topics.contains(topic)).map(|(id, _)| *id).collect();
        for (i, member) in takers.iter().enumerate() {
            for partition in share(i, takers.len(), count) {
                give(&mut out, member, topic, partition);
            }
        }
    }
    out
}

/// The partitions the `i`-th of `n` members gets out of `count`: `count / n` each, and one
/// more for each of the first `count % n`.
fn share(i: usize, n: usize, count: i32) -> Range<i32> {
    let (count, i, n) = (i64::from(count), i as i64, n as i64);
    let (per, extra) = (count / n, count % n);
    let start = per * i + i.min(extra);
    let len = per + i64::from(i < extra);
    // start + len <= count <= i32::MAX, so both fit.
    (start as i32)..((start + len) as i32)
}

/// Kafka's `roundrobin`: all partitions dealt in turn, skipping members not subscribed.
pub(super) fn roundrobin(members: &Members, partitions_per_topic: &BTreeMap<String, i32>) -> GroupAssignment {
    let mut out = empty_assignment(members);
    let order = member_order(members);
    // The dealer's position: the member the next partition is offered to first.
    let mut next = 0;
    for (topic, count) in subscribed_topics(members, partitions_per_topic) {
        for partition in 0..count {
            let taker = (0..order.len()).map(|k| (next + k) % order.len()).find(|&j| order[j].1.topics.contains(topic));
            // subscribed_topics lists only topics somebody subscribes to, so there is a taker.
            let Some(j) = taker else { break };
            give(&mut out, order[j].0, topic, partition);
            next = (j + 1) % order.len();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::share;

    #[test]
    fn range_shares_cover_the_topic_in_order() {
        assert_eq!([share(0, 2, 3), share(1, 2, 3)], [0..2, 2..3]);
        assert_eq!([share(0, 3, 2), share(1, 3, 2), share(2, 3, 2)], [0..1, 1..2, 2..2]);
        assert_eq!([share(0, 2, 6), share(1, 2, 6)], [0..3, 3..6]);
    }
}
