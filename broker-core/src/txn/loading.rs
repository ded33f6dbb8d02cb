//! Which `__transaction_state` partitions this node coordinates: taking one over at a leader
//! (coordinator) epoch, loading its ids from the log (the last record of each id wins, a
//! tombstone forgets it) and resending the markers of every transaction found prepared, and
//! resigning it. Calls on [`Coordinator`]; the shell reads the log and follows leadership, this
//! never does IO.

use super::{partition_for, records, transaction_state_topic, Coordinator, Entry, TxnMetadata, TxnState, Work};
use crate::kafka::Code;

impl Coordinator {
    /// Its state partitions' ownership and loading, for the node's load jobs
    /// (`node::coordinator_load`).
    pub fn hosting_mut(&mut self) -> &mut crate::group::hosting::Hosting {
        &mut self.hosting
    }

    /// The state topic has `partitions` partitions (0: it does not exist).
    pub fn set_partitions(&mut self, partitions: i32, now: i64, work: &mut Work) {
        for p in self.hosting.moved(partitions) {
            self.resign(p, now, work);
        }
        self.hosting.set_partitions(partitions);
    }

    /// This node now leads state partition `p` under `leader_epoch` (the coordinator epoch),
    /// its log starting at `start`: its ids load from there. A partition led under another
    /// epoch must be resigned first.
    pub fn take_over(&mut self, p: i32, leader_epoch: i32, start: i64) {
        self.hosting.take_over(p, leader_epoch, start);
    }

    /// This node no longer leads state partition `p`: requests waiting on its writes get
    /// NOT_COORDINATOR, its marker jobs are dropped (the next coordinator resends them) and
    /// its ids leave memory.
    pub fn resign(&mut self, p: i32, _now: i64, work: &mut Work) {
        self.hosting.resign(p);
        let writes: Vec<u64> = self.writes.iter().filter(|(_, w)| w.partition == p).map(|(id, _)| *id).collect();
        for id in writes {
            if let Some(w) = self.writes.remove(&id) {
                self.answer(w.then, Err(Code::NotCoordinator), work);
            }
        }
        let partitions = self.hosting.partitions();
        self.txns.retain(|id, _| partition_for(id, partitions) != p);
        let txns = &self.txns;
        self.jobs.retain(|_, id| txns.contains_key(id));
    }

    /// Records read from state partition `p` while loading, in offset order: (key, value) with
    /// None for a tombstone. `next` is the offset after them; `done` ends the load, and then
    /// every transaction found prepared has its markers sent again.
    pub fn load(&mut self, p: i32, records: Vec<(bytes::Bytes, Option<bytes::Bytes>)>, next: i64, done: bool, now: i64, work: &mut Work) {
        let Some(owned) = self.hosting.get_mut(p) else { return };
        if owned.loading.is_none() {
            return;
        }
        owned.loading = if done { None } else { Some(next) };
        let mut skipped = 0usize;
        for (k, v) in records {
            match records::decode_record(&k, v.as_deref()) {
                Ok((id, _)) if self.hosting.partition_of(&id) != p => skipped += 1,
                Ok((id, Some(value))) if value.state != TxnState::Dead => drop(self.txns.insert(id, Entry { meta: TxnMetadata::from_value(value), transit: None })),
                Ok((id, _)) => drop(self.txns.remove(&id)),
                Err(_) => skipped += 1,
            }
        }
        if skipped > 0 {
            work.lines.push(format!("{transaction_state_topic}-{p}: skipped {skipped} records that are not this partition's transaction records"));
        }
        if !done {
            return;
        }
        let partitions = self.hosting.partitions();
        let mine: Vec<String> = self.txns.keys().filter(|id| partition_for(id, partitions) == p).cloned().collect();
        let mut resent = 0;
        for id in &mine {
            let Some(e) = self.txns.get_mut(id) else { continue };
            // Kafka never writes PrepareEpochFence (a fence is written as PrepareAbort); a
            // record holding it meant to abort, so it is finished as an abort.
            if e.meta.state == TxnState::PrepareEpochFence {
                e.meta.state = TxnState::PrepareAbort;
            }
            if e.meta.state.is_prepare() {
                resent += 1;
                self.send_markers(id, now, work);
            }
        }
        work.lines.push(format!("{transaction_state_topic}-{p}: loaded; coordinating {} transactional ids, resending markers of {resent}", mine.len()));
    }
}
