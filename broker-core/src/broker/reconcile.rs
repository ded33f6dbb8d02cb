//! The local replicas brought in line with the cluster metadata: committed records applied to
//! the image, replicas queued to open (a job, `opening`), re-roled or removed (an open still
//! out fenced first), topic config changes applied to open logs,
//! and nothing given a role before this process's own registration is in the image. Also the
//! topics Metadata requests asked to auto-create, until the controller has them.

use super::partition::Partition;
use super::{Action, Broker, Error, Level};
use crate::constants::failed_log_reopen_ms;
use crate::metadata::configs::TopicSettings;
use crate::metadata::{topic, MetadataRecord};
use crate::replication::Change;
use std::collections::BTreeSet;

impl Broker {
    /// Applies one committed metadata record (see [`Broker::apply_metadata_batch`]).
    pub fn apply_metadata(&mut self, offset: i64, record: &MetadataRecord, now: u64) -> Vec<Action> {
        self.apply_metadata_batch(&[(offset, record.clone())], now)
    }

    /// Applies a run of committed metadata records as one step, then brings the local replicas
    /// in line with the resulting image: a replica whose topic is gone, or was re-created under
    /// another id, is removed; the partitions the records touched are opened and given their
    /// roles. Reconciling once at the end, not per record, is what makes a replay safe: replaying
    /// a log in which a topic was deleted and re-created must never open the old topic over the
    /// new one's directory.
    pub fn apply_metadata_batch(&mut self, records: &[(i64, MetadataRecord)], now: u64) -> Vec<Action> {
        let mut touched: BTreeSet<(String, i32)> = BTreeSet::new();
        // Roles, ISRs, live brokers and the replicas named here may all have moved (`due`).
        self.due.replicas_changed();
        self.due.isr_all = true;
        let mut reconfigured: BTreeSet<String> = BTreeSet::new();
        let (mut all, mut stale, mut topics) = (false, false, false);
        for (offset, record) in records {
            self.image.apply(*offset, record);
            match record {
                MetadataRecord::Partition { topic, partition, .. } => {
                    touched.insert((topic.clone(), *partition));
                }
                MetadataRecord::Topic { name, .. } => {
                    self.auto_create.remove(name);
                    topics = true;
                }
                MetadataRecord::RemoveTopic { .. } => topics = true,
                MetadataRecord::TopicConfig { name, .. } => {
                    reconfigured.insert(name.clone());
                }
                MetadataRecord::RegisterBroker { id, epoch, .. } if *id == self.config.node_id && Some(*epoch) == self.registered => all = true,
                // A registration of this node that this process did not get the answer to:
                // the controller has moved its roles; none of ours is current any more.
                MetadataRecord::RegisterBroker { id, .. } if *id == self.config.node_id => stale = true,
                _ => {}
            }
        }
        if topics {
            self.topic_ids = super::topic_ids::TopicIds::of(&self.image);
        }
        let mut out = Vec::new();
        if stale {
            // Dropped even if this process's own registration is in the same run: a newer one
            // follows it, and `ready` is false until this process registers again.
            for part in self.partitions.values_mut() {
                part.replication.stop();
            }
        }
        // Open replicas and those whose open job is out alike.
        let image = &self.image;
        let is_gone = |n: &str, p: i32, id: [u8; 16]| image.topics.get(n).is_none_or(|t| t.id != id || p as usize >= t.partitions.len());
        let open = self.partitions.iter().map(|((n, p), part)| (n.to_string(), p, part.topic_id));
        let opening = self.opening_ids().map(|((n, p), id)| (n.clone(), *p, id));
        let mut gone: Vec<(String, i32)> = open.chain(opening).filter(|(n, p, id)| is_gone(n, *p, *id)).map(|(n, p, _)| (n, p)).collect();
        // And offline ones whose topic is gone (one re-created meanwhile empties the directory
        // when it opens, `dir::claim`).
        let no_topic = |n: &str, p: i32| image.topics.get(n).is_none_or(|t| p as usize >= t.partitions.len());
        gone.extend(self.offline.keys().filter(|(n, p)| no_topic(n, *p) && !self.partitions.contains(n, *p) && !self.opening.contains_key(&(n.clone(), *p))).cloned());
        self.shut_opens(&gone);
        for (name, p) in gone {
            match self.remove_local(&name, p, &mut out) {
                Ok(()) => out.push(Action::Log(Level::Info, format!("{name}-{p}: topic deleted; replica removed"))),
                Err(e) => out.push(Action::Log(Level::Error, format!("{name}-{p}: removing: {e}"))),
            }
        }
        for name in reconfigured {
            self.apply_topic_config(&name, &mut out);
        }
        let image = &self.image;
        self.offline.retain(|(n, _), _| image.topics.contains_key(n));
        self.failed_leading.retain(|(n, _), (id, _)| image.topics.get(n).is_some_and(|t| t.id == *id));
        self.creating.retain(|(n, _)| image.topics.contains_key(n));
        self.stats.retain(|n| image.topics.contains_key(n));
        if all {
            out.extend(self.reconcile_all(now));
            return out;
        }
        for key in touched {
            self.reconcile_or_offline(key, now, &mut out);
        }
        self.hand_out_opens(&mut out);
        out
    }

    /// A topic's config changed: every open replica of it takes the new settings at once —
    /// retention, roll, flush, size limit, cleaning and timestamp type from the next append or
    /// tick, `min.insync.replicas` from the next acks=all produce.
    fn apply_topic_config(&mut self, name: &str, out: &mut Vec<Action>) {
        let Some(settings) = self.settings_or_defaults(name, out) else { return };
        let overrides = self.image.topics.get(name).map(|t| t.config.clone()).unwrap_or_default();
        let Some(topic) = self.partitions.topic_name(name).cloned() else {
            out.push(Action::Log(Level::Info, format!("{name}: topic config overrides now {overrides:?}")));
            return;
        };
        for (p, part) in self.partitions.topic_mut(name) {
            let n = name;
            part.min_insync = settings.min_insync;
            part.replication.set_strict_min_isr(self.config.strict_min_isr(settings.min_insync));
            if let Err(e) = part.log.set_config(settings.log.clone()) {
                out.push(Action::Log(Level::Error, format!("{n}-{p}: new config refused by the log: {e}")));
            }
            self.due.logs.note(&topic, p, &part.log, part.high_watermark());
        }
        out.push(Action::Log(Level::Info, format!("{name}: topic config overrides now {overrides:?}")));
    }

    /// [`Broker::topic_settings`], or this broker's defaults (with a log line) when the
    /// topic's overrides do not resolve here; None for an unknown topic.
    pub(super) fn settings_or_defaults(&self, name: &str, out: &mut Vec<Action>) -> Option<TopicSettings> {
        match self.topic_settings(name)? {
            Ok(s) => Some(s),
            Err(e) => {
                out.push(Action::Log(Level::Error, format!("{name}: config overrides do not apply on this broker ({e}); using its defaults")));
                Some(self.topic_defaults())
            }
        }
    }

    /// Whether the image holds this process's own registration: only then are its roles current.
    pub fn ready(&self) -> bool {
        !self.config.rules().roles_wait_for_registration() || (self.registered.is_some() && self.image.brokers.get(&self.config.node_id).map(|b| b.epoch) == self.registered)
    }

    /// The controller accepted this process's registration with `epoch`. Every role is dropped
    /// until the metadata log shows that registration (see [`Broker::ready`]).
    pub fn registered(&mut self, epoch: i64, now: u64) -> Vec<Action> {
        self.registered = Some(epoch);
        self.due.isr_all = true;
        self.due.followed = None;
        for part in self.partitions.values_mut() {
            part.replication.stop();
        }
        if self.ready() { self.reconcile_all(now) } else { Vec::new() }
    }

    fn reconcile_all(&mut self, now: u64) -> Vec<Action> {
        let mut out = Vec::new();
        self.remove_strays(&mut out);
        let keys: Vec<(String, i32)> = self.image.topics.iter().flat_map(|(n, t)| (0..t.partitions.len() as i32).map(move |p| (n.clone(), p))).collect();
        for key in keys {
            self.reconcile_or_offline(key, now, &mut out);
        }
        self.hand_out_opens(&mut out);
        out
    }

    /// [`Broker::reconcile`], marking the replica offline (retried later) when it fails.
    pub(super) fn reconcile_or_offline(&mut self, (name, p): (String, i32), now: u64, out: &mut Vec<Action>) {
        if let Err(e) = self.reconcile(&name, p, now, out) {
            out.push(Action::Log(Level::Error, format!("{name}-{p}: {e}")));
            self.offline.insert((name, p), now + failed_log_reopen_ms);
        }
    }

    /// Opens, re-roles or removes the local replica of one partition per the image.
    pub(super) fn reconcile(&mut self, name: &str, p: i32, now: u64, out: &mut Vec<Action>) -> Result<(), Error> {
        let Some(info) = self.image.partition(name, p).cloned() else { return Ok(()) };
        let me = self.config.node_id;
        if !info.replicas.contains(&me) {
            let offline = self.offline.remove(&(name.to_string(), p)).is_some();
            if self.partitions.contains(name, p) || self.is_opening(name, p) || offline {
                self.remove_local(name, p, out)?;
                out.push(Action::Log(Level::Info, format!("{name}-{p}: no longer a replica here; removed")));
            }
            return Ok(());
        }
        if !self.partitions.contains(name, p) {
            if self.is_opening(name, p) {
                return Ok(()); // its open job's report gives it its role
            }
            let key = (name.to_string(), p);
            match self.failed_leading.get(&key) {
                // Led here when its log failed: not before the controller names a later epoch.
                Some(&(_, failed)) if info.leader_epoch <= failed => return Ok(()),
                Some(_) => drop(self.failed_leading.remove(&key)),
                None => {}
            }
            // Opened off the gate; its report gives it its role (`opening`).
            return self.queue_open(name, p, now, out);
        }
        self.note_log(name, p);
        self.due.followed = None;
        if !self.ready() {
            return Ok(()); // opened, but no role before this process's registration is applied
        }
        let (topic, part) = self.partitions.get_mut_named(name, p).expect("opened above");
        // A new role or ISR: its ISR is looked at next (`due`), its log's retention may be
        // nearer with the high watermark the role brought.
        self.due.isr.at((topic.clone(), p), 0);
        let change = part.apply(&info, now);
        self.config.rules().after_partition_record(&mut part.replication);
        part.observed(&self.config.observer, self.config.node_id, name, p, now);
        if change == Change::BecameLeader {
            out.push(Action::Wake);
            out.push(Action::Log(Level::Info, format!("{name}-{p}: leader at epoch {} from offset {}", info.leader_epoch, part.leo())));
            let topic_id = self.image.topics.get(name).map_or([0; 16], |t| t.id);
            out.push(Action::Leading { topic: name.to_string(), topic_id, partition: p, leader_epoch: info.leader_epoch });
        }
        self.note_log(name, p);
        Ok(())
    }

    /// Closes this node's replica (no file is touched) and tells the simulator's ISR watch.
    /// Its log's jobs are closed first (`Log::close_jobs`): one running off the gate ends
    /// before whatever comes next (a reopen's recovery, the directory's removal, a topic
    /// created again at the path) changes the directory, and one that runs later does nothing.
    pub(super) fn forget(&mut self, name: &str, p: i32, now: u64) -> Option<Partition> {
        let part = self.partitions.remove(name, p)?;
        part.log.close_jobs();
        self.due.replicas_changed(); // (`due`) the open replicas and roles changed
        let (node, topic_id) = (self.config.node_id, part.topic_id);
        self.config.observer.see(crate::observe::Observation::ReplicaLogEnd { node, topic: name, topic_id, partition: p, log_end: None, now });
        Some(part)
    }

    /// Asks for `name` to be auto-created (Metadata with auto-creation allowed): `Ok(false)`
    /// when auto-creation is off. The shell forwards the request to the controller.
    pub fn request_auto_create(&mut self, name: &str) -> Result<bool, Error> {
        // The coordinators' state topics are created on first use whatever the setting.
        let internal = name == crate::group::offsets_topic || name == crate::txn::transaction_state_topic;
        if !self.config.auto_create_topics && !internal {
            return Ok(false);
        }
        topic::validate_name(name).map_err(Error::InvalidTopic)?;
        self.auto_create.insert(name.to_string());
        Ok(true)
    }

    /// Topics waiting to be created by the controller.
    pub fn auto_create_requests(&self) -> Vec<String> {
        self.auto_create.iter().cloned().collect()
    }

    /// The controller refused to auto-create `name` (the next Metadata request may ask again).
    pub fn auto_create_failed(&mut self, name: &str) {
        self.auto_create.remove(name);
    }
}
