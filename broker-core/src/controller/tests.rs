//! The controller driven directly, no runtime: a [`Cluster`] plays the shell (commits each
//! decision's records through encode/decode into a log and applies them), and after every
//! commit checks that replaying the whole log gives the controller's image and that the image
//! keeps the controller's invariants.

use super::*;
use crate::kafka::Code;
use crate::metadata::topic::unclean_leader_election_config;

const session: u64 = broker_session_timeout_ms_default;

struct Cluster {
    ctl: Controller,
    log: Vec<MetadataRecord>,
}

impl Cluster {
    fn new(config: ControllerConfig) -> Cluster {
        Cluster { ctl: Controller::new(config, Image::default(), 0), log: Vec::new() }
    }

    /// Registers and unfences brokers `ids` at time 0.
    fn with_brokers(config: ControllerConfig, ids: &[i32]) -> Cluster {
        let mut c = Cluster::new(config);
        for &id in ids {
            c.register(id, 0);
        }
        for &id in ids {
            assert_eq!(c.heartbeat(id, 0), HeartbeatReply { fenced: false, caught_up: true });
        }
        c
    }

    fn next_offset(&self) -> i64 {
        self.log.len() as i64
    }

    /// What the shell does with a decision: append every record durably, then apply it.
    fn commit(&mut self, records: Vec<MetadataRecord>) -> String {
        for record in &records {
            let stored = MetadataRecord::decode(&record.encode()).expect("decodes");
            assert_eq!(&stored, record);
            let offset = self.next_offset();
            self.log.push(stored.clone());
            self.ctl.apply(offset, &stored);
        }
        self.check();
        render(&records)
    }

    fn check(&self) {
        let mut replayed = Image::default();
        for (offset, r) in (0..).zip(&self.log) {
            replayed.apply(offset, r);
        }
        assert_eq!(&replayed, self.ctl.image(), "replay differs from the controller's image");
        for (name, t) in &self.ctl.image().topics {
            for (p, part) in t.partitions.iter().enumerate() {
                let at = format!("{name}-{p}: {part:?}");
                assert!(part.leader == no_leader || self.ctl.image().is_live(part.leader), "fenced leader in {at}");
                assert!(part.leader == no_leader || part.isr.contains(&part.leader), "leader outside the ISR in {at}");
                let in_order: Vec<i32> = part.replicas.iter().copied().filter(|r| part.isr.contains(r)).collect();
                assert_eq!(in_order, part.isr, "ISR not a replica-ordered subset in {at}");
                assert!(part.isr.len() == 1 || part.isr.iter().all(|&r| self.ctl.image().is_live(r)), "fenced ISR member in {at}");
                let within = |list: &[i32]| list.iter().all(|r| part.replicas.contains(r));
                assert!(within(&part.adding) && within(&part.removing) && part.adding.iter().all(|r| !part.removing.contains(r)), "reassignment not within the replicas in {at}");
            }
        }
    }

    fn register(&mut self, id: i32, now: u64) -> String {
        let records = self.ctl.register(id, "host", 9092, self.next_offset(), now).expect("registers");
        self.commit(records)
    }

    /// Registers and unfences brokers `ids` at `now`. Added after the topics, they hold no
    /// replicas: they only keep a majority of the registered brokers heard, so that `tick` may
    /// fence the silent ones (check-quorum).
    fn add_bystanders(&mut self, ids: &[i32], now: u64) {
        for &id in ids {
            self.register(id, now);
        }
        self.heartbeats(ids, now);
    }

    fn heartbeats(&mut self, ids: &[i32], now: u64) {
        for &id in ids {
            self.heartbeat(id, now);
        }
    }

    fn epoch(&self, id: i32) -> i64 {
        self.ctl.image().brokers[&id].epoch
    }

    /// A heartbeat from a broker that has replayed everything committed.
    fn heartbeat(&mut self, id: i32, now: u64) -> HeartbeatReply {
        let caught_up_to = self.next_offset() - 1;
        let (reply, records) = self.ctl.heartbeat(id, self.epoch(id), caught_up_to, now).expect("heartbeat");
        self.commit(records);
        reply
    }

    fn create(&mut self, name: &str, partitions: i32, rf: i16, config: &[(&str, &str)]) -> String {
        let config = config.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let (_, records) = self.ctl.create_topic(name, partitions, rf, config, 100).expect("creates");
        self.commit(records)
    }

    fn tick(&mut self, now: u64) -> String {
        let records = self.ctl.tick(now);
        self.commit(records)
    }

    /// The last `n` committed records.
    fn tail(&self, n: usize) -> String {
        render(&self.log[self.log.len().saturating_sub(n)..])
    }

    fn part(&self, topic: &str, p: i32) -> PartitionInfo {
        self.ctl.image().partition(topic, p).expect("partition exists").clone()
    }

    fn alter(&self, broker_id: i32, topic: &str, new_isr: &[i32]) -> AlterPartition {
        let part = self.part(topic, 0);
        AlterPartition {
            broker_id,
            broker_epoch: self.epoch(broker_id),
            topic: topic.into(),
            partition: 0,
            leader_epoch: part.leader_epoch,
            partition_epoch: part.partition_epoch,
            new_isr: new_isr.to_vec(),
            new_isr_epochs: Vec::new(),
        }
    }
}

/// One line per record, for comparing whole record streams.
fn render(records: &[MetadataRecord]) -> String {
    let line = |r: &MetadataRecord| match r {
        MetadataRecord::RegisterBroker { id, epoch, .. } => format!("register {id} epoch={epoch}"),
        MetadataRecord::FenceBroker { id, epoch } => format!("fence {id} epoch={epoch}"),
        MetadataRecord::UnregisterBroker { id, epoch } => format!("unregister {id} epoch={epoch}"),
        MetadataRecord::UnfenceBroker { id, epoch } => format!("unfence {id} epoch={epoch}"),
        MetadataRecord::Topic { name, partitions, .. } => format!("topic {name} partitions={partitions}"),
        MetadataRecord::Partition { topic, partition, replicas, isr, leader, leader_epoch, partition_epoch, elr, last_known_elr, adding, removing } => {
            let mut elrs = String::new();
            if !adding.is_empty() || !removing.is_empty() {
                elrs += &format!(" adding={adding:?} removing={removing:?}");
            }
            if !elr.is_empty() {
                elrs += &format!(" elr={elr:?}");
            }
            if !last_known_elr.is_empty() {
                elrs += &format!(" lke={last_known_elr:?}");
            }
            format!("{topic}-{partition} replicas={replicas:?} isr={isr:?} leader={leader}{elrs} epochs={leader_epoch}/{partition_epoch}")
        }
        MetadataRecord::RemoveTopic { name } => format!("remove {name}"),
        MetadataRecord::TopicConfig { name, config } => format!("config {name} {config:?}"),
        MetadataRecord::LeaderChange { leader, epoch } => format!("leader change {leader} epoch={epoch}"),
        MetadataRecord::BrokerConfig { broker, config } => format!("broker config {broker} {config:?}"),
        MetadataRecord::GroupConfig { group, config } => format!("group config {group} {config:?}"),
        MetadataRecord::ClientQuota { entity, key, value } => format!("quota {:?} {key}={:?}", entity.parts(), value.map(|v| v.0)),
        MetadataRecord::ScramCredential { user, credential } => format!("scram {user} {}", credential.mechanism.name()),
        MetadataRecord::RemoveScramCredential { user, mechanism } => format!("remove scram {user} {}", mechanism.name()),
        MetadataRecord::Acl { acl } => format!("acl {acl:?}"),
        MetadataRecord::RemoveAcl { acl } => format!("remove acl {acl:?}"),
    };
    records.iter().map(line).collect::<Vec<_>>().join("\n")
}

fn lines(text: &str) -> String {
    text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("\n")
}

#[test]
fn leader_session_expires_then_returns_as_a_follower() {
    let mut c = Cluster::new(ControllerConfig::default());
    assert_eq!(c.register(1, 0), "register 1 epoch=0");
    c.register(2, 0);
    c.register(3, 0);
    assert_eq!(c.ctl.image().live_brokers().count(), 0, "registered brokers start fenced");
    for id in [1, 2, 3] {
        c.heartbeat(id, 0);
    }
    assert_eq!(render(&c.log[3..]), "unfence 1 epoch=0\nunfence 2 epoch=1\nunfence 3 epoch=2");
    let created = c.create("t", 3, 3, &[]);
    let expected = "topic t partitions=3
        t-0 replicas=[1, 2, 3] isr=[1, 2, 3] leader=1 epochs=0/0
        t-1 replicas=[2, 3, 1] isr=[2, 3, 1] leader=2 epochs=0/0
        t-2 replicas=[3, 1, 2] isr=[3, 1, 2] leader=3 epochs=0/0";
    assert_eq!(created, lines(expected));

    // Brokers 2 and 3 keep heartbeating; broker 1 goes silent after time 0.
    c.heartbeat(2, 5_000);
    c.heartbeat(3, 5_000);
    assert_eq!(c.ctl.next_deadline(), Some(session + 1));
    assert_eq!(c.tick(session), "", "the session lasts session_timeout_ms inclusive");
    let fenced = c.tick(session + 1);
    let expected = "t-0 replicas=[1, 2, 3] isr=[2, 3] leader=2 epochs=1/1
        t-1 replicas=[2, 3, 1] isr=[2, 3] leader=2 epochs=0/1
        t-2 replicas=[3, 1, 2] isr=[3, 2] leader=3 epochs=0/1
        fence 1 epoch=0";
    assert_eq!(fenced, lines(expected));
    assert_eq!(c.ctl.next_deadline(), Some(5_000 + session + 1));

    // Broker 1 comes back with the same registration: unfenced, but it leads nothing, since
    // no partition is leaderless; its leaders will add it to their ISRs when it catches up.
    assert_eq!(c.heartbeat(1, 12_000), HeartbeatReply { fenced: false, caught_up: true });
    assert_eq!(c.tail(1), "unfence 1 epoch=0");
    assert_eq!(c.part("t", 0).leader, 2);
}

#[test]
fn brokers_expiring_together_hand_leadership_straight_to_a_live_one() {
    let mut c = Cluster::with_brokers(ControllerConfig::default(), &[1, 2, 3]);
    c.create("t", 1, 3, &[]);
    c.add_bystanders(&[4, 5], 5_000);
    c.heartbeat(3, 5_000);
    let fenced = c.tick(session + 1);
    let expected = "t-0 replicas=[1, 2, 3] isr=[3] leader=3 epochs=1/1
        fence 1 epoch=0
        fence 2 epoch=1";
    assert_eq!(fenced, lines(expected), "broker 2 never leads: it is being fenced too");
}

#[test]
fn the_last_isr_member_stays_and_leads_again_when_it_returns() {
    let mut c = Cluster::with_brokers(ControllerConfig::default(), &[1, 2, 3]);
    c.create("t", 1, 3, &[]);
    // Four bystanders keep a majority of the seven heard even once 1, 2 and 3 are all silent.
    let bystanders = [4, 5, 6, 7];
    c.add_bystanders(&bystanders, 5_000);
    c.heartbeat(3, 5_000);
    assert_eq!(c.tick(session + 1), "t-0 replicas=[1, 2, 3] isr=[3] leader=3 epochs=1/1\nfence 1 epoch=0\nfence 2 epoch=1");
    c.heartbeats(&bystanders, 10_000);
    assert_eq!(c.tick(5_000 + session + 1), "t-0 replicas=[1, 2, 3] isr=[3] leader=-1 epochs=2/2\nfence 3 epoch=2");
    // Broker 1 is back, but it is not in the ISR and unclean election is off: still offline.
    c.heartbeat(1, 20_000);
    assert_eq!(c.tail(1), "unfence 1 epoch=0");
    assert_eq!(c.part("t", 0).leader, no_leader);
    // The last ISR member is back: it holds every committed record, so it leads.
    c.heartbeat(3, 20_000);
    assert_eq!(c.tail(2), "unfence 3 epoch=2\nt-0 replicas=[1, 2, 3] isr=[3] leader=3 epochs=3/3");
}

#[test]
fn a_reregistered_broker_is_fenced_until_it_catches_up() {
    let mut c = Cluster::with_brokers(ControllerConfig::default(), &[1, 2, 3]);
    c.create("t", 2, 2, &[]);
    let offset = c.next_offset();
    let records = c.ctl.register(2, "host", 9092, offset, 1_000).unwrap();
    let expected = format!(
        "register 2 epoch={offset}
        t-0 replicas=[1, 2] isr=[1] leader=1 epochs=0/1
        t-1 replicas=[2, 3] isr=[3] leader=3 epochs=1/1"
    );
    assert_eq!(c.commit(records), lines(&expected));
    let stale = c.ctl.heartbeat(2, 1, offset, 1_000).unwrap_err();
    assert_eq!((stale.kafka_error(), stale.clone()), (Code::StaleBrokerEpoch, Error::StaleBrokerEpoch { id: 2, given: 1, current: offset }));
    let (reply, records) = c.ctl.heartbeat(2, offset, offset - 1, 1_500).unwrap();
    assert_eq!((reply, records), (HeartbeatReply { fenced: true, caught_up: false }, vec![]));
    let (reply, records) = c.ctl.heartbeat(2, offset, offset, 2_000).unwrap();
    assert_eq!(reply, HeartbeatReply { fenced: false, caught_up: true });
    assert_eq!(c.commit(records), format!("unfence 2 epoch={offset}"));
    let unknown = c.ctl.heartbeat(9, 0, 0, 2_000).unwrap_err();
    assert_eq!((unknown.kafka_error(), unknown), (Code::StaleBrokerEpoch, Error::UnknownBroker(9)));
}

#[test]
fn a_reregistered_last_isr_member_leads_again_once_caught_up() {
    let mut c = Cluster::with_brokers(ControllerConfig::default(), &[1]);
    c.create("t", 1, 1, &[]);
    let offset = c.next_offset();
    assert_eq!(c.register(1, 1_000), format!("register 1 epoch={offset}\nt-0 replicas=[1] isr=[1] leader=-1 epochs=1/1"));
    c.heartbeat(1, 1_000);
    assert_eq!(c.tail(2), format!("unfence 1 epoch={offset}\nt-0 replicas=[1] isr=[1] leader=1 epochs=2/2"));
}

#[test]
fn registration_is_checked() {
    let mut c = Cluster::new(ControllerConfig::default());
    let long = "h".repeat(broker_host_bytes_max + 1);
    for (id, host, port, next) in [(-1, "h", 1, 0), (1, "", 1, 0), (1, long.as_str(), 1, 0), (1, "h", -1, 0), (1, "h", 65_536, 0)] {
        assert_eq!(c.ctl.register(id, host, port, next, 0).unwrap_err().kafka_error(), Code::InvalidRequest, "{id} {host} {port}");
    }
    c.register(1, 0);
    let err = c.ctl.register(2, "h", 1, 0, 0).unwrap_err();
    assert!(err.to_string().contains("not after the last applied 0"), "{err}");
}

#[test]
fn alter_partition_refuses_in_kafkas_order_and_bumps_the_partition_epoch() {
    let mut c = Cluster::with_brokers(ControllerConfig::default(), &[1, 2, 3, 4]);
    c.create("t", 1, 3, &[]);
    let ok = c.alter(1, "t", &[1, 2, 3]);
    let cases: Vec<(AlterPartition, Code)> = vec![
        (AlterPartition { broker_epoch: 99, ..ok.clone() }, Code::StaleBrokerEpoch),
        (AlterPartition { broker_id: 9, ..ok.clone() }, Code::StaleBrokerEpoch),
        (AlterPartition { topic: "nope".into(), ..ok.clone() }, Code::UnknownTopicOrPartition),
        (AlterPartition { partition: 1, ..ok.clone() }, Code::UnknownTopicOrPartition),
        (AlterPartition { partition: -1, ..ok.clone() }, Code::UnknownTopicOrPartition),
        (AlterPartition { leader_epoch: 1, ..ok.clone() }, Code::NotController),
        (AlterPartition { partition_epoch: 1, ..ok.clone() }, Code::NotController),
        (AlterPartition { broker_id: 2, broker_epoch: c.epoch(2), ..ok.clone() }, Code::InvalidRequest),
        (AlterPartition { new_isr: vec![], ..ok.clone() }, Code::InvalidRequest),
        (AlterPartition { new_isr: vec![2, 3], ..ok.clone() }, Code::InvalidRequest),
        (AlterPartition { new_isr: vec![1, 4], ..ok.clone() }, Code::InvalidRequest),
        (AlterPartition { new_isr: vec![1, 1, 2], ..ok.clone() }, Code::InvalidRequest),
    ];
    for (req, code) in cases {
        assert_eq!(c.ctl.alter_partition(&req).map(|_| ()).map_err(|e| e.kafka_error()), Err(code), "{req:?}");
    }
    // Unchanged ISR: the current state, nothing to commit.
    assert_eq!(c.ctl.alter_partition(&ok), Ok((c.part("t", 0), vec![])));
    // Shrink, named in any order: stored in replica order, leader and leader epoch kept.
    let (state, records) = c.ctl.alter_partition(&AlterPartition { new_isr: vec![3, 1], ..ok.clone() }).unwrap();
    assert_eq!(c.commit(records), "t-0 replicas=[1, 2, 3] isr=[1, 3] leader=1 epochs=0/1");
    assert_eq!(state, c.part("t", 0));
    let old = c.ctl.alter_partition(&ok).unwrap_err();
    assert_eq!((old.kafka_error(), old), (Code::InvalidUpdateVersion, Error::InvalidUpdateVersion { given: 0, current: 1 }));

    // Broker 2 is fenced: the leader may not add it back.
    for id in [1, 3, 4] {
        c.heartbeat(id, 5_000);
    }
    c.tick(session + 1);
    let expand = c.alter(1, "t", &[1, 2, 3]);
    assert_eq!(c.ctl.alter_partition(&expand).unwrap_err().kafka_error(), Code::IneligibleReplica);
    c.heartbeat(2, session + 2);
    let (_, records) = c.ctl.alter_partition(&expand).unwrap();
    assert_eq!(c.commit(records), "t-0 replicas=[1, 2, 3] isr=[1, 2, 3] leader=1 epochs=0/2");

    // A deposed leader's epoch is older.
    for id in [2, 3, 4] {
        c.heartbeat(id, 10_000);
    }
    assert_eq!(c.tick(5_000 + session + 1), "t-0 replicas=[1, 2, 3] isr=[2, 3] leader=2 epochs=1/3\nfence 1 epoch=0");
    let err = c.ctl.alter_partition(&AlterPartition { broker_epoch: c.epoch(1), ..expand }).unwrap_err();
    assert_eq!((err.kafka_error(), err), (Code::FencedLeaderEpoch, Error::FencedLeaderEpoch { given: 0, current: 1 }));
}

#[test]
fn alter_partition_refuses_an_unregistered_member() {
    let mut c = Cluster::with_brokers(ControllerConfig::default(), &[1]);
    c.create("t", 1, 1, &[]);
    // A replica list naming broker 7, which never registered (as if assigned by hand).
    let state = MetadataRecord::Partition { topic: "t".into(), partition: 0, replicas: vec![1, 7], isr: vec![1], leader: 1, leader_epoch: 0, partition_epoch: 1, elr: vec![], last_known_elr: vec![], adding: vec![], removing: vec![] };
    c.commit(vec![state]);
    let err = c.ctl.alter_partition(&c.alter(1, "t", &[1, 7])).unwrap_err();
    assert_eq!(err.kafka_error(), Code::IneligibleReplica);
    assert!(err.to_string().contains("broker 7"), "{err}");
}

/// KIP-903: an expansion naming a member at the broker epoch its progress was made in is
/// refused once that broker has registered again (its log may have restarted shorter), and
/// taken when it names the current registration; v2 requests (no epochs) are not checked.
#[test]
fn alter_partition_refuses_a_member_named_at_an_older_registration() {
    let mut c = Cluster::with_brokers(ControllerConfig::default(), &[1, 2, 3]);
    c.create("t", 1, 3, &[]);
    let (_, records) = c.ctl.alter_partition(&c.alter(1, "t", &[1, 3])).unwrap();
    c.commit(records);
    let before = c.epoch(2);
    c.register(2, 1_000);
    c.heartbeat(2, 1_000);
    assert!(c.epoch(2) > before, "re-registration gives a new epoch");
    let stale = AlterPartition { new_isr_epochs: vec![-1, before, c.epoch(3)], ..c.alter(1, "t", &[1, 2, 3]) };
    let err = c.ctl.alter_partition(&stale).unwrap_err();
    assert_eq!(err.kafka_error(), Code::IneligibleReplica);
    assert!(err.to_string().contains("broker 2") && err.to_string().contains("registered again"), "{err}");
    let current = AlterPartition { new_isr_epochs: vec![-1, c.epoch(2), c.epoch(3)], ..stale.clone() };
    let (_, records) = c.ctl.alter_partition(&current).unwrap();
    assert_eq!(c.commit(records), "t-0 replicas=[1, 2, 3] isr=[1, 2, 3] leader=1 epochs=0/2");
}

#[test]
fn unclean_election_only_where_enabled() {
    let mut c = Cluster::with_brokers(ControllerConfig::default(), &[1, 2, 3]);
    c.create("clean", 1, 3, &[]);
    c.create("dirty", 1, 3, &[(unclean_leader_election_config, "TRUE")]);
    // Each leader has dropped its lagging followers from the ISR.
    for (topic, leader) in [("clean", 1), ("dirty", 2)] {
        let (_, records) = c.ctl.alter_partition(&c.alter(leader, topic, &[leader])).unwrap();
        c.commit(records);
    }
    // Four bystanders keep a majority of the seven heard even once 1, 2 and 3 are all silent.
    let bystanders = [4, 5, 6, 7];
    c.add_bystanders(&bystanders, 5_000);
    c.heartbeat(3, 5_000);
    let expected = "clean-0 replicas=[1, 2, 3] isr=[1] leader=-1 epochs=1/2
        dirty-0 replicas=[2, 3, 1] isr=[3] leader=3 epochs=1/2
        fence 1 epoch=0
        fence 2 epoch=1";
    assert_eq!(c.tick(session + 1), lines(expected));
    // With every replica fenced, even unclean election has nobody.
    c.heartbeats(&bystanders, 10_000);
    assert_eq!(c.tick(5_000 + session + 1), "dirty-0 replicas=[2, 3, 1] isr=[3] leader=-1 epochs=2/3\nfence 3 epoch=2");
    // Broker 1 returns: the clean partition's last ISR member, a mere replica of the dirty one.
    c.heartbeat(1, 20_000);
    let expected = "unfence 1 epoch=0
        clean-0 replicas=[1, 2, 3] isr=[1] leader=1 epochs=2/3
        dirty-0 replicas=[2, 3, 1] isr=[1] leader=1 epochs=3/4";
    assert_eq!(c.tail(3), lines(expected));
}

#[test]
fn unclean_election_follows_the_cluster_default_unless_the_topic_overrides_it() {
    let config = ControllerConfig { unclean_leader_election: true, ..ControllerConfig::default() };
    let mut c = Cluster::with_brokers(config, &[1, 2, 3]);
    c.create("on", 1, 3, &[]);
    c.create("off", 1, 3, &[(unclean_leader_election_config, " false ")]);
    for (topic, leader) in [("on", 1), ("off", 2)] {
        let (_, records) = c.ctl.alter_partition(&c.alter(leader, topic, &[leader])).unwrap();
        c.commit(records);
    }
    c.add_bystanders(&[4, 5], 5_000);
    c.heartbeat(3, 5_000);
    c.tick(session + 1);
    assert_eq!((c.part("on", 0).leader, c.part("off", 0).leader), (3, no_leader));
}

#[test]
fn assignment_uses_live_brokers_by_id_and_rotates_by_topic_count() {
    let mut c = Cluster::with_brokers(ControllerConfig::default(), &[30, 10, 40, 20]);
    c.register(50, 0); // registered, never unfenced: gets nothing
    let a = c.create("a", 5, 3, &[]);
    let expected = "topic a partitions=5
        a-0 replicas=[10, 20, 30] isr=[10, 20, 30] leader=10 epochs=0/0
        a-1 replicas=[20, 30, 40] isr=[20, 30, 40] leader=20 epochs=0/0
        a-2 replicas=[30, 40, 10] isr=[30, 40, 10] leader=30 epochs=0/0
        a-3 replicas=[40, 10, 20] isr=[40, 10, 20] leader=40 epochs=0/0
        a-4 replicas=[10, 20, 30] isr=[10, 20, 30] leader=10 epochs=0/0";
    assert_eq!(a, lines(expected));
    assert_eq!(c.create("b", 1, 2, &[]), "topic b partitions=1\nb-0 replicas=[20, 30] isr=[20, 30] leader=20 epochs=0/0");

    // The same calls give the same records, topic ids included.
    let twin = Cluster::with_brokers(ControllerConfig::default(), &[30, 10, 40, 20]);
    let ours = Cluster::with_brokers(ControllerConfig::default(), &[30, 10, 40, 20]);
    let decide = |c: &Cluster| c.ctl.create_topic("x", 4, 2, BTreeMap::new(), 7).unwrap();
    assert_eq!(decide(&twin), decide(&ours));
    assert_ne!(decide(&twin).0, c.ctl.create_topic("x", 4, 2, BTreeMap::new(), 7).unwrap().0, "the metadata offset is in the id");
}

#[test]
fn create_topic_is_validated_like_kafka() {
    let mut c = Cluster::with_brokers(ControllerConfig::default(), &[1, 2, 3]);
    c.create("t", 1, 1, &[]);
    let none = BTreeMap::new();
    let cases: Vec<(&str, i32, i16, Vec<(&str, &str)>, Code)> = vec![
        ("", 1, 1, vec![], Code::InvalidTopicException),
        ("bad/name", 1, 1, vec![], Code::InvalidTopicException),
        ("t", 1, 1, vec![], Code::TopicAlreadyExists),
        ("n", 0, 1, vec![], Code::InvalidPartitions),
        ("n", -2, 1, vec![], Code::InvalidPartitions),
        ("n", partitions_per_topic_max + 1, 1, vec![], Code::InvalidPartitions),
        ("n", 1, 0, vec![], Code::InvalidReplicationFactor),
        ("n", 1, -2, vec![], Code::InvalidReplicationFactor),
        ("n", 1, 4, vec![], Code::InvalidReplicationFactor),
        ("n", 1, 1, vec![("segment.bytes", "ten")], Code::InvalidConfig),
        ("n", 1, 1, vec![("compression.typo", "x")], Code::InvalidConfig),
        ("n", 1, 1, vec![(unclean_leader_election_config, "yes")], Code::InvalidConfig),
    ];
    for (name, partitions, rf, config, code) in cases {
        let config = config.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let err = c.ctl.create_topic(name, partitions, rf, config, 0).unwrap_err();
        assert_eq!(err.kafka_error(), code, "{name} {partitions} {rf}: {err}");
    }
    let err = c.ctl.create_topic("n", 1, 4, none.clone(), 0).unwrap_err();
    assert!(err.to_string().contains("3 live"), "{err}");
    // Defaults, and Kafka's leniency about min.insync.replicas above the replication factor.
    let (_, records) = c.ctl.create_topic("n", -1, -1, none, 0).unwrap();
    assert_eq!(records.len(), 2);
    c.create("m", 1, 3, &[("min.insync.replicas", "5"), ("retention.ms", "1000")]);
    assert_eq!(c.ctl.image().topics["m"].config.len(), 2);
}

#[test]
fn deleted_topics_are_gone_and_come_back_with_a_new_id() {
    let mut c = Cluster::with_brokers(ControllerConfig::default(), &[1]);
    assert_eq!(c.ctl.delete_topic("t").unwrap_err().kafka_error(), Code::UnknownTopicOrPartition);
    c.create("t", 2, 1, &[]);
    let first = c.ctl.image().topics["t"].id;
    assert_eq!(c.commit(c.ctl.delete_topic("t").unwrap()), "remove t");
    assert!(c.ctl.image().partition("t", 0).is_none());
    c.create("t", 1, 1, &[]);
    assert_ne!(c.ctl.image().topics["t"].id, first);
}

#[test]
fn a_new_controller_gives_every_broker_a_fresh_session() {
    let mut c = Cluster::with_brokers(ControllerConfig::default(), &[1, 2]);
    c.create("t", 1, 2, &[]);
    let bystanders = [3, 4, 5];
    c.add_bystanders(&bystanders, 0);
    // Every session, long expired at the old controller, starts again at the new one's start.
    let mut c = restarted(c, 100_000);
    assert_eq!(c.ctl.next_deadline(), Some(100_000 + session + 1));
    assert_eq!(c.tick(100_000 + session), "");
    // The bystanders speak to the new controller, so a majority is heard when 1 and 2 expire.
    c.heartbeats(&bystanders, 101_000);
    assert_eq!(c.tick(100_000 + session + 1), "t-0 replicas=[1, 2] isr=[2] leader=-1 epochs=1/1\nfence 1 epoch=0\nfence 2 epoch=1");
    let quiet = ControllerConfig { auto_leader_rebalance: false, ..ControllerConfig::default() };
    assert_eq!(Controller::new(quiet, Image::default(), 0).next_deadline(), None);
    let rebalancing = ControllerConfig::default();
    assert_eq!(Controller::new(rebalancing, Image::default(), 7).next_deadline(), Some(7 + crate::constants::leader_imbalance_check_interval_ms_default));
}

#[test]
fn hostile_values_refuse_or_saturate_without_panicking() {
    let mut c = Cluster::with_brokers(ControllerConfig { auto_leader_rebalance: false, ..ControllerConfig::default() }, &[1, 2]);
    c.create("t", 1, 2, &[]);
    let at_limit = MetadataRecord::Partition { topic: "t".into(), partition: 0, replicas: vec![1, 2], isr: vec![1, 2], leader: 1, leader_epoch: i32::MAX, partition_epoch: i32::MAX, elr: vec![], last_known_elr: vec![], adding: vec![], removing: vec![] };
    c.commit(vec![at_limit]);
    c.add_bystanders(&[3], 0);
    c.heartbeats(&[2, 3], u64::MAX - 1);
    assert_eq!(c.tick(u64::MAX), format!("t-0 replicas=[1, 2] isr=[2] leader=2 epochs={0}/{0}\nfence 1 epoch=0", i32::MAX));
    assert_eq!(c.ctl.next_deadline(), Some(u64::MAX));
    assert!(c.ctl.heartbeat(2, i64::MIN, i64::MAX, 0).is_err());
    assert!(c.ctl.create_topic("u", i32::MIN, i16::MIN, BTreeMap::new(), u64::MAX).is_err());
    let req = AlterPartition { broker_id: i32::MIN, broker_epoch: i64::MAX, topic: String::new(), partition: i32::MIN, leader_epoch: i32::MIN, partition_epoch: i32::MIN, new_isr: vec![i32::MIN; 3], new_isr_epochs: vec![i64::MIN; 3] };
    assert!(c.ctl.alter_partition(&req).is_err());
}

/// A new controller over the image replayed from `c`'s log, as the shell starts one at `now`.
fn restarted(c: Cluster, now: u64) -> Cluster {
    let mut image = Image::default();
    for (offset, r) in (0..).zip(&c.log) {
        image.apply(offset, r);
    }
    Cluster { ctl: Controller::new(ControllerConfig::default(), image, now), log: c.log }
}

mod configs;
mod elr;
mod quorum;
mod reassign;
mod rebalance;
mod sessions;
mod snapshots;
