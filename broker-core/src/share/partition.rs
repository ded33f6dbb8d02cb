//! One KIP-932 share-partition — a (share group, topic, partition) as its partition leader sees
//! it — as a decision: which records members may be given (acquire), what their answers do to
//! them (acknowledge), what a lock timeout, a closed session, a moved log start or records a
//! committed read passes over (`skip_to`) does, and the
//! durable form written to the share-state store. A plain struct with an explicit `now`; no IO,
//! no clock, no randomness. Rules as Kafka's `SharePartition`, with one difference: an Acquired
//! record is written as Available with its delivery count, because the shell persists the
//! snapshot *before* it delivers acquired records (a delivery count always reaches disk before
//! the record reaches a member, and after a failover the record is Available again).
//!
//! The one invariant: every offset in [start, end) has an entry (state, delivery count, and,
//! while Acquired, its owner and lock deadline), nothing outside it does, and after every change
//! the start has moved past the contiguous prefix of terminal (Acknowledged, Archived) entries,
//! so the entry at `start`, if any, is never terminal.
//!
//! Two refinements, both about records the log no longer holds: an Available record missing
//! from the log (compacted away: between the batches a fetch read, or reported by `log_gap`) is
//! Archived, and a record released or timed out below the log start is Archived rather than
//! offered again. And one bound: a compaction gap opening behind records still in flight is
//! taken only while the in-flight span stays under `max_locks`, so a gap never fills the map
//! with millions of Archived entries.

use crate::kafka::Code;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

#[cfg(test)]
mod tests;

/// A share group's settings as they bear on one of its partitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `group.share.record.lock.duration.ms`: how long a member holds what it acquired.
    pub lock_ms: u64,
    /// `group.share.delivery.count.limit`: a record delivered this often is not offered again.
    pub delivery_limit: i16,
    /// `group.share.partition.max.record.locks`: most offsets in flight (end - start).
    pub max_locks: i64,
}

/// A record's state, with Kafka's wire numbers (`wire`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordState {
    /// May be acquired by the next fetch.
    Available,
    /// Locked to one member until it acknowledges or its lock times out.
    Acquired,
    /// Accepted by a member: done.
    Acknowledged,
    /// Rejected, a gap, past the delivery limit or gone from the log: done.
    Archived,
}

impl RecordState {
    pub fn wire(self) -> i8 {
        match self {
            RecordState::Available => 0,
            RecordState::Acquired => 1,
            RecordState::Acknowledged => 2,
            RecordState::Archived => 4,
        }
    }

    pub fn from_wire(n: i8) -> Option<RecordState> {
        match n {
            0 => Some(RecordState::Available),
            1 => Some(RecordState::Acquired),
            2 => Some(RecordState::Acknowledged),
            4 => Some(RecordState::Archived),
            _ => None,
        }
    }

    /// Nothing happens to the record any more; the start may move past it.
    fn terminal(self) -> bool {
        matches!(self, RecordState::Acknowledged | RecordState::Archived)
    }
}

/// What a member says of records it acquired (ShareAcknowledge / ShareFetch acknowledgements).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckType {
    /// Not a record (a compaction or transaction gap): archived.
    Gap,
    /// Processed: acknowledged.
    Accept,
    /// Give it back for redelivery (archived once at the delivery limit).
    Release,
    /// Unprocessable: archived.
    Reject,
}

impl AckType {
    pub fn wire(self) -> i8 {
        match self {
            AckType::Gap => 0,
            AckType::Accept => 1,
            AckType::Release => 2,
            AckType::Reject => 3,
        }
    }

    pub fn from_wire(n: i8) -> Option<AckType> {
        match n {
            0 => Some(AckType::Gap),
            1 => Some(AckType::Accept),
            2 => Some(AckType::Release),
            3 => Some(AckType::Reject),
            _ => None,
        }
    }
}

/// The durable form (what the share-state write carries): the start offset and runs of records
/// in [start, end) with their state and delivery count.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub start: i64,
    pub batches: Vec<StateBatch>,
}

/// Records `first..=last`, all in one state with one delivery count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateBatch {
    pub first: i64,
    pub last: i64,
    pub state: RecordState,
    pub count: i16,
}

/// Records `first..=last` acquired by one fetch, each delivered `count` times with this one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Acquired {
    pub first: i64,
    pub last: i64,
    pub count: i16,
}

/// What one fetch acquired.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Acquisition {
    /// Maximal contiguous runs with one delivery count, in offset order.
    pub runs: Vec<Acquired>,
    /// How many of the given log batches hold an acquired record (the caller sends those,
    /// cutting the rest).
    pub batches_used: usize,
}

impl Acquisition {
    /// Records acquired.
    pub fn records(&self) -> i64 {
        self.runs.iter().map(|r| r.last - r.first + 1).sum()
    }

    fn push(&mut self, offset: i64, count: i16) {
        match self.runs.last_mut() {
            Some(run) if run.last + 1 == offset && run.count == count => run.last = offset,
            _ => self.runs.push(Acquired { first: offset, last: offset, count }),
        }
    }
}

/// Who holds an Acquired record, and until when.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Lock {
    member: Arc<str>,
    deadline: u64,
}

/// One offset in flight. `lock` is Some exactly while `state` is Acquired.
#[derive(Debug, Clone, PartialEq, Eq)]
struct InFlight {
    state: RecordState,
    count: i16,
    lock: Option<Lock>,
}

/// One share-partition: see the module header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharePartition {
    limits: Limits,
    /// The share-partition start offset (SPSO): everything below is done.
    start: i64,
    /// The next offset never acquired yet.
    end: i64,
    /// The log start as last told (`log_start_moved`): a record released below it is gone.
    log_start: i64,
    entries: BTreeMap<i64, InFlight>,
    /// Offsets of the Available entries: where the next fetch starts, without a scan.
    available: BTreeSet<i64>,
    /// (deadline, offset) of the Acquired entries: the next timeout, without a scan.
    deadlines: BTreeSet<(u64, i64)>,
}

impl SharePartition {
    /// A share-partition starting at `start` with nothing in flight.
    pub fn new(start: i64, limits: Limits) -> SharePartition {
        debug_assert!(limits.delivery_limit >= 1 && limits.max_locks >= 1, "{limits:?}");
        SharePartition {
            limits,
            start,
            end: start,
            log_start: start,
            entries: BTreeMap::new(),
            available: BTreeSet::new(),
            deadlines: BTreeSet::new(),
        }
    }

    /// The share-partition as its durable form left it (after a failover or a load). Offsets in
    /// [start, end) no batch covers are Available, never delivered; an Acquired record (never
    /// written, but possible in a foreign snapshot) is Available; one delivered `delivery_limit`
    /// times already is Archived.
    pub fn restore(s: &Snapshot, limits: Limits) -> SharePartition {
        let mut p = SharePartition::new(s.start, limits);
        let covered = s.batches.iter().filter(|b| b.first <= b.last && b.last >= s.start);
        p.end = covered.map(|b| b.last + 1).max().unwrap_or(s.start);
        for offset in p.start..p.end {
            p.set(offset, RecordState::Available, 0, None);
        }
        for b in &s.batches {
            let count = b.count.max(0);
            for offset in b.first.max(s.start)..=b.last {
                let state = match b.state {
                    RecordState::Available | RecordState::Acquired => p.released(offset, count),
                    terminal => terminal,
                };
                p.set(offset, state, count, None);
            }
        }
        p.advance_start();
        p
    }

    /// The durable form: the start and every entry in [start, end) as maximal runs; an Acquired
    /// record is written as Available with its count (see the module header).
    pub fn snapshot(&self) -> Snapshot {
        let mut batches: Vec<StateBatch> = Vec::new();
        for (&offset, entry) in &self.entries {
            let state = if entry.state == RecordState::Acquired { RecordState::Available } else { entry.state };
            match batches.last_mut() {
                Some(b) if b.last + 1 == offset && b.state == state && b.count == entry.count => b.last = offset,
                _ => batches.push(StateBatch { first: offset, last: offset, state, count: entry.count }),
            }
        }
        Snapshot { start: self.start, batches }
    }

    pub fn start(&self) -> i64 {
        self.start
    }

    pub fn end(&self) -> i64 {
        self.end
    }

    /// Offsets in flight, terminal ones behind a live one included: what `max_locks` bounds.
    pub fn in_flight(&self) -> i64 {
        self.end - self.start
    }

    /// How long what is acquired from now on stays locked (a group may set its own).
    pub fn set_lock_ms(&mut self, lock_ms: u64) {
        self.limits.lock_ms = lock_ms;
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// An offset's state and delivery count while it is in flight.
    pub fn state_of(&self, offset: i64) -> Option<(RecordState, i16)> {
        self.entries.get(&offset).map(|e| (e.state, e.count))
    }

    /// Whether every record of `run` is still Acquired by `member` at the run's delivery count
    /// (not released, timed out or acquired again since: a count only goes up).
    pub fn still_held(&self, member: &str, run: &Acquired) -> bool {
        let held = |e: &InFlight| e.count == run.count && e.lock.as_ref().is_some_and(|l| &*l.member == member);
        (run.first..=run.last).all(|offset| self.entries.get(&offset).is_some_and(held))
    }

    /// Offsets `member` holds.
    pub fn acquired_by(&self, member: &str) -> usize {
        self.entries.values().filter(|e| e.lock.as_ref().is_some_and(|l| &*l.member == member)).count()
    }

    /// The members holding records (for asking the coordinator which of them still are).
    pub fn holders(&self) -> BTreeSet<&str> {
        self.entries.values().filter_map(|e| e.lock.as_ref().map(|l| &*l.member)).collect()
    }

    /// Where the next acquisition reads the log: the first Available record, else the first new
    /// one while fewer than `max_locks` are in flight, else None (nothing to acquire).
    pub fn fetch_from(&self) -> Option<i64> {
        if let Some(&offset) = self.available.first() {
            return Some(offset);
        }
        // Records the log deleted behind a record still Acquired are not read.
        (self.in_flight() < self.limits.max_locks).then_some(self.end.max(self.log_start))
    }

    /// Acquires for `member` what `batches` offer: the (base offset, last offset) of consecutive
    /// log batches the caller read from the batch holding `fetch_from()` (or, if that offset is
    /// gone, the next one), in log order, up to the high watermark. Available records are taken
    /// while fewer than `max_records` are; new records a whole batch at a time (Kafka rounds up)
    /// while fewer than `max_records` are taken and `max_locks` are in flight. Offsets between
    /// batches are not in the log: Available ones are Archived, new ones become Archived gaps.
    pub fn acquire(&mut self, member: &str, batches: &[(i64, i64)], max_records: usize, now: u64) -> Acquisition {
        let mut got = Acquisition::default();
        if self.fetch_from().is_none() {
            return got;
        }
        let lock = Lock { member: Arc::from(member), deadline: now.saturating_add(self.limits.lock_ms) };
        let mut taken = 0usize;
        // Where the previous batch ended: what lies between it and the next is not in the log.
        let mut cursor: Option<i64> = None;
        'batches: for (i, &(base, last)) in batches.iter().enumerate() {
            debug_assert!(base <= last && base >= cursor.unwrap_or(i64::MIN), "batch {base}..={last} after {cursor:?}");
            if last < base {
                continue;
            }
            if let Some(cursor) = cursor {
                self.log_gap(cursor, base);
            }
            cursor = Some(last.saturating_add(1));
            let mut new_allowed = false;
            for offset in base.max(self.start)..=last {
                if offset < self.end {
                    if taken >= max_records {
                        break 'batches;
                    }
                    if self.entries[&offset].state == RecordState::Available {
                        got.push(offset, self.take(offset, &lock));
                        taken += 1;
                        got.batches_used = i + 1;
                    }
                    continue;
                }
                if offset < self.log_start {
                    continue; // deleted while a record behind it is still held
                }
                if !new_allowed {
                    // The first new record of this batch: the whole batch, or nothing more.
                    let span = if self.start == self.end { 0 } else { offset - self.start };
                    if taken >= max_records || span >= self.limits.max_locks {
                        break 'batches;
                    }
                    new_allowed = true;
                    self.open_gap(offset);
                }
                debug_assert_eq!(offset, self.end);
                // Within a batch too, never more than `max_locks` in flight: one huge batch
                // (millions of small records) would otherwise fill the map. The rest of the
                // batch is acquired by later fetches (the read starts at `end` again).
                if self.end - self.start >= self.limits.max_locks {
                    break 'batches;
                }
                self.set(offset, RecordState::Available, 0, None);
                self.end = offset + 1;
                got.push(offset, self.take(offset, &lock));
                taken += 1;
                got.batches_used = i + 1;
            }
        }
        self.advance_start();
        got
    }

    /// Applies `member`'s acknowledgement of `first..=last`: `types` has one type for all or one
    /// per offset. All or nothing: every offset must be Acquired by `member`, else
    /// INVALID_RECORD_STATE and nothing changes.
    pub fn acknowledge(&mut self, member: &str, first: i64, last: i64, types: &[AckType], now: u64) -> Result<(), Code> {
        let _ = now; // the lock deadline is not checked: an expired lock is the tick's to end
        self.check_acknowledge(member, first, last, types)?;
        for (i, offset) in (first..=last).enumerate() {
            let count = self.entries[&offset].count;
            let state = match types[if types.len() == 1 { 0 } else { i }] {
                AckType::Accept => RecordState::Acknowledged,
                AckType::Reject | AckType::Gap => RecordState::Archived,
                AckType::Release => self.released(offset, count),
            };
            self.set(offset, state, count, None);
        }
        self.advance_start();
        Ok(())
    }

    /// Whether [`SharePartition::acknowledge`] would take this batch (changes nothing): a
    /// caller with several batches checks them all first, so a partition's batches are taken
    /// all or none (one error code answers them all).
    pub fn check_acknowledge(&self, member: &str, first: i64, last: i64, types: &[AckType]) -> Result<(), Code> {
        let span = i128::from(last) - i128::from(first) + 1;
        if first > last || types.is_empty() || (types.len() != 1 && types.len() as i128 != span) {
            return Err(Code::InvalidRequest);
        }
        // Bounded by the map, not the request: a range outside it has offsets without entries.
        if first < self.start || last >= self.end {
            return Err(Code::InvalidRecordState);
        }
        let held = |e: &InFlight| e.lock.as_ref().is_some_and(|l| &*l.member == member);
        if !self.entries.range(first..=last).all(|(_, e)| held(e)) {
            return Err(Code::InvalidRecordState);
        }
        Ok(())
    }

    /// `member`'s share session closed: what it holds goes back, its delivery counted (Kafka
    /// takes the count back, as fetched but maybe never delivered; here a count counts every
    /// time a record was handed out, so counts only go up). Returns whether anything changed.
    pub fn release_member(&mut self, member: &str) -> bool {
        let held: Vec<i64> = self
            .entries
            .iter()
            .filter(|(_, e)| e.lock.as_ref().is_some_and(|l| &*l.member == member))
            .map(|(&offset, _)| offset)
            .collect();
        for &offset in &held {
            let count = self.entries[&offset].count;
            let state = self.released(offset, count);
            self.set(offset, state, count, None);
        }
        self.advance_start();
        !held.is_empty()
    }

    /// Ends every lock whose deadline is `now` or earlier. Returns whether anything changed.
    pub fn tick(&mut self, now: u64) -> bool {
        let due: Vec<i64> = self.deadlines.range(..=(now, i64::MAX)).map(|&(_, offset)| offset).collect();
        for &offset in &due {
            let count = self.entries[&offset].count;
            let state = self.released(offset, count);
            self.set(offset, state, count, None);
        }
        self.advance_start();
        !due.is_empty()
    }

    /// The earliest lock deadline, when `tick` next has something to do.
    pub fn next_deadline(&self) -> Option<u64> {
        self.deadlines.first().map(|&(deadline, _)| deadline)
    }

    /// Retention or DeleteRecords moved the log start to `log_start`: what is not Acquired below
    /// it is Archived (what is Acquired is Archived when it comes back), and with nothing left
    /// in flight below it the start jumps to it. Returns whether the durable form changed (the
    /// log start is not in it: a new one alone only moves `fetch_from` past the deleted records).
    pub fn log_start_moved(&mut self, log_start: i64) -> bool {
        if log_start <= self.log_start {
            return false;
        }
        self.log_start = log_start;
        let (start, end) = (self.start, self.end);
        let gone: Vec<i64> = self.available.range(..log_start).copied().collect();
        for &offset in &gone {
            let count = self.entries[&offset].count;
            self.set(offset, RecordState::Archived, count, None);
        }
        self.advance_start();
        if self.start < log_start && self.entries.range(..log_start).next().is_none() {
            self.start = log_start;
            self.end = self.end.max(log_start);
        }
        !gone.is_empty() || (start, end) != (self.start, self.end)
    }

    /// The release and timeout rule, one for both: a record back from a member is offered again
    /// unless it was delivered `delivery_limit` times or the log no longer holds it.
    fn released(&self, offset: i64, count: i16) -> RecordState {
        if count >= self.limits.delivery_limit || offset < self.log_start {
            RecordState::Archived
        } else {
            RecordState::Available
        }
    }

    /// Locks an Available entry to `lock`, counting the delivery; returns the new count.
    fn take(&mut self, offset: i64, lock: &Lock) -> i16 {
        let count = self.entries[&offset].count.saturating_add(1);
        debug_assert!(count <= self.limits.delivery_limit, "offset {offset} delivered {count} times");
        self.set(offset, RecordState::Acquired, count, Some(lock.clone()));
        count
    }

    /// The log holds no record in [from, to) (compacted away): Available records there are
    /// Archived, never to be offered again. `acquire` says so of the offsets between the batches
    /// it is given; of those before its first batch only the caller knows (where it read from),
    /// so the shell says so when a read at `from` returns a first batch based at `to` > `from`.
    /// Returns whether anything changed.
    pub fn log_gap(&mut self, from: i64, to: i64) -> bool {
        let gone: Vec<i64> = self.available.range(from..to.max(from)).copied().collect();
        for &offset in &gone {
            let count = self.entries[&offset].count;
            self.set(offset, RecordState::Archived, count, None);
        }
        self.advance_start();
        !gone.is_empty()
    }

    /// No record before `offset` that was never acquired is to be delivered (a committed read
    /// found only aborted transactions' records and markers there): they pass as a gap, as a
    /// compaction gap does. Whether anything changed.
    pub fn skip_to(&mut self, offset: i64) -> bool {
        if offset <= self.end {
            return false;
        }
        self.open_gap(offset);
        self.advance_start();
        true
    }

    /// New records resume at `offset` > end: [end, offset) is a compaction gap. Behind records
    /// in flight it is Archived entries; with nothing in flight, the start simply jumps.
    fn open_gap(&mut self, offset: i64) {
        if self.start == self.end {
            self.start = offset;
        } else {
            for gap in self.end..offset {
                self.set(gap, RecordState::Archived, 0, None);
            }
        }
        self.end = offset;
    }

    /// Moves the start past the terminal prefix, dropping it.
    fn advance_start(&mut self) {
        while let Some(entry) = self.entries.first_entry() {
            if !entry.get().state.terminal() {
                break;
            }
            debug_assert_eq!(*entry.key(), self.start);
            entry.remove();
            self.start += 1;
        }
        if self.entries.is_empty() {
            self.start = self.end;
        }
    }

    /// The one way an entry changes, keeping both indexes with it.
    fn set(&mut self, offset: i64, state: RecordState, count: i16, lock: Option<Lock>) {
        debug_assert_eq!(state == RecordState::Acquired, lock.is_some(), "offset {offset}");
        if let Some(old) = self.entries.get(&offset) {
            if old.state == RecordState::Available {
                self.available.remove(&offset);
            }
            if let Some(l) = &old.lock {
                self.deadlines.remove(&(l.deadline, offset));
            }
        }
        if state == RecordState::Available {
            self.available.insert(offset);
        }
        if let Some(l) = &lock {
            self.deadlines.insert((l.deadline, offset));
        }
        self.entries.insert(offset, InFlight { state, count, lock });
    }

    /// Who holds `offset`, for tests.
    #[cfg(test)]
    fn owner(&self, offset: i64) -> Option<&str> {
        self.entries.get(&offset)?.lock.as_ref().map(|l| &*l.member)
    }

    /// The module's invariant and its indexes' agreement with the map, checked in full.
    #[cfg(test)]
    fn check(&self) {
        assert!(self.start <= self.end, "start {} > end {}", self.start, self.end);
        let keys: Vec<i64> = self.entries.keys().copied().collect();
        assert_eq!(keys, (self.start..self.end).collect::<Vec<_>>(), "entries are not exactly [start, end)");
        if let Some(e) = self.entries.get(&self.start) {
            assert!(!e.state.terminal(), "terminal entry at start {}", self.start);
        }
        let available: BTreeSet<i64> = self.entries.iter().filter(|(_, e)| e.state == RecordState::Available).map(|(&o, _)| o).collect();
        assert_eq!(available, self.available);
        let deadlines: BTreeSet<(u64, i64)> = self.entries.iter().filter_map(|(&o, e)| e.lock.as_ref().map(|l| (l.deadline, o))).collect();
        assert_eq!(deadlines, self.deadlines);
        for (o, e) in &self.entries {
            assert_eq!(e.state == RecordState::Acquired, e.lock.is_some(), "offset {o}");
            assert!(e.count >= 0 && e.count <= self.limits.delivery_limit, "offset {o} count {}", e.count);
        }
    }
}
