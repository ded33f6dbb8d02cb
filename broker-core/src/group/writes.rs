//! The coordinator's writes to `__consumer_offsets`: a batch built for each decision that must be
//! durable, where the shell appended it, and what it does once the offsets topic's high
//! watermark passes it (or why it never will): offsets take effect, a leader's assignment is
//! given out, a deletion is done, a consumer or share group's heartbeat is answered. Calls on
//! [`Coordinator`]; the shell appends and reports, this never does IO.

use super::calls::write_error;
use super::records::OffsetValue;
use super::state::Out;
use super::{rules, Answer, Appended, Append, Coordinator, Group, Offsets, Ticket, Work};
use crate::kafka::Code;
use crate::log::batch;

/// A write appended (or being appended) and what it does once replicated.
#[derive(Debug)]
pub(super) struct Write {
    pub(super) partition: i32,
    /// Where it was appended.
    pub(super) appended: Option<Appended>,
    pub(super) effect: Effect,
}

#[derive(Debug)]
pub(super) enum Effect {
    /// The leader's assignment for a generation.
    Assignment { group: String, generation: i32 },
    /// Nothing waits on it.
    Background,
    /// Offsets take effect and the committer is answered.
    Commit { group: String, offsets: Vec<((String, i32), OffsetValue)>, ticket: Ticket },
    /// The group (or some of its offsets) is gone, and the caller is answered.
    Delete { group: String, offsets: Option<Vec<(String, i32)>>, ticket: Ticket },
    /// A consumer group changed (a heartbeat's answer, if one waits, once that is replicated).
    /// A failure answers the write's error, and the group's next write is whole, with
    /// tombstones for `members` (those this write may have stored).
    Consumer { group: String, waiting: Option<(Ticket, Answer)>, members: std::collections::BTreeSet<String> },
    /// A share group changed (a heartbeat's answer, if one waits, once that is replicated); a
    /// failure answers the write's error and makes the group's next write whole, with
    /// tombstones for `members` (`share_groups`).
    ShareGroup { group: String, waiting: Option<(Ticket, Answer)>, members: std::collections::BTreeSet<String> },
    /// A share-partition's state is written (or its leader epoch, by a read): `answer` once
    /// replicated, the write's error otherwise.
    Share { ticket: Ticket, answer: Answer },
    /// A share group's offsets altered or deleted (`share_offsets`): `states` replace the
    /// stored ones once replicated, and the caller is answered; dropped if the write fails.
    ShareOffsets { group: String, states: Vec<(super::share_state::ShareKey, super::share_state::Stored)>, ticket: Ticket },
    /// Offsets committed inside `producer_id`'s transaction are written (pending until its
    /// marker), and the committer is answered.
    TxnCommit { group: String, producer_id: i64, offsets: Vec<(String, i32)>, ticket: Ticket },
    /// `producer_id`'s transaction marker is in the log: once replicated, a commit makes the
    /// offsets it ended take effect (an abort drops them); a failed one gives them back to
    /// the pending ones (the coordinator sends the marker again).
    TxnEnd { producer_id: i64, commit: bool, ended: Vec<(String, Offsets)> },
}

impl Coordinator {
    pub(super) fn write(&mut self, group: &str, kvs: Vec<(Vec<u8>, Option<Vec<u8>>)>, effect: Effect, now: u64, work: &mut Work) {
        self.write_as(group, kvs, None, effect, now, work)
    }

    /// [`Coordinator::write`], as a transactional batch of `producer` (id, epoch) when given.
    pub(super) fn write_as(&mut self, group: &str, kvs: Vec<(Vec<u8>, Option<Vec<u8>>)>, producer: Option<(i64, i16)>, effect: Effect, now: u64, work: &mut Work) {
        let partition = self.hosting.partition_of(group);
        let id = self.next_write;
        self.next_write += 1;
        let records: Vec<batch::KeyValue> = kvs.iter().map(|(k, v)| (Some(k.as_slice()), v.as_deref())).collect();
        let mut bytes = batch::build_keyed(&records, now as i64);
        if let Some((producer_id, epoch)) = producer {
            // No sequence: the broker checks a coordinator's batch for its epoch alone.
            batch::set_producer(&mut bytes, producer_id, epoch, -1);
            batch::set_transactional(&mut bytes);
        }
        work.appends.push(Append { write: id, partition, batch: bytes });
        self.writes.insert(id, Write { partition, appended: None, effect });
    }

    /// The shell appended `write` (where: [`Appended`]), or could not.
    pub fn appended(&mut self, write: u64, result: Result<Appended, Code>, now: u64, work: &mut Work) {
        match result {
            Ok(at) => {
                if let Some(w) = self.writes.get_mut(&write) {
                    w.appended = Some(at);
                }
            }
            Err(code) => self.finish(write, Err(write_error(code)), now, work),
        }
    }

    /// Writes whose fate is known by now: `replicated(partition, appended)` says whether the
    /// offsets topic's high watermark passed it, or why it never will.
    pub fn settle(&mut self, replicated: impl Fn(i32, Appended) -> Result<bool, Code>, now: u64, work: &mut Work) {
        let done: Vec<(u64, Result<(), Code>)> = self
            .writes
            .iter()
            .filter_map(|(id, w)| {
                match replicated(w.partition, w.appended?) {
                    Ok(true) => Some((*id, Ok(()))),
                    Ok(false) => None,
                    Err(code) => Some((*id, Err(write_error(code)))),
                }
            })
            .collect();
        for (id, result) in done {
            self.finish(id, result, now, work);
        }
    }

    /// Whether writes are waiting for replication (the shell settles them when marks move).
    pub fn has_writes(&self) -> bool {
        !self.writes.is_empty()
    }

    pub(super) fn finish(&mut self, write: u64, result: Result<(), Code>, now: u64, work: &mut Work) {
        let Some(w) = self.writes.remove(&write) else { return };
        let mut out = Out::default();
        let group = match w.effect {
            Effect::Background => return,
            Effect::Share { ticket, answer } => {
                if self.open.remove(&ticket) {
                    work.answers.push((ticket, result.map_or_else(|code| Answer::ShareState(Err(code)), |()| answer)));
                }
                return;
            }
            Effect::ShareOffsets { states, ticket, .. } => {
                self.share_offsets_written(states, result);
                if self.open.remove(&ticket) {
                    work.answers.push((ticket, Answer::ShareState(result.map(|()| None))));
                }
                return;
            }
            Effect::ShareGroup { group, waiting, members } => {
                self.share_group_written(&group, result, members);
                if let Some((ticket, answer)) = waiting {
                    out.answers.push((ticket, result.map_or_else(|code| Answer::Consumer(Err(code)), |()| answer)));
                }
                group
            }
            Effect::Consumer { group, waiting, members } => {
                if result.is_err() {
                    self.consumer_unsynced.entry(group.clone()).or_default().extend(members);
                }
                if let Some((ticket, answer)) = waiting {
                    out.answers.push((ticket, result.map_or_else(|code| Answer::Consumer(Err(code)), |()| answer)));
                }
                group
            }
            Effect::Assignment { group, generation } => {
                if let Some(g) = self.groups.get_mut(&group) {
                    g.stored(generation, result, now, &mut out);
                }
                group
            }
            Effect::Commit { group, offsets, ticket } => {
                if result.is_ok() {
                    let g = self.groups.entry(group.clone()).or_insert_with(|| Group::new(&group, now, String::new()));
                    g.offsets.extend(offsets);
                }
                out.answers.push((ticket, Answer::Written(result)));
                group
            }
            Effect::TxnCommit { group, producer_id, offsets, ticket } => {
                if result.is_err() {
                    // Not written: these offsets were never part of the transaction.
                    if let Some(pending) = self.txn_offsets.get_mut(&group).and_then(|g| g.get_mut(&producer_id)) {
                        offsets.iter().for_each(|tp| drop(pending.remove(tp)));
                    }
                    self.drop_empty_txn_offsets(&group);
                }
                out.answers.push((ticket, Answer::Written(result)));
                group
            }
            Effect::TxnEnd { producer_id, commit, ended } => {
                let takes_effect = rules::of(self.planted).txn_offsets_take_effect(commit);
                for (group, offsets) in ended {
                    match (result.is_ok(), takes_effect) {
                        (true, true) => self.groups.entry(group.clone()).or_insert_with(|| Group::new(&group, now, String::new())).offsets.extend(offsets),
                        (true, false) => {}
                        (false, _) => {
                            // Pending again, under anything committed since: the marker comes again.
                            let pending = self.txn_offsets.entry(group).or_default().entry(producer_id).or_default();
                            for (tp, v) in offsets {
                                pending.entry(tp).or_insert(v);
                            }
                        }
                    }
                }
                return;
            }
            Effect::Delete { group, offsets, ticket } => {
                if offsets.is_none() {
                    self.share_group_deleted(&group, result);
                }
                match (result.is_ok(), offsets) {
                    (true, Some(parts)) => {
                        if let Some(g) = self.groups.get_mut(&group) {
                            parts.iter().for_each(|tp| drop(g.offsets.remove(tp)));
                        }
                    }
                    (true, None) => {
                        self.groups.remove(&group);
                        self.consumer_groups.remove(&group);
                    }
                    // Not deleted after all: the group is back, as Empty as it was.
                    (false, None) => self.groups.get_mut(&group).into_iter().for_each(|g| g.revive(now)),
                    (false, Some(_)) => {}
                }
                out.answers.push((ticket, Answer::Written(result)));
                group
            }
        };
        self.deliver(&group, out, now, work);
    }
}
