//! The superseded bits of a cleaning pass: one bit per offset of its dirty range, set by the
//! map walk when a later record of the same key replaces one ([`super::key_map::KeyMap`] owns
//! them). The rewrite then judges a record of the dirty range by its bit alone. Pure memory:
//! no IO, and nothing here is iterated into anything observable but the bits themselves.

/// Which keyed records of a pass's dirty range a later record of their key superseded: one bit
/// per offset from `start`, set by the map walk as it replaces a key's offset. The rewrite walk
/// then judges a record of the dirty range by its bit, without hashing its key or probing the
/// table (only records below the range, already cleaned, still ask the table). It answers as
/// the table would: a record is superseded exactly when a later offset of its key was mapped.
#[derive(Debug)]
pub(super) struct Superseded {
    pub(super) start: i64,
    pub(super) bits: Vec<u64>,
}

impl Superseded {
    fn index(&self, offset: i64) -> Option<usize> {
        let i = usize::try_from(offset.checked_sub(self.start)?).ok()?;
        (i / 64 < self.bits.len()).then_some(i)
    }

    pub(super) fn set(&mut self, offset: i64) {
        if let Some(i) = self.index(offset) {
            self.bits[i / 64] |= 1 << (i % 64);
        }
    }

    /// Whether the record at `offset` was superseded; None outside the range.
    pub(super) fn get(&self, offset: i64) -> Option<bool> {
        self.index(offset).map(|i| self.bits[i / 64] & (1 << (i % 64)) != 0)
    }

    /// The first offset from `from` whose bit is clear, at most `limit`; None if `from` is
    /// outside the range.
    pub(super) fn clear_from(&self, from: i64, limit: i64) -> Option<i64> {
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
    pub(super) fn count(&self, first: i64, last: i64) -> Option<u32> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
