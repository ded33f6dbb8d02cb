//! Replication between brokers, no network: a real controller and two or three [`Broker`]s on
//! real files, every committed metadata record applied to each broker in order, and each
//! follower's replica fetcher played by direct calls — OffsetForLeaderEpoch and truncation
//! while one is due, else one Fetch at its log end and the append — as `server::peers` does
//! over the wire. Leadership changes are Partition records written here (the controller makes
//! them by fencing; only the records matter to a broker).

use super::*;
use crate::kafka::Code;
use crate::log::batch;
use crate::metadata::MetadataRecord;
use crate::replication::IsrProposal;
use bytes::Bytes;
use crate::controller::{Controller, ControllerConfig};
use crate::metadata::{no_leader, topic};
use crate::storage::FileDisk;

/// Every test replicates this one partition, `t-0`.
const topic_name: &str = "t";

struct Cluster {
    _dir: tempfile::TempDir,
    ctl: Controller,
    /// Offset of the next committed metadata record.
    next: i64,
    brokers: BTreeMap<i32, Broker>,
    /// The time every call is made at.
    now: u64,
    /// What the leaders' fetch handling asked of the shell, since [`Cluster::woke`].
    actions: Vec<Action>,
}

/// One round of a follower's replica fetcher.
#[derive(Debug, PartialEq, Eq)]
enum Round {
    /// Epoch truncation was due; the log now ends here.
    Truncated(i64),
    /// A Fetch at the log end; these are the bytes the leader returned.
    Fetched(Bytes),
}

impl Cluster {
    /// Brokers `ids`, each registered with the controller, caught up and unfenced.
    fn new(ids: &[i32]) -> Cluster {
        Cluster::on_disks(ids, |_| Arc::new(FileDisk::new()))
    }

    /// [`Cluster::new`], broker `id` on the disk `disk(id)`.
    fn on_disks(ids: &[i32], disk: impl Fn(i32) -> Arc<dyn crate::storage::Disk>) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let mut brokers = BTreeMap::new();
        for &id in ids {
            let config = BrokerConfig { node_id: id, ..crate::testing::config(&dir.path().join(id.to_string())) };
            brokers.insert(id, Broker::open(disk(id), config, 0).unwrap());
        }
        let mut c = Cluster { _dir: dir, ctl: Controller::new(ControllerConfig::default(), Image::default(), 0), next: 0, brokers, now: 0, actions: Vec::new() };
        for &id in ids {
            let epoch = c.next;
            let records = c.ctl.register(id, "host", 9092, epoch, 0).unwrap();
            let registered = c.broker(id).registered(epoch, 0);
            crate::testing::run_syncs(c.broker(id), registered, 0);
            c.commit(records);
        }
        for &id in ids {
            let epoch = c.ctl.image().brokers[&id].epoch;
            let (reply, records) = c.ctl.heartbeat(id, epoch, c.next - 1, 0).unwrap();
            assert!(!reply.fenced);
            c.commit(records);
        }
        c
    }

    /// Commits `records` and applies each to the controller and to every broker, in order.
    fn commit(&mut self, records: Vec<MetadataRecord>) {
        for r in records {
            self.ctl.apply(self.next, &r);
            for b in self.brokers.values_mut() {
                let applied = b.apply_metadata(self.next, &r, self.now);
                crate::testing::run_syncs(b, applied, self.now);
            }
            self.next += 1;
        }
    }

    /// Creates `t` with one partition on the first `rf` brokers, the first leading.
    fn create(&mut self, rf: i16) {
        let (_, records) = self.ctl.create_topic(topic_name, 1, rf, BTreeMap::new(), self.now).unwrap();
        self.commit(records);
    }

    /// A new leadership of `t-0`: `leader` under the next leader epoch, with `isr`.
    fn elect(&mut self, leader: i32, isr: &[i32]) {
        let p = self.ctl.image().partition(topic_name, 0).unwrap().clone();
        let (leader_epoch, partition_epoch) = (p.leader_epoch + 1, p.partition_epoch + 1);
        self.commit(vec![MetadataRecord::Partition { topic: topic_name.into(), partition: 0, replicas: p.replicas, isr: isr.to_vec(), leader, leader_epoch, partition_epoch, elr: vec![], last_known_elr: vec![], adding: vec![], removing: vec![] }]);
    }

    fn broker(&mut self, id: i32) -> &mut Broker {
        self.brokers.get_mut(&id).expect("a broker of this cluster")
    }

    fn part(&self, id: i32) -> &Partition {
        &self.brokers[&id].partitions()[(topic_name, 0)]
    }

    fn hw(&self, id: i32) -> i64 {
        self.part(id).high_watermark()
    }

    fn leo(&self, id: i32) -> i64 {
        self.part(id).log.log_end_offset()
    }

    /// Broker `id`'s whole log of `t-0`, as stored.
    fn log(&self, id: i32) -> Bytes {
        let log = &self.part(id).log;
        log.read(log.log_start_offset(), 1 << 20, log.log_end_offset()).unwrap().bytes
    }

    /// (base offset, leader epoch) of each batch in broker `id`'s log: a readable summary of
    /// [`Cluster::log`] for assertion messages.
    fn batches(&self, id: i32) -> Vec<(i64, i32)> {
        batch::whole_batches(&self.log(id)).unwrap().iter().map(|h| (h.base_offset, h.leader_epoch)).collect()
    }

    /// Asserts that `follower`'s log is byte for byte the leader's.
    fn assert_same_log(&self, follower: i32, leader: i32) {
        assert_eq!(self.batches(follower), self.batches(leader), "batches (offset, epoch) of {follower} and {leader}");
        assert_eq!(self.log(follower), self.log(leader), "bytes of {follower} and {leader}");
    }

    /// An acks=all produce of one batch of `values` at the leader `id`.
    fn produce(&mut self, id: i32, values: &[&[u8]]) -> Produced {
        let now = self.now;
        self.broker(id).produce(topic_name, 0, &build(values, 1_000), -1, now, &mut Vec::new()).unwrap()
    }

    fn replicated(&mut self, id: i32, produced: &Produced) -> Result<bool, Code> {
        self.broker(id).replicated(topic_name, 0, produced).map_err(|e| e.kafka_error(true))
    }

    /// One round of `follower`'s replica fetcher (the one `server::peers` runs), the leader
    /// answering by direct calls: what happened to `t-0`.
    fn round(&mut self, follower: i32) -> Round {
        let now = self.now;
        let leader = self.brokers[&follower].image().partition(topic_name, 0).unwrap().leader;
        let mut fetcher = ReplicaFetcher::new(leader);
        let mut out = Vec::new();
        let step = fetcher.next(self.broker(follower), now, &mut out);
        let mut fetched = Bytes::new();
        match step {
            Step::Idle => panic!("{follower} follows nothing from {leader}"),
            Step::Truncate(ask) => {
                for (f, latest) in ask {
                    let answer = self.broker(leader).end_offset_for_epoch(&f.topic, f.partition, latest, f.leader_epoch).map_err(|e| e.kafka_error(true));
                    fetcher.on_epoch_answer(self.broker(follower), &f, answer, now, &mut out);
                }
                // The truncations' jobs, run and reported as the shell does before the next round.
                let out = self.run_truncations(follower, out);
                assert!(out.iter().all(|a| !matches!(a, Action::Log(Level::Error, _))), "{out:?}");
                return Round::Truncated(self.leo(follower));
            }
            Step::Fetch(following) => {
                for f in following {
                    let who = Fetcher { replica: Some(follower), leader_epoch: f.leader_epoch, log_start_offset: f.log_start_offset, again: false, read_committed: false, broker_epoch: -1 };
                    let mut woke = Vec::new();
                    let got = self.broker(leader).fetch(&f.topic, f.partition, f.fetch_offset, 1 << 20, true, who, now, &mut woke).unwrap();
                    self.actions.extend(woke);
                    let records = got.records.to_bytes().unwrap();
                    let answer = FetchAnswer { error: None, records: &records, high_watermark: got.high_watermark, log_start_offset: got.log_start_offset };
                    fetcher.on_fetch_answer(self.broker(follower), &f, answer, now, &mut out);
                    if &*f.topic == topic_name && f.partition == 0 {
                        fetched = records;
                    }
                }
            }
        }
        let out = self.run_truncations(follower, out);
        assert!(out.iter().all(|a| !matches!(a, Action::Log(Level::Error, _))), "{out:?}");
        Round::Fetched(fetched)
    }

    /// Runs the truncations' jobs among `out` on `follower` and reports them back, as the shell
    /// does off the node's gate; returns the other actions and the reports'.
    fn run_truncations(&mut self, follower: i32, out: Vec<Action>) -> Vec<Action> {
        let now = self.now;
        let mut rest = Vec::new();
        for action in out {
            match action {
                Action::Truncate { topic, partition, job } => rest.extend(self.broker(follower).truncated(&topic, partition, job.run(), now)),
                other => rest.push(other),
            }
        }
        rest
    }

    /// Whether a leader asked to wake waiting requests since the last call.
    fn woke(&mut self) -> bool {
        std::mem::take(&mut self.actions).contains(&Action::Wake)
    }

    /// Rounds until a fetch returns nothing: `follower` holds the leader's whole log, and its
    /// last fetch told the leader so.
    fn catch_up(&mut self, follower: i32) {
        for _ in 0..10 {
            if self.round(follower) == Round::Fetched(Bytes::new()) {
                return;
            }
        }
        panic!("broker {follower} did not catch up in 10 rounds");
    }
}

#[test]
fn followers_copy_the_leader_and_the_high_watermark_waits_for_the_whole_isr() {
    // Why: a record is committed (acks=all answered, visible to consumers) only once every
    // ISR member holds it; any of them may be the next leader.
    let mut c = Cluster::new(&[1, 2, 3]);
    c.create(3);
    let first = c.produce(1, &[b"a", b"b"]);
    assert_eq!(c.round(2), Round::Truncated(0), "a new follower truncates first (nothing to cut)");
    assert_eq!(c.round(3), Round::Truncated(0));
    let Round::Fetched(sent) = c.round(3) else { panic!("a fetch was due") };
    assert_eq!(c.log(3), sent, "the follower stores exactly what the leader returned");
    c.assert_same_log(3, 1);
    let second = c.produce(1, &[b"c"]);
    c.catch_up(2);
    assert_eq!(c.hw(1), 0, "broker 3 holds the first batch but has not fetched past it yet");
    assert_eq!(c.replicated(1, &first), Ok(false));
    c.woke();
    c.round(3);
    assert_eq!(c.hw(1), 2, "every ISR member is past the first batch, not the second");
    assert_eq!((c.replicated(1, &first), c.replicated(1, &second)), (Ok(true), Ok(false)));
    assert!(c.woke(), "producers waiting on acks=all are woken");
    c.round(3);
    assert_eq!((c.hw(1), c.replicated(1, &second)), (3, Ok(true)));
    c.assert_same_log(2, 1);
    c.assert_same_log(3, 1);
    // Followers learn the mark on their next fetch.
    assert_eq!((c.hw(2), c.hw(3)), (0, 3));
    c.round(2);
    assert_eq!(c.hw(2), 3);
}

#[test]
fn an_acks_all_wait_ends_with_not_leader_when_its_leadership_ends() {
    // Why: after a leader change the batch may be truncated away by the new leader; only
    // the leadership it was appended under can vouch for it (Kafka answers 6, and an
    // idempotent retry is deduplicated).
    let mut c = Cluster::new(&[1, 2, 3]);
    c.create(3);
    let waiting = c.produce(1, &[b"a"]);
    c.elect(2, &[2, 3]);
    assert_eq!(c.replicated(1, &waiting), Err(Code::NotLeaderOrFollower), "now a follower");
    // Leading again under a newer epoch, with the batch still in its log, is no better.
    c.elect(1, &[1, 2, 3]);
    assert_eq!(c.leo(1), 1);
    assert_eq!(c.replicated(1, &waiting), Err(Code::NotLeaderOrFollower));
}

#[test]
fn a_broker_takes_no_role_until_its_own_registration_is_applied() {
    // Why: a restarted broker replays a metadata log that still names it leader under its
    // previous registration; it may have lost unflushed records since, so it neither leads
    // nor follows (reporting progress) until the controller has taken it out of every ISR,
    // which happens in the batch holding its new registration.
    let dir = tempfile::tempdir().unwrap();
    let open = || Broker::open(Arc::new(FileDisk::new()), BrokerConfig { node_id: 1, ..crate::testing::config(dir.path()) }, 0).unwrap();
    let partition = |p: i32, replicas: Vec<i32>, leader: i32, epoch: i32| MetadataRecord::Partition { topic: topic_name.into(), partition: p, isr: replicas.clone(), replicas, leader, leader_epoch: epoch, partition_epoch: epoch, elr: vec![], last_known_elr: vec![], adding: vec![], removing: vec![] };
    let register = |id: i32, epoch: i64| MetadataRecord::RegisterBroker { id, epoch, host: "host".into(), port: 9092, listeners: Vec::new() };
    let previous_life = vec![
        register(1, 0),
        MetadataRecord::UnfenceBroker { id: 1, epoch: 0 },
        register(2, 2),
        MetadataRecord::UnfenceBroker { id: 2, epoch: 2 },
        MetadataRecord::Topic { name: topic_name.into(), id: topic::hex(&[7; 16]), partitions: 2, config: BTreeMap::new() },
        partition(0, vec![1, 2], 1, 0),
        partition(1, vec![2, 1], 2, 0),
    ];
    // The controller's answer to this process's registration, as one batch at offset 7.
    let this_life = vec![register(1, 7), partition(0, vec![1, 2], 2, 1)];
    let no_role = |b: &mut Broker, when: &str| {
        let produce = b.produce(topic_name, 0, &build(&[b"x"], 1), 1, 0, &mut Vec::new()).unwrap_err().kafka_error(true);
        let consume = b.fetch(topic_name, 0, 0, 100, true, Fetcher::consumer, 0, &mut Vec::new()).unwrap_err().kafka_error(true);
        let replica = b.fetch(topic_name, 0, 0, 100, true, Fetcher::follower(2, 0), 0, &mut Vec::new()).unwrap_err().kafka_error(true);
        assert!([produce, consume, replica].iter().all(|code| [Code::LeaderNotAvailable, Code::NotLeaderOrFollower].contains(code)), "{when}: {produce:?} {consume:?} {replica:?}");
        assert!(b.following(2).is_empty() && b.leaders_followed().is_empty(), "{when}: follows");
    };

    // Registration accepted first, metadata after.
    let mut b = open();
    for (offset, r) in (0..).zip(&previous_life) {
        let applied = b.apply_metadata(offset, r, 0);
        crate::testing::run_syncs(&mut b, applied, 0);
    }
    no_role(&mut b, "replayed, not registered");
    b.registered(7, 0);
    no_role(&mut b, "registered, registration not applied");
    for (offset, r) in (7..).zip(&this_life) {
        let applied = b.apply_metadata(offset, r, 0);
        crate::testing::run_syncs(&mut b, applied, 0);
    }
    assert_eq!(b.following(2).len(), 2, "follows 2 in both partitions, as the image says");
    assert_eq!(b.produce(topic_name, 0, &build(&[b"x"], 1), 1, 0, &mut Vec::new()).unwrap_err().kafka_error(true), Code::NotLeaderOrFollower);
    // Registering again (say the controller called the epoch stale) drops every role at once.
    b.registered(9, 0);
    no_role(&mut b, "registered again");
    drop(b);

    // Metadata first, registration accepted after: until this process is told its epoch, the
    // registration record in the log may be another process's (an earlier life of node 1).
    let mut b = open();
    for (offset, r) in (0..).zip(previous_life.iter().chain(&this_life)) {
        let applied = b.apply_metadata(offset, r, 0);
        crate::testing::run_syncs(&mut b, applied, 0);
    }
    no_role(&mut b, "metadata applied, not registered");
    b.registered(7, 0);
    assert_eq!(b.following(2).len(), 2, "registration applied already: roles at once");
}

#[test]
fn a_divergent_tail_under_an_epoch_the_leader_never_had_is_cut_at_its_end() {
    // Why: records only the old leader took were never committed; keeping them would leave
    // two replicas answering differently at the same offsets (KIP-101/279).
    let mut c = Cluster::new(&[1, 2]);
    c.create(2);
    c.produce(1, &[b"a"]);
    c.catch_up(2);
    c.elect(2, &[1, 2]); // epoch 1
    c.produce(2, &[b"b"]);
    c.catch_up(1);
    c.elect(1, &[1, 2]); // epoch 2: broker 1 takes two records broker 2 never fetches
    c.produce(1, &[b"x"]);
    c.produce(1, &[b"y"]);
    c.elect(2, &[2]); // epoch 3
    c.produce(2, &[b"c"]);
    // Broker 1's latest epoch is 2; the leader ends epoch 1 (the largest it has below) at 2.
    assert_eq!(c.broker(2).end_offset_for_epoch(topic_name, 0, 2, 3).unwrap(), (1, 2));
    assert_eq!(c.round(1), Round::Truncated(2));
    c.catch_up(1);
    c.assert_same_log(1, 2);
}

#[test]
fn a_longer_tail_in_the_leaders_own_epoch_is_cut_where_the_leader_ends_it() {
    // Why: the same rule where the leader answers the follower's own epoch: its extra
    // records in that epoch were never replicated to the new leader, so never committed.
    let mut c = Cluster::new(&[1, 2]);
    c.create(2);
    c.produce(1, &[b"a"]);
    c.catch_up(2);
    c.produce(1, &[b"x", b"y"]);
    c.elect(2, &[2]); // epoch 1
    c.produce(2, &[b"b"]);
    c.produce(2, &[b"c"]);
    assert_eq!(c.broker(2).end_offset_for_epoch(topic_name, 0, 0, 1).unwrap(), (0, 1));
    assert_eq!(c.round(1), Round::Truncated(1));
    c.catch_up(1);
    c.assert_same_log(1, 2);
}

#[test]
fn an_empty_follower_truncates_nothing_and_copies_the_leader() {
    // Why: a new or wiped replica has no epoch to ask about; it must start fetching at once.
    let mut c = Cluster::new(&[1, 2]);
    c.create(2);
    c.produce(1, &[b"a", b"b"]);
    c.elect(1, &[1, 2]); // leading again (as after a spell without a leader): two epochs to copy
    c.produce(1, &[b"c"]);
    assert_eq!(c.brokers[&2].following(1)[0].truncate_from_epoch, Some(None));
    assert_eq!(c.round(2), Round::Truncated(0));
    c.catch_up(2);
    c.assert_same_log(2, 1);
    assert_eq!(c.batches(2), vec![(0, 0), (2, 1)]);
    assert_eq!(c.hw(1), 3);
}

#[test]
fn truncation_asks_again_when_the_leader_answers_an_epoch_the_follower_lacks() {
    // Why: without the second round a follower keeps a divergent tail forever: two replicas
    // then hold different records at the same offsets, and the follower can rejoin the ISR.
    //
    // Broker 1 holds a@0 x@1 (epoch 0) y@2 (epoch 2); broker 2 leads with a@0 (epoch 0)
    // b@1 (epoch 1) c@2 (epoch 3). Broker 1 asks about epoch 2; the leader answers (1, 2);
    // broker 1 has no epoch 1, its end for it is epoch 0's end, 2, so it cuts to 2 and stops,
    // keeping x@1 where the leader has b@1. A second round (epoch 0 -> (0, 1)) cuts to 1.
    // (With a multi-record batch at the leader it is stuck instead: NonContiguous forever.)
    let mut c = Cluster::new(&[1, 2]);
    c.create(2);
    c.produce(1, &[b"a"]);
    c.catch_up(2);
    c.produce(1, &[b"x"]);
    c.elect(2, &[2]); // epoch 1: broker 1 never truncates under it
    c.produce(2, &[b"b"]);
    c.elect(1, &[1]); // epoch 2: broker 2 never truncates under it
    c.produce(1, &[b"y"]);
    c.elect(2, &[2]); // epoch 3
    c.produce(2, &[b"c"]);
    c.catch_up(1);
    c.assert_same_log(1, 2);
}

#[test]
fn a_stale_fetch_answer_is_dropped() {
    // Why: an answer computed for an offset the log has moved past, or under a leadership
    // that has ended, would append records at the wrong place or from a deposed leader.
    let mut c = Cluster::new(&[1, 2, 3]);
    c.create(3);
    c.produce(1, &[b"a"]);
    c.catch_up(2);
    c.catch_up(3);
    c.produce(1, &[b"b"]);
    let fetch = |c: &mut Cluster, leader: i32, follower: i32, leader_epoch: i32| {
        let who = Fetcher::follower(follower, leader_epoch);
        c.broker(leader).fetch(topic_name, 0, 1, 1 << 20, true, who, 0, &mut Vec::new()).unwrap()
    };
    let append = |c: &mut Cluster, follower: i32, leader: i32, leader_epoch: i32, answer: &Fetched| {
        c.broker(follower).append_from_leader(topic_name, 0, leader, leader_epoch, 1, &answer.records.to_bytes().unwrap(), answer.high_watermark, 0).unwrap();
    };

    // The same answer twice: the second is for offset 1, but the log now ends at 2.
    let answer = fetch(&mut c, 1, 2, 0);
    assert!(!answer.records.is_empty());
    append(&mut c, 2, 1, 0, &answer);
    assert_eq!(c.log(2), c.log(1));
    append(&mut c, 2, 1, 0, &answer);
    assert_eq!(c.log(2), c.log(1), "appended once");

    // Leader 1 is replaced by 2 (epoch 1) while broker 3's fetch is in flight. Broker 3 has
    // truncated under the new leader, so the late answer fits at its log end; still dropped.
    let from_1 = fetch(&mut c, 1, 3, 0);
    c.elect(2, &[2, 3]);
    assert_eq!(c.round(3), Round::Truncated(1));
    append(&mut c, 3, 1, 0, &from_1);
    assert_eq!(c.leo(3), 1, "an answer from the deposed leader");

    // Leader 2 loses the partition and gets it back (epoch 3) while a fetch is in flight.
    let from_2 = fetch(&mut c, 2, 3, 1);
    c.elect(no_leader, &[2, 3]);
    c.elect(2, &[2, 3]);
    assert_eq!(c.round(3), Round::Truncated(1));
    append(&mut c, 3, 2, 1, &from_2);
    assert_eq!(c.leo(3), 1, "an answer from the same leader under an older epoch");
    c.catch_up(3);
    c.assert_same_log(3, 2);
}

#[test]
fn follower_fetches_under_another_leader_epoch_are_refused_and_move_nothing() {
    // Why: a fetcher on an older epoch may be following a deposed leader's log, one on a newer
    // epoch knows metadata this leader has not applied yet; counting either toward the high
    // watermark could commit records the ISR does not hold.
    let mut c = Cluster::new(&[1, 2]);
    c.create(2);
    c.elect(2, &[1, 2]); // leader epoch 1
    c.produce(2, &[b"a"]);
    assert_eq!(c.round(1), Round::Truncated(0));
    c.round(1);
    assert_eq!((c.leo(1), c.hw(2)), (1, 0));
    let mut out = Vec::new();
    for (epoch, code) in [(0, Code::FencedLeaderEpoch), (2, Code::UnknownLeaderEpoch)] {
        let who = Fetcher::follower(1, epoch);
        let err = c.broker(2).fetch(topic_name, 0, 1, 1 << 20, true, who, 0, &mut out).unwrap_err();
        assert_eq!((err.kafka_error(true), c.hw(2)), (code, 0), "epoch {epoch}");
    }
    assert_eq!(out, vec![], "a refused fetch wakes nobody");
    c.round(1);
    assert_eq!(c.hw(2), 1, "the same fetch under the current epoch counts");
}

#[test]
fn a_follower_silent_past_the_lag_limit_is_proposed_out_and_stops_holding_the_mark() {
    // Why: one dead follower must not block every acks=all produce forever; after
    // replica.lag.time.max.ms the leader asks the controller to drop it from the ISR.
    let lag = BrokerConfig::default().replica_lag_ms_max;
    let mut c = Cluster::new(&[1, 2, 3]);
    c.create(3);
    let p = c.produce(1, &[b"a"]);
    c.now = 1_000;
    c.catch_up(2);
    assert_eq!(c.hw(1), 0, "broker 3 has never fetched");
    assert_eq!(c.broker(1).isr_proposals(lag), vec![], "3 has lagged the whole window, not more");
    let props = c.broker(1).isr_proposals(lag + 1);
    let prop = IsrProposal { leader_epoch: 0, partition_epoch: 0, isr: vec![1, 2], epochs: vec![-1, c.ctl.image().broker_epoch(2)] };
    assert_eq!(props, vec![(topic_name.to_string(), 0, prop.clone())]);
    assert_eq!(c.broker(1).isr_proposals(lag + 2), vec![], "one change in flight at a time");
    assert_eq!(c.hw(1), 0, "a shrink counts only once committed");
    // The controller commits it; the leader hears the answer (the record comes separately).
    let epoch = c.ctl.image().brokers[&1].epoch;
    let req = crate::controller::AlterPartition { broker_id: 1, broker_epoch: epoch, topic: topic_name.into(), partition: 0, leader_epoch: 0, partition_epoch: 0, new_isr: prop.isr, new_isr_epochs: prop.epochs };
    let (info, records) = c.ctl.alter_partition(&req).unwrap();
    let actions = c.broker(1).isr_answer(topic_name, 0, IsrAnswer::Committed(&info), 0);
    assert_eq!(c.hw(1), 1);
    assert_eq!(actions, vec![Action::Wake], "producers waiting on acks=all are woken");
    assert_eq!(c.replicated(1, &p), Ok(true));
    c.commit(records);
    assert_eq!((c.hw(1), c.part(1).replication.isr.clone()), (1, vec![1, 2]));
}

#[test]
fn a_new_leader_answers_offset_not_available_until_its_mark_reaches_its_epoch_start() {
    // Why (KIP-207): a new leader's high watermark lags until its followers fetch; answering
    // it as "latest" would send a consumer back in the log.
    let mut c = Cluster::new(&[1, 2, 3]);
    c.create(3);
    c.produce(1, &[b"a", b"b"]);
    c.catch_up(2);
    c.catch_up(3);
    // Broker 2 fetched before broker 3 moved the mark: it has not learned it when it takes over.
    assert!(c.hw(2) < 2, "broker 2's mark should lag ({})", c.hw(2));
    c.elect(2, &[2, 3]);
    assert_eq!(c.broker(2).list_offset(topic_name, 0, -1, -1, false).unwrap_err().kafka_error(true), Code::OffsetNotAvailable);
    assert_eq!(c.broker(2).list_offset(topic_name, 0, -2, -1, false).unwrap(), (-1, 0), "earliest is always known");
    c.catch_up(3);
    assert_eq!(c.broker(2).list_offset(topic_name, 0, -1, -1, false).unwrap(), (-1, 2));
}

#[test]
fn a_registration_this_process_never_heard_back_from_drops_every_role() {
    // Why: if the answer to a re-registration is lost, the controller has already moved this
    // broker's roles; acting on the old ones would serve stale leadership.
    let mut c = Cluster::new(&[1, 2, 3]);
    c.create(3);
    assert!(c.part(1).replication.is_leader());
    let records = c.ctl.register(1, "host", 9092, c.next, 0).unwrap();
    c.commit(records);
    assert!(!c.part(1).replication.is_leader());
    assert!(c.broker(1).produce(topic_name, 0, &build(&[b"x"], 1), 1, 0, &mut Vec::new()).is_err());
}

mod cut_short;
mod due;
mod log_start;
mod throttle;
mod truncation;

#[test]
fn what_the_controller_link_heard_is_read_as_kafka_reads_an_alter_partition_answer() {
    // Why: the link only carries; whether an ISR change may have been committed (so it stays
    // in flight and is sent again) is the broker's rule. Reading a storage error, a lost
    // connection or a change left unsent as a refusal forgets a change the controller may
    // have committed (planted LostIsrAnswerIsRefusal, ControllerStorageErrorIsRefusal).
    use crate::broker::rules::Kafka;
    let state = crate::metadata::PartitionInfo { replicas: vec![1, 2], isr: vec![1, 2], leader: 1, leader_epoch: 0, partition_epoch: 1, elr: vec![], last_known_elr: vec![], adding: vec![], removing: vec![] };
    let answered = |code: Code| IsrReply::Answered(Err(Some(code)));
    let read = |reply: &IsrReply| format!("{:?}", reply.read(&Kafka));
    let committed = IsrReply::Answered(Ok(state));
    assert!(matches!(committed.read(&Kafka), Some(IsrAnswer::Committed(s)) if s.isr == vec![1, 2]));
    for lost in [IsrReply::NotSent, IsrReply::NoAnswer, answered(Code::KafkaStorageError), answered(Code::NotController), answered(Code::StaleBrokerEpoch)] {
        assert_eq!(read(&lost), "Some(Lost)", "{lost:?}");
    }
    assert_eq!(read(&answered(Code::InvalidUpdateVersion)), "Some(Stale)");
    // The expansion completed a reassignment that moved the leadership (fresh seeds of
    // scenarios/fast/reassign.toml, e.g. 19: read as a refusal, the new member left the
    // maximal ISR and the old leader acknowledged records its successor never had).
    assert_eq!(read(&answered(Code::NewLeaderElected)), "Some(Stale)");
    for refused in [IsrReply::NoTopic, answered(Code::InvalidRequest), answered(Code::IneligibleReplica), IsrReply::Answered(Err(None))] {
        assert_eq!(read(&refused), "Some(Refused)", "{refused:?}");
    }
}
