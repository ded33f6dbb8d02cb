//! The server-side assignors: a story of group changes snapshotted step by step for both (a
//! change in who owns what shows as a diff), and their contracts over generated groups.

use super::*;

fn topics(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|t| t.to_string()).collect()
}

fn member(instance: Option<&str>, subscribed: &[&str]) -> MemberSpec {
    MemberSpec { instance_id: instance.map(str::to_string), topics: topics(subscribed), target: TopicPartitions::new() }
}

/// One line per member: `m1 [i1] {a,b}: a=0,1 b=2`.
fn render(members: &GroupSpec, out: &GroupAssignment) -> String {
    let mut text = String::new();
    for (id, m) in members {
        let instance = m.instance_id.as_ref().map_or(String::new(), |i| format!(" [{i}]"));
        let subscribed = m.topics.iter().cloned().collect::<Vec<_>>().join(",");
        let parts: Vec<String> = out[id].iter().map(|(t, ps)| format!("{t}={}", ps.iter().map(i32::to_string).collect::<Vec<_>>().join(","))).collect();
        text += &format!("  {id}{instance} {{{subscribed}}}: {}\n", parts.join(" "));
    }
    text
}

/// Runs `assignor` over the story: each step changes the group, the assignor runs with each
/// member's previous target, and the result is printed.
fn story(assignor: ServerAssignor) -> String {
    let mut partitions: BTreeMap<String, i32> = [("a".to_string(), 6), ("b".to_string(), 3)].into();
    let mut members = GroupSpec::new();
    let mut text = String::new();
    let mut step = |what: &str, members: &mut GroupSpec, partitions: &BTreeMap<String, i32>| {
        let out = assignor.assign(members, partitions);
        check(members, partitions, &out);
        text += &format!("{what}\n{}", render(members, &out));
        for (id, m) in members.iter_mut() {
            m.target = out[id].clone();
        }
    };
    for id in ["m1", "m2", "m3"] {
        members.insert(id.into(), member(None, &["a", "b"]));
    }
    step("three members subscribe to a (6) and b (3)", &mut members, &partitions);
    members.insert("m4".into(), member(None, &["a", "b"]));
    step("m4 joins", &mut members, &partitions);
    members.remove("m2");
    step("m2 leaves", &mut members, &partitions);
    partitions.insert("a".into(), 8);
    step("a grows to 8 partitions", &mut members, &partitions);
    members.insert("s-old".into(), member(Some("static-1"), &["a", "b"]));
    step("a static member (static-1) joins", &mut members, &partitions);
    // The coordinator keeps a static member's target while its session lasts and hands it to
    // the member id it returns under.
    let returning = members.remove("s-old").expect("joined");
    members.insert("s-new".into(), returning);
    step("static-1 returns under a new member id, with its target", &mut members, &partitions);
    partitions.insert("c".into(), 4);
    members.insert("m5".into(), member(None, &["c"]));
    members.get_mut("m1").expect("m1").topics.insert("c".into());
    step("c (4) created; m5 subscribes to c alone, m1 adds c", &mut members, &partitions);
    members.remove("m3");
    members.remove("m4");
    step("m3 and m4 leave", &mut members, &partitions);
    text
}

/// Every partition of a subscribed topic goes to exactly one member, a subscriber of its topic;
/// every member has an entry; nothing outside the topics' partitions is given.
fn check(members: &GroupSpec, partitions: &BTreeMap<String, i32>, out: &GroupAssignment) {
    assert_eq!(out.keys().collect::<Vec<_>>(), members.keys().collect::<Vec<_>>(), "one entry per member");
    for (topic, &n) in partitions {
        let subscribed = members.values().any(|m| m.topics.contains(topic));
        for p in 0..n {
            let owners: Vec<&String> = out.iter().filter(|(_, a)| a.get(topic).is_some_and(|ps| ps.contains(&p))).map(|(id, _)| id).collect();
            assert_eq!(owners.len(), usize::from(subscribed), "{topic}-{p}: owners {owners:?}");
            if let Some(id) = owners.first() {
                assert!(members[*id].topics.contains(topic), "{topic}-{p} given to {id}, which does not subscribe");
            }
        }
    }
    for (id, a) in out {
        for (topic, ps) in a {
            let n = partitions.get(topic).copied().unwrap_or(0);
            assert!(ps.iter().all(|p| (0..n).contains(p)), "{id}: {topic} {ps:?} outside 0..{n}");
        }
    }
}

#[test]
fn uniform_through_group_changes() {
    insta::assert_snapshot!(story(ServerAssignor::Uniform));
}

#[test]
fn range_through_group_changes() {
    insta::assert_snapshot!(story(ServerAssignor::Range));
}

#[test]
fn range_without_a_previous_target_gives_kafkas_co_partitioned_ranges() {
    let members: GroupSpec = ["m1", "m2", "m3"].iter().map(|id| (id.to_string(), member(None, &["a", "b"]))).collect();
    let partitions: BTreeMap<String, i32> = [("a".to_string(), 7), ("b".to_string(), 7)].into();
    let out = ServerAssignor::Range.assign(&members, &partitions);
    let want = [("m1", vec![0, 1, 2]), ("m2", vec![3, 4]), ("m3", vec![5, 6])];
    for (id, ps) in want {
        assert_eq!(out[id]["a"], ps, "{id}: Kafka's range of a");
        assert_eq!(out[id]["b"], ps, "{id}: the same partition numbers of b");
    }
}

/// Generated groups (a seeded xorshift): the contract holds for both; with equal
/// subscriptions counts differ by at most one per topic for range and overall for uniform;
/// a member's previous target, when already balanced, is kept whole.
#[test]
fn contracts_over_generated_groups() {
    let mut rng = crate::testing::XorShift::new(0x9e37_79b9_7f4a_7c15);
    let mut next = |n: u64| rng.below(n as usize) as u64;
    for _ in 0..300 {
        let names = ["a", "b", "c"];
        let partitions: BTreeMap<String, i32> = names.iter().map(|t| (t.to_string(), next(9) as i32)).collect();
        let equal = next(2) == 0;
        let shared: Vec<&str> = names.iter().copied().filter(|_| next(3) > 0).collect();
        let mut members = GroupSpec::new();
        for i in 0..1 + next(6) {
            let subscribed: Vec<&str> = if equal { shared.clone() } else { names.iter().copied().filter(|_| next(2) == 0).collect() };
            let instance = (next(3) == 0).then(|| format!("static-{}", 9 - i));
            members.insert(format!("m{i}"), member(instance.as_deref(), &subscribed));
        }
        for assignor in ServerAssignor::ALL {
            let first = assignor.assign(&members, &partitions);
            check(&members, &partitions, &first);
            let mut again = members.clone();
            for (id, m) in again.iter_mut() {
                m.target = first[id].clone();
            }
            let second = assignor.assign(&again, &partitions);
            assert_eq!(first, second, "{}: a balanced target is kept whole", assignor.name());
            if equal {
                let counts = |topic: Option<&str>| -> Vec<usize> { first.values().map(|a| a.iter().filter(|(t, _)| topic.is_none_or(|x| x == t.as_str())).map(|(_, ps)| ps.len()).sum()).collect() };
                let spread = |c: Vec<usize>| c.iter().max().copied().unwrap_or(0) - c.iter().min().copied().unwrap_or(0);
                match assignor {
                    ServerAssignor::Uniform => assert!(spread(counts(None)) <= 1, "uniform: {first:?}"),
                    ServerAssignor::Range => names.iter().for_each(|t| assert!(spread(counts(Some(t))) <= 1, "range, {t}: {first:?}")),
                }
            }
        }
    }
}
