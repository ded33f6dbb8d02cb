//! KIP-966 eligible leader replicas (`eligible.leader.replicas.enable`): the ISR may empty into
//! the ELR, a broker back from an unclean shutdown leaves the ELR and is not elected, one back
//! from a clean shutdown stays eligible, AlterPartition below the minimum fills the ELR and
//! back at the minimum clears it. The ELR-off behaviour is every other test of this module.

use super::*;

fn elr_config() -> ControllerConfig {
    ControllerConfig { min_insync_replicas: 2, eligible_leader_replicas: true, ..ControllerConfig::default() }
}

impl Cluster {
    /// Registers `id` again, with the previous broker epoch its clean-shutdown marker named
    /// (`clean`) or none (a crash, a power loss).
    fn reregister(&mut self, id: i32, clean: bool, now: u64) -> String {
        let previous = if clean { self.epoch(id) } else { no_previous_epoch };
        let records = self.ctl.register_broker(id, &[one()], previous, self.next_offset(), now).expect("registers");
        self.commit(records)
    }
}

/// t-0 on brokers 1, 2, 3 (leader 1), four bystanders for check-quorum; broker 3 then broker 2
/// go silent and are fenced: ISR {1}, ELR {2} (broker 3 left at the minimum: not eligible).
fn last_replica_standing(config: ControllerConfig) -> Cluster {
    let mut c = Cluster::with_brokers(config, &[1, 2, 3]);
    c.create("t", 1, 3, &[]);
    let bystanders = [4, 5, 6, 7];
    c.add_bystanders(&bystanders, 5_000);
    c.heartbeats(&[1, 2], 5_000);
    assert_eq!(c.tick(session + 1), "t-0 replicas=[1, 2, 3] isr=[1, 2] leader=1 epochs=0/1\nfence 3 epoch=2", "ISR at the minimum: no ELR");
    c.heartbeats(&[1], 10_000);
    c.heartbeats(&bystanders, 10_000);
    c
}

#[test]
fn a_last_isr_member_back_from_an_unclean_shutdown_is_not_elected() {
    let mut c = last_replica_standing(elr_config());
    let fenced = c.tick(5_000 + session + 1);
    assert_eq!(fenced, "t-0 replicas=[1, 2, 3] isr=[1] leader=1 elr=[2] epochs=0/2\nfence 2 epoch=1", "below the minimum: broker 2 is eligible");
    // Broker 1 loses power and registers again with no previous epoch: it leaves the ISR (even
    // as its last member) and does not enter the ELR; it is remembered as last known.
    let registered = c.reregister(1, false, 15_000);
    assert_eq!(registered, "register 1 epoch=20\nt-0 replicas=[1, 2, 3] isr=[] leader=-1 elr=[2] lke=[1] epochs=1/3");
    assert_eq!(c.heartbeat(1, 15_000), HeartbeatReply { fenced: false, caught_up: true });
    assert_eq!(c.tail(1), "unfence 1 epoch=20", "broker 1 may not lead: it may have lost acknowledged records");
    // Broker 2, which held every record below the high watermark, comes back: it leads alone.
    c.heartbeat(2, 16_000);
    assert_eq!(c.tail(2), "unfence 2 epoch=1\nt-0 replicas=[1, 2, 3] isr=[2] leader=2 lke=[1] epochs=2/4");
}

#[test]
fn without_elr_the_same_faults_elect_the_last_isr_member_again() {
    let config = ControllerConfig { min_insync_replicas: 2, ..ControllerConfig::default() };
    let mut c = last_replica_standing(config);
    assert_eq!(c.tick(5_000 + session + 1), "t-0 replicas=[1, 2, 3] isr=[1] leader=1 epochs=0/2\nfence 2 epoch=1");
    assert_eq!(c.reregister(1, false, 15_000), "register 1 epoch=20\nt-0 replicas=[1, 2, 3] isr=[1] leader=-1 epochs=1/3");
    c.heartbeat(1, 15_000);
    assert_eq!(c.tail(2), "unfence 1 epoch=20\nt-0 replicas=[1, 2, 3] isr=[1] leader=1 epochs=2/4", "whatever broker 1 lost is lost");
}

#[test]
fn a_clean_shutdown_keeps_the_broker_in_the_elr() {
    let mut c = last_replica_standing(elr_config());
    c.tick(5_000 + session + 1);
    assert_eq!(c.reregister(1, true, 15_000), "register 1 epoch=20\nt-0 replicas=[1, 2, 3] isr=[] leader=-1 elr=[1, 2] epochs=1/3");
    c.heartbeat(1, 15_000);
    assert_eq!(c.tail(2), "unfence 1 epoch=20\nt-0 replicas=[1, 2, 3] isr=[1] leader=1 elr=[2] epochs=2/4", "flushed before it stopped: elected from the ELR");
    // A previous epoch that is not the current registration's is unclean (a stale marker).
    let stale = c.ctl.register_broker(1, &[one()], 3, c.next_offset(), 16_000).unwrap();
    assert_eq!(c.commit(stale), "register 1 epoch=24\nt-0 replicas=[1, 2, 3] isr=[] leader=-1 elr=[2] lke=[1] epochs=3/5");
}

#[test]
fn alter_partition_below_the_minimum_fills_the_elr_and_back_at_it_clears_it() {
    let mut c = Cluster::with_brokers(elr_config(), &[1, 2, 3]);
    c.create("t", 1, 3, &[]);
    let commit = |c: &mut Cluster, isr: &[i32]| {
        let (_, records) = c.ctl.alter_partition(&c.alter(1, "t", isr)).expect("alters");
        c.commit(records)
    };
    assert_eq!(commit(&mut c, &[1, 2]), "t-0 replicas=[1, 2, 3] isr=[1, 2] leader=1 epochs=0/1");
    assert_eq!(commit(&mut c, &[1]), "t-0 replicas=[1, 2, 3] isr=[1] leader=1 elr=[2] epochs=0/2");
    assert_eq!(commit(&mut c, &[1, 3]), "t-0 replicas=[1, 2, 3] isr=[1, 3] leader=1 epochs=0/3", "at the minimum again: no ELR");
    // A topic's own min.insync.replicas is the threshold: with 1, nobody is ever in the ELR.
    c.create("u", 1, 3, &[("min.insync.replicas", "1")]);
    let (_, records) = c.ctl.alter_partition(&c.alter(2, "u", &[2])).expect("alters");
    assert_eq!(c.commit(records), "u-0 replicas=[2, 3, 1] isr=[2] leader=2 epochs=0/1");
}

#[test]
fn unclean_election_clears_the_elr() {
    let config = ControllerConfig { unclean_leader_election: true, ..elr_config() };
    let mut c = last_replica_standing(config);
    c.tick(5_000 + session + 1);
    c.reregister(1, false, 15_000);
    // Broker 3 (never in the ELR) comes back before broker 2: unclean election takes it.
    c.heartbeat(3, 15_000);
    assert_eq!(c.tail(2), "unfence 3 epoch=2\nt-0 replicas=[1, 2, 3] isr=[3] leader=3 epochs=2/4");
}

fn one() -> crate::metadata::records::Endpoint {
    crate::metadata::records::Endpoint { name: "PLAINTEXT".into(), host: "host".into(), port: 9092 }
}
