//! Where a coordinator meets the broker. The group coordinator (`__consumer_offsets`) and the
//! transaction coordinator (`__transaction_state`) are the same kind of thing to the node: each
//! coordinates the keys of the state-topic partitions this node leads, loads a partition's
//! keys from its log when it starts leading it, and makes its decisions durable as acks=all
//! appends whose replication settles them. [`Hosted`] is that shape; this module follows
//! leadership, appends and settles for both, and hands the load's steps out as jobs
//! (`coordinator_load`): it never reads the state log itself. Called with the broker locked,
//! then the coordinator (always in that order).
//!
//! The transaction coordinator's markers also leave from here: [`Txns`] pairs it with the
//! channel that sends them (`txn::markers`), whose requests come out as
//! [`Action::SendMarkers`].

use super::coordinator_load;
use crate::broker::{Action, Broker, Level, Produced};
use crate::group::hosting::Hosting;
use crate::group::{Append, Appended, Loaded};
use crate::kafka::Code;
use crate::replication::Role;
use crate::txn::markers::{Channel, Leader, Settled};
use std::collections::BTreeMap;

/// A coordinator hosted on the node's state-topic partitions.
pub trait Hosted {
    type Work: Default;
    /// Its state topic.
    const TOPIC: &'static str;
    fn set_partitions(&mut self, partitions: i32, now: u64, work: &mut Self::Work);
    fn owned(&self) -> BTreeMap<i32, i32>;
    fn resign(&mut self, p: i32, now: u64, work: &mut Self::Work);
    fn take_over(&mut self, p: i32, leader_epoch: i32, start: i64);
    /// Its state partitions' ownership and loading: which load step each waits for.
    fn hosting(&mut self) -> &mut Hosting;
    fn load(&mut self, p: i32, loaded: Vec<Loaded>, next: i64, done: bool, now: u64, work: &mut Self::Work);
    fn appended(&mut self, write: u64, result: Result<Appended, Code>, now: u64, work: &mut Self::Work);
    fn settle(&mut self, replicated: &dyn Fn(i32, Appended) -> Result<bool, Code>, now: u64, work: &mut Self::Work);
    fn has_writes(&self) -> bool;
    fn tick(&mut self, now: u64, work: &mut Self::Work);
    /// The cluster's topics as the metadata image has them (the group coordinator's consumer
    /// groups subscribe to topics and name them by id).
    fn set_topics(&mut self, _image: &crate::metadata::image::Image) {}
    /// The appends `work` asks for and its lines for the log.
    fn shared(work: &mut Self::Work) -> (&mut Vec<Append>, &mut Vec<String>);
    fn take_appends(work: &mut Self::Work) -> Vec<Append> {
        std::mem::take(Self::shared(work).0)
    }
    fn line(work: &mut Self::Work, line: String) {
        Self::shared(work).1.push(line)
    }
    fn appends_owed(work: &mut Self::Work) -> bool {
        !Self::shared(work).0.is_empty()
    }
    /// Takes the rest of `work` (answers, lines, markers) out as actions, the load steps due
    /// first (`coordinator_load::hand_out`); what that asks to append is left in `work`.
    fn finish(&mut self, b: &Broker, work: &mut Self::Work, now: u64, out: &mut Vec<Action>);
}

impl Hosted for crate::group::Coordinator {
    type Work = crate::group::Work;
    const TOPIC: &'static str = crate::group::offsets_topic;
    fn set_partitions(&mut self, partitions: i32, now: u64, work: &mut Self::Work) {
        self.set_partitions(partitions, now, work)
    }
    fn owned(&self) -> BTreeMap<i32, i32> {
        self.owned()
    }
    fn resign(&mut self, p: i32, now: u64, work: &mut Self::Work) {
        self.resign(p, now, work)
    }
    fn take_over(&mut self, p: i32, leader_epoch: i32, start: i64) {
        self.take_over(p, leader_epoch, start)
    }
    fn hosting(&mut self) -> &mut Hosting {
        self.hosting_mut()
    }
    fn load(&mut self, p: i32, loaded: Vec<Loaded>, next: i64, done: bool, now: u64, work: &mut Self::Work) {
        self.load(p, loaded, next, done, now, work)
    }
    fn appended(&mut self, write: u64, result: Result<Appended, Code>, now: u64, work: &mut Self::Work) {
        self.appended(write, result, now, work)
    }
    fn settle(&mut self, replicated: &dyn Fn(i32, Appended) -> Result<bool, Code>, now: u64, work: &mut Self::Work) {
        self.settle(replicated, now, work)
    }
    fn has_writes(&self) -> bool {
        self.has_writes()
    }
    fn tick(&mut self, now: u64, work: &mut Self::Work) {
        self.tick(now, work)
    }
    fn set_topics(&mut self, image: &crate::metadata::image::Image) {
        self.set_topics(image)
    }
    fn shared(work: &mut Self::Work) -> (&mut Vec<Append>, &mut Vec<String>) {
        (&mut work.appends, &mut work.lines)
    }
    fn finish(&mut self, b: &Broker, work: &mut Self::Work, _: u64, out: &mut Vec<Action>) {
        coordinator_load::hand_out(b, self, work, out);
        out.extend(std::mem::take(&mut work.answers).into_iter().map(|(t, a)| Action::Answer { ticket: crate::broker::Ticket::Group(t), answer: crate::broker::Answer::Group(a) }));
        out.extend(std::mem::take(&mut work.lines).into_iter().map(|l| Action::Log(Level::Info, l)));
    }
}

/// The transaction coordinator and the channel its markers leave by.
pub struct Txns {
    pub coordinator: crate::txn::Coordinator,
    pub markers: Channel,
}

impl Txns {
    pub fn new(config: crate::txn::TxnConfig, prepared: crate::txn::PreparedCommits) -> Txns {
        Txns { coordinator: crate::txn::Coordinator::new(config).with_prepared_commits(prepared), markers: Channel::default() }
    }

    /// When the coordinator's timers or a marker's retry are next due.
    pub fn next_deadline(&self) -> Option<u64> {
        let timers = self.coordinator.next_deadline().map(|t| t.max(0) as u64);
        timers.into_iter().chain(self.markers.next_deadline()).min()
    }

    /// Sends the markers owed by now: their requests come out as actions; what needs no
    /// sending (a deleted topic) is reported written at once, which may write a completion.
    fn send_due(&mut self, b: &Broker, now: u64, work: &mut crate::txn::Work, out: &mut Vec<Action>) {
        let c = &self.coordinator;
        let (sends, settled) = self.markers.due(now, |job| c.has_job(job), |topic, p| leader(b, topic, p));
        out.extend(sends.into_iter().map(Action::SendMarkers));
        self.written(settled, now, work);
    }

    fn written(&mut self, settled: Settled, now: u64, work: &mut crate::txn::Work) {
        work.lines.extend(settled.lines);
        for (job, partitions) in settled.written {
            self.coordinator.markers_written(job, &partitions, now as i64, work);
        }
    }
}

/// The answer of a WriteTxnMarkers the channel sent: settles what it wrote, and sends what is
/// owed again.
pub fn markers_answered(b: &mut Broker, t: &mut Txns, request: u64, result: super::input::MarkersResult, now: u64) -> Vec<Action> {
    let mut work = crate::txn::Work::default();
    let settled = t.markers.answered(request, result, now);
    t.written(settled, now, &mut work);
    let mut out = Vec::new();
    perform(b, t, work, now, &mut out);
    out
}

/// Where the marker for `topic`-`p` goes, by this node's metadata.
fn leader(b: &Broker, topic: &str, p: i32) -> Leader {
    let Some(t) = b.image().topics.get(topic) else { return Leader::Gone };
    match t.partitions.get(p as usize).map(|x| x.leader) {
        None => Leader::Gone,
        Some(id) if b.image().brokers.get(&id).is_some_and(|x| !x.fenced) => Leader::At(id),
        Some(_) => Leader::None,
    }
}

impl Hosted for Txns {
    type Work = crate::txn::Work;
    const TOPIC: &'static str = crate::txn::transaction_state_topic;
    fn set_partitions(&mut self, partitions: i32, now: u64, work: &mut Self::Work) {
        self.coordinator.set_partitions(partitions, now as i64, work)
    }
    fn owned(&self) -> BTreeMap<i32, i32> {
        self.coordinator.owned()
    }
    fn resign(&mut self, p: i32, now: u64, work: &mut Self::Work) {
        self.coordinator.resign(p, now as i64, work)
    }
    fn take_over(&mut self, p: i32, leader_epoch: i32, start: i64) {
        self.coordinator.take_over(p, leader_epoch, start)
    }
    fn hosting(&mut self) -> &mut Hosting {
        self.coordinator.hosting_mut()
    }
    fn load(&mut self, p: i32, loaded: Vec<Loaded>, next: i64, done: bool, now: u64, work: &mut Self::Work) {
        // The state topic holds no transactions: its records are all there is.
        let records = loaded.into_iter().filter_map(|l| match l {
            Loaded::Record { key, value, .. } => Some((key, value)),
            Loaded::Marker { .. } => None,
        });
        self.coordinator.load(p, records.collect(), next, done, now as i64, work)
    }
    fn appended(&mut self, write: u64, result: Result<Appended, Code>, now: u64, work: &mut Self::Work) {
        self.coordinator.appended(write, result, now as i64, work)
    }
    fn settle(&mut self, replicated: &dyn Fn(i32, Appended) -> Result<bool, Code>, now: u64, work: &mut Self::Work) {
        self.coordinator.settle(replicated, now as i64, work)
    }
    fn has_writes(&self) -> bool {
        self.coordinator.has_writes()
    }
    fn tick(&mut self, now: u64, work: &mut Self::Work) {
        self.coordinator.tick(now as i64, work);
    }
    fn shared(work: &mut Self::Work) -> (&mut Vec<Append>, &mut Vec<String>) {
        (&mut work.appends, &mut work.lines)
    }
    fn finish(&mut self, b: &Broker, work: &mut Self::Work, now: u64, out: &mut Vec<Action>) {
        coordinator_load::hand_out(b, self, work, out);
        for job in std::mem::take(&mut work.markers) {
            self.markers.add(job, now);
        }
        // A marker that needs no sending may write a completion: left in `work` to append.
        self.send_due(b, now, work, out);
        out.extend(std::mem::take(&mut work.answers).into_iter().map(|(t, a)| Action::Answer { ticket: crate::broker::Ticket::Txn(t), answer: crate::broker::Answer::Txn(a) }));
        out.extend(std::mem::take(&mut work.lines).into_iter().map(|l| Action::Log(Level::Info, l)));
    }
}

/// Brings the coordinator in line with the partitions this node leads now. A partition loading
/// with nothing left to read ends its load here; the others' steps are jobs, handed out as the
/// work is finished (`coordinator_load`).
pub fn sync_ownership<C: Hosted>(b: &Broker, c: &mut C, now: u64, work: &mut C::Work) {
    let topic = C::TOPIC;
    c.set_topics(b.image());
    let partitions = b.image().topics.get(topic).map_or(0, |t| t.partitions.len() as i32);
    c.set_partitions(partitions, now, work);
    let led: Vec<(i32, i32, i64)> = (0..partitions)
        .filter_map(|p| {
            let part = b.partitions().get(topic, p)?;
            let r = &part.replication;
            (r.role == Role::Leader).then_some((p, r.leader_epoch, part.log_start_offset()))
        })
        .collect();
    let owned = c.owned();
    for (p, epoch) in &owned {
        if !led.iter().any(|(q, e, _)| q == p && e == epoch) {
            c.resign(*p, now, work);
        }
    }
    for (p, epoch, start) in &led {
        if owned.get(p) != Some(epoch) {
            c.take_over(*p, *epoch, *start);
        }
    }
    coordinator_load::finish_empty(b, c, now, work);
}

/// Performs the coordinator's work: appends its batches to its state topic (as the leader,
/// acks=all), settles writes the high watermark has passed, and turns the rest into actions.
pub fn perform<C: Hosted>(b: &mut Broker, c: &mut C, mut work: C::Work, now: u64, out: &mut Vec<Action>) {
    loop {
        for Append { write, partition, batch } in C::take_appends(&mut work) {
            let result = b.produce_for_coordinator(C::TOPIC, partition, &batch, now, out).map(|p| Appended { last_offset: p.last_offset, leader_epoch: p.leader_epoch, log: p.log }).map_err(|e| e.kafka_error(true));
            c.appended(write, result, now, &mut work);
        }
        if c.has_writes() {
            c.settle(&|p, appended| replicated(b, C::TOPIC, p, appended), now, &mut work);
        }
        if C::appends_owed(&mut work) {
            continue;
        }
        // Finishing may ask for more (a marker needing no sending completes its transaction).
        c.finish(b, &mut work, now, out);
        if !C::appends_owed(&mut work) {
            break;
        }
    }
}

/// Settles the coordinator's writes whose fate a decision just decided (a high watermark
/// moved, a leadership ended): their answers come out in `out`.
pub fn settle<C: Hosted>(b: &mut Broker, c: &mut C, now: u64, out: &mut Vec<Action>) {
    if c.has_writes() {
        perform(b, c, C::Work::default(), now, out);
    }
}

fn replicated(b: &Broker, topic: &str, p: i32, a: Appended) -> Result<bool, Code> {
    let produced = Produced { base_offset: a.last_offset, last_offset: a.last_offset, log_start_offset: 0, leader_epoch: a.leader_epoch, log_append_time: -1, duplicate: false, log: a.log };
    b.replicated(topic, p, &produced).map_err(|e| e.kafka_error(true))
}

/// The coordinator's timers: ownership, loading (a step that failed is asked again), and its
/// own (sessions, rebalance deadlines, transaction timeouts, expiry).
pub fn tick<C: Hosted>(b: &mut Broker, c: &mut C, now: u64) -> Vec<Action> {
    let mut work = C::Work::default();
    c.hosting().retry_loads();
    sync_ownership(b, c, now, &mut work);
    c.tick(now, &mut work);
    let mut out = Vec::new();
    perform(b, c, work, now, &mut out);
    out
}
