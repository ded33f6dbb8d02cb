use super::*;

const lag: u64 = 10_000;

fn leader(leo: i64) -> Replication {
    let mut r = Replication::new(1, 0);
    assert_eq!(r.apply(&[1, 2, 3], &[1, 2, 3], 1, 5, 7, leo, 0), Change::BecameLeader);
    r
}

#[test]
fn leader_high_watermark_is_the_smallest_isr_log_end() {
    let mut r = leader(10);
    assert_eq!(r.high_watermark(), 0, "no follower heard from yet");
    assert!(!r.on_follower_fetch(2, 10, 10, 1), "broker 3 has not fetched");
    assert!(r.on_follower_fetch(3, 4, 10, 1));
    assert_eq!(r.high_watermark(), 4);
    r.on_follower_fetch(3, 10, 10, 2);
    assert_eq!(r.high_watermark(), 10);
    // A follower reporting less later never moves it back.
    r.on_follower_fetch(3, 8, 10, 3);
    assert_eq!(r.high_watermark(), 10);
}

#[test]
fn a_single_replica_isr_follows_the_log_end() {
    let mut r = Replication::new(1, 0);
    r.apply(&[1], &[1], 1, 0, 0, 0, 0);
    assert!(r.on_append(3));
    assert_eq!(r.high_watermark(), 3);
}

#[test]
fn fetches_with_the_wrong_epoch_are_refused() {
    let r = leader(0);
    assert_eq!(r.check_fetch(2, 4), Err(FetchRefusal::Fenced(4)));
    assert_eq!(r.check_fetch(2, 6), Err(FetchRefusal::UnknownEpoch(6)));
    assert_eq!(r.check_fetch(9, 5), Err(FetchRefusal::NotReplica(9)));
    assert_eq!(r.check_fetch(2, 5), Ok(()));
    assert_eq!(r.check_fetch(2, -1), Ok(()));
    let mut f = Replication::new(2, 0);
    f.apply(&[1, 2, 3], &[1, 2, 3], 1, 5, 7, 0, 0);
    assert_eq!(f.check_fetch(3, 5), Err(FetchRefusal::NotLeader));
}

#[test]
fn a_lagging_member_is_proposed_out_and_back_in_once_caught_up() {
    let mut r = leader(10);
    r.on_follower_fetch(2, 10, 10, 100);
    r.on_follower_fetch(3, 10, 10, 100);
    assert_eq!(r.isr_proposal(5_000, lag), None);
    // Broker 3 stops fetching; broker 2 keeps up.
    r.on_append(20);
    r.on_follower_fetch(2, 20, 20, lag + 50);
    assert_eq!(r.isr_proposal(lag + 50, lag), None, "3 has lagged for less than the window");
    r.on_follower_fetch(2, 20, 20, lag + 200);
    let p = r.isr_proposal(lag + 200, lag).expect("3 must be proposed out");
    assert_eq!(p, IsrProposal { leader_epoch: 5, partition_epoch: 7, isr: vec![1, 2] });
    assert_eq!(r.isr_proposal(lag + 300, lag), None, "one change in flight at a time");
    r.on_isr_committed(&[1, 2], 5, 8, 20);
    assert_eq!(r.isr, vec![1, 2]);
    assert_eq!(r.high_watermark(), 20);
    // It comes back and catches up to the high watermark: proposed in.
    r.on_follower_fetch(3, 15, 20, lag + 400);
    assert_eq!(r.isr_proposal(lag + 400, lag), None, "below the high watermark");
    r.on_follower_fetch(3, 20, 20, lag + 500);
    let p = r.isr_proposal(lag + 500, lag).unwrap();
    assert_eq!(p.isr, vec![1, 2, 3]);
}

#[test]
fn an_expansion_in_flight_counts_for_the_high_watermark() {
    let mut r = leader(10);
    r.on_follower_fetch(2, 10, 10, 1);
    r.on_follower_fetch(3, 10, 10, 1);
    r.apply(&[1, 2, 3], &[1, 2], 1, 5, 8, 10, 2);
    r.on_follower_fetch(3, 10, 10, 3);
    assert!(r.isr_proposal(3, lag).is_some());
    r.on_append(12);
    r.on_follower_fetch(2, 12, 12, 4);
    assert_eq!(r.high_watermark(), 10, "broker 3 may already be in the ISR: it holds the mark");
    r.on_follower_fetch(3, 12, 12, 5);
    assert_eq!(r.high_watermark(), 12);
}

#[test]
fn a_new_epoch_makes_a_follower_truncate_and_older_records_are_ignored() {
    let mut f = Replication::new(2, 0);
    assert_eq!(f.apply(&[1, 2, 3], &[1, 2, 3], 1, 5, 7, 10, 0), Change::BecameFollower);
    assert!(f.needs_truncation);
    f.on_truncate(8);
    assert!(!f.needs_truncation);
    assert_eq!(f.apply(&[1, 2, 3], &[1, 2], 1, 5, 8, 8, 0), Change::IsrChanged);
    assert!(!f.needs_truncation);
    assert_eq!(f.apply(&[1, 2, 3], &[1, 2, 3], 1, 4, 9, 8, 0), Change::Unchanged, "older epoch");
    assert_eq!(f.apply(&[1, 2, 3], &[2, 3], 3, 6, 9, 8, 0), Change::BecameFollower);
    assert_eq!(f.apply(&[1, 2, 3], &[2, 3], 2, 7, 10, 8, 0), Change::BecameLeader);
    assert_eq!(f.apply(&[1, 2, 3], &[3], -1, 8, 11, 8, 0), Change::Stopped);
}

#[test]
fn follower_high_watermark_is_capped_by_its_log_end() {
    let mut f = Replication::new(2, 0);
    f.apply(&[1, 2], &[1, 2], 1, 0, 0, 0, 0);
    f.on_leader_high_watermark(50, 30);
    assert_eq!(f.high_watermark(), 30);
    f.on_leader_high_watermark(50, 60);
    assert_eq!(f.high_watermark(), 50);
}

#[test]
fn a_new_leader_keeps_its_high_watermark_until_followers_report() {
    let mut f = Replication::new(2, 0);
    f.apply(&[1, 2, 3], &[1, 2, 3], 1, 0, 0, 0, 0);
    f.on_leader_high_watermark(40, 50);
    assert_eq!(f.apply(&[1, 2, 3], &[2, 3], 2, 1, 1, 50, 10), Change::BecameLeader);
    assert_eq!(f.high_watermark(), 40);
    f.on_follower_fetch(3, 50, 50, 11);
    assert_eq!(f.high_watermark(), 50);
}

#[test]
fn a_replica_that_stopped_fetching_is_not_proposed_back_and_refusals_back_off() {
    let mut r = leader(10);
    r.on_follower_fetch(2, 10, 10, 0);
    r.on_follower_fetch(3, 10, 10, 0);
    // Broker 3 dies with its last fetch at the mark; 2 keeps fetching. 3 is proposed out.
    r.on_follower_fetch(2, 10, 10, lag + 100);
    assert_eq!(r.isr_proposal(lag + 100, lag).unwrap().isr, vec![1, 2]);
    r.on_isr_committed(&[1, 2], 5, 8, 10);
    // Idle partition: its last fetch still equals the mark, but it is not fetching.
    assert_eq!(r.isr_proposal(lag + 200, lag), None, "a silent replica is not proposed back in");
    // A refusal is not retried at every tick.
    r.on_follower_fetch(3, 10, 10, lag + 300);
    assert_eq!(r.isr_proposal(lag + 300, lag).unwrap().isr, vec![1, 2, 3]);
    r.on_isr_failed();
    assert_eq!(r.isr_proposal(lag + 400, lag), None, "retried only after isr_change_retry_ms");
    assert!(r.isr_proposal(lag + 300 + crate::constants::isr_change_retry_ms, lag).is_some());
}

#[test]
fn a_late_record_of_the_committed_change_keeps_the_next_expansion_in_flight() {
    // Why: the leader learns that its shrink (partition epoch 8) committed from the
    // AlterPartition answer, then proposes an expansion back to [1, 2, 3]. The metadata record
    // of that same shrink arrives afterwards. It settles nothing new: if it cleared the
    // expansion, the high watermark would pass broker 3 while the controller may commit the
    // expansion and later elect 3 without those records.
    let mut r = leader(10);
    r.on_follower_fetch(2, 10, 10, 100);
    r.on_follower_fetch(3, 10, 10, 100);
    r.on_append(20);
    r.on_follower_fetch(2, 20, 20, lag + 200);
    assert_eq!(r.isr_proposal(lag + 200, lag).map(|p| p.isr), Some(vec![1, 2]));
    r.on_isr_committed(&[1, 2], 5, 8, 20);
    r.on_follower_fetch(3, 20, 20, lag + 300);
    assert_eq!(r.isr_proposal(lag + 300, lag).map(|p| p.isr), Some(vec![1, 2, 3]), "3 caught up: proposed back in");
    // The shrink's own record, late.
    assert_eq!(r.apply(&[1, 2, 3], &[1, 2], 1, 5, 8, 20, lag + 301), Change::IsrChanged);
    r.on_append(30);
    r.on_follower_fetch(2, 30, 30, lag + 400);
    assert_eq!(r.high_watermark(), 20, "3 (in the maximal ISR) is at 20");
    assert_eq!(r.isr_proposal(lag + 400, lag), None, "the expansion is still in flight");
    // The expansion's record (partition epoch 9) settles it.
    r.apply(&[1, 2, 3], &[1, 2, 3], 1, 5, 9, 30, lag + 500);
    r.on_follower_fetch(3, 30, 30, lag + 600);
    assert_eq!(r.high_watermark(), 30);
}

/// KIP-966's strict min ISR (with ELR on): below `min.insync.replicas` the mark stands still,
/// so who left the ISR holds everything below it; back at the minimum it moves again.
#[test]
fn with_a_strict_min_isr_the_mark_stands_still_below_it() {
    let mut r = leader(10);
    r.set_strict_min_isr(Some(2));
    r.on_follower_fetch(2, 10, 10, 1);
    r.on_follower_fetch(3, 10, 10, 1);
    assert_eq!(r.high_watermark(), 10);
    assert_eq!(r.apply(&[1, 2, 3], &[1], 1, 5, 8, 10, 2), Change::IsrChanged);
    assert!(!r.on_append(15), "ISR {{1}} is below the minimum of 2");
    assert_eq!(r.high_watermark(), 10);
    r.on_follower_fetch(2, 15, 15, 3);
    r.on_isr_committed(&[1, 2], 5, 9, 15);
    assert_eq!(r.high_watermark(), 15, "at the minimum again");
    // Without the rule (ELR off), a lone ISR member moves it: today's behaviour.
    r.set_strict_min_isr(None);
    r.apply(&[1, 2, 3], &[1], 1, 5, 10, 15, 4);
    assert!(r.on_append(20));
    assert_eq!(r.high_watermark(), 20);
}
