//! The fault schedule of a run: the scenario's fixed faults plus the random mix drawn from the
//! seed, kept within the scenario's fault budget. Pure — a scenario and an RNG in, a sorted
//! list of faults out — so it compiles in the plain build too and is tested without madsim.
//!
//! The draws must never change order or number: the run's RNG goes on to draw the disk seed,
//! so one extra draw here changes every trace of every seed.

use crate::scenario::{self, FaultKind, FaultSpec, Scenario};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Shortest drawn fault, ms, when `for_max_ms` allows it: shorter ones barely outlast a
/// request and mostly test nothing.
const fault_ms_min: u64 = 100;

/// What a run under `seed` draws before it starts: the fault schedule, then the disk seed
/// (unless the scenario pins one: `disk_seed`). `cluster::run` runs exactly this schedule, and
/// `sim shrink` writes it out as fixed faults.
pub fn schedule(s: &Scenario, seed: u64) -> (Vec<FaultSpec>, u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let faults = derive_faults(s, &mut rng);
    let disk_seed = s.pinned_disk_seed().unwrap_or_else(|| rng.gen());
    (faults, disk_seed)
}

/// The fault schedule: the scenario's fixed faults plus the random mix drawn from the seed.
/// Node faults hit a random broker; link faults cut one direction between a random broker and
/// another random node (a client, or another broker).
pub fn derive_faults(s: &Scenario, rng: &mut ChaCha8Rng) -> Vec<FaultSpec> {
    let mut faults = s.faults.clone();
    if let Some(mix) = &s.random_faults {
        let brokers = s.broker_names();
        let nodes = s.node_names();
        // Validation refuses link kinds with no second node; should one get here anyway, the
        // mix draws from the other kinds rather than aim a link fault at a lone node.
        let kinds: Vec<_> = mix.kinds.iter().copied().filter(|k| !k.is_link() || nodes.len() > 1).collect();
        if !kinds.is_empty() && !brokers.is_empty() {
            let (kinds, max, for_max_ms) = if mix.swarm { swarm(&kinds, mix.max, mix.for_max_ms, rng) } else { (kinds, mix.max, mix.for_max_ms) };
            // A swarm also picks which brokers its faults aim at, so that several faults often
            // hit one broker in turn (isolated, then losing power; killed twice in a row).
            let brokers = if mix.swarm { subset(&brokers, rng) } else { brokers };
            let bursts: Vec<u64> = match mix.burst_ms {
                0 => Vec::new(),
                _ => (0..rng.gen_range(1..=3)).map(|_| rng.gen_range(0..s.duration_ms.max(1))).collect(),
            };
            let n = rng.gen_range(0..=max.min(scenario::random_faults_max));
            for _ in 0..n {
                let kind = kinds[rng.gen_range(0..kinds.len())];
                let at = match bursts.len() {
                    0 => rng.gen_range(0..s.duration_ms.max(1)),
                    b => (bursts[rng.gen_range(0..b)] + rng.gen_range(0..mix.burst_ms)).min(s.duration_ms.saturating_sub(1)),
                };
                // 100 ms at least, and never past `for_max_ms`: a smaller max is every length.
                let for_ms = rng.gen_range(for_max_ms.min(fault_ms_min)..=for_max_ms);
                let broker = &brokers[rng.gen_range(0..brokers.len())];
                let target = if kind == FaultKind::HoldRequest {
                    scenario::any_sender.to_string()
                } else if kind.is_link() {
                    let others: Vec<&String> = nodes.iter().filter(|n| *n != broker).collect();
                    let other = others[rng.gen_range(0..others.len())];
                    if rng.gen_bool(0.5) { format!("{broker}>{other}") } else { format!("{other}>{broker}") }
                } else if mix.leaders && !s.topics.is_empty() && rng.gen_bool(0.5) {
                    // Drawn only with `leaders` on: other scenarios draw exactly as before.
                    let t = &s.topics[rng.gen_range(0..s.topics.len())];
                    format!("{}{}-{}", scenario::leader_target_prefix, t.name, rng.gen_range(0..t.partitions.max(1)))
                } else if mix.controller && rng.gen_bool(0.25) {
                    // Drawn only with `controller` on, likewise.
                    scenario::controller_target.to_string()
                } else {
                    broker.clone()
                };
                let mut f = FaultSpec::new(at, kind, &target, for_ms);
                f.delay_ms = rng.gen_range(10..=300);
                f.loss_per_mille = rng.gen_range(0..=300);
                if kind == FaultKind::HoldRequest {
                    // Drawn only for a hold: other kinds draw exactly as before. The requests
                    // whose late copies end transactions (docs/transactions.md, section 4).
                    f.api = ["end_txn", "write_txn_markers"][rng.gen_range(0..2)].to_string();
                }
                if mix.brokers_at_once.is_none_or(|max| within_budget(&faults, &f, max as usize, mix.recovery_ms)) {
                    faults.push(f);
                }
            }
        }
    }
    faults.sort_by_key(|f| f.at);
    faults
}

/// A seed's own swarm: a non-empty subset of `kinds`, a count limit in 1..=`max` and a longest
/// fault in 100..=`for_max_ms`.
fn swarm(kinds: &[FaultKind], max: u32, for_max_ms: u64, rng: &mut ChaCha8Rng) -> (Vec<FaultKind>, u32, u64) {
    (subset(kinds, rng), rng.gen_range(1..=max.max(1)), rng.gen_range(100..=for_max_ms.max(100)))
}

/// A non-empty subset of `all` (each member with probability 1/2, else one at random).
fn subset<T: Clone>(all: &[T], rng: &mut ChaCha8Rng) -> Vec<T> {
    let mut on: Vec<T> = all.iter().filter(|_| rng.gen_bool(0.5)).cloned().collect();
    if on.is_empty() {
        on.push(all[rng.gen_range(0..all.len())].clone());
    }
    on
}

/// The brokers a fault makes faulty: its target, or a link's broker ends.
fn faulty_brokers(f: &FaultSpec) -> Vec<&str> {
    let ends = match f.link() {
        Some((a, b)) => vec![a, b],
        None => vec![f.target.as_str()],
    };
    // A `controller` or `leader:T-P` target counts as a broker of its own here; which broker it
    // is, and whether that keeps the budget, is settled at injection (`inject::Budget`).
    ends.into_iter().filter(|n| n.starts_with("broker-") || n.starts_with(scenario::leader_target_prefix) || *n == scenario::controller_target).collect()
}

/// Whether adding `f` keeps at most `max` brokers faulty at any moment, a broker counting as
/// faulty until `recovery_ms` after its fault ends. Checked at every fault start inside `f`'s
/// window (the number of faulty brokers only grows at a start).
pub(crate) fn within_budget(kept: &[FaultSpec], f: &FaultSpec, max: usize, recovery_ms: u64) -> bool {
    let window = |x: &FaultSpec| (x.at, x.at.saturating_add(x.for_ms).saturating_add(recovery_ms));
    let (start, end) = window(f);
    let starts = kept.iter().map(|x| x.at).filter(|&t| t > start && t < end).chain([start]);
    starts.into_iter().all(|t| {
        let mut faulty: Vec<&str> = kept.iter().chain([f]).filter(|x| window(x).0 <= t && t < window(x).1).flat_map(faulty_brokers).collect();
        faulty.sort_unstable();
        faulty.dedup();
        faulty.len() <= max
    })
}


#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::RandomFaults;

    fn fast(name: &str) -> Scenario {
        let path = format!("{}/../scenarios/fast/{name}.toml", env!("CARGO_MANIFEST_DIR"));
        Scenario::parse(&std::fs::read_to_string(&path).unwrap()).unwrap()
    }

    /// The schedule for `seed`, and the run's next draw (the disk seed `cluster::run` takes).
    fn draw(s: &Scenario, seed: u64) -> (Vec<FaultSpec>, u64) {
        schedule(s, seed)
    }

    /// `replicated` with a bigger mix (every kind, up to 20 faults of up to 3 s) and the budget
    /// given.
    fn swarm(brokers_at_once: Option<u32>, recovery_ms: u64) -> Scenario {
        let mut s = fast("replicated");
        let mix = s.random_faults.as_mut().unwrap();
        (mix.max, mix.for_max_ms, mix.brokers_at_once, mix.recovery_ms) = (20, 3_000, brokers_at_once, recovery_ms);
        s
    }

    /// The most brokers faulty at one moment, a broker counting until `recovery_ms` after its
    /// fault ends. The count only grows when a fault starts, so the starts are enough.
    fn most_faulty_at_once(faults: &[FaultSpec], recovery_ms: u64) -> usize {
        let faulty_at = |t: u64| {
            let live = faults.iter().filter(|f| f.at <= t && t < f.at + f.for_ms + recovery_ms);
            let mut brokers: Vec<&str> = live.flat_map(faulty_brokers).collect();
            brokers.sort_unstable();
            brokers.dedup();
            brokers.len()
        };
        faults.iter().map(|f| faulty_at(f.at)).max().unwrap_or(0)
    }

    #[test]
    fn the_same_seed_draws_the_same_schedule_and_other_seeds_differ() {
        let s = fast("random-faults");
        let mut distinct = std::collections::BTreeSet::new();
        for seed in 0..50 {
            let (faults, disk_seed) = draw(&s, seed);
            assert_eq!((faults.clone(), disk_seed), draw(&s, seed), "seed {seed}");
            distinct.insert(format!("{faults:?}"));
        }
        assert!(distinct.len() > 40, "only {} distinct schedules from 50 seeds", distinct.len());
    }

    /// Pinned from `cargo sim run scenarios/fast/replicated.toml --seed 1` (its `derived` lines):
    /// a change in what is drawn, or in how many draws, shows here before it shows in a trace.
    #[test]
    fn the_schedule_and_the_disk_seed_drawn_after_it_are_pinned_for_a_seed() {
        let (faults, disk_seed) = draw(&fast("replicated"), 1);
        let fault = |at, kind, target: &str, for_ms, delay_ms, loss_per_mille| FaultSpec { delay_ms, loss_per_mille, ..FaultSpec::new(at, kind, target, for_ms) };
        let expected = vec![fault(11605, FaultKind::Pause, "broker-1", 2750, 22, 263), fault(17316, FaultKind::IsolateOut, "broker-1", 388, 91, 11)];
        assert_eq!((faults, disk_seed), (expected, 902408894705456202));
        let (faults, disk_seed) = draw(&fast("random-faults"), 1);
        let targets: Vec<(u64, &str)> = faults.iter().map(|f| (f.at, f.target.as_str())).collect();
        assert_eq!(targets, [(3638, "broker-0"), (8510, "broker-0"), (21922, "consumer-1>broker-0"), (28249, "broker-0"), (28413, "broker-0")]);
        assert_eq!(disk_seed, 14174955670282043493);
    }

    #[test]
    fn a_pinned_disk_seed_replaces_the_drawn_one_and_leaves_the_faults_alone() {
        let mut s = fast("replicated");
        let (faults, drawn) = draw(&s, 1);
        s.disk_seed = Some("42".into());
        assert_eq!(draw(&s, 1), (faults, 42));
        assert_ne!(drawn, 42);
    }

    #[test]
    fn a_swarm_seed_picks_its_own_kinds_and_brokers_and_bursts_cluster_its_faults() {
        let mut s = swarm(None, 0);
        let mix = s.random_faults.as_mut().unwrap();
        (mix.swarm, mix.burst_ms) = (true, 2_000);
        let (mut kind_sets, mut focused) = (std::collections::BTreeSet::new(), 0);
        for seed in 0..300 {
            let (faults, _) = draw(&s, seed);
            assert_eq!(draw(&s, seed).0, faults, "seed {seed}");
            let kinds: std::collections::BTreeSet<&str> = faults.iter().map(|f| f.kind.name()).collect();
            kind_sets.insert(format!("{kinds:?}"));
            // Every start lies within 2 s after one of at most 3 moments: greedy covering by
            // 2 s windows needs at most 3 of them.
            let (mut windows, mut covered_to) = (0, None);
            for f in &faults {
                if covered_to.is_none_or(|end| f.at >= end) {
                    windows += 1;
                    covered_to = Some(f.at + 2_000);
                }
            }
            assert!(windows <= 3, "seed {seed}: faults spread over {windows} windows of 2 s: {faults:?}");
            let node_faults: Vec<&FaultSpec> = faults.iter().filter(|f| !f.kind.is_link()).collect();
            if node_faults.len() >= 3 && node_faults.iter().all(|f| f.target == node_faults[0].target) {
                focused += 1;
            }
        }
        assert!(kind_sets.len() > 100, "only {} distinct sets of kinds over 300 seeds", kind_sets.len());
        assert!(focused > 10, "only {focused} seeds aim three or more node faults at one broker");
    }

    #[test]
    fn fixed_faults_are_kept_and_the_schedule_is_sorted_by_start() {
        let mut s = swarm(Some(1), 5_000);
        // Two fixed faults on different brokers at once: over the budget, which validation
        // refuses; should such a scenario get here anyway, they are kept all the same (the
        // budget bounds what is drawn, not what the scenario asks for).
        s.faults = vec![FaultSpec::new(9_000, FaultKind::Kill, "broker-2", 500), FaultSpec::new(9_100, FaultKind::Pause, "broker-1", 500)];
        assert!(s.validate().unwrap_err().contains("brokers_at_once"), "{:?}", s.validate());
        for seed in 0..50 {
            let (faults, _) = draw(&s, seed);
            assert!(s.faults.iter().all(|fixed| faults.contains(fixed)), "seed {seed}: a fixed fault was dropped");
            assert!(faults.windows(2).all(|w| w[0].at <= w[1].at), "seed {seed}: not sorted");
            assert!(faults.len() <= s.faults.len() + scenario::random_faults_max as usize);
        }
    }

    #[test]
    fn a_drawn_fault_never_outlasts_for_max_ms() {
        let mut s = swarm(None, 0);
        for for_max_ms in [0, 1, 40, 99, 100, 101, 3_000] {
            s.random_faults.as_mut().unwrap().for_max_ms = for_max_ms;
            let lengths: Vec<u64> = (0..100).flat_map(|seed| draw(&s, seed).0).filter(|f| !s.faults.contains(f)).map(|f| f.for_ms).collect();
            assert!(!lengths.is_empty());
            assert!(lengths.iter().all(|&ms| ms <= for_max_ms && ms >= for_max_ms.min(fault_ms_min)), "for_max_ms {for_max_ms}: {lengths:?}");
        }
    }

    #[test]
    fn the_budget_never_lets_more_brokers_be_faulty_within_the_recovery_time() {
        for (max, recovery_ms) in [(1, 5_000), (1, 0), (2, 5_000)] {
            let s = swarm(Some(max), recovery_ms);
            let mut drawn = 0;
            for seed in 0..300 {
                let (faults, _) = draw(&s, seed);
                let most = most_faulty_at_once(&faults, recovery_ms);
                assert!(most <= max as usize, "seed {seed}: {most} brokers faulty at once, budget {max} with {recovery_ms} ms recovery: {faults:?}");
                drawn += faults.len();
            }
            assert!(drawn > 300, "budget {max}: only {drawn} faults over 300 seeds; the budget is dropping nearly everything");
        }
        // Without a budget the same mix does overlap, so the checks above are not vacuous.
        let s = swarm(None, 0);
        assert!((0..300).any(|seed| most_faulty_at_once(&draw(&s, seed).0, 5_000) > 1));
    }

    #[test]
    fn a_fault_counts_against_the_budget_on_its_broker_ends_until_recovered() {
        let kill = |at, target: &str| FaultSpec::new(at, FaultKind::Kill, target, 1_000);
        let link = |at, target: &str| FaultSpec::new(at, FaultKind::ClogLink, target, 1_000);
        let kept = [kill(0, "broker-0")];
        // Overlapping another broker's fault, or its recovery time; the same broker again is fine.
        assert!(!within_budget(&kept, &kill(500, "broker-1"), 1, 0));
        assert!(!within_budget(&kept, &kill(1_500, "broker-1"), 1, 1_000));
        assert!(within_budget(&kept, &kill(1_000, "broker-1"), 1, 0), "the window ends before its end");
        assert!(within_budget(&kept, &kill(500, "broker-0"), 1, 0));
        assert!(within_budget(&kept, &kill(500, "broker-1"), 2, 0));
        // A link counts its broker ends, not its client ends.
        assert!(within_budget(&kept, &link(500, "producer-0>broker-0"), 1, 0));
        assert!(!within_budget(&kept, &link(500, "broker-0>broker-1"), 1, 0));
        // A fault that starts earlier and is still running when a kept one starts counts too.
        assert!(!within_budget(&kept, &kill(0, "broker-2"), 1, 0));
        assert!(!within_budget(&[kill(600, "broker-0")], &kill(0, "broker-2"), 1, 0));
    }

    #[test]
    fn link_faults_join_a_broker_and_another_node_and_a_lone_broker_gets_none() {
        let s = swarm(None, 0);
        let nodes = s.node_names();
        let mut links = 0;
        for seed in 0..100 {
            for f in draw(&s, seed).0.iter().filter(|f| f.kind.is_link()) {
                let (a, b) = f.link().expect("a link target is a>b");
                assert!(a != b && nodes.iter().any(|n| n == a) && nodes.iter().any(|n| n == b), "seed {seed}: {}", f.target);
                assert!(a.starts_with("broker-") || b.starts_with("broker-"), "seed {seed}: {}", f.target);
                links += 1;
            }
        }
        assert!(links > 0);
        // One broker, no clients, a mix of link faults only (validation refuses this): nothing
        // to draw, and the RNG is left as it was.
        let mut lonely = fast("replicated");
        (lonely.brokers, lonely.producers, lonely.consumers) = (1, vec![], vec![]);
        lonely.random_faults = Some(RandomFaults { kinds: vec![FaultKind::ClogLink, FaultKind::SlowLink], max: 8, for_max_ms: 500, brokers_at_once: None, recovery_ms: 0, swarm: false, burst_ms: 0, leaders: false, controller: false });
        assert_eq!(draw(&lonely, 3), (vec![], ChaCha8Rng::seed_from_u64(3).gen()));
    }

    #[test]
    fn leader_targets_are_drawn_only_when_asked_and_name_a_partition_of_the_scenario() {
        let mut s = fast("replicated-fsync");
        let plain = schedule(&s, 7);
        assert!(plain.0.iter().all(|f| !f.target.starts_with(scenario::leader_target_prefix)));
        s.random_faults.as_mut().unwrap().leaders = true;
        let aimed: Vec<FaultSpec> = (0..20).flat_map(|seed| schedule(&s, seed).0).filter(|f| f.target.starts_with(scenario::leader_target_prefix)).collect();
        assert!(aimed.len() > 10, "{} leader-aimed faults in 20 seeds", aimed.len());
        for f in &aimed {
            let (topic, p) = scenario::leader_target(&f.target).expect("leader:TOPIC-P");
            assert!(s.topics.iter().any(|t| t.name == topic && (0..t.partitions).contains(&p)), "{}", f.target);
        }
    }
}
