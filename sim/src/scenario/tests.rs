//! Scenario parsing and validation: defaults, strict field names, and every limit that
//! protects the harness refused with an error naming its field.

use super::*;

const SMOKE: &str = r#"
name = "smoke"
duration_ms = 1000
topics = [{ name = "t", partitions = 2 }]
producers = [{ topic = "t", rate = 100 }]
consumers = [{ topic = "t" }]
faults = [{ at = 100, kind = "power_loss", for = 200 }]
"#;

#[test]
fn parses_with_defaults_and_names_bad_fields() {
    let s = Scenario::parse(SMOKE).unwrap();
    assert_eq!((s.heal_ms, s.producers[0].acks.as_str(), s.faults[0].target.as_str()), (5000, "all", "broker-0"));
    let typo = SMOKE.replace("duration_ms", "duraton_ms");
    assert!(Scenario::parse(&typo).unwrap_err().contains("duraton_ms"));
    let kind = SMOKE.replace("power_loss", "meteor");
    assert!(Scenario::parse(&kind).unwrap_err().contains("meteor"));
    let topic = SMOKE.replace("{ topic = \"t\", rate", "{ topic = \"u\", rate");
    assert!(Scenario::parse(&topic).unwrap_err().contains("producers.topic 'u'"));
    let late = SMOKE.replace("at = 100", "at = 5000");
    assert!(Scenario::parse(&late).unwrap_err().contains("faults.at"));
}

/// `SMOKE` with `field = value` lines added before the tables (top-level keys).
fn with(extra: &str) -> String {
    format!("{extra}\n{SMOKE}")
}

fn rejected(text: &str, field: &str) {
    match Scenario::parse(text) {
        Ok(_) => panic!("accepted, expected an error naming {field}:\n{text}"),
        Err(e) => assert!(e.contains(field), "error {e:?} does not name {field}"),
    }
}

#[test]
fn idempotence_defaults_to_acks_all_and_is_refused_without_it() {
    let p = |acks: &str, idem: &str| SMOKE.replace("{ topic = \"t\", rate = 100 }", &format!("{{ topic = \"t\", rate = 100, acks = \"{acks}\"{idem} }}"));
    let idempotent = |text: String| Scenario::parse(&text).unwrap().producers[0].idempotent();
    assert!(Scenario::parse(SMOKE).unwrap().producers[0].idempotent(), "acks defaults to all, so idempotent");
    assert!(idempotent(p("all", "")));
    assert!(idempotent(p("-1", "")));
    assert!(!idempotent(p("1", "")));
    assert!(!idempotent(p("0", "")));
    assert!(!idempotent(p("all", ", idempotent = false")));
    assert!(!idempotent(p("1", ", idempotent = false")));
    rejected(&p("1", ", idempotent = true"), "producers.idempotent");
    rejected(&p("0", ", idempotent = true"), "producers.idempotent");
}

#[test]
fn process_and_disk_faults_on_clients_are_refused_network_faults_allowed() {
    for kind in ["kill", "power_loss", "pause", "slow_disk", "disk_full", "disk_eio"] {
        let text = SMOKE.replace("kind = \"power_loss\"", &format!("kind = \"{kind}\", target = \"producer-0\""));
        rejected(&text, "faults.target");
        let text = SMOKE.replace("kind = \"power_loss\"", &format!("kind = \"{kind}\", target = \"consumer-0\""));
        rejected(&text, "faults.target");
    }
    for kind in ["isolate", "isolate_in", "isolate_out"] {
        let text = SMOKE.replace("kind = \"power_loss\"", &format!("kind = \"{kind}\", target = \"consumer-0\""));
        Scenario::parse(&text).unwrap();
    }
    let link = SMOKE.replace("kind = \"power_loss\"", "kind = \"clog_link\", target = \"producer-0>broker-0\"");
    Scenario::parse(&link).unwrap();
    // Names that are no node of the scenario.
    rejected(&SMOKE.replace("kind = \"power_loss\"", "kind = \"isolate\", target = \"producer-1\""), "faults.target");
    rejected(&SMOKE.replace("kind = \"power_loss\"", "kind = \"slow_link\", target = \"broker-0>nobody\""), "faults.target");
    rejected(&SMOKE.replace("kind = \"power_loss\"", "kind = \"kill\", target = \"broker-0>producer-0\""), "faults.target");
}

#[test]
fn limits_that_protect_the_harness_name_their_field() {
    // Too many random faults.
    rejected(&with("random_faults = { kinds = [\"kill\"], max = 101 }"), "random_faults.max");
    Scenario::parse(&with("random_faults = { kinds = [\"kill\"], max = 100 }")).unwrap();
    // Link faults in the mix with nobody on the other end of the link.
    let lonely = "name = \"x\"\nduration_ms = 1000\ntopics = [{ name = \"t\" }]\n";
    rejected(&format!("{lonely}random_faults = {{ kinds = [\"kill\", \"clog_link\"], max = 3 }}"), "random_faults.kinds");
    rejected(&format!("{lonely}random_faults = {{ kinds = [\"slow_link\"], max = 3 }}"), "random_faults.kinds");
    Scenario::parse(&format!("{lonely}random_faults = {{ kinds = [\"kill\"], max = 3 }}")).unwrap();
    // Too many client nodes for the harness's address plan.
    let crowd = SMOKE.replace("rate = 100 }", "rate = 100, count = 200 }");
    rejected(&crowd, "producers.count");
    Scenario::parse(&SMOKE.replace("rate = 100 }", "rate = 100, count = 199 }")).unwrap();
    // Record sizes.
    rejected(&SMOKE.replace("rate = 100 }", "rate = 100, record_bytes = 0 }"), "producers.record_bytes");
    rejected(&SMOKE.replace("rate = 100 }", &format!("rate = 100, record_bytes = {} }}", record_bytes_max + 1)), "producers.record_bytes");
    Scenario::parse(&SMOKE.replace("rate = 100 }", &format!("rate = 100, record_bytes = {record_bytes_max} }}"))).unwrap();
    // Clocks that would overflow.
    rejected(&SMOKE.replace("duration_ms = 1000", &format!("duration_ms = {}", phase_ms_max + 1)), "duration_ms");
    rejected(&with(&format!("heal_ms = {}", phase_ms_max + 1)), "heal_ms");
    rejected(&SMOKE.replace("for = 200", &format!("for = {}", fault_ms_max + 1)), "faults.for");
    // Broker settings the broker would refuse to open with (it would never start).
    rejected(&with("broker = { segment_bytes = 0 }"), "broker.segment_bytes");
    rejected(&with("broker = { flush_messages = 0 }"), "broker.flush_messages");
    rejected(&with("broker = { disk_latency_us = [0, 10000000] }"), "broker.disk_latency_us");
    Scenario::parse(&with("broker = { segment_bytes = 65536, flush_messages = 1, disk_latency_us = [20, 200] }")).unwrap();
    rejected(&with(&format!("broker = {{ group_initial_rebalance_delay_ms = {} }}", phase_ms_max + 1)), "broker.group_initial_rebalance_delay_ms");
    Scenario::parse(&with("broker = { group_initial_rebalance_delay_ms = 0 }")).unwrap();
    // A commit lagging past the member's session would be a zombie's, not a racing member's.
    let group = |lag: u64| format!("{SMOKE}groups = [{{ id = \"g\", topic = \"t\", members = 2, commit_lag_ms = {lag} }}]\n");
    rejected(&group(3_001), "commit_lag_ms");
    Scenario::parse(&group(3_000)).unwrap();
}

/// The benchmark scenario docs/benchmarks.md reads its simulated rebalance figures from.
#[test]
fn the_bench_scenario_is_valid() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios/bench/group-rebalance.toml");
    let s = Scenario::parse(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert_eq!(s.broker.group_initial_rebalance_delay_ms, Some(0));
}

#[test]
fn the_matrix_scenarios_are_valid() {
    for row in crate::matrix::rows() {
        row.scenario.validate().unwrap_or_else(|e| panic!("{}: {e}", row.scenario.name));
    }
}

/// The whole error for `text`, which must be refused.
fn error(text: &str) -> String {
    Scenario::parse(text).expect_err("a bad scenario was accepted")
}

#[test]
fn bad_ranges_are_refused_with_a_readable_error() {
    // Topology.
    assert_eq!(error(&with("brokers = 0")), "scenario: brokers 0 must be 1..=9");
    assert_eq!(error(&with("brokers = 10")), "scenario: brokers 10 must be 1..=9");
    assert_eq!(error(&with("broker = { min_insync_replicas = 0 }")), "scenario: broker.min_insync_replicas must be at least 1");
    assert_eq!(
        error(&SMOKE.replace("partitions = 2 }", "partitions = 2, replication_factor = 2 }")),
        "scenario: topics.replication_factor of 't' must be 1..=1 (brokers)"
    );
    Scenario::parse(&with("brokers = 3").replace("partitions = 2 }", "partitions = 2, replication_factor = 3 }")).unwrap();
    rejected(&SMOKE.replace("partitions = 2", "partitions = 0"), "topics.partitions of 't'");
    rejected(&SMOKE.replace("topics = [{ name = \"t\", partitions = 2 }]", "topics = []"), "topics must name at least one topic");
    // Workloads.
    assert_eq!(error(&SMOKE.replace("rate = 100", "rate = 0")), "scenario: producers.rate 0 must be 1..=10000");
    assert_eq!(error(&SMOKE.replace("rate = 100", "rate = 10001")), "scenario: producers.rate 10001 must be 1..=10000");
    assert_eq!(error(&SMOKE.replace("rate = 100 }", "rate = 100, acks = \"2\" }")), "scenario: producers.acks '2' must be 0, 1 or all");
    assert_eq!(
        error(&SMOKE.replace("{ topic = \"t\" }", "{ topic = \"t\", max_wait_ms = -1 }")),
        format!("scenario: consumers.max_wait_ms -1 must be 0..={max_wait_ms_max}")
    );
    for bad in ["in_flight = 0", "in_flight = 6", "in_flight = 2, acks = \"1\""] {
        assert_eq!(error(&SMOKE.replace("rate = 100 }", &format!("rate = 100, {bad} }}"))), "scenario: producers.in_flight must be 1..=5, and above 1 needs an idempotent producer (acks = \"all\")".replace("in_flight must", &format!("in_flight {} must", &bad[12..13])));
    }
    Scenario::parse(&SMOKE.replace("rate = 100 }", "rate = 100, in_flight = 5 }")).unwrap();
    assert_eq!(error(&SMOKE.replace("rate = 100 }", "rate = 100, retries = 11 }")), "scenario: producers.retries 11 must be 0..=10");
    assert_eq!(Scenario::parse(&SMOKE.replace("rate = 100 }", "rate = 100, retries = 0 }")).unwrap().producers[0].retries, 0);
    // Faults.
    assert_eq!(error(&SMOKE.replace("for = 200", "for = 200, loss_per_mille = 1001")), "scenario: faults.loss_per_mille 1001 must be 0..=1000");
    assert_eq!(
        error(&SMOKE.replace("for = 200", &format!("for = 200, delay_ms = {}", link_delay_ms_max + 1))),
        format!("scenario: faults.delay_ms {} must be 0..={link_delay_ms_max}", link_delay_ms_max + 1)
    );
    assert_eq!(
        error(&SMOKE.replace("kind = \"power_loss\"", "kind = \"clog_link\", target = \"broker-0\"")),
        "scenario: faults.target 'broker-0': link faults take \"a>b\", others a node name"
    );
    assert_eq!(error(&SMOKE.replace("at = 100", "at = 1000")), "scenario: faults.at 1000 is not before duration_ms 1000");
    let mix = |fields: &str| with(&format!("random_faults = {{ kinds = [\"kill\"], max = 3, {fields} }}"));
    assert_eq!(error(&mix("brokers_at_once = 0")), "scenario: random_faults.brokers_at_once must be at least 1 (or unset for no budget)");
    rejected(&mix(&format!("recovery_ms = {}", fault_ms_max + 1)), "random_faults.recovery_ms");
    rejected(&mix(&format!("for_max_ms = {}", fault_ms_max + 1)), "random_faults.for_max_ms");
    Scenario::parse(&mix(&format!("brokers_at_once = 1, recovery_ms = {fault_ms_max}, for_max_ms = {fault_ms_max}"))).unwrap();
    // Fixed faults count against the budget and are never dropped: they must keep it.
    let budget = |faults: &str| with(&format!("brokers = 2\nrandom_faults = {{ kinds = [\"kill\"], max = 3, brokers_at_once = 1, recovery_ms = 300 }}")).replace("faults = [{ at = 100, kind = \"power_loss\", for = 200 }]", faults);
    let over = budget(r#"faults = [{ at = 100, kind = "kill", for = 200 }, { at = 550, kind = "kill", target = "broker-1", for = 200 }]"#);
    assert!(error(&over).starts_with("scenario: faults: kill on broker-1 at 550 ms makes more than random_faults.brokers_at_once = 1"), "{}", error(&over));
    Scenario::parse(&budget(r#"faults = [{ at = 100, kind = "kill", for = 200 }, { at = 600, kind = "kill", target = "broker-1", for = 200 }, { at = 700, kind = "pause", target = "broker-1", for = 100 }]"#)).unwrap();
    // Phases.
    assert_eq!(error(&SMOKE.replace("duration_ms = 1000", "duration_ms = 0")), format!("scenario: duration_ms 0 must be 1..={phase_ms_max}"));
}

#[test]
fn the_first_error_reported_follows_the_phases() {
    // A bad broker count (topology), a bad rate (workloads) and a late fault (faults) at once:
    // the earliest phase speaks, so fixing errors one by one converges.
    let all_bad = with("brokers = 0").replace("rate = 100", "rate = 0").replace("at = 100", "at = 5000");
    assert!(error(&all_bad).starts_with("scenario: brokers 0"), "{}", error(&all_bad));
    let two_bad = SMOKE.replace("rate = 100", "rate = 0").replace("at = 100", "at = 5000");
    assert!(error(&two_bad).starts_with("scenario: producers.rate"), "{}", error(&two_bad));
}

#[test]
fn node_names_are_brokers_then_each_producer_then_each_consumer() {
    let s = Scenario::parse(&with("brokers = 2").replace("rate = 100 }", "rate = 100, count = 2 }")).unwrap();
    assert_eq!(s.broker_names(), ["broker-0", "broker-1"]);
    assert_eq!(s.node_names(), ["broker-0", "broker-1", "producer-0", "producer-1", "consumer-0"]);
    assert_eq!(s.client_count(), 3);
}

#[test]
fn compacted_topics_tombstones_and_cleaner_backoff_are_checked() {
    let compacted = SMOKE
        .replace("{ name = \"t\", partitions = 2 }", "{ name = \"t\", partitions = 2, config = { \"cleanup.policy\" = \"compact\", \"delete.retention.ms\" = \"2000\" } }")
        .replace("{ topic = \"t\", rate = 100 }", "{ topic = \"t\", rate = 100, keys = 5, tombstone_per_mille = 50 }");
    let s = Scenario::parse(&format!("{compacted}\n[broker]\ncleaner_backoff_ms = 500\n")).unwrap();
    assert_eq!((s.broker.cleaner_backoff_ms, s.producers[0].tombstone_per_mille), (Some(500), 50));
    assert_eq!(s.compacted_topics(), [("t".to_string(), 2000)].into_iter().collect());
    assert_eq!(Scenario::parse(&toml::to_string(&s).unwrap()).unwrap(), s, "the new fields read back from their TOML");
    assert!(Scenario::parse(SMOKE).unwrap().compacted_topics().is_empty());
    let default_retention = compacted.replace(", \"delete.retention.ms\" = \"2000\"", "");
    assert_eq!(Scenario::parse(&default_retention).unwrap().compacted_topics()["t"], broker_core::constants::delete_retention_ms_default);
    rejected(&compacted.replace("\"compact\"", "\"squash\""), "topics.config of 't'");
    rejected(&compacted.replace("\"delete.retention.ms\"", "\"delete.retention.minutes\""), "topics.config of 't'");
    rejected(&compacted.replace(", keys = 5", ""), "producers.tombstone_per_mille");
    rejected(&compacted.replace(", keys = 5, tombstone_per_mille = 50", ""), "need keys");
    rejected(&compacted.replace("tombstone_per_mille = 50", "tombstone_per_mille = 1001"), "producers.tombstone_per_mille");
    rejected(&format!("{SMOKE}\n[broker]\ncleaner_backoff_ms = 0\n"), "broker.cleaner_backoff_ms");
}

#[test]
fn scenarios_without_the_new_fields_serialize_as_before() {
    // The scenario digest is taken over the re-serialized TOML: optional fields left at their
    // defaults must not appear, or every existing trace digest would change.
    let text = toml::to_string(&Scenario::parse(SMOKE).unwrap()).unwrap();
    for field in ["config", "tombstone_per_mille", "cleaner_backoff_ms"] {
        assert!(!text.contains(field), "{field} in\n{text}");
    }
}

#[test]
fn a_pinned_disk_seed_is_a_decimal_u64_in_a_string() {
    let s = Scenario::parse(&with("disk_seed = \"18446744073709551615\"")).unwrap();
    assert_eq!(s.pinned_disk_seed(), Some(u64::MAX));
    assert_eq!(Scenario::parse(SMOKE).unwrap().pinned_disk_seed(), None);
    for bad in ["\"18446744073709551616\"", "\"-1\"", "\"0x10\"", "\"\"", "\" 7\""] {
        rejected(&with(&format!("disk_seed = {bad}")), "disk_seed");
    }
    rejected(&with("disk_seed = 7"), "disk_seed");
}

#[test]
fn reassignments_name_a_partition_and_a_target_of_this_cluster_within_the_safety_phase() {
    let with_moves = |moves: &str| format!("brokers = 3\n{SMOKE}reassignments = [{moves}]\n");
    let s = Scenario::parse(&with_moves("{ at_ms = 400, topic = \"t\", partition = 1, replicas = [2, 0] }, { at_ms = 500, topic = \"t\", partition = 1, cancel = true }")).unwrap();
    assert_eq!((s.reassignments[0].target(), s.reassignments[1].target()), (Some(vec![2, 0]), None));
    // A scenario without any writes no `reassignments` back (its digest is unchanged).
    assert!(!toml::to_string(&Scenario::parse(SMOKE).unwrap()).unwrap().contains("reassignments"));
    let refused = |moves: &str, what: &str| {
        let e = error(&with_moves(moves));
        assert!(e.starts_with("scenario: reassignments: the one at ") && e.contains(what), "{e:?} does not say {what:?}");
    };
    refused("{ at_ms = 1000, topic = \"t\", partition = 0, replicas = [1] }", "within the safety phase, below duration_ms 1000");
    refused("{ at_ms = 1, topic = \"u\", partition = 0, replicas = [1] }", "topic 'u' is not among the scenario's topics");
    refused("{ at_ms = 1, topic = \"t\", partition = 2, replicas = [1] }", "partition 2 is not one of t's 0..2");
    refused("{ at_ms = 1, topic = \"t\", partition = -1, replicas = [1] }", "partition -1");
    refused("{ at_ms = 1, topic = \"t\", partition = 0, replicas = [] }", "replicas is empty");
    refused("{ at_ms = 1, topic = \"t\", partition = 0, replicas = [1, 3] }", "broker 3 in replicas [1, 3] is not one of 0..3");
    refused("{ at_ms = 1, topic = \"t\", partition = 0, replicas = [1, -1] }", "broker -1");
    refused("{ at_ms = 1, topic = \"t\", partition = 0, replicas = [1, 2, 1] }", "broker 1 is named twice in replicas [1, 2, 1] (at 2)");
    refused("{ at_ms = 1, topic = \"t\", partition = 0 }", "names neither replicas nor cancel = true");
    refused("{ at_ms = 1, topic = \"t\", partition = 0, replicas = [1], cancel = true }", "a cancel has no target");
    rejected(&with_moves("{ at_ms = 1, topic = \"t\", partition = 0, replica = [1] }"), "replica");
}

#[test]
fn quotas_name_a_producers_client_id_and_a_rate_or_a_removal_within_the_safety_phase() {
    let producers = "producers = [{ topic = \"t\", rate = 100, client_id = \"slow\", request_timeout_ms = 15000 }]\n";
    let with_quotas = |quotas: &str| format!("{}{producers}quotas = [{quotas}]\n", SMOKE.replace("producers = [{ topic = \"t\", rate = 100 }]\n", ""));
    let s = Scenario::parse(&with_quotas("{ at_ms = 400, client_id = \"slow\", producer_byte_rate = 2000 }, { at_ms = 500, client_id = \"slow\", remove = true }")).unwrap();
    assert_eq!((s.quotas[0].value(), s.quotas[1].value()), (Some(2000.0), None));
    assert_eq!((s.producers[0].client_id.as_deref(), s.producers[0].request_timeout_ms), (Some("slow"), Some(15000)));
    // A scenario without them writes no `quotas`, `client_id` or `request_timeout_ms` back.
    let back = toml::to_string(&Scenario::parse(SMOKE).unwrap()).unwrap();
    assert!(!back.contains("quotas") && !back.contains("client_id") && !back.contains("request_timeout_ms"));
    let refused = |quotas: &str, what: &str| {
        let e = error(&with_quotas(quotas));
        assert!(e.starts_with("scenario: quotas: the one at ") && e.contains(what), "{e:?} does not say {what:?}");
    };
    refused("{ at_ms = 1000, client_id = \"slow\", producer_byte_rate = 1 }", "within the safety phase, below duration_ms 1000");
    refused("{ at_ms = 1, client_id = \"fast\", producer_byte_rate = 1 }", "no producer has this client_id");
    refused("{ at_ms = 1, client_id = \"slow\", producer_byte_rate = 0.5 }", "producer_byte_rate 0.5 is not a rate of at least 1 byte/s");
    refused("{ at_ms = 1, client_id = \"slow\", producer_byte_rate = nan }", "producer_byte_rate NaN");
    refused("{ at_ms = 1, client_id = \"slow\" }", "names neither producer_byte_rate nor remove = true");
    refused("{ at_ms = 1, client_id = \"slow\", producer_byte_rate = 1, remove = true }", "a removal has no value");
    rejected(&with_quotas("{ at_ms = 1, client_id = \"slow\", consumer_byte_rate = 1 }"), "consumer_byte_rate");
    let many = vec!["{ at_ms = 1, client_id = \"slow\", remove = true }"; 65].join(", ");
    assert_eq!(error(&with_quotas(&many)), "scenario: 65 quota changes; at most 64");
    let producer = |extra: &str| format!("{}producers = [{{ topic = \"t\", rate = 100{extra} }}]\n", SMOKE.replace("producers = [{ topic = \"t\", rate = 100 }]\n", ""));
    assert_eq!(error(&producer(", request_timeout_ms = 99")), "scenario: producers.request_timeout_ms 99 must be 100..=30000");
    assert_eq!(error(&producer(", request_timeout_ms = 30001")), "scenario: producers.request_timeout_ms 30001 must be 100..=30000");
    assert_eq!(error(&producer(", client_id = \"\"")), "scenario: producers.client_id is empty; leave it out for the process name");
}

#[test]
fn joins_and_decommissions_name_brokers_that_are_not_voters_within_the_safety_phase() {
    let with = |brokers: u32, fields: &str| format!("brokers = {brokers}\n{SMOKE}{fields}\n");
    let s = Scenario::parse(&with(4, "joins = [{ at_ms = 300, broker = 3 }]\ndecommissions = [{ at_ms = 600, broker = 1 }, { at_ms = 700, broker = 3 }]\nreassignments = [{ at_ms = 400, topic = \"t\", partition = 0, replicas = [3] }]")).unwrap();
    assert_eq!((s.initial_brokers(), s.join_ms(3), s.decommission_ms(1)), (vec![0, 1, 2], Some(300), Some(600)));
    let back = toml::to_string(&Scenario::parse(SMOKE).unwrap()).unwrap();
    assert!(!back.contains("joins") && !back.contains("decommissions"), "a scenario without them writes neither back");
    let refused = |brokers: u32, fields: &str, what: &str| {
        let e = error(&with(brokers, fields));
        assert!(e.contains(what), "{e:?} does not say {what:?}");
    };
    refused(3, "joins = [{ at_ms = 1000, broker = 2 }]", "within the safety phase, below duration_ms 1000");
    refused(3, "joins = [{ at_ms = 1, broker = 3 }]", "broker 3 is not one of 0..3");
    refused(3, "joins = [{ at_ms = 1, broker = 0 }]", "broker 0 is a controller voter");
    refused(3, "broker = { controller_voters = 2 }\ndecommissions = [{ at_ms = 1, broker = 1 }]", "broker 1 is a controller voter (the first 2)");
    refused(3, "joins = [{ at_ms = 1, broker = 2 }, { at_ms = 2, broker = 2 }]", "broker 2 is named twice in joins");
    refused(3, "joins = [{ at_ms = 5, broker = 2 }]\ndecommissions = [{ at_ms = 5, broker = 2 }]", "not after it joins");
    let rf2 = format!("brokers = 2\n{}decommissions = [{{ at_ms = 5, broker = 1 }}]\n", SMOKE.replace("partitions = 2 }", "partitions = 2, replication_factor = 2 }"));
    assert!(error(&rf2).contains("2 brokers start with the cluster and 1 are left after the decommissions"), "{}", error(&rf2));
    refused(3, "joins = [{ at_ms = 500, broker = 2 }]\nreassignments = [{ at_ms = 400, topic = \"t\", partition = 0, replicas = [2] }]", "joins only at 500 ms");
    refused(3, "decommissions = [{ at_ms = 300, broker = 2 }]\nreassignments = [{ at_ms = 400, topic = \"t\", partition = 0, replicas = [2] }]", "decommissioned from 300 ms");
    rejected(&with(3, "joins = [{ at = 1, broker = 2 }]"), "at");
}
