//! KIP-227 incremental fetch sessions, the leader's side, as decisions without IO: a bounded
//! cache of sessions, each the partitions one fetcher follows with what it last asked for
//! (fetch offset, log start, leader epoch, byte limit) and what it was last told (high
//! watermark, log start). A full fetch (epoch 0) opens a session and is answered whole; an
//! incremental one (the session's next epoch) names only the partitions whose position changed
//! and the ones to forget, and its answer carries only partitions with records, an error or a
//! new high watermark or log start. So a fetcher following thousands of idle partitions sends
//! and receives a few bytes per round instead of every partition.
//!
//! Epochs as Kafka's `FetchMetadata`: 0 opens a session (closing the one named, if any), -1
//! closes the one named and fetches without a session, and an incremental fetch must carry the
//! session's expected epoch (then the next, wrapping from i32::MAX to 1) or is refused with
//! INVALID_FETCH_SESSION_EPOCH; an unknown id is FETCH_SESSION_ID_NOT_FOUND. The fetcher then
//! starts over with a full fetch. The cache holds `fetch_sessions_max` sessions; when it is
//! full a new session takes the slot of one idle past `fetch_session_eviction_ms`, else that of
//! the least recently used consumer session if the newcomer is a follower (followers are
//! privileged, as in Kafka), else it gets none and is answered without a session (id 0).
//!
//! A parked fetch is handled again whenever data may have arrived, so the Fetch handler
//! (`node::handlers::fetch`) changes a session only where a repeat changes nothing: an
//! incremental fetch takes its epoch at its first handling only (its partition changes are the
//! same each time), a full fetch opens its session only when it is answered, and only the
//! answer actually sent updates what each partition was last told.
//!
//! A session keys its partitions by topic names, or (opened by Fetch v13+, KIP-516) by topic
//! ids, written as text: a topic re-created under its name is then another topic, as in
//! Kafka's sessions of topic-id partitions. A fetch of the other kind in a session is
//! FETCH_SESSION_TOPIC_ID_ERROR; the fetcher starts over with a full fetch.
//!
//! Never reads a clock (every call takes `now`), never iterates a hash map; session ids come
//! from a counter, so the simulator replays them. The fetcher's side of a session (which
//! partitions to name) is `fetch_session::asking`.

mod asking;

pub use asking::{Ask, Asking};

use super::partitions::PartitionMap;
use crate::constants::{fetch_session_eviction_ms, fetch_sessions_max};
use crate::kafka::Code;
use std::collections::BTreeMap;
use std::sync::Arc;

/// What a fetcher asks of one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wanted {
    pub fetch_offset: i64,
    pub log_start_offset: i64,
    pub leader_epoch: i32,
    pub max_bytes: i32,
}

/// What an answer told of a partition: its high watermark and log start.
pub type Told = (i64, i64);

/// A session's partition: what was asked, and what the last answer carrying it said.
#[derive(Debug, Clone, Copy)]
struct Cached {
    wanted: Wanted,
    /// None before the first answer.
    sent: Option<Told>,
}

#[derive(Debug)]
struct Session {
    /// The follower it serves (Kafka's replica id), None for a consumer.
    replica: Option<i32>,
    /// The epoch the next incremental fetch must carry.
    next_epoch: i32,
    partitions: PartitionMap<Cached>,
    /// Topics are keyed by id (Fetch v13+), not by name.
    by_id: bool,
    used_ms: u64,
}

/// How a fetch is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    /// No session: every partition asked is answered.
    Sessionless,
    /// A new session `id`: every partition is answered, and the answer names the id.
    Full { id: i32 },
    /// Session `id` moved to its next epoch: only partitions with news are answered.
    Incremental { id: i32 },
}

impl Context {
    /// The session id the answer carries (0: none).
    pub fn id(&self) -> i32 {
        match *self {
            Context::Sessionless => 0,
            Context::Full { id } | Context::Incremental { id } => id,
        }
    }
}

/// What a fetch reads once its session fields are applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// The partitions the request names, in its order; `open`: a full fetch, whose answer opens
    /// a session ([`FetchSessions::open`]), else answered without one.
    Asked { open: bool },
    /// Every partition of session `id`, from a different one each epoch: only the first
    /// partition with records may exceed its byte limit (KIP-74), so a batch over the limit
    /// elsewhere gets its turn (Kafka moves answered partitions to the end for the same reason).
    Session { id: i32, partitions: Vec<(Arc<str>, i32, Wanted)> },
}

/// The leader's cache of fetch sessions.
#[derive(Debug, Default)]
pub struct FetchSessions {
    sessions: BTreeMap<i32, Session>,
    last_id: i32,
}

const final_epoch: i32 = -1;
const initial_epoch: i32 = 0;

fn next(epoch: i32) -> i32 {
    if epoch == i32::MAX { 1 } else { epoch + 1 }
}

impl FetchSessions {
    pub fn new() -> FetchSessions {
        FetchSessions::default()
    }

    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Applies a fetch's session fields: `id` and `epoch` as the request carries them, `asked`
    /// its partitions, `forgotten` its forgotten topics' partitions (incremental fetches only),
    /// each topic by its key (`by_id`: its id's text, else its name).
    /// `first`: the request's first handling; handled again (parked, data may have arrived) an
    /// incremental fetch must find its own epoch the last one taken, and takes none.
    #[allow(clippy::too_many_arguments)]
    pub fn begin(&mut self, now: u64, replica: Option<i32>, (id, epoch): (i32, i32), by_id: bool, first: bool, asked: &[(&str, i32, Wanted)], forgotten: &[(&str, i32)]) -> Result<Plan, Code> {
        if epoch == final_epoch || epoch == initial_epoch {
            if id != 0 {
                self.sessions.remove(&id);
            }
            return Ok(Plan::Asked { open: epoch == initial_epoch });
        }
        let session = match self.sessions.get_mut(&id) {
            Some(s) if s.replica == replica => s,
            _ => return Err(Code::FetchSessionIdNotFound),
        };
        let taken = if first { epoch == session.next_epoch } else { next(epoch) == session.next_epoch };
        if !taken {
            return Err(Code::InvalidFetchSessionEpoch);
        }
        if session.by_id != by_id {
            return Err(Code::FetchSessionTopicIdError);
        }
        for &(topic, p) in forgotten {
            session.partitions.remove(topic, p);
        }
        for &(topic, p, wanted) in asked {
            match session.partitions.get_mut(topic, p) {
                // Named again: answered again, news or not (an answer the fetcher dropped,
                // its partition having moved on meanwhile, is not lost for good).
                Some(cached) => *cached = Cached { wanted, sent: None },
                None => {
                    session.partitions.insert(topic, p, Cached { wanted, sent: None });
                }
            }
        }
        if first {
            session.next_epoch = next(epoch);
        }
        session.used_ms = now;
        let mut partitions: Vec<(Arc<str>, i32, Wanted)> = session.partitions.iter().map(|((n, p), c)| (n.clone(), p, c.wanted)).collect();
        if !partitions.is_empty() {
            let shift = epoch.unsigned_abs() as usize % partitions.len();
            partitions.rotate_left(shift);
        }
        Ok(Plan::Session { id, partitions })
    }

    /// A full fetch is answered: opens its session if a slot is free or can be taken, with
    /// each partition as asked and as the answer tells it (topics keyed by id when `by_id`).
    /// The context to answer under.
    pub fn open<'a>(&mut self, now: u64, replica: Option<i32>, by_id: bool, told: impl Iterator<Item = (&'a str, i32, Wanted, Told)>) -> Context {
        if self.sessions.len() >= fetch_sessions_max {
            let Some(victim) = self.victim(now, replica.is_some()) else { return Context::Sessionless };
            self.sessions.remove(&victim);
        }
        // Ids are positive and unused; a counter, so a run replays them.
        let mut id = self.last_id;
        loop {
            id = if id == i32::MAX { 1 } else { id + 1 };
            if !self.sessions.contains_key(&id) {
                break;
            }
        }
        self.last_id = id;
        let mut partitions = PartitionMap::default();
        let mut name: Option<Arc<str>> = None;
        for (topic, p, wanted, sent) in told {
            // One shared name per run of a topic's partitions: an allocation per topic.
            let shared = match name.take() {
                Some(n) if &*n == topic => n,
                _ => partitions.topic_name(topic).cloned().unwrap_or_else(|| Arc::from(topic)),
            };
            partitions.insert_shared(&shared, p, Cached { wanted, sent: Some(sent) });
            name = Some(shared);
        }
        self.sessions.insert(id, Session { replica, next_epoch: next(initial_epoch), partitions, by_id, used_ms: now });
        Context::Full { id }
    }

    /// Whether the incremental answer of session `id` carries a partition, given what it has
    /// for it: records or an error (`news`), and what it tells. Carried are partitions with
    /// news or a changed high watermark or log start; what a carried one told is remembered.
    pub fn carries(&mut self, id: i32, topic: &str, p: i32, news: bool, told: Told) -> bool {
        let Some(cached) = self.sessions.get_mut(&id).and_then(|s| s.partitions.get_mut(topic, p)) else { return true };
        let carry = news || cached.sent != Some(told);
        if carry {
            cached.sent = Some(told);
        }
        carry
    }

    /// The session a newcomer may take the slot of: the least recently used one idle past the
    /// eviction time, else (for a follower) the least recently used consumer session.
    fn victim(&self, now: u64, follower: bool) -> Option<i32> {
        let lru = |consumers_only: bool| self.sessions.iter().filter(|(_, s)| !consumers_only || s.replica.is_none()).min_by_key(|(id, s)| (s.used_ms, **id)).map(|(id, s)| (*id, s.used_ms));
        match lru(false) {
            Some((id, used)) if now.saturating_sub(used) >= fetch_session_eviction_ms => Some(id),
            _ if follower => lru(true).map(|(id, _)| id),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests;
