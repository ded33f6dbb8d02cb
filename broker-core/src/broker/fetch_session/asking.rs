//! The fetcher's side of a KIP-227 session (Kafka's `FetchSessionHandler`), as decisions
//! without IO: the session id and epoch the next fetch carries, which partitions it names
//! (every one in a full fetch; in an incremental one only those new or whose position changed)
//! and which it forgets, and what an answer does to the session. A session error
//! (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH) or any other top-level error, a
//! lost connection, or a leader that gave no session, all lead to a full fetch next.
//!
//! The replica fetcher keeps one per leader (`server::replica_fetch`); the protocol tests
//! drive it against the leader's Fetch handler. Never reads a clock.

use super::{next, PartitionMap, Wanted};
use crate::kafka::Code;
use std::sync::Arc;

/// A fetcher's session with one leader.
#[derive(Debug, Default)]
pub struct Asking {
    /// The leader's session id (0: none); after a reset, the one the next full fetch closes.
    id: i32,
    /// The epoch of the next fetch: 0 for a full one.
    epoch: i32,
    /// What the session holds for each partition, as this side last named it.
    named: PartitionMap<Wanted>,
}

/// The session fields and partitions of the next fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    pub session_id: i32,
    pub epoch: i32,
    /// Which of the partitions given to [`Asking::next_fetch`] to name, by position.
    pub named: Vec<usize>,
    /// Partitions the session holds that the fetcher no longer wants.
    pub forgotten: Vec<(Arc<str>, i32)>,
}

impl Asking {
    pub fn new() -> Asking {
        Asking::default()
    }

    /// The next fetch for `wanted`, every partition the fetcher follows from this leader.
    pub fn next_fetch(&mut self, wanted: &[(Arc<str>, i32, Wanted)]) -> Ask {
        if self.epoch == 0 {
            self.named = PartitionMap::default();
            for (topic, p, w) in wanted {
                self.named.insert_shared(topic, *p, *w);
            }
            return Ask { session_id: self.id, epoch: 0, named: (0..wanted.len()).collect(), forgotten: Vec::new() };
        }
        let mut named = Vec::new();
        let (mut kept, mut added) = (0, 0);
        for (i, (topic, p, w)) in wanted.iter().enumerate() {
            match self.named.get_mut(topic, *p) {
                Some(had) => {
                    kept += 1;
                    if had != w {
                        *had = *w;
                        named.push(i);
                    }
                }
                None => {
                    self.named.insert_shared(topic, *p, *w);
                    added += 1;
                    named.push(i);
                }
            }
        }
        let mut forgotten = Vec::new();
        // Whatever the session holds beyond what was found or added is no longer wanted.
        if kept + added < self.named.len() {
            let mut still = PartitionMap::default();
            for (topic, p, _) in wanted {
                still.insert_shared(topic, *p, ());
            }
            forgotten = self.named.iter().filter(|((t, p), _)| !still.contains(t, *p)).map(|((t, p), _)| (t.clone(), p)).collect();
            for (t, p) in &forgotten {
                self.named.remove(t, *p);
            }
        }
        Ask { session_id: self.id, epoch: self.epoch, named, forgotten }
    }

    /// The leader answered the last fetch with this top-level `error` and `session_id`.
    pub fn answered(&mut self, error: Option<Code>, session_id: i32) {
        match (error, self.epoch) {
            (Some(_), _) => self.reset(),
            // A full fetch: the leader opened a session, or had no slot (full fetches then).
            (None, 0) if session_id != 0 => (self.id, self.epoch) = (session_id, next(0)),
            (None, 0) => self.id = 0,
            (None, e) => self.epoch = next(e),
        }
    }

    /// The connection is gone (or the fetch failed): the next fetch is a full one, naming the
    /// old session so that the leader closes it (Kafka's `nextCloseExisting`).
    pub fn reset(&mut self) {
        (self.epoch, self.named) = (0, PartitionMap::default());
    }
}

#[cfg(test)]
mod tests;
