//! A compacted key's identity for the cleaner's key map: MurmurHash3 x64-128 of its bytes.
//! One hash per record per pass, so it reads whole 8-byte words; its reference values are
//! those of the `mmh3` package, so a change of its output is a test failure, not a silent
//! change of which records a pass keeps.

/// A key's identity: 128 bits of MurmurHash3's x64 construction (16 bytes a round, then its
/// finalizer), never 0. The key map keeps 96 of them in a slot (`key_map::Slot`).
pub(super) fn key_hash(key: &[u8]) -> u128 {
    const c1: u64 = 0x87c3_7b91_1142_53d5;
    const c2: u64 = 0x4cf5_ad43_2745_937f;
    let mix1 = |k: u64| k.wrapping_mul(c1).rotate_left(31).wrapping_mul(c2);
    let mix2 = |k: u64| k.wrapping_mul(c2).rotate_left(33).wrapping_mul(c1);
    let word = |b: &[u8]| match <[u8; 8]>::try_from(b) {
        Ok(w) => u64::from_le_bytes(w),
        Err(_) => b.iter().rev().fold(0u64, |w, &x| (w << 8) | x as u64),
    };
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
}
