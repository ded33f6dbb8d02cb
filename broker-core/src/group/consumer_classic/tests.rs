//! Classic members inside a consumer group, decided by the group alone: a snapshotted story (an
//! eager and a cooperative classic member beside a consumer-protocol one: joins, rejoins to
//! revoke, syncs, heartbeats told to rejoin, a leave, a session timeout), with no partition
//! held by two members after any step; generated churn of clients that hold what they were
//! told, in which no partition is ever held by two clients; and the checks a classic request
//! meets.

use super::*;
use crate::client::assignor::wire::encode_subscription;
use crate::group::assignors::ServerAssignor;
use crate::group::consumer::Heartbeat;
use std::collections::BTreeSet;

fn tp(ps: &[i32]) -> TopicPartitions {
    match ps.is_empty() {
        true => TopicPartitions::new(),
        false => [("a".to_string(), ps.to_vec())].into(),
    }
}

fn parts(tps: &TopicPartitions) -> Vec<i32> {
    tps.get("a").cloned().unwrap_or_default()
}

/// A classic JoinGroup: subscribed to `a`, saying it owns `owned` (subscription v1).
fn join_req(member: &str, owned: &[i32], protocols: &[&str]) -> JoinRequest {
    let sub = Subscription { topics: ["a".to_string()].into(), owned: tp(owned), ..Subscription::default() };
    let metadata = encode_subscription(&sub, 1).expect("encodes");
    JoinRequest {
        member_id: member.into(),
        client_id: "c".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 30_000,
        protocol_type: consumer_protocol_type.into(),
        protocols: protocols.iter().map(|p| (p.to_string(), metadata.clone())).collect(),
        require_known_member_id: true,
        ..JoinRequest::default()
    }
}

fn consumer_join(member: &str) -> Heartbeat {
    Heartbeat { member_id: member.into(), topics: Some(["a".to_string()].into()), rebalance_timeout_ms: Some(30_000), owned: Some(TopicPartitions::new()), ..Heartbeat::default() }
}

fn consumer_beat(member: &str, epoch: i32, owned: &[i32]) -> Heartbeat {
    Heartbeat { member_id: member.into(), member_epoch: epoch, owned: Some(tp(owned)), ..Heartbeat::default() }
}

fn group() -> ConsumerGroup {
    ConsumerGroup::new("g", &[ServerAssignor::Uniform], 45_000)
}

/// Panics if two members hold one partition (given, or still to revoke).
fn check_owners(g: &ConsumerGroup) {
    let mut seen: BTreeMap<i32, &str> = BTreeMap::new();
    for (id, m) in &g.members {
        for p in parts(&m.assignment.assigned).into_iter().chain(parts(&m.assignment.revoking)) {
            if let Some(other) = seen.insert(p, id) {
                panic!("partition a-{p} held by {other} and {id}");
            }
        }
    }
}

struct Script {
    group: ConsumerGroup,
    partitions: BTreeMap<String, i32>,
    now: u64,
    text: String,
}

impl Script {
    fn new() -> Script {
        Script { group: group(), partitions: [("a".to_string(), 4)].into(), now: 0, text: String::new() }
    }

    fn step(&mut self, what: &str, said: String) {
        check_owners(&self.group);
        self.text += &format!("{what}: {said}\n  group epoch {}\n", self.group.epoch);
        for (id, m) in &self.group.members {
            let a = &m.assignment;
            let revoking = if a.revoking.is_empty() { String::new() } else { format!(", revoking {:?}", parts(&a.revoking)) };
            let kind = if m.classic.is_some() { "classic" } else { "consumer" };
            self.text += &format!("  {id} ({kind}): epoch {} {:?} {:?}{revoking}\n", a.epoch, a.state, parts(&a.assigned));
        }
    }

    fn join(&mut self, what: &str, req: JoinRequest, new_id: &str) -> Option<JoinAnswer> {
        let r = self.group.classic_join(&req, new_id, &self.partitions, self.now);
        let said = match &r {
            Ok(a) => format!("{} generation {} protocol {}", a.member_id, a.generation, a.protocol.as_deref().unwrap_or("-")),
            Err(code) => format!("{code:?}"),
        };
        self.step(what, said);
        r.ok()
    }

    fn sync(&mut self, what: &str, member: &str, generation: i32, protocol: &str) -> Option<Vec<i32>> {
        let r = self.group.classic_sync(member, None, generation, Some((consumer_protocol_type, protocol)), self.now);
        let given = r.as_ref().ok().map(|b| parts(&wire::decode_assignment(b).expect("our bytes decode").partitions));
        let said = match (&r, &given) {
            (Ok(_), Some(ps)) => format!("given {ps:?}"),
            (Err(code), _) => format!("{code:?}"),
            _ => unreachable!(),
        };
        self.step(what, said);
        given
    }

    fn heartbeat(&mut self, what: &str, member: &str, generation: i32) {
        let r = self.group.classic_heartbeat(member, None, generation, self.now);
        self.step(what, r.map_or_else(|c| format!("{c:?}"), |()| "NONE".into()));
    }

    fn beat(&mut self, what: &str, hb: Heartbeat) -> Option<crate::group::consumer::Answer> {
        let r = self.group.heartbeat(hb, &self.partitions, self.now);
        let said = match &r {
            Ok(a) => format!("{} at epoch {}{}", a.member_id, a.member_epoch, a.assignment.as_ref().map_or(String::new(), |p| format!(", given {:?}", parts(p)))),
            Err(code) => format!("{code:?}"),
        };
        self.step(what, said);
        r.ok()
    }
}

#[test]
fn classic_members_beside_a_consumer_protocol_member() {
    let mut s = Script::new();
    let (eager, coop) = (&["range"][..], &["cooperative-sticky", "range"][..]);
    let k = s.join("K joins (cooperative)", join_req("k", &[], coop), "").expect("joins");
    s.sync("K syncs", "k", k.generation, "cooperative-sticky");
    s.join("E joins (eager)", join_req("e", &[], eager), "");
    s.heartbeat("K heartbeats: the group epoch moved on", "k", k.generation);
    let k = s.join("K rejoins owning everything", join_req("k", &[0, 1, 2, 3], coop), "").expect("joins");
    let kept = s.sync("K syncs at its epoch: given what it keeps", "k", k.generation, "cooperative-sticky").expect("kept");
    s.heartbeat("E heartbeats: what it waits for is still K's", "e", 2);
    s.heartbeat("K heartbeats: it must rejoin to let go", "k", k.generation);
    let k = s.join("K rejoins without what it revoked", join_req("k", &kept, coop), "").expect("joins");
    let kept = s.sync("K syncs", "k", k.generation, "cooperative-sticky").expect("kept");
    s.heartbeat("E heartbeats: what it waits for is free", "e", 2);
    let e = s.join("E rejoins", join_req("e", &[], eager), "").expect("joins");
    s.sync("E syncs", "e", e.generation, "range");
    let c = s.beat("C joins (consumer protocol)", consumer_join("c")).expect("joins");
    s.heartbeat("K heartbeats", "k", k.generation);
    s.heartbeat("E heartbeats", "e", e.generation);
    s.join("E rejoins, having given up everything", join_req("e", &[], eager), "");
    let k = s.join("K rejoins", join_req("k", &kept, coop), "").expect("joins");
    let kept = s.sync("K syncs", "k", k.generation, "cooperative-sticky").expect("kept");
    s.beat("C heartbeats", consumer_beat("c", c.member_epoch, &[]));
    s.heartbeat("K heartbeats", "k", k.generation);
    let k = s.join("K rejoins", join_req("k", &kept, coop), "").expect("joins");
    s.sync("K syncs", "k", k.generation, "cooperative-sticky");
    let c = s.beat("C heartbeats", consumer_beat("c", c.member_epoch, &[])).expect("beats");
    let e = s.join("E rejoins", join_req("e", &[], eager), "").expect("joins");
    s.sync("E syncs at a generation it left", "e", e.generation - 1, "range");
    s.sync("E syncs with another protocol", "e", e.generation, "roundrobin");
    s.sync("E syncs", "e", e.generation, "range");
    s.heartbeat("C is no classic member", "c", c.member_epoch);
    s.heartbeat("E at a generation it never had", "e", 7);
    let r = s.group.classic_leave("e", None, &s.partitions);
    s.step("E leaves", format!("{r:?}"));
    s.now += 10_001;
    let owned = c.assignment.as_ref().map(parts).unwrap_or_default();
    s.beat("C heartbeats after K's session (10 s) ended", consumer_beat("c", c.member_epoch, &owned));
    insta::assert_snapshot!(s.text);
}

#[test]
fn a_classic_member_must_share_a_protocol_with_the_other_classic_members() {
    let mut g = group();
    let topics = [("a".to_string(), 4)].into();
    g.classic_join(&join_req("e", &[], &["range"]), "", &topics, 0).expect("joins");
    assert!(g.supports_classic("k", consumer_protocol_type, &join_req("k", &[], &["roundrobin", "range"]).protocols));
    assert!(!g.supports_classic("k", consumer_protocol_type, &join_req("k", &[], &["roundrobin"]).protocols));
    assert!(!g.supports_classic("k", "connect", &join_req("k", &[], &["range"]).protocols));
    // The member itself may change its protocols.
    assert!(g.supports_classic("e", consumer_protocol_type, &join_req("e", &[], &["roundrobin"]).protocols));
}

#[test]
fn a_classic_member_told_to_rejoin_that_never_does_is_removed_after_its_rebalance_timeout() {
    let mut g = group();
    let topics = [("a".to_string(), 4)].into();
    g.classic_join(&join_req("e", &[], &["range"]), "", &topics, 0).expect("joins");
    g.classic_sync("e", None, 1, None, 0).expect("syncs");
    g.heartbeat(consumer_join("c"), &topics, 1).expect("joins");
    assert_eq!(g.classic_heartbeat("e", None, 1, 2), Err(Code::RebalanceInProgress));
    // It keeps heartbeating but never rejoins: its session goes on, its rebalance timeout not.
    for t in (3..30_000).step_by(3_000) {
        let _ = g.classic_heartbeat("e", None, 1, t);
    }
    g.expire(30_002);
    assert!(!g.members.contains_key("e"), "removed: its partitions go to the others");
    assert!(g.members.contains_key("c"));
}

#[test]
fn a_static_classic_member_back_without_an_id_takes_its_place() {
    let mut g = group();
    let topics = [("a".to_string(), 4)].into();
    let mut req = join_req("", &[], &["range"]);
    req.instance_id = Some("i".into());
    let first = g.classic_join(&req, "s1", &topics, 0).expect("joins");
    g.classic_sync("s1", Some("i"), first.generation, None, 0).expect("syncs");
    let epoch = g.epoch;
    let back = g.classic_join(&req, "s2", &topics, 10).expect("back");
    assert_eq!((back.member_id.as_str(), back.generation, g.epoch), ("s2", first.generation, epoch), "no rebalance");
    assert!(!g.members.contains_key("s1"));
    assert_eq!(parts(&g.members["s2"].assignment.assigned), [0, 1, 2, 3]);
    // The old incarnation is fenced.
    assert_eq!(g.classic_heartbeat("s1", Some("i"), first.generation, 11), Err(Code::FencedInstanceId));
    let mut known = join_req("s1", &[], &["range"]);
    known.instance_id = Some("i".into());
    assert_eq!(g.classic_join(&known, "", &topics, 12).map(|a| a.member_id), Err(Code::FencedInstanceId));
}

#[test]
fn a_subscription_that_is_not_the_consumer_protocols_is_invalid_request() {
    let mut g = group();
    let mut req = join_req("e", &[], &["range"]);
    req.protocols = vec![("range".into(), Bytes::from_static(&[0xff]))];
    assert_eq!(g.classic_join(&req, "", &BTreeMap::new(), 0).map(|a| a.member_id), Err(Code::InvalidRequest));
    assert!(g.members.is_empty());
}

/// What one client does next, by kind.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Eager,
    Cooperative,
    Consumer,
}

#[derive(Debug)]
enum Phase {
    Join,
    Sync(i32),
    Stable(i32),
}

/// A client as it would behave: it holds what it was told, gives up before saying so, and an
/// eager one gives up everything before it rejoins.
struct Client {
    id: String,
    kind: Kind,
    held: BTreeSet<i32>,
    phase: Phase,
    epoch: i32,
}

impl Client {
    fn step(&mut self, g: &mut ConsumerGroup, topics: &BTreeMap<String, i32>, now: u64) {
        let protocols: &[&str] = match self.kind {
            Kind::Cooperative => &["cooperative-sticky", "range"],
            _ => &["range"],
        };
        let held: Vec<i32> = self.held.iter().copied().collect();
        if self.kind == Kind::Consumer {
            let hb = if self.epoch == 0 { consumer_join(&self.id) } else { consumer_beat(&self.id, self.epoch, &held) };
            match g.heartbeat(hb, topics, now) {
                Ok(a) => {
                    self.epoch = a.member_epoch;
                    if let Some(given) = a.assignment {
                        self.held = parts(&given).into_iter().collect();
                    }
                }
                Err(_) => {
                    self.held.clear();
                    self.epoch = 0;
                }
            }
            return;
        }
        self.phase = match self.phase {
            Phase::Join => match g.classic_join(&join_req(&self.id, &held, protocols), "", topics, now) {
                Ok(a) => Phase::Sync(a.generation),
                Err(code) => panic!("{}: join refused {code:?}", self.id),
            },
            Phase::Sync(generation) => match g.classic_sync(&self.id, None, generation, None, now) {
                Ok(bytes) => {
                    self.held = parts(&wire::decode_assignment(&bytes).expect("decodes").partitions).into_iter().collect();
                    Phase::Stable(generation)
                }
                Err(_) => self.rejoin(),
            },
            Phase::Stable(generation) => match g.classic_heartbeat(&self.id, None, generation, now) {
                Ok(()) => Phase::Stable(generation),
                Err(_) => self.rejoin(),
            },
        };
    }

    fn rejoin(&mut self) -> Phase {
        if self.kind == Kind::Eager {
            self.held.clear();
        }
        Phase::Join
    }
}

/// Panics if two clients hold one partition.
fn check_clients(clients: &[Client], at: &str) {
    let mut seen: BTreeMap<i32, &str> = BTreeMap::new();
    for c in clients {
        for p in &c.held {
            if let Some(other) = seen.insert(*p, &c.id) {
                panic!("{at}: partition a-{p} held by clients {other} and {}", c.id);
            }
        }
    }
}

#[test]
fn in_generated_churn_of_classic_and_consumer_members_no_partition_is_held_twice() {
    for seed in 1..=40u64 {
        let mut rng = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        let topics: BTreeMap<String, i32> = [("a".to_string(), 6)].into();
        let mut g = group();
        let kinds = [Kind::Eager, Kind::Cooperative, Kind::Consumer];
        let mut clients: Vec<Client> = (0..3).map(|i| Client { id: format!("m{i}"), kind: kinds[i % 3], held: BTreeSet::new(), phase: Phase::Join, epoch: 0 }).collect();
        let mut made = 3;
        let mut now = 0;
        for step in 0..400 {
            now += 10;
            let at = format!("seed {seed} step {step}");
            match next(20) {
                // A client leaves (giving up what it holds) and another of a drawn kind joins.
                0 if clients.len() > 1 => {
                    let mut gone = clients.remove(next(clients.len() as u64) as usize);
                    gone.held.clear();
                    let _ = match gone.kind {
                        Kind::Consumer => g.heartbeat(Heartbeat { member_id: gone.id.clone(), member_epoch: -1, ..Heartbeat::default() }, &topics, now).map(drop),
                        _ => g.classic_leave(&gone.id, None, &topics),
                    };
                    made += 1;
                    clients.push(Client { id: format!("m{made}"), kind: kinds[next(3) as usize], held: BTreeSet::new(), phase: Phase::Join, epoch: 0 });
                }
                _ => {
                    let i = next(clients.len() as u64) as usize;
                    clients[i].step(&mut g, &topics, now);
                }
            }
            check_owners(&g);
            check_clients(&clients, &at);
        }
        // The churn stops: everyone reaches its target, and every partition is held.
        for round in 0..12 {
            for i in 0..clients.len() {
                now += 10;
                clients[i].step(&mut g, &topics, now);
                check_clients(&clients, &format!("seed {seed} settling round {round}"));
            }
        }
        let held: BTreeSet<i32> = clients.iter().flat_map(|c| c.held.iter().copied()).collect();
        assert_eq!(held, (0..6).collect(), "seed {seed}: not every partition held after the churn: {:?}", clients.iter().map(|c| (&c.id, c.kind, &c.held)).collect::<Vec<_>>());
    }
}
