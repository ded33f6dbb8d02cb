//! Compaction's key map: the last offset of every key seen in a dirty range, within a byte
//! budget (`log.cleaner.dedupe.buffer.size`). Kafka's `SkimpyOffsetMap` is the model: keys are
//! kept as 128-bit hashes in an open-addressing table with linear probing, so a key's own
//! length does not matter and a slot is 24 bytes.
//!
//! A cleaning pass probes the map once per record in each of its two walks, and at 10⁵–10⁷ keys
//! the table is larger than the CPU's caches: a probe is a cache miss. So the walks hand the
//! map a batch's keys at once ([`KeyMap::insert_all`], [`KeyMap::keeps_all`]): every slot is
//! prefetched first, and the misses overlap instead of following one another.
//!
//! A pass's map is made at its final size when the pass starts ([`KeyMap::for_range`]: room for
//! the fewer of the budget's keys and the range's offsets at 3/4 load, so no pass rehashes its
//! keys while it maps), in huge pages where the kernel gives them (a probe would otherwise also
//! miss the TLB: at 10⁶ keys the table spans 10⁴ small pages). Other maps grow by doubling at
//! 3/4 load, from 16 slots, until the budget's key count is reached. The table is never
//! iterated, so its layout is observable nowhere.

/// Bytes one key costs the map at most: a 24-byte slot at the table's lowest load (3/8, just
/// grown). Kafka's `SkimpyOffsetMap` keeps MD5s the same way.
pub const key_overhead_bytes: usize = 64;

/// Slots in a new table (it doubles from there).
const initial_slots: usize = 16;

/// A key's identity in the map: 128 bits of MurmurHash3's x64 construction (16 bytes a round,
/// then its finalizer), never 0 (0 marks an empty slot). Two keys sharing a hash would share a
/// slot (the older one's records would go); at 2^-64 per pair it is Kafka's own trade-off with
/// MD5.
pub(super) fn key_hash(key: &[u8]) -> u128 {
    const c1: u64 = 0x87c3_7b91_1142_53d5;
    const c2: u64 = 0x4cf5_ad43_2745_937f;
    let mix1 = |k: u64| k.wrapping_mul(c1).rotate_left(31).wrapping_mul(c2);
    let mix2 = |k: u64| k.wrapping_mul(c2).rotate_left(33).wrapping_mul(c1);
    let word = |b: &[u8]| b.iter().rev().fold(0u64, |w, &x| (w << 8) | x as u64);
    let (mut h1, mut h2) = (0u64, 0u64);
    let mut blocks = key.chunks_exact(16);
    for b in &mut blocks {
        h1 ^= mix1(word(&b[..8]));
        h1 = h1.rotate_left(27).wrapping_add(h2).wrapping_mul(5).wrapping_add(0x52dc_e729);
        h2 ^= mix2(word(&b[8..]));
        h2 = h2.rotate_left(31).wrapping_add(h1).wrapping_mul(5).wrapping_add(0x3849_5ab5);
    }
    let tail = blocks.remainder();
    if tail.len() > 8 {
        h2 ^= mix2(word(&tail[8..]));
    }
    if !tail.is_empty() {
        h1 ^= mix1(word(&tail[..tail.len().min(8)]));
    }
    let fmix = |mut k: u64| {
        k ^= k >> 33;
        k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
        k ^= k >> 33;
        k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        k ^ (k >> 33)
    };
    h1 ^= key.len() as u64;
    h2 ^= key.len() as u64;
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    h1 = fmix(h1);
    h2 = fmix(h2);
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    (((h1 as u128) << 64) | h2 as u128).max(1)
}

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

/// One slot: a key's hash as two words (0, 0 when empty; 8-byte aligned, so 24 bytes) and its
/// offset.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    hash: [u64; 2],
    offset: i64,
}

/// Open addressing with linear probing over a power-of-two number of slots.
#[derive(Debug, Default)]
struct Table {
    slots: Vec<Slot>,
    len: usize,
}

fn words(h: u128) -> [u64; 2] {
    [h as u64, (h >> 64) as u64]
}

impl Table {
    /// A table of room for `keys` at 3/4 load (a power of two of slots, at least 16), in huge
    /// pages where the kernel gives them.
    fn with_room(keys: usize) -> Table {
        let n = keys.saturating_mul(4).div_ceil(3).max(initial_slots).next_power_of_two();
        let mut slots = Vec::with_capacity(n);
        advise_huge_pages(&slots);
        slots.resize(n, Slot::default());
        Table { slots, len: 0 }
    }

    fn home(&self, h: [u64; 2]) -> usize {
        h[0] as usize & (self.slots.len() - 1)
    }

    /// The slot holding `h`, or the empty slot where it would go.
    fn find(&self, h: [u64; 2]) -> Result<usize, usize> {
        let mask = self.slots.len() - 1;
        let mut i = self.home(h);
        loop {
            match self.slots[i].hash {
                s if s == h => return Ok(i),
                [0, 0] => return Err(i),
                _ => i = (i + 1) & mask,
            }
        }
    }

    fn get(&self, h: u128) -> Option<i64> {
        if self.slots.is_empty() {
            return None;
        }
        self.find(words(h)).ok().map(|i| self.slots[i].offset)
    }

    /// Asks the CPU to start loading `h`'s home slot (a hint: no effect on results).
    fn prefetch(&self, h: u128) {
        if self.slots.is_empty() {
            return;
        }
        let slot = &self.slots[self.home(words(h))];
        // SAFETY: a prefetch is a hint that never faults, and SSE (its target feature) is part
        // of every x86_64 target.
        #[cfg(target_arch = "x86_64")]
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>((slot as *const Slot).cast())
        };
        #[cfg(not(target_arch = "x86_64"))]
        let _ = slot;
    }

    /// Sets `h`'s offset with `merge(old, new)` if present (returning the old one), else
    /// inserts it when the table holds fewer than `max_keys`; `Err(Full)` when it was full.
    fn upsert(&mut self, h: u128, offset: i64, max_keys: usize, merge: fn(i64, i64) -> i64) -> Result<Option<i64>, Full> {
        if self.slots.is_empty() {
            self.slots = vec![Slot::default(); initial_slots];
        }
        match self.find(words(h)) {
            Ok(i) => {
                let old = self.slots[i].offset;
                self.slots[i].offset = merge(old, offset);
                Ok(Some(old))
            }
            Err(_) if self.len >= max_keys => Err(Full),
            Err(mut i) => {
                if (self.len + 1) * 4 > self.slots.len() * 3 {
                    self.grow();
                    i = self.find(words(h)).expect_err("a new key is absent");
                }
                self.slots[i] = Slot { hash: words(h), offset };
                self.len += 1;
                Ok(None)
            }
        }
    }

    fn grow(&mut self) {
        let doubled = vec![Slot::default(); self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, doubled);
        for s in old.into_iter().filter(|s| s.hash != [0, 0]) {
            let i = self.find(s.hash).expect_err("rehashed keys are distinct");
            self.slots[i] = s;
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
        // SAFETY: madvise(MADV_HUGEPAGE) on whole pages of memory this Vec owns changes how the
        // kernel backs them, never their contents; a failure is only a hint not taken.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, end);
}

/// A new key found the table at its key budget.
#[derive(Debug)]
struct Full;

/// Which keyed records of a pass's dirty range a later record of their key superseded: one bit
/// per offset from `start`, set by the map walk as it replaces a key's offset. The rewrite walk
/// then judges a record of the dirty range by its bit, without hashing its key or probing the
/// table (only records below the range, already cleaned, still ask the table). It answers as
/// the table would: a record is superseded exactly when a later offset of its key was mapped.
#[derive(Debug)]
struct Superseded {
    start: i64,
    bits: Vec<u64>,
}

impl Superseded {
    fn index(&self, offset: i64) -> Option<usize> {
        let i = usize::try_from(offset.checked_sub(self.start)?).ok()?;
        (i / 64 < self.bits.len()).then_some(i)
    }

    fn set(&mut self, offset: i64) {
        if let Some(i) = self.index(offset) {
            self.bits[i / 64] |= 1 << (i % 64);
        }
    }

    /// Whether the record at `offset` was superseded; None outside the range.
    fn get(&self, offset: i64) -> Option<bool> {
        self.index(offset).map(|i| self.bits[i / 64] & (1 << (i % 64)) != 0)
    }

    /// The first offset from `from` whose bit is clear, at most `limit`; None if `from` is
    /// outside the range.
    fn clear_from(&self, from: i64, limit: i64) -> Option<i64> {
        let mut i = self.index(from)?;
        let end = usize::try_from(limit.saturating_sub(self.start)).unwrap_or(0).min(self.bits.len() * 64);
        while i < end {
            let k = i % 64;
            // Set bits from bit k of this word on (the shifted-in top bits read as clear).
            let ones = (!(self.bits[i / 64] >> k)).trailing_zeros() as usize;
            i += ones;
            if ones < 64 - k {
                break;
            }
        }
        Some(self.start + i.min(end.max(self.index(from)?)) as i64)
    }

    /// How many records in `first..=last` were superseded; None unless the range is inside.
    fn count(&self, first: i64, last: i64) -> Option<u32> {
        let (a, b) = (self.index(first)?, self.index(last)?);
        if a > b {
            return None;
        }
        let (wa, wb) = (a / 64, b / 64);
        // Bits a%64.. of word wa through bits ..=b%64 of word wb.
        let low = u64::MAX << (a % 64);
        let high = u64::MAX >> (63 - b % 64);
        if wa == wb {
            return Some((self.bits[wa] & low & high).count_ones());
        }
        let middle: u32 = self.bits[wa + 1..wb].iter().map(|w| w.count_ones()).sum();
        Some((self.bits[wa] & low).count_ones() + middle + (self.bits[wb] & high).count_ones())
    }
}

/// Keys of one batch, hashed, at most this many at a time (a batch with more goes in chunks).
const chunk_keys: usize = 64;

/// The last offset of each key seen in a dirty range, within a byte budget (see the module).
#[derive(Debug, Default)]
pub struct KeyMap {
    latest: Table,
    /// The first offset of each key, kept only for the planted [`Keep::First`].
    first: Option<Table>,
    /// Set by [`KeyMap::for_range`] when the range's bits fit a quarter of the budget.
    superseded: Option<Superseded>,
    max_keys: usize,
}

impl KeyMap {
    pub fn new(budget: usize) -> KeyMap {
        KeyMap::keeping(budget, Keep::Latest)
    }

    /// A map whose decisions keep `keep` (see [`Keep`]: only `Latest` is correct).
    #[doc(hidden)]
    pub fn keeping(budget: usize, keep: Keep) -> KeyMap {
        KeyMap { latest: Table::default(), first: (keep == Keep::First).then(Table::default), superseded: None, max_keys: (budget / key_overhead_bytes).max(1) }
    }

    /// [`KeyMap::keeping`] for a pass whose dirty range is `[start, end)`: when one bit per
    /// offset of the range fits a quarter of `budget`, the map also tracks which records a
    /// later one superseded (see [`Superseded`]), and its key budget shrinks by those bytes.
    /// (Not for the planted [`Keep::First`], whose verdicts the bits cannot give.)
    /// Its table is made at its final size: room for the fewer of its key budget and the
    /// range's offsets (no range holds more keys than offsets).
    pub fn for_range(budget: usize, keep: Keep, start: i64, end: i64) -> KeyMap {
        let mut map = KeyMap::keeping(budget, keep);
        let offsets = usize::try_from(end.saturating_sub(start)).unwrap_or(usize::MAX);
        let words = offsets.div_ceil(64);
        let bytes = words.saturating_mul(8);
        if keep == Keep::Latest && bytes <= budget / 4 {
            map.superseded = Some(Superseded { start, bits: vec![0; words] });
            map.max_keys = ((budget - bytes) / key_overhead_bytes).max(1);
        }
        map.latest = Table::with_room(map.max_keys.min(offsets));
        map
    }

    /// Records that `key` is at `offset` (later offsets win). False when a new key would not
    /// fit: the pass must end its dirty range before the batch holding it.
    pub fn insert(&mut self, key: &[u8], offset: i64) -> bool {
        self.insert_hashed(key_hash(key), offset)
    }

    fn insert_hashed(&mut self, h: u128, offset: i64) -> bool {
        let Ok(old) = self.latest.upsert(h, offset, self.max_keys, i64::max) else { return false };
        if let (Some(old), Some(superseded)) = (old, self.superseded.as_mut()) {
            superseded.set(old.min(offset));
        }
        if let Some(first) = self.first.as_mut() {
            let _ = first.upsert(h, offset, usize::MAX, i64::min);
        }
        true
    }

    /// [`KeyMap::insert`] for each `(key, offset)` in order, their slots prefetched first;
    /// false as soon as one does not fit (those before it are in).
    pub fn insert_all<'k>(&mut self, keys: impl Iterator<Item = (&'k [u8], i64)>) -> bool {
        let mut chunk = [(0u128, 0i64); chunk_keys];
        let mut keys = keys.peekable();
        while keys.peek().is_some() {
            let mut n = 0;
            for (key, offset) in keys.by_ref().take(chunk_keys) {
                let h = key_hash(key);
                self.latest.prefetch(h);
                chunk[n] = (h, offset);
                n += 1;
            }
            if !chunk[..n].iter().all(|&(h, offset)| self.insert_hashed(h, offset)) {
                return false;
            }
        }
        true
    }

    pub fn latest(&self, key: &[u8]) -> Option<i64> {
        self.latest.get(key_hash(key))
    }

    /// Whether the record of `key` at `offset` is the one of its key this pass keeps: the
    /// latest mapped (or the first, planted), or one the map never saw — its key was not in
    /// the dirty range, or it lies above the range's mapped end.
    pub fn keeps(&self, key: &[u8], offset: i64) -> bool {
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
        self.superseded.as_ref()?.count(first, last)
    }

    /// Where the run of superseded records from `from` ends (at most `limit`): every offset
    /// in `from..end` holds a record a later one of its key superseded, so every batch wholly
    /// inside loses every record, whatever its header says. None without bits or outside them.
    pub fn superseded_through(&self, from: i64, limit: i64) -> Option<i64> {
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
    fn key_hashes_are_murmur3_x64_128_and_do_not_collide_on_similar_keys() {
        // Reference values from the `mmh3` Python package (hash128, seed 0), as (h1, h2).
        let swap = |v: u128| (v << 64) | (v >> 64);
        assert_eq!(key_hash(b"hello"), swap(0x5b1e906a48ae1d19cbd8a7b341bd9b02));
        assert_eq!(key_hash(b"a"), swap(0xe6b53a48510e895a85555565f6597889));
        assert_eq!(key_hash(b"key-00000001"), swap(0x3e4b88d086e085f3020e86c725c45c88));
        assert_eq!(key_hash(b"0123456789abcdef"), swap(0x87c35b5c63a708da4be06d94cf4ad1a7));
        assert_eq!(key_hash(b"0123456789abcdefXYZ"), swap(0x4e69e256eaf89cf399d375026c4a901d));
        assert_eq!(key_hash(b""), 1, "0 is never a key's hash");
        let mut seen = std::collections::BTreeSet::new();
        for i in 0..200_000 {
            assert!(seen.insert(key_hash(format!("key-{i:08}").as_bytes())));
            assert!(seen.insert(key_hash(&(i as u64).to_le_bytes())));
        }
    }

    #[test]
    fn the_map_grows_keeps_the_latest_offset_and_stops_at_its_budget() {
        let keys: Vec<String> = (0..5_000).map(|i| format!("k{i}")).collect();
        let mut map = KeyMap::new(4_000 * key_overhead_bytes);
        // Every key twice, the second time at a later offset; then once more at an earlier one.
        let pairs = keys.iter().take(4_000).enumerate().flat_map(|(i, k)| [(k.as_bytes(), i as i64), (k.as_bytes(), 10_000 + i as i64)]);
        assert!(map.insert_all(pairs));
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
    fn a_run_of_superseded_records_ends_at_the_first_clear_bit() {
        let mut bits = Superseded { start: 100, bits: vec![0; 4] };
        for o in (103..230).chain(231..240) {
            bits.set(o);
        }
        assert_eq!(bits.clear_from(100, 356), Some(100), "100 is clear");
        assert_eq!(bits.clear_from(103, 356), Some(230), "across words, to the clear bit");
        assert_eq!(bits.clear_from(103, 200), Some(200), "at most the limit");
        assert_eq!(bits.clear_from(231, 356), Some(240));
        assert_eq!(bits.clear_from(103, 50), Some(103), "a limit below `from`");
        for o in 240..356 {
            bits.set(o);
        }
        assert_eq!(bits.clear_from(231, 1_000), Some(356), "to the end of the bits");
        assert_eq!(bits.clear_from(99, 356), None);
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
        assert_eq!(small.latest.slots.len(), initial_slots, "a short range needs no more than its offsets");
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
}
