//! Consumer-group workloads: each member of each scenario group on its own client node, running
//! the real Rust group consumer (`broker_core::client::GroupConsumer`) against the brokers, and
//! recording into the history every generation it joins, what it owns and where it starts, each
//! revocation and loss, every record it reads and every commit with its outcome. With `churn`,
//! each member leaves, crashes or stalls (slow processing past its session, then commits as a
//! zombie) at times drawn from the run's seed, during the safety phase only. After healing the
//! harness reads every group's committed offsets for the checkers.
//!
//! Like every workload, members talk to brokers only over the simulated network and never
//! decide what the checkers conclude.

use super::recorder::{event, ms_at, now_ms, Rec};
use super::request_timeout_ms;
use super::topology::{commit_reader_ip, harness_node, Cluster};
use crate::history::{Commit, GroupEvent, GroupEventKind, Outcome, Read};
use crate::scenario::{GroupSpec, Scenario};
use broker_core::client::assignor::{by_name, TopicPartitions};
use broker_core::client::group::{GroupProtocol, Reset};
use broker_core::client::group::{GroupMetadata, Stamped};
use broker_core::client::{ClientError, GroupConfig, GroupConsumer, GroupEvent as ClientEvent};
use madsim::task::JoinHandle;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

/// How long a member's fetch waits for data.
const poll_wait_ms: i32 = 100;
/// Shortest and longest time between two churn actions of one member, ms.
const churn_gap_ms: (u64, u64) = (2_000, 8_000);
/// How long a left or crashed member stays away, ms.
const away_ms: (u64, u64) = (300, 3_000);
/// How much longer than its session a stalled member stalls, ms.
const stall_past_session_ms: (u64, u64) = (200, 2_000);

/// Most commits waiting in one member's committer (`commit_lag_ms`); past it a member skips
/// a commit, which at-least-once allows (a later one covers the progress). A member polls
/// about every `poll_wait_ms`, so a lag of seconds queues tens.
const committer_queue_max: usize = 1_024;

/// What one member needs to run.
struct Member {
    name: String,
    /// Its place in its group (a mixed group's protocol alternates by it).
    index: usize,
    spec: GroupSpec,
    brokers: Vec<SocketAddr>,
    /// Churn stops here (the end of the safety phase); reading stops at `until_ms`.
    churn_until_ms: u64,
    until_ms: u64,
    rng: ChaCha8Rng,
    rec: Rec,
}

/// Starts every member of every group on its own client node.
pub(super) fn start(s: &Scenario, cluster: &mut Cluster, seed: u64, rec: &Rec) -> Vec<JoinHandle<()>> {
    let until_ms = s.duration_ms + s.heal_ms / 2;
    {
        let mut r = rec.lock().expect("recorder");
        r.history.members_until_ms = until_ms;
        // A mixed group's classic members inside a consumer group are at their own epochs too.
        r.history.kip848_groups = s.groups.iter().filter(|g| matches!(g.protocol.as_str(), "consumer" | "mixed")).map(|g| g.id.clone()).collect();
        r.history.share_groups = s.groups.iter().filter(|g| g.protocol == "share").map(|g| (g.id.clone(), g.topic.clone())).collect();
    }
    let mut tasks = Vec::new();
    let names = s.member_names();
    let specs = s.groups.iter().flat_map(|g| (0..g.members as usize).map(move |i| (i, g)));
    for (name, (index, spec)) in names.into_iter().zip(specs) {
        let Some(node) = cluster.add_client(&name, rec) else { break };
        let rng = ChaCha8Rng::seed_from_u64(seed ^ broker_core::hash::fnv1a(broker_core::hash::fnv_offset, name.bytes()));
        if spec.protocol == "share" {
            let m = super::shares::ShareMember { name, spec: spec.clone(), brokers: cluster.brokers.clone(), churn_until_ms: s.duration_ms, until_ms, rng, rec: rec.clone() };
            tasks.push(node.spawn(super::shares::member_main(m)));
            continue;
        }
        let m = Member { name, index, spec: spec.clone(), brokers: cluster.brokers.clone(), churn_until_ms: s.duration_ms, until_ms, rng, rec: rec.clone() };
        tasks.push(node.spawn(member_main(m)));
    }
    tasks
}

fn consumer(m: &Member, incarnation: u32) -> GroupConsumer {
    let mut c = GroupConfig::new(&m.spec.id, &m.name);
    c.instance_id = m.spec.static_members.then(|| m.name.clone());
    c.session_timeout_ms = m.spec.session_timeout_ms as i32;
    c.rebalance_timeout_ms = (m.spec.session_timeout_ms * 2) as i32;
    c.heartbeat_interval_ms = m.spec.heartbeat_interval_ms;
    c.assignors = by_name(&m.spec.assignor).into_iter().collect();
    if m.spec.protocol == "consumer" || (m.spec.protocol == "mixed" && (m.index + incarnation as usize) % 2 == 1) {
        c.protocol = GroupProtocol::Consumer { assignor: Some(m.spec.assignor.clone()) };
    }
    c.auto_commit = false;
    c.reset = Reset::Earliest;
    c.request_timeout = Duration::from_millis(request_timeout_ms);
    let mut bootstrap = m.brokers.clone();
    let shift = incarnation as usize % bootstrap.len().max(1);
    bootstrap.rotate_left(shift);
    let mut g = GroupConsumer::new(bootstrap, c);
    g.subscribe(&[m.spec.topic.as_str()]);
    g
}

/// What the member does next, drawn from its RNG.
enum Churn {
    Leave,
    Crash,
    Stall,
}

/// One member: poll, record, commit; now and then (with churn) leave, crash or stall.
async fn member_main(mut m: Member) {
    let mut incarnation = 0u32;
    let mut session = 0u32;
    let mut g = consumer(&m, incarnation);
    let mut committer = Committer::start(&m, incarnation);
    let mut next_churn = now_ms(&m.rec) + m.rng.gen_range(churn_gap_ms.0..=churn_gap_ms.1);
    while now_ms(&m.rec) < m.until_ms {
        let polled = g.poll(poll_wait_ms).await;
        // Who read these records: what a lagging commit of them carries.
        let read_as = g.group_metadata();
        let changed = record_events(&m, &g, &polled.events);
        session += changed as u32;
        if let Some(e) = &polled.error {
            event(&m.rec, &m.name, "group_error", json!({"error": e.to_string()}));
            session += 1;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let mut positions = BTreeMap::new();
        {
            let at_ms = now_ms(&m.rec);
            let mut r = m.rec.lock().expect("recorder");
            for x in polled.records {
                if x.fresh {
                    positions.insert(x.partition, x.offset + 1);
                }
                let value = super::workloads::identity(&x);
                r.history.reads.push(Read { process: m.name.clone(), session, topic: x.topic, partition: x.partition, offset: x.offset, value, high_watermark: x.high_watermark, at_ms });
            }
        }
        // An action starts only if it is over by the end of the safety phase (the longest: a
        // stall, session + 2 s; an absence of up to 3 s or a crashed member's session are
        // shorter): one running into the healing phase can leave the group still settling when
        // the members stop (every member expired: an empty group's first rebalance waits up to
        // the rebalance timeout, KIP-134).
        let tail_ms = m.spec.session_timeout_ms + stall_past_session_ms.1;
        let churning = m.spec.churn && now_ms(&m.rec) >= next_churn && now_ms(&m.rec) + tail_ms <= m.churn_until_ms;
        let action = churning.then(|| match m.rng.gen_range(0..3) {
            0 => Churn::Leave,
            1 => Churn::Crash,
            _ => Churn::Stall,
        });
        if churning {
            next_churn = now_ms(&m.rec) + m.rng.gen_range(churn_gap_ms.0..=churn_gap_ms.1);
        }
        if let Some(Churn::Stall) = action {
            // Slow processing between a poll and its commit, past the session: the group moves
            // on without this member, whose commit then comes from a past generation.
            let ms = m.spec.session_timeout_ms + m.rng.gen_range(stall_past_session_ms.0..=stall_past_session_ms.1);
            group_event(&m, GroupEventKind::Stalled { ms });
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        if !positions.is_empty() {
            match committer.as_mut() {
                Some(c) => {
                    let lag = m.rng.gen_range(0..=m.spec.commit_lag_ms);
                    c.enqueue(read_as, positions, lag);
                }
                None => commit(&m, &mut g, positions).await,
            }
        }
        match action {
            Some(Churn::Leave) => {
                // Like the Java consumer's close, wait for the commits still queued first.
                if let Some(c) = committer.take() {
                    c.drain().await;
                }
                let events = g.close().await;
                record_events(&m, &g, &events);
                group_event(&m, GroupEventKind::Left);
            }
            Some(Churn::Crash) => {
                // A crashed process sends nothing more: what its committer still held is gone.
                if let Some(c) = committer.take() {
                    c.task.abort();
                }
                group_event(&m, GroupEventKind::Crashed);
            }
            _ => continue,
        }
        // Away for a while, then a new consumer (a static member keeps its instance id).
        session += 1;
        incarnation += 1;
        let away = m.rng.gen_range(away_ms.0..=away_ms.1);
        tokio::time::sleep(Duration::from_millis(away)).await;
        g = consumer(&m, incarnation);
        committer = Committer::start(&m, incarnation);
    }
    if let Some(c) = committer {
        c.drain().await;
    }
}

/// A member's commits when they lag (`commit_lag_ms`): a task of the member's node with a
/// client (and connection) of its own, sending each queued commit once due, in order, on the
/// member's behalf with the group metadata of the poll that read its records.
struct Committer {
    queue: tokio::sync::mpsc::Sender<(GroupMetadata, BTreeMap<i32, i64>, u64)>,
    task: tokio::task::JoinHandle<()>,
    /// When the last queued commit is due (ms): later ones are never due before it.
    last_due_ms: u64,
    rec: Rec,
}

impl Committer {
    /// None when the member commits for itself (`commit_lag_ms = 0`).
    fn start(m: &Member, incarnation: u32) -> Option<Committer> {
        if m.spec.commit_lag_ms == 0 {
            return None;
        }
        let (queue, rx) = tokio::sync::mpsc::channel(committer_queue_max);
        let mut c = GroupConfig::new(&m.spec.id, &format!("{}-committer", m.name));
        c.request_timeout = Duration::from_millis(request_timeout_ms);
        let mut bootstrap = m.brokers.clone();
        let shift = incarnation as usize % bootstrap.len().max(1);
        bootstrap.rotate_left(shift);
        let client = GroupConsumer::new(bootstrap, c);
        let who = (m.name.clone(), m.spec.id.clone(), m.spec.topic.clone());
        let task = tokio::spawn(committer_main(client, rx, who, m.rec.clone()));
        Some(Committer { queue, task, last_due_ms: 0, rec: m.rec.clone() })
    }

    /// Queues a commit due `lag_ms` from now (or when the one before it is, if later).
    fn enqueue(&mut self, meta: GroupMetadata, positions: BTreeMap<i32, i64>, lag_ms: u64) {
        let due = (now_ms(&self.rec) + lag_ms).max(self.last_due_ms);
        if self.queue.try_send((meta, positions, due)).is_ok() {
            self.last_due_ms = due;
        }
    }

    /// Sends what is queued, then stops.
    async fn drain(self) {
        drop(self.queue);
        let _ = self.task.await;
    }
}

async fn committer_main(mut client: GroupConsumer, mut rx: tokio::sync::mpsc::Receiver<(GroupMetadata, BTreeMap<i32, i64>, u64)>, who: (String, String, String), rec: Rec) {
    let (process, group, topic) = who;
    while let Some((meta, positions, due_ms)) = rx.recv().await {
        let now = now_ms(&rec);
        if due_ms > now {
            tokio::time::sleep(Duration::from_millis(due_ms - now)).await;
        }
        let offsets: BTreeMap<(String, i32), i64> = positions.iter().map(|(p, o)| ((topic.clone(), *p), *o)).collect();
        // Recorded before it is sent: a crash cutting it short leaves its outcome unknown.
        let invoke_ms = now_ms(&rec);
        let c = Commit { process: process.clone(), group: group.clone(), topic: topic.clone(), member_id: meta.member_id.clone(), generation: meta.generation, offsets: positions.into_iter().collect(), invoke_ms, complete_ms: invoke_ms, outcome: Outcome::Unknown("in flight".into()) };
        let at = {
            let mut r = rec.lock().expect("recorder");
            r.history.commits.push(c);
            r.history.commits.len() - 1
        };
        let result = client.commit_for(&meta, &offsets).await;
        event(&rec, &process, "lagging_commit", json!({"generation": meta.generation, "error": result.as_ref().err().map(|e| e.to_string())}));
        let mut r = rec.lock().expect("recorder");
        let complete_ms = r.now_ms();
        let c = &mut r.history.commits[at];
        c.complete_ms = complete_ms;
        c.outcome = outcome(&result);
    }
}

fn outcome(result: &Result<(), ClientError>) -> Outcome {
    match result {
        Ok(()) => Outcome::Ok(0),
        Err(e) if e.outcome_unknown() => Outcome::Unknown(e.to_string()),
        Err(e) => Outcome::Fail(e.to_string()),
    }
}

fn group_event(m: &Member, kind: GroupEventKind) {
    group_event_at(m, now_ms(&m.rec), kind);
}

fn group_event_at(m: &Member, at_ms: u64, kind: GroupEventKind) {
    let e = GroupEvent { process: m.name.clone(), group: m.spec.id.clone(), topic: m.spec.topic.clone(), at_ms, kind };
    m.rec.lock().expect("recorder").history.group_events.push(e);
}

fn partitions(tp: &TopicPartitions, topic: &str) -> Vec<i32> {
    tp.get(topic).cloned().unwrap_or_default()
}

/// Records the client's events at the moments it stamped them; true when what the member
/// owns changed.
fn record_events(m: &Member, g: &GroupConsumer, events: &[Stamped]) -> bool {
    let topic = m.spec.topic.as_str();
    let mut changed = false;
    for e in events {
        let kind = match &e.event {
            ClientEvent::Joined { generation, member_id, leader, .. } => GroupEventKind::Joined { generation: *generation, member_id: member_id.clone(), leader: *leader },
            ClientEvent::Assigned { partitions: added, starts } => {
                changed = true;
                let starts = starts.iter().filter(|((t, _), _)| t == topic).map(|((_, p), o)| (*p, *o)).collect();
                let _ = added;
                GroupEventKind::Owned { generation: g.generation(), member_id: g.member_id().to_string(), partitions: partitions(g.assignment(), topic), starts }
            }
            ClientEvent::Revoked(tp) => {
                changed = true;
                GroupEventKind::Revoked(partitions(tp, topic))
            }
            ClientEvent::Lost(tp) => {
                changed = true;
                GroupEventKind::Lost(partitions(tp, topic))
            }
            ClientEvent::Committed(_) => continue,
        };
        let fields = match &kind {
            GroupEventKind::Joined { generation, leader, .. } => ("joined", json!({"generation": generation, "leader": leader})),
            GroupEventKind::Owned { generation, partitions, starts, .. } => ("owned", json!({"generation": generation, "partitions": partitions, "starts": starts})),
            GroupEventKind::Revoked(ps) => ("revoked", json!({"partitions": ps})),
            GroupEventKind::Lost(ps) => ("lost", json!({"partitions": ps})),
            _ => ("group", json!({})),
        };
        event(&m.rec, &m.name, fields.0, fields.1);
        group_event_at(m, ms_at(&m.rec, e.at), kind);
    }
    changed
}

/// Commits `positions` and records the commit with its outcome.
async fn commit(m: &Member, g: &mut GroupConsumer, positions: BTreeMap<i32, i64>) {
    let (member_id, generation) = (g.member_id().to_string(), g.generation());
    let offsets: BTreeMap<(String, i32), i64> = positions.iter().map(|(p, o)| ((m.spec.topic.clone(), *p), *o)).collect();
    let invoke_ms = now_ms(&m.rec);
    let mut events = Vec::new();
    let result = g.commit_offsets(offsets, &mut events).await;
    record_events(m, g, &events);
    let outcome = outcome(&result);
    let c = Commit { process: m.name.clone(), group: m.spec.id.clone(), topic: m.spec.topic.clone(), member_id, generation, offsets: positions.into_iter().collect(), invoke_ms, complete_ms: now_ms(&m.rec), outcome };
    m.rec.lock().expect("recorder").history.commits.push(c);
}

/// After healing: every group's committed offsets (processors' groups too), read through a
/// client as a user would.
pub(super) async fn final_commits(s: &Scenario, cluster: &Cluster, rec: &Rec) {
    if s.groups.is_empty() && s.processors.is_empty() {
        return;
    }
    let partitions = |topic: &str| s.topics.iter().find(|t| t.name == topic).map_or(1, |t| t.partitions);
    let members = s.groups.iter().map(|g| (g.id.clone(), g.topic.clone(), partitions(&g.topic)));
    let processors = s.processors.iter().map(|p| (p.group.clone(), p.from.clone(), partitions(&p.from)));
    let groups: Vec<(String, String, i32)> = members.chain(processors).collect();
    let reader = harness_node("commit-reader", commit_reader_ip);
    let _ = reader.spawn(read_commits(cluster.brokers.clone(), groups, rec.clone())).await;
}

async fn read_commits(brokers: Vec<SocketAddr>, groups: Vec<(String, String, i32)>, rec: Rec) {
    for (id, topic, n) in groups {
        let mut g = GroupConsumer::new(brokers.clone(), GroupConfig { request_timeout: Duration::from_millis(request_timeout_ms), ..GroupConfig::new(&id, "commit-reader") });
        let wanted: TopicPartitions = [(topic.clone(), (0..n).collect())].into_iter().collect();
        let mut result: Result<_, ClientError> = Err(ClientError::Protocol("not tried".into()));
        for _ in 0..10 {
            result = g.committed(&wanted).await;
            if result.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        let mut r = rec.lock().expect("recorder");
        match result {
            Ok(offsets) => {
                for ((t, p), o) in offsets.into_iter().filter(|(_, o)| *o >= 0) {
                    r.history.final_commits.insert((id.clone(), t, p), o);
                }
            }
            Err(e) => drop(r.history.final_commit_errors.insert(id.clone(), e.to_string())),
        }
    }
}
