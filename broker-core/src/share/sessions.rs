//! Share sessions (KIP-932): what a member fetches from this broker, named once and then
//! changed incrementally. ShareFetch at epoch 0 opens a session (replacing the member's old
//! one) with the partitions it names; every later request must carry the session's next epoch
//! (wrapping from i32::MAX to 1), adds the partitions it names and drops the forgotten ones;
//! epoch -1 is the member's last request: its acknowledgements are applied and the session
//! closes (its acquired records go back). A session lives on the connection that opened it: a
//! request on another connection finds no session (SHARE_SESSION_NOT_FOUND), and the session
//! ends when that connection closes, or after it went unused for its idle time. One invariant:
//! a request is applied to a session only at the epoch the session expects and on its
//! connection, so a repeated or reordered request changes nothing, nor does one of an older
//! session of the member that arrives late (on a connection since replaced) with an epoch the
//! new session happens to expect.

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
    /// When a request last used it.
    used_ms: u64,
    /// The connection that opened it (None: not known, a test's).
    connection: Option<u64>,
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
    /// A session not used this long is gone (`expire`).
    idle_ms: u64,
}

impl Sessions {
    pub fn new(max: usize, idle_ms: u64) -> Sessions {
        Sessions { by_member: BTreeMap::new(), max, idle_ms }
    }

    /// Sessions not used for `idle_ms` (their members crashed, or left without closing them):
    /// removed, and named for their records to go back.
    pub fn expire(&mut self, now: u64) -> Vec<(String, String)> {
        let idle = self.idle_ms;
        let gone: Vec<(String, String)> = self.by_member.iter().filter(|(_, s)| s.used_ms + idle <= now).map(|(k, _)| k.clone()).collect();
        gone.iter().for_each(|k| drop(self.by_member.remove(k)));
        gone
    }

    /// When the next session would expire unused.
    pub fn next_expiry(&self) -> Option<u64> {
        self.by_member.values().map(|s| s.used_ms + self.idle_ms).min()
    }

    /// Checks `epoch` for `(group, member)` and applies the request's changes: `added`,
    /// `forgotten`. `fetch`: a ShareFetch (it may open a session; a ShareAcknowledge may not).
    /// `acks`: whether it carries acknowledgements (none are allowed when opening).
    #[allow(clippy::too_many_arguments)]
    pub fn begin(&mut self, group: &str, member: &str, epoch: i32, fetch: bool, acks: bool, added: &[(String, i32)], forgotten: &[(String, i32)], now: u64) -> Result<Begun, Code> {
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
            self.by_member.insert(key, Session { next: 1, partitions: partitions.clone(), used_ms: now, connection: None });
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
        s.used_ms = now;
        s.partitions.extend(added.iter().cloned());
        for tp in forgotten {
            s.partitions.remove(tp);
        }
        Ok(Begun { partitions: s.partitions.clone(), closing: false })
    }

    /// Whether a request of `(group, member)` at `epoch` on `connection` (None: not known) may
    /// use its session: one that continues a session opened on another connection finds none.
    pub fn check_connection(&self, group: &str, member: &str, epoch: i32, connection: Option<u64>) -> Result<(), Code> {
        let bound = self.by_member.get(&(group.to_string(), member.to_string())).and_then(|s| s.connection);
        match (epoch, bound, connection) {
            (open_epoch, _, _) => Ok(()),
            (_, Some(b), Some(c)) if b != c => Err(Code::ShareSessionNotFound),
            _ => Ok(()),
        }
    }

    /// The session of `(group, member)` was opened on `connection`: it lives there.
    pub fn bind(&mut self, group: &str, member: &str, connection: u64) {
        if let Some(s) = self.by_member.get_mut(&(group.to_string(), member.to_string())) {
            s.connection = Some(connection);
        }
    }

    /// `connection` closed: the sessions on it are removed, and named for their records to go
    /// back (as Kafka does when a member's connection drops).
    pub fn closed(&mut self, connection: u64) -> Vec<(String, String)> {
        let gone: Vec<(String, String)> = self.by_member.iter().filter(|(_, s)| s.connection == Some(connection)).map(|(k, _)| k.clone()).collect();
        gone.iter().for_each(|k| drop(self.by_member.remove(k)));
        gone
    }

    /// Whether a member of `group` has a session here.
    pub fn has_group(&self, group: &str) -> bool {
        self.by_member.range((group.to_string(), String::new())..).next().is_some_and(|((g, _), _)| g == group)
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
        let mut s = Sessions::new(2, 1_000);
        assert_eq!(s.begin("g", "m", 1, true, false, &[], &[], 0), Err(Code::ShareSessionNotFound));
        assert_eq!(s.begin("g", "m", 0, true, true, &[tp("t", 0)], &[], 0), Err(Code::InvalidRequest));
        assert_eq!(s.begin("g", "m", 0, false, false, &[tp("t", 0)], &[], 0), Err(Code::InvalidShareSessionEpoch));
        let b = s.begin("g", "m", 0, true, false, &[tp("t", 0)], &[], 0).unwrap();
        assert_eq!(b.partitions.len(), 1);
        let b = s.begin("g", "m", 1, true, true, &[tp("t", 1)], &[], 0).unwrap();
        assert_eq!(b.partitions.len(), 2);
        // A repeat of epoch 1 is refused and changes nothing.
        assert_eq!(s.begin("g", "m", 1, true, false, &[], &[tp("t", 0)], 0), Err(Code::InvalidShareSessionEpoch));
        let b = s.begin("g", "m", 2, false, true, &[], &[tp("t", 0)], 0).unwrap();
        assert_eq!(b.partitions, [tp("t", 1)].into_iter().collect());
        let b = s.begin("g", "m", -1, false, true, &[], &[], 0).unwrap();
        assert!(b.closing);
        assert!(s.is_empty());
    }

    #[test]
    fn the_limit_counts_sessions_and_the_epoch_wraps() {
        let mut s = Sessions::new(1, 1_000);
        s.begin("g", "a", 0, true, false, &[], &[], 0).unwrap();
        assert_eq!(s.begin("g", "b", 0, true, false, &[], &[], 0), Err(Code::ShareSessionLimitReached));
        // Reopening one's own session is not a new one.
        s.begin("g", "a", 0, true, false, &[], &[], 0).unwrap();
        s.by_member.values_mut().for_each(|x| x.next = i32::MAX);
        s.begin("g", "a", i32::MAX, true, false, &[], &[], 0).unwrap();
        assert!(s.begin("g", "a", 1, true, false, &[], &[], 0).is_ok());
        // Unused for its idle time, it is gone; the limit has room again.
        assert_eq!(s.next_expiry(), Some(1_000));
        assert_eq!(s.expire(999), Vec::<(String, String)>::new());
        assert_eq!(s.expire(1_000), vec![("g".to_string(), "a".to_string())]);
        assert!(s.begin("g", "b", 0, true, false, &[], &[], 1_000).is_ok());
    }

    #[test]
    fn a_session_lives_and_ends_on_the_connection_that_opened_it() {
        let mut s = Sessions::new(10, 1_000);
        s.begin("g", "a", 0, true, false, &[tp("t", 0)], &[], 0).unwrap();
        s.begin("g", "b", 0, true, false, &[tp("t", 0)], &[], 0).unwrap();
        s.bind("g", "a", 7);
        s.bind("g", "b", 7);
        // b reopened its session on another connection: a late request of its old session,
        // on connection 7, finds none, though its epoch is the one the new session expects.
        s.begin("g", "b", 0, true, false, &[tp("t", 0)], &[], 1).unwrap();
        s.bind("g", "b", 8);
        assert_eq!(s.check_connection("g", "b", 1, Some(7)), Err(Code::ShareSessionNotFound));
        assert_eq!(s.check_connection("g", "b", 1, Some(8)), Ok(()));
        assert_eq!(s.check_connection("g", "b", 0, Some(7)), Ok(()), "any connection may open one");
        // Connection 7 closes: only a's session goes with it.
        assert_eq!(s.closed(9), Vec::<(String, String)>::new());
        assert_eq!(s.closed(7), vec![("g".to_string(), "a".to_string())]);
        assert_eq!(s.begin("g", "a", 1, true, false, &[], &[], 2), Err(Code::ShareSessionNotFound));
        assert!(s.partitions("g", "b").is_some());
    }
}
