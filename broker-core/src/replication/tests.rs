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
    assert_eq!(p, IsrProposal { leader_epoch: 5, partition_epoch: 7, isr: vec![1, 2], epochs: vec![-1, -1] });
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

/// KIP-903: a proposal names each member's broker epoch as of the fetches that qualified it,
/// a lost proposal is resent with the same epochs (so a controller that sees the member
/// registered again since refuses it), and progress made under a registration the caller no
/// longer deems current qualifies no one.
#[test]
fn an_expansion_names_the_broker_epochs_its_progress_was_made_in() {
    let mut r = leader(10);
    r.on_follower_fetch_counting(2, 40, 10, 10, 10, 1);
    r.on_follower_fetch(3, 10, 10, 1);
    r.on_isr_committed(&[1, 3], 5, 8, 10); // 2 had left
    r.on_follower_fetch_counting(2, 40, 10, 10, 10, 2);
    let p = r.isr_proposal_among(3, lag, |_, e| e == 40 || e == -1).expect("2 is back in");
    assert_eq!((p.isr, p.epochs), (vec![1, 2, 3], vec![-1, 40, -1]));
    r.on_isr_lost();
    // Broker 2 restarts and registers at epoch 90; the resend still names 40.
    let again = r.isr_proposal_among(3 + crate::constants::isr_change_retry_ms, lag, |_, e| e == 90).expect("resent");
    assert_eq!(again.epochs, vec![-1, 40, -1]);
    r.on_isr_failed(); // INELIGIBLE_REPLICA
    let retry = 3 + 2 * crate::constants::isr_change_retry_ms;
    assert_eq!(r.isr_proposal_among(retry, lag, |_, e| e == 90), None, "progress from epoch 40 qualifies no one");
    r.on_follower_fetch_counting(2, 90, 10, 10, 10, retry);
    assert_eq!(r.isr_proposal_among(retry, lag, |_, e| e == 90).map(|p| p.epochs), Some(vec![-1, 90, -1]));
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

/// The broker asks a leader for ISR changes only at `isr_check_at`, or at once after a fetch
/// by a replica outside the ISR or a controller's answer (`broker::due`). Over random runs of
/// fetches (caught up, behind, silent), appends and answers (committed, refused, lost,
/// stale), whenever a proposal would come out the broker must be asking.
#[test]
fn isr_check_at_is_never_later_than_a_proposal() {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |n: u64| {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % n
    };
    let (mut proposals, mut visits, mut steps) = (0, 0, 0);
    for _run in 0..100 {
        let mut leo = 10;
        let mut r = leader(leo);
        let mut due: Option<u64> = Some(0);
        let mut pending: Option<IsrProposal> = None;
        let mut now = 0;
        while now < 8 * lag {
            now += 1 + next(400);
            steps += 1;
            match next(10) {
                0..=2 => {
                    leo += 1;
                    r.on_append(leo);
                }
                3..=7 => {
                    // Follower 2 or 3 fetches at the log end or behind it; 3 goes silent for
                    // long stretches.
                    let f = 2 + next(2) as i32;
                    if f == 3 && (now / (3 * lag)) % 2 == 1 {
                        continue;
                    }
                    let offset = leo - next(3).min(leo as u64) as i64;
                    r.on_follower_fetch(f, offset, leo, now);
                    if !r.in_isr(f) {
                        due = Some(due.map_or(now, |t| t.min(now)));
                    }
                }
                _ => {
                    if let Some(p) = pending.take() {
                        match next(4) {
                            0 => r.on_isr_committed(&p.isr, p.leader_epoch, p.partition_epoch + 1, leo),
                            1 => r.on_isr_failed(),
                            2 => r.on_isr_lost(),
                            _ => r.on_isr_stale(),
                        }
                        due = Some(due.map_or(now, |t| t.min(now)));
                    }
                }
            }
            let would = r.clone().isr_proposal(now, lag);
            let asked = due.is_some_and(|t| t <= now);
            assert!(would.is_none() || asked, "at {now} a proposal {would:?} is due but the next check is at {due:?}: {r:?}");
            if asked {
                visits += 1;
                if let Some(p) = r.isr_proposal(now, lag) {
                    proposals += 1;
                    pending = Some(p);
                }
                due = r.isr_check_at(now, lag);
            }
        }
    }
    // The runs must exercise the rule, and the checks be far fewer than the steps.
    assert!(proposals > 100 && visits < steps / 2, "{proposals} proposals, {visits} visits in {steps} steps");
}
