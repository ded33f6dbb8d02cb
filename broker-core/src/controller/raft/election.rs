//! The rules of an election, as pure functions: whose log is up to date enough to vote for,
//! counting votes to a majority, and the randomized timeouts drawn from the node's seeded RNG.
//!
//! Its one invariant: a vote goes only to a candidate whose log is at least as up to date as
//! the voter's (Raft §5.4.1: last epoch first, then length), which is what makes every elected
//! leader hold every committed entry. Never OS randomness: the RNG is the node's, seeded by
//! the shell, so an election replays exactly.

use super::NodeId;
use rand_chacha::rand_core::RngCore;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeSet;

/// Whether a candidate whose log ends at `(last_epoch, end)` may get a vote from a voter whose
/// log ends at `(my_last_epoch, my_end)`.
pub(super) fn log_up_to_date(last_epoch: i32, end: i64, my_last_epoch: i32, my_end: i64) -> bool {
    (last_epoch, end) >= (my_last_epoch, my_end)
}

/// Answers to one round of (pre-)vote requests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    granted: BTreeSet<NodeId>,
    rejected: BTreeSet<NodeId>,
}

impl Tally {
    pub(super) fn grant(&mut self, voter: NodeId) {
        self.rejected.remove(&voter);
        self.granted.insert(voter);
    }

    pub(super) fn reject(&mut self, voter: NodeId) {
        if !self.granted.contains(&voter) {
            self.rejected.insert(voter);
        }
    }

    pub(super) fn won(&self, majority: usize) -> bool {
        self.granted.len() >= majority
    }

    /// No majority can be reached any more among `voters`.
    pub(super) fn lost(&self, majority: usize, voters: usize) -> bool {
        voters - self.rejected.len() < majority
    }
}

/// A uniformly random time in `[base, base + spread]`.
pub(super) fn random_ms(rng: &mut ChaCha8Rng, base: u64, spread: u64) -> u64 {
    base + rng.next_u64() % (spread + 1)
}

/// When a node with no leader next starts a pre-vote: the election timeout plus up to as much
/// again (KRaft's `quorum.election.timeout.ms` randomization).
pub(super) fn election_deadline(rng: &mut ChaCha8Rng, now: u64, timeout_ms: u64) -> u64 {
    now + random_ms(rng, timeout_ms, timeout_ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;

    #[test]
    fn a_longer_log_of_an_older_epoch_is_not_up_to_date() {
        assert!(log_up_to_date(3, 5, 2, 9));
        assert!(!log_up_to_date(2, 9, 3, 5));
        assert!(log_up_to_date(3, 5, 3, 5));
        assert!(!log_up_to_date(3, 4, 3, 5));
    }

    #[test]
    fn a_tally_wins_with_a_majority_and_loses_when_none_is_left() {
        let mut t = Tally::default();
        t.grant(1);
        t.reject(2);
        assert!(!t.won(2) && !t.lost(2, 3));
        t.reject(3);
        assert!(t.lost(2, 3));
        t.grant(3);
        assert!(t.won(2) && !t.lost(2, 3));
    }

    #[test]
    fn timeouts_are_spread_and_replay_from_the_seed() {
        let draw = |seed| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            (0..50).map(|_| election_deadline(&mut rng, 100, 1000)).collect::<Vec<_>>()
        };
        let a = draw(7);
        assert_eq!(a, draw(7));
        assert_ne!(a, draw(8));
        assert!(a.iter().all(|&d| (1100..=2100).contains(&d)));
        assert!(a.iter().collect::<BTreeSet<_>>().len() > 40, "timeouts should rarely collide: {a:?}");
    }
}
