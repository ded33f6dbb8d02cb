//! FNV-1a (64-bit), the one hash of the project: stable digests (traces, crash rounds) and ids
//! derived from names. The same in every process, build and run; not for adversarial input.

/// FNV-1a's offset basis: the hash of nothing.
pub const fnv_offset: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a's prime.
const fnv_prime: u64 = 0x0100_0000_01b3;

/// Continues the hash `h` over `bytes`.
pub fn fnv1a(h: u64, bytes: impl IntoIterator<Item = u8>) -> u64 {
    bytes.into_iter().fold(h, |h, b| (h ^ b as u64).wrapping_mul(fnv_prime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vectors() {
        // From the FNV reference: fnv1a64("") and fnv1a64("a").
        assert_eq!(fnv1a(fnv_offset, []), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(fnv_offset, *b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(fnv1a(fnv_offset, *b"a"), *b"b"), fnv1a(fnv_offset, *b"ab"));
    }
}
