//! Seeds that fresh sweeps found failing (issue 26), each kept as a regression scenario that
//! tells its story in its header (`scenarios/regression/`), shrunk on the commit that failed and
//! pinned to its seed here. Each must pass: the bug it found (in the harness, a checker, the
//! broker or the client) stays fixed.

use crate::run;
use sim::scenario::Scenario;
use std::path::PathBuf;

/// (scenario under scenarios/regression/, seed, what was wrong).
const found_by_fresh_seeds: &[(&str, u64, &str)] = &[
    ("harness-pause-of-a-powered-off-broker", 135, "a pause of a dead broker was recorded as holding after its restart"),
    ("harness-power-loss-inside-a-power-loss", 64, "the first of two overlapping crashes restarted the node"),
    ("harness-kill-inside-a-power-loss", 129, "a kill inside a power loss restarted the node at its own end"),
    ("harness-kill-of-a-paused-broker", 184, "a pause outlived the crash of its process in the history"),
    ("handover-active-controller-disk-fails", 7123, "leader_handover gave an active controller a session, without the controller failover"),
    ("handover-broken-controller-names-itself", 7165, "a broken metadata quorum still named itself leader"),
    ("group-leader-assigns-without-metadata", 7557, "the client's group leader assigned from no metadata after a failed request"),
    ("group-churn-runs-into-healing", 7593, "member churn ran into the healing phase"),
];

#[test]
fn seeds_fresh_sweeps_found_stay_green() {
    let mut failures = Vec::new();
    for (name, seed, bug) in found_by_fresh_seeds {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/regression").join(format!("{name}.toml"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let s = Scenario::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(&s.name, name, "{}: the scenario is named after its file", path.display());
        let r = run(&s, &path.display().to_string(), *seed, None);
        if !r.passed() {
            failures.push(format!("{name} seed {seed} ({bug}): {}", r.violations[0]));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
