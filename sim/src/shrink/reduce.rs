//! The two searches `sim shrink` is made of, over an abstract test: delta debugging (Zeller's
//! ddmin) for the smallest subset of a list that still fails, and a bisection for the smallest
//! number that still fails. Pure: the test is a closure, and every answer is a value the test
//! said fails (or the input, which the caller knows fails), so a non-monotone test can only
//! make the result less small, never wrong.

/// A smallest subset of `items` (in their order) for which `fails` holds, assuming it holds
/// for `items`: no single item can be removed from the result and still fail (1-minimal), as
/// far as the test answers. The empty subset is tried first: some failures need no item.
pub fn ddmin<T: Clone>(items: &[T], fails: &mut dyn FnMut(&[T]) -> bool) -> Vec<T> {
    if items.is_empty() || fails(&[]) {
        return Vec::new();
    }
    let mut items = items.to_vec();
    let mut n = 2;
    while items.len() >= 2 {
        let chunks = split(&items, n);
        if let Some(chunk) = chunks.iter().find(|c| fails(c)) {
            items = chunk.clone();
            n = 2;
            continue;
        }
        // With two chunks each complement is the other chunk, tried already.
        if n > 2 {
            let complement = |i: usize| -> Vec<T> { chunks.iter().enumerate().filter(|(j, _)| *j != i).flat_map(|(_, c)| c.iter().cloned()).collect() };
            if let Some(rest) = (0..n).map(complement).find(|rest| fails(rest)) {
                items = rest;
                n = (n - 1).max(2);
                continue;
            }
        }
        if n >= items.len() {
            break;
        }
        n = (n * 2).min(items.len());
    }
    // ddmin never tests a one-item list against the empty one; the empty one failed above.
    items
}

/// `items` in `n` contiguous chunks of nearly equal size (the first ones one longer).
fn split<T: Clone>(items: &[T], n: usize) -> Vec<Vec<T>> {
    let (size, extra) = (items.len() / n, items.len() % n);
    let mut chunks = Vec::with_capacity(n);
    let mut start = 0;
    for i in 0..n {
        let len = size + usize::from(i < extra);
        chunks.push(items[start..start + len].to_vec());
        start += len;
    }
    chunks
}

/// The smallest value in `lo..=hi` found to fail, `hi` being known to fail: `lo` first, then a
/// bisection that stops within an eighth of the answer (each probe is a whole simulated run, and
/// 12% of a duration or a rate does not make a failure easier to read). Probes are rounded down
/// to two significant digits where that stays inside the interval, so the numbers a shrunk
/// scenario ends with read as chosen ones (1500, not 1543).
pub fn smallest_failing(lo: u64, hi: u64, fails: &mut dyn FnMut(u64) -> bool) -> u64 {
    if lo >= hi {
        return hi;
    }
    if fails(lo) {
        return lo;
    }
    let (mut lo, mut hi) = (lo, hi);
    while hi - lo > 1 && hi - lo > hi / 8 {
        let mid = lo + (hi - lo) / 2;
        let round = two_digits(mid);
        let probe = if round > lo { round } else { mid };
        if fails(probe) {
            hi = probe;
        } else {
            lo = probe;
        }
    }
    hi
}

/// `x` rounded down to two significant digits (1543 → 1500, 87 → 87).
fn two_digits(x: u64) -> u64 {
    let mut unit = 1;
    while x / unit >= 100 {
        unit *= 10;
    }
    x / unit * unit
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddmin_finds_the_items_the_failure_needs_whatever_their_places() {
        let items: Vec<u32> = (0..13).collect();
        for needed in [vec![], vec![4], vec![0, 12], vec![3, 4, 9], vec![1, 2, 5, 7, 11]] {
            let mut tests = 0;
            let found = ddmin(&items, &mut |subset: &[u32]| {
                tests += 1;
                needed.iter().all(|n| subset.contains(n))
            });
            assert_eq!(found, needed, "needed {needed:?}");
            assert!(tests <= 13 * 13, "{tests} tests for {needed:?}");
        }
    }

    #[test]
    fn ddmin_result_is_one_minimal_for_a_test_that_needs_any_two() {
        // Fails with any two of 2, 6, 8: many answers are minimal; ddmin must return one.
        let items: Vec<u32> = (0..10).collect();
        let mut fails = |s: &[u32]| s.iter().filter(|x| [2, 6, 8].contains(*x)).count() >= 2;
        let found = ddmin(&items, &mut fails);
        assert_eq!(found.len(), 2);
        assert!(fails(&found));
        assert!(ddmin(&[5u32], &mut |s: &[u32]| s == [5]) == [5]);
        assert!(ddmin::<u32>(&[], &mut |_| unreachable!("nothing to test")).is_empty());
    }

    #[test]
    fn smallest_failing_comes_within_an_eighth_and_only_returns_failing_values() {
        for threshold in [0, 1, 7, 99, 1_234, 29_999, 30_000] {
            let mut probes = Vec::new();
            let found = smallest_failing(0, 30_000, &mut |x| {
                probes.push(x);
                x >= threshold
            });
            assert!(found >= threshold && found - threshold <= found / 8 + 1, "threshold {threshold}: found {found}, probes {probes:?}");
            assert!(probes.len() <= 16, "threshold {threshold}: {} probes", probes.len());
        }
        // A test that fails only at odd values: the answer is still one it said fails.
        let found = smallest_failing(10, 999, &mut |x| x % 2 == 1);
        assert_eq!(found % 2, 1);
        assert_eq!(smallest_failing(5, 5, &mut |_| unreachable!()), 5);
        assert_eq!(two_digits(1543), 1500);
        assert_eq!(two_digits(87), 87);
    }
}
