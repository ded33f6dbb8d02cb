//! Which `__consumer_offsets` partitions this node coordinates: taking one over at a leader
//! epoch, loading its groups and offsets from the log (a transaction's offsets pending until
//! its marker, `txn_offsets`), and resigning it. Calls on [`Coordinator`]; the shell reads the
//! log and follows leadership, this never does IO.

use super::records::{self, Key};
use super::{offsets_topic, partition_for, Coordinator, Loaded, Work};
use super::state::Out;
use crate::kafka::Code;

impl Coordinator {
    /// Its offsets partitions' ownership and loading, for the node's load jobs
    /// (`node::coordinator_load`).
    pub fn hosting_mut(&mut self) -> &mut super::hosting::Hosting {
        &mut self.hosting
    }

    /// The offsets topic has `partitions` partitions (0: it does not exist).
    pub fn set_partitions(&mut self, partitions: i32, now: u64, work: &mut Work) {
        for p in self.hosting.moved(partitions) {
            self.resign(p, now, work);
        }
        self.hosting.set_partitions(partitions);
    }

    /// This node now leads offsets partition `p` under `leader_epoch`, its log starting at
    /// `start`: its groups load from there.
    pub fn take_over(&mut self, p: i32, leader_epoch: i32, start: i64) {
        self.hosting.take_over(p, leader_epoch, start);
    }

    /// This node no longer leads offsets partition `p`: its groups' waiting requests get
    /// NOT_COORDINATOR, its pending writes fail, and the groups leave memory.
    pub fn resign(&mut self, p: i32, now: u64, work: &mut Work) {
        self.hosting.resign(p);
        let writes: Vec<u64> = self.writes.iter().filter(|(_, w)| w.partition == p).map(|(id, _)| *id).collect();
        for id in writes {
            self.finish(id, Err(Code::NotCoordinator), now, work);
        }
        let partitions = self.hosting.partitions();
        self.txn_offsets.retain(|g, _| partition_for(g, partitions) != p);
        self.resign_consumer_groups(p);
        self.resign_share_groups(p);
        let ids: Vec<String> = self.groups.keys().filter(|g| partition_for(g, partitions) == p).cloned().collect();
        for id in ids {
            let mut out = Out::default();
            if let Some(mut g) = self.groups.remove(&id) {
                g.abandon(Code::NotCoordinator, &mut out);
            }
            self.deliver(&id, out, now, work);
        }
    }

    /// A classic group's record was tombstoned: the group goes, unless it still has offsets
    /// (it became a consumer group, KIP-848's upgrade): then only its membership goes.
    fn forget_classic(&mut self, group: &str, now: u64) {
        let prefix = self.id_prefix(group);
        match self.groups.remove(group) {
            Some(old) if !old.offsets.is_empty() => {
                let mut g = super::Group::new(group, now, prefix);
                g.offsets = old.offsets;
                self.groups.insert(group.to_string(), g);
            }
            _ => {}
        }
    }

    /// What was read from offsets partition `p` while loading, in log order. `next` is the
    /// offset after it; `done` ends the load. A transaction's offsets are pending until its
    /// marker: a commit makes them offsets, an abort drops them.
    pub fn load(&mut self, p: i32, loaded: Vec<Loaded>, next: i64, done: bool, now: u64, work: &mut Work) {
        let Some(owned) = self.hosting.get_mut(p) else { return };
        owned.loading = if done { None } else { Some(next) };
        let mut skipped = 0usize;
        for item in loaded {
            let (k, v, producer) = match item {
                Loaded::Record { key, value, producer } => (key, value, producer),
                Loaded::Marker { producer_id, commit } => {
                    self.load_marker(p, producer_id, commit, now);
                    continue;
                }
            };
            let Ok(key) = records::decode_key(&k) else {
                skipped += 1;
                continue;
            };
            let group = key.group().to_string();
            match (key, v) {
                (Key::Offset { topic, partition, .. }, Some(v)) => match (records::decode_offset(&v), producer) {
                    (Ok(value), Some(producer_id)) => {
                        self.group_mut(&group, now);
                        self.txn_offsets.entry(group).or_default().entry(producer_id).or_default().insert((topic, partition), value);
                    }
                    (Ok(value), None) => {
                        if let Some(pending) = self.txn_offsets.get_mut(&group) {
                            pending.values_mut().for_each(|o| drop(o.remove(&(topic.clone(), partition))));
                            self.drop_empty_txn_offsets(&group);
                        }
                        self.group_mut(&group, now).offsets.insert((topic, partition), value);
                    }
                    (Err(_), _) => skipped += 1,
                },
                (Key::Offset { topic, partition, .. }, None) => {
                    if let Some(g) = self.groups.get_mut(&group) {
                        g.offsets.remove(&(topic, partition));
                    }
                }
                (Key::Group { .. }, Some(v)) => match records::decode_group(&v) {
                    Ok(value) => {
                        // A classic group with members supersedes the consumer group stored
                        // before it (KIP-848's downgrade).
                        if !value.members.is_empty() {
                            self.consumer_groups.remove(&group);
                        }
                        self.group_mut(&group, now).restore(value, now)
                    }
                    Err(_) => skipped += 1,
                },
                (Key::Group { .. }, None) => self.forget_classic(&group, now),
                (Key::ShareState(key), v) => {
                    if self.restore_share_state(key, v.as_deref()).is_err() {
                        skipped += 1;
                    }
                }
                (Key::ShareGroup { key, .. }, v) => {
                    if self.restore_share_group(&group, key, v.as_deref(), now).is_err() {
                        skipped += 1;
                    }
                }
                (Key::Consumer { key, .. }, v) => {
                    if self.restore_consumer(&group, key, v.as_deref(), now).is_err() {
                        skipped += 1;
                    }
                }
            }
        }
        if skipped > 0 {
            work.lines.push(format!("{offsets_topic}-{p}: skipped {skipped} records that are not group records"));
        }
        if done {
            self.consumer_groups_loaded(p, now, work);
            self.share_groups_loaded(p, now, work);
            work.lines.push(format!("{offsets_topic}-{p}: loaded; coordinating {} groups", self.groups.keys().filter(|g| self.hosting.partition_of(g) == p).count()));
        }
    }
}
