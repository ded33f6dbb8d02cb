//! The diagram's model: lanes, points on them, the cross-lane arrows the trace supports, fault
//! spans, and the happens-before graph (each lane's program order plus the arrows) as a petgraph
//! `DiGraph`. Its topological order lays out points that share a millisecond (a cause is drawn
//! left of its effect), and gives every point a vector clock: the causal past of a violation is,
//! on each lane, a prefix up to the clock's entry for that lane.
//!
//! Only what the trace records becomes an arrow. What it does not record (which broker served a
//! poll, which topic a produce went to when there are several) is listed in `gaps`, not guessed.

use super::parse::{ParsedTrace, SummaryViolation};
use super::VIOLATIONS_DRAWN_MAX;
use petgraph::algo::toposort;
use petgraph::graph::{DiGraph, NodeIndex};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// The lane violations are drawn on (not a node of the run).
pub const CHECKERS_LANE: &str = "checkers";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LaneKind {
    Broker,
    Producer,
    Consumer,
    Admin,
    Reader,
    Harness,
    Other,
    Checkers,
}

impl LaneKind {
    fn of(name: &str) -> LaneKind {
        let prefix = name.trim_end_matches(|c: char| c.is_ascii_digit()).trim_end_matches('-');
        match prefix {
            "broker" => LaneKind::Broker,
            "producer" => LaneKind::Producer,
            "consumer" => LaneKind::Consumer,
            "admin" => LaneKind::Admin,
            "final-reader" => LaneKind::Reader,
            "harness" => LaneKind::Harness,
            _ => LaneKind::Other,
        }
    }

    fn name(self) -> &'static str {
        match self {
            LaneKind::Broker => "broker",
            LaneKind::Producer => "producer",
            LaneKind::Consumer => "consumer",
            LaneKind::Admin => "admin",
            LaneKind::Reader => "reader",
            LaneKind::Harness => "harness",
            LaneKind::Other => "other",
            LaneKind::Checkers => "checkers",
        }
    }
}

/// Lane order: by kind, then by the name's number (`broker-10` after `broker-2`), then name.
fn lane_key(name: &str) -> (LaneKind, u64, String) {
    let digits: String = name.chars().rev().take_while(|c| c.is_ascii_digit()).collect::<Vec<_>>().into_iter().rev().collect();
    (LaneKind::of(name), digits.parse().unwrap_or(0), name.to_string())
}

/// What a point stands for.
#[derive(Debug, Clone, PartialEq)]
pub enum What {
    /// The trace's event at this index.
    Event(usize),
    /// The harness applying (or undoing) the header schedule's fault at this index.
    Inject { fault: usize, undo: bool },
    /// The summary's violation at this index.
    Violation(usize),
}

#[derive(Debug, Clone)]
pub struct Point {
    pub lane: usize,
    pub t: u64,
    pub what: What,
    /// Drawing class: `fault`, `heal`, `ack`, `lost`, `leader`, `violation`, ...
    pub class: &'static str,
    pub label: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArrowKind {
    /// The harness injects a fault into its target, or undoes it.
    Inject,
    /// A leader epoch follows the previous one of the same partition on another broker.
    Epoch,
    /// A broker reregisters and a partition it led gets a leader elsewhere.
    Handover,
    /// The partition's leader acknowledges a produce.
    Ack,
    /// The partition's leader serves the final read.
    Read,
    /// The event that shows a violation, to the violation.
    Witness,
}

impl ArrowKind {
    fn name(self) -> &'static str {
        match self {
            ArrowKind::Inject => "inject",
            ArrowKind::Epoch => "epoch",
            ArrowKind::Handover => "handover",
            ArrowKind::Ack => "ack",
            ArrowKind::Read => "read",
            ArrowKind::Witness => "witness",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Arrow {
    pub from: usize,
    pub to: usize,
    /// Drawn as leaving its lane at this time: an acknowledgement leaves the leader when the
    /// producer hears it, not at the leader's previous event.
    pub drawn_from_t: u64,
    pub kind: ArrowKind,
}

/// A fault held on a lane: from its `fault` event to its `heal` or `restart`, or to the end.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub lane: usize,
    pub from: u64,
    pub to: u64,
    pub kind: String,
    pub healed: bool,
}

#[derive(Debug)]
pub struct Diagram {
    pub lanes: Vec<(String, LaneKind)>,
    pub points: Vec<Point>,
    pub arrows: Vec<Arrow>,
    pub spans: Vec<Span>,
    pub graph: DiGraph<usize, ArrowKindOrOrder>,
    /// Each point's position within its lane (program order).
    pub lane_pos: Vec<usize>,
    /// Layout time: `t` plus a fraction that orders points of one millisecond topologically.
    pub x: Vec<f64>,
    /// Per drawn violation: its point and, per lane, the last lane position in its causal past
    /// (-1: nothing on that lane).
    pub violation_past: Vec<(usize, Vec<i64>)>,
    pub end_t: u64,
    /// What the trace does not record, so the diagram does not draw.
    pub gaps: Vec<String>,
}

/// A happens-before edge: a lane's program order, or an arrow between lanes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArrowKindOrOrder {
    Order,
    Arrow(ArrowKind),
}

/// `topic-partition: leader at epoch E from offset O`, as the broker logs taking a leadership.
pub fn leader_line(line: &str) -> Option<(String, i64, i64)> {
    let (tp, rest) = line.split_once(": leader at epoch ")?;
    let mut words = rest.split_whitespace();
    let epoch = words.next()?.parse().ok()?;
    let (_, p) = tp.rsplit_once('-')?;
    Some((tp.to_string(), p.parse().ok()?, epoch))
}

fn str_field<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

impl Diagram {
    pub fn of(trace: &ParsedTrace) -> Diagram {
        let mut b = Builder::new(trace);
        b.points();
        b.arrows();
        b.finish()
    }
}

struct Builder<'a> {
    trace: &'a ParsedTrace,
    lanes: Vec<(String, LaneKind)>,
    lane_of: BTreeMap<String, usize>,
    points: Vec<Point>,
    arrows: Vec<Arrow>,
    spans: Vec<Span>,
    gaps: Vec<String>,
    /// The point of each trace event.
    event_point: Vec<usize>,
    /// The header schedule's faults: (at, kind, target, for).
    schedule: Vec<(u64, String, String, u64)>,
    /// The one topic every produce goes to, when the trace has exactly one.
    topic: Option<String>,
    end_t: u64,
}

impl<'a> Builder<'a> {
    fn new(trace: &'a ParsedTrace) -> Builder<'a> {
        let schedule: Vec<_> = trace.header["derived"]["faults"]
            .as_array()
            .map(|fs| fs.iter().map(|f| (f["at"].as_u64().unwrap_or(0), str_field(f, "kind").unwrap_or("?").to_string(), str_field(f, "target").unwrap_or("?").to_string(), f["for"].as_u64().unwrap_or(0))).collect())
            .unwrap_or_default();
        let mut names: BTreeSet<&str> = trace.events.iter().map(|e| e.node.as_str()).collect();
        if !schedule.is_empty() {
            names.insert("harness");
        }
        let mut lanes: Vec<(String, LaneKind)> = names.iter().map(|n| (n.to_string(), LaneKind::of(n))).collect();
        lanes.sort_by_key(|(n, _)| lane_key(n));
        if !trace.violations.is_empty() {
            lanes.push((CHECKERS_LANE.to_string(), LaneKind::Checkers));
        }
        let lane_of = lanes.iter().enumerate().map(|(i, (n, _))| (n.clone(), i)).collect();
        let topics: BTreeSet<String> = trace.events.iter().filter(|e| e.event == "topics_created").flat_map(|e| e.fields["topics"].as_array().cloned().unwrap_or_default()).filter_map(|t| t.as_str().map(str::to_string)).collect();
        let mut gaps = Vec::new();
        let topic = match topics.len() {
            1 => topics.into_iter().next(),
            0 => None,
            n => {
                gaps.push(format!("no acknowledgement arrows: `produce` events do not name their topic and the trace has {n} topics"));
                None
            }
        };
        gaps.push("no arrows into `poll`: a poll event names neither the partitions nor the broker that served it".into());
        let end_t = trace.events.last().map_or(0, |e| e.t).max(schedule.iter().map(|f| f.0 + f.3).max().unwrap_or(0));
        Builder { trace, lanes, lane_of, points: Vec::new(), arrows: Vec::new(), spans: Vec::new(), gaps, event_point: Vec::new(), schedule, topic, end_t }
    }

    fn lane(&self, name: &str) -> usize {
        self.lane_of[name]
    }

    fn points(&mut self) {
        let lost = self.lost_offsets();
        for (i, e) in self.trace.events.iter().enumerate() {
            let (class, label) = self.classify(e, &lost);
            self.event_point.push(self.points.len());
            self.points.push(Point { lane: self.lane(&e.node), t: e.t, what: What::Event(i), class, label });
        }
        for (i, (at, kind, target, for_ms)) in self.schedule.clone().into_iter().enumerate() {
            let lane = self.lane("harness");
            self.points.push(Point { lane, t: at, what: What::Inject { fault: i, undo: false }, class: "inject", label: format!("inject {kind} → {target}") });
            self.points.push(Point { lane, t: at + for_ms, what: What::Inject { fault: i, undo: true }, class: "inject", label: format!("undo {kind} → {target}") });
        }
        self.spans();
    }

    /// (partition, offset) of every record a loss violation reports, for the one topic.
    fn lost_offsets(&self) -> BTreeSet<(i64, i64)> {
        let mut lost = BTreeSet::new();
        for v in self.trace.violations.iter().filter(|v| v.loss) {
            if let (Some(p), true) = (v.partition, self.topic.as_deref().is_none_or(|t| t == v.topic)) {
                lost.extend(v.offsets.iter().map(|&o| (p, o)));
            }
        }
        lost
    }

    fn classify(&self, e: &super::TraceEvent, lost: &BTreeSet<(i64, i64)>) -> (&'static str, String) {
        let f = &e.fields;
        match e.event.as_str() {
            "produce" => {
                let p = f["partition"].as_i64().unwrap_or(-1);
                let count = f["count"].as_i64().unwrap_or(1).max(1);
                match f["ok"].as_i64() {
                    Some(base) if base >= 0 => {
                        let is_lost = (base..base + count).any(|o| lost.contains(&(p, o)));
                        (if is_lost { "lost" } else { "ack" }, format!("p{p} @{base}+{count}{}", if is_lost { " LOST" } else { "" }))
                    }
                    Some(_) => ("sent", format!("p{p} sent (acks=0)")),
                    None if f.get("fail").is_some() => ("fail", format!("p{p} failed")),
                    None => ("unknown", format!("p{p} unknown")),
                }
            }
            "fault" => ("fault", format!("fault {}", str_field(f, "kind").unwrap_or("?"))),
            "heal" | "restart" => ("heal", e.event.clone()),
            "fault_skipped" => ("skipped", format!("skipped {} → {}", str_field(f, "kind").unwrap_or("?"), str_field(f, "target").unwrap_or("?"))),
            "broker_log" => match leader_line(str_field(f, "line").unwrap_or_default()) {
                Some((tp, _, epoch)) => ("leader", format!("{tp} leader e{epoch}")),
                None => ("log", str_field(f, "line").unwrap_or_default().chars().take(80).collect()),
            },
            "reregister" => ("reregister", "reregister".into()),
            "poll" => ("poll", format!("poll {}..{}", f["first"], f["last"])),
            "poll_error" => ("fail", "poll error".into()),
            "final_read" => ("read", format!("final read {}-{}", str_field(f, "topic").unwrap_or("?"), f["partition"])),
            other => ("other", other.to_string()),
        }
    }

    /// Each `fault` event opens a span on its lane; the next `heal` or `restart` of that lane
    /// with the same kind (a restart ends any crash) closes it.
    fn spans(&mut self) {
        let mut open: BTreeMap<usize, Vec<(u64, String)>> = BTreeMap::new();
        for e in &self.trace.events {
            let lane = self.lane_of[&e.node];
            let kind = str_field(&e.fields, "kind").unwrap_or("?").to_string();
            match e.event.as_str() {
                "fault" => open.entry(lane).or_default().push((e.t, kind)),
                "heal" | "restart" => {
                    let held = open.entry(lane).or_default();
                    let i = held.iter().position(|(_, k)| e.event == "restart" || *k == kind).or(if held.is_empty() { None } else { Some(0) });
                    if let Some(i) = i {
                        let (from, kind) = held.remove(i);
                        self.spans.push(Span { lane, from, to: e.t, kind, healed: true });
                    }
                }
                _ => {}
            }
        }
        for (lane, held) in open {
            for (from, kind) in held {
                self.spans.push(Span { lane, from, to: self.end_t, kind, healed: false });
            }
        }
        self.spans.sort_by_key(|s| (s.lane, s.from));
    }

    fn arrows(&mut self) {
        self.inject_arrows();
        self.leader_arrows();
        self.violations();
    }

    /// The k-th injection of (target, kind) in the schedule causes the k-th `fault` event of
    /// that kind on the target; its undo causes the matching `heal` or `restart`.
    fn inject_arrows(&mut self) {
        let mut used = BTreeSet::new();
        for (i, (_, kind, target, _)) in self.schedule.clone().into_iter().enumerate() {
            let inject = self.points.iter().position(|p| p.what == What::Inject { fault: i, undo: false });
            let undo = self.points.iter().position(|p| p.what == What::Inject { fault: i, undo: true });
            let (Some(inject), Some(undo)) = (inject, undo) else { continue };
            let found = |events: &[&str], after: u64, used: &BTreeSet<usize>| {
                self.trace.events.iter().enumerate().position(|(j, e)| !used.contains(&j) && e.node == target && e.t >= after && events.contains(&e.event.as_str()) && (e.event == "restart" || str_field(&e.fields, "kind") == Some(&kind)))
            };
            if let Some(j) = found(&["fault"], self.points[inject].t, &used) {
                used.insert(j);
                self.arrows.push(Arrow { from: inject, to: self.event_point[j], drawn_from_t: self.points[inject].t, kind: ArrowKind::Inject });
            }
            if let Some(j) = found(&["heal", "restart"], self.points[undo].t, &used) {
                used.insert(j);
                self.arrows.push(Arrow { from: undo, to: self.event_point[j], drawn_from_t: self.points[undo].t, kind: ArrowKind::Inject });
            }
        }
    }

    /// Leadership from the brokers' own lines: epoch successions, handovers after a
    /// reregister, and the leader's acknowledgement of each produce and of the final read.
    fn leader_arrows(&mut self) {
        // Per partition (`topic-p`): the leader's point; per broker lane: its last point so far.
        let mut leader: BTreeMap<String, usize> = BTreeMap::new();
        let mut last_on_lane: BTreeMap<usize, usize> = BTreeMap::new();
        // Partitions handed over by a reregister, waiting for their next leader.
        let mut handed: BTreeMap<String, usize> = BTreeMap::new();
        for (i, e) in self.trace.events.iter().enumerate() {
            let point = self.event_point[i];
            let lane = self.points[point].lane;
            match e.event.as_str() {
                "broker_log" => {
                    if let Some((tp, _, _)) = leader_line(str_field(&e.fields, "line").unwrap_or_default()) {
                        let from = handed.remove(&tp).map(|p| (p, ArrowKind::Handover)).or(leader.get(&tp).map(|&p| (p, ArrowKind::Epoch)));
                        if let Some((from, kind)) = from.filter(|(p, _)| self.points[*p].lane != lane) {
                            self.arrows.push(Arrow { from, to: point, drawn_from_t: self.points[from].t, kind });
                        }
                        leader.insert(tp, point);
                    }
                }
                "reregister" => {
                    for (tp, &p) in &leader {
                        if self.points[p].lane == lane {
                            handed.insert(tp.clone(), point);
                        }
                    }
                }
                "produce" if self.points[point].class == "ack" || self.points[point].class == "lost" => {
                    if let Some(topic) = &self.topic {
                        let tp = format!("{topic}-{}", e.fields["partition"]);
                        self.arrow_from_leader(&leader, &last_on_lane, &tp, point, ArrowKind::Ack);
                    }
                }
                "final_read" => {
                    let tp = format!("{}-{}", str_field(&e.fields, "topic").unwrap_or("?"), e.fields["partition"]);
                    self.arrow_from_leader(&leader, &last_on_lane, &tp, point, ArrowKind::Read);
                }
                _ => {}
            }
            last_on_lane.insert(lane, point);
        }
    }

    /// An arrow from the partition's leader lane (its last point so far) to `to`.
    fn arrow_from_leader(&mut self, leader: &BTreeMap<String, usize>, last_on_lane: &BTreeMap<usize, usize>, tp: &str, to: usize, kind: ArrowKind) {
        let Some(&lp) = leader.get(tp) else { return };
        let lane = self.points[lp].lane;
        let from = last_on_lane.get(&lane).copied().unwrap_or(lp);
        self.arrows.push(Arrow { from, to, drawn_from_t: self.points[to].t, kind });
    }

    /// Each violation becomes a point on the checkers lane, at its `at_ms`, with an arrow from
    /// the event that shows it: the produce a write checker judged, the poll a consumer checker
    /// judged, or (for a check of the final state, `at_ms` 0) the partition's final read.
    fn violations(&mut self) {
        if self.trace.violations.len() > VIOLATIONS_DRAWN_MAX {
            self.gaps.push(format!("{} violations; the first {VIOLATIONS_DRAWN_MAX} are drawn", self.trace.violations.len()));
        }
        for (i, v) in self.trace.violations.iter().enumerate().take(VIOLATIONS_DRAWN_MAX) {
            let witness = self.witness(v);
            let t = witness.map(|w| self.trace.events[w].t).or(v.at_ms.filter(|&t| t > 0)).unwrap_or(self.end_t);
            let lane = self.lane(CHECKERS_LANE);
            let point = self.points.len();
            let class = if v.allowed { "allowed" } else { "violation" };
            self.points.push(Point { lane, t, what: What::Violation(i), class, label: format!("{} {}-{}", v.checker, v.topic, v.partition.map_or("?".into(), |p| p.to_string())) });
            if let Some(w) = witness {
                self.arrows.push(Arrow { from: self.event_point[w], to: point, drawn_from_t: t, kind: ArrowKind::Witness });
            }
        }
    }

    fn witness(&self, v: &SummaryViolation) -> Option<usize> {
        let events = &self.trace.events;
        let covers = |first: i64, last: i64| v.offsets.is_empty() || v.offsets.iter().any(|&o| first <= o && o <= last);
        let same_topic = self.topic.as_deref().is_none_or(|t| t == v.topic);
        match v.at_ms {
            Some(at) if at > 0 => events.iter().position(|e| {
                e.t == at
                    && match e.event.as_str() {
                        "produce" => same_topic && e.fields["partition"].as_i64() == v.partition && e.fields["ok"].as_i64().is_none_or(|b| b < 0 || covers(b, b + e.fields["count"].as_i64().unwrap_or(1) - 1)),
                        "poll" => covers(e.fields["first"].as_i64().unwrap_or(i64::MIN), e.fields["last"].as_i64().unwrap_or(i64::MAX)),
                        _ => false,
                    }
            }),
            _ => events.iter().position(|e| e.event == "final_read" && str_field(&e.fields, "topic") == Some(&v.topic) && e.fields["partition"].as_i64() == v.partition),
        }
    }

    fn finish(self) -> Diagram {
        let n = self.points.len();
        // Program order: per lane by time, trace events in file order, an injection before
        // the events of its millisecond.
        let mut by_lane: Vec<Vec<usize>> = vec![Vec::new(); self.lanes.len()];
        for (i, p) in self.points.iter().enumerate() {
            by_lane[p.lane].push(i);
        }
        let order_key = |i: usize| {
            let p = &self.points[i];
            let rank = match p.what {
                What::Inject { .. } => (0, i),
                What::Event(e) => (1, e),
                What::Violation(v) => (2, v),
            };
            (p.t, rank)
        };
        let mut lane_pos = vec![0; n];
        let mut graph: DiGraph<usize, ArrowKindOrOrder> = DiGraph::with_capacity(n, n + self.arrows.len());
        let nodes: Vec<NodeIndex> = (0..n).map(|i| graph.add_node(i)).collect();
        for lane in &mut by_lane {
            lane.sort_by_key(|&i| order_key(i));
            for (pos, &i) in lane.iter().enumerate() {
                lane_pos[i] = pos;
            }
            for w in lane.windows(2) {
                graph.add_edge(nodes[w[0]], nodes[w[1]], ArrowKindOrOrder::Order);
            }
        }
        for a in &self.arrows {
            graph.add_edge(nodes[a.from], nodes[a.to], ArrowKindOrOrder::Arrow(a.kind));
        }
        let mut gaps = self.gaps;
        // Every edge goes forward in simulated time, so a cycle could only sit inside one
        // millisecond; if one does, lay out by time alone and say so.
        let topo: Vec<usize> = match toposort(&graph, None) {
            Ok(order) => order.into_iter().map(|ni| graph[ni]).collect(),
            Err(cycle) => {
                gaps.push(format!("the happens-before graph has a cycle through point {}: points of one millisecond are not ordered", graph[cycle.node_id()]));
                let mut all: Vec<usize> = (0..n).collect();
                all.sort_by_key(|&i| order_key(i));
                all
            }
        };
        let (x, clocks) = layout_and_clocks(&self.points, &topo, &graph, &nodes, &lane_pos, self.lanes.len());
        let violation_past = (0..n).filter(|&i| matches!(self.points[i].what, What::Violation(_))).map(|i| (i, clocks[i].clone())).collect();
        Diagram { lanes: self.lanes, points: self.points, arrows: self.arrows, spans: self.spans, graph, lane_pos, x, violation_past, end_t: self.end_t, gaps }
    }
}

/// Walks the topological order once: each point's layout time (`t` plus its rank among the
/// points of its millisecond, as a fraction) and its vector clock (per lane, the last lane
/// position in its causal past, itself included; -1 for none).
fn layout_and_clocks(points: &[Point], topo: &[usize], graph: &DiGraph<usize, ArrowKindOrOrder>, nodes: &[NodeIndex], lane_pos: &[usize], lanes: usize) -> (Vec<f64>, Vec<Vec<i64>>) {
    let mut per_ms: BTreeMap<u64, usize> = BTreeMap::new();
    for &i in topo {
        *per_ms.entry(points[i].t).or_default() += 1;
    }
    let mut seen: BTreeMap<u64, usize> = BTreeMap::new();
    let mut x = vec![0.0; points.len()];
    let mut clocks = vec![vec![-1i64; lanes]; points.len()];
    for &i in topo {
        let t = points[i].t;
        let rank = seen.entry(t).or_default();
        x[i] = t as f64 + 0.8 * (*rank as f64) / (per_ms[&t] as f64);
        *rank += 1;
        let mut clock = vec![-1i64; lanes];
        for pred in graph.neighbors_directed(nodes[i], petgraph::Direction::Incoming) {
            for (c, p) in clock.iter_mut().zip(&clocks[graph[pred]]) {
                *c = (*c).max(*p);
            }
        }
        clock[points[i].lane] = lane_pos[i] as i64;
        clocks[i] = clock;
    }
    (x, clocks)
}

impl Diagram {
    /// The page's data: plain JSON, every string as the trace had it (the page escapes it).
    pub fn model(&self, trace: &ParsedTrace) -> Value {
        let text = |p: &Point| -> String {
            match &p.what {
                What::Event(e) => trace.events[*e].raw.clone(),
                What::Inject { fault, undo } => {
                    let f = &trace.header["derived"]["faults"][*fault];
                    json!({"injector": "harness", "undo": undo, "scheduled": f}).to_string()
                }
                What::Violation(v) => {
                    let v = &trace.violations[*v];
                    json!({"checker": v.checker, "topic": v.topic, "partition": v.partition, "offsets": v.offsets, "at_ms": v.at_ms, "detail": v.detail, "loss": v.loss, "allowed": v.allowed}).to_string()
                }
            }
        };
        let points: Vec<Value> = self.points.iter().enumerate().map(|(i, p)| json!({"l": p.lane, "t": p.t, "x": self.x[i], "p": self.lane_pos[i], "c": p.class, "s": p.label, "j": text(p)})).collect();
        let summary = trace.summary.as_ref().map(|s| &s["verdicts"]);
        json!({
            "scenario": trace.header["scenario"],
            "seed": trace.header["seed"],
            "header": trace.header.to_string(),
            "lanes": self.lanes.iter().map(|(n, k)| json!({"name": n, "kind": k.name()})).collect::<Vec<_>>(),
            "points": points,
            "arrows": self.arrows.iter().map(|a| json!({"f": a.from, "to": a.to, "ft": a.drawn_from_t, "k": a.kind.name()})).collect::<Vec<_>>(),
            "spans": self.spans.iter().map(|s| json!({"l": s.lane, "from": s.from, "to": s.to, "kind": s.kind, "healed": s.healed})).collect::<Vec<_>>(),
            "violations": self.violation_past.iter().map(|(p, past)| json!({"point": p, "past": past})).collect::<Vec<_>>(),
            "end": self.end_t,
            "counts": {
                "events": trace.events.len(),
                "writes": summary.and_then(|s| s.get("writes")),
                "acknowledged": summary.and_then(|s| s.get("acknowledged")),
                "violations": trace.violations.iter().filter(|v| !v.allowed).count(),
                "allowed": trace.violations.iter().filter(|v| v.allowed).count(),
                "lost_batches": self.points.iter().filter(|p| p.class == "lost").count(),
            },
            "digest": trace.summary.as_ref().map(|s| s["digest"].clone()),
            "gaps": self.gaps,
        })
    }
}
