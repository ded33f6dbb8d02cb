//! A simulated cluster of in-process Raft nodes, for the seeded tests: a discrete-event loop
//! over simulated time, a network that delays, drops and partitions (minority, majority,
//! one-way links), and per node a disk model that performs `Persist`/`WriteLog` actions in
//! order, each taking a random time, and on power loss keeps a random prefix of what was not
//! yet synced (the last write kept may be torn: a prefix of its entries). Crashes also strike
//! between two actions of one step. Every choice comes from the seed; no clock, no OS RNG.
//!
//! Snapshots (when the seed turns them on): a node whose committed log since its last snapshot
//! reaches `snapshot_every` offsets snapshots it at once (the bytes of every committed entry,
//! so the checkers can compare it with the committed log) and drops the log before it; a
//! follower below the leader's start installs the leader's snapshot through the disk model.
//!
//! A run has two phases (VOPR's): faults for `fault_ms`, then everything healed and restarted,
//! and a leader must commit a new entry on every voter within `Faults::liveness_ms`.

use super::checks::{self, History};
use super::disk_model::{Op, Slot};
use crate::controller::raft::{Action, Entry, Message, Node, NodeId, PlantedRaftBug, QuorumState, RaftConfig, Snapshot, SnapshotId};
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Simulated time with faults, then the time allowed to recover.
const fault_ms: u64 = 20_000;
/// Proposals stop this long before the end, so the last ones can reach every voter.
const quiet_ms: u64 = 5_000;
/// Longest slow fsync.
const io_stall_ms_max: u64 = 1_500;
/// A churned leader dying at an action dies within this many of them.
const leader_actions_max: u64 = 40;

/// The fault mix of one seed (swarm testing: each seed turns kinds on and off).
#[derive(Debug, Clone)]
pub struct Faults {
    pub voters: usize,
    pub drop_per_mille: u64,
    pub delay_ms_max: u64,
    pub io_ms_max: u64,
    /// Mean time between fault events (crash, partition, heal).
    pub fault_every_ms: u64,
    /// Chance of dying between two actions of one step.
    pub crash_at_action_per_mille: u64,
    /// Chance, per step that hands IO to the disk, of a power loss while that IO may still be
    /// pending (within `io_ms_max`): the window where unsynced votes and entries are lost.
    pub crash_during_io_per_mille: u64,
    /// Chance that an IO stalls for up to `io_stall_ms_max` (a slow fsync), holding back every
    /// IO after it on that node: long windows in which votes and entries are not yet durable.
    pub io_stall_per_mille: u64,
    /// Chance that a new leader loses power within `leader_life_ms_max` of being elected:
    /// back-to-back leader failures, which leave uncommitted tails of many epochs.
    pub leader_churn_per_mille: u64,
    pub leader_life_ms_max: u64,
    /// Mean time between proposals to each leader while faults last (every 400 ms after).
    pub propose_every_ms: u64,
    /// Bytes per fetch answer (whole entries, at least one).
    pub fetch_bytes: usize,
    /// Time allowed after healing for a leader to commit on every voter (catching up included).
    pub liveness_ms: u64,
    pub partitions: bool,
    pub crashes: bool,
    /// KRaft's timeouts divided by this (as the simulator scales Kafka's), for more elections
    /// per run; only where round trips are short enough for them.
    pub timeout_divisor: u64,
    /// Committed offsets since a node's last snapshot after which it takes one (0: never).
    pub snapshot_every: i64,
}

impl Faults {
    /// Back-to-back leader failures (issue 10's scenario): three voters, new leaders often
    /// losing power within moments, power losses while IO is pending, partitions, short round
    /// trips and fast disks (so followers can fetch entry by entry), timeouts scaled down and
    /// proposals every few ms: long uncommitted tails of several epochs, where figure 8 and
    /// lost votes live.
    pub fn churn(&mut self) {
        self.voters = 3;
        self.crashes = true;
        self.leader_churn_per_mille = 700;
        self.crash_during_io_per_mille = 200;
        self.delay_ms_max = 10;
        // Partitions now and then strand a leader that keeps taking proposals until
        // check-quorum: the long tails of old epochs that a later leader commits piecemeal.
        self.partitions = true;
        self.fault_every_ms = 1_000;
        self.timeout_divisor = 4;
        self.propose_every_ms = 20;
        self.io_ms_max = 5;
        self.fetch_bytes = 1; // entry by entry: old tails are acknowledged piecemeal
        self.snapshot_every = 0; // as the planted-bug seeds were found
    }

    /// [`Faults::churn`] with a snapshot every few committed entries: followers that were
    /// down or cut off come back below the leader's log start and install its snapshot, under
    /// the same leader failures and power losses.
    pub fn snapshot_churn(&mut self) {
        self.churn();
        self.snapshot_every = 8;
    }

    pub fn from_seed(rng: &mut ChaCha8Rng) -> Faults {
        let mut pick = |n: u64| rng.next_u64() % n;
        let mut f = Faults {
            voters: [3, 3, 3, 5, 5, 1][pick(6) as usize],
            drop_per_mille: [0, 10, 50, 200][pick(4) as usize],
            delay_ms_max: [2, 10, 50, 300][pick(4) as usize],
            io_ms_max: [1, 5, 30, 100][pick(4) as usize],
            fault_every_ms: [300, 1_000, 3_000][pick(3) as usize],
            crash_at_action_per_mille: [0, 5, 20][pick(3) as usize],
            crash_during_io_per_mille: [0, 50, 200][pick(3) as usize],
            io_stall_per_mille: [0, 20, 100][pick(3) as usize],
            leader_churn_per_mille: [0, 300, 700][pick(3) as usize],
            leader_life_ms_max: 500,
            propose_every_ms: 400,
            partitions: pick(4) != 0,
            crashes: pick(4) != 0,
            timeout_divisor: 1,
            fetch_bytes: 0,
            liveness_ms: 15_000,
            snapshot_every: 0,
        };
        // One entry per fetch (so a follower acknowledges entry by entry, as a slow one does)
        // only where round trips are short enough to keep up with the proposals.
        f.fetch_bytes = if f.delay_ms_max <= 50 { 1 } else { crate::constants::quorum_fetch_bytes };
        f
    }
}

enum Event {
    Deliver(Message),
    IoDone { node: NodeId, incarnation: u64 },
    Tick { node: NodeId, incarnation: u64 },
    Fault,
    Propose,
    Restart(NodeId),
    Crash { node: NodeId, incarnation: u64 },
}

pub struct Cluster {
    seed: u64,
    rng: ChaCha8Rng,
    pub faults: Faults,
    plant: Option<PlantedRaftBug>,
    now: u64,
    seq: u64,
    queue: BTreeMap<(u64, u64), Event>,
    slots: BTreeMap<NodeId, Slot>,
    /// Directed links that drop everything.
    cut: BTreeSet<(NodeId, NodeId)>,
    proposed: u64,
    /// Whether the fault phase is over.
    healed: bool,
    pub history: History,
    /// (epoch, node, incarnation) of every leadership seen, so each is checked once.
    seen_leaders: BTreeSet<(i32, NodeId, u64)>,
    /// Every event and action, when asked for (`RAFT_SEED=n cargo test ... replay -- --ignored`).
    pub trace: Option<Vec<String>>,
}

impl Cluster {
    pub fn new(seed: u64, plant: Option<PlantedRaftBug>) -> Cluster {
        Cluster::with(seed, plant, |_| {})
    }

    /// [`Cluster::new`] with the seed's fault mix adjusted by `adjust`.
    pub fn with(seed: u64, plant: Option<PlantedRaftBug>, adjust: impl FnOnce(&mut Faults)) -> Cluster {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut faults = Faults::from_seed(&mut rng);
        // From a second stream, so the rest of each seed's run is what it was before snapshots.
        faults.snapshot_every = [0, 3, 10, 40][(ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_5a95).next_u64() % 4) as usize];
        adjust(&mut faults);
        let slots = (0..faults.voters as NodeId)
            .map(|id| (id, Slot { node: None, incarnation: 0, durable_state: QuorumState::default(), durable_snapshot: None, durable_log: Vec::new(), pending: VecDeque::new(), io_busy_until: 0, applied: 0, tick_at: None, actions_left: None }))
            .collect();
        let mut c = Cluster { seed, rng, faults, plant, now: 0, seq: 0, queue: BTreeMap::new(), slots, cut: BTreeSet::new(), proposed: 0, healed: false, history: History::default(), seen_leaders: BTreeSet::new(), trace: None };
        for id in 0..c.faults.voters as NodeId {
            c.start(id);
        }
        c.push(c.faults.fault_every_ms, Event::Fault);
        c.push(100, Event::Propose);
        c
    }

    fn rand(&mut self, n: u64) -> u64 {
        self.rng.next_u64() % n.max(1)
    }

    fn push(&mut self, at: u64, e: Event) {
        self.seq += 1;
        self.queue.insert((at, self.seq), e);
    }

    fn config(&self, id: NodeId) -> RaftConfig {
        let d = self.faults.timeout_divisor;
        let c = RaftConfig::new(id, 0..self.faults.voters as NodeId);
        RaftConfig {
            plant: self.plant,
            fetch_bytes: self.faults.fetch_bytes,
            election_timeout_ms: c.election_timeout_ms / d,
            fetch_timeout_ms: c.fetch_timeout_ms / d,
            election_backoff_ms_max: c.election_backoff_ms_max / d,
            request_timeout_ms: c.request_timeout_ms / d,
            fetch_wait_ms: c.fetch_wait_ms / d,
            ..c
        }
    }

    fn start(&mut self, id: NodeId) {
        let config = self.config(id);
        let now = self.now;
        let seed = self.seed.wrapping_mul(1_000_003).wrapping_add(id as u64 * 7919 + self.slots[&id].incarnation);
        let slot = self.slots.get_mut(&id).expect("known node");
        let node = Node::restart_from(config, slot.durable_state, slot.durable_snapshot.clone(), slot.durable_log.clone(), seed, now);
        match node {
            Ok(n) => slot.node = Some(n),
            Err(e) => self.history.violations.push(format!("t={now}: node {id} cannot restart from its disk: {e}")),
        }
        slot.applied = slot.durable_start();
        slot.tick_at = None;
        slot.actions_left = None;
        self.schedule_tick(id);
    }

    /// Power loss: a random prefix of the unsynced actions reached the disk, the last of them
    /// maybe torn; the rest is gone, and so is everything in memory.
    fn crash(&mut self, id: NodeId, down_ms: u64) {
        let slot = &self.slots[&id];
        if slot.node.is_none() {
            return;
        }
        if let Some(t) = &mut self.trace {
            let n = slot.node.as_ref().expect("checked");
            t.push(format!("{:>6} {id} CRASH for {down_ms} ms, {} IO pending, epoch {} durable {:?}", self.now, slot.pending.len(), n.epoch(), slot.durable_state));
        }
        let keep = self.rand(slot.pending.len() as u64 + 1) as usize;
        let torn = self.rand(4) as usize;
        let slot = self.slots.get_mut(&id).expect("known node");
        for i in 0..keep {
            let (_, op) = slot.pending.pop_front().expect("counted");
            slot.apply(op, (i + 1 == keep).then_some(torn));
        }
        slot.pending.clear();
        slot.node = None;
        slot.incarnation += 1;
        slot.io_busy_until = 0;
        let at = self.now + down_ms;
        self.push(at, Event::Restart(id));
    }

    fn schedule_tick(&mut self, id: NodeId) {
        let slot = &self.slots[&id];
        let Some(node) = &slot.node else { return };
        let at = node.next_deadline().max(self.now);
        if slot.tick_at.is_none_or(|t| at < t || t < self.now) {
            let incarnation = slot.incarnation;
            self.slots.get_mut(&id).expect("known").tick_at = Some(at);
            self.push(at, Event::Tick { node: id, incarnation });
        }
    }

    /// Performs a node's actions in order; it may die between two of them.
    fn perform(&mut self, id: NodeId, actions: Vec<Action>) {
        let does_io = actions.iter().any(|a| matches!(a, Action::Persist { .. } | Action::WriteLog { .. } | Action::InstallSnapshot { .. }));
        if does_io && !self.healed && self.faults.crashes && self.rand(1000) < self.faults.crash_during_io_per_mille {
            let (at, incarnation) = (self.now + self.rand(self.faults.io_ms_max + 1), self.slots[&id].incarnation);
            self.push(at, Event::Crash { node: id, incarnation });
        }
        for a in actions {
            let slot = self.slots.get_mut(&id).expect("known node");
            match slot.actions_left {
                Some(1) => {
                    slot.actions_left = None;
                    if !self.healed {
                        let down = 1 + self.rand(3_000);
                        return self.crash(id, down);
                    }
                }
                Some(n) => slot.actions_left = Some(n - 1),
                None => {}
            }
            if let Some(t) = &mut self.trace {
                t.push(format!("{:>6} {id} does {a:?}", self.now));
            }
            if !self.healed && self.faults.crashes && self.rand(1000) < self.faults.crash_at_action_per_mille {
                let down = 1 + self.rand(3_000);
                return self.crash(id, down);
            }
            match a {
                Action::Persist { id: io, state } => self.submit(id, io, Op::Persist(state)),
                Action::WriteLog { id: io, truncate_to, entries } => self.submit(id, io, Op::Write { truncate_to, entries }),
                Action::InstallSnapshot { id: io, snapshot } => {
                    self.history.snapshot_holds_committed(self.now, id, &snapshot, "installed");
                    self.slots.get_mut(&id).expect("known").applied = snapshot.id.end;
                    self.submit(id, io, Op::Install(snapshot));
                }
                Action::Send(m) => {
                    if self.rand(1000) >= self.faults.drop_per_mille || self.healed {
                        let at = self.now + 1 + self.rand(self.faults.delay_ms_max);
                        self.push(at, Event::Deliver(m));
                    }
                }
                Action::Commit { high_watermark } => {
                    let slot = &self.slots[&id];
                    let (node, from) = (slot.node.as_ref().expect("a running node acts"), slot.applied);
                    self.history.applied(self.now, node, from, high_watermark);
                    self.slots.get_mut(&id).expect("known").applied = high_watermark;
                    self.maybe_snapshot(id);
                }
            }
        }
        self.note_leader(id);
        self.schedule_tick(id);
    }

    /// As `Quorum::maybe_snapshot`: at the high watermark, once `snapshot_every` committed
    /// offsets passed since the log start; written durably at once, as the store does.
    fn maybe_snapshot(&mut self, id: NodeId) {
        let every = self.faults.snapshot_every;
        let slot = self.slots.get_mut(&id).expect("known");
        let Some(node) = slot.node.as_mut() else { return };
        let (start, hw) = (node.log().start(), node.high_watermark().unwrap_or(0));
        if every == 0 || hw - start < every || !node.log().is_boundary(hw) {
            return;
        }
        let Some(epoch) = node.log().epoch_at(hw - 1) else { return };
        let mut bytes = node.snapshot().map(|s| s.bytes.to_vec()).unwrap_or_default();
        for e in node.log().iter().take_while(|e| e.next_offset <= hw) {
            bytes.extend_from_slice(&e.batch);
        }
        let snapshot = Snapshot { id: SnapshotId { end: hw, epoch }, bytes: bytes.into() };
        if let Err(e) = node.snapshot_taken(snapshot.clone()) {
            return self.history.violations.push(format!("t={}: node {id} refused its own snapshot: {e}", self.now));
        }
        slot.snapshot_durable(snapshot.clone());
        if let Some(t) = &mut self.trace {
            t.push(format!("{:>6} {id} SNAPSHOT {:?}", self.now, snapshot.id));
        }
        self.history.snapshot_holds_committed(self.now, id, &snapshot, "taken");
    }

    fn submit(&mut self, id: NodeId, io: u64, op: Op) {
        let mut took = 1 + self.rand(self.faults.io_ms_max);
        if !self.healed && self.rand(1000) < self.faults.io_stall_per_mille {
            took += self.rand(io_stall_ms_max);
        }
        let slot = self.slots.get_mut(&id).expect("known node");
        slot.pending.push_back((io, op));
        slot.io_busy_until = slot.io_busy_until.max(self.now) + took;
        let (at, incarnation) = (slot.io_busy_until, slot.incarnation);
        self.push(at, Event::IoDone { node: id, incarnation });
    }

    fn note_leader(&mut self, id: NodeId) {
        let slot = &self.slots[&id];
        let Some(node) = slot.node.as_ref().filter(|n| n.is_leader()) else { return };
        if !self.seen_leaders.insert((node.epoch(), id, slot.incarnation)) {
            return;
        }
        self.history.became_leader(self.now, node);
        let incarnation = slot.incarnation;
        if !self.healed && self.faults.crashes && self.rand(1000) < self.faults.leader_churn_per_mille {
            // Half die within a random time, half at a random one of their next actions (a
            // crash point inside a step: between a commit and the fetch answer carrying it).
            if self.rand(2) == 0 {
                let at = self.now + self.rand(self.faults.leader_life_ms_max);
                self.push(at, Event::Crash { node: id, incarnation });
            } else {
                let n = 1 + self.rand(leader_actions_max) as u32;
                self.slots.get_mut(&id).expect("known").actions_left = Some(n);
            }
        }
    }

    fn running(&mut self, id: NodeId, incarnation: u64) -> Option<&mut Node> {
        let slot = self.slots.get_mut(&id)?;
        if slot.incarnation != incarnation {
            return None;
        }
        slot.node.as_mut()
    }

    fn step(&mut self, event: Event) {
        let now = self.now;
        if let Some(t) = &mut self.trace {
            let role = |id: &NodeId| self.slots.get(id).and_then(|s| s.node.as_ref()).map(|n| format!("{:?}@{}", n.role(), n.epoch()));
            match &event {
                Event::Deliver(m) => t.push(format!("{now:>6} {} gets {m:?} cut={}", m.to, self.cut.contains(&(m.from, m.to)))),
                Event::IoDone { node, .. } => t.push(format!("{now:>6} {node} io done")),
                Event::Tick { node, .. } => t.push(format!("{now:>6} {node} tick {:?}", role(node))),
                Event::Fault => t.push(format!("{now:>6} fault; cut {:?}", self.cut)),
                Event::Propose => {}
                Event::Restart(n) => t.push(format!("{now:>6} {n} restart")),
                Event::Crash { .. } => {}
            }
        }
        match event {
            Event::Deliver(m) => {
                let (from, to) = (m.from, m.to);
                if self.cut.contains(&(from, to)) {
                    return;
                }
                let Some(node) = self.slots.get_mut(&to).and_then(|s| s.node.as_mut()) else { return };
                let actions = node.receive(now, m);
                self.perform(to, actions);
            }
            Event::IoDone { node: id, incarnation } => {
                let Some(slot) = self.slots.get_mut(&id).filter(|s| s.incarnation == incarnation) else { return };
                let Some((io, op)) = slot.pending.pop_front() else { return };
                slot.apply(op, None);
                let node = slot.node.as_mut().expect("same incarnation");
                match node.io_done(now, io) {
                    Ok(actions) => self.perform(id, actions),
                    Err(e) => self.history.violations.push(format!("t={now}: node {id}: {e}")),
                }
            }
            Event::Tick { node: id, incarnation } => {
                let Some(node) = self.running(id, incarnation) else { return };
                let actions = node.tick(now);
                if node.next_deadline() <= now {
                    let what = format!("t={now}: node {id} in {:?} left its deadline at {} after a tick (a busy loop)", node.role(), node.next_deadline());
                    self.history.violations.push(what);
                }
                self.slots.get_mut(&id).expect("known").tick_at = None;
                self.perform(id, actions);
            }
            Event::Restart(id) => {
                if self.slots[&id].node.is_none() {
                    self.start(id);
                }
            }
            Event::Crash { node, incarnation } => {
                if self.slots[&node].incarnation == incarnation && !self.healed {
                    let down = self.rand(3_000);
                    self.crash(node, down);
                }
            }
            Event::Propose => self.propose(),
            Event::Fault => self.fault(),
        }
    }

    fn propose(&mut self) {
        if self.now < fault_ms + self.faults.liveness_ms - quiet_ms {
            let every = if self.healed { 400 } else { self.faults.propose_every_ms };
            let at = self.now + 1 + self.rand(2 * every);
            self.push(at, Event::Propose);
        }
        let leaders: Vec<NodeId> = self.slots.iter().filter(|(_, s)| s.node.as_ref().is_some_and(Node::is_leader)).map(|(&id, _)| id).collect();
        for id in leaders {
            self.proposed += 1;
            let value = format!("{}:{}", if self.healed { "healed" } else { "v" }, self.proposed);
            let now = self.now;
            let node = self.slots.get_mut(&id).and_then(|s| s.node.as_mut()).expect("listed as running");
            let count = 1 + (self.proposed % 3) as usize;
            let values: Vec<&[u8]> = std::iter::repeat_n(value.as_bytes(), count).collect();
            match node.propose(now, &values) {
                Ok((_, actions)) => self.perform(id, actions),
                Err(e) => self.history.violations.push(format!("t={now}: leader {id} refused a proposal: {e}")),
            }
        }
    }

    fn fault(&mut self) {
        if self.now >= fault_ms {
            return self.heal();
        }
        let at = self.now + 1 + self.rand(2 * self.faults.fault_every_ms);
        self.push(at, Event::Fault);
        let n = self.faults.voters as NodeId;
        match self.rand(5) {
            0 | 1 if self.faults.crashes => {
                // Half the time the leader (if any): its failover is where Raft's rules bite.
                let leader = self.slots.iter().find(|(_, s)| s.node.as_ref().is_some_and(Node::is_leader)).map(|(&id, _)| id);
                let victim = match leader {
                    Some(l) if self.rand(2) == 0 => l,
                    _ => self.rand(n as u64) as NodeId,
                };
                let down = self.rand(3_000);
                self.crash(victim, down);
            }
            2 if self.faults.partitions => {
                // A random side (minority or majority) cut off from the rest, both ways.
                let side: BTreeSet<NodeId> = (0..n).filter(|_| self.rand(2) == 0).collect();
                self.cut.clear();
                for a in 0..n {
                    for b in 0..n {
                        if side.contains(&a) != side.contains(&b) {
                            self.cut.insert((a, b));
                        }
                    }
                }
            }
            3 if self.faults.partitions => {
                let (a, b) = (self.rand(n as u64) as NodeId, self.rand(n as u64) as NodeId);
                self.cut.insert((a, b)); // one way
            }
            _ => self.cut.clear(),
        }
    }

    fn heal(&mut self) {
        self.healed = true;
        self.cut.clear();
        let down: Vec<NodeId> = self.slots.iter().filter(|(_, s)| s.node.is_none()).map(|(&id, _)| id).collect();
        for id in down {
            self.start(id);
        }
    }

    /// Runs both phases and the end-of-run checks; returns every violation found.
    pub fn run(self) -> Vec<String> {
        self.run_traced().0
    }

    /// [`Cluster::run`], and how many snapshots were taken and installed.
    pub fn run_counting_snapshots(mut self) -> (Vec<String>, (u64, u64)) {
        self.trace = None;
        let counted = std::cell::Cell::new((0, 0));
        let violations = self.run_then(|h| counted.set(h.snapshots));
        (violations, counted.get())
    }

    /// [`Cluster::run`], and the trace if one was asked for.
    pub fn run_traced(self) -> (Vec<String>, Vec<String>) {
        let mut trace = Vec::new();
        let violations = self.run_inner(&mut trace, |_| {});
        (violations, trace)
    }

    fn run_then(self, f: impl FnOnce(&History)) -> Vec<String> {
        self.run_inner(&mut Vec::new(), f)
    }

    fn run_inner(mut self, trace_out: &mut Vec<String>, f: impl FnOnce(&History)) -> Vec<String> {
        while let Some(((at, _), event)) = self.queue.pop_first() {
            if at > fault_ms + self.faults.liveness_ms || self.history.violations.len() > 10 {
                break;
            }
            self.now = at;
            self.step(event);
        }
        let mut violations = std::mem::take(&mut self.history.violations);
        let logs: Vec<(NodeId, Vec<Entry>)> = self.slots.iter().filter_map(|(&id, s)| s.node.as_ref().map(|n| (id, n.log().iter().cloned().collect()))).collect();
        for (&id, s) in &self.slots {
            if let Some(snapshot) = s.node.as_ref().and_then(|n| n.snapshot()) {
                self.history.check_snapshot(id, snapshot, &mut violations);
            }
        }
        checks::log_matching(&logs, &mut violations);
        checks::nothing_committed_lost(&self.history, &logs, &mut violations);
        self.liveness(&mut violations);
        f(&self.history);
        *trace_out = self.trace.take().unwrap_or_default();
        violations
    }

    /// After healing: one leader, followed by every voter, which committed an entry proposed
    /// after the heal, and every voter applied the whole committed log.
    fn liveness(&self, out: &mut Vec<String>) {
        let leaders: Vec<&Node> = self.slots.values().filter_map(|s| s.node.as_ref()).filter(|n| n.is_leader()).collect();
        let [leader] = leaders[..] else {
            return out.push(format!("liveness: {} leaders {} ms after healing", leaders.len(), self.faults.liveness_ms));
        };
        let healed_committed = self.history.committed.iter().any(|(e, _)| e.batch.windows(7).any(|w| w == b"healed:"));
        if !healed_committed {
            out.push(format!("liveness: leader {} of epoch {} committed nothing proposed after healing", leader.id(), leader.epoch()));
        }
        for (id, s) in &self.slots {
            if s.applied != self.history.committed_end() {
                out.push(format!("liveness: node {id} applied up to {} of {} committed", s.applied, self.history.committed_end()));
            }
        }
    }
}
