//! Principals and ACLs in the simulator (issue 28 item 5): `scenarios/security/acls.toml`
//! holds its checkers over pinned seeds and replays byte for byte; its clients really are held
//! to the ACLs (alice's audit writes refused while denied, taken while not; bob reads orders
//! and never audit) and to their credentials (carol refused until hers is stored, through a
//! controller failover); and a broker that ignores DENY ACLs is caught by `authorized`, on a
//! seed that passes without it.

use crate::run;
use broker_core::broker::PlantedBug;
use sim::history::Outcome;
use sim::scenario::Scenario;
use std::path::PathBuf;

fn acls() -> (String, Scenario) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/security/acls.toml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (path.display().to_string(), Scenario::parse(&text).unwrap())
}

#[test]
fn the_acls_scenario_holds_the_clients_to_their_acls_and_replays() {
    let (path, s) = acls();
    for seed in 0..3 {
        let r = run(&s, &path, seed, None);
        assert!(r.passed(), "acls seed {seed}: {:?}", r.violations.first());
        let h = &r.history;
        assert_eq!(h.principals.get("producer-1").map(String::as_str), Some("User:alice"));
        assert_eq!(h.security_changes.len(), 11, "seven ACLs and four changes");
        assert!(h.security_changes.iter().all(|c| c.complete_ms.is_some()), "every change acknowledged through the failovers: {:?}", h.security_changes);
        // carol: refused until her credential is stored, then her writes are taken.
        let carol = |from: u64, to: u64| h.writes.iter().filter(move |w| w.process == "producer-3" && (from..to).contains(&w.complete_ms));
        assert!(carol(0, 3_000).all(|w| w.acknowledged().is_none()), "carol wrote before she had a credential");
        assert!(carol(4_000, 18_000).any(|w| w.acknowledged().is_some()), "carol's writes were not taken once her credential was stored");
        // alice on audit: refused while the deny stands, acknowledged while it is removed.
        let alice_audit = |from: u64, to: u64| h.writes.iter().filter(move |w| w.process == "producer-1" && (from..to).contains(&w.invoke_ms));
        assert!(alice_audit(1_000, 5_000).all(|w| w.acknowledged().is_none()), "alice wrote audit while denied");
        assert!(alice_audit(1_000, 5_000).any(|w| matches!(&w.outcome, Outcome::Fail(e) if e.starts_with("broker error 29:"))), "alice's audit writes were not refused TOPIC_AUTHORIZATION_FAILED");
        assert!(alice_audit(7_000, 11_000).any(|w| w.acknowledged().is_some()), "alice's audit writes were not taken once the deny was removed");
        assert!(h.writes.iter().any(|w| w.process == "producer-0" && w.acknowledged().is_some()), "alice never wrote orders");
        // bob: orders read, audit never (the prefixed deny); the anonymous reader reads audit.
        assert!(h.reads.iter().any(|r| r.process == "consumer-0"));
        assert!(!h.reads.iter().any(|r| r.process == "consumer-1"), "bob read audit");
        assert!(h.reads.iter().any(|r| r.process == "consumer-2"));
    }
    assert_eq!(run(&s, &path, 1, None).digest, run(&s, &path, 1, None).digest, "same seed, same trace");
}

#[test]
fn a_broker_ignoring_deny_acls_is_caught_by_authorized() {
    let (path, s) = acls();
    let seed = (0..10).find(|&seed| run(&s, &path, seed, Some(PlantedBug::AclDenyIgnored)).violations.iter().any(|v| v.checker == "authorized"));
    let seed = seed.expect("ignored DENY ACLs survived 10 acls seeds");
    let clean = run(&s, &path, seed, None);
    assert!(clean.passed(), "acls seed {seed} fails without the bug: {:?}", clean.violations.first());
}
