//! Share sessions (KIP-932): what a member fetches from this broker, named once and then
//! changed incrementally. ShareFetch at epoch 0 opens a session (replacing the member's old
//! one) with the partitions it names; every later request must carry the session's next epoch
//! (wrapping from i32::MAX to 1), adds the partitions it names and drops the forgotten ones;
//! epoch -1 is the member's last request: its acknowledgements are applied and the session
//! closes (its acquired records go back). One invariant: a request is applied to a session
//! only at the epoch the session expects, so a repeated or reordered request changes nothing.

use crate::kafka::Code;
use std::collections::{BTreeMap, BTreeSet};

/// The epoch that opens a session, and the one that closes it.
pub const open_epoch: i32 = 0;
pub const final_epoch: i32 = -1;

/// A member's partitions here, by topic name.
pub type Partitions = BTreeSet<(String, i32)>;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Session {
    /// The epoch the next request must carry.
    next: i32,
    partitions: Partitions,
}

/// What a request may do, once its epoch is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Begun {
    /// The session's partitions after the request's changes.
    pub partitions: Partitions,
    /// The session closes after this request (epoch -1).
    pub closing: bool,
}

#[derive(Debug, Default)]
pub struct Sessions {
    by_member: BTreeMap<(String, String), Session>,
    max: usize,
}

impl Sessions {
    pub fn new(max: usize) -> Sessions {
        Sessions { by_member: BTreeMap::new(), max }
    }

    /// Checks `epoch` for `(group, member)` and applies the request's changes: `added`,
    /// `forgotten`. `fetch`: a ShareFetch (it may open a session; a ShareAcknowledge may not).
    /// `acks`: whether it carries acknowledgements (none are allowed when opening).
    #[allow(clippy::too_many_arguments)]
    pub fn begin(&mut self, group: &str, member: &str, epoch: i32, fetch: bool, acks: bool, added: &[(String, i32)], forgotten: &[(String, i32)]) -> Result<Begun, Code> {
        let key = (group.to_string(), member.to_string());
        if epoch == open_epoch {
            if !fetch {
                return Err(Code::InvalidShareSessionEpoch);
            }
            if acks {
                return Err(Code::InvalidRequest);
            }
            if !self.by_member.contains_key(&key) && self.by_member.len() >= self.max {
                return Err(Code::ShareSessionLimitReached);
            }
            let partitions: Partitions = added.iter().cloned().collect();
            self.by_member.insert(key, Session { next: 1, partitions: partitions.clone() });
            return Ok(Begun { partitions, closing: false });
        }
        let s = self.by_member.get_mut(&key).ok_or(Code::ShareSessionNotFound)?;
        if epoch == final_epoch {
            let partitions = s.partitions.clone();
            self.by_member.remove(&key);
            return Ok(Begun { partitions, closing: true });
        }
        if epoch != s.next {
            return Err(Code::InvalidShareSessionEpoch);
        }
        s.next = if epoch == i32::MAX { 1 } else { epoch + 1 };
        s.partitions.extend(added.iter().cloned());
        for tp in forgotten {
            s.partitions.remove(tp);
        }
        Ok(Begun { partitions: s.partitions.clone(), closing: false })
    }

    /// The partitions of a member's session (a parked fetch asks again without changing it).
    pub fn partitions(&self, group: &str, member: &str) -> Option<&Partitions> {
        self.by_member.get(&(group.to_string(), member.to_string())).map(|s| &s.partitions)
    }

    pub fn len(&self) -> usize {
        self.by_member.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_member.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(t: &str, p: i32) -> (String, i32) {
        (t.to_string(), p)
    }

    #[test]
    fn epochs_open_advance_and_close() {
        let mut s = Sessions::new(2);
        assert_eq!(s.begin("g", "m", 1, true, false, &[], &[]), Err(Code::ShareSessionNotFound));
        assert_eq!(s.begin("g", "m", 0, true, true, &[tp("t", 0)], &[]), Err(Code::InvalidRequest));
        assert_eq!(s.begin("g", "m", 0, false, false, &[tp("t", 0)], &[]), Err(Code::InvalidShareSessionEpoch));
        let b = s.begin("g", "m", 0, true, false, &[tp("t", 0)], &[]).unwrap();
        assert_eq!(b.partitions.len(), 1);
        let b = s.begin("g", "m", 1, true, true, &[tp("t", 1)], &[]).unwrap();
        assert_eq!(b.partitions.len(), 2);
        // A repeat of epoch 1 is refused and changes nothing.
        assert_eq!(s.begin("g", "m", 1, true, false, &[], &[tp("t", 0)]), Err(Code::InvalidShareSessionEpoch));
        let b = s.begin("g", "m", 2, false, true, &[], &[tp("t", 0)]).unwrap();
        assert_eq!(b.partitions, [tp("t", 1)].into_iter().collect());
        let b = s.begin("g", "m", -1, false, true, &[], &[]).unwrap();
        assert!(b.closing);
        assert!(s.is_empty());
    }

    #[test]
    fn the_limit_counts_sessions_and_the_epoch_wraps() {
        let mut s = Sessions::new(1);
        s.begin("g", "a", 0, true, false, &[], &[]).unwrap();
        assert_eq!(s.begin("g", "b", 0, true, false, &[], &[]), Err(Code::ShareSessionLimitReached));
        // Reopening one's own session is not a new one.
        s.begin("g", "a", 0, true, false, &[], &[]).unwrap();
        s.by_member.values_mut().for_each(|x| x.next = i32::MAX);
        s.begin("g", "a", i32::MAX, true, false, &[], &[]).unwrap();
        assert!(s.begin("g", "a", 1, true, false, &[], &[]).is_ok());
    }
}
