//! The view on hand-written traces: parsing and its errors, the arrows and spans derived, the
//! causal past of a violation, and escaping (a `</script>` in a field stays text).

use super::causal::{leader_line, ArrowKind, Diagram, What};
use super::parse::parse;
use super::*;
use serde_json::{json, Value};

/// A small run: broker-0 leads p0, is killed and restarted, broker-1 takes over after a
/// reregister, a produce is acknowledged and lost, a consumer polls above the high watermark.
fn trace() -> String {
    let lines = [
        json!({"type": "header", "scenario": "tiny", "seed": 3, "version": "0", "scenario_path": "x.toml", "scenario_digest": "0",
            "derived": {"faults": [{"at": 200, "kind": "Kill", "target": "broker-0", "for": 100}], "disk_seed": 1}}),
        json!({"t": 0, "node": "broker-0", "event": "started"}),
        json!({"t": 0, "node": "broker-1", "event": "started"}),
        json!({"t": 10, "node": "admin", "event": "topics_created", "topics": ["orders"]}),
        json!({"t": 20, "node": "broker-0", "event": "broker_log", "level": "info", "line": "orders-0: leader at epoch 1 from offset 0"}),
        json!({"t": 50, "node": "producer-0", "event": "produce", "partition": 0, "first": 0, "count": 2, "ok": 0}),
        json!({"t": 60, "node": "consumer-0", "event": "poll", "records": 2, "first": 0, "last": 1}),
        json!({"t": 150, "node": "broker-0", "event": "reregister"}),
        json!({"t": 160, "node": "broker-1", "event": "broker_log", "level": "info", "line": "orders-0: leader at epoch 2 from offset 0"}),
        json!({"t": 170, "node": "producer-0", "event": "produce", "partition": 0, "first": 2, "count": 1, "ok": 0}),
        json!({"t": 200, "node": "broker-0", "event": "fault", "kind": "Kill", "for": 100, "disk": "x"}),
        json!({"t": 300, "node": "broker-0", "event": "restart"}),
        json!({"t": 400, "node": "final-reader", "event": "final_read", "topic": "orders", "partition": 0, "records": 1, "error": null}),
        json!({"type": "summary", "events": 12, "digest": "00", "verdicts": {"writes": 3, "acknowledged": 3, "violations": [
            {"checker": "acknowledged_durable", "topic": "orders", "partition": 0, "offsets": [1], "at_ms": 50, "detail": "gone", "loss": true, "acks": -1},
            {"checker": "read_above_hw", "topic": "orders", "partition": 0, "offsets": [1], "at_ms": 60, "detail": "hw 1", "loss": false, "acks": null},
            {"checker": "offsets_dense", "topic": "orders", "partition": 0, "offsets": [], "at_ms": 0, "detail": "gap", "loss": false, "acks": null},
        ], "allowed": []}}),
    ];
    lines.iter().map(Value::to_string).collect::<Vec<_>>().join("\n") + "\n"
}

fn diagram(text: &str) -> (ParsedTrace, Diagram) {
    let t = parse(text).unwrap();
    let d = Diagram::of(&t);
    (t, d)
}

fn lane(d: &Diagram, name: &str) -> usize {
    d.lanes.iter().position(|(n, _)| n == name).unwrap_or_else(|| panic!("no lane {name}"))
}

/// The point of the trace event on 1-based line `line`.
fn at_line(t: &ParsedTrace, d: &Diagram, line: usize) -> usize {
    let e = t.events.iter().position(|e| e.line == line).unwrap();
    d.points.iter().position(|p| p.what == What::Event(e)).unwrap()
}

#[test]
fn lanes_are_the_trace_nodes_brokers_first_then_checkers() {
    let (_, d) = diagram(&trace());
    let names: Vec<&str> = d.lanes.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["broker-0", "broker-1", "producer-0", "consumer-0", "admin", "final-reader", "harness", "checkers"]);
}

#[test]
fn arrows_follow_what_the_trace_records() {
    let (t, d) = diagram(&trace());
    let has = |from_line: Option<usize>, to_line: usize, kind: ArrowKind| {
        let to = at_line(&t, &d, to_line);
        d.arrows.iter().any(|a| a.kind == kind && a.to == to && from_line.is_none_or(|f| a.from == at_line(&t, &d, f)))
    };
    assert!(has(None, 11, ArrowKind::Inject), "the injector kills broker-0");
    assert!(has(None, 12, ArrowKind::Inject), "and restarts it");
    assert!(has(Some(8), 9, ArrowKind::Handover), "broker-0 reregisters, broker-1 takes orders-0");
    assert!(has(Some(5), 6, ArrowKind::Ack), "broker-0 leads orders-0 and acknowledges the first produce");
    assert!(has(Some(9), 10, ArrowKind::Ack), "broker-1 acknowledges the second");
    assert!(has(Some(9), 13, ArrowKind::Read), "the final read comes from the leader, broker-1");
    assert!(!d.arrows.iter().any(|a| a.to == at_line(&t, &d, 7)), "no arrow into a poll: it does not say who served it");
    assert!(d.gaps.iter().any(|g| g.contains("poll")));
}

#[test]
fn a_loss_violation_marks_its_produce_lost_and_others_acknowledged() {
    let (t, d) = diagram(&trace());
    assert_eq!(d.points[at_line(&t, &d, 6)].class, "lost", "offset 1 of the batch at 0+2 is lost");
    assert_eq!(d.points[at_line(&t, &d, 10)].class, "ack");
}

#[test]
fn faults_are_spans_from_fault_to_restart() {
    let (_, d) = diagram(&trace());
    assert_eq!(d.spans.len(), 1);
    let s = &d.spans[0];
    assert_eq!((s.lane, s.from, s.to, s.kind.as_str(), s.healed), (lane(&d, "broker-0"), 200, 300, "Kill", true));
}

#[test]
fn violations_sit_at_their_witness_and_their_past_follows_happens_before() {
    let (t, d) = diagram(&trace());
    assert_eq!(d.violation_past.len(), 3);
    let (durable, past) = &d.violation_past[0];
    assert_eq!(d.points[*durable].t, 50, "at the produce it judged");
    // Its causal past: the producer's first produce, broker-0 up to leading orders-0, and
    // nothing of the consumer or broker-1.
    assert_eq!(past[lane(&d, "producer-0")], 0);
    assert_eq!(past[lane(&d, "broker-0")], d.lane_pos[at_line(&t, &d, 5)] as i64);
    assert_eq!(past[lane(&d, "consumer-0")], -1);
    assert_eq!(past[lane(&d, "broker-1")], -1);
    let (read, past) = &d.violation_past[1];
    assert_eq!(d.points[*read].t, 60);
    assert_eq!(past[lane(&d, "consumer-0")], 0);
    let (dense, past) = &d.violation_past[2];
    assert_eq!(d.points[*dense].t, 400, "a final-state check sits at the partition's final read");
    assert!(past[lane(&d, "broker-1")] >= 0, "the final read came from broker-1");
}

#[test]
fn points_of_one_millisecond_are_laid_out_cause_first() {
    let (t, d) = diagram(&trace());
    for a in &d.arrows {
        assert!(d.x[a.from] < d.x[a.to] || d.points[a.from].t < d.points[a.to].t, "{a:?}");
    }
    // The violation at 50 ms follows the produce of 50 ms.
    assert!(d.x[at_line(&t, &d, 6)] < d.x[d.violation_past[0].0]);
}

#[test]
fn leader_lines_parse_topic_partition_and_epoch() {
    assert_eq!(leader_line("orders-1: leader at epoch 2 from offset 153"), Some(("orders-1".into(), 1, 2)));
    assert_eq!(leader_line("my-topic-12: leader at epoch 7 from offset 0"), Some(("my-topic-12".into(), 12, 7)));
    assert_eq!(leader_line("orders-1: replica opened"), None);
}

#[test]
fn malformed_lines_are_errors_naming_the_line() {
    let good = trace();
    let mut lines: Vec<&str> = good.lines().collect();
    lines[3] = "{not json";
    let err = render(&lines.join("\n"), "x").unwrap_err();
    assert!(matches!(err, ViewError::Line { line: 4, .. }), "{err}");
    assert!(err.to_string().starts_with("line 4: not JSON"), "{err}");

    let cases: [(&str, usize, &str); 6] = [
        ("", 0, "empty trace"),
        ("{\"t\": 1}", 1, "line 1: the first line must be the trace header"),
        ("{\"type\":\"header\"}\n[1,2]", 2, "line 2: not a JSON object"),
        ("{\"type\":\"header\"}\n{\"t\":-1,\"node\":\"a\",\"event\":\"e\"}", 2, "line 2: an event needs `t`"),
        ("{\"type\":\"header\"}\n{\"t\":5,\"node\":\"a\",\"event\":\"e\"}\n\n{\"t\":4,\"node\":\"a\",\"event\":\"e\"}", 4, "line 4: event at 4 ms after one at 5 ms"),
        ("{\"type\":\"header\"}\n{\"type\":\"summary\",\"verdicts\":{\"violations\":[3]}}", 2, "line 2: summary: `verdicts.violations`"),
    ];
    for (text, line, start) in cases {
        let err = render(text, "x").unwrap_err();
        assert!(err.to_string().starts_with(start), "{text:?}: {err}");
        if line > 0 {
            assert!(matches!(err, ViewError::Line { line: l, .. } if l == line), "{text:?}: {err:?}");
        }
    }
    let after = format!("{good}{{\"t\":1,\"node\":\"a\",\"event\":\"e\"}}\n");
    assert!(render(&after, "x").unwrap_err().to_string().contains("after the summary"));
}

#[test]
fn an_older_summary_with_violation_strings_still_renders() {
    let text = trace().replace(r#""violations":["#, r#""violations":["[read_above_hw] orders-0 offsets [1] at 60 ms: hw 1"],"ignored":["#);
    let (t, d) = diagram(&text);
    assert_eq!(t.violations.len(), 1);
    assert_eq!((t.violations[0].checker.as_str(), t.violations[0].at_ms), ("read_above_hw", Some(60)));
    assert_eq!(d.violation_past.len(), 1);
}

#[test]
fn script_json_escaping_keeps_the_value_and_drops_the_dangerous_characters() {
    let v = json!({"s": "</script><b>&amp;\u{2028}\u{2029}"});
    let escaped = escape_script_json(&v.to_string());
    for bad in ["<", ">", "&", "\u{2028}", "\u{2029}"] {
        assert!(!escaped.contains(bad), "{escaped}");
    }
    assert_eq!(serde_json::from_str::<Value>(&escaped).unwrap(), v);
}

#[test]
fn a_script_tag_in_a_trace_field_stays_text() {
    let evil = "</script><script>alert(1)</script><!--";
    let text = trace().replace("gone", evil).replace("\"node\":\"admin\"", "\"node\":\"</script>admin\"");
    let page = render(&text, "<title>x</title>").unwrap();
    // The page's own script elements: the error catcher, the model and the main script.
    assert_eq!(page.matches("<script").count(), 3, "no script element comes from the trace");
    assert_eq!(page.matches("</script>").count(), 3);
    assert!(!page.contains("alert(1)</"), "the payload is escaped");
    assert!(page.contains("<title>&lt;title&gt;x&lt;/title&gt;</title>"));
    // What the page parses is the trace's text, unchanged.
    let json = page.split_once("id=\"model\">").unwrap().1.split_once("</script>").unwrap().0;
    let model: Value = serde_json::from_str(json).unwrap();
    assert!(model.to_string().contains(r#"\"detail\":\"</script><script>alert(1)</script><!--\""#), "{model}");
    assert!(model["lanes"].as_array().unwrap().iter().any(|l| l["name"] == "</script>admin"));
}

#[test]
fn a_trace_over_the_limit_is_refused_before_parsing() {
    let dir = std::env::temp_dir().join(format!("seedlog-view-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("big.jsonl");
    let f = std::fs::File::create(&path).unwrap();
    f.set_len(TRACE_BYTES_MAX + 1).unwrap();
    let err = read_trace(&path).unwrap_err();
    assert_eq!(err, ViewError::TooLarge { bytes: TRACE_BYTES_MAX + 1 });
    assert!(err.to_string().contains("limit"), "{err}");
    std::fs::write(&path, trace()).unwrap();
    assert_eq!(read_trace(&path).unwrap(), trace());
    std::fs::write(&path, b"{\"type\":\"header\"}\n\xff\n").unwrap();
    assert_eq!(read_trace(&path).unwrap_err(), ViewError::Line { line: 2, why: "not UTF-8".into() });
    std::fs::remove_dir_all(&dir).unwrap();
}
