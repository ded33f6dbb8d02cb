//! The coordinator's rules that the simulator may swap, when the node is built, for a known
//! wrong one (a planted bug, `crate::planted`): which generation a commit is checked against,
//! whether a refused one is written, which transactions' offsets take effect, and whether a
//! KIP-848 partition waits for its owner to let it go. `Coordinator::commit` asks [`Rules`], whose
//! defaults are Kafka's ([`Kafka`]); [`of`] picks a planted bug's rule (simulated build only).

use super::Group;
use crate::kafka::Code;
use crate::planted::Planted;

/// Kafka's rule for each decision, overridable.
pub trait Rules: Sync {
    /// Checks an OffsetCommit by `member` at `generation` against group `g`: the member must be
    /// in it at its current generation (`stale`: that generation, when the member is current
    /// but sent an older one, its commit having raced a rebalance: ILLEGAL_GENERATION).
    fn check_commit(&self, g: &mut Group, member: &str, instance: Option<&str>, generation: i32, _stale: Option<i32>, now: u64) -> Result<(), Code> {
        g.check_commit(member, instance, generation, now)
    }

    /// Whether a commit refused for a stale generation is written all the same: never.
    fn writes_refused_stale_commit(&self) -> bool {
        false
    }

    /// Whether a transaction's offsets become the group's once its marker (`commit` or
    /// abort) is replicated: only a commit's (planted `TxnOffsetsKeptOnAbort`).
    fn txn_offsets_take_effect(&self, commit: bool) -> bool {
        commit
    }

    /// Whether a KIP-848 member is given a partition only once its previous owner let it go
    /// (planted `ReconcileSkipsRevocation`: at once).
    fn waits_for_revocation(&self) -> bool {
        true
    }
}

/// Kafka's rules.
pub struct Kafka;

impl Rules for Kafka {}

/// The coordinator's rules for `planted`: Kafka's unless it plants one of theirs.
pub fn of(planted: Planted) -> &'static dyn Rules {
    #[cfg(madsim)]
    if let Some(rules) = planted.0.and_then(planted_rules::of) {
        return rules;
    }
    let _ = planted;
    &Kafka
}

/// The planted rules, one unit type per bug.
#[cfg(madsim)]
mod planted_rules {
    use super::{Code, Group, Rules};
    use crate::planted::PlantedBug;

    /// Commits skip the member and generation checks.
    pub struct CommitIgnoresGeneration;
    impl Rules for CommitIgnoresGeneration {
        fn check_commit(&self, _g: &mut Group, _member: &str, _instance: Option<&str>, _generation: i32, _stale: Option<i32>, _now: u64) -> Result<(), Code> {
            Ok(())
        }
    }

    /// A current member's commit of an older generation is taken as current.
    pub struct CommitAcceptsOlderGeneration;
    impl Rules for CommitAcceptsOlderGeneration {
        fn check_commit(&self, g: &mut Group, member: &str, instance: Option<&str>, generation: i32, stale: Option<i32>, now: u64) -> Result<(), Code> {
            g.check_commit(member, instance, stale.unwrap_or(generation), now)
        }
    }

    /// A stale commit is refused, and written anyway.
    pub struct StaleCommitWrittenAnyway;
    impl Rules for StaleCommitWrittenAnyway {
        fn writes_refused_stale_commit(&self) -> bool {
            true
        }
    }

    /// An aborted transaction's offsets take effect as a committed one's.
    pub struct TxnOffsetsKeptOnAbort;
    impl Rules for TxnOffsetsKeptOnAbort {
        fn txn_offsets_take_effect(&self, _commit: bool) -> bool {
            true
        }
    }

    /// A partition moves to its new KIP-848 owner before the old one let it go.
    pub struct ReconcileSkipsRevocation;
    impl Rules for ReconcileSkipsRevocation {
        fn waits_for_revocation(&self) -> bool {
            false
        }
    }

    pub fn of(bug: PlantedBug) -> Option<&'static dyn Rules> {
        Some(match bug {
            PlantedBug::ReconcileSkipsRevocation => &ReconcileSkipsRevocation,
            PlantedBug::TxnOffsetsKeptOnAbort => &TxnOffsetsKeptOnAbort,
            PlantedBug::CommitIgnoresGeneration => &CommitIgnoresGeneration,
            PlantedBug::CommitAcceptsOlderGeneration => &CommitAcceptsOlderGeneration,
            PlantedBug::StaleCommitWrittenAnyway => &StaleCommitWrittenAnyway,
            _ => return None,
        })
    }
}
