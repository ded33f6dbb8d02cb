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
//! The table grows by doubling at 3/4 load, from 16 slots, until the budget's key count is
//! reached; it is never iterated, so its layout is observable nowhere.

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

    /// Sets `h`'s offset with `merge(old, new)` if present, else inserts it when the table
    /// holds fewer than `max_keys`; false when it was full.
    fn upsert(&mut self, h: u128, offset: i64, max_keys: usize, merge: fn(i64, i64) -> i64) -> bool {
        if self.slots.is_empty() {
            self.slots = vec![Slot::default(); initial_slots];
        }
        match self.find(words(h)) {
            Ok(i) => {
                self.slots[i].offset = merge(self.slots[i].offset, offset);
                true
            }
            Err(_) if self.len >= max_keys => false,
            Err(mut i) => {
                if (self.len + 1) * 4 > self.slots.len() * 3 {
                    self.grow();
                    i = self.find(words(h)).expect_err("a new key is absent");
                }
                self.slots[i] = Slot { hash: words(h), offset };
                self.len += 1;
                true
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

/// Keys of one batch, hashed, at most this many at a time (a batch with more goes in chunks).
const chunk_keys: usize = 64;

/// The last offset of each key seen in a dirty range, within a byte budget (see the module).
#[derive(Debug, Default)]
pub struct KeyMap {
    latest: Table,
    /// The first offset of each key, kept only for the planted [`Keep::First`].
    first: Option<Table>,
    max_keys: usize,
}

impl KeyMap {
    pub fn new(budget: usize) -> KeyMap {
        KeyMap::keeping(budget, Keep::Latest)
    }

    /// A map whose decisions keep `keep` (see [`Keep`]: only `Latest` is correct).
    #[doc(hidden)]
    pub fn keeping(budget: usize, keep: Keep) -> KeyMap {
        KeyMap { latest: Table::default(), first: (keep == Keep::First).then(Table::default), max_keys: (budget / key_overhead_bytes).max(1) }
    }

    /// Records that `key` is at `offset` (later offsets win). False when a new key would not
    /// fit: the pass must end its dirty range before the batch holding it.
    pub fn insert(&mut self, key: &[u8], offset: i64) -> bool {
        self.insert_hashed(key_hash(key), offset)
    }

    fn insert_hashed(&mut self, h: u128, offset: i64) -> bool {
        if !self.latest.upsert(h, offset, self.max_keys, i64::max) {
            return false;
        }
        if let Some(first) = self.first.as_mut() {
            first.upsert(h, offset, usize::MAX, i64::min);
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
        self.keeps_hashed(key_hash(key), offset)
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
            for (key, offset) in keys.by_ref().take(chunk_keys) {
                let h = key_hash(key);
                self.latest.prefetch(h);
                chunk[n] = (h, offset);
                n += 1;
            }
            out.extend(chunk[..n].iter().map(|&(h, offset)| self.keeps_hashed(h, offset)));
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
    fn a_batch_past_the_budget_stops_at_the_key_that_does_not_fit() {
        let mut map = KeyMap::new(2 * key_overhead_bytes);
        assert!(!map.insert_all([(&b"a"[..], 0), (&b"b"[..], 1), (&b"c"[..], 2), (&b"a"[..], 3)].into_iter()));
        assert_eq!((map.len(), map.latest(b"a"), map.latest(b"c")), (2, Some(0), None), "a@3 came after the key that did not fit");
    }
}
