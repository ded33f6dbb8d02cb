//! KIP-848's online migration through the coordinator and its log: a classic group upgraded
//! by a consumer-protocol member's heartbeat (answered only once the conversion is
//! replicated), its classic members rejoining to revoke, a coordinator taking the mixed group
//! over from the log, the downgrade when the consumer-protocol member leaves (and its reload),
//! and what each migration policy refuses.

use super::super::*;
use crate::client::assignor::wire::{self, Subscription};
use crate::client::assignor::TopicPartitions;
use crate::group::consumer::Heartbeat;
use crate::group::consumer_records::ConsumerKey;
use bytes::Bytes;

const leader_epoch: i32 = 3;

/// A coordinator leading the one offsets partition, the records it appended there, and the
/// answers its work gave out.
struct Node {
    c: Coordinator,
    log: Vec<Loaded>,
    now: u64,
    answered: BTreeMap<Ticket, Answer>,
}

fn topics() -> BTreeMap<String, ([u8; 16], i32)> {
    [("t".to_string(), ([1u8; 16], 4))].into()
}

impl Node {
    fn new(policy: MigrationPolicy, log: Vec<Loaded>) -> Node {
        let config = GroupConfig { initial_rebalance_delay_ms: 0, consumer_migration_policy: policy, ..GroupConfig::default() };
        let (c, _) = crate::group::test_log::leading(config, topics(), &log, leader_epoch);
        Node { c, log, now: 0, answered: BTreeMap::new() }
    }

    /// Appends what `work` asks for (not replicated yet) and keeps its answers. Returns the
    /// records appended.
    fn absorb(&mut self, work: Work) -> Vec<Loaded> {
        self.answered.extend(work.answers);
        let mut appended = Vec::new();
        for a in work.appends {
            appended.extend(crate::group::test_log::append(&mut self.c, &mut self.log, a, leader_epoch, self.now));
        }
        appended
    }

    /// Everything appended is replicated.
    fn replicate(&mut self) {
        let mut work = Work::default();
        self.c.settle(|_, _| Ok(true), self.now, &mut work);
        self.absorb(work);
    }

    /// The answer of `ticket`, replicating what was appended if it is not out yet.
    fn take(&mut self, ticket: Ticket) -> Answer {
        if !self.answered.contains_key(&ticket) {
            self.replicate();
        }
        self.answered.remove(&ticket).expect("answered once replicated")
    }

    fn join_pending(&mut self, r: JoinRequest) -> Pending<JoinAnswer> {
        let mut work = Work::default();
        let pending = self.c.join("g", r, self.now, &mut work);
        self.absorb(work);
        pending
    }

    fn join(&mut self, r: JoinRequest) -> JoinAnswer {
        match self.join_pending(r) {
            Pending::Now(a) => a,
            Pending::Wait(t) => match self.take(t) {
                Answer::Join(a) => a,
                other => panic!("a join answered {other:?}"),
            },
        }
    }

    fn sync_pending(&mut self, member: &str, generation: i32, assignments: &[(&str, &[i32])]) -> Pending<Result<Bytes, Code>> {
        let mut work = Work::default();
        let assignments = assignments.iter().map(|(m, ps)| (m.to_string(), assignment(ps))).collect();
        let pending = self.c.sync("g", member, None, generation, None, assignments, self.now, &mut work);
        self.absorb(work);
        pending
    }

    fn sync(&mut self, member: &str, generation: i32, assignments: &[(&str, &[i32])]) -> Result<Vec<i32>, Code> {
        let r = match self.sync_pending(member, generation, assignments) {
            Pending::Now(r) => r,
            Pending::Wait(t) => match self.take(t) {
                Answer::Sync(r) => r,
                other => panic!("a sync answered {other:?}"),
            },
        };
        r.map(|b| parts(&wire::decode_assignment(&b).expect("decodes").partitions))
    }

    fn beat_pending(&mut self, hb: Heartbeat) -> (Pending<Answer>, Vec<Loaded>) {
        let mut work = Work::default();
        let pending = self.c.consumer_heartbeat("g", hb, self.now, &mut work);
        let appended = self.absorb(work);
        (pending, appended)
    }

    fn beat(&mut self, hb: Heartbeat) -> Result<HeartbeatAnswer, Code> {
        let answer = match self.beat_pending(hb).0 {
            Pending::Now(a) => a,
            Pending::Wait(t) => self.take(t),
        };
        match answer {
            Answer::Consumer(r) => r,
            other => panic!("a heartbeat answered {other:?}"),
        }
    }

    fn heartbeat(&mut self, member: &str, generation: i32) -> Result<(), Code> {
        self.c.heartbeat("g", member, None, generation, self.now)
    }

    fn tick(&mut self, ms: u64) {
        self.now += ms;
        let mut work = Work::default();
        self.c.tick(self.now, &mut work);
        self.absorb(work);
        self.replicate();
    }

    /// A classic group of two cooperative-sticky members, Stable at generation 2: the first
    /// holds t-0,1, the second t-2,3.
    fn classic_group(&mut self) -> (String, String) {
        let a = self.join(join_req("", &[]));
        assert_eq!((a.generation, a.leader.as_str()), (1, a.member_id.as_str()));
        let a = a.member_id;
        assert_eq!(self.sync(&a, 1, &[(&a, &[0, 1, 2, 3])]), Ok(vec![0, 1, 2, 3]));
        let Pending::Wait(b_join) = self.join_pending(join_req("", &[])) else { panic!("b waits for the rebalance") };
        assert_eq!(self.heartbeat(&a, 1), Err(Code::RebalanceInProgress));
        assert_eq!(self.join(join_req(&a, &[0, 1, 2, 3])).generation, 2);
        let Answer::Join(b) = self.take(b_join) else { panic!("b's join") };
        let b = b.member_id;
        let Pending::Wait(b_sync) = self.sync_pending(&b, 2, &[]) else { panic!("b waits for the leader") };
        assert_eq!(self.sync(&a, 2, &[(&a, &[0, 1]), (&b, &[2, 3])]), Ok(vec![0, 1]));
        assert!(matches!(self.take(b_sync), Answer::Sync(Ok(_))));
        assert_eq!(self.c.describe("g").expect("here").map(|g| g.state), Some(State::Stable));
        // a commits t-0 at 7 (the offsets must outlive the classic record).
        let mut work = Work::default();
        let v = records::OffsetValue { offset: 7, leader_epoch: -1, metadata: String::new(), commit_timestamp: 0 };
        let Ok(Pending::Wait(t)) = self.c.commit("g", &a, None, 2, vec![(("t".into(), 0), v)], self.now, &mut work) else { panic!("a commits") };
        self.absorb(work);
        assert_eq!(self.take(t), Answer::Written(Ok(())));
        (a, b)
    }
}

/// What each client holds, by name.
type Held = BTreeMap<String, Vec<i32>>;

/// Panics if two clients hold one partition.
fn check_held(held: &Held, at: &str) {
    let mut seen = BTreeMap::new();
    for (who, ps) in held {
        for p in ps {
            if let Some(other) = seen.insert(*p, who) {
                panic!("{at}: t-{p} held by {other} and {who}");
            }
        }
    }
}

/// Drives cooperative classic members `classic` (with their generations) and consumer-protocol
/// member `c` as their clients would, checking after every answer that no partition is held
/// twice, until every partition is held and nobody is told to rejoin.
fn settle(n: &mut Node, classic: &mut BTreeMap<String, i32>, c: Option<(&str, &mut i32)>, held: &mut Held) {
    let mut c = c;
    for round in 0..10 {
        let mut quiet = true;
        for (id, generation) in classic.iter_mut() {
            n.now += 100;
            if n.heartbeat(id, *generation).is_ok() {
                continue;
            }
            quiet = false;
            let owned = held.get(id).cloned().unwrap_or_default();
            let j = n.join(join_req(id, &owned));
            assert_eq!(j.error, None, "{id} rejoins");
            *generation = j.generation;
            let given = n.sync(id, j.generation, &[]).expect("synced");
            held.insert(id.clone(), given);
            check_held(held, &format!("round {round}, {id} synced"));
        }
        if let Some((id, epoch)) = c.as_mut() {
            n.now += 100;
            let owned = held.get(*id).cloned().unwrap_or_default();
            let a = n.beat(consumer_beat(id, **epoch, &owned)).expect("heartbeat");
            quiet &= a.member_epoch == **epoch && a.assignment.is_none();
            **epoch = a.member_epoch;
            if let Some(given) = a.assignment {
                held.insert(id.to_string(), given.iter().flat_map(|(_, ps)| ps.clone()).collect());
            }
            check_held(held, &format!("round {round}, {id} heartbeat"));
        }
        let all: BTreeSet<i32> = held.values().flatten().copied().collect();
        if quiet && all.len() == 4 {
            return;
        }
    }
    panic!("not settled: {held:?}");
}

fn tp(ps: &[i32]) -> TopicPartitions {
    match ps.is_empty() {
        true => TopicPartitions::new(),
        false => [("t".to_string(), ps.to_vec())].into(),
    }
}

fn parts(tps: &TopicPartitions) -> Vec<i32> {
    tps.get("t").cloned().unwrap_or_default()
}

fn subscription(owned: &[i32]) -> Bytes {
    let sub = Subscription { topics: ["t".to_string()].into(), owned: tp(owned), ..Subscription::default() };
    wire::encode_subscription(&sub, 1).expect("encodes")
}

fn assignment(ps: &[i32]) -> Bytes {
    wire::encode_assignment(&wire::Assignment { partitions: tp(ps), user_data: None }, 1).expect("encodes")
}

/// A classic member's JoinGroup (v3: no member id round trip), saying it owns `owned`.
fn join_req(member: &str, owned: &[i32]) -> JoinRequest {
    JoinRequest {
        member_id: member.into(),
        client_id: "classic".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 30_000,
        protocol_type: "consumer".into(),
        protocols: vec![("cooperative-sticky".into(), subscription(owned)), ("range".into(), subscription(owned))],
        ..JoinRequest::default()
    }
}

fn consumer_join(member: &str) -> Heartbeat {
    Heartbeat { member_id: member.into(), topics: Some(["t".to_string()].into()), rebalance_timeout_ms: Some(30_000), owned: Some(TopicPartitions::new()), ..Heartbeat::default() }
}

fn consumer_beat(member: &str, epoch: i32, owned: &[i32]) -> Heartbeat {
    Heartbeat { member_id: member.into(), member_epoch: epoch, owned: Some(tp(owned)), ..Heartbeat::default() }
}

/// The keys of `records`, as the log holds them: `Group` for the classic record, `Consumer(...)`
/// for a consumer group's, each with whether it is a tombstone.
fn keys(records: &[Loaded]) -> Vec<(records::Key, bool)> {
    records
        .iter()
        .map(|r| match r {
            Loaded::Record { key, value, .. } => (records::decode_key(key).expect("our keys decode"), value.is_none()),
            Loaded::Marker { .. } => panic!("no markers here"),
        })
        .collect()
}

/// The classic group (a, b) upgraded by c's heartbeat, and driven until c has its share.
fn mixed(n: &mut Node) -> (BTreeMap<String, i32>, i32, Held) {
    let (a, b) = n.classic_group();
    let c = n.beat(consumer_join("c")).expect("c joins");
    let mut classic: BTreeMap<String, i32> = [(a.clone(), 2), (b.clone(), 2)].into();
    let mut held: Held = [(a, vec![0, 1]), (b, vec![2, 3])].into();
    let mut epoch = c.member_epoch;
    settle(n, &mut classic, Some(("c", &mut epoch)), &mut held);
    (classic, epoch, held)
}

#[test]
fn a_consumer_protocol_member_upgrades_a_stable_classic_group_once_the_conversion_is_replicated() {
    let mut n = Node::new(MigrationPolicy::Bidirectional, Vec::new());
    let (a, b) = n.classic_group();
    let (pending, appended) = n.beat_pending(consumer_join("c"));
    let Pending::Wait(t) = pending else { panic!("answered before the conversion was written: {pending:?}") };
    // One batch: the classic record's tombstone, then the consumer group whole.
    let written = keys(&appended);
    assert_eq!(written[0], (records::Key::Group { group: "g".into() }, true), "{written:?}");
    for m in [&a, &b, &"c".to_string()] {
        let member = records::Key::Consumer { group: "g".into(), key: ConsumerKey::Member(m.clone()) };
        assert!(written.contains(&(member, false)), "{m}'s member record in {written:?}");
    }
    let Answer::Consumer(Ok(c)) = n.take(t) else { panic!("c's join") };
    assert_eq!(c.member_epoch, 3, "the classic generation (2) moved on by c's join");
    assert_eq!(c.assignment.as_ref().map(Vec::len), Some(0), "everything is still held by the classic members");
    let g = n.c.consumer_group("g").expect("here").expect("a consumer group now");
    assert!(g.members[&a].classic.is_some() && g.members[&b].classic.is_some() && g.members["c"].classic.is_none());
    assert_eq!((parts(&g.members[&a].assignment.assigned), g.members[&a].assignment.epoch), (vec![0, 1], 2), "a holds what it was assigned");
    assert!(n.c.describe("g").expect("here").is_none(), "DescribeGroups: a consumer group is Dead to it");
    assert!(n.c.groups().all(|g| g.id != "g") && n.c.consumer_groups().any(|g| g.id == "g"), "ListGroups: a consumer group");
    // The classic members are told to rejoin, revoke and sync their way to c getting its share.
    assert_eq!(n.heartbeat(&a, 2), Err(Code::RebalanceInProgress));
    let mut classic: BTreeMap<String, i32> = [(a.clone(), 2), (b.clone(), 2)].into();
    let mut held: Held = [(a.clone(), vec![0, 1]), (b.clone(), vec![2, 3])].into();
    let mut epoch = c.member_epoch;
    settle(&mut n, &mut classic, Some(("c", &mut epoch)), &mut held);
    assert!(!held["c"].is_empty(), "c has its share: {held:?}");
    // Commits: a classic member's generation is its member epoch.
    let offset = |o| vec![(("t".to_string(), 0), records::OffsetValue { offset: o, leader_epoch: -1, metadata: String::new(), commit_timestamp: 0 })];
    let mut work = Work::default();
    assert!(matches!(n.c.commit("g", &a, None, classic[&a], offset(5), n.now, &mut work), Ok(Pending::Wait(_))));
    assert_eq!(n.c.commit("g", &a, None, classic[&a] - 1, offset(5), n.now, &mut work), Err(Code::IllegalGeneration));
    assert_eq!(n.c.commit("g", "c", None, epoch - 1, offset(5), n.now, &mut work), Err(Code::StaleMemberEpoch));
    n.absorb(work);
}

#[test]
fn a_classic_group_mid_rebalance_is_not_upgraded() {
    let mut n = Node::new(MigrationPolicy::Bidirectional, Vec::new());
    let (a, _) = n.classic_group();
    n.join_pending(join_req("", &[]));
    let log = n.log.len();
    assert_eq!(n.beat(consumer_join("c")), Err(Code::CoordinatorNotAvailable), "retried once the rebalance is over");
    assert_eq!(n.log.len(), log, "nothing written");
    assert!(n.c.consumer_group("g").expect("here").is_none());
    assert_eq!(n.heartbeat(&a, 2), Err(Code::RebalanceInProgress), "the classic group goes on");
}

#[test]
fn a_coordinator_taking_over_loads_the_mixed_group_and_its_members_go_on() {
    let mut n = Node::new(MigrationPolicy::Bidirectional, Vec::new());
    let (classic, epoch, held) = mixed(&mut n);
    let view = n.c.consumer_groups["g"].view();
    let before: Vec<_> = n.c.consumer_groups["g"].members.values().map(|m| m.classic.clone()).collect();
    let mut m = Node::new(MigrationPolicy::Bidirectional, n.log.clone());
    let g = &m.c.consumer_groups["g"];
    assert_eq!(g.view(), view, "the same group, epoch for epoch");
    assert_eq!(g.members.values().map(|m| m.classic.clone()).collect::<Vec<_>>(), before, "the classic members' protocols and session timeouts");
    assert!(m.c.describe("g").expect("here").is_none(), "no classic group beside it");
    let committed = m.c.fetch_offsets("g", Some(&[("t".into(), 0)])).expect("here");
    assert_eq!(committed[0].1.as_ref().map(|v| v.offset), Some(7), "the offsets committed before the upgrade outlive the classic record's tombstone");
    for (id, generation) in &classic {
        assert_eq!(m.heartbeat(id, *generation), Ok(()), "{id} goes on at its generation");
    }
    let a = m.beat(consumer_beat("c", epoch, &held["c"])).expect("c goes on");
    assert_eq!((a.member_epoch, m.c.consumer_groups["g"].epoch), (epoch, epoch), "no rebalance at the takeover");
}

#[test]
fn the_last_consumer_protocol_member_leaving_downgrades_the_group_which_rebalances() {
    let mut n = Node::new(MigrationPolicy::Bidirectional, Vec::new());
    let (classic, epoch, _) = mixed(&mut n);
    let (pending, appended) = n.beat_pending(Heartbeat { member_id: "c".into(), member_epoch: -1, ..Heartbeat::default() });
    let Pending::Wait(t) = pending else { panic!("answered before the downgrade was written: {pending:?}") };
    let written = keys(&appended);
    assert_eq!(written.last(), Some(&(records::Key::Group { group: "g".into() }, false)), "the classic record last: {written:?}");
    assert!(written[..written.len() - 1].iter().all(|(k, tombstone)| matches!(k, records::Key::Consumer { .. }) && *tombstone), "the consumer group tombstoned: {written:?}");
    assert!(matches!(n.take(t), Answer::Consumer(Ok(a)) if a.member_epoch == -1));
    assert!(n.c.consumer_group("g").expect("here").is_none());
    let g = n.c.describe("g").expect("here").expect("a classic group");
    assert_eq!((g.state, g.generation), (State::PreparingRebalance, epoch), "the classic group rebalances at the epoch its members reconciled to");
    assert_eq!(g.members.keys().cloned().collect::<Vec<_>>(), classic.keys().cloned().collect::<Vec<_>>());
    for (id, generation) in &classic {
        assert_eq!(n.heartbeat(id, *generation), Err(Code::RebalanceInProgress), "{id} is told to rejoin, not fenced");
    }
    // The classic members rejoin the classic group: a new generation, a leader, an assignment.
    let ids: Vec<String> = classic.keys().cloned().collect();
    let Pending::Wait(first) = n.join_pending(join_req(&ids[0], &[])) else { panic!("waits for the other") };
    let second = n.join(join_req(&ids[1], &[]));
    let Answer::Join(first) = n.take(first) else { panic!("join") };
    assert_eq!((first.generation, second.generation), (epoch + 1, epoch + 1));
    let leader = if first.leader == ids[0] { &ids[0] } else { &ids[1] };
    let other = if leader == &ids[0] { &ids[1] } else { &ids[0] };
    let Pending::Wait(follower) = n.sync_pending(other, epoch + 1, &[]) else { panic!("waits for the leader") };
    n.sync(leader, epoch + 1, &[(leader, &[0, 1]), (other, &[2, 3])]).expect("leader synced");
    assert!(matches!(n.take(follower), Answer::Sync(Ok(_))));
    assert_eq!(n.c.describe("g").expect("here").map(|g| g.state), Some(State::Stable));
    // Another coordinator loads a classic group, no consumer group.
    let m = Node::new(MigrationPolicy::Bidirectional, n.log.clone());
    assert!(!m.c.consumer_groups.contains_key("g"), "the consumer group's records were tombstoned");
    let g = m.c.describe("g").expect("here").expect("the classic group");
    assert_eq!((g.state, g.generation, g.members.len()), (State::Stable, epoch + 1, 2));
}

#[test]
fn a_reload_right_after_the_downgrade_finds_the_classic_group() {
    let mut n = Node::new(MigrationPolicy::Bidirectional, Vec::new());
    let (classic, _, held) = mixed(&mut n);
    n.beat(Heartbeat { member_id: "c".into(), member_epoch: -1, ..Heartbeat::default() }).expect("c leaves");
    let m = Node::new(MigrationPolicy::Bidirectional, n.log.clone());
    assert!(!m.c.consumer_groups.contains_key("g"));
    let g = m.c.describe("g").expect("here").expect("the classic group");
    assert_eq!(g.members.keys().cloned().collect::<Vec<_>>(), classic.keys().cloned().collect::<Vec<_>>());
    assert_eq!(g.leader.as_ref(), classic.keys().next(), "led by its first member");
    // Its members hold what the consumer group gave them.
    for (id, m) in &g.members {
        assert_eq!(parts(&wire::decode_assignment(&m.assignment).expect("decodes").partitions), held[id], "{id}'s assignment");
    }
}

#[test]
fn with_the_upgrade_policy_classic_members_stay_in_the_consumer_group() {
    let mut n = Node::new(MigrationPolicy::Upgrade, Vec::new());
    let (mut classic, _, mut held) = mixed(&mut n);
    n.beat(Heartbeat { member_id: "c".into(), member_epoch: -1, ..Heartbeat::default() }).expect("c leaves");
    held.remove("c");
    let g = n.c.consumer_group("g").expect("here").expect("still a consumer group");
    assert!(g.members.values().all(|m| m.classic.is_some()));
    // They take c's partitions over as classic members of the consumer group.
    settle(&mut n, &mut classic, None, &mut held);
}

#[test]
fn the_disabled_policy_keeps_a_group_id_one_kind_at_a_time() {
    let mut n = Node::new(MigrationPolicy::Disabled, Vec::new());
    let (a, _) = n.classic_group();
    assert_eq!(n.beat(consumer_join("c")), Err(Code::GroupIdNotFound));
    assert_eq!(n.heartbeat(&a, 2), Ok(()), "the classic group is untouched");
    let mut m = Node::new(MigrationPolicy::Disabled, Vec::new());
    m.beat(consumer_join("c")).expect("a consumer group");
    assert_eq!(m.join(join_req("", &[])).error, Some(Code::InconsistentGroupProtocol));
}

#[test]
fn classic_members_silent_past_their_session_leave_the_consumer_group() {
    let mut n = Node::new(MigrationPolicy::Upgrade, Vec::new());
    let (_, mut epoch, mut held) = mixed(&mut n);
    for _ in 0..11 {
        n.tick(1_000);
        let a = n.beat(consumer_beat("c", epoch, &held["c"])).expect("c heartbeats");
        epoch = a.member_epoch;
        if let Some(given) = a.assignment {
            held.insert("c".into(), given.iter().flat_map(|(_, ps)| ps.clone()).collect());
        }
    }
    let g = n.c.consumer_group("g").expect("here").expect("a consumer group");
    assert_eq!(g.members.keys().collect::<Vec<_>>(), ["c"], "the classic members' sessions (10 s) ended");
    assert_eq!(held["c"], [0, 1, 2, 3]);
}

#[test]
fn a_group_ids_epochs_never_go_back_across_conversions_of_an_empty_group() {
    let mut n = Node::new(MigrationPolicy::Bidirectional, Vec::new());
    let (a, b) = n.classic_group();
    let mut work = Work::default();
    n.c.leave("g", &[(a, None), (b, None)], n.now, &mut work).expect("both leave");
    n.absorb(work);
    let generation = n.c.describe("g").expect("here").map(|g| g.generation).expect("an empty classic group");
    let c = n.beat(consumer_join("c")).expect("c makes a consumer group");
    assert!(c.member_epoch > generation, "epoch {} after generation {generation}", c.member_epoch);
    n.beat(Heartbeat { member_id: "c".into(), member_epoch: -1, ..Heartbeat::default() }).expect("c leaves");
    let epoch = n.c.consumer_groups["g"].epoch;
    let d = n.join(join_req("", &[]));
    assert!(d.generation > epoch, "generation {} after epoch {epoch}", d.generation);
}

/// mixed-churn seed 871: the consumer group was dropped for a classic JoinGroup on one
/// coordinator, whose successor loaded only the tombstones and began the classic group at
/// generation 1 again, while the first generation 1's members could still commit.
#[test]
fn a_coordinator_taking_over_after_a_consumer_group_was_dropped_goes_on_from_its_epoch() {
    let mut n = Node::new(MigrationPolicy::Bidirectional, Vec::new());
    n.beat(consumer_join("c")).expect("c makes a consumer group");
    n.beat(Heartbeat { member_id: "c".into(), member_epoch: -1, ..Heartbeat::default() }).expect("c leaves");
    let epoch = n.c.consumer_groups["g"].epoch;
    let joined = n.join(join_req("", &[]));
    assert!(joined.generation > epoch, "generation {} after epoch {epoch}", joined.generation);
    // The coordinator moves before the new generation's SyncGroup writes the classic group.
    n.replicate();
    let mut m = Node::new(MigrationPolicy::Bidirectional, n.log.clone());
    assert!(m.c.consumer_group("g").expect("here").is_none(), "the consumer group is gone");
    let d = m.join(join_req("", &[]));
    assert!(d.generation > epoch, "generation {} after epoch {epoch}", d.generation);
}
