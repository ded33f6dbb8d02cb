//! A KIP-848 group through joins, revocations, fencing, a static member's restart and a
//! session timeout, snapshotted heartbeat by heartbeat: each answer (or error) and every
//! member's epoch, state and partitions after it.

use super::*;

fn tp(a: &[i32]) -> TopicPartitions {
    match a.is_empty() {
        true => TopicPartitions::new(),
        false => [("a".to_string(), a.to_vec())].into(),
    }
}

fn hb(member_id: &str, member_epoch: i32, owned: Option<&[i32]>) -> Heartbeat {
    let joining = member_epoch == 0;
    let owned = owned.map(tp).or_else(|| joining.then(TopicPartitions::new));
    Heartbeat { member_id: member_id.into(), member_epoch, topics: joining.then(|| ["a".to_string()].into()), rebalance_timeout_ms: joining.then_some(300_000), owned, ..Heartbeat::default() }
}

struct Script {
    group: ConsumerGroup,
    partitions: BTreeMap<String, i32>,
    now: u64,
    text: String,
}

impl Script {
    fn beat(&mut self, what: &str, hb: Heartbeat) -> Option<Answer> {
        let result = self.group.heartbeat(hb, &self.partitions, self.now);
        let said = match &result {
            Ok(a) => format!("{} at epoch {}{}", a.member_id, a.member_epoch, a.assignment.as_ref().map_or(String::new(), |p| format!(", given {}", render(p)))),
            Err(code) => format!("{code:?}"),
        };
        self.text += &format!("{what}: {said}\n  group epoch {}\n", self.group.epoch);
        for (id, m) in &self.group.members {
            let a = &m.assignment;
            let revoking = if a.revoking.is_empty() { String::new() } else { format!(", revoking {}", render(&a.revoking)) };
            let away = if m.away { " (away)" } else { "" };
            self.text += &format!("  {id}{away}: epoch {} {:?} {}{revoking}\n", a.epoch, a.state, render(&a.assigned));
        }
        result.ok()
    }
}

fn render(p: &TopicPartitions) -> String {
    let parts: Vec<String> = p.iter().map(|(t, ps)| format!("{t}={}", ps.iter().map(i32::to_string).collect::<Vec<_>>().join(","))).collect();
    if parts.is_empty() { "-".into() } else { parts.join(" ") }
}

#[test]
fn a_group_through_joins_revocations_fencing_a_static_restart_and_a_timeout() {
    let mut s = Script { group: ConsumerGroup::new("g", &[ServerAssignor::Uniform], 45_000), partitions: [("a".to_string(), 4)].into(), now: 0, text: String::new() };
    let m1 = s.beat("m1 joins", hb("", 0, None)).expect("joined").member_id;
    s.beat("m1 says it owns what it was given", hb(&m1, 1, Some(&[0, 1, 2, 3])));
    let m2 = s.beat("m2 joins", hb("", 0, None)).expect("joined").member_id;
    s.beat("m1 heartbeats: told to revoke", hb(&m1, 1, None));
    s.beat("m2 heartbeats: nothing released yet", hb(&m2, 2, Some(&[])));
    s.beat("m1 let go of what it revoked", hb(&m1, 1, Some(&[0, 1])));
    s.beat("m2 heartbeats: given what m1 let go", hb(&m2, 2, Some(&[])));
    s.beat("m2 at an epoch it never had", hb(&m2, 7, Some(&[2, 3])));
    s.beat("an unknown member", hb("nobody", 3, None));
    s.now += 1_000;
    let mut join_static = hb("", 0, None);
    join_static.instance_id = Some("i1".into());
    let st = s.beat("static member i1 joins", join_static.clone()).expect("joined").member_id;
    s.beat("m1 heartbeats", hb(&m1, 2, Some(&[0, 1])));
    s.beat("m2 heartbeats", hb(&m2, 2, Some(&[2, 3])));
    s.beat("m1 heartbeats", hb(&m1, 2, Some(&[0])));
    s.beat("i1 heartbeats", hb(&st, 3, Some(&[])));
    s.beat("a second live i1", join_static.clone());
    s.beat("i1 leaves for a restart (-2)", hb(&st, -2, None));
    let back = s.beat("i1 back under a new member id", join_static).expect("back").member_id;
    s.now += 30_000;
    s.beat("m1 heartbeats", hb(&m1, 3, Some(&[0])));
    s.beat("i1 heartbeats", hb(&back, 3, Some(&[1])));
    s.now += 16_000;
    s.beat("m1 heartbeats after m2's session ended", hb(&m1, 3, Some(&[0])));
    s.beat("i1 heartbeats", hb(&back, 3, Some(&[1])));
    insta::assert_snapshot!(s.text);
}

fn join(g: &mut ConsumerGroup, id: &str, topics: &[&str], regex: Option<&str>, topics_now: &BTreeMap<String, i32>, now: u64) -> Answer {
    let hb = Heartbeat {
        member_id: id.into(),
        topics: Some(topics.iter().map(|t| t.to_string()).collect()),
        regex: regex.map(str::to_string),
        rebalance_timeout_ms: Some(10_000),
        owned: Some(TopicPartitions::new()),
        ..Heartbeat::default()
    };
    hb.validate(1).expect("a valid join");
    g.heartbeat(hb, topics_now, now).expect("joined")
}

#[test]
fn a_regex_subscription_takes_in_topics_created_later_and_never_internal_ones() {
    let mut topics: BTreeMap<String, i32> = [("orders-eu".to_string(), 2), ("payments".to_string(), 1), ("__consumer_offsets".to_string(), 50)].into();
    let mut g = ConsumerGroup::new("g", &ServerAssignor::ALL, 45_000);
    let a = join(&mut g, "m", &[], Some("orders-.*|__.*"), &topics, 0);
    assert_eq!(a.assignment, Some([("orders-eu".to_string(), vec![0, 1])].into()));
    let epoch = g.epoch;
    topics.insert("orders-us".into(), 1);
    let owned = Some([("orders-eu".to_string(), vec![0, 1])].into());
    let a = g.heartbeat(Heartbeat { member_id: "m".into(), member_epoch: a.member_epoch, owned, ..Heartbeat::default() }, &topics, 1).expect("heartbeat");
    assert_eq!(g.epoch, epoch + 1, "a matching topic created: a new epoch");
    assert_eq!(a.assignment, Some([("orders-eu".to_string(), vec![0, 1]), ("orders-us".to_string(), vec![0])].into()));
    // A topic nobody subscribes to changes nothing.
    topics.insert("other".into(), 3);
    g.heartbeat(Heartbeat { member_id: "m".into(), member_epoch: a.member_epoch, ..Heartbeat::default() }, &topics, 2).expect("heartbeat");
    assert_eq!(g.epoch, epoch + 1);
}

/// A heartbeat of `id` at its current epoch, its caller let DESCRIBE `describable` of what
/// its regex matches.
fn beat_seeing(g: &mut ConsumerGroup, id: &str, describable: &[&str], topics: &BTreeMap<String, i32>, now: u64) -> Answer {
    let member_epoch = g.members[id].assignment.epoch;
    let regex_allowed = Some(set(describable));
    g.heartbeat(Heartbeat { member_id: id.into(), member_epoch, regex_allowed, ..Heartbeat::default() }, topics, now).expect("heartbeat")
}

fn set(topics: &[&str]) -> BTreeSet<String> {
    topics.iter().map(|t| t.to_string()).collect()
}

#[test]
fn a_regex_subscribes_each_member_to_the_matches_its_own_caller_may_describe() {
    let mut topics: BTreeMap<String, i32> = [("a-one".to_string(), 2), ("a-two".to_string(), 1), ("b-one".to_string(), 2)].into();
    let mut g = ConsumerGroup::new("g", &ServerAssignor::ALL, 45_000);
    let joining = |id: &str, describable: &[&str]| Heartbeat {
        member_id: id.into(),
        regex: Some(".*".into()),
        regex_allowed: Some(set(describable)),
        rebalance_timeout_ms: Some(10_000),
        owned: Some(TopicPartitions::new()),
        ..Heartbeat::default()
    };
    // Alice may describe the a- topics only: `.*` gives her those, never b-one.
    let a = g.heartbeat(joining("alice", &["a-one", "a-two"]), &topics, 0).expect("alice joins");
    assert_eq!(a.assignment, Some([("a-one".to_string(), vec![0, 1]), ("a-two".to_string(), vec![0])].into()));
    // Bob, with the same regex, may describe everything: b-one is his alone.
    g.heartbeat(joining("bob", &["a-one", "a-two", "b-one"]), &topics, 1).expect("bob joins");
    assert_eq!(g.members["alice"].subscribed, set(&["a-one", "a-two"]));
    assert_eq!(g.target["bob"]["b-one"], vec![0, 1]);
    assert!(!g.target["alice"].contains_key("b-one"), "{:?}", g.target);
    // A topic created later that alice may describe joins her subscription at her own next
    // heartbeat, not at bob's (the set she may see is the one her last heartbeat said).
    topics.insert("a-three".into(), 1);
    beat_seeing(&mut g, "bob", &["a-one", "a-two", "a-three", "b-one"], &topics, 2);
    assert!(!g.members["alice"].subscribed.contains("a-three"));
    beat_seeing(&mut g, "alice", &["a-one", "a-two", "a-three"], &topics, 3);
    assert!(g.members["alice"].subscribed.contains("a-three"));
    // An ACL added for alice on b-one: at her next heartbeat it is hers to share; taken away,
    // it leaves her subscription and target at the heartbeat after.
    let epoch = g.epoch;
    beat_seeing(&mut g, "alice", &["a-one", "a-three", "a-two", "b-one"], &topics, 4);
    assert_eq!((g.epoch, &g.members["alice"].subscribed), (epoch + 1, &set(&["a-one", "a-three", "a-two", "b-one"])));
    beat_seeing(&mut g, "alice", &["a-one", "a-three", "a-two"], &topics, 5);
    assert_eq!(g.epoch, epoch + 2);
    assert!(!g.members["alice"].subscribed.contains("b-one") && !g.target["alice"].contains_key("b-one"), "{:?}", g.target);
    // No authorizer (describable None): every match, as before.
    beat_seeing(&mut g, "bob", &["a-one", "a-two", "a-three", "b-one"], &topics, 6);
    g.heartbeat(Heartbeat { member_id: "alice".into(), member_epoch: g.members["alice"].assignment.epoch, ..Heartbeat::default() }, &topics, 7).expect("heartbeat");
    assert_eq!(g.members["alice"].regex_allowed, None);
    assert!(g.members["alice"].subscribed.contains("b-one"));
}

#[test]
fn a_reloaded_regex_member_is_held_to_its_own_topics_until_it_heartbeats() {
    let topics: BTreeMap<String, i32> = [("a-one".to_string(), 2), ("a-two".to_string(), 1), ("b-one".to_string(), 2)].into();
    let mut g = ConsumerGroup::new("g", &ServerAssignor::ALL, 45_000);
    let joining = |id: &str, allowed: Option<&[&str]>| Heartbeat {
        member_id: id.into(),
        regex: Some(".*".into()),
        regex_allowed: allowed.map(set),
        rebalance_timeout_ms: Some(10_000),
        owned: Some(TopicPartitions::new()),
        ..Heartbeat::default()
    };
    // Alice may describe the a- topics only; bob (no authorizer check) every match.
    g.heartbeat(joining("alice", Some(&["a-one", "a-two"])), &topics, 0).expect("alice joins");
    g.heartbeat(joining("bob", None), &topics, 1).expect("bob joins");
    assert!(!g.target["alice"].contains_key("b-one"));
    // Another coordinator loads the group from its records (who may see what is not stored).
    let id = |t: &str| Some([t.len() as u8, t.as_bytes()[0], t.as_bytes()[2], 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    let names: BTreeMap<[u8; 16], String> = topics.keys().map(|t| (id(t).expect("named"), t.clone())).collect();
    let mut loaded = ConsumerGroup::new("g", &ServerAssignor::ALL, 45_000);
    for (key, value) in crate::group::consumer_stored::changes(&Default::default(), &g.view(), &id) {
        loaded.restore(key, value, &|i| names.get(&i).cloned(), 2);
    }
    loaded.loaded(&topics, 2);
    // Bob leaves: the target is computed again, alice alone in the group. She must not be
    // given b-one, which her caller may not DESCRIBE, before her own heartbeat says more.
    let bob_epoch = loaded.members["bob"].assignment.epoch;
    loaded.heartbeat(Heartbeat { member_id: "bob".into(), member_epoch: -1, ..Heartbeat::default() }, &topics, 3).expect("bob leaves");
    assert!(bob_epoch < loaded.epoch, "the target was computed again");
    assert_eq!(loaded.target["alice"].keys().collect::<Vec<_>>(), ["a-one", "a-two"], "{:?}", loaded.target);
    // Her first heartbeat replaces the held set with what her caller may see now.
    beat_seeing(&mut loaded, "alice", &["a-one", "a-two", "b-one"], &topics, 4);
    assert!(loaded.target["alice"].contains_key("b-one"), "{:?}", loaded.target);
}

#[test]
fn a_member_that_keeps_what_it_must_revoke_past_its_rebalance_timeout_is_removed() {
    let topics: BTreeMap<String, i32> = [("a".to_string(), 2)].into();
    let mut g = ConsumerGroup::new("g", &ServerAssignor::ALL, 45_000);
    let a = join(&mut g, "slow", &["a"], None, &topics, 0);
    let owned = Some([("a".to_string(), vec![0, 1])].into());
    g.heartbeat(Heartbeat { member_id: "slow".into(), member_epoch: a.member_epoch, owned: owned.clone(), ..Heartbeat::default() }, &topics, 100).expect("heartbeat");
    join(&mut g, "new", &["a"], None, &topics, 1_000);
    g.heartbeat(Heartbeat { member_id: "slow".into(), member_epoch: a.member_epoch, owned: owned.clone(), ..Heartbeat::default() }, &topics, 2_000).expect("told to revoke");
    assert_eq!(g.members["slow"].revoke_by, Some(12_000), "its rebalance timeout runs from when it was told");
    g.heartbeat(Heartbeat { member_id: "slow".into(), member_epoch: a.member_epoch, owned, ..Heartbeat::default() }, &topics, 11_999).expect("still within it");
    assert_eq!(g.next_deadline(), Some(12_000));
    g.expire(12_000);
    assert!(!g.members.contains_key("slow"));
    assert_eq!(g.target["new"], [("a".to_string(), vec![0, 1])].into());
}

#[test]
fn the_assignor_most_members_ask_for_is_used() {
    let topics: BTreeMap<String, i32> = [("a".to_string(), 4)].into();
    let mut g = ConsumerGroup::new("g", &ServerAssignor::ALL, 45_000);
    join(&mut g, "m1", &["a"], None, &topics, 0);
    assert_eq!(g.assignor, ServerAssignor::Uniform, "none asked: the first configured");
    let hb = |id: &str| Heartbeat { member_id: id.into(), topics: Some(["a".to_string()].into()), assignor: Some("range".into()), rebalance_timeout_ms: Some(1), owned: Some(TopicPartitions::new()), ..Heartbeat::default() };
    g.heartbeat(hb("m2"), &topics, 1).expect("joined");
    assert_eq!(g.assignor, ServerAssignor::Range);
}

#[test]
fn heartbeats_are_refused_as_kafka_refuses_them() {
    let ok = Heartbeat { member_id: "m".into(), topics: Some(BTreeSet::new()), rebalance_timeout_ms: Some(1), owned: Some(TopicPartitions::new()), ..Heartbeat::default() };
    assert_eq!(ok.validate(1), Ok(()));
    let code = |hb: Heartbeat, v| hb.validate(v).err().map(|(c, _)| c);
    assert_eq!(code(Heartbeat { member_id: String::new(), ..ok.clone() }, 1), Some(Code::InvalidRequest), "v1: the client names itself");
    assert_eq!(code(Heartbeat { member_id: String::new(), ..ok.clone() }, 0), None);
    assert_eq!(code(Heartbeat { rebalance_timeout_ms: None, ..ok.clone() }, 1), Some(Code::InvalidRequest));
    assert_eq!(code(Heartbeat { owned: Some([("a".to_string(), vec![0])].into()), ..ok.clone() }, 1), Some(Code::InvalidRequest));
    assert_eq!(code(Heartbeat { topics: None, ..ok.clone() }, 1), Some(Code::InvalidRequest));
    assert_eq!(code(Heartbeat { assignor: Some("sticky".into()), ..ok.clone() }, 1), Some(Code::UnsupportedAssignor));
    assert_eq!(code(Heartbeat { regex: Some("(".into()), ..ok.clone() }, 1), Some(Code::InvalidRegularExpression));
    assert_eq!(code(Heartbeat { member_epoch: -2, ..ok.clone() }, 1), Some(Code::InvalidRequest), "only a static member leaves for a while");
}

#[test]
fn commits_are_checked_against_member_epochs() {
    let topics: BTreeMap<String, i32> = [("a".to_string(), 1)].into();
    let mut g = ConsumerGroup::new("g", &ServerAssignor::ALL, 45_000);
    assert_eq!(g.check_member("", -1), Ok(()), "an empty group takes a commit from outside");
    let a = join(&mut g, "m", &["a"], None, &topics, 0);
    assert_eq!(g.check_member("", -1), Err(Code::UnknownMemberId));
    assert_eq!(g.check_member("m", a.member_epoch), Ok(()));
    assert_eq!(g.check_member("m", a.member_epoch - 1), Err(Code::StaleMemberEpoch));
    assert_eq!(g.check_member("x", a.member_epoch), Err(Code::UnknownMemberId));
}
