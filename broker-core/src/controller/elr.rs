//! KIP-966 eligible leader replicas: which replicas outside the ISR may still be elected
//! without losing a committed record. The rule that makes them safe lives at the leader: with
//! ELR on, the high watermark does not move while the ISR is below `min.insync.replicas`
//! (`replication::Replication::advance`). So a replica that leaves an ISR already at or below
//! the minimum holds every record below the mark, and stays eligible until it restarts after
//! an unclean shutdown (then it may have lost unflushed records: Kafka learns it from the
//! previous broker epoch a broker registers with, and so does `Controller::register_broker`).
//!
//! A pure function of the partition's state: no IO, no clock.

use crate::metadata::PartitionInfo;

/// The ELR and last-known ELR after the partition's ISR becomes `isr` (Kafka's
/// PartitionChangeBuilder.populateTargetElr): with the ISR at `min_isr` or more, both are
/// empty; below it, the ELR is every member of the old ISR and the old ELR that is not in the
/// new ISR and did not shut down uncleanly (`unclean`), and the last-known ELR keeps the rest
/// of them and of the old last-known ELR. Both in replica order.
pub(super) fn next(part: &PartitionInfo, isr: &[i32], min_isr: i32, unclean: &[i32]) -> (Vec<i32>, Vec<i32>) {
    if isr.len() as i64 >= i64::from(min_isr) {
        return (Vec::new(), Vec::new());
    }
    let was = |r: &i32| part.isr.contains(r) || part.elr.contains(r);
    let elr: Vec<i32> = part.replicas.iter().copied().filter(|r| was(r) && !isr.contains(r) && !unclean.contains(r)).collect();
    let last_known = part.replicas.iter().copied().filter(|r| (was(r) || part.last_known_elr.contains(r)) && !isr.contains(r) && !elr.contains(r)).collect();
    (elr, last_known)
}
