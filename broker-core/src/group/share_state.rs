//! The durable state of share-partitions (KIP-932), kept by the coordinator of their share
//! group: for each (group, topic id, partition), the start offset and in-flight records its
//! share-partition leader last wrote, with the leader epoch and state epoch it wrote them
//! under. Leaders read it when they start serving a share-partition
//! (ReadShareGroupState) and replace it before they tell a member anything new
//! (WriteShareGroupState); both are answered only once the record is replicated.
//!
//! The one invariant is the fence: a read or write under a leader epoch below the stored one is
//! FENCED_LEADER_EPOCH, and a read under a higher one stores that epoch (written) before it is
//! answered, so once a new leader has read the state, no write of an older leader lands. A deleted
//! group's states are replaced by fences — written with the deletion, so a coordinator loading the
//! partition later has them too: uninitialized states under the next state epoch
//! (`share_state_fences`), so a leader still holding an old state is FENCED_STATE_EPOCH at its next
//! write and reads again (a state epoch at i32::MAX has no next: the deletion is refused). A fence
//! is never tombstoned (a leader may hold the old state for as long as it leads the partition): one
//! small record per share-partition of a deleted group stays, overwritten when the group is
//! re-created and read.
//!
//! Kafka keeps this in `__share_group_state`, behind a share coordinator of its own placed by
//! "group:topic id:partition"; here it sits in `__consumer_offsets` beside the group, under a
//! key type of Seedlog's own (1000), so one load and one write path serve both.
//!
//! ```text
//! key    i16 1000 | group string | topic id [16] | partition i32
//! value  i16 0 | state epoch i32 | leader epoch i32 | start offset i64 | batches i32 count,
//!        each: first offset i64 | last offset i64 | state i8 | delivery count i16
//! ```

use super::records::{put_str, Reader, RecordError};
use super::writes::Effect;
use super::{Answer, Coordinator, Pending, Work};
use crate::kafka::Code;
use crate::share::partition::{RecordState, Snapshot, StateBatch};

/// The key type of a share-partition's state record.
pub(super) const share_state_key_type: i16 = 1000;
const value_version: i16 = 0;

/// A share-partition's key: group, topic id, partition.
pub type ShareKey = (String, [u8; 16], i32);

/// A record's key and value (None: a tombstone), as written to `__consumer_offsets`.
type Kv = (Vec<u8>, Option<Vec<u8>>);

/// A share-partition's state as stored.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Stored {
    pub state_epoch: i32,
    pub leader_epoch: i32,
    pub snapshot: Snapshot,
}

pub(super) fn encode_key(w: &mut Vec<u8>, (group, topic, partition): &ShareKey) {
    w.extend_from_slice(&share_state_key_type.to_be_bytes());
    put_str(w, Some(group));
    w.extend_from_slice(topic);
    w.extend_from_slice(&partition.to_be_bytes());
}

pub(super) fn decode_key(r: &mut Reader) -> Result<ShareKey, RecordError> {
    let group = r.string("group id")?;
    let mut topic = [0u8; 16];
    topic.copy_from_slice(r.take(16, "topic id")?);
    Ok((group, topic, r.i32("partition")?))
}

pub fn encode_value(v: &Stored) -> Vec<u8> {
    let mut w = Vec::with_capacity(26 + 19 * v.snapshot.batches.len());
    w.extend_from_slice(&value_version.to_be_bytes());
    w.extend_from_slice(&v.state_epoch.to_be_bytes());
    w.extend_from_slice(&v.leader_epoch.to_be_bytes());
    w.extend_from_slice(&v.snapshot.start.to_be_bytes());
    w.extend_from_slice(&(v.snapshot.batches.len() as i32).to_be_bytes());
    for b in &v.snapshot.batches {
        w.extend_from_slice(&b.first.to_be_bytes());
        w.extend_from_slice(&b.last.to_be_bytes());
        w.push(b.state.wire() as u8);
        w.extend_from_slice(&b.count.to_be_bytes());
    }
    w
}

pub fn decode_value(b: &[u8]) -> Result<Stored, RecordError> {
    let mut r = Reader::new(b);
    let version = r.i16("share state version")?;
    if version != value_version {
        return Err(RecordError::Version { what: "share state value", version });
    }
    let state_epoch = r.i32("state epoch")?;
    let leader_epoch = r.i32("leader epoch")?;
    let start = r.i64("start offset")?;
    let count = r.i32("batch count")?.max(0) as usize;
    // 19 bytes a batch: a lying count fails on the bytes, not in an allocation.
    let mut batches = Vec::with_capacity(count.min(r.left() / 19));
    for _ in 0..count {
        let first = r.i64("first offset")?;
        let last = r.i64("last offset")?;
        let state = r.take(1, "delivery state")?[0] as i8;
        let state = RecordState::from_wire(state).ok_or(RecordError::Version { what: "delivery state", version: state as i16 })?;
        batches.push(StateBatch { first, last, state, count: r.i16("delivery count")? });
    }
    r.end()?;
    Ok(Stored { state_epoch, leader_epoch, snapshot: Snapshot { start, batches } })
}

/// Whether a snapshot sent by a leader can be a share-partition's: a start offset, then
/// batches in order within [start, start + span) with counts not below zero. A leader restores
/// what is stored entry by entry, so the span is bounded
/// (`constants::share_state_span_max`).
fn well_formed(s: &Snapshot) -> bool {
    let mut at = s.start;
    s.start >= 0
        && s.batches.iter().all(|b| {
            let ok = b.first >= at && b.first <= b.last && b.count >= 0 && b.last - s.start < crate::constants::share_state_span_max;
            at = b.last.saturating_add(1);
            ok
        })
}

/// What replaces a deleted group's share-partition state: uninitialized (start -1) under the
/// next state epoch, the leader epoch kept (an older leader stays fenced). None at a state
/// epoch of i32::MAX: there is no next one, and a fence at the same epoch would not fence.
fn fence_of(s: &Stored) -> Option<Stored> {
    Some(Stored { state_epoch: s.state_epoch.checked_add(1)?, leader_epoch: s.leader_epoch, snapshot: Snapshot { start: -1, batches: Vec::new() } })
}

/// Every key `group`'s share-partitions can have: they sort together, so a range walks them
/// without a scan of every group's states.
fn group_keys(group: &str) -> std::ops::RangeInclusive<ShareKey> {
    (group.to_string(), [0; 16], i32::MIN)..=(group.to_string(), [u8::MAX; 16], i32::MAX)
}

impl Coordinator {
    fn share_state_record(key: &ShareKey, v: Option<&Stored>) -> (Vec<u8>, Option<Vec<u8>>) {
        let mut k = Vec::new();
        encode_key(&mut k, key);
        (k, v.map(encode_value))
    }

    /// ReadShareGroupState: the stored state (start offset -1: never initialized), answered
    /// once it is written again under `leader_epoch` (not below the stored one) and replicated
    /// (the first read stores an uninitialized state, so the fence holds from the first leader
    /// on).
    pub fn read_share_state(&mut self, key: ShareKey, leader_epoch: i32, now: u64, work: &mut Work) -> Result<Pending<Answer>, Code> {
        self.owner(&key.0)?;
        self.not_deleting(&key.0)?;
        let stored = self.share_states.get(&key).cloned();
        let known = stored.as_ref().map_or(-1, |s| s.leader_epoch);
        if leader_epoch < known {
            return Err(Code::FencedLeaderEpoch);
        }
        // Written again even at the same epoch: what is in memory may not be replicated yet (a
        // write still in flight), and the answer must vouch only for what a coordinator taking
        // over would load.
        let mut s = stored.unwrap_or(Stored { state_epoch: 0, leader_epoch, snapshot: Snapshot { start: -1, batches: Vec::new() } });
        s.leader_epoch = leader_epoch;
        Ok(self.write_share(key, s, true, now, work))
    }

    /// WriteShareGroupState: `state` replaces what is stored, answered once replicated.
    pub fn write_share_state(&mut self, key: ShareKey, state: Stored, now: u64, work: &mut Work) -> Result<Pending<Answer>, Code> {
        self.owner(&key.0)?;
        self.not_deleting(&key.0)?;
        if !well_formed(&state.snapshot) {
            return Err(Code::InvalidRequest);
        }
        if let Some(s) = self.share_states.get(&key) {
            if state.leader_epoch < s.leader_epoch {
                return Err(Code::FencedLeaderEpoch);
            }
            if state.state_epoch < s.state_epoch {
                return Err(Code::FencedStateEpoch);
            }
        }
        Ok(self.write_share(key, state, false, now, work))
    }

    /// Stores `state` in memory at once (so the fence holds for the next request) and writes it.
    fn write_share(&mut self, key: ShareKey, state: Stored, read: bool, now: u64, work: &mut Work) -> Pending<Answer> {
        let kv = Self::share_state_record(&key, Some(&state));
        let answer = Answer::ShareState(Ok(read.then(|| state.clone())));
        self.share_states.insert(key.clone(), state);
        let ticket = self.ticket();
        let group = key.0.clone();
        self.write(&group, vec![kv], Effect::Share { ticket, answer }, now, work);
        Pending::Wait(ticket)
    }

    /// A share-state record read back while loading (`value` None: a tombstone).
    pub(super) fn restore_share_state(&mut self, key: ShareKey, value: Option<&[u8]>) -> Result<(), RecordError> {
        match value {
            Some(v) => drop(self.share_states.insert(key, decode_value(v)?)),
            None => drop(self.share_states.remove(&key)),
        }
        Ok(())
    }

    /// The fences replacing every share-partition state of `group` (DeleteGroups), as records;
    /// INVALID_REQUEST when a state epoch is at i32::MAX (no fence could move past it), as the
    /// offsets APIs refuse it.
    pub(super) fn share_state_fences(&self, group: &str) -> Result<Vec<Kv>, Code> {
        let fence = |(k, s): (&ShareKey, &Stored)| fence_of(s).map(|f| Self::share_state_record(k, Some(&f))).ok_or(Code::InvalidRequest);
        self.share_states.range(group_keys(group)).map(fence).collect()
    }

    /// While the group's deletion is being written its states wait (the leader sends again):
    /// a write landing after the tombstones would bring a deleted state back. So they do while
    /// an Alter or Delete of its offsets is (`share_offsets`): they take effect only then.
    fn not_deleting(&self, group: &str) -> Result<(), Code> {
        match self.share_group_deleting(group) || self.share_offsets_writing(group) {
            true => Err(Code::CoordinatorLoadInProgress),
            false => Ok(()),
        }
    }

    /// `group`'s deletion, with its fences (`share_state_fences`), is replicated: each state
    /// it had is its fence in memory too. A share-partition leader still holding the old state
    /// is fenced at its next write (FENCED_STATE_EPOCH), or finds the new state epoch when a
    /// member's session opens there, and reads again, so a group re-created under the same
    /// name starts where `share.auto.offset.reset` says.
    pub(super) fn fence_deleted_share_states(&mut self, group: &str) {
        for (key, s) in self.share_states.range_mut(group_keys(group)) {
            let fence = fence_of(s);
            // A bug if not: a state epoch at i32::MAX refuses the deletion
            // (`share_state_fences`), and states do not change while it is written
            // (`not_deleting`). Kept as it is then (a fence at the same epoch would not fence).
            debug_assert!(fence.is_some(), "{key:?}: a deleted group's state has no next state epoch");
            if let Some(fence) = fence {
                *s = fence;
            }
        }
    }

    /// The share-partition states of `group`, for describing it.
    pub fn share_states_of<'a>(&'a self, group: &'a str) -> impl Iterator<Item = (&'a ShareKey, &'a Stored)> + 'a {
        self.share_states.range(group_keys(group))
    }

    /// Offsets partition `p` is no longer led here: its share states leave memory.
    pub(super) fn resign_share_states(&mut self, p: i32) {
        let partitions = self.hosting.partitions();
        self.share_states.retain(|(g, _, _), _| super::partition_for(g, partitions) != p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_garbage_is_an_error() {
        let v = Stored {
            state_epoch: 1,
            leader_epoch: 4,
            snapshot: Snapshot { start: 10, batches: vec![StateBatch { first: 10, last: 12, state: RecordState::Available, count: 2 }, StateBatch { first: 13, last: 13, state: RecordState::Acknowledged, count: 1 }] },
        };
        let bytes = encode_value(&v);
        assert_eq!(decode_value(&bytes), Ok(v));
        for n in 0..bytes.len() {
            assert!(decode_value(&bytes[..n]).is_err());
        }
        let mut lying = bytes.clone();
        lying[18..22].copy_from_slice(&i32::MAX.to_be_bytes());
        assert!(decode_value(&lying).is_err());
    }
}
