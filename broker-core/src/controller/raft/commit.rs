//! The leader's high watermark: the commit rule, as one pure function.
//!
//! Its one invariant (Raft §5.4.2): the leader commits by counting replicas only an offset that
//! ends an entry of its *own* epoch; entries of earlier epochs are committed with it, never by
//! counting alone (a majority holding an old entry can still be overwritten, the paper's
//! figure 8). Each voter's end counts only as far as it is durable there: a follower's fetch
//! offset (it fetches only after syncing what it appended), the leader's own synced end.

use super::entries::Entries;

/// The new high watermark, if it moves above `current`. `ends` holds one durable log end per
/// voter (the leader's own included; voters not heard from yet are left out); `majority` how
/// many must hold an offset; `commits` the rule, given whether the offset ends an entry of the
/// leader's own epoch (Raft's: only then; a planted bug's: always, `RaftConfig::commits_by_count`).
pub(super) fn advance(log: &Entries, epoch: i32, ends: &[i64], majority: usize, current: Option<i64>, commits: impl Fn(bool) -> bool) -> Option<i64> {
    if ends.len() < majority {
        return None;
    }
    let mut sorted = ends.to_vec();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    let held = sorted[majority - 1].min(log.end());
    if held <= current.unwrap_or(0) {
        return None;
    }
    let own_epoch = log.epoch_at(held - 1) == Some(epoch);
    commits(own_epoch).then_some(held)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::raft::Entry;
    use crate::log::batch;

    /// Raft's rule, and the planted bug's.
    fn raft(own_epoch: bool) -> bool {
        own_epoch
    }

    fn planted(_own_epoch: bool) -> bool {
        true
    }

    fn log(epochs: &[i32]) -> Entries {
        let mut l = Entries::default();
        for (i, &e) in epochs.iter().enumerate() {
            let mut b = batch::build(&[b"x"], 0);
            batch::stamp(&mut b, i as i64, e);
            l.append(Entry::from_batch(b.into()).unwrap()).unwrap();
        }
        l
    }

    #[test]
    fn the_majority_end_commits_when_it_ends_an_entry_of_the_leaders_epoch() {
        let l = log(&[1, 1, 2, 2]);
        assert_eq!(advance(&l, 2, &[4, 3, 1], 2, None, raft), Some(3));
        assert_eq!(advance(&l, 2, &[4, 4, 1], 2, Some(3), raft), Some(4));
        assert_eq!(advance(&l, 2, &[4, 4, 1], 2, Some(4), raft), None, "never the same or lower");
        assert_eq!(advance(&l, 2, &[4], 2, None, raft), None, "fewer voters heard than a majority");
    }

    #[test]
    fn an_entry_of_an_older_epoch_is_never_committed_by_counting() {
        let l = log(&[1, 1, 3]);
        assert_eq!(advance(&l, 3, &[3, 2, 0], 2, None, raft), None);
        assert_eq!(advance(&l, 3, &[3, 2, 0], 2, None, planted), Some(2), "the planted bug counts it");
        assert_eq!(advance(&l, 3, &[3, 3, 0], 2, None, raft), Some(3), "it commits with the leader's entry");
    }
}
