//! Controller restarts (fresh sessions, the `heard` rule), check-quorum fencing and controlled
//! shutdown, driven through the same [`Cluster`] as the other controller tests.

use super::*;
use crate::metadata::topic::unclean_leader_election_config;

#[test]
fn after_a_controller_restart_only_brokers_heard_from_are_newly_elected() {
    // Why: while no controller ran, a broker the image still shows unfenced may have crashed
    // and lost unflushed records; electing it before it speaks could discard committed ones.
    let mut c = Cluster::with_brokers(ControllerConfig::default(), &[1, 2, 3]);
    c.create("t", 1, 3, &[]);
    let mut c = restarted(c, 1_000);
    let offset = c.next_offset();
    let expected = format!("register 1 epoch={offset}\nt-0 replicas=[1, 2, 3] isr=[2, 3] leader=-1 epochs=1/1");
    assert_eq!(c.register(1, 1_000), expected, "2 and 3 are in the ISR but silent: nobody leads");
    assert_eq!(c.tick(1_000 + session), "", "their fresh sessions have not expired either");
    // Broker 3 speaks first: it leads, although 2 comes first in replica order.
    assert_eq!(c.heartbeat(3, 2_000), HeartbeatReply { fenced: false, caught_up: true });
    assert_eq!(c.tail(1), "t-0 replicas=[1, 2, 3] isr=[2, 3] leader=3 epochs=2/2");
}

#[test]
fn after_a_controller_restart_unclean_election_also_waits_for_a_heard_broker() {
    // Why: unclean election already risks losing committed records; a broker that may have
    // lost its own log on top of that must still speak first.
    let mut c = Cluster::with_brokers(ControllerConfig::default(), &[1, 2, 3]);
    c.create("t", 1, 3, &[(unclean_leader_election_config, "true")]);
    let (_, records) = c.ctl.alter_partition(&c.alter(1, "t", &[1])).unwrap();
    c.commit(records);
    let mut c = restarted(c, 1_000);
    let offset = c.next_offset();
    assert_eq!(c.register(1, 1_000), format!("register 1 epoch={offset}\nt-0 replicas=[1, 2, 3] isr=[1] leader=-1 epochs=1/2"));
    c.heartbeat(3, 2_000);
    assert_eq!(c.tail(1), "t-0 replicas=[1, 2, 3] isr=[3] leader=3 epochs=2/3");
}

#[test]
fn a_live_leader_keeps_its_leadership_and_epoch_across_a_controller_restart() {
    // Why: a leader that is still serving loses nothing by staying; a needless epoch bump
    // would fence every follower fetch and fail every acks=all produce waiting on it.
    let mut c = Cluster::with_brokers(ControllerConfig::default(), &[1, 2, 3]);
    c.create("t", 1, 3, &[]);
    let mut c = restarted(c, 1_000);
    // Follower 3 registers again; leader 1 has not heartbeated to this controller yet.
    let offset = c.next_offset();
    assert_eq!(c.register(3, 1_000), format!("register 3 epoch={offset}\nt-0 replicas=[1, 2, 3] isr=[1, 2] leader=1 epochs=0/1"));
    // Its first heartbeat changes nothing it already leads.
    let (reply, records) = c.ctl.heartbeat(1, c.epoch(1), offset + 1, 2_000).unwrap();
    assert_eq!((reply, records), (HeartbeatReply { fenced: false, caught_up: true }, vec![]));
    assert_eq!(c.part("t", 0).leader_epoch, 0);
}

#[test]
fn reregistration_leaves_every_isr_and_leadership_in_the_registration_batch() {
    // Why: a re-registering broker may have restarted and lost unflushed records. Were any
    // of these changes a later batch, a metadata prefix ending at the RegisterBroker record
    // would show it leading, or counting toward acks=all, with a log it no longer has.
    let mut c = Cluster::with_brokers(ControllerConfig::default(), &[1, 2, 3]);
    c.create("t", 3, 3, &[]);
    c.create("solo", 1, 1, &[]);
    assert_eq!(c.part("solo", 0).replicas, vec![2]);
    let offset = c.next_offset();
    let records = c.ctl.register(2, "host", 9092, offset, 1_000).unwrap();
    let expected = format!(
        "register 2 epoch={offset}
        solo-0 replicas=[2] isr=[2] leader=-1 epochs=1/1
        t-0 replicas=[1, 2, 3] isr=[1, 3] leader=1 epochs=0/1
        t-1 replicas=[2, 3, 1] isr=[3, 1] leader=3 epochs=1/1
        t-2 replicas=[3, 1, 2] isr=[3, 1] leader=3 epochs=0/1"
    );
    assert_eq!(c.commit(records), lines(&expected), "the last member of solo-0's ISR stays, leaderless");
}

#[test]
fn a_controller_that_hears_only_its_own_broker_fences_nobody() {
    // Why (check-quorum): a lone controller voter cut off from the network sees every other
    // session expire. Fencing them would elect its own broker everywhere, and a crash of that
    // broker's unflushed log would then lose records the others had committed.
    let mut c = Cluster::with_brokers(ControllerConfig::default(), &[1, 2, 3]);
    c.create("t", 3, 3, &[]);
    let before = c.ctl.image().clone();
    // Broker 1 runs beside the controller and keeps heartbeating; 2 and 3 are cut off.
    c.heartbeat(1, 5_000);
    assert_eq!(c.tick(session + 1), "", "1 of 3 heard");
    c.heartbeat(1, 10_000);
    assert_eq!(c.tick(10_000 + session), "", "still 1 of 3 heard, long after 2 and 3 expired");
    assert_eq!(c.ctl.image(), &before, "nobody fenced, no ISR shrunk");
    assert_eq!((0..3).map(|p| c.part("t", p).leader).collect::<Vec<_>>(), vec![1, 2, 3], "no leadership moved");
}

#[test]
fn with_two_of_three_heard_the_silent_one_is_fenced_and_its_leaderships_move() {
    let mut c = Cluster::with_brokers(ControllerConfig::default(), &[1, 2, 3]);
    c.create("t", 3, 3, &[]);
    c.heartbeats(&[1, 2], 5_000);
    let expected = "t-0 replicas=[1, 2, 3] isr=[1, 2] leader=1 epochs=0/1
        t-1 replicas=[2, 3, 1] isr=[2, 1] leader=2 epochs=0/1
        t-2 replicas=[3, 1, 2] isr=[1, 2] leader=1 epochs=1/1
        fence 3 epoch=2";
    assert_eq!(c.tick(session + 1), lines(expected));
}

#[test]
fn half_the_registered_brokers_heard_is_not_a_majority() {
    // Why: in an even split, the controller's half may be the one cut off.
    let mut c = Cluster::with_brokers(ControllerConfig::default(), &[1, 2, 3, 4]);
    c.heartbeats(&[1, 2], 5_000);
    assert_eq!(c.tick(session + 1), "", "2 of 4 heard");
    c.heartbeat(3, session + 500);
    assert_eq!(c.tick(session + 500), "fence 4 epoch=3", "3 of 4 heard");
}

#[test]
fn expired_brokers_are_fenced_at_the_first_tick_after_a_majority_is_heard_again() {
    let mut c = Cluster::with_brokers(ControllerConfig::default(), &[1, 2, 3]);
    c.create("t", 3, 3, &[]);
    // A fence-free period: only broker 1, beside the controller, is heard.
    c.heartbeat(1, 5_000);
    assert_eq!(c.tick(session + 1), "");
    c.heartbeat(1, 10_000);
    assert_eq!(c.tick(12_000), "");
    // The cut heals for broker 2. Never fenced, it simply carries on, and the tick is due.
    let offset = c.next_offset();
    assert_eq!(c.heartbeat(2, 12_500), HeartbeatReply { fenced: false, caught_up: true });
    assert_eq!(c.next_offset(), offset, "a heartbeat alone fences nobody");
    // Ended sessions are not deadlines (the shell's periodic tick covers them; a past
    // deadline would make its timer spin while check-quorum holds fencing back).
    assert!(c.ctl.next_deadline().is_none_or(|d| d > 12_500), "{:?}", c.ctl.next_deadline());
    let expected = "t-0 replicas=[1, 2, 3] isr=[1, 2] leader=1 epochs=0/1
        t-1 replicas=[2, 3, 1] isr=[2, 1] leader=2 epochs=0/1
        t-2 replicas=[3, 1, 2] isr=[1, 2] leader=1 epochs=1/1
        fence 3 epoch=2";
    assert_eq!(c.tick(12_500), lines(expected));
}

#[test]
fn a_fenced_broker_still_counts_among_the_registered() {
    // Why: the majority is of registered brokers, not of unfenced ones, so a controller that
    // has already fenced some cannot fence the rest on the word of a shrinking minority. Once
    // a majority is really gone, failover waits until enough return, as a KRaft quorum would.
    let mut c = Cluster::with_brokers(ControllerConfig::default(), &[1, 2, 3]);
    c.create("t", 3, 3, &[]);
    c.heartbeats(&[1, 2], 5_000);
    assert!(c.tick(session + 1).ends_with("fence 3 epoch=2"));
    // Broker 2 goes silent too: 1 of 3 heard, although 1 of the 2 unfenced ones.
    c.heartbeat(1, 10_000);
    assert_eq!(c.tick(5_000 + session + 1), "");
    assert!(c.ctl.image().is_live(2));
    // Broker 3 returns: 2 of 3 heard, and broker 2 is fenced at the next tick.
    c.heartbeat(3, 15_000);
    assert_eq!(c.tail(1), "unfence 3 epoch=2");
    let expected = "t-0 replicas=[1, 2, 3] isr=[1] leader=1 epochs=0/2
        t-1 replicas=[2, 3, 1] isr=[1] leader=1 epochs=1/2
        t-2 replicas=[3, 1, 2] isr=[1] leader=1 epochs=1/2
        fence 2 epoch=1";
    assert_eq!(c.tick(15_000), lines(expected));
}

#[test]
fn a_one_broker_cluster_is_its_own_majority() {
    let mut c = Cluster::with_brokers(ControllerConfig::default(), &[1]);
    c.create("t", 1, 1, &[]);
    let before = c.ctl.image().clone();
    for now in [5_000, 10_000, 15_000] {
        c.heartbeat(1, now);
        assert_eq!(c.tick(now + session), "", "1 of 1 heard at {now}");
    }
    assert_eq!(c.ctl.image(), &before);
    assert_eq!(c.part("t", 0).leader, 1);
    // A silent lone broker is not fenced either (0 of 1 heard): the controller cannot tell
    // its broker's silence from its own isolation. Harmless: nobody else could lead, and a
    // restarted broker registers again, which takes it out of leadership until it catches up.
    assert_eq!(c.tick(15_000 + session + 1), "");
    assert!(c.ctl.image().is_live(1));
}

#[test]
fn a_controlled_shutdown_moves_leadership_at_once_and_fences() {
    // Why: a broker stopped on purpose must not leave its partitions leaderless for a whole
    // session timeout; Kafka moves leadership before the broker goes.
    let mut c = Cluster::with_brokers(ControllerConfig::default(), &[1, 2, 3]);
    c.create("t", 3, 3, &[]);
    let records = c.ctl.shut_down(1, c.epoch(1), 100).expect("shuts down");
    let expected = "t-0 replicas=[1, 2, 3] isr=[2, 3] leader=2 epochs=1/1
        t-1 replicas=[2, 3, 1] isr=[2, 3] leader=2 epochs=0/1
        t-2 replicas=[3, 1, 2] isr=[3, 2] leader=3 epochs=0/1
        fence 1 epoch=0";
    assert_eq!(c.commit(records), lines(expected));
    assert!(c.ctl.shut_down(1, c.epoch(1), 200).unwrap().is_empty(), "a second request changes nothing");
    assert_eq!(c.ctl.shut_down(2, 99, 200).unwrap_err().kafka_error(), Code::StaleBrokerEpoch, "a stale epoch is refused");
}

#[test]
fn a_heartbeat_after_a_controlled_shutdown_does_not_unfence() {
    // Why: the broker's regular heartbeat may still be in flight when it asks to shut down; it
    // must not bring the broker back into leadership on its way out.
    let mut c = Cluster::with_brokers(ControllerConfig::default(), &[1, 2, 3]);
    c.create("t", 3, 3, &[]);
    let records = c.ctl.shut_down(1, c.epoch(1), 100).unwrap();
    c.commit(records);
    assert_eq!(c.heartbeat(1, 150), HeartbeatReply { fenced: true, caught_up: true });
    assert_eq!(c.part("t", 0).leader, 2);
    c.register(1, 200);
    assert_eq!(c.heartbeat(1, 250), HeartbeatReply { fenced: false, caught_up: true }, "a new registration starts over");
}
