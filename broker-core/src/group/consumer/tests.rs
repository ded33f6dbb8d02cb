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
    Heartbeat { member_id: member_id.into(), member_epoch, instance_id: None, topics: (member_epoch == 0).then(|| ["a".to_string()].into()), owned: owned.map(tp) }
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
    let mut s = Script { group: ConsumerGroup::new("g", ServerAssignor::Uniform, 45_000), partitions: [("a".to_string(), 4)].into(), now: 0, text: String::new() };
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
