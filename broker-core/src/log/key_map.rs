//! Compaction's key map: the last offset of every key seen in a dirty range, within a byte
//! budget (`log.cleaner.dedupe.buffer.size`). Kafka's `SkimpyOffsetMap` is the model: keys are
//! kept as hashes in an open-addressing table with linear probing, so a key's own length does
//! not matter. A slot is 16 bytes, four to a cache line: 96 bits of the key's 128-bit hash and
//! its offset as 32 bits from the pass's first offset (see [`Slot`] for what that costs).
//!
//! A cleaning pass probes the map once per record of its dirty range, and at 10⁵–10⁷ keys the
//! table is larger than the CPU's caches: a probe is a cache miss. So the map walk's keys are
//! hashed and their slots prefetched [`prefetch_keys`] keys before they are inserted, across
//! batches ([`KeyMap::insert_all`] keeps the keys in flight; [`KeyMap::settle`] inserts the
//! last of them): the misses overlap instead of following one another. The rewrite asks about
//! the records below the dirty range a batch at a time, prefetched the same way
//! ([`KeyMap::keeps_all`]).
//!
//! A table is made at its final size ([`KeyMap::for_range`]: room for the fewer of the
//! budget's keys and the range's offsets at 3/4 load), so it never rehashes and never needs a
//! key's hash again. Its zeroed memory comes from the OS untouched, and a pass's table asks for
//! huge pages (a probe would otherwise also miss the TLB: at 10⁶ keys the table spans 10⁴
//! small pages). The table is never iterated, so its layout is observable nowhere.

use super::key_hash::key_hash;
use super::superseded::Superseded;
use std::collections::VecDeque;

/// Bytes of budget one key counts for. Its table takes at most 43 of them (a 16-byte slot at
/// 3/8 load: room at 3/4, rounded up to a power of two of slots); 64 is what a 24-byte slot
/// took until session 14, kept so a pass maps as many keys per budget as before. Kafka's
/// `SkimpyOffsetMap` budgets its slots the same way.
pub const key_overhead_bytes: usize = 64;

/// Keys the map walk hashes and prefetches ahead of the one it inserts: more than a core keeps
/// misses in flight (16, 32, 64 and 128 measured within each other's noise, session 14).
const prefetch_keys: usize = 32;

/// Keys of one batch the rewrite hashes and prefetches at a time (a batch with more goes in
/// chunks).
const chunk_keys: usize = 64;

/// Which record of a key a pass keeps. Only [`Keep::Latest`] is compaction; [`Keep::First`]
/// is a known bug kept so the simulator can plant it (`PlantedBug::CleanerKeepsFirstValue`)
/// and prove its `compaction` checker sees it. Compiled in both builds so the log needs no
/// `cfg`, but nothing except that planted bug ever asks for it.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Keep {
    /// The last record of each key in the dirty range (and everything above it).
    #[default]
    Latest,
    /// Planted bug: the first record of each key in the dirty range, the later ones dropped.
    First,
}


/// One slot, 16 bytes aligned as 16 (four to a cache line, none across two): `[h1, tag]`, where
/// h1 is the key hash's first 64 bits and tag holds the high 32 bits of its second word above
/// `at`, the key's offset as 1 + its distance from the table's `base` (0: empty). The low bits
/// of that second word pick the home slot and are not stored, so the 96 stored bits are
/// independent of where a slot sits.
///
/// What a false match would cost, and how likely it is: two keys whose stored 96 bits agree
/// and whose probe paths meet share a slot, and the older key's records would be dropped as
/// superseded — its latest value lost. For random hashes the chance is 2⁻⁹⁶ per slot compared;
/// a pass of 10⁷ records compares about 1.5 slots per record: ~10⁻²² per pass. Kafka compares
/// full 128-bit MD5s over slots placed by their first bytes: 2⁻¹⁰⁶ per compared slot at 10⁶
/// keys. Both are far below a disk's undetected error rate.
type Slot = [u64; 2];

/// An offset in a slot: 32 bits from `base`, so an offset 2³² − 1 or more past it (or below it)
/// is not mapped at all ([`Table::at`]): its records are kept, never dropped — a pass over four
/// billion offsets compacts less past them, which a valid log reaches only through gaps.
const at_bits: u32 = 32;

/// Open addressing with linear probing over a power-of-two number of slots, never grown.
#[derive(Debug)]
struct Table {
    slots: Vec<Slot>,
    base: i64,
    len: usize,
}

fn split(h: u128) -> (usize, u64, u64) {
    let (h1, h2) = ((h >> 64) as u64, h as u64);
    (h2 as usize, h1, h2 >> at_bits << at_bits)
}

impl Table {
    /// A table of room for `keys` at 3/4 load (a power of two of slots, at least 16) whose
    /// offsets count from `base`, in huge pages when `huge` and the kernel gives them.
    fn with_room(keys: usize, base: i64, huge: bool) -> Table {
        let n = keys.saturating_mul(4).div_ceil(3).max(16).next_power_of_two();
        // Zeroed by the allocator (fresh pages from the OS for a big table), not written here.
        let slots: Vec<Slot> = vec![[0, 0]; n];
        if huge {
            advise_huge_pages(&slots);
        }
        Table { slots, base, len: 0 }
    }

    /// `offset` as a slot keeps it, if it is within 2³² − 1 of `base`.
    fn at(&self, offset: i64) -> Option<u64> {
        let d = u64::try_from(offset.checked_sub(self.base)?).ok()?;
        (d < u32::MAX as u64).then_some(d + 1)
    }

    fn offset(&self, slot: &Slot) -> i64 {
        self.base + (slot[1] as u32 as i64) - 1
    }

    /// The slot holding `h`, or the empty slot where it would go.
    fn find(&self, h: u128) -> Result<usize, usize> {
        let (home, h1, tag) = split(h);
        let mask = self.slots.len() - 1;
        let mut i = home & mask;
        loop {
            let s = &self.slots[i];
            if s[1] as u32 == 0 {
                return Err(i);
            }
            if s[0] == h1 && s[1] >> at_bits << at_bits == tag {
                return Ok(i);
            }
            i = (i + 1) & mask;
        }
    }

    fn get(&self, h: u128) -> Option<i64> {
        self.find(h).ok().map(|i| self.offset(&self.slots[i]))
    }

    /// Asks the CPU to start loading `h`'s home slot (a hint: no effect on results).
    fn prefetch(&self, h: u128) {
        let slot = &self.slots[split(h).0 & (self.slots.len() - 1)];
        #[cfg(target_arch = "x86_64")]
        // _mm_prefetch is unsafe only for its target feature, SSE, which every x86_64 target
        // has; it never dereferences the address (a hint that cannot fault).
        // SAFETY: SSE is present, and the address is a slot of `self.slots`, borrowed here.
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>((slot as *const Slot).cast())
        };
        #[cfg(not(target_arch = "x86_64"))]
        let _ = slot;
    }

    /// Sets `h`'s offset with `merge(old, new)` if present (returning the old one), else
    /// inserts it when the table holds fewer than `max_keys`; `Err(Full)` when it was full.
    /// `at` is `offset` as [`Table::at`] gives it.
    fn upsert(&mut self, h: u128, offset: i64, at: u64, max_keys: usize, merge: fn(i64, i64) -> i64) -> Result<Option<i64>, Full> {
        match self.find(h) {
            Ok(i) => {
                let old = self.offset(&self.slots[i]);
                let new = merge(old, offset);
                if new != old {
                    let s = &mut self.slots[i];
                    s[1] = s[1] >> at_bits << at_bits | at;
                }
                Ok(Some(old))
            }
            Err(_) if self.len >= max_keys => Err(Full),
            Err(i) => {
                let (_, h1, tag) = split(h);
                self.slots[i] = [h1, tag | at];
                self.len += 1;
                Ok(None)
            }
        }
    }
}

/// Asks Linux to back `slots`' buffer, not yet touched, with transparent huge pages (a hint:
/// no effect on results; where THP is off or the buffer is small nothing changes).
fn advise_huge_pages(slots: &Vec<Slot>) {
    const huge_page_bytes: usize = 2 << 20;
    let bytes = slots.capacity() * std::mem::size_of::<Slot>();
    if bytes < 2 * huge_page_bytes {
        return;
    }
    // Only whole 2 MiB pages inside the buffer can be huge ones.
    let start = (slots.as_ptr() as usize).next_multiple_of(huge_page_bytes);
    let end = (slots.as_ptr() as usize + bytes) / huge_page_bytes * huge_page_bytes;
    #[cfg(target_os = "linux")]
    if end > start {
        // `start..end` is 2 MiB-aligned (so page-aligned, as madvise requires) and lies inside
        // `slots`' allocation (rounded in from both its ends). MADV_HUGEPAGE changes how the
        // kernel backs those pages, never their contents or mapping; a failure is a hint not taken.
        // SAFETY: an aligned range inside `slots`, which the borrow keeps alive; advice only.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, end);
}

/// A new key found the table at its key budget.
#[derive(Debug)]
struct Full;

/// The last offset of each key seen in a dirty range, within a byte budget (see the module).
#[derive(Debug)]
pub struct KeyMap {
    latest: Table,
    /// The first offset of each key, kept only for the planted [`Keep::First`].
    first: Option<Table>,
    /// Set by [`KeyMap::for_range`] when the range's bits fit a quarter of the budget.
    superseded: Option<Superseded>,
    max_keys: usize,
    /// Keys [`KeyMap::insert_all`] hashed and prefetched, oldest first, not yet inserted: at
    /// most [`prefetch_keys`], and never more than the table still has room for, so each fits.
    pending: VecDeque<(u128, i64)>,
}

impl KeyMap {
    pub fn new(budget: usize) -> KeyMap {
        KeyMap::keeping(budget, Keep::Latest)
    }

    /// A map whose decisions keep `keep` (see [`Keep`]: only `Latest` is correct), with room
    /// for the budget's keys at offsets 0 to 2³² − 2.
    #[doc(hidden)]
    pub fn keeping(budget: usize, keep: Keep) -> KeyMap {
        let max_keys = (budget / key_overhead_bytes).max(1);
        KeyMap::with_room(max_keys, keep, 0, None, false)
    }

    fn with_room(max_keys: usize, keep: Keep, base: i64, superseded: Option<Superseded>, huge: bool) -> KeyMap {
        let first = (keep == Keep::First).then(|| Table::with_room(max_keys, base, false));
        KeyMap { latest: Table::with_room(max_keys, base, huge), first, superseded, max_keys, pending: VecDeque::with_capacity(prefetch_keys) }
    }

    /// The map of a pass whose dirty range is `[start, end)`: offsets count from `start`, and
    /// when one bit per offset of the range fits a quarter of `budget`, the map also tracks
    /// which records a later one superseded (see [`Superseded`]), and its key budget shrinks
    /// by those bytes. (Not for the planted [`Keep::First`], whose verdicts the bits cannot
    /// give.) Its table is made at its final size: room for the fewer of its key budget and
    /// the range's offsets (no range holds more keys than offsets), in huge pages.
    pub fn for_range(budget: usize, keep: Keep, start: i64, end: i64) -> KeyMap {
        let mut max_keys = (budget / key_overhead_bytes).max(1);
        let offsets = usize::try_from(end.saturating_sub(start)).unwrap_or(usize::MAX);
        let words = offsets.div_ceil(64);
        let bytes = words.saturating_mul(8);
        let mut superseded = None;
        if keep == Keep::Latest && bytes <= budget / 4 {
            superseded = Some(Superseded { start, bits: vec![0; words] });
            max_keys = ((budget - bytes) / key_overhead_bytes).max(1);
        }
        KeyMap::with_room(max_keys.min(offsets).max(1), keep, start, superseded, true)
    }

    /// Records that `key` is at `offset` (later offsets win). False when a new key would not
    /// fit: the pass must end its dirty range before the batch holding it.
    pub fn insert(&mut self, key: &[u8], offset: i64) -> bool {
        self.settle();
        self.insert_hashed(key_hash(key), offset)
    }

    fn insert_hashed(&mut self, h: u128, offset: i64) -> bool {
        // An offset the slots cannot hold is not mapped: its record and its key's earlier ones
        // are kept (see `at_bits`).
        let Some(at) = self.latest.at(offset) else { return true };
        let Ok(old) = self.latest.upsert(h, offset, at, self.max_keys, i64::max) else { return false };
        if let (Some(old), Some(superseded)) = (old, self.superseded.as_mut()) {
            superseded.set(old.min(offset));
        }
        if let Some(first) = self.first.as_mut() {
            let _ = first.upsert(h, offset, at, usize::MAX, i64::min);
        }
        true
    }

    /// [`KeyMap::insert`] for each `(key, offset)` in order; false as soon as one does not fit
    /// (those before it are in). The keys are hashed and prefetched [`prefetch_keys`] ahead of
    /// their insertion, and the last of them stay in flight after the call returns (the next
    /// batch's keys push them in): [`KeyMap::settle`] before asking the map anything. Near
    /// its budget, where a key in flight might not fit, the map settles and inserts each key
    /// at once, so the answer is the same as one insert at a time.
    pub fn insert_all<'k>(&mut self, keys: impl Iterator<Item = (&'k [u8], i64)>) -> bool {
        for (key, offset) in keys {
            let h = key_hash(key);
            if self.latest.len + self.pending.len() >= self.max_keys {
                self.settle();
                if !self.insert_hashed(h, offset) {
                    return false;
                }
                continue;
            }
            self.latest.prefetch(h);
            if self.pending.len() == prefetch_keys {
                let (h, offset) = self.pending.pop_front().expect("a full queue");
                let fits = self.insert_hashed(h, offset);
                debug_assert!(fits, "a key in flight always has room");
            }
            self.pending.push_back((h, offset));
        }
        true
    }

    /// Inserts the keys [`KeyMap::insert_all`] left in flight (each has room).
    pub fn settle(&mut self) {
        while let Some((h, offset)) = self.pending.pop_front() {
            let fits = self.insert_hashed(h, offset);
            debug_assert!(fits, "a key in flight always has room");
        }
    }

    pub fn latest(&self, key: &[u8]) -> Option<i64> {
        self.assert_settled();
        self.latest.get(key_hash(key))
    }

    fn assert_settled(&self) {
        debug_assert!(self.pending.is_empty(), "the map is asked with keys in flight: settle it first");
    }

    /// Whether the record of `key` at `offset` is the one of its key this pass keeps: the
    /// latest mapped (or the first, planted), or one the map never saw — its key was not in
    /// the dirty range, or it lies above the range's mapped end.
    pub fn keeps(&self, key: &[u8], offset: i64) -> bool {
        self.assert_settled();
        match self.superseded.as_ref().and_then(|s| s.get(offset)) {
            Some(gone) => !gone,
            None => self.keeps_hashed(key_hash(key), offset),
        }
    }
    /// How many records with offsets in `first..=last` a later record of their key superseded,
    /// from the bits alone (no hashing, no probe); None when the map keeps no bits or the range
    /// is not inside its dirty range. Each offset holds at most one record and only mapped
    /// (keyed) records get a bit, so a batch whose count equals its record count loses every
    /// record, and one whose count is 0 loses none — unless it is below the range, where
    /// tombstones may expire, which is why only the dirty range answers.
    pub fn superseded_in(&self, first: i64, last: i64) -> Option<u32> {
        self.assert_settled();
        self.superseded.as_ref()?.count(first, last)
    }

    /// Where the run of superseded records from `from` ends (at most `limit`): every offset
    /// in `from..end` holds a record a later one of its key superseded, so every batch wholly
    /// inside loses every record, whatever its header says. None without bits or outside them.
    pub fn superseded_through(&self, from: i64, limit: i64) -> Option<i64> {
        self.assert_settled();
        self.superseded.as_ref()?.clear_from(from, limit)
    }

    fn keeps_hashed(&self, h: u128, offset: i64) -> bool {
        match self.latest.get(h) {
            None => true,
            Some(latest) if offset > latest => true,
            Some(latest) => match self.first.as_ref().and_then(|f| f.get(h)) {
                Some(first) => offset == first,
                None => offset == latest,
            },
        }
    }

    /// [`KeyMap::keeps`] for each `(key, offset)`, in order, into `out` (cleared first), their
    /// slots prefetched first.
    pub fn keeps_all<'k>(&self, keys: impl Iterator<Item = (&'k [u8], i64)>, out: &mut Vec<bool>) {
        self.assert_settled();
        out.clear();
        let mut chunk = [(0u128, 0i64); chunk_keys];
        let mut keys = keys.peekable();
        while keys.peek().is_some() {
            let mut n = 0;
            let from = out.len();
            for (key, offset) in keys.by_ref().take(chunk_keys) {
                // Within the dirty range the bit answers; 0 marks a key still to probe.
                let h = match self.superseded.as_ref().and_then(|s| s.get(offset)) {
                    Some(gone) => {
                        out.push(!gone);
                        0
                    }
                    None => {
                        let h = key_hash(key);
                        self.latest.prefetch(h);
                        out.push(true);
                        h
                    }
                };
                chunk[n] = (h, offset);
                n += 1;
            }
            for (verdict, &(h, offset)) in out[from..].iter_mut().zip(&chunk[..n]) {
                if h != 0 {
                    *verdict = self.keeps_hashed(h, offset);
                }
            }
        }
    }

    pub fn len(&self) -> usize {
        self.assert_settled();
        self.latest.len
    }

    pub fn is_empty(&self) -> bool {
        self.latest.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_map_keeps_the_latest_offset_and_stops_at_its_budget() {
        let keys: Vec<String> = (0..5_000).map(|i| format!("k{i}")).collect();
        let mut map = KeyMap::new(4_000 * key_overhead_bytes);
        // Every key twice, the second time at a later offset; then once more at an earlier one.
        let pairs = keys.iter().take(4_000).enumerate().flat_map(|(i, k)| [(k.as_bytes(), i as i64), (k.as_bytes(), 10_000 + i as i64)]);
        assert!(map.insert_all(pairs));
        map.settle();
        assert_eq!(map.len(), 4_000);
        assert!(map.insert(b"k7", 3), "an earlier offset of a mapped key changes nothing");
        assert_eq!(map.latest(b"k7"), Some(10_007));
        assert!(!map.insert(keys[4_000].as_bytes(), 1), "a new key past the budget does not fit");
        assert!(map.insert(b"k1", 20_000), "a mapped key still updates when full");
        assert_eq!(map.latest(b"k1"), Some(20_000));
        assert_eq!(map.latest(b"absent"), None);
        let mut out = Vec::new();
        map.keeps_all([(&b"k2"[..], 2), (&b"k2"[..], 10_002), (&b"absent"[..], 0), (&b"k3"[..], 99_999)].into_iter(), &mut out);
        assert_eq!(out, [false, true, true, true]);
        assert!(map.latest.slots.len() * std::mem::size_of::<Slot>() <= 4_000 * key_overhead_bytes, "the table stays within the budget");
    }

    #[test]
    fn the_superseded_bits_answer_as_the_table_does() {
        // Offsets 100..400 hold keys drawn from 40 (a seeded walk), some keyless; the map fills
        // at 30 keys in the second run. Each record, and records below and above the range,
        // must get the same verdict from a map with bits and one without.
        for budget_keys in [1_000, 30] {
            let mut x = 7u64;
            let mut records: Vec<(i64, Option<String>)> = Vec::new();
            for offset in 100..400 {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                records.push((offset, (x >> 60 != 0).then(|| format!("k{}", (x >> 33) % 40))));
            }
            let budget = budget_keys * key_overhead_bytes * 2;
            let mut plain = KeyMap::keeping(budget, Keep::Latest);
            let mut bits = KeyMap::for_range(budget, Keep::Latest, 100, 400);
            assert!(bits.superseded.is_some(), "300 bits fit a quarter of the budget");
            bits.max_keys = plain.max_keys; // the same key budget, so both fill at the same key
            let keyed = || records.iter().filter_map(|(o, k)| Some((k.as_deref()?.as_bytes(), *o)));
            assert_eq!(plain.insert_all(keyed()), bits.insert_all(keyed()));
            plain.settle();
            bits.settle();
            let asked: Vec<(Vec<u8>, i64)> = keyed().map(|(k, o)| (k.to_vec(), o)).chain([(b"k1".to_vec(), 50), (b"k2".to_vec(), 450)]).collect();
            let (mut a, mut b) = (Vec::new(), Vec::new());
            plain.keeps_all(asked.iter().map(|(k, o)| (k.as_slice(), *o)), &mut a);
            bits.keeps_all(asked.iter().map(|(k, o)| (k.as_slice(), *o)), &mut b);
            assert_eq!(a, b, "budget of {budget_keys} keys");
            assert!(a.iter().any(|v| !v) && a.iter().any(|v| *v));
            for (k, o) in &asked {
                assert_eq!(plain.keeps(k, *o), bits.keeps(k, *o));
            }
        }
    }

    #[test]
    fn the_bits_count_superseded_records_over_any_span_and_only_inside_the_range() {
        // Offsets 1_000..1_300, key k(o % 50): each key's last record survives, the rest go.
        let mut map = KeyMap::for_range(1 << 20, Keep::Latest, 1_000, 1_300);
        let keys: Vec<String> = (1_000..1_300).map(|o| format!("k{}", o % 50)).collect();
        assert!(map.insert_all(keys.iter().zip(1_000..).map(|(k, o)| (k.as_bytes(), o))));
        map.settle();
        for (first, last) in [(1_000, 1_000), (1_000, 1_063), (1_060, 1_070), (1_001, 1_299), (1_240, 1_299), (1_249, 1_250), (1_127, 1_128)] {
            let want = (first..=last).filter(|&o| !map.keeps_hashed(key_hash(format!("k{}", o % 50).as_bytes()), o)).count() as u32;
            assert_eq!(map.superseded_in(first, last), Some(want), "{first}..={last}");
        }
        assert_eq!(map.superseded_in(1_250, 1_299), Some(0), "the last 50 are each key's latest");
        assert_eq!(map.superseded_in(999, 1_010), None, "starts below the range");
        assert_eq!(map.superseded_in(1_290, 1_400), None, "ends above it (its bits are whole words)");
        assert_eq!(KeyMap::new(1 << 20).superseded_in(0, 0), None, "no bits: no answer");
    }


    #[test]
    fn a_pass_map_is_made_at_its_final_size_within_the_budget() {
        let budget = 4_000 * key_overhead_bytes;
        let mut map = KeyMap::for_range(budget, Keep::Latest, 0, 1 << 20);
        let slots = map.latest.slots.len();
        assert!(slots * std::mem::size_of::<Slot>() <= budget, "{slots} slots");
        let keys: Vec<String> = (0..map.max_keys + 1).map(|i| format!("k{i}")).collect();
        assert!(!map.insert_all(keys.iter().zip(0..).map(|(k, o)| (k.as_bytes(), o))), "the last key is past the budget");
        assert_eq!((map.len(), map.latest.slots.len()), (map.max_keys, slots), "full, and never grown");
        let small = KeyMap::for_range(budget, Keep::Latest, 0, 10);
        assert_eq!(small.latest.slots.len(), 16, "a short range needs no more than its offsets");
    }

    #[test]
    fn a_range_too_long_for_the_budget_gets_no_bits_and_the_planted_map_none() {
        assert!(KeyMap::for_range(1 << 10, Keep::Latest, 0, 1 << 20).superseded.is_none());
        assert!(KeyMap::for_range(1 << 20, Keep::First, 0, 100).superseded.is_none());
        let map = KeyMap::for_range(1 << 20, Keep::Latest, 0, 1 << 20);
        assert_eq!(map.max_keys, ((1 << 20) - (1 << 17)) / key_overhead_bytes, "the bits come out of the key budget");
    }

    #[test]
    fn a_batch_past_the_budget_stops_at_the_key_that_does_not_fit() {
        let mut map = KeyMap::new(2 * key_overhead_bytes);
        assert!(!map.insert_all([(&b"a"[..], 0), (&b"b"[..], 1), (&b"c"[..], 2), (&b"a"[..], 3)].into_iter()));
        assert_eq!((map.len(), map.latest(b"a"), map.latest(b"c")), (2, Some(0), None), "a@3 came after the key that did not fit");
    }

    #[test]
    fn keys_in_flight_give_the_answers_of_one_insert_at_a_time() {
        // Batches of 1 to 40 keys drawn from 3,000 (a seeded walk), into maps that fill part
        // way (budgets of 500 and 2,900 keys) or never: the pipelined map must say the same
        // batch does not fit, and then hold the same offsets and superseded bits.
        for budget_keys in [500, 2_900, 100_000] {
            let budget = budget_keys * key_overhead_bytes;
            let (mut piped, mut single) = (KeyMap::for_range(budget, Keep::Latest, 0, 60_000), KeyMap::for_range(budget, Keep::Latest, 0, 60_000));
            let (mut x, mut offset, mut full) = (11u64, 0i64, None);
            let mut names = Vec::new();
            for batch in 0.. {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                let n = (x >> 59) as i64 % 40 + 1;
                let keys: Vec<(String, i64)> = (offset..offset + n).map(|o| (format!("k{}", (x >> 20).wrapping_add(o as u64 * 7_919) % 3_000), o)).collect();
                offset += n;
                let fits = piped.insert_all(keys.iter().map(|(k, o)| (k.as_bytes(), *o)));
                assert_eq!(fits, keys.iter().all(|(k, o)| single.insert(k.as_bytes(), *o)), "batch {batch}");
                names.extend(keys.into_iter().map(|(k, _)| k));
                if !fits || offset > 50_000 {
                    full = Some(!fits);
                    break;
                }
            }
            piped.settle();
            assert_eq!(full, Some(budget_keys < 3_000), "budget of {budget_keys} keys");
            assert_eq!(piped.len(), single.len());
            for k in &names {
                assert_eq!(piped.latest(k.as_bytes()), single.latest(k.as_bytes()));
            }
            assert_eq!(piped.superseded.as_ref().map(|s| s.bits.clone()), single.superseded.as_ref().map(|s| s.bits.clone()));
        }
    }

    #[test]
    fn an_offset_the_slots_cannot_hold_is_not_mapped_and_its_records_are_kept() {
        let far = 100 + u32::MAX as i64;
        let mut map = KeyMap::for_range(1 << 20, Keep::Latest, 100, 200);
        assert!(map.insert_all([(&b"a"[..], 100), (&b"b"[..], 101), (&b"b"[..], far), (&b"c"[..], far - 1), (&b"d"[..], 99)].into_iter()));
        map.settle();
        assert_eq!((map.latest(b"a"), map.latest(b"b"), map.latest(b"c"), map.latest(b"d")), (Some(100), Some(101), Some(far - 1), None));
        assert!(map.keeps(b"b", 101) && map.keeps(b"b", far), "b@far was never mapped: b@101 stays as well");
        assert!(map.keeps(b"d", 99), "below the base");
        assert!(!map.keeps(b"c", 50), "a mapped key still supersedes the clean part");
        assert_eq!(std::mem::size_of::<Slot>(), 16);
    }
}
