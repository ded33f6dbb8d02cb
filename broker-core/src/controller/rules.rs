//! The controller's rules that the simulator may swap, when the node is built, for a known
//! wrong one (a planted bug, `crate::planted`): who counts as heard when a controller starts,
//! check-quorum before fencing, KIP-966's unclean-shutdown rule, and a reassignment's wait for
//! its new replicas. The decisions ask
//! [`Rules`], whose defaults are Kafka's ([`Kafka`]); `ControllerConfig::rules` picks a planted
//! bug's rule (simulated build only). Pure functions: no state, no IO, no clock.

use crate::metadata::Image;
use std::collections::BTreeSet;

/// Kafka's rule for each decision, overridable.
pub trait Rules: Sync {
    /// The brokers a controller taking over counts as heard from before any heartbeat: none.
    /// A broker it has not heard from may have restarted and lost its log while no controller
    /// watched, so it is not newly elected until it speaks.
    fn heard_at_start(&self, _image: &Image) -> BTreeSet<i32> {
        BTreeSet::new()
    }

    /// Whether a controller that has heard from at most half the registered brokers within a
    /// session holds back fencing (check-quorum: it is more likely cut off than they are dead).
    fn checks_quorum(&self) -> bool {
        true
    }

    /// The brokers that registered again after an unclean shutdown (KIP-966), which leave every
    /// ELR: all of `unclean`.
    fn unclean_shutdowns<'a>(&self, unclean: &'a [i32]) -> &'a [i32] {
        unclean
    }

    /// Whether a reassignment completes only once every adding replica is in the ISR (it caught
    /// up with the leader): yes. Until then the leaving replicas hold what the new ones lack.
    fn reassignment_waits_for_catch_up(&self) -> bool {
        true
    }
}

/// Kafka's rules.
pub struct Kafka;

impl Rules for Kafka {}

/// The planted rules, one unit type per bug.
#[cfg(madsim)]
pub(super) mod planted {
    use super::{Image, Rules};
    use crate::planted::PlantedBug;
    use std::collections::BTreeSet;

    pub struct ElectsUnheardBroker;
    impl Rules for ElectsUnheardBroker {
        fn heard_at_start(&self, image: &Image) -> BTreeSet<i32> {
            image.brokers.keys().copied().collect()
        }
    }

    pub struct NoCheckQuorum;
    impl Rules for NoCheckQuorum {
        fn checks_quorum(&self) -> bool {
            false
        }
    }

    pub struct ElrKeepsUncleanReplica;
    impl Rules for ElrKeepsUncleanReplica {
        fn unclean_shutdowns<'a>(&self, _unclean: &'a [i32]) -> &'a [i32] {
            &[]
        }
    }

    pub struct ReassignmentSkipsCatchUp;
    impl Rules for ReassignmentSkipsCatchUp {
        fn reassignment_waits_for_catch_up(&self) -> bool {
            false
        }
    }

    /// The rules planting `bug`, if it is one of these.
    pub fn of(bug: PlantedBug) -> Option<&'static dyn Rules> {
        Some(match bug {
            PlantedBug::ElectsUnheardBroker => &ElectsUnheardBroker,
            PlantedBug::NoCheckQuorum => &NoCheckQuorum,
            PlantedBug::ElrKeepsUncleanReplica => &ElrKeepsUncleanReplica,
            PlantedBug::ReassignmentSkipsCatchUp => &ReassignmentSkipsCatchUp,
            _ => return None,
        })
    }
}
