//! Client quotas in the simulator (issue 30 item 6): `scenarios/fast/quotas.toml`'s admin
//! really sets the quota — answered through the faults — and the brokers really hold "slow" to
//! it while "fast" writes on, so `quota_respected` judges a throttle that happened.

use crate::run;
use sim::scenario::Scenario;
use std::path::PathBuf;

#[test]
fn the_quota_is_set_and_holds_the_slow_client_alone() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/fast/quotas.toml");
    let s = Scenario::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let r = run(&s, &path.display().to_string(), 0, None);
    assert!(r.passed(), "quotas seed 0: {:?}", r.violations.first());
    let h = &r.history;
    assert_eq!(h.quota_changes.len(), 1);
    let change = &h.quota_changes[0];
    assert_eq!((change.code, change.producer_byte_rate), (Some(0), Some(20000.0)), "{change:?}");
    let from = change.complete_ms.expect("answered");
    let acked = |client: &str| -> usize {
        h.writes.iter().filter(|w| w.acknowledged().is_some() && w.invoke_ms >= from && w.complete_ms <= h.healed_at_ms && h.client_ids.get(&w.process).map(String::as_str) == Some(client)).map(|w| w.value.len() + w.key.as_ref().map_or(0, |k| k.len())).sum()
    };
    let elapsed_s = (h.healed_at_ms - from) as f64 / 1000.0;
    let (slow, fast) = (acked("slow") as f64 / elapsed_s, acked("fast") as f64 / elapsed_s);
    // One partition, so one broker's meter at a time: near the quota, allowing a window's burst.
    assert!(slow < 20000.0 * 1.5, "slow wrote {slow:.0} bytes/s under a 20000 quota");
    assert!(fast > 20000.0 * 5.0, "fast wrote only {fast:.0} bytes/s under no quota");
}
