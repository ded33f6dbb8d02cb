//! One partition's replication decisions on one broker: its role (leader, follower, or not a
//! replica yet), the ISR, each follower's progress and the high watermark. A plain struct with
//! an explicit `now`; the broker feeds it metadata from the controller, local appends and
//! follower fetches, and asks it for ISR changes to propose. It never does IO.
//!
//! The rules, as in Kafka:
//! - the leader's high watermark is the smallest log end offset over the ISR — counted over
//!   the *maximal* ISR while an expansion is in flight, so a member the controller may already
//!   have added is never left behind — and it never moves back during a leadership;
//! - a follower's high watermark is the leader's, capped by its own log end offset;
//! - a follower is caught up when it fetched from at least the leader's log end offset as of
//!   its previous fetch; one that has not been caught up for `replica.lag.time.max.ms` is
//!   proposed for removal from the ISR, and one whose log end reaches the high watermark (and
//!   the start of this leader's epoch) is proposed for re-entry;
//! - one ISR change is in flight at a time, and the controller's answer or a newer metadata
//!   record settles it;
//! - a replica that becomes a follower under a new leader epoch must truncate by epoch
//!   (KIP-101/279) before it fetches.

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

/// A follower as the leader sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Progress {
    /// Its log end offset (the offset it last fetched from); -1 until it fetches.
    leo: i64,
    /// The leader's log end offset when it last fetched.
    leader_leo_at_fetch: i64,
    /// When it last fetched.
    fetch_ms: u64,
    /// When it was last caught up.
    caught_up_ms: u64,
    /// Its log start, as its last fetch said (-1 until one did): the low watermark's part.
    log_start: i64,
    /// The broker epoch (its registration) its last fetch came from, -1 until one did
    /// (KIP-903): progress counts toward re-entry only for the registration it was made in.
    broker_epoch: i64,
}

impl Progress {
    /// A follower not heard from in this leadership, given the whole lag window from `now`.
    fn unheard(leo: i64, now: u64) -> Progress {
        Progress { leo: -1, leader_leo_at_fetch: leo, fetch_ms: now, caught_up_ms: now, log_start: -1, broker_epoch: -1 }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Not (yet) given a role by the controller, or the partition has no leader.
    None,
    Leader,
    Follower { leader: i32 },
}

/// What applying a metadata record changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Unchanged,
    BecameLeader,
    /// A new leader or leader epoch to follow: truncate by epoch before fetching.
    BecameFollower,
    /// Only the ISR or partition epoch moved.
    IsrChanged,
    /// No longer leader or follower (no leader, or not a replica).
    Stopped,
}

/// A refused follower fetch, with its Kafka error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FetchRefusal {
    /// NOT_LEADER_OR_FOLLOWER (6): this broker does not lead the partition.
    #[error("not the leader")]
    NotLeader,
    /// FENCED_LEADER_EPOCH (74): the fetcher's epoch is older than the leader's.
    #[error("fetcher's leader epoch {0} is older than this leader's")]
    Fenced(i32),
    /// UNKNOWN_LEADER_EPOCH (75): the fetcher knows a newer epoch than this leader does yet.
    #[error("fetcher's leader epoch {0} is newer than this leader's")]
    UnknownEpoch(i32),
    /// NOT_LEADER_OR_FOLLOWER as well: the fetcher is not a replica of this partition.
    #[error("broker {0} is not a replica")]
    NotReplica(i32),
}

impl FetchRefusal {
    pub fn kafka_error(&self) -> crate::kafka::Code {
        use crate::kafka::Code;
        match self {
            FetchRefusal::NotLeader | FetchRefusal::NotReplica(_) => Code::NotLeaderOrFollower,
            FetchRefusal::Fenced(_) => Code::FencedLeaderEpoch,
            FetchRefusal::UnknownEpoch(_) => Code::UnknownLeaderEpoch,
        }
    }
}

/// An ISR change for the controller (Kafka's AlterPartition).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsrProposal {
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    pub isr: Vec<i32>,
    /// Each member's broker epoch as of the fetches that qualified it, in `isr`'s order (-1:
    /// unknown, the leader itself). AlterPartition v3 sends them (KIP-903) and the controller
    /// refuses a member that has registered again since: a change resent after the follower
    /// restarted must not admit its new, shorter log on the old one's progress.
    pub epochs: Vec<i64>,
}

#[derive(Debug, Clone)]
/// Fields in declared order (`repr(C)`): what a produce reads first (see `log::Log`).
#[repr(C)]
pub struct Replication {
    pub role: Role,
    me: i32,
    pub leader_epoch: i32,
    high_watermark: i64,
    /// The ISR as the controller last committed it.
    pub isr: Vec<i32>,
    /// KIP-966's strict min ISR (with `eligible.leader.replicas.enable`): the high watermark
    /// does not move while the committed ISR has fewer members than this, so every replica
    /// that left an ISR already at the minimum holds every record below the mark (what makes
    /// the controller's ELR safe to elect). 0: no such rule.
    strict_min_isr: usize,
    /// Leader only: each other replica's progress.
    followers: BTreeMap<i32, Progress>,
    /// An AlterPartition sent and not yet answered: the ISR and its members' broker epochs.
    in_flight: Option<(Vec<i32>, Vec<i64>)>,
    pub replicas: Vec<i32>,
    pub partition_epoch: i32,
    /// Leader only: the log end offset when this leadership began (the epoch's start).
    epoch_start: i64,
    /// When the last ISR change was proposed, and whether it failed: a refused or unsent change
    /// is proposed again only `isr_change_retry_ms` later, not at every tick.
    proposed_ms: u64,
    refused: bool,
    /// The in-flight change's answer was lost: the controller may have committed it, so it
    /// stays in flight (the maximal ISR holds) and the same proposal is sent again.
    resend: bool,
    /// Follower only: epoch truncation still to do before fetching.
    pub needs_truncation: bool,
}

impl Replication {
    /// A replica with no role yet; `high_watermark` is what the log holds durably at open for
    /// a single replica, else the log start (the leader will tell).
    pub fn new(me: i32, high_watermark: i64) -> Replication {
        Replication {
            me,
            role: Role::None,
            replicas: Vec::new(),
            isr: Vec::new(),
            leader_epoch: -1,
            partition_epoch: -1,
            high_watermark,
            epoch_start: 0,
            followers: BTreeMap::new(),
            in_flight: None,
            proposed_ms: 0,
            refused: false,
            resend: false,
            needs_truncation: false,
            strict_min_isr: 0,
        }
    }

    /// Turns KIP-966's strict min ISR on (`min_isr`, the partition's `min.insync.replicas`) or
    /// off (None); see the field.
    pub fn set_strict_min_isr(&mut self, min_isr: Option<i32>) {
        self.strict_min_isr = min_isr.map_or(0, |m| usize::try_from(m).unwrap_or(0));
    }

    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }

    /// Leader only: the log end offset when this leadership began.
    pub fn epoch_start(&self) -> i64 {
        self.epoch_start
    }

    pub fn is_leader(&self) -> bool {
        self.role == Role::Leader
    }

    /// The controller's state of the partition. `leo` is the local log end offset.
    pub fn apply(&mut self, replicas: &[i32], isr: &[i32], leader: i32, leader_epoch: i32, partition_epoch: i32, leo: i64, now: u64) -> Change {
        if leader_epoch < self.leader_epoch || (leader_epoch == self.leader_epoch && partition_epoch < self.partition_epoch) {
            return Change::Unchanged; // an older record than what we already applied
        }
        let new_role = if !replicas.contains(&self.me) || leader < 0 {
            Role::None
        } else if leader == self.me {
            Role::Leader
        } else {
            Role::Follower { leader }
        };
        let new_epoch = leader_epoch != self.leader_epoch;
        // A record at the epochs this replica already holds (taken from an AlterPartition
        // answer, or applied before a re-registration) settles nothing new: an ISR change
        // proposed since is still in flight and must stay in the maximal ISR.
        let newer = new_epoch || partition_epoch != self.partition_epoch;
        let role_changed = new_role != self.role;
        let dropped: Vec<i32> = self.isr.iter().copied().filter(|r| !isr.contains(r)).collect();
        self.replicas = replicas.to_vec();
        self.isr = isr.to_vec();
        self.partition_epoch = partition_epoch;
        self.leader_epoch = leader_epoch;
        if newer {
            self.in_flight = None; // a newer record settles whatever was in flight
            self.resend = false;
        }
        self.role = new_role;
        match new_role {
            Role::Leader if role_changed || new_epoch => {
                self.epoch_start = leo;
                self.high_watermark = self.high_watermark.min(leo);
                self.followers = replicas
                    .iter()
                    .filter(|&&r| r != self.me)
                    .map(|&r| (r, Progress::unheard(leo, now)))
                    .collect();
                self.advance(leo);
                Change::BecameLeader
            }
            Role::Leader => {
                self.forget_progress(&dropped);
                // A reassignment may add replicas (to be tracked from their first fetch) or
                // remove them (whose fetches are refused from now on).
                self.followers.retain(|r, _| replicas.contains(r));
                for &r in replicas.iter().filter(|&&r| r != self.me) {
                    self.followers.entry(r).or_insert(Progress::unheard(leo, now));
                }
                self.advance(leo);
                Change::IsrChanged
            }
            Role::Follower { .. } if role_changed || new_epoch => {
                self.followers.clear();
                self.needs_truncation = true;
                Change::BecameFollower
            }
            Role::Follower { .. } => Change::IsrChanged,
            Role::None if role_changed => {
                self.followers.clear();
                Change::Stopped
            }
            Role::None => Change::Unchanged,
        }
    }

    /// Replicas that left the ISR must prove they are caught up by fetching again: what the
    /// leader remembers of them may predate a crash that emptied their log (KIP-903's concern;
    /// a re-registered broker leaves every ISR, and must not be re-admitted on stale progress).
    fn forget_progress(&mut self, dropped: &[i32]) {
        for r in dropped {
            if let Some(p) = self.followers.get_mut(r) {
                p.leo = -1;
            }
        }
    }

    /// Gives up any role until the controller's metadata is applied again (the broker is
    /// registering anew: what it knew may be stale).
    pub fn stop(&mut self) {
        self.role = Role::None;
        self.followers.clear();
        self.in_flight = None;
    }

    /// Drops the change in flight as if a newer record had settled it: only for the planted
    /// `SameEpochRecordClearsInFlight` (what `apply` did before it compared epochs).
    #[doc(hidden)]
    pub fn forget_in_flight(&mut self) {
        self.in_flight = None;
        self.resend = false;
    }

    /// The leader appended locally; with an ISR of one that alone moves the high watermark.
    pub fn on_append(&mut self, leo: i64) -> bool {
        self.role == Role::Leader && self.advance(leo)
    }

    /// Whether this leader has followers to serve (their parked fetches wait for new bytes).
    pub fn has_followers(&self) -> bool {
        self.is_leader() && !self.followers.is_empty()
    }

    /// A follower's fetch told its log start (Fetch v5+); returns whether it changed (a
    /// DeleteRecords may be waiting for it).
    pub fn on_follower_log_start(&mut self, replica: i32, log_start: i64) -> bool {
        match self.followers.get_mut(&replica) {
            Some(p) if p.log_start != log_start => {
                p.log_start = log_start;
                true
            }
            _ => false,
        }
    }

    /// Leader only: the smallest log start over `own` (this replica's) and every follower
    /// for which `live` holds, -1 for one that has not told its start in this leadership
    /// (Kafka's lowWatermarkIfLeader): what DeleteRecords waits on.
    pub fn low_watermark(&self, own: i64, live: impl Fn(i32) -> bool) -> i64 {
        self.followers.iter().filter(|(r, _)| live(**r)).map(|(_, p)| p.log_start).fold(own, i64::min)
    }

    /// Checks a follower fetch at the leader: `epoch` is the fetcher's current leader epoch
    /// (-1: unchecked, old fetch versions).
    pub fn check_fetch(&self, replica: i32, epoch: i32) -> Result<(), FetchRefusal> {
        if self.role != Role::Leader {
            return Err(FetchRefusal::NotLeader);
        }
        if !self.followers.contains_key(&replica) {
            return Err(FetchRefusal::NotReplica(replica));
        }
        self.check_epoch(epoch)
    }

    /// Checks a request's current leader epoch against this leadership's (KIP-320): older is
    /// fenced, newer is not known here yet, -1 is not checked (old request versions).
    pub fn check_epoch(&self, epoch: i32) -> Result<(), FetchRefusal> {
        match epoch {
            e if e >= 0 && e < self.leader_epoch => Err(FetchRefusal::Fenced(e)),
            e if e > self.leader_epoch => Err(FetchRefusal::UnknownEpoch(e)),
            _ => Ok(()),
        }
    }

    /// A follower fetched from `offset` (so its log ends there). Call after `check_fetch`.
    /// Returns whether the high watermark moved.
    pub fn on_follower_fetch(&mut self, replica: i32, offset: i64, leo: i64, now: u64) -> bool {
        self.on_follower_fetch_counting(replica, -1, offset, leo, leo, now)
    }

    /// [`Replication::on_follower_fetch`] from the follower's registration `broker_epoch` (-1:
    /// unknown), where the leader counts only `own` (at most `leo`) of its own log for the mark:
    /// the rest waits for a sync its flush policy asked for.
    pub fn on_follower_fetch_counting(&mut self, replica: i32, broker_epoch: i64, offset: i64, leo: i64, own: i64, now: u64) -> bool {
        let Some(p) = self.followers.get_mut(&replica) else { return false };
        p.broker_epoch = broker_epoch;
        if offset >= leo {
            p.caught_up_ms = now;
        } else if offset >= p.leader_leo_at_fetch {
            // It reached where we were at its last fetch: caught up as of then.
            p.caught_up_ms = p.caught_up_ms.max(p.fetch_ms);
        }
        p.fetch_ms = now;
        p.leo = offset.min(leo);
        p.leader_leo_at_fetch = leo;
        self.advance(own)
    }

    /// How many replicas the high watermark is computed over (see `maximal_isr`).
    pub fn maximal_isr_len(&self) -> usize {
        self.isr.len() + self.in_flight.iter().flat_map(|(members, _)| members).filter(|r| !self.isr.contains(r)).count()
    }

    /// The ISR the high watermark is computed over: the committed one plus any member an
    /// in-flight expansion adds.
    fn maximal_isr(&self) -> Vec<i32> {
        let mut isr = self.isr.clone();
        for r in self.in_flight.iter().flat_map(|(members, _)| members) {
            if !isr.contains(r) {
                isr.push(*r);
            }
        }
        isr
    }

    fn advance(&mut self, leo: i64) -> bool {
        if self.isr.len() < self.strict_min_isr {
            return false; // KIP-966: below min ISR the mark stands still
        }
        let mut hw = leo;
        for r in self.maximal_isr() {
            if r == self.me {
                continue;
            }
            match self.followers.get(&r) {
                Some(p) if p.leo >= 0 => hw = hw.min(p.leo),
                _ => return false, // an ISR member we have not heard from holds it back
            }
        }
        if hw > self.high_watermark {
            self.high_watermark = hw;
            return true;
        }
        false
    }

    /// The follower learned the leader's high watermark.
    pub fn on_leader_high_watermark(&mut self, leader_hw: i64, leo: i64) {
        if matches!(self.role, Role::Follower { .. }) {
            self.high_watermark = leader_hw.min(leo).max(self.high_watermark.min(leo));
        }
    }

    /// After a truncation (follower only): the high watermark cannot exceed the log end.
    pub fn on_truncate(&mut self, leo: i64) {
        self.high_watermark = self.high_watermark.min(leo);
        self.needs_truncation = false;
    }

    /// The ISR change to send the controller now, if any: lagging members out, caught-up
    /// replicas in. Marks it in flight.
    pub fn isr_proposal(&mut self, now: u64, lag_ms_max: u64) -> Option<IsrProposal> {
        self.isr_proposal_among(now, lag_ms_max, |_, _| true)
    }

    /// [`Replication::isr_proposal`], adding only replicas `eligible` says the controller would
    /// accept given the broker epoch their progress was made in (unfenced, and registered in
    /// that epoch still: KIP-903): proposing an ineligible one is refused and holds back other
    /// changes.
    pub fn isr_proposal_among(&mut self, now: u64, lag_ms_max: u64, eligible: impl Fn(i32, i64) -> bool) -> Option<IsrProposal> {
        if self.role != Role::Leader {
            return None;
        }
        if let Some((isr, epochs)) = &self.in_flight {
            if !self.resend || now < self.proposed_ms.saturating_add(crate::constants::isr_change_retry_ms) {
                return None;
            }
            self.resend = false;
            self.proposed_ms = now;
            // The same change with the same epochs: the controller may have committed it.
            return Some(IsrProposal { leader_epoch: self.leader_epoch, partition_epoch: self.partition_epoch, isr: isr.clone(), epochs: epochs.clone() });
        }
        if self.refused && now < self.proposed_ms.saturating_add(crate::constants::isr_change_retry_ms) {
            return None;
        }
        let keep = |r: i32| -> bool {
            if r == self.me {
                return true;
            }
            let Some(p) = self.followers.get(&r) else { return false };
            if self.isr.contains(&r) {
                // A member stays until it has lagged for the whole window (a leader that has
                // just taken over gives every member that window from the start).
                now.saturating_sub(p.caught_up_ms) <= lag_ms_max
            } else {
                // Caught up, and recently: a replica that stopped fetching (dead, or cut off)
                // while its last fetch happened to reach the mark stays out.
                eligible(r, p.broker_epoch) && p.leo >= 0 && p.leo >= self.high_watermark && p.leo >= self.epoch_start && now.saturating_sub(p.caught_up_ms) <= lag_ms_max
            }
        };
        let isr: Vec<i32> = self.replicas.iter().copied().filter(|&r| keep(r)).collect();
        if isr == self.isr {
            return None;
        }
        let epochs: Vec<i64> = isr.iter().map(|r| self.followers.get(r).map_or(-1, |p| p.broker_epoch)).collect();
        self.in_flight = Some((isr.clone(), epochs.clone()));
        self.proposed_ms = now;
        self.refused = false;
        Some(IsrProposal { leader_epoch: self.leader_epoch, partition_epoch: self.partition_epoch, isr, epochs })
    }

    /// The earliest `now` at which [`Replication::isr_proposal_among`] (with `lag_ms_max`) may
    /// propose a change if no event comes first, None if only an event can bring one: a
    /// member's lag window ending, a lost change's resend, a refused change's retry. The
    /// events are what the broker reacts to by asking at once: a fetch by a replica outside
    /// the ISR (it may now qualify), a controller's answer, new metadata (roles, ISR, which
    /// brokers are live). A member's fetch only puts its own window's end later, and a higher
    /// high watermark only makes re-entry harder, so neither needs asking.
    pub fn isr_check_at(&self, now: u64, lag_ms_max: u64) -> Option<u64> {
        if self.role != Role::Leader {
            return None;
        }
        let retry = self.proposed_ms.saturating_add(crate::constants::isr_change_retry_ms);
        if self.in_flight.is_some() {
            return self.resend.then_some(retry);
        }
        if self.refused && now < retry {
            return Some(retry);
        }
        // A member leaves once `now - caught_up_ms > lag_ms_max`; one with no progress at once.
        self.isr
            .iter()
            .filter(|&&r| r != self.me)
            .map(|r| self.followers.get(r).map_or(now, |p| p.caught_up_ms.saturating_add(lag_ms_max).saturating_add(1)))
            .min()
    }

    /// Whether `replica` is in the committed ISR (its fetches move only its own lag window).
    pub fn in_isr(&self, replica: i32) -> bool {
        self.isr.contains(&replica)
    }

    /// The controller accepted an ISR change (or told us the current state).
    pub fn on_isr_committed(&mut self, isr: &[i32], leader_epoch: i32, partition_epoch: i32, leo: i64) {
        self.in_flight = None;
        self.resend = false;
        if leader_epoch == self.leader_epoch && partition_epoch > self.partition_epoch {
            let dropped: Vec<i32> = self.isr.iter().copied().filter(|r| !isr.contains(r)).collect();
            self.forget_progress(&dropped);
            self.isr = isr.to_vec();
            self.partition_epoch = partition_epoch;
            self.advance(leo);
        }
    }

    /// The controller refused or did not answer: propose again, after `isr_change_retry_ms`.
    pub fn on_isr_failed(&mut self) {
        self.in_flight = None;
        self.resend = false;
        self.refused = true;
    }

    /// The answer never came (connection lost, controller unreachable or restarting): keep the
    /// change in flight and send it again after `isr_change_retry_ms`. Committed or not, a
    /// newer metadata record for the partition settles it.
    pub fn on_isr_lost(&mut self) {
        if self.in_flight.is_some() {
            self.resend = true;
        }
    }

    /// The controller has a newer partition epoch than this leader (INVALID_UPDATE_VERSION):
    /// perhaps this very change. Keep it in flight until that metadata arrives.
    pub fn on_isr_stale(&mut self) {
        self.resend = false;
    }
}
