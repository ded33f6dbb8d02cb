//! Offsets committed inside transactions (TxnOffsetCommit, classic protocol): written as the
//! producer's transactional batch, pending per group and producer until the transaction's
//! marker reaches the offsets partition, then offsets (commit) or dropped (abort); unstable to
//! OffsetFetch with `require_stable` meanwhile. Calls on [`Coordinator`]; the load's side is
//! here too ([`Coordinator::load_marker`]).

use super::records::OffsetValue;
use super::records::offset_records;
use super::{partition_for, rules, Coordinator, Effect, Pending, Work, Write};
use crate::kafka::Code;

impl Coordinator {
    /// TxnOffsetCommit of already validated offsets, from `producer_id` at `epoch` inside its
    /// transaction: checked as a commit is when it names a member and generation (v3+); written
    /// as a transactional batch of that producer, answered once replicated, and kept pending
    /// (not an offset yet, and unstable to OffsetFetch with `require_stable`) until the
    /// transaction's marker reaches this partition ([`Coordinator::txn_marker`]).
    #[allow(clippy::too_many_arguments)]
    pub fn txn_commit(&mut self, group: &str, (producer_id, epoch): (i64, i16), member: &str, instance: Option<&str>, generation: i32, offsets: Vec<((String, i32), OffsetValue)>, now: u64, work: &mut Work) -> Result<Pending<()>, Code> {
        self.owner(group)?;
        if let Some(checked) = self.consumer_member_check(group, member, generation) {
            checked?;
        } else if generation >= 0 || !member.is_empty() {
            let stale = self.groups.get(group).filter(|g| g.members.contains_key(member) && (0..g.generation).contains(&generation)).map(|g| g.generation);
            let rules = rules::of(self.planted);
            match self.groups.get_mut(group) {
                Some(g) => rules.check_commit(g, member, instance, generation, stale, now)?,
                None if generation < 0 => {}
                None => return Err(Code::IllegalGeneration),
            }
        }
        if offsets.is_empty() {
            return Ok(Pending::Now(()));
        }
        self.group_mut(group, now);
        let pending = self.txn_offsets.entry(group.to_string()).or_default().entry(producer_id).or_default();
        pending.extend(offsets.iter().cloned());
        let ticket = self.ticket();
        let kvs = offset_records(group, &offsets);
        let effect = Effect::TxnCommit { group: group.to_string(), producer_id, offsets: offsets.into_iter().map(|(tp, _)| tp).collect(), ticket };
        self.write_as(group, kvs, Some((producer_id, epoch)), effect, now, work);
        Ok(Pending::Wait(ticket))
    }

    /// `producer_id`'s transaction marker was appended to offsets partition `p` at `at`: the
    /// offsets its transaction committed to this partition's groups
    /// take effect once the marker is replicated (or are dropped, for an abort). A partition
    /// still loading meets the marker in its log instead.
    pub fn txn_marker(&mut self, p: i32, producer_id: i64, commit: bool, at: super::Appended) {
        if self.hosting.get(p).is_none_or(|o| o.loading.is_some()) {
            return;
        }
        let partitions = self.hosting.partitions();
        let mut ended = Vec::new();
        for (group, by_producer) in self.txn_offsets.iter_mut().filter(|(g, _)| partition_for(g, partitions) == p) {
            if let Some(offsets) = by_producer.remove(&producer_id) {
                ended.push((group.clone(), offsets));
            }
        }
        self.txn_offsets.retain(|_, by_producer| !by_producer.is_empty());
        let id = self.next_write;
        self.next_write += 1;
        self.writes.insert(id, Write { partition: p, appended: Some(at), effect: Effect::TxnEnd { producer_id, commit, ended } });
    }

    /// Whether `group`'s offset for `tp` waits on an open transaction (OffsetFetch with
    /// `require_stable` answers UNSTABLE_OFFSET_COMMIT for it).
    pub fn unstable(&self, group: &str, tp: &(String, i32)) -> bool {
        let pending = self.txn_offsets.get(group).is_some_and(|by_producer| by_producer.values().any(|o| o.contains_key(tp)));
        let ending = self.writes.values().any(|w| matches!(&w.effect, Effect::TxnEnd { ended, .. } if ended.iter().any(|(g, o)| g == group && o.contains_key(tp))));
        pending || ending
    }

    pub(super) fn drop_empty_txn_offsets(&mut self, group: &str) {
        if let Some(by_producer) = self.txn_offsets.get_mut(group) {
            by_producer.retain(|_, o| !o.is_empty());
            if by_producer.is_empty() {
                self.txn_offsets.remove(group);
            }
        }
    }

    /// A marker met while loading partition `p`: the transaction's offsets take effect or go.
    pub(super) fn load_marker(&mut self, p: i32, producer_id: i64, commit: bool, now: u64) {
        let partitions = self.hosting.partitions();
        let groups: Vec<String> = self.txn_offsets.keys().filter(|g| partition_for(g, partitions) == p).cloned().collect();
        for group in groups {
            let Some(offsets) = self.txn_offsets.get_mut(&group).and_then(|o| o.remove(&producer_id)) else { continue };
            if commit {
                self.group_mut(&group, now).offsets.extend(offsets);
            }
            self.drop_empty_txn_offsets(&group);
        }
    }
}
